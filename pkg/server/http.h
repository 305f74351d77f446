/* http.h -- the scheduler's small HTTP(S) endpoint on libmicrohttpd (a
 * thread per connection, at most 64). HTTPS when opts carry a certificate
 * (the daemon's default; pkg/server/tls.h makes one), else plain HTTP.
 *
 * Paths in opts->always_allow (default /healthz,/readyz,/livez, as
 * kube-scheduler's --authorization-always-allow-paths) are served to anyone.
 * Every other path is authenticated and authorised by the API server
 * through opts->auth (auth.h), as kube-scheduler's secure port does: a
 * client certificate that verifies against opts->client_ca (user = CN,
 * groups = O), else a bearer token (TokenReview); then a
 * SubjectAccessReview: /healthz, /readyz, /livez and /metrics ask `get` on
 * that non-resource path, routes what they registered. Routes registered
 * .open are served to anyone (they name no workload).
 *
 * Built in: /healthz and /livez (200 "ok"), /readyz (200 "ok" when the
 * ready callback says so, else 503), /metrics (Prometheus text),
 * /debug/whoami ({"username","uid","groups","extra"} of any authenticated
 * user), and / (302 to /ui/). Answers on authenticated paths: 401 with
 * WWW-Authenticate: Bearer without valid credentials, 403 without the
 * right, 404 for an unknown path (only after authentication, so paths
 * cannot be probed without credentials), 429 over the review rate, 503 when
 * the API server gives no answer or no auth is configured. Any path: 414
 * for a URL over HTTP_MAX_URL bytes, 413 for a request with a body, 405 for
 * methods other than GET/HEAD. Errors there are a kube Status object.
 *
 * Ownership: the server borrows opts->metrics, opts->ready_ud, opts->auth,
 * opts->client_ca and the strings of opts; they must outlive
 * http_server_stop(). stop() frees the server. */
#ifndef AISCHED_HTTP_H
#define AISCHED_HTTP_H

#include <stddef.h>
#include <jansson.h>
#include "server/auth.h"
#include "server/metrics.h"
#include "server/tls.h"

#define HTTP_MAX_URL 4096 /* bytes of path and query */
/* Served without authentication unless opts->always_allow says otherwise. */
#define HTTP_DEFAULT_ALWAYS_ALLOW "/healthz,/readyz,/livez"
/* The API server consumes a request's Authorization header and does not
 * pass it through its pod proxy: a client that reaches the scheduler that
 * way sends its bearer token in this header instead (reviewed the same
 * way; Authorization wins when both are present). */
#define HTTP_PROXIED_AUTH_HEADER "X-Ai-Scheduler-Authorization"

/* Returns nonzero when ready; may set *why (static or ud-owned string) for
 * the 503 body. Called from the server thread: must be thread-safe. */
typedef int (*http_ready_fn)(void *ud, const char **why);

typedef struct http_server_opts {
    const char *bind_address; /* IPv4 or IPv6 literal; NULL = "0.0.0.0" */
    int port;                 /* 0 = pick a free port (see http_server_port) */
    metrics_t *metrics;       /* NULL: /metrics serves an empty body */
    http_ready_fn ready;      /* NULL: always ready */
    void *ready_ud;
    auth_t *auth; /* NULL: authenticated paths answer 503 (fail closed) */
    /* Both: serve HTTPS with this PEM certificate (chain) and key; neither:
     * plain HTTP. */
    const char *tls_cert_pem, *tls_key_pem;
    /* With TLS: a client certificate that verifies against client_ca
     * authenticates the request; client_ca_pem (the same CAs' text) lets
     * the handshake ask for one. NULL: client certificates are ignored. */
    const tls_client_ca_t *client_ca;
    const char *client_ca_pem;
    /* Comma-separated exact paths served without authentication; NULL:
     * HTTP_DEFAULT_ALWAYS_ALLOW, "" none. */
    const char *always_allow;
} http_server_opts_t;

/* Sets o's TLS fields from what tls_serving_setup made (the pair, none
 * when plain; the client CAs and their text): the daemons' one mapping. */
void http_opts_tls(http_server_opts_t *o, const tls_serving_t *sv);

typedef struct http_server http_server_t;

/* A GET route under an authenticated prefix. fn fills *body (malloc'd, the
 * server frees it) and *ctype (static string) and returns the HTTP status.
 * Runs on the server's thread: thread-safe. path is the decoded path (no
 * query); query is the raw query string after '?' ("" when none). */
typedef int (*http_route_fn)(void *ud, const char *path, const char *query, char **body, const char **ctype);
typedef struct http_route {
    const char *prefix; /* "/debug/pods/": matches paths that start with it */
    http_route_fn fn;
    void *ud;
    const char *verb, *group, *resource; /* what the SubjectAccessReview asks, e.g. "get","","pods" */
    int ns_in_path;                      /* the segment after prefix is the request's namespace */
    /* Added by i24-auth: 1 = any authenticated user, no SubjectAccessReview
     * (verb, group, resource ignored). Otherwise verb and resource are
     * required, so a route cannot be opened by forgetting them. */
    int authn_only;
    /* 1 = served to anyone, with no authentication (verb, group, resource
     * ignored): only for what names no workload, e.g. the dashboard's
     * static files, whose data comes from authenticated routes. */
    int open;
} http_route_t;

/* Adds a route (copied; strings must outlive the server). Any time, any
 * thread. The longest matching prefix wins; a prefix registered again
 * replaces the route. 0, or -1 when prefix does not start with '/', fn is
 * NULL, or verb/resource are missing without authn_only or open.
 *
 * With ns_in_path, the segment after the prefix is the namespace asked in
 * the SubjectAccessReview: it must be a DNS label (else 404); an empty one
 * (the path is the prefix itself) asks cluster-wide. */
/* A kube Status object (kind Status, status Failure) for an error answer,
 * as the server's own 401/403/404 are: clients show its message. */
json_t *http_status_doc(int code, const char *reason, const char *msg);
int http_server_route(http_server_t *s, const http_route_t *r);

/* In a route's fn: the user the request was authenticated as (borrowed for
 * the call: {"username","uid","groups","extra"}), NULL elsewhere. */
const json_t *http_request_user(void);

/* Binds and starts serving. NULL with err set ("bind 0.0.0.0:10261: ...")
 * when the address is bad or the port is taken. */
http_server_t *http_server_start(const http_server_opts_t *o, char *err, size_t errlen);
/* Is path one of the comma-separated paths of list (exact match)? */
int http_path_listed(const char *list, const char *path);

/* The port actually bound (useful with port 0). */
int http_server_port(const http_server_t *s);
/* Stops the thread, closes the socket, frees s. NULL is fine. */
void http_server_stop(http_server_t *s);

#endif
