/* test_tls.c -- serving certificates and client certificate verification
 * (server/tls.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "server/tls.h"
#include "tls_fixture.h"

static void test_self_signed(void **st)
{
    (void)st;
    const char *hosts[] = { "sched-0", "localhost", "127.0.0.1", "::1", "", "localhost", "10.1.2.3" };
    tls_pair_t p;
    char err[256];
    assert_int_equal(tls_self_signed(hosts, 7, 365, &p, err, sizeof err), 0);
    char *sans = tls_cert_sans(p.cert_pem);
    assert_string_equal(sans, "DNS:sched-0,DNS:localhost,IP:127.0.0.1,IP:::1,IP:10.1.2.3");
    free(sans);
    assert_non_null(strstr(p.cert_pem, "-----BEGIN CERTIFICATE-----"));
    assert_non_null(strstr(p.key_pem, "-----BEGIN PRIVATE KEY-----"));
    assert_int_equal(strlen(p.sha256), 32 * 3 - 1); /* "AB:" x 32 without the last ':' */

    /* What it makes loads back as a pair; a year, CN the first host. */
    char cf[64], kf[64];
    fx_write(cf, p.cert_pem);
    fx_write(kf, p.key_pem);
    tls_pair_t q;
    assert_int_equal(tls_load_pair(cf, kf, &q, err, sizeof err), 0);
    assert_string_equal(q.sha256, p.sha256);
    BIO *b = BIO_new_mem_buf(p.cert_pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    int days = 0, secs = 0;
    assert_int_equal(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(x), X509_get0_notAfter(x)), 1);
    assert_int_equal(days, 365); /* notBefore 5 min back: 365 days and 300 s */
    assert_int_equal(secs, 300);
    char cn[80];
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof cn);
    assert_string_equal(cn, "sched-0");
    X509_free(x);

    /* Two self-signed pairs differ (fresh key, fresh serial). */
    tls_pair_t r;
    assert_int_equal(tls_self_signed(hosts, 1, 1, &r, err, sizeof err), 0);
    assert_string_not_equal(r.sha256, p.sha256);
    tls_pair_free(&r);
    tls_pair_free(&q);
    tls_pair_free(&p);
    unlink(cf);
    unlink(kf);
}

static void test_load_errors(void **st)
{
    (void)st;
    const char *hosts[] = { "a" };
    tls_pair_t p1, p2, q;
    char err[256], c1[64], k1[64], k2[64], junk[64];
    assert_int_equal(tls_self_signed(hosts, 1, 30, &p1, err, sizeof err), 0);
    assert_int_equal(tls_self_signed(hosts, 1, 30, &p2, err, sizeof err), 0);
    fx_write(c1, p1.cert_pem);
    fx_write(k1, p1.key_pem);
    fx_write(k2, p2.key_pem);
    fx_write(junk, "not a certificate\n");

    /* The key of another certificate: refused, both files named. */
    assert_int_equal(tls_load_pair(c1, k2, &q, err, sizeof err), -1);
    char want[256];
    snprintf(want, sizeof want, "tls: private key %s does not match certificate %s", k2, c1);
    assert_string_equal(err, want);
    assert_null(q.cert_pem);
    /* Missing, garbage, swapped. */
    assert_int_equal(tls_load_pair("/nonexistent/c.pem", k1, &q, err, sizeof err), -1);
    assert_string_equal(err, "tls: certificate /nonexistent/c.pem: cannot open it");
    assert_int_equal(tls_load_pair(junk, k1, &q, err, sizeof err), -1);
    snprintf(want, sizeof want, "tls: certificate %s holds no PEM certificate", junk);
    assert_string_equal(err, want);
    assert_int_equal(tls_load_pair(c1, c1, &q, err, sizeof err), -1);
    snprintf(want, sizeof want, "tls: private key %s holds no unencrypted PEM private key", c1);
    assert_string_equal(err, want);
    /* One of the two serving flags alone. */
    assert_int_equal(tls_serving_pair(c1, NULL, NULL, &q, err, sizeof err), -1);
    assert_string_equal(err, "--tls-cert-file and --tls-private-key-file go together: give both or neither");
    /* Both: the files' pair, as given. */
    assert_int_equal(tls_serving_pair(c1, k1, "0.0.0.0", &q, err, sizeof err), 0);
    assert_string_equal(q.cert_pem, p1.cert_pem);
    tls_pair_free(&q);
    /* Neither: self-signed for this host, loopback, $POD_IP and the bind address. */
    setenv("POD_IP", "10.9.8.7", 1);
    assert_int_equal(tls_serving_pair(NULL, NULL, "192.0.2.5", &q, err, sizeof err), 0);
    unsetenv("POD_IP");
    char *sans = tls_cert_sans(q.cert_pem);
    assert_non_null(strstr(sans, ",DNS:localhost,IP:127.0.0.1,IP:::1,IP:10.9.8.7,IP:192.0.2.5"));
    free(sans);
    tls_pair_free(&q);
    assert_null(tls_cert_sans("junk"));
    tls_pair_free(&p1);
    tls_pair_free(&p2);
    unlink(c1);
    unlink(k1);
    unlink(k2);
    unlink(junk);
}

static json_t *verify(const tls_client_ca_t *ca, X509 *leaf, X509 *mid, char *err)
{
    unsigned char *d[2] = { NULL, NULL };
    size_t len[2];
    int n = 0;
    X509 *chain[2] = { leaf, mid };
    for (; n < 2 && chain[n]; n++)
        len[n] = (size_t)i2d_X509(chain[n], &d[n]);
    json_t *u = NULL;
    int rc = tls_client_verify(ca, (const unsigned char *const *)d, len, n, &u, err, 256);
    OPENSSL_free(d[0]);
    OPENSSL_free(d[1]);
    assert_true(rc == 0 ? u != NULL : u == NULL);
    return u;
}

static void test_client_verify(void **st)
{
    (void)st;
    fx_cert_t ca = fx_make(NULL, "test-ca", NULL, NULL, NULL, -60);
    fx_cert_t other = fx_make(NULL, "other-ca", NULL, NULL, NULL, -60);
    fx_cert_t carol = fx_make(&ca, "carol", "team-a", "clientAuth", NULL, -60);
    fx_cert_t noeku = fx_make(&ca, "dave", NULL, NULL, NULL, -60);
    fx_cert_t server = fx_make(&ca, "web", NULL, "serverAuth", NULL, -60);
    fx_cert_t future = fx_make(&ca, "erin", NULL, "clientAuth", NULL, 3600);
    fx_cert_t stranger = fx_make(&other, "mallory", "system:masters", "clientAuth", NULL, -60);
    char caf[64], err[256];
    fx_write(caf, ca.cert_pem);
    char *pem = NULL;
    tls_client_ca_t *c = tls_client_ca_load(caf, &pem, err, sizeof err);
    assert_non_null(c);
    assert_string_equal(pem, ca.cert_pem);

    json_t *u = verify(c, carol.cert, NULL, err);
    char *s = json_dumps(u, JSON_COMPACT);
    assert_string_equal(s, "{\"username\":\"carol\",\"uid\":\"\",\"groups\":[\"team-a\"],\"extra\":{}}");
    free(s);
    json_decref(u);
    u = verify(c, noeku.cert, NULL, err); /* no extended key usage: any */
    assert_string_equal(json_string_value(json_object_get(u, "username")), "dave");
    assert_int_equal(json_array_size(json_object_get(u, "groups")), 0);
    json_decref(u);

    assert_null(verify(c, server.cert, NULL, err));
    assert_string_equal(err, "the client certificate does not verify: unsuitable certificate purpose");
    assert_null(verify(c, future.cert, NULL, err));
    assert_string_equal(err, "the client certificate does not verify: certificate is not yet valid");
    assert_null(verify(c, stranger.cert, NULL, err));
    assert_string_equal(err, "the client certificate does not verify: unable to get local issuer certificate");
    /* The stranger's CA sent along as a chain does not make it trusted. */
    assert_null(verify(c, stranger.cert, other.cert, err));
    assert_string_equal(err, "the client certificate does not verify: self-signed certificate in certificate chain");
    /* Garbage and no chain. */
    const unsigned char junk[] = { 0x30, 0x03, 0x02, 0x01, 0x01 };
    const unsigned char *jd[] = { junk };
    size_t jl[] = { sizeof junk };
    assert_int_equal(tls_client_verify(c, jd, jl, 1, &u, err, sizeof err), -1);
    assert_string_equal(err, "the client certificate cannot be parsed");
    assert_int_equal(tls_client_verify(c, jd, jl, 0, &u, err, sizeof err), -1);
    assert_string_equal(err, "no client certificate");

    /* A CA file that holds none. */
    char junkf[64];
    fx_write(junkf, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    assert_null(tls_client_ca_load(junkf, NULL, err, sizeof err));
    char want[128];
    snprintf(want, sizeof want, "tls: client CA %s holds no PEM certificate", junkf);
    assert_string_equal(err, want);

    tls_client_ca_free(c);
    free(pem);
    unlink(caf);
    unlink(junkf);
    fx_free(&ca);
    fx_free(&other);
    fx_free(&carol);
    fx_free(&noeku);
    fx_free(&server);
    fx_free(&future);
    fx_free(&stranger);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_signed),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_client_verify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
