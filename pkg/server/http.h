/* http.h -- the scheduler's small HTTP endpoint on libmicrohttpd (its own
 * polling thread): GET /healthz and /livez (200 "ok"), /readyz (200 "ok"
 * when the ready callback says so, else 503), /metrics (Prometheus text).
 * Anything else is 404; methods other than GET/HEAD are 405.
 *
 * Ownership: the server borrows opts->metrics and opts->ready_ud; both must
 * outlive http_server_stop(). stop() frees the server. */
#ifndef AISCHED_HTTP_H
#define AISCHED_HTTP_H

#include <stddef.h>
#include "server/metrics.h"

/* Returns nonzero when ready; may set *why (static or ud-owned string) for
 * the 503 body. Called from the server thread: must be thread-safe. */
typedef int (*http_ready_fn)(void *ud, const char **why);

typedef struct http_server_opts {
    const char *bind_address; /* IPv4 or IPv6 literal; NULL = "0.0.0.0" */
    int port;                 /* 0 = pick a free port (see http_server_port) */
    metrics_t *metrics;       /* NULL: /metrics serves an empty body */
    http_ready_fn ready;      /* NULL: always ready */
    void *ready_ud;
} http_server_opts_t;

typedef struct http_server http_server_t;

/* Binds and starts serving. NULL with err set ("bind 0.0.0.0:10261: ...")
 * when the address is bad or the port is taken. */
http_server_t *http_server_start(const http_server_opts_t *o, char *err, size_t errlen);
/* The port actually bound (useful with port 0). */
int http_server_port(const http_server_t *s);
/* A GET route under an authenticated prefix. fn fills *body (malloc'd, the server frees it) and
 * *ctype (static string) and returns the HTTP status. Runs on the server's thread: thread-safe. */
typedef int (*http_route_fn)(void *ud, const char *path, const char *query, char **body, const char **ctype);
typedef struct http_route {
    const char *prefix; /* "/debug/pods/": matches paths that start with it */
    http_route_fn fn;
    void *ud;
    const char *verb, *group, *resource; /* what the SubjectAccessReview asks, e.g. "get","","pods" */
    int ns_in_path;                      /* the segment after prefix is the request's namespace */
} http_route_t;
/* Adds a route (copied; strings must outlive the server). Any time, any thread.
 * STAND-IN (branch i24-explain) until i24-auth's version lands: no
 * authentication or authorisation here, the route runs for any caller. */
int http_server_route(http_server_t *s, const http_route_t *r);
/* Stops the thread, closes the socket, frees s. NULL is fine. */
void http_server_stop(http_server_t *s);

#endif
