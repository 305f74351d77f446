/* tls.c -- serving certificates (files or self-signed) and client
 * certificate verification with OpenSSL. */
#include "server/tls.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "util/log.h"
#include "util/util.h"

#define TLS_MAX_PEM (1 << 20) /* a certificate or key file over 1 MiB is not one */

struct tls_client_ca {
    X509_STORE *store;
};

/* The last OpenSSL error's text (or what), into err; -1. */
static int ssl_err(char *err, size_t errlen, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    return util_errf(err, errlen, "%s%s%s", what, buf[0] ? ": " : "", buf);
}

void tls_pair_free(tls_pair_t *p)
{
    if (!p)
        return;
    free(p->cert_pem);
    if (p->key_pem) {
        OPENSSL_cleanse(p->key_pem, strlen(p->key_pem));
        free(p->key_pem);
    }
    memset(p, 0, sizeof *p);
}

/* A BIO's contents as a malloc'd string. */
static char *bio_string(BIO *b)
{
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    char *s = util_xcalloc(1, (size_t)(n > 0 ? n : 0) + 1);
    if (n > 0)
        memcpy(s, data, (size_t)n);
    return s;
}

static void fingerprint(X509 *x, char out[96])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    out[0] = 0;
    if (X509_digest(x, EVP_sha256(), md, &n) != 1)
        return;
    for (unsigned int i = 0; i < n && i * 3 + 3 <= 96; i++)
        snprintf(out + i * 3, 4, "%02X%s", md[i], i + 1 < n ? ":" : "");
}

/* Fills out from x and k (PEM both). */
static int pair_from(X509 *x, EVP_PKEY *k, tls_pair_t *out, char *err, size_t errlen)
{
    BIO *bc = BIO_new(BIO_s_mem()), *bk = BIO_new(BIO_s_mem());
    int ok =
        bc && bk && PEM_write_bio_X509(bc, x) == 1 && PEM_write_bio_PrivateKey(bk, k, NULL, NULL, 0, NULL, NULL) == 1;
    if (ok) {
        out->cert_pem = bio_string(bc);
        out->key_pem = bio_string(bk);
        fingerprint(x, out->sha256);
    }
    BIO_free(bc);
    if (bk) {
        char *d = NULL;
        long n = BIO_get_mem_data(bk, &d);
        if (d && n > 0)
            OPENSSL_cleanse(d, (size_t)n);
        BIO_free(bk);
    }
    return ok ? 0 : ssl_err(err, errlen, "tls: cannot write the certificate as PEM");
}

/* "DNS:a,IP:1.2.3.4" for hosts, duplicates and empties skipped. */
static char *san_list(const char *const *hosts, int n)
{
    sbuf_t b = { 0 };
    for (int i = 0; i < n; i++) {
        const char *h = hosts[i];
        if (!h || !*h || strchr(h, ',') || strlen(h) > 253)
            continue;
        int dup = 0;
        for (int j = 0; j < i && !dup; j++)
            dup = hosts[j] && !strcmp(hosts[j], h);
        if (dup)
            continue;
        unsigned char buf[16];
        int ip = inet_pton(AF_INET, h, buf) == 1 || inet_pton(AF_INET6, h, buf) == 1;
        sbuf_printf(&b, "%s%s:%s", b.len ? "," : "", ip ? "IP" : "DNS", h);
    }
    return b.data ? b.data : util_strdup("");
}

static int add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    int ok = e && X509_add_ext(x, e, -1) == 1;
    X509_EXTENSION_free(e);
    return ok ? 0 : -1;
}

int tls_self_signed(const char *const *hosts, int nhosts, int days, tls_pair_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *cn = nhosts > 0 && hosts[0] && *hosts[0] ? hosts[0] : "localhost";
    if (strlen(cn) > 64)
        cn = "ai-scheduler";
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    char *sans = san_list(hosts, nhosts);
    unsigned char serial[16];
    BIGNUM *bn = NULL;
    int rc = -1;
    if (!k || !x) {
        ssl_err(err, errlen, "tls: cannot make a key");
        goto out;
    }
    if (RAND_bytes(serial, sizeof serial) != 1) {
        ssl_err(err, errlen, "tls: no random bytes for the serial number");
        goto out;
    }
    serial[0] &= 0x7f; /* positive */
    bn = BN_bin2bn(serial, sizeof serial, NULL);
    X509_NAME *name = X509_get_subject_name(x);
    if (!bn || X509_set_version(x, 2) != 1 || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) ||
        !X509_gmtime_adj(X509_getm_notBefore(x), -300) ||
        !X509_gmtime_adj(X509_getm_notAfter(x), (long)(days > 0 ? days : 365) * 86400) || X509_set_pubkey(x, k) != 1 ||
        X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)"ai-scheduler", -1, -1, 0) != 1 ||
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) != 1 ||
        X509_set_issuer_name(x, name) != 1 || add_ext(x, NID_basic_constraints, "critical,CA:FALSE") != 0 ||
        add_ext(x, NID_key_usage, "critical,digitalSignature,keyEncipherment") != 0 ||
        add_ext(x, NID_ext_key_usage, "serverAuth") != 0 || (sans[0] && add_ext(x, NID_subject_alt_name, sans) != 0) ||
        X509_sign(x, k, EVP_sha256()) <= 0) {
        ssl_err(err, errlen, "tls: cannot make the self-signed certificate");
        goto out;
    }
    rc = pair_from(x, k, out, err, errlen);
out:
    BN_free(bn);
    free(sans);
    X509_free(x);
    EVP_PKEY_free(k);
    return rc;
}

/* The text of a small file, or NULL with err set. */
static char *read_small(const char *file, const char *what, char *err, size_t errlen)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        util_errf(err, errlen, "tls: %s %s: cannot open it", what, file);
        return NULL;
    }
    char *buf = util_xcalloc(1, TLS_MAX_PEM + 1);
    size_t n = fread(buf, 1, TLS_MAX_PEM + 1, f);
    int bad = ferror(f) != 0;
    fclose(f);
    if (bad || n > TLS_MAX_PEM || n == 0) {
        util_errf(err, errlen, "tls: %s %s: %s", what, file, bad ? "cannot read it" : n ? "over 1 MiB" : "empty");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

int tls_load_pair(const char *cert_file, const char *key_file, tls_pair_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char *cpem = read_small(cert_file, "certificate", err, errlen);
    char *kpem = cpem ? read_small(key_file, "private key", err, errlen) : NULL;
    X509 *x = NULL;
    EVP_PKEY *k = NULL;
    int rc = -1;
    if (!kpem)
        goto out;
    BIO *b = BIO_new_mem_buf(cpem, -1);
    x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (!x) {
        ERR_clear_error();
        util_errf(err, errlen, "tls: certificate %s holds no PEM certificate", cert_file);
        goto out;
    }
    b = BIO_new_mem_buf(kpem, -1);
    k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, (void *)"") : NULL;
    BIO_free(b);
    if (!k) {
        ERR_clear_error();
        util_errf(err, errlen, "tls: private key %s holds no unencrypted PEM private key", key_file);
        goto out;
    }
    if (X509_check_private_key(x, k) != 1) {
        ERR_clear_error();
        util_errf(err, errlen, "tls: private key %s does not match certificate %s", key_file, cert_file);
        goto out;
    }
    /* libmicrohttpd gets the files' own text: a chain after the leaf is
     * served as given. */
    out->cert_pem = cpem;
    out->key_pem = kpem;
    cpem = kpem = NULL;
    fingerprint(x, out->sha256);
    rc = 0;
out:
    if (kpem) {
        OPENSSL_cleanse(kpem, strlen(kpem));
        free(kpem);
    }
    free(cpem);
    X509_free(x);
    EVP_PKEY_free(k);
    return rc;
}

/* Is a a wildcard bind address (all interfaces)? */
static int wildcard(const char *a)
{
    return !a || !*a || !strcmp(a, "0.0.0.0") || !strcmp(a, "::") || !strcmp(a, "[::]");
}

int tls_serving_pair(const char *cert_file, const char *key_file, const char *bind_address, tls_pair_t *out, char *err,
                     size_t errlen)
{
    int have_c = cert_file && *cert_file, have_k = key_file && *key_file;
    if (have_c != have_k)
        return util_errf(err, errlen, "--tls-cert-file and --tls-private-key-file go together: give both or neither");
    if (have_c) {
        if (tls_load_pair(cert_file, key_file, out, err, errlen) != 0)
            return -1;
        LOG_I("http: serving certificate %s (SHA-256 %s)", cert_file, out->sha256);
        return 0;
    }
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) < 0)
        host[0] = 0;
    host[sizeof host - 1] = 0;
    const char *pod_ip = getenv("POD_IP");
    const char *hosts[] = { host[0] ? host : "localhost",
                            "localhost",
                            "127.0.0.1",
                            "::1",
                            pod_ip && *pod_ip ? pod_ip : NULL,
                            wildcard(bind_address) ? NULL : bind_address };
    if (tls_self_signed(hosts, (int)(sizeof hosts / sizeof hosts[0]), 365, out, err, errlen) != 0)
        return -1;
    char *sans = tls_cert_sans(out->cert_pem);
    LOG_I("http: self-signed serving certificate for %s (SHA-256 %s); --tls-cert-file and --tls-private-key-file "
          "give one",
          sans ? sans : "?", out->sha256);
    free(sans);
    return 0;
}

char *tls_cert_sans(const char *cert_pem)
{
    BIO *b = cert_pem ? BIO_new_mem_buf(cert_pem, -1) : NULL;
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (!x) {
        ERR_clear_error();
        return NULL;
    }
    GENERAL_NAMES *gn = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    sbuf_t s = { 0 };
    for (int i = 0; gn && i < sk_GENERAL_NAME_num(gn); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gn, i);
        if (g->type == GEN_DNS) {
            const unsigned char *d = ASN1_STRING_get0_data(g->d.dNSName);
            sbuf_printf(&s, "%sDNS:%.*s", s.len ? "," : "", ASN1_STRING_length(g->d.dNSName), (const char *)d);
        } else if (g->type == GEN_IPADD) {
            int n = ASN1_STRING_length(g->d.iPAddress);
            char ip[INET6_ADDRSTRLEN] = "?";
            if (n == 4 || n == 16)
                inet_ntop(n == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(g->d.iPAddress), ip, sizeof ip);
            sbuf_printf(&s, "%sIP:%s", s.len ? "," : "", ip);
        }
    }
    GENERAL_NAMES_free(gn);
    X509_free(x);
    return s.data ? s.data : util_strdup("");
}

/* ------------------------------------------------------------ clients */

tls_client_ca_t *tls_client_ca_load(const char *file, char **pem_out, char *err, size_t errlen)
{
    if (pem_out)
        *pem_out = NULL;
    char *pem = read_small(file, "client CA", err, errlen);
    if (!pem)
        return NULL;
    tls_client_ca_t *ca = util_xcalloc(1, sizeof *ca);
    ca->store = X509_STORE_new();
    BIO *b = BIO_new_mem_buf(pem, -1);
    int n = 0;
    X509 *x;
    while (b && ca->store && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        if (X509_STORE_add_cert(ca->store, x) == 1)
            n++;
        X509_free(x);
    }
    ERR_clear_error(); /* the end of the file reads as an error */
    BIO_free(b);
    if (n == 0) {
        util_errf(err, errlen, "tls: client CA %s holds no PEM certificate", file);
        tls_client_ca_free(ca);
        free(pem);
        return NULL;
    }
    if (pem_out)
        *pem_out = pem;
    else
        free(pem);
    return ca;
}

void tls_client_ca_free(tls_client_ca_t *ca)
{
    if (!ca)
        return;
    X509_STORE_free(ca->store);
    free(ca);
}

/* The UTF-8 text of each entry nid of name, appended to arr (or the first
 * into *first). */
static void name_entries(X509_NAME *name, int nid, json_t *arr, char **first)
{
    int i = -1;
    while ((i = X509_NAME_get_index_by_NID(name, nid, i)) >= 0) {
        unsigned char *u = NULL;
        int n = ASN1_STRING_to_UTF8(&u, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
        if (n > 0 && (size_t)n == strlen((char *)u)) { /* no NUL inside */
            if (first && !*first)
                *first = util_strdup((char *)u);
            if (arr)
                json_array_append_new(arr, json_string((char *)u));
        }
        OPENSSL_free(u);
        if (first)
            break;
    }
}

int tls_client_verify(const tls_client_ca_t *ca, const unsigned char *const *der, const size_t *der_len, int n,
                      json_t **user, char *err, size_t errlen)
{
    *user = NULL;
    if (!ca || n <= 0 || n > 16)
        return util_errf(err, errlen, "no client certificate");
    X509 *leaf = NULL;
    STACK_OF(X509) *rest = sk_X509_new_null();
    for (int i = 0; i < n; i++) {
        const unsigned char *p = der[i];
        X509 *x = d2i_X509(NULL, &p, (long)der_len[i]);
        if (!x || p != der[i] + der_len[i]) {
            X509_free(x);
            ERR_clear_error();
            X509_free(leaf);
            sk_X509_pop_free(rest, X509_free);
            return util_errf(err, errlen, "the client certificate cannot be parsed");
        }
        if (i == 0)
            leaf = x;
        else
            sk_X509_push(rest, x);
    }
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    int ok = ctx && X509_STORE_CTX_init(ctx, ca->store, leaf, rest) == 1 &&
             X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT) == 1 && X509_verify_cert(ctx) == 1;
    if (!ok)
        util_errf(err, errlen, "the client certificate does not verify: %s",
                  ctx ? X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)) : "no memory");
    ERR_clear_error();
    X509_STORE_CTX_free(ctx);
    char *cn = NULL;
    if (ok) {
        json_t *groups = json_array();
        X509_NAME *subj = X509_get_subject_name(leaf);
        name_entries(subj, NID_commonName, NULL, &cn);
        name_entries(subj, NID_organizationName, groups, NULL);
        if (!cn || !*cn) {
            ok = 0;
            util_errf(err, errlen, "the client certificate has no common name");
            json_decref(groups);
        } else {
            *user = json_pack("{s:s,s:s,s:o,s:{}}", "username", cn, "uid", "", "groups", groups, "extra");
        }
    }
    free(cn);
    X509_free(leaf);
    sk_X509_pop_free(rest, X509_free);
    return ok && *user ? 0 : -1;
}

int tls_serving_setup(const char *cert_file, const char *key_file, const char *client_ca_file, int plain,
                      const char *bind_address, tls_serving_t *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (plain) {
        s->plain = 1;
        LOG_W("http: serving plain HTTP (--plain-http): tokens and workload names cross the network in clear; only "
              "for loopback or behind a TLS-terminating proxy%s",
              (cert_file && *cert_file) || (client_ca_file && *client_ca_file)
                  ? " (the certificate and client CA flags are ignored)"
                  : "");
        return 0;
    }
    if (tls_serving_pair(cert_file, key_file, bind_address, &s->pair, err, errlen) != 0)
        return -1;
    if (client_ca_file && *client_ca_file) {
        s->client_ca = tls_client_ca_load(client_ca_file, &s->client_ca_pem, err, errlen);
        if (!s->client_ca) {
            tls_pair_free(&s->pair);
            return -1;
        }
        LOG_I("http: client certificates signed by %s authenticate requests", client_ca_file);
    }
    return 0;
}

void tls_serving_free(tls_serving_t *s)
{
    if (!s)
        return;
    tls_pair_free(&s->pair);
    tls_client_ca_free(s->client_ca);
    free(s->client_ca_pem);
    memset(s, 0, sizeof *s);
}
