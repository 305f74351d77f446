/* tls.h -- the HTTP server's serving certificate (loaded from files, or
 * self-signed in memory at start) and the verification of client
 * certificates against a CA bundle, with OpenSSL. */
#ifndef AISCHED_SERVER_TLS_H
#define AISCHED_SERVER_TLS_H

#include <stddef.h>
#include <jansson.h>

/* A certificate and its private key, PEM (what libmicrohttpd takes). */
typedef struct tls_pair {
    char *cert_pem, *key_pem;
    char sha256[96]; /* the certificate's SHA-256 fingerprint, "AB:CD:..." */
} tls_pair_t;

/* A self-signed serving certificate (EC P-256, valid days from now, CN the
 * first host) whose subjectAltName lists hosts: IP literals as IP entries,
 * the rest as DNS names (empty and duplicate entries skipped). 0, or -1
 * with err set. */
int tls_self_signed(const char *const *hosts, int nhosts, int days, tls_pair_t *out, char *err, size_t errlen);

/* Reads a PEM certificate (the first of the file; a chain's others are
 * ignored) and its PEM private key; refuses a key that does not match the
 * certificate. 0, or -1 with err naming the file and the fault. */
int tls_load_pair(const char *cert_file, const char *key_file, tls_pair_t *out, char *err, size_t errlen);

/* The scheduler's serving pair: loaded from cert_file and key_file (both or
 * neither), else self-signed for a year for this host's name, localhost,
 * 127.0.0.1, ::1, $POD_IP and bind_address (unless a wildcard). Logs which
 * and the fingerprint. 0, or -1 with err set. */
int tls_serving_pair(const char *cert_file, const char *key_file, const char *bind_address, tls_pair_t *out, char *err,
                     size_t errlen);

void tls_pair_free(tls_pair_t *p);

/* The SAN entries of a PEM certificate, as "DNS:name" / "IP:addr", comma
 * separated, malloc'd (tests, logs); NULL when it cannot be read. */
char *tls_cert_sans(const char *cert_pem);

/* Client certificates: a CA bundle, and the user a verified chain names. */
typedef struct tls_client_ca tls_client_ca_t;

/* Loads the PEM CA bundle of file (at least one certificate). NULL with err
 * set. pem_out (may be NULL) gets the bundle's text (malloc'd), for the TLS
 * library to name the CAs in its certificate request. */
tls_client_ca_t *tls_client_ca_load(const char *file, char **pem_out, char *err, size_t errlen);
void tls_client_ca_free(tls_client_ca_t *ca);

/* Verifies a peer chain (DER, leaf first) against ca for client
 * authentication (time, chain, extended key usage clientAuth when the leaf
 * has an extended key usage). 0 with *user = {"username": CN, "uid": "",
 * "groups": [O...], "extra": {}} (new reference), or -1 with err saying
 * why (no CN is a failure too). */
int tls_client_verify(const tls_client_ca_t *ca, const unsigned char *const *der, const size_t *der_len, int n,
                      json_t **user, char *err, size_t errlen);

/* What a server serves with: its pair (none when plain), the client CAs
 * (none without a file) and their text. */
typedef struct tls_serving {
    int plain;
    tls_pair_t pair;
    tls_client_ca_t *client_ca;
    char *client_ca_pem;
} tls_serving_t;

/* Sets up s from the serving flags: plain (warned; cert, key and CA
 * ignored, said so) or tls_serving_pair(cert_file, key_file, bind) and
 * client_ca_file when given. 0, or -1 with err set. */
int tls_serving_setup(const char *cert_file, const char *key_file, const char *client_ca_file, int plain,
                      const char *bind_address, tls_serving_t *s, char *err, size_t errlen);
void tls_serving_free(tls_serving_t *s);

#endif
