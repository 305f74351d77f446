/* http.c -- /healthz, /readyz, /metrics and authenticated routes on
 * libmicrohttpd, over TLS unless told otherwise. */
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
#include <ctype.h>
#include <pthread.h>
#include <microhttpd.h>
#include <gnutls/gnutls.h>

#include "util/lockorder.h"
#include "util/log.h"
#include "util/util.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_Result_t;
#else
typedef enum MHD_Result MHD_Result_t;
#endif

struct http_server {
    struct MHD_Daemon *d;
    http_server_opts_t o;
    int port;
    pthread_mutex_t routes_mu; /* LO_HTTP_ROUTES: routes, nroutes */
    http_route_t *routes;
    int nroutes;
};

/* One request, from its URI (the log callback) to its completion. */
typedef struct req {
    char *uri; /* as sent: path and query, still encoded */
    int started;
} req_t;

/* The user of the request this thread is serving (http_request_user). */
static _Thread_local const json_t *cur_user;

const json_t *http_request_user(void)
{
    return cur_user;
}

/* Every answer: no content sniffing. A page (the dashboard's index.html)
 * also: scripts, styles, images and requests only from this port, no
 * frames around it, no referrer. The app's own module scripts and style
 * sheet pass; an injected <script> or inline handler does not run even if
 * a workload's name ever reached the DOM as HTML. Inline style attributes
 * stay allowed: the app sets colours and indents with them. */
static void add_safety_headers(struct MHD_Response *r, const char *ctype)
{
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (strncmp(ctype, "text/html", 9) != 0)
        return;
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                            "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                            "frame-ancestors 'none'; form-action 'self'");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
}

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
    add_safety_headers(r, ctype);
    MHD_Result_t rc = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return rc;
}

#define HTTP_MEMORY_LIMIT (32u << 10) /* per connection: bounds the request's headers */

json_t *http_status_doc(int code, const char *reason, const char *msg)
{
    return json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1", "metadata", "status",
                     "Failure", "message", msg, "reason", reason, "code", code);
}

/* 302 to location, a path on this server. */
static MHD_Result_t reply_redirect(struct MHD_Connection *conn, const char *location)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)(uintptr_t) "", MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, location);
    MHD_Result_t rc = MHD_queue_response(conn, MHD_HTTP_FOUND, r);
    MHD_destroy_response(r);
    return rc;
}

static MHD_Result_t reply_status(struct MHD_Connection *conn, unsigned code, const char *reason, const char *msg)
{
    json_t *st = http_status_doc((int)code, reason, msg);
    char *body = st ? json_dumps(st, JSON_COMPACT) : NULL;
    json_decref(st);
    if (!body)
        return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    if (code == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"ai-scheduler\"");
    if (code == MHD_HTTP_TOO_MANY_REQUESTS)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    MHD_Result_t rc = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return rc;
}

static void *uri_start(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    req_t *q = util_xcalloc(1, sizeof *q);
    q->uri = util_strdup(uri ? uri : "");
    return q;
}

static void req_done(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    req_t *q = *con_cls;
    if (q) {
        free(q->uri);
        free(q);
        *con_cls = NULL;
    }
}

/* The route of url, copied into *out (longest prefix): 1, or 0. */
static int find_route(http_server_t *s, const char *url, http_route_t *out)
{
    size_t best = 0;
    lo_mutex_lock(&s->routes_mu, LO_HTTP_ROUTES);
    for (int i = 0; i < s->nroutes; i++) {
        size_t n = strlen(s->routes[i].prefix);
        if (n > best && !strncmp(url, s->routes[i].prefix, n)) {
            best = n;
            *out = s->routes[i];
        }
    }
    lo_mutex_unlock(&s->routes_mu, LO_HTTP_ROUTES);
    return best > 0;
}

/* The namespace segment after prefix into ns (ns_in_path): 0 with ns ""
 * when there is none, 0 with a DNS label, -1 when it is not one. */
static int path_namespace(const char *url, const char *prefix, char ns[64])
{
    const char *p = url + strlen(prefix);
    size_t n = strcspn(p, "/");
    ns[0] = 0;
    if (n == 0)
        return p[0] ? -1 : 0; /* "prefix/" + "/x": an empty segment is no namespace */
    if (n > 63 || !isalnum((unsigned char)p[0]) || !isalnum((unsigned char)p[n - 1]))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)p[i]) || isdigit((unsigned char)p[i]) || p[i] == '-'))
            return -1;
    memcpy(ns, p, n);
    ns[n] = 0;
    return 0;
}

static const char *status_reason(unsigned code)
{
    switch (code) {
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 429: return "TooManyRequests";
    default: return "ServiceUnavailable";
    }
}

static MHD_Result_t serve_route(struct MHD_Connection *conn, const http_route_t *rt, const char *url, const req_t *q,
                                const json_t *user);

/* The user of the request's verified client certificate (new reference),
 * or NULL: none configured, none sent, or one that does not verify (msg
 * says why). */
static json_t *client_cert_user(http_server_t *s, struct MHD_Connection *conn, char *msg, size_t msglen)
{
    if (!s->o.client_ca || !s->o.tls_cert_pem)
        return NULL;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t sess = ci ? (gnutls_session_t)ci->tls_session : NULL;
    unsigned int n = 0;
    const gnutls_datum_t *peers = sess ? gnutls_certificate_get_peers(sess, &n) : NULL;
    if (!peers || n == 0)
        return NULL;
    const unsigned char *der[16];
    size_t len[16];
    if (n > 16)
        n = 16;
    for (unsigned int i = 0; i < n; i++) {
        der[i] = peers[i].data;
        len[i] = peers[i].size;
    }
    json_t *user = NULL;
    if (tls_client_verify(s->o.client_ca, der, len, (int)n, &user, msg, msglen) != 0)
        return NULL;
    return user;
}

/* Authenticates the request and authorises at (verb NULL: authentication
 * only): AUTH_OK with *user (new reference), or a failure with msg. */
static auth_result_t check_request(http_server_t *s, struct MHD_Connection *conn, const auth_attrs_t *at, json_t **user,
                                   char *msg, size_t msglen)
{
    *user = NULL;
    if (!s->o.auth) {
        snprintf(msg, msglen, "authentication is not configured on this server");
        return AUTH_UNAVAILABLE;
    }
    char cmsg[256] = "";
    json_t *cu = client_cert_user(s, conn, cmsg, sizeof cmsg);
    const char *authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!authz)
        authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, HTTP_PROXIED_AUTH_HEADER);
    if (cu) {
        auth_result_t ar = auth_check_user(s->o.auth, cu, at, msg, msglen);
        if (ar == AUTH_OK || ar == AUTH_FORBIDDEN)
            *user = cu;
        else
            json_decref(cu);
        return ar;
    }
    auth_result_t ar = auth_check(s->o.auth, authz, at, user, msg, msglen);
    if (ar == AUTH_UNAUTHENTICATED && !authz && cmsg[0])
        snprintf(msg, msglen, "%s", cmsg); /* the certificate was the credential: say what is wrong with it */
    return ar;
}

/* Answers the failure ar (with msg) of url. */
static MHD_Result_t reply_denied(struct MHD_Connection *conn, const char *url, auth_result_t ar, const json_t *user,
                                 const char *msg)
{
    const char *who = json_string_value(json_object_get(user, "username"));
    unsigned code = (unsigned)auth_http_status(ar);
    LOG_D("http: GET %s: %u%s%s", url, code, who ? " user=" : "", who ? who : "");
    return reply_status(conn, code, status_reason(code), msg);
}

/* GET url in the authenticated area: authenticate, authorise for route
 * (NULL: no route serves url, 404 once authenticated), run it. */
static MHD_Result_t serve_protected(http_server_t *s, struct MHD_Connection *conn, const char *url, const req_t *q,
                                    const http_route_t *route)
{
    char msg[512];
    http_route_t rt = route ? *route : (http_route_t){ 0 };
    char ns[64] = "";
    int found = route != NULL;
    if (found && rt.ns_in_path && path_namespace(url, rt.prefix, ns) != 0)
        found = 0; /* a path no route serves: 404, after authentication */
    auth_attrs_t at = { 0 };
    if (found && !rt.authn_only)
        at = (auth_attrs_t){ .verb = rt.verb, .group = rt.group, .resource = rt.resource, .ns = ns };
    json_t *user = NULL;
    auth_result_t ar = check_request(s, conn, &at, &user, msg, sizeof msg);
    if (ar != AUTH_OK) {
        MHD_Result_t rc = reply_denied(conn, url, ar, user, msg);
        json_decref(user);
        return rc;
    }
    if (!found) {
        json_decref(user);
        return reply_status(conn, MHD_HTTP_NOT_FOUND, "NotFound", "not found");
    }
    const char *who = json_string_value(json_object_get(user, "username"));
    LOG_D("http: GET %s user=%s", url, who ? who : "");
    MHD_Result_t rc = serve_route(conn, &rt, url, q, user);
    json_decref(user);
    return rc;
}

/* Runs route rt for url as user (NULL on an open route) and answers. */
static MHD_Result_t serve_route(struct MHD_Connection *conn, const http_route_t *rt, const char *url, const req_t *q,
                                const json_t *user)
{
    const char *query = strchr(q ? q->uri : "", '?');
    char *body = NULL;
    const char *ctype = NULL;
    cur_user = user;
    int code = rt->fn(rt->ud, url, query ? query + 1 : "", &body, &ctype);
    cur_user = NULL;
    if (code < 100 || code > 599) {
        free(body);
        return reply_status(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "InternalError", "the route failed");
    }
    return reply(conn, (unsigned)code, ctype ? ctype : "application/json", body ? body : "", body != NULL);
}

static int is_builtin(const char *url)
{
    return !strcmp(url, "/healthz") || !strcmp(url, "/livez") || !strcmp(url, "/readyz") || !strcmp(url, "/metrics");
}

int http_path_listed(const char *list, const char *path)
{
    size_t n = strlen(path);
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t k = strcspn(p, ", ");
        if (k && k == n && !memcmp(p, path, n))
            return 1;
        p += k;
    }
    return 0;
}

/* /healthz, /livez, /readyz or /metrics (is_builtin), already allowed. */
static MHD_Result_t serve_builtin(http_server_t *s, struct MHD_Connection *conn, const char *url)
{
    static const char text[] = "text/plain; charset=utf-8";
    if (!strcmp(url, "/metrics"))
        return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", metrics_render(s->o.metrics), 1);
    if (strcmp(url, "/readyz") != 0)
        return reply(conn, MHD_HTTP_OK, text, "ok", 0);
    const char *why = NULL;
    if (!s->o.ready || s->o.ready(s->o.ready_ud, &why))
        return reply(conn, MHD_HTTP_OK, text, "ok", 0);
    sbuf_t b = { 0 };
    sbuf_printf(&b, "not ready%s%s\n", why ? ": " : "", why ? why : "");
    return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, text, b.data, 1);
}

static MHD_Result_t handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                           const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    http_server_t *s = cls;
    req_t *q = *con_cls;
    (void)version;
    (void)upload;
    static const char text[] = "text/plain; charset=utf-8";
    /* First call per request: headers only. Every path is GET or HEAD and
     * takes no body, so another method or an announced body is refused at
     * once, unread; otherwise answer on the second call. */
    if (q && !q->started) {
        q->started = 1;
        if (strcmp(method, "GET") && strcmp(method, "HEAD"))
            return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, text, "method not allowed\n", 0);
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        if (te || (cl && strspn(cl, "0") != strlen(cl)))
            return reply_status(conn, 413 /* content too large */, "RequestEntityTooLarge",
                                "a request here takes no body");
        if (strlen(q->uri) > HTTP_MAX_URL)
            return reply_status(conn, 414, "RequestURITooLong", "the URL is too long");
        return MHD_YES;
    }
    if (!q) { /* no URI callback ran: should not happen */
        *con_cls = q = util_xcalloc(1, sizeof *q);
        q->uri = util_strdup(url);
        q->started = 1;
        return MHD_YES;
    }
    if (upload_size && *upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, text, "method not allowed\n", 0);
    if (!strcmp(url, "/") || !strcmp(url, "/ui")) /* the dashboard (dashboard/assets.c) */
        return reply_redirect(conn, "/ui/");
    if (is_builtin(url)) {
        if (http_path_listed(s->o.always_allow ? s->o.always_allow : HTTP_DEFAULT_ALWAYS_ALLOW, url))
            return serve_builtin(s, conn, url);
        char msg[512];
        json_t *user = NULL;
        auth_attrs_t at = { .verb = "get", .path = url };
        auth_result_t ar = check_request(s, conn, &at, &user, msg, sizeof msg);
        MHD_Result_t rc = ar == AUTH_OK ? serve_builtin(s, conn, url) : reply_denied(conn, url, ar, user, msg);
        json_decref(user);
        return rc;
    }
    /* The authenticated area: /debug, under it, or under a route (one
     * lookup: the route found is the one served). */
    http_route_t rt;
    int found = find_route(s, url, &rt);
    if (found && rt.open)
        return serve_route(conn, &rt, url, q, NULL);
    if (found || !strcmp(url, "/debug") || !strncmp(url, "/debug/", 7))
        return serve_protected(s, conn, url, q, found ? &rt : NULL);
    return reply(conn, MHD_HTTP_NOT_FOUND, text, "not found\n", 0);
}

/* /debug/whoami: the caller as the API server knows it. */
static int whoami(void *ud, const char *path, const char *query, char **body, const char **ctype)
{
    (void)ud;
    (void)query;
    *ctype = "application/json";
    if (strcmp(path, "/debug/whoami") != 0) {
        *body = util_strdup("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"not "
                            "found\",\"reason\":\"NotFound\",\"code\":404}");
        return 404;
    }
    *body = json_dumps(http_request_user(), JSON_COMPACT);
    return *body ? 200 : 500;
}

int http_server_route(http_server_t *s, const http_route_t *r)
{
    if (!s || !r || !r->fn || !r->prefix || r->prefix[0] != '/' ||
        (!r->authn_only && !r->open && (!r->verb || !*r->verb || !r->resource || !*r->resource)))
        return -1;
    lo_mutex_lock(&s->routes_mu, LO_HTTP_ROUTES);
    int i = 0;
    while (i < s->nroutes && strcmp(s->routes[i].prefix, r->prefix) != 0)
        i++;
    if (i == s->nroutes)
        s->routes = util_xrealloc(s->routes, (size_t)++s->nroutes * sizeof *s->routes);
    s->routes[i] = *r;
    lo_mutex_unlock(&s->routes_mu, LO_HTTP_ROUTES);
    return 0;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
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

void http_opts_tls(http_server_opts_t *o, const tls_serving_t *sv)
{
    o->tls_cert_pem = sv->pair.cert_pem;
    o->tls_key_pem = sv->pair.key_pem;
    o->client_ca = sv->client_ca;
    o->client_ca_pem = sv->client_ca_pem;
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
    if (o)
        s->o = *o;
    pthread_mutex_init(&s->routes_mu, NULL);
    /* A thread per connection: a request waiting on a review or a slow
     * route never holds up /healthz. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
#ifdef MHD_USE_POLL
    flags |= MHD_USE_POLL;
#endif
    if (v6)
        flags |= MHD_USE_IPv6;
    int tls = o && o->tls_cert_pem && o->tls_key_pem;
    if (o && !!o->tls_cert_pem != !!o->tls_key_pem) {
        snprintf(err, errlen, "http: a TLS certificate needs its key and the other way round");
        pthread_mutex_destroy(&s->routes_mu);
        free(s);
        return NULL;
    }
    /* The TLS options go in an array (ended by MHD_OPTION_END), empty for
     * plain HTTP. */
    struct MHD_OptionItem tls_opts[4];
    int nt = 0;
    if (tls) {
        flags |= MHD_USE_TLS;
        tls_opts[nt++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)(uintptr_t)o->tls_cert_pem };
        tls_opts[nt++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)(uintptr_t)o->tls_key_pem };
        /* A trust list makes the handshake ask for (not require) a client
         * certificate; tls_client_verify decides about it per request. */
        if (o->client_ca && o->client_ca_pem)
            tls_opts[nt++] =
                (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)(uintptr_t)o->client_ca_pem };
    }
    tls_opts[nt] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    errno = 0;
    /* The logger first: libmicrohttpd warns (to stderr) about options before it. */
    s->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
                            (void *)NULL, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MEMORY_LIMIT, MHD_OPTION_URI_LOG_CALLBACK,
                            uri_start, s, MHD_OPTION_NOTIFY_COMPLETED, req_done, s, MHD_OPTION_END);
    if (!s->d) {
        pthread_mutex_destroy(&s->routes_mu);
        snprintf(err, errlen, "http: cannot listen on %s%s%s:%d: %s", v6 ? "[" : "", addr, v6 ? "]" : "", port,
                 errno ? strerror(errno)
                 : tls ? "libmicrohttpd failed to start (is the certificate or key PEM it takes?)"
                       : "libmicrohttpd failed to start");
        free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : port;
    (void)sl;
    http_route_t who = { .prefix = "/debug/whoami", .fn = whoami, .authn_only = 1 };
    http_server_route(s, &who);
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
    free(s->routes);
    free(s);
}
