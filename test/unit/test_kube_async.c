/* test_kube_async.c -- kube_async against a fake API server (libmicrohttpd,
 * HTTP/1.1): every request answered once with its own status and body, at
 * most max_inflight on the wire, the client's rate limit kept (and the
 * owner's count of requests not on the wire right), transport
 * errors reported, and kube_async_free completing what was submitted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_api.h"
#include "kube/async.h"
#include "util/util.h"

#define N 200

static struct {
    pthread_mutex_t mu;
    int seen, inflight, max_inflight, delay_ms;
} srv = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0 };

/* POST /r/<i> with body "b<i>": 201 for an even i, 409 for an odd one,
 * answer body "<i>"; anything else 400. */
static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *data, size_t *size, void **con_cls)
{
    sbuf_t *body = *con_cls;
    if (!body) {
        *con_cls = util_xcalloc(1, sizeof(sbuf_t));
        return MHD_YES;
    }
    if (*size) {
        sbuf_append(body, data, *size);
        *size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&srv.mu);
    srv.seen++;
    if (++srv.inflight > srv.max_inflight)
        srv.max_inflight = srv.inflight;
    int delay = srv.delay_ms;
    pthread_mutex_unlock(&srv.mu);
    util_sleep_ms(delay);
    int i = atoi(url + 3);
    char want[32], text[32];
    snprintf(want, sizeof want, "b%d", i);
    unsigned code = strcmp(method, "POST") || !body->data || strcmp(body->data, want) ? 400 : i % 2 ? 409 : 201;
    snprintf(text, sizeof text, "%d", i);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_COPY);
    pthread_mutex_lock(&srv.mu);
    srv.inflight--;
    pthread_mutex_unlock(&srv.mu);
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    sbuf_t *b = *con_cls;
    if (b) {
        sbuf_free(b);
        free(b);
    }
}

typedef struct result {
    pthread_mutex_t mu;
    int calls[N];
    long status[N];
    int body_ok[N];
    int errors;
} result_t;

typedef struct ticket {
    result_t *res;
    int i;
} ticket_t;

static void on_done(void *ud, const kube_response_t *resp, const char *err)
{
    ticket_t *t = ud;
    char want[32];
    snprintf(want, sizeof want, "%d", t->i);
    pthread_mutex_lock(&t->res->mu);
    t->res->calls[t->i]++;
    t->res->status[t->i] = resp->status;
    t->res->body_ok[t->i] = !strcmp(resp->body, want);
    if (err)
        t->res->errors++;
    pthread_mutex_unlock(&t->res->mu);
    free(t);
}

static struct MHD_Daemon *start_server(int *port)
{
    struct MHD_Daemon *d = fake_api_start(handler, completed, port);
    assert_non_null(d);
    return d;
}

static kube_client_t *client(int port, double qps, int burst)
{
    kube_client_t *c = fake_api_client(port, qps, burst, "test_kube_async");
    assert_non_null(c);
    return c;
}

static void submit(kube_async_t *a, result_t *res, int i)
{
    char path[32], body[32];
    snprintf(path, sizeof path, "/r/%d", i);
    snprintf(body, sizeof body, "b%d", i);
    ticket_t *t = util_xcalloc(1, sizeof *t);
    t->res = res;
    t->i = i;
    kube_async_submit(a, "POST", path, "text/plain", util_strdup(body), on_done, t);
}

/* Every request answered exactly once, with its own answer; the free
 * waits for all of them; never more than max_inflight at the server. */
static void test_all_answered_once(void **st)
{
    int port;
    struct MHD_Daemon *d = start_server(&port);
    pthread_mutex_lock(&srv.mu);
    srv.seen = srv.max_inflight = 0;
    srv.delay_ms = 2;
    pthread_mutex_unlock(&srv.mu);
    kube_client_t *c = client(port, 0, 0);
    char err[256];
    kube_async_t *a = kube_async_new(c, 8, NULL, err, sizeof err);
    assert_non_null(a);
    static result_t res = { .mu = PTHREAD_MUTEX_INITIALIZER };
    for (int i = 0; i < N; i++)
        submit(a, &res, i);
    kube_async_free(a);
    for (int i = 0; i < N; i++) {
        assert_int_equal(res.calls[i], 1);
        assert_int_equal(res.status[i], i % 2 ? 409 : 201);
        assert_true(res.body_ok[i]);
    }
    assert_int_equal(res.errors, 0);
    pthread_mutex_lock(&srv.mu);
    assert_int_equal(srv.seen, N);
    assert_true(srv.max_inflight >= 1 && srv.max_inflight <= 8);
    pthread_mutex_unlock(&srv.mu);
    kube_client_stats_t cs;
    kube_client_get_stats(c, &cs);
    assert_int_equal(cs.requests, N);
    kube_client_free(c);
    MHD_stop_daemon(d);
}

/* qps 50, burst 1: 20 requests need at least 19 intervals of 20 ms. */
static void test_rate_limit_kept(void **st)
{
    int port;
    struct MHD_Daemon *d = start_server(&port);
    pthread_mutex_lock(&srv.mu);
    srv.delay_ms = 0;
    pthread_mutex_unlock(&srv.mu);
    kube_client_t *c = client(port, 50, 1);
    char err[256];
    int waiting = 0;
    kube_async_t *a = kube_async_new(c, 16, &waiting, err, sizeof err);
    static result_t res = { .mu = PTHREAD_MUTEX_INITIALIZER };
    int64_t t0 = util_now_ms();
    for (int i = 0; i < 20; i++)
        submit(a, &res, i);
    /* The limiter lets one go at once and the next 20 ms later. */
    assert_true(__atomic_load_n(&waiting, __ATOMIC_RELAXED) >= 10);
    kube_async_free(a);
    assert_int_equal(waiting, 0);
    int64_t took = util_now_ms() - t0;
    assert_true(took >= 19 * 20 - 5);
    for (int i = 0; i < 20; i++)
        assert_int_equal(res.calls[i], 1);
    kube_client_stats_t cs;
    kube_client_get_stats(c, &cs);
    assert_true(cs.throttled_ms > 0);
    kube_client_free(c);
    MHD_stop_daemon(d);
}

/* wait_below returns when the answers bring pending under n, or at its
 * timeout with what is still pending (qps 50: 10 requests take 180 ms). */
static void test_wait_below(void **st)
{
    int port;
    struct MHD_Daemon *d = start_server(&port);
    pthread_mutex_lock(&srv.mu);
    srv.delay_ms = 0;
    pthread_mutex_unlock(&srv.mu);
    kube_client_t *c = client(port, 50, 1);
    char err[256];
    kube_async_t *a = kube_async_new(c, 4, NULL, err, sizeof err);
    static result_t res = { .mu = PTHREAD_MUTEX_INITIALIZER };
    for (int i = 0; i < 10; i++)
        submit(a, &res, i);
    int64_t t0 = util_now_ms();
    assert_true(kube_async_wait_below(a, 1, 20) > 0);
    assert_true(util_now_ms() - t0 >= 15);
    assert_true(kube_async_wait_below(a, 5, 5000) < 5);
    assert_int_equal(kube_async_wait_below(a, 1, 5000), 0);
    pthread_mutex_lock(&res.mu);
    for (int i = 0; i < 10; i++)
        assert_int_equal(res.calls[i], 1);
    pthread_mutex_unlock(&res.mu);
    kube_async_free(a);
    kube_client_free(c);
    MHD_stop_daemon(d);
}

/* Nobody listens: each request gets status 0 and a message, once. */
static void test_transport_error(void **st)
{
    int port;
    struct MHD_Daemon *d = start_server(&port);
    MHD_stop_daemon(d); /* the port is free now */
    kube_client_t *c = client(port, 0, 0);
    char err[256];
    kube_async_t *a = kube_async_new(c, 4, NULL, err, sizeof err);
    static result_t res = { .mu = PTHREAD_MUTEX_INITIALIZER };
    for (int i = 0; i < 10; i++)
        submit(a, &res, i);
    kube_async_free(a);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(res.calls[i], 1);
        assert_int_equal(res.status[i], 0);
    }
    assert_int_equal(res.errors, 10);
    kube_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_answered_once),
        cmocka_unit_test(test_rate_limit_kept),
        cmocka_unit_test(test_wait_below),
        cmocka_unit_test(test_transport_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
