/* test_kube_client.c -- rate limiter, watch stream parser, and the client and
 * informer against a tiny fake API server on 127.0.0.1 (plain HTTP/1.1,
 * keep-alive, chunked watch streams, a resource with an event log that can
 * be compacted to force 410s). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kube/client.h"
#include "kube/informer.h"
#include "kube/ratelimit.h"
#include "kube/watchparse.h"
#include "util/util.h"
#include "tmpdir.h"

/* ======================================================================
 * rate limiter
 * ====================================================================== */

static void test_ratelimit_math(void **state)
{
    kube_ratelimit_t rl;
    kube_rl_init(&rl, 10, 3, 0);
    assert_int_equal(kube_rl_reserve(&rl, 0), 0);
    assert_int_equal(kube_rl_reserve(&rl, 0), 0);
    assert_int_equal(kube_rl_reserve(&rl, 0), 0);
    assert_int_equal(kube_rl_reserve(&rl, 0), 100000);      /* burst spent: 1/qps */
    assert_int_equal(kube_rl_reserve(&rl, 0), 200000);      /* queued behind the previous */
    assert_int_equal(kube_rl_reserve(&rl, 150000), 150000); /* 1.5 tokens refilled of 3 owed */
    /* A long idle refills only up to burst. */
    assert_int_equal(kube_rl_reserve(&rl, 10000000), 0);
    assert_int_equal(kube_rl_reserve(&rl, 10000000), 0);
    assert_int_equal(kube_rl_reserve(&rl, 10000000), 0);
    assert_true(kube_rl_reserve(&rl, 10000000) > 0);
    kube_rl_destroy(&rl);

    kube_rl_init(&rl, 0, 0, 0); /* unlimited */
    for (int i = 0; i < 1000; i++)
        assert_int_equal(kube_rl_reserve(&rl, 0), 0);
    kube_rl_destroy(&rl);
}

typedef struct {
    kube_ratelimit_t *rl;
    int n;
} rl_arg_t;

static void *rl_worker(void *p)
{
    rl_arg_t *a = p;
    for (int i = 0; i < a->n; i++) {
        int64_t us = kube_rl_reserve(a->rl, util_now_us());
        if (us > 0)
            util_sleep_ms((us + 999) / 1000);
    }
    return NULL;
}

static void test_ratelimit_threads(void **state)
{
    kube_ratelimit_t rl;
    kube_rl_init(&rl, 50, 5, util_now_us());
    pthread_t th[4];
    rl_arg_t a = { &rl, 5 };
    int64_t t0 = util_now_ms();
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, rl_worker, &a);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    int64_t took = util_now_ms() - t0;
    /* 20 requests, 5 free, 15 at 50/s: 300 ms. */
    assert_true(took >= 280);
    assert_true(took < 2000);
    kube_rl_destroy(&rl);
}

/* ======================================================================
 * watch parser
 * ====================================================================== */

typedef struct ev_log {
    char seen[64][64];
    int n;
    int stop_after; /* cb returns 1 after this many; 0 = never */
    size_t biggest;
} ev_log_t;

static int log_cb(const char *type, json_t *obj, void *ud)
{
    ev_log_t *l = ud;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    char *dump = json_dumps(obj, JSON_COMPACT);
    if (dump && strlen(dump) > l->biggest)
        l->biggest = strlen(dump);
    free(dump);
    if (l->n < 64)
        snprintf(l->seen[l->n], sizeof l->seen[0], "%s %s", type, name ? name : "-");
    l->n++;
    return l->stop_after && l->n >= l->stop_after;
}

#define EV(t, name, rv)                                                                                                \
    "{\"type\":\"" t "\",\"object\":{\"metadata\":{\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"}}}\n"

static void test_watch_parser_split(void **state)
{
    const char *stream =
        EV("ADDED", "a", "11") "\n  \r\n" EV("MODIFIED", "a", "12") "{\"type\":\"FUTURE\",\"object\":{}}\n" EV(
            "BOOKMARK", "", "20") EV("DELETED", "a", "21");
    /* Every chunk size, from byte by byte to all at once, gives the same. */
    for (size_t chunk = 1; chunk <= strlen(stream); chunk += (chunk < 8 ? 1 : 37)) {
        ev_log_t l = { 0 };
        char rv[16] = "10";
        kube_watch_parser_t p;
        kube_watch_parser_init(&p, log_cb, &l, rv, sizeof rv, 0);
        for (size_t off = 0; off < strlen(stream); off += chunk) {
            size_t n = strlen(stream) - off < chunk ? strlen(stream) - off : chunk;
            assert_int_equal(kube_watch_parser_feed(&p, stream + off, n), 0);
        }
        assert_int_equal(kube_watch_parser_finish(&p), 0);
        assert_int_equal(l.n, 4);
        assert_string_equal(l.seen[0], "ADDED a");
        assert_string_equal(l.seen[1], "MODIFIED a");
        assert_string_equal(l.seen[2], "BOOKMARK ");
        assert_string_equal(l.seen[3], "DELETED a");
        assert_string_equal(rv, "21");
        assert_int_equal(p.failed, 0);
        kube_watch_parser_free(&p);
    }
}

static void test_watch_parser_last_line_and_stop(void **state)
{
    ev_log_t l = { 0 };
    char rv[16] = "";
    kube_watch_parser_t p;
    kube_watch_parser_init(&p, log_cb, &l, rv, sizeof rv, 0);
    const char *s = EV("ADDED", "x", "5");
    assert_int_equal(kube_watch_parser_feed(&p, s, strlen(s) - 1), 0); /* no '\n' */
    assert_int_equal(l.n, 0);
    assert_int_equal(kube_watch_parser_finish(&p), 0);
    assert_int_equal(l.n, 1);
    assert_string_equal(rv, "5");
    kube_watch_parser_free(&p);

    /* The callback can end the stream; that is not a failure. */
    ev_log_t l2 = { .stop_after = 2 };
    kube_watch_parser_init(&p, log_cb, &l2, rv, sizeof rv, 0);
    const char *three = EV("ADDED", "a", "1") EV("ADDED", "b", "2") EV("ADDED", "c", "3");
    assert_int_equal(kube_watch_parser_feed(&p, three, strlen(three)), -1);
    assert_int_equal(l2.n, 2);
    assert_int_equal(p.done, 1);
    assert_int_equal(p.failed, 0);
    kube_watch_parser_free(&p);
}

static void test_watch_parser_huge_line(void **state)
{
    size_t big = 1 << 20;
    sbuf_t b = { 0 };
    sbuf_puts(&b,
              "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"big\",\"resourceVersion\":\"7\"},\"pad\":\"");
    char *pad = malloc(big);
    memset(pad, 'x', big);
    sbuf_append(&b, pad, big);
    free(pad);
    sbuf_puts(&b, "\"}}\n");
    ev_log_t l = { 0 };
    char rv[16] = "";
    kube_watch_parser_t p;
    kube_watch_parser_init(&p, log_cb, &l, rv, sizeof rv, 0);
    for (size_t off = 0; off < b.len; off += 1000)
        assert_int_equal(kube_watch_parser_feed(&p, b.data + off, b.len - off < 1000 ? b.len - off : 1000), 0);
    assert_int_equal(l.n, 1);
    assert_true(l.biggest > big);
    assert_string_equal(rv, "7");
    kube_watch_parser_free(&p);

    /* Over the cap: a clean failure, not unbounded memory. */
    ev_log_t l2 = { 0 };
    kube_watch_parser_init(&p, log_cb, &l2, rv, sizeof rv, 4096);
    int rc = 0;
    for (size_t off = 0; off < b.len && rc == 0; off += 1000)
        rc = kube_watch_parser_feed(&p, b.data + off, b.len - off < 1000 ? b.len - off : 1000);
    assert_int_equal(rc, -1);
    assert_int_equal(p.failed, 1);
    assert_non_null(strstr(p.err, "longer than 4096"));
    assert_true(p.cap <= 4096);
    assert_int_equal(l2.n, 0);
    kube_watch_parser_free(&p);
    sbuf_free(&b);
}

static void parse_bad(const char *line, const char *needle, long status)
{
    ev_log_t l = { 0 };
    char rv[16] = "3";
    kube_watch_parser_t p;
    kube_watch_parser_init(&p, log_cb, &l, rv, sizeof rv, 0);
    assert_int_equal(kube_watch_parser_feed(&p, line, strlen(line)), -1);
    assert_int_equal(p.failed, 1);
    if (!strstr(p.err, needle))
        fail_msg("\"%s\" lacks \"%s\"", p.err, needle);
    assert_int_equal(p.status, status);
    assert_string_equal(rv, "3");
    kube_watch_parser_free(&p);
}

static void test_watch_parser_bad_input(void **state)
{
    parse_bad("{not json\n", "bad watch event", 0);
    parse_bad("[1,2]\n", "no type or object", 0);
    parse_bad("{\"type\":7,\"object\":{}}\n", "no type or object", 0);
    parse_bad("{\"type\":\"ADDED\",\"object\":\"str\"}\n", "no type or object", 0);
    parse_bad("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
              "\"message\":\"too old resource version: 1 (50)\"}}\n",
              "too old resource version", 410);
    parse_bad("{\"type\":\"ERROR\",\"object\":{\"code\":500,\"message\":\"etcd down\"}}\n", "etcd down (500)", 500);
    /* An rv that does not fit is ignored rather than truncated. */
    ev_log_t l = { 0 };
    char rv[4] = "1";
    kube_watch_parser_t p;
    kube_watch_parser_init(&p, log_cb, &l, rv, sizeof rv, 0);
    const char *s = EV("ADDED", "a", "123456");
    assert_int_equal(kube_watch_parser_feed(&p, s, strlen(s)), 0);
    assert_string_equal(rv, "1");
    kube_watch_parser_free(&p);
}

/* ======================================================================
 * fake API server
 * ====================================================================== */

#define MAXOBJ  64
#define MAXLOG  256
#define MAXCONN 256

typedef struct fobj {
    char name[32];
    long rv;
    int live;
} fobj_t;
typedef struct fev {
    char type[12];
    char name[32];
    long rv;
} fev_t;

typedef struct srv {
    int lfd, port;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int shutdown;
    pthread_t conns[MAXCONN];
    int fds[MAXCONN];
    int nconns;
    /* the fake resource "pods" in namespace default */
    fobj_t objs[MAXOBJ];
    int nobj;
    long rv, compacted;
    fev_t log[MAXLOG];
    int nlog;
    int kick;    /* bumping it ends open watches */
    int fail404; /* answer 404 to this many LISTs */
    int lists, watches, gone_sent, requests;
    char last_auth[256], last_body[1024], last_method[16];
} srv_t;

typedef struct conn {
    srv_t *s;
    int fd;
    char buf[65536];
    size_t len;
} conn_t;

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) {
            if (w < 0 && errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int respond(int fd, int code, const char *body)
{
    char head[256];
    snprintf(head, sizeof head, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", code,
             strlen(body));
    return send_all(fd, head, strlen(head)) || send_all(fd, body, strlen(body)) ? -1 : 0;
}

static int send_chunk(int fd, const char *data, size_t n)
{
    char h[32];
    snprintf(h, sizeof h, "%zx\r\n", n);
    return send_all(fd, h, strlen(h)) || send_all(fd, data, n) || send_all(fd, "\r\n", 2) ? -1 : 0;
}

static int client_gone(int fd)
{
    char c;
    struct pollfd pf = { .fd = fd, .events = POLLIN };
    if (poll(&pf, 1, 0) <= 0)
        return 0;
    return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static const char *qparam(const char *target, const char *name, char *out, size_t n)
{
    const char *q = strchr(target, '?');
    size_t ln = strlen(name);
    out[0] = '\0';
    while (q) {
        q++;
        if (!strncmp(q, name, ln) && q[ln] == '=') {
            size_t i = 0;
            for (const char *v = q + ln + 1; *v && *v != '&' && i + 1 < n; v++)
                out[i++] = *v;
            out[i] = '\0';
            return out;
        }
        q = strchr(q, '&');
    }
    return NULL;
}

static void obj_json(sbuf_t *b, const char *name, long rv)
{
    sbuf_printf(
        b, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"resourceVersion\":\"%ld\"}}",
        name, rv);
}

static void serve_list(srv_t *s, int fd, const char *target)
{
    char lim[16], cont[32];
    pthread_mutex_lock(&s->mu);
    s->lists++;
    if (s->fail404 > 0) {
        s->fail404--;
        pthread_mutex_unlock(&s->mu);
        respond(fd, 404,
                "{\"kind\":\"Status\",\"message\":\"the server could not find the requested resource\",\"code\":404}");
        return;
    }
    int limit = qparam(target, "limit", lim, sizeof lim) ? atoi(lim) : 0;
    int start = qparam(target, "continue", cont, sizeof cont) ? atoi(cont + 1) : 0;
    if (cont[0] == 'x') {
        pthread_mutex_unlock(&s->mu);
        respond(fd, 410, "{\"kind\":\"Status\",\"message\":\"continue token expired\",\"code\":410}");
        return;
    }
    sbuf_t b = { 0 };
    sbuf_puts(&b, "{\"kind\":\"PodList\",\"items\":[");
    int i = start, emitted = 0;
    for (; i < s->nobj && (limit <= 0 || emitted < limit); i++) {
        if (!s->objs[i].live)
            continue;
        if (emitted++)
            sbuf_puts(&b, ",");
        obj_json(&b, s->objs[i].name, s->objs[i].rv);
    }
    while (i < s->nobj && !s->objs[i].live)
        i++;
    sbuf_printf(&b, "],\"metadata\":{\"resourceVersion\":\"%ld\"", s->rv);
    if (i < s->nobj)
        sbuf_printf(&b, ",\"continue\":\"c%d\"", i);
    sbuf_puts(&b, "}}");
    pthread_mutex_unlock(&s->mu);
    respond(fd, 200, b.data);
    sbuf_free(&b);
}

/* Streams the log after rv until the test kicks watches or the client goes. */
static void serve_watch(srv_t *s, int fd, const char *target)
{
    char rvs[32];
    long from = qparam(target, "resourceVersion", rvs, sizeof rvs) ? atol(rvs) : 0;
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    if (send_all(fd, head, strlen(head)))
        return;
    pthread_mutex_lock(&s->mu);
    s->watches++;
    int kick = s->kick;
    if (from < s->compacted) {
        s->gone_sent++;
        pthread_mutex_unlock(&s->mu);
        const char *e = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
                        "\"message\":\"too old resource version\"}}\n";
        send_chunk(fd, e, strlen(e));
        send_all(fd, "0\r\n\r\n", 5);
        return;
    }
    int next = 0;
    while (!s->shutdown && kick == s->kick) {
        while (next < s->nlog && s->log[next].rv <= from && strcmp(s->log[next].type, "BOOKMARK"))
            next++;
        if (next < s->nlog) {
            fev_t e = s->log[next++];
            if (!strcmp(e.type, "BOOKMARK") && e.rv <= from)
                continue;
            pthread_mutex_unlock(&s->mu);
            sbuf_t b = { 0 };
            sbuf_printf(&b, "{\"type\":\"%s\",\"object\":", e.type);
            obj_json(&b, e.name, e.rv);
            sbuf_puts(&b, "}\n");
            /* Split one event over two chunks: framing is not line-aligned. */
            int bad = send_chunk(fd, b.data, b.len / 2) || send_chunk(fd, b.data + b.len / 2, b.len - b.len / 2);
            sbuf_free(&b);
            pthread_mutex_lock(&s->mu);
            if (bad)
                break;
            continue;
        }
        if (client_gone(fd))
            break;
        struct timespec ts;
        util_deadline(CLOCK_REALTIME, 50, &ts);
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    send_all(fd, "0\r\n\r\n", 5);
}

static void route(srv_t *s, int fd, const char *method, const char *target, const char *auth, const char *body)
{
    pthread_mutex_lock(&s->mu);
    s->requests++;
    snprintf(s->last_auth, sizeof s->last_auth, "%s", auth);
    snprintf(s->last_body, sizeof s->last_body, "%s", body);
    snprintf(s->last_method, sizeof s->last_method, "%s", method);
    pthread_mutex_unlock(&s->mu);
    if (!strncmp(target, "/api/v1/pods", 12) && strstr(target, "watch=1"))
        serve_watch(s, fd, target);
    else if (!strncmp(target, "/api/v1/pods", 12))
        serve_list(s, fd, target);
    else if (!strcmp(target, "/api/v1/namespaces/default/pods/missing"))
        respond(fd, 404,
                "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods \\\"missing\\\" not found\","
                "\"reason\":\"NotFound\",\"code\":404}");
    else if (!strcmp(target, "/secret"))
        strcmp(auth, "Bearer good")
            ? respond(fd, 401, "{\"kind\":\"Status\",\"message\":\"Unauthorized\",\"code\":401}")
            : respond(fd, 200, "{\"ok\":true}");
    else if (!strcmp(target, "/forbidden"))
        respond(fd, 403,
                "{\"kind\":\"Status\",\"message\":\"nodes is forbidden: User \\\"x\\\" cannot list\",\"code\":403}");
    else if (!strcmp(target, "/notjson"))
        respond(fd, 500, "oops\n<html>\x01");
    else if (!strcmp(target, "/badjson"))
        respond(fd, 200, "{\"items\": [");
    else if (!strcmp(target, "/echo"))
        respond(fd, 201, body);
    else if (!strcmp(target, "/api"))
        respond(fd, 200, "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}");
    else if (!strcmp(target, "/apis/policy"))
        respond(
            fd, 200,
            "{\"kind\":\"APIGroup\",\"name\":\"policy\",\"versions\":[{\"groupVersion\":\"policy/v1\",\"version\":\"v1\"}]}");
    else
        respond(fd, 404, "{\"kind\":\"Status\",\"message\":\"not here\",\"code\":404}");
}

/* Reads one request; returns 0 and fills the fields, -1 at EOF. */
static int read_request(conn_t *c, char *method, char *target, char *auth, char *body, size_t bodymax)
{
    char *end;
    while (!(end = memmem(c->buf, c->len, "\r\n\r\n", 4))) {
        if (c->len == sizeof c->buf)
            return -1;
        ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
        if (r <= 0)
            return -1;
        c->len += (size_t)r;
    }
    size_t headlen = (size_t)(end - c->buf) + 4;
    *end = '\0';
    if (sscanf(c->buf, "%15s %1023s", method, target) != 2)
        return -1;
    auth[0] = '\0';
    size_t clen = 0;
    for (char *line = strstr(c->buf, "\r\n"); line; line = strstr(line + 2, "\r\n")) {
        char *h = line + 2;
        if (!strncasecmp(h, "Authorization: ", 15))
            sscanf(h + 15, "%255[^\r]", auth);
        if (!strncasecmp(h, "Content-Length: ", 16))
            clen = (size_t)atol(h + 16);
    }
    memmove(c->buf, c->buf + headlen, c->len - headlen);
    c->len -= headlen;
    while (c->len < clen) {
        ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
        if (r <= 0)
            return -1;
        c->len += (size_t)r;
    }
    size_t n = clen < bodymax - 1 ? clen : bodymax - 1;
    memcpy(body, c->buf, n);
    body[n] = '\0';
    memmove(c->buf, c->buf + clen, c->len - clen);
    c->len -= clen;
    return 0;
}

static void *conn_main(void *p)
{
    conn_t *c = p;
    char method[16], target[1024], auth[256], body[1024];
    while (read_request(c, method, target, auth, body, sizeof body) == 0) {
        route(c->s, c->fd, method, target, auth, body);
        if (strstr(target, "watch=1"))
            break; /* a finished watch closes its connection */
    }
    shutdown(c->fd, SHUT_RDWR);
    free(c);
    return NULL;
}

static void *accept_main(void *p)
{
    srv_t *s = p;
    for (;;) {
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) {
            pthread_mutex_lock(&s->mu);
            int done = s->shutdown;
            pthread_mutex_unlock(&s->mu);
            if (done || errno != EINTR)
                return NULL;
            continue;
        }
        int one = 1; /* head and body go in separate sends */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn_t *c = calloc(1, sizeof *c);
        c->s = s;
        c->fd = fd;
        pthread_mutex_lock(&s->mu);
        if (s->nconns < MAXCONN && !s->shutdown) {
            s->fds[s->nconns] = fd;
            pthread_create(&s->conns[s->nconns++], NULL, conn_main, c);
        } else {
            close(fd);
            free(c);
        }
        pthread_mutex_unlock(&s->mu);
    }
}

static srv_t *srv_start(void)
{
    srv_t *s = calloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 64), 0);
    socklen_t len = sizeof a;
    getsockname(s->lfd, (struct sockaddr *)&a, &len);
    s->port = ntohs(a.sin_port);
    s->rv = 100;
    pthread_create(&s->th, NULL, accept_main, s);
    return s;
}

static void srv_stop(srv_t *s)
{
    pthread_mutex_lock(&s->mu);
    s->shutdown = 1;
    pthread_cond_broadcast(&s->cv);
    for (int i = 0; i < s->nconns; i++)
        shutdown(s->fds[i], SHUT_RDWR);
    pthread_mutex_unlock(&s->mu);
    shutdown(s->lfd, SHUT_RDWR);
    pthread_join(s->th, NULL);
    for (int i = 0; i < s->nconns; i++) {
        pthread_join(s->conns[i], NULL);
        close(s->fds[i]);
    }
    close(s->lfd);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Changes the fake resource; logged=0 hides the change from watches, as if
 * it happened while the watcher was away. */
static void srv_op(srv_t *s, const char *type, const char *name, int logged)
{
    pthread_mutex_lock(&s->mu);
    long rv = strcmp(type, "BOOKMARK") ? ++s->rv : s->rv;
    int i = 0;
    while (i < s->nobj && strcmp(s->objs[i].name, name))
        i++;
    if (strcmp(type, "BOOKMARK")) {
        if (i == s->nobj)
            snprintf(s->objs[s->nobj++].name, sizeof s->objs[0].name, "%s", name);
        s->objs[i].rv = rv;
        s->objs[i].live = strcmp(type, "DELETED") != 0;
    }
    if (logged && s->nlog < MAXLOG) {
        fev_t *e = &s->log[s->nlog++];
        snprintf(e->type, sizeof e->type, "%s", type);
        snprintf(e->name, sizeof e->name, "%s", name);
        e->rv = rv;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Forgets history (etcd compaction) and drops open watches. */
static void srv_compact(srv_t *s)
{
    pthread_mutex_lock(&s->mu);
    s->compacted = s->rv;
    s->kick++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static int srv_get(srv_t *s, int *field)
{
    pthread_mutex_lock(&s->mu);
    int v = *field;
    pthread_mutex_unlock(&s->mu);
    return v;
}

/* A copy of one of the last_* fields, taken under the server's lock. */
static const char *srv_str(srv_t *s, const char *field)
{
    static char out[1024];
    pthread_mutex_lock(&s->mu);
    snprintf(out, sizeof out, "%s", field);
    pthread_mutex_unlock(&s->mu);
    return out;
}

static void srv_set(srv_t *s, int *field, int v)
{
    pthread_mutex_lock(&s->mu);
    *field = v;
    pthread_mutex_unlock(&s->mu);
}

static kube_client_t *client_for(srv_t *s, const char *token, const char *token_file)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s->port);
    kube_config_t cfg = { .server = url, .token = (char *)token, .token_file = (char *)token_file };
    kube_client_opts_t o = { .timeout_s = 5 };
    char err[256];
    kube_client_t *c = kube_client_new(&cfg, &o, err, sizeof err);
    assert_non_null(c);
    return c;
}

/* ======================================================================
 * client tests
 * ====================================================================== */

static void test_client_errors(void **state)
{
    srv_t *s = srv_start();
    kube_client_t *c = client_for(s, "bad", NULL);
    char err[256];
    long st = 0;
    json_t *j = NULL;

    assert_int_equal(kube_get_json(c, "/api/v1/namespaces/default/pods/missing", &j, &st, err, sizeof err), -1);
    assert_int_equal(st, 404);
    assert_string_equal(err, "pods \"missing\" not found (404)");
    assert_null(j);

    assert_int_equal(kube_get_json(c, "/secret", &j, &st, err, sizeof err), -1);
    assert_int_equal(st, 401);
    assert_non_null(strstr(err, "unauthorized (401): check the token/client certificate"));
    assert_string_equal(srv_str(s, s->last_auth), "Bearer bad");

    assert_int_equal(kube_get_json(c, "/forbidden", &j, &st, err, sizeof err), -1);
    assert_int_equal(st, 403);
    assert_string_equal(err, "forbidden (403): nodes is forbidden: User \"x\" cannot list");

    assert_int_equal(kube_get_json(c, "/notjson", &j, &st, err, sizeof err), -1);
    assert_int_equal(st, 500);
    assert_null(strchr(err, '\n'));
    assert_null(strchr(err, '\x01'));
    assert_non_null(strstr(err, "(500)"));

    assert_int_equal(kube_get_json(c, "/badjson", &j, &st, err, sizeof err), -1);
    assert_int_equal(st, 200);
    assert_non_null(strstr(err, "bad JSON"));

    /* kube_request itself reports any HTTP answer as success. */
    kube_response_t r;
    assert_int_equal(kube_request(c, "GET", "/forbidden", NULL, NULL, &r, err, sizeof err), 0);
    assert_int_equal(r.status, 403);
    assert_non_null(strstr(r.body, "forbidden"));
    kube_response_free(&r);
    assert_int_equal(kube_request(c, "BREW", "/x", NULL, NULL, &r, err, sizeof err), -1);

    kube_client_stats_t stats;
    kube_client_get_stats(c, &stats);
    assert_int_equal(stats.requests, 6);
    assert_int_equal(stats.errors, 1); /* the 500 */
    assert_true(stats.latency_sum_s > 0);
    kube_client_free(c);
    srv_stop(s);

    /* Nobody listening: a transport error naming the request. */
    kube_config_t cfg = { .server = "http://127.0.0.1:1" };
    c = kube_client_new(&cfg, NULL, err, sizeof err);
    assert_int_equal(kube_get_json(c, "/api", &j, &st, err, sizeof err), -1);
    assert_int_equal(st, 0);
    assert_non_null(strstr(err, "GET /api: "));
    kube_client_free(c);

    kube_config_t bad = { .server = "ftp://x" };
    assert_null(kube_client_new(&bad, NULL, err, sizeof err));
    assert_non_null(strstr(err, "ftp://x"));
}

static void test_send_json(void **state)
{
    srv_t *s = srv_start();
    kube_client_t *c = client_for(s, "good", NULL);
    char err[256];
    long st = 0;
    json_t *body = json_pack("{s:s, s:{s:s}}", "kind", "Binding", "target", "name", "n1");
    json_t *out = NULL;
    assert_int_equal(kube_send_json(c, "POST", "/echo", NULL, body, &out, &st, err, sizeof err), 0);
    assert_int_equal(st, 201);
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "target"), "name")), "n1");
    assert_string_equal(srv_str(s, s->last_method), "POST");
    json_decref(out);
    assert_int_equal(
        kube_send_json(c, "PATCH", "/echo", "application/merge-patch+json", body, NULL, &st, err, sizeof err), 0);
    assert_string_equal(srv_str(s, s->last_method), "PATCH");
    assert_non_null(strstr(srv_str(s, s->last_body), "\"Binding\""));
    json_decref(body);
    kube_client_free(c);
    srv_stop(s);
}

static int count_item(json_t *item, void *ud)
{
    sbuf_t *names = ud;
    sbuf_printf(names, "%s,", json_string_value(json_object_get(json_object_get(item, "metadata"), "name")));
    return 0;
}

static void test_list_pagination_and_reuse(void **state)
{
    srv_t *s = srv_start();
    const char *names[] = { "a", "b", "c", "d", "e", "f", "g" };
    for (int i = 0; i < 7; i++)
        srv_op(s, "ADDED", names[i], 1);
    srv_op(s, "DELETED", "d", 1);
    kube_client_t *c = client_for(s, "good", NULL);
    char err[256], rv[32];
    long st = 0;
    sbuf_t got = { 0 };
    assert_int_equal(kube_list(c, "/api/v1/pods", 2, count_item, &got, rv, sizeof rv, &st, err, sizeof err), 0);
    assert_string_equal(got.data, "a,b,c,e,f,g,");
    assert_string_equal(rv, "108");
    assert_int_equal(srv_get(s, &s->lists), 3);
    /* Keep-alive: every page went over one connection. */
    assert_int_equal(srv_get(s, &s->nconns), 1);
    sbuf_free(&got);

    /* An expired continue token gives 410 so the caller relists. */
    assert_int_equal(kube_list(c, "/api/v1/pods?continue=xx", 2, count_item, &got, rv, sizeof rv, &st, err, sizeof err),
                     -1);
    assert_int_equal(st, 410);
    sbuf_free(&got);
    kube_client_free(c);
    srv_stop(s);
}

typedef struct watch_arg {
    kube_client_t *c;
    char rv[32];
    volatile int stop;
    long status;
    int rc;
    ev_log_t log;
    char err[256];
} watch_arg_t;

static int watch_log_cb(const char *type, json_t *obj, void *ud)
{
    return log_cb(type, obj, ud);
}

static void *watch_thread(void *p)
{
    watch_arg_t *w = p;
    w->rc = kube_watch(w->c, "/api/v1/pods", w->rv, sizeof w->rv, 30, watch_log_cb, &w->log, &w->stop, &w->status,
                       w->err, sizeof w->err);
    return NULL;
}

static void test_watch_stream_and_stop(void **state)
{
    srv_t *s = srv_start();
    srv_op(s, "ADDED", "a", 1);    /* rv 101: before our watch */
    srv_op(s, "ADDED", "b", 1);    /* 102 */
    srv_op(s, "MODIFIED", "b", 1); /* 103 */
    watch_arg_t w = { .c = client_for(s, "good", NULL), .rv = "101" };
    pthread_t th;
    pthread_create(&th, NULL, watch_thread, &w);
    srv_op(s, "DELETED", "a", 1); /* 104, while streaming */
    srv_op(s, "BOOKMARK", "", 1);
    for (int i = 0; i < 200 && srv_get(s, &s->watches) == 0; i++)
        util_sleep_ms(10);
    util_sleep_ms(300);
    /* stop is noticed on an idle stream within about a second */
    int64_t t0 = util_now_ms();
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
    pthread_join(th, NULL);
    assert_true(util_now_ms() - t0 < 2000);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.log.n, 4);
    assert_string_equal(w.log.seen[0], "ADDED b");
    assert_string_equal(w.log.seen[1], "MODIFIED b");
    assert_string_equal(w.log.seen[2], "DELETED a");
    assert_string_equal(w.log.seen[3], "BOOKMARK ");
    assert_string_equal(w.rv, "104");
    assert_non_null(strstr(srv_str(s, s->last_auth), "Bearer good"));
    kube_client_free(w.c);
    srv_stop(s);
}

static void test_watch_gone(void **state)
{
    srv_t *s = srv_start();
    srv_op(s, "ADDED", "a", 1);
    srv_compact(s);
    watch_arg_t w = { .c = client_for(s, NULL, NULL), .rv = "50" };
    watch_thread(&w);
    assert_int_equal(w.rc, -1);
    assert_int_equal(w.status, 410);
    assert_non_null(strstr(w.err, "too old"));
    assert_string_equal(w.rv, "50");

    /* A non-2xx answer to the watch request itself is decoded too. */
    w.rc = kube_watch(w.c, "/api/v1/namespaces/default/pods/missing", w.rv, sizeof w.rv, 5, watch_log_cb, &w.log, NULL,
                      &w.status, w.err, sizeof w.err);
    assert_int_equal(w.rc, -1);
    assert_int_equal(w.status, 404);
    assert_string_equal(w.err, "not here (404)");
    kube_client_free(w.c);
    srv_stop(s);
}

static void test_has_api(void **state)
{
    srv_t *s = srv_start();
    kube_client_t *c = client_for(s, NULL, NULL);
    assert_int_equal(kube_has_api(c, "policy/v1"), 1);
    assert_int_equal(kube_has_api(c, "policy/v1beta1"), 0);
    assert_int_equal(kube_has_api(c, "v1"), 1);
    assert_int_equal(kube_has_api(c, "resource.aibee.cn/v1alpha1"), 0);
    int before = srv_get(s, &s->requests);
    assert_int_equal(kube_has_api(c, "policy/v1"), 1); /* cached */
    assert_int_equal(kube_has_api(c, "resource.aibee.cn/v1alpha1"), 0);
    assert_int_equal(srv_get(s, &s->requests), before);
    kube_client_free(c);
    srv_stop(s);
}

static void test_token_file_rotation(void **state)
{
    srv_t *s = srv_start();
    char path[256];
    tmp_template(path, sizeof path, "kubetok");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "first\n", 6), 6);
    close(fd);
    kube_client_t *c = client_for(s, NULL, path);
    kube_response_t r;
    char err[256];
    assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, &r, err, sizeof err), 0);
    kube_response_free(&r);
    assert_string_equal(srv_str(s, s->last_auth), "Bearer first");
    FILE *f = fopen(path, "w");
    fputs("second-longer", f);
    fclose(f);
    util_sleep_ms(1100); /* rechecked at most once a second */
    assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, &r, err, sizeof err), 0);
    kube_response_free(&r);
    assert_string_equal(srv_str(s, s->last_auth), "Bearer second-longer");
    unlink(path);
    kube_client_free(c);
    srv_stop(s);
}

static void *hammer(void *p)
{
    kube_client_t *c = p;
    for (int i = 0; i < 10; i++) {
        json_t *j = NULL;
        char err[256];
        long st;
        assert_int_equal(kube_get_json(c, "/api", &j, &st, err, sizeof err), 0);
        json_decref(j);
    }
    return NULL;
}

/* Threads share a client: a request takes a pooled handle, so there are
 * never more connections than requests at once (4 here), and every handle
 * is cleaned up with the client. */
static void test_threads_share_client(void **state)
{
    srv_t *s = srv_start();
    kube_client_t *c = client_for(s, NULL, NULL);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, hammer, c);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    hammer(c);
    for (int i = 2; i < 4; i++)
        pthread_join(th[i], NULL);
    int conns = srv_get(s, &s->nconns);
    assert_true(conns >= 1 && conns <= 4);
    kube_client_stats_t st;
    kube_client_get_stats(c, &st);
    assert_int_equal(st.requests, 50);
    kube_client_free(c);
    srv_stop(s);
}

typedef struct user {
    kube_client_t *c;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int used, go;
} user_t;

static void *use_then_wait(void *p)
{
    user_t *u = p;
    json_t *j = NULL;
    char err[256];
    long st;
    assert_int_equal(kube_get_json(u->c, "/api", &j, &st, err, sizeof err), 0);
    json_decref(j);
    pthread_mutex_lock(&u->mu);
    u->used = 1;
    pthread_cond_broadcast(&u->cv);
    while (!u->go)
        pthread_cond_wait(&u->cv, &u->mu);
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

/* A client freed by one thread while another that used it lives on (the
 * dispatch controller's member clients, replaced when their Secret
 * changes): nothing of it is left behind (the ASan run checks leaks). */
static void test_free_while_users_live(void **state)
{
    srv_t *s = srv_start();
    user_t u = { .c = client_for(s, NULL, NULL), .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
    pthread_t th;
    pthread_create(&th, NULL, use_then_wait, &u);
    pthread_mutex_lock(&u.mu);
    while (!u.used)
        pthread_cond_wait(&u.cv, &u.mu);
    pthread_mutex_unlock(&u.mu);
    kube_client_free(u.c);
    pthread_mutex_lock(&u.mu);
    u.go = 1;
    pthread_cond_broadcast(&u.cv);
    pthread_mutex_unlock(&u.mu);
    pthread_join(th, NULL);
    srv_stop(s);
}

static void test_rate_limited_client(void **state)
{
    srv_t *s = srv_start();
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s->port);
    kube_config_t cfg = { .server = url };
    kube_client_opts_t o = { .qps = 20, .burst = 2 };
    char err[256];
    kube_client_t *c = kube_client_new(&cfg, &o, err, sizeof err);
    int64_t t0 = util_now_ms();
    hammer(c); /* 10 requests: 2 free, 8 at 20/s */
    assert_true(util_now_ms() - t0 >= 380);
    kube_client_stats_t st;
    kube_client_get_stats(c, &st);
    /* Slow requests (sanitizers) refill tokens meanwhile, so only a floor. */
    if (st.throttled_ms < 100)
        fail_msg("throttled_ms %lu", st.throttled_ms);
    kube_client_free(c);
    srv_stop(s);
}

/* ======================================================================
 * informer
 * ====================================================================== */

typedef struct inf_log {
    pthread_mutex_t mu;
    char ev[128][48];
    int n, with_obj[128];
    informer_t *inf;              /* set: delivered[] records informer_delivered */
    unsigned long delivered[128]; /* during each handler call */
} inf_log_t;

static void inf_handler(void *ud, kube_event_type_t t, const char *key, json_t *obj)
{
    inf_log_t *l = ud;
    static const char *names[] = { "ADDED", "MODIFIED", "DELETED" };
    pthread_mutex_lock(&l->mu);
    if (l->n < 128) {
        snprintf(l->ev[l->n], sizeof l->ev[0], "%s %s", names[t], key);
        l->with_obj[l->n] = obj != NULL;
        l->delivered[l->n] = l->inf ? informer_delivered(l->inf) : 0;
        l->n++;
    }
    pthread_mutex_unlock(&l->mu);
}

static int inf_wait(inf_log_t *l, int n)
{
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&l->mu);
        int got = l->n;
        pthread_mutex_unlock(&l->mu);
        if (got >= n)
            return got;
        util_sleep_ms(10);
    }
    return l->n;
}

/* Order within one list is the server's; compare as a set. */
static int inf_has(inf_log_t *l, int from, int to, const char *ev)
{
    for (int i = from; i < to; i++)
        if (!strcmp(l->ev[i], ev))
            return 1;
    return 0;
}

static void test_informer_relist_synthesizes_deletes(void **state)
{
    srv_t *s = srv_start();
    srv_op(s, "ADDED", "a", 1);
    srv_op(s, "ADDED", "b", 1);
    srv_op(s, "ADDED", "c", 1);
    kube_client_t *c = client_for(s, NULL, NULL);
    inf_log_t l = { .n = 0 };
    pthread_mutex_init(&l.mu, NULL);
    informer_t *inf = informer_new(c, "/api/v1/pods", NULL, inf_handler, &l);
    l.inf = inf;
    /* A second user of the same objects shares the LIST and WATCH. */
    inf_log_t l2 = { .n = 0 };
    pthread_mutex_init(&l2.mu, NULL);
    l2.inf = inf;
    assert_int_equal(informer_add_handler(inf, inf_handler, &l2), 0);
    assert_string_equal(informer_path(inf), "/api/v1/pods");
    assert_int_equal(informer_delivered(NULL), 0);
    assert_int_equal(informer_delivered(inf), 0);
    assert_int_equal(informer_has_synced(inf), 0);
    assert_int_equal(informer_start(inf), 0);
    assert_int_equal(informer_add_handler(inf, inf_handler, &l2), -1); /* started: too late */
    assert_int_equal(informer_wait_synced(inf, 5000), 1);
    assert_int_equal(inf_wait(&l, 3), 3);
    assert_true(inf_has(&l, 0, 3, "ADDED default/a"));
    assert_true(inf_has(&l, 0, 3, "ADDED default/c"));

    /* Live watch events. */
    srv_op(s, "MODIFIED", "a", 1);
    srv_op(s, "ADDED", "d", 1);
    srv_op(s, "DELETED", "c", 1);
    assert_int_equal(inf_wait(&l, 6), 6);
    assert_string_equal(l.ev[3], "MODIFIED default/a");
    assert_string_equal(l.ev[4], "ADDED default/d");
    assert_string_equal(l.ev[5], "DELETED default/c");
    assert_int_equal(l.with_obj[5], 1);

    /* Meanwhile, unseen by the watch: b deleted, e added, d modified;
     * then history is compacted so the informer must relist. */
    srv_op(s, "DELETED", "b", 0);
    srv_op(s, "ADDED", "e", 0);
    srv_op(s, "MODIFIED", "d", 0);
    srv_compact(s);
    assert_int_equal(inf_wait(&l, 9), 9);
    util_sleep_ms(200);
    assert_int_equal(l.n, 9); /* a is unchanged: no event */
    assert_true(inf_has(&l, 6, 9, "DELETED default/b"));
    assert_true(inf_has(&l, 6, 9, "ADDED default/e"));
    assert_true(inf_has(&l, 6, 9, "MODIFIED default/d"));
    for (int i = 6; i < 9; i++)
        if (!strncmp(l.ev[i], "DELETED", 7))
            assert_int_equal(l.with_obj[i], 0);
    assert_true(srv_get(s, &s->gone_sent) >= 1);
    assert_int_equal(srv_get(s, &s->lists), 2);

    /* And it keeps watching after the relist. */
    srv_op(s, "ADDED", "f", 1);
    assert_int_equal(inf_wait(&l, 10), 10);
    assert_string_equal(l.ev[9], "ADDED default/f");

    int64_t t0 = util_now_ms();
    informer_stop(inf);
    assert_true(util_now_ms() - t0 < 2500);
    /* every event counted, each once its handler returned (relist deletes too) */
    assert_int_equal(informer_delivered(inf), 10);
    for (int i = 0; i < 10; i++)
        assert_int_equal(l.delivered[i], (unsigned long)i);
    /* the second handler saw every event, in the same order, after the first */
    assert_int_equal(l2.n, 10);
    for (int i = 0; i < 10; i++) {
        assert_string_equal(l2.ev[i], l.ev[i]);
        assert_int_equal(l2.delivered[i], (unsigned long)i);
    }
    informer_free(inf);
    kube_client_free(c);
    srv_stop(s);
    pthread_mutex_destroy(&l.mu);
    pthread_mutex_destroy(&l2.mu);
}

static void test_informer_waits_for_crd(void **state)
{
    srv_t *s = srv_start();
    srv_set(s, &s->fail404, 2); /* e.g. the CRD is applied a moment later */
    srv_op(s, "ADDED", "p1", 1);
    kube_client_t *c = client_for(s, NULL, NULL);
    inf_log_t l = { .n = 0 };
    pthread_mutex_init(&l.mu, NULL);
    informer_t *inf = informer_new(c, "/api/v1/pods", "spec.nodeName=", inf_handler, &l);
    informer_start(inf);
    assert_int_equal(informer_wait_synced(inf, 200), 0);
    assert_int_equal(informer_wait_synced(inf, 5000), 1); /* 0.5 s + 1 s of backoff */
    assert_int_equal(srv_get(s, &s->lists), 3);
    assert_int_equal(inf_wait(&l, 1), 1);
    assert_string_equal(l.ev[0], "ADDED default/p1");
    informer_stop(inf);
    informer_free(inf);

    /* Stop interrupts a backoff sleep promptly. */
    srv_set(s, &s->fail404, 1000);
    inf = informer_new(c, "/api/v1/pods", NULL, inf_handler, &l);
    informer_start(inf);
    util_sleep_ms(800);
    int64_t t0 = util_now_ms();
    informer_stop(inf);
    assert_true(util_now_ms() - t0 < 500);
    informer_free(inf);
    kube_client_free(c);
    srv_stop(s);
    pthread_mutex_destroy(&l.mu);
}

/* Pod paths encode namespace and name: a name the API server would refuse
 * still cannot reach another path. */
static void test_pod_path(void **state)
{
    (void)state;
    char *p = kube_pod_path("team-a", "web-1", "binding");
    assert_string_equal(p, "/api/v1/namespaces/team-a/pods/web-1/binding");
    free(p);
    p = kube_pod_path("ns", "a/b?c", NULL);
    assert_string_equal(p, "/api/v1/namespaces/ns/pods/a%2Fb%3Fc");
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_path),
        cmocka_unit_test(test_ratelimit_math),
        cmocka_unit_test(test_ratelimit_threads),
        cmocka_unit_test(test_watch_parser_split),
        cmocka_unit_test(test_watch_parser_last_line_and_stop),
        cmocka_unit_test(test_watch_parser_huge_line),
        cmocka_unit_test(test_watch_parser_bad_input),
        cmocka_unit_test(test_client_errors),
        cmocka_unit_test(test_send_json),
        cmocka_unit_test(test_list_pagination_and_reuse),
        cmocka_unit_test(test_watch_stream_and_stop),
        cmocka_unit_test(test_watch_gone),
        cmocka_unit_test(test_has_api),
        cmocka_unit_test(test_token_file_rotation),
        cmocka_unit_test(test_threads_share_client),
        cmocka_unit_test(test_free_while_users_live),
        cmocka_unit_test(test_rate_limited_client),
        cmocka_unit_test(test_informer_relist_synthesizes_deletes),
        cmocka_unit_test(test_informer_waits_for_crd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
