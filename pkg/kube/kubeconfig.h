/* kubeconfig.h -- where the API server is and how to authenticate.
 *
 * Sources, in order: an explicit path (--kubeconfig), $KUBECONFIG (first
 * file), ~/.kube/config, then in-cluster (KUBERNETES_SERVICE_HOST/PORT,
 * /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}). From a file:
 * current-context -> cluster (server, certificate-authority[-data],
 * insecure-skip-tls-verify) and user (client-certificate[-data],
 * client-key[-data], token, tokenFile). Relative paths are relative to the
 * file. *-data fields are base64 PEM kept in memory.
 *
 * In-cluster, $AISCHED_SA_DIR replaces the service-account directory
 * /var/run/secrets/kubernetes.io/serviceaccount (tests point it at a tmp dir).
 * The token is kept as token_file so a rotated token is picked up. */
#ifndef AISCHED_KUBECONFIG_H
#define AISCHED_KUBECONFIG_H

#include <stddef.h>

typedef struct kube_config {
    char *server;  /* https://host:port, no trailing slash */
    char *ca_file; /* path, or NULL */
    char *ca_pem;  /* decoded PEM, or NULL */
    char *cert_file, *cert_pem;
    char *key_file, *key_pem;
    char *token;      /* static bearer token, or NULL */
    char *token_file; /* re-read when it changes (service-account rotation) */
    int insecure;     /* insecure-skip-tls-verify: true */
    char *source;     /* which file or "in-cluster", for messages */
} kube_config_t;

/* path NULL: $KUBECONFIG, ~/.kube/config, in-cluster. Returns 0, or -1 with
 * one line naming the cause ("kubeconfig /x: no current-context"). */
int kube_config_load(kube_config_t *c, const char *path, char *err, size_t errlen);
/* The same from a buffer (a kubeconfig held in a Secret); source names it in
 * messages ("in secret ns/name"). Only inline credentials: a file reference
 * (certificate-authority, client-certificate, client-key, tokenFile) is an
 * error, so the buffer's author cannot make us send our own files. */
int kube_config_parse(kube_config_t *c, const char *data, size_t len, const char *source, char *err, size_t errlen);
int kube_config_copy(kube_config_t *dst, const kube_config_t *src);
void kube_config_free(kube_config_t *c);

/* Decodes standard base64 (whitespace ignored, padding optional). Returns a
 * NUL-terminated malloc'd buffer and its length in *outlen, or NULL when the
 * input is not base64. */
char *kube_base64_decode(const char *in, size_t *outlen);

#endif
