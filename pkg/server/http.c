/* http.c -- /healthz, /readyz and /metrics on libmicrohttpd. */
#include "server/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <pthread.h>

#include "util/log.h"
#include "util/util.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_Result_t;
#else
typedef enum MHD_Result MHD_Result_t;
#endif

#define HTTP_MAX_ROUTES 16

struct http_server {
    struct MHD_Daemon *d;
    http_server_opts_t o;
    int port;
    pthread_mutex_t routes_mu; /* stand-in route table (http_server_route) */
    http_route_t routes[HTTP_MAX_ROUTES];
    int nroutes;
};

static MHD_Result_t reply(struct MHD_Connection *conn, unsigned code, const char *ctype, const char *body, int owned)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)(uintptr_t)body,
                                                             owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (owned)
            free((void *)(uintptr_t)body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_Result_t rc = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return rc;
}

/* The route whose prefix url starts with (a copy in *out), 0 if none. */
static int route_find(http_server_t *s, const char *url, http_route_t *out)
{
    int found = 0;
    pthread_mutex_lock(&s->routes_mu);
    for (int i = 0; i < s->nroutes && !found; i++)
        if (strncmp(url, s->routes[i].prefix, strlen(s->routes[i].prefix)) == 0) {
            *out = s->routes[i];
            found = 1;
        }
    pthread_mutex_unlock(&s->routes_mu);
    return found;
}

int http_server_route(http_server_t *s, const http_route_t *r)
{
    if (!s || !r || !r->prefix || !r->fn)
        return -1;
    pthread_mutex_lock(&s->routes_mu);
    int rc = s->nroutes < HTTP_MAX_ROUTES ? 0 : -1;
    if (rc == 0)
        s->routes[s->nroutes++] = *r;
    pthread_mutex_unlock(&s->routes_mu);
    return rc;
}

static MHD_Result_t handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                           const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    http_server_t *s = cls;
    static const char text[] = "text/plain; charset=utf-8";
    /* First call per request: headers only. Answer on the second so a body
     * (which we ignore) never confuses MHD. */
    if (!*con_cls) {
        *con_cls = s;
        return MHD_YES;
    }
    if (upload_size && *upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, text, "method not allowed\n", 0);
    if (!strcmp(url, "/healthz") || !strcmp(url, "/livez"))
        return reply(conn, MHD_HTTP_OK, text, "ok", 0);
    if (!strcmp(url, "/readyz")) {
        const char *why = NULL;
        if (!s->o.ready || s->o.ready(s->o.ready_ud, &why))
            return reply(conn, MHD_HTTP_OK, text, "ok", 0);
        sbuf_t b = { 0 };
        sbuf_printf(&b, "not ready%s%s\n", why ? ": " : "", why ? why : "");
        return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, text, b.data, 1);
    }
    if (!strcmp(url, "/metrics"))
        return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", metrics_render(s->o.metrics), 1);
    http_route_t r;
    if (route_find(s, url, &r)) {
        char *body = NULL;
        const char *ctype = text;
        int code = r.fn(r.ud, url, NULL, &body, &ctype); /* stand-in: no query string */
        return reply(conn, (unsigned)code, ctype ? ctype : text, body ? body : util_strdup(""), 1);
    }
    return reply(conn, MHD_HTTP_NOT_FOUND, text, "not found\n", 0);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = 0;
    LOG_W("http: %s", msg);
}

static int make_addr(const char *a, int port, struct sockaddr_storage *ss, socklen_t *len, int *v6)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, a, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        *len = sizeof *in4;
        *v6 = 0;
        return 0;
    }
    memset(ss, 0, sizeof *ss);
    if (inet_pton(AF_INET6, a, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *len = sizeof *in6;
        *v6 = 1;
        return 0;
    }
    return -1;
}

http_server_t *http_server_start(const http_server_opts_t *o, char *err, size_t errlen)
{
    const char *addr = o && o->bind_address ? o->bind_address : "0.0.0.0";
    int port = o ? o->port : 0;
    struct sockaddr_storage ss;
    socklen_t sl;
    int v6;
    if (port < 0 || port > 65535) {
        snprintf(err, errlen, "http: port %d out of range", port);
        return NULL;
    }
    if (make_addr(addr, port, &ss, &sl, &v6) < 0) {
        snprintf(err, errlen, "http: bind address \"%s\" is not an IP address", addr);
        return NULL;
    }
    http_server_t *s = util_xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->routes_mu, NULL);
    if (o)
        s->o = *o;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
#ifdef MHD_USE_POLL
    flags |= MHD_USE_POLL;
#endif
    if (v6)
        flags |= MHD_USE_IPv6;
    errno = 0;
    s->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
                            (void *)NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, errlen, "http: cannot listen on %s%s%s:%d: %s", v6 ? "[" : "", addr, v6 ? "]" : "", port,
                 errno ? strerror(errno) : "libmicrohttpd failed to start");
        pthread_mutex_destroy(&s->routes_mu);
        free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : port;
    (void)sl;
    return s;
}

int http_server_port(const http_server_t *s)
{
    return s ? s->port : 0;
}

void http_server_stop(http_server_t *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d);
    pthread_mutex_destroy(&s->routes_mu);
    free(s);
}
