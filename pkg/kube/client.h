/* client.h -- a small Kubernetes REST client over libcurl (HTTPS, client
 * certificates or bearer tokens, connection reuse, client-side QPS/burst).
 *
 * Thread-safe: a request takes an idle curl handle from the client's pool and
 * gives it back (so TLS connections stay open, whichever thread asks next),
 * the rate limiter is shared. Requests return
 * 0 when an HTTP answer came back (whatever its status) and -1 with a message
 * on transport errors. */
#ifndef AISCHED_KUBE_CLIENT_H
#define AISCHED_KUBE_CLIENT_H

#include <stddef.h>
#include <curl/curl.h>
#include <jansson.h>
#include "kube/kubeconfig.h"

typedef struct kube_client kube_client_t;

typedef struct kube_client_opts {
    double qps; /* 0 = unlimited */
    int burst;
    int timeout_s; /* per request (not watches); default 30 */
    const char *user_agent;
} kube_client_opts_t;

typedef struct kube_response {
    long status; /* HTTP status */
    char *body;  /* NUL-terminated, owned; may be "" */
    size_t len;
    /* In-process clients only: a 2xx answer may come as this document (a
     * reference, never changed) with body "", so that a write whose answer
     * nobody reads is never serialized; kube_client_decode reads either. */
    json_t *doc;
} kube_response_t;

/* cfg is copied. */
kube_client_t *kube_client_new(const kube_config_t *cfg, const kube_client_opts_t *o, char *err, size_t errlen);
/* The kubeconfig's client certificate and key (inline PEM, else files) on
 * h, as the client presents them; nothing when it has none. For other
 * HTTPS clients that authenticate as the kubeconfig's user. */
void kube_curl_client_cert(CURL *h, const kube_config_t *k);
/* A client that sends nothing: every request (kube_request and what is
 * built on it, and kube_async's) calls fn on the caller's thread, which
 * fills resp (status; body malloc'd or NULL for ""). For the sandbox. */
typedef void (*kube_inproc_fn)(void *ud, const char *method, const char *path, const char *content_type,
                               const char *body, kube_response_t *resp);
kube_client_t *kube_client_new_inproc(kube_inproc_fn fn, void *ud);
int kube_client_is_inproc(const kube_client_t *c);
void kube_client_free(kube_client_t *c);
const char *kube_client_server(const kube_client_t *c);

/* method: "GET", "POST", "PUT", "PATCH", "DELETE". body may be NULL.
 * content_type NULL means application/json. */
int kube_request(kube_client_t *c, const char *method, const char *path, const char *content_type, const char *body,
                 kube_response_t *resp, char *err, size_t errlen);
void kube_response_free(kube_response_t *r);
/* A GET-like request (no body) with extra headers ("Name: value"), a
 * NULL-terminated list, sent besides the client's own. */
int kube_request_headers(kube_client_t *c, const char *method, const char *path, const char *const *headers,
                         kube_response_t *resp, char *err, size_t errlen);

/* GET and decode; *out is a new reference. Non-2xx gives -1 with the API's
 * message ("pods \"x\" not found (404)") and *status set. */
int kube_get_json(kube_client_t *c, const char *path, json_t **out, long *status, char *err, size_t errlen);
/* "/api/v1/namespaces/NS/pods/NAME" (ns and name URL-encoded), then
 * "/sub" when sub is not NULL; the caller frees. */
char *kube_pod_path(const char *ns, const char *name, const char *sub);
/* POST/PATCH/PUT a JSON body; *out (optional) gets the decoded answer. */
int kube_send_json(kube_client_t *c, const char *method, const char *path, const char *content_type, json_t *body,
                   json_t **out, long *status, char *err, size_t errlen);

/* LIST with pagination (limit/continue). cb gets each item (borrowed) and
 * returns 0 to go on. rv_out gets the list's resourceVersion. */
typedef int (*kube_item_cb)(json_t *item, void *ud);
int kube_list(kube_client_t *c, const char *path, int limit, kube_item_cb cb, void *ud, char *rv_out, size_t rvlen,
              long *status, char *err, size_t errlen);

/* kube_list into arr (each item appended, a reference each), pages of 500. */
int kube_list_array(kube_client_t *c, const char *path, json_t *arr, long *status, char *err, size_t errlen);

/* WATCH from rv as a chunked stream (allowWatchBookmarks=true). cb gets each
 * event's type ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR") and
 * object (borrowed); a nonzero return ends the watch. Returns when the stream
 * ends, *stop becomes nonzero (checked at least every second), or on error;
 * *status is 410 when the server says the resourceVersion is gone (also when
 * it says so in an ERROR event). rv_io is updated to the last seen rv. */
typedef int (*kube_event_cb)(const char *type, json_t *object, void *ud);
int kube_watch(kube_client_t *c, const char *path, char *rv_io, size_t rvlen, int timeout_s, kube_event_cb cb, void *ud,
               const volatile int *stop, long *status, char *err, size_t errlen);

/* Which API the server serves, e.g. kube_has_api(c, "policy/v1"). Cached. */
int kube_has_api(kube_client_t *c, const char *group_version);

/* Totals for /metrics, not split by verb or code: requests, errors
 * (transport failures, 5xx, and 429 outside watches), time spent
 * throttled, latency sum. */
typedef struct kube_client_stats {
    unsigned long requests, errors, throttled_ms;
    double latency_sum_s;
} kube_client_stats_t;
void kube_client_get_stats(kube_client_t *c, kube_client_stats_t *s);

#endif
