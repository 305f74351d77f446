/* tls_fixture.h -- test certificates made with OpenSSL: a CA and leaves it
 * signs (client or server), as PEM strings. */
#ifndef AISCHED_TEST_TLS_FIXTURE_H
#define AISCHED_TEST_TLS_FIXTURE_H

#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

typedef struct fx_cert {
    EVP_PKEY *key;
    X509 *cert;
    char *cert_pem, *key_pem;
} fx_cert_t;

static inline void fx_ext(X509 *x, X509 *issuer, int nid, const char *v)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, v);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
}

static inline char *fx_bio_str(BIO *b)
{
    char *d = NULL;
    long n = BIO_get_mem_data(b, &d);
    char *s = calloc(1, (size_t)n + 1);
    memcpy(s, d, (size_t)n);
    BIO_free(b);
    return s;
}

/* A certificate for cn (and o when set), signed by issuer (NULL:
 * self-signed CA). eku: "clientAuth", "serverAuth" or NULL. san: a
 * subjectAltName value or NULL. from_s: notBefore offset from now. */
static inline fx_cert_t fx_make(const fx_cert_t *issuer, const char *cn, const char *o, const char *eku,
                                const char *san, long from_s)
{
    fx_cert_t c = { 0 };
    static long serial = 100;
    c.key = EVP_EC_gen("P-256");
    c.cert = X509_new();
    X509_set_version(c.cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(c.cert), serial++);
    X509_gmtime_adj(X509_getm_notBefore(c.cert), from_s);
    X509_gmtime_adj(X509_getm_notAfter(c.cert), from_s + 86400);
    X509_set_pubkey(c.cert, c.key);
    X509_NAME *n = X509_get_subject_name(c.cert);
    if (o)
        X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)o, -1, -1, 0);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
    X509 *iss = issuer ? issuer->cert : c.cert;
    X509_set_issuer_name(c.cert, X509_get_subject_name(iss));
    if (!issuer) {
        fx_ext(c.cert, iss, NID_basic_constraints, "critical,CA:TRUE");
        fx_ext(c.cert, iss, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
    } else {
        fx_ext(c.cert, iss, NID_basic_constraints, "critical,CA:FALSE");
        fx_ext(c.cert, iss, NID_key_usage, "critical,digitalSignature,keyEncipherment");
        if (eku)
            fx_ext(c.cert, iss, NID_ext_key_usage, eku);
        if (san)
            fx_ext(c.cert, iss, NID_subject_alt_name, san);
    }
    X509_sign(c.cert, issuer ? issuer->key : c.key, EVP_sha256());
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(b, c.cert);
    c.cert_pem = fx_bio_str(b);
    b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, c.key, NULL, NULL, 0, NULL, NULL);
    c.key_pem = fx_bio_str(b);
    return c;
}

static inline void fx_free(fx_cert_t *c)
{
    EVP_PKEY_free(c->key);
    X509_free(c->cert);
    free(c->cert_pem);
    free(c->key_pem);
    memset(c, 0, sizeof *c);
}

/* Writes s to a new temporary file; its path into path (>= 32 bytes). */
static inline void fx_write(char *path, const char *s)
{
    strcpy(path, "/tmp/aisched_tls.XXXXXX");
    int fd = mkstemp(path);
    if (fd >= 0) {
        FILE *f = fdopen(fd, "w");
        fputs(s, f);
        fclose(f);
    }
}

#endif
