/* test_metrics.c -- the Prometheus registry and the HTTP endpoint. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <curl/curl.h>

#include "server/metrics.h"
#include "server/http.h"

static void test_counter_gauge_render(void **st)
{
    metrics_t *r = metrics_new();
    metric_t *c = metrics_counter(r, "ai_scheduler_attempts_total", "Scheduling attempts.\nBy result \\ pool.");
    metric_t *g = metrics_gauge(r, "ai_scheduler_pending_pods", "Pending pods.");
    assert_non_null(c);
    assert_non_null(g);
    metric_inc(c, "result=\"scheduled\",pool=\"gpu\"");
    metric_inc(c, "result=\"scheduled\",pool=\"gpu\"");
    metric_add(c, "result=\"error\"", 3);
    metric_add(c, "result=\"error\"", -10); /* counters never go down */
    metric_set(g, NULL, 7);
    metric_set(g, "", 5);         /* NULL and "" are the same series */
    metric_observe(g, NULL, 100); /* wrong kind: ignored */
    metric_inc(NULL, "x");        /* unregistered: no-op */
    assert_true(metric_value(c, "result=\"scheduled\",pool=\"gpu\"") == 2);
    assert_true(metric_value(c, "result=\"error\"") == 3);
    assert_true(metric_value(c, "result=\"none\"") == 0);
    assert_true(metric_value(g, NULL) == 5);

    char *t = metrics_render(r);
    assert_string_equal(t, "# HELP ai_scheduler_attempts_total Scheduling attempts.\\nBy result \\\\ pool.\n"
                           "# TYPE ai_scheduler_attempts_total counter\n"
                           "ai_scheduler_attempts_total{result=\"scheduled\",pool=\"gpu\"} 2\n"
                           "ai_scheduler_attempts_total{result=\"error\"} 3\n"
                           "# HELP ai_scheduler_pending_pods Pending pods.\n"
                           "# TYPE ai_scheduler_pending_pods gauge\n"
                           "ai_scheduler_pending_pods 5\n");
    free(t);

    metric_remove(c, "result=\"error\"");
    metric_set(g, NULL, 0.1);
    t = metrics_render(r);
    assert_null(strstr(t, "result=\"error\""));
    assert_non_null(strstr(t, "ai_scheduler_pending_pods 0.1\n"));
    free(t);
    metric_clear(c);
    assert_true(metric_value(c, "result=\"scheduled\",pool=\"gpu\"") == 0);
    metrics_free(r);
}

static void test_registration(void **st)
{
    metrics_t *r = metrics_new();
    static const double b[] = { 0.1, 1 }, b2[] = { 0.1, 2 }, bad[] = { 1, 1 };
    metric_t *c = metrics_counter(r, "a_total", "x");
    assert_ptr_equal(metrics_counter(r, "a_total", "other help"), c);
    assert_null(metrics_gauge(r, "a_total", "x"));
    assert_null(metrics_counter(r, "9bad", "x"));
    assert_null(metrics_counter(r, "bad-name", "x"));
    assert_null(metrics_counter(r, "", "x"));
    assert_null(metrics_counter(r, NULL, "x"));
    metric_t *h = metrics_histogram(r, "lat_seconds", "x", b, 2);
    assert_non_null(h);
    assert_ptr_equal(metrics_histogram(r, "lat_seconds", "x", b, 2), h);
    assert_null(metrics_histogram(r, "lat_seconds", "x", b2, 2));
    assert_null(metrics_histogram(r, "h2", "x", bad, 2));
    assert_null(metrics_histogram(r, "h3", "x", b, 0));
    assert_non_null(metrics_gauge(r, "ns:ok_name_1", NULL));
    metrics_free(r);
}

static void test_histogram(void **st)
{
    metrics_t *r = metrics_new();
    static const double b[] = { 0.005, 0.1, 1 };
    metric_t *h = metrics_histogram(r, "ai_scheduler_e2e_seconds", "E2E latency.", b, 3);
    metric_observe(h, "result=\"scheduled\"", 0.001);
    metric_observe(h, "result=\"scheduled\"", 0.1); /* le is inclusive */
    metric_observe(h, "result=\"scheduled\"", 0.5);
    metric_observe(h, "result=\"scheduled\"", 7);
    metric_observe(h, NULL, 0.2);
    assert_true(metric_value(h, "result=\"scheduled\"") == 4);
    assert_true(metric_sum(h, "result=\"scheduled\"") == 7.601);
    char *t = metrics_render(r);
    assert_string_equal(t, "# HELP ai_scheduler_e2e_seconds E2E latency.\n"
                           "# TYPE ai_scheduler_e2e_seconds histogram\n"
                           "ai_scheduler_e2e_seconds_bucket{result=\"scheduled\",le=\"0.005\"} 1\n"
                           "ai_scheduler_e2e_seconds_bucket{result=\"scheduled\",le=\"0.1\"} 2\n"
                           "ai_scheduler_e2e_seconds_bucket{result=\"scheduled\",le=\"1\"} 3\n"
                           "ai_scheduler_e2e_seconds_bucket{result=\"scheduled\",le=\"+Inf\"} 4\n"
                           "ai_scheduler_e2e_seconds_sum{result=\"scheduled\"} 7.601\n"
                           "ai_scheduler_e2e_seconds_count{result=\"scheduled\"} 4\n"
                           "ai_scheduler_e2e_seconds_bucket{le=\"0.005\"} 0\n"
                           "ai_scheduler_e2e_seconds_bucket{le=\"0.1\"} 0\n"
                           "ai_scheduler_e2e_seconds_bucket{le=\"1\"} 1\n"
                           "ai_scheduler_e2e_seconds_bucket{le=\"+Inf\"} 1\n"
                           "ai_scheduler_e2e_seconds_sum 0.2\n"
                           "ai_scheduler_e2e_seconds_count 1\n");
    free(t);
    metrics_free(r);
}

static void test_labels(void **st)
{
    char buf[64];
    assert_string_equal(metrics_labels(buf, sizeof buf, "pool", "gpu", "ns", "a\"b\\c\nd", NULL),
                        "pool=\"gpu\",ns=\"a\\\"b\\\\c\\nd\"");
    assert_string_equal(metrics_labels(buf, sizeof buf, NULL), "");
    /* Too long: keeps only whole pairs. */
    char small[16];
    assert_string_equal(metrics_labels(small, sizeof small, "a", "1", "pool", "very-long-name", NULL), "a=\"1\"");
    assert_string_equal(metrics_labels(small, sizeof small, "pool", "very-long-name", NULL), "");
}

static void collect(metrics_t *r, void *ud)
{
    int *calls = ud;
    (*calls)++;
    metric_set(metrics_gauge(r, "collected", "On demand."), NULL, *calls);
}

static void test_collector(void **st)
{
    metrics_t *r = metrics_new();
    int calls = 0;
    metrics_on_collect(r, collect, &calls);
    char *t = metrics_render(r);
    assert_non_null(strstr(t, "collected 1\n"));
    free(t);
    t = metrics_render(r);
    assert_non_null(strstr(t, "collected 2\n"));
    free(t);
    metrics_free(r);
}

typedef struct hammer {
    metrics_t *r;
    metric_t *c, *h;
} hammer_t;

static void *hammer_fn(void *arg)
{
    hammer_t *hm = arg;
    static const double b[] = { 1, 2 };
    for (int i = 0; i < 5000; i++) {
        metric_inc(hm->c, (i & 1) ? "k=\"odd\"" : "k=\"even\"");
        metric_observe(hm->h, NULL, (double)(i % 3));
        if (i % 500 == 0) {
            metric_t *late = metrics_histogram(hm->r, "late", "x", b, 2);
            metric_observe(late, NULL, 1);
            free(metrics_render(hm->r));
        }
    }
    return NULL;
}

static void test_threads(void **st)
{
    static const double b[] = { 0.5, 1.5 };
    hammer_t hm = { metrics_new(), NULL, NULL };
    hm.c = metrics_counter(hm.r, "c_total", "x");
    hm.h = metrics_histogram(hm.r, "h", "x", b, 2);
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hammer_fn, &hm), 0);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    assert_true(metric_value(hm.c, "k=\"odd\"") == 20000);
    assert_true(metric_value(hm.c, "k=\"even\"") == 20000);
    assert_true(metric_value(hm.h, NULL) == 40000);
    char *t = metrics_render(hm.r);
    assert_non_null(strstr(t, "late_count 80\n"));
    free(t);
    metrics_free(hm.r);
}

/* ---- HTTP ---------------------------------------------------------------- */

typedef struct got {
    long code;
    char body[4096];
    size_t len;
    char ctype[128];
} got_t;

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    got_t *g = ud;
    size_t k = sz * n;
    size_t room = sizeof g->body - 1 - g->len;
    memcpy(g->body + g->len, p, k < room ? k : room);
    g->len += k < room ? k : room;
    g->body[g->len] = 0;
    return k;
}

static int fetch(int port, const char *method, const char *path, got_t *g)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    memset(g, 0, sizeof *g);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, g);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    if (method)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (method && !strcmp(method, "POST"))
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "x=1");
    CURLcode rc = curl_easy_perform(c);
    char *ct = NULL;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &g->code);
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    if (ct)
        snprintf(g->ctype, sizeof g->ctype, "%s", ct);
    curl_easy_cleanup(c);
    return rc == CURLE_OK ? 0 : -1;
}

static int ready_flag;
static int is_ready(void *ud, const char **why)
{
    int *flag = ud;
    if (!__atomic_load_n(flag, __ATOMIC_SEQ_CST)) {
        *why = "not leader";
        return 0;
    }
    return 1;
}

static void test_http(void **st)
{
    metrics_t *r = metrics_new();
    metric_inc(metrics_counter(r, "served_total", "x"), NULL);
    char err[256] = "";
    /* No auth here: /metrics is open only as an always-allowed path. */
    http_server_opts_t o = { .bind_address = "127.0.0.1",
                             .metrics = r,
                             .ready = is_ready,
                             .ready_ud = &ready_flag,
                             .always_allow = "/healthz,/readyz,/livez,/metrics" };
    http_server_t *s = http_server_start(&o, err, sizeof err);
    assert_non_null(s);
    int port = http_server_port(s);
    assert_true(port > 0);
    got_t g;

    assert_int_equal(fetch(port, NULL, "/healthz", &g), 0);
    assert_int_equal(g.code, 200);
    assert_string_equal(g.body, "ok");
    assert_int_equal(fetch(port, NULL, "/livez", &g), 0);
    assert_int_equal(g.code, 200);

    assert_int_equal(fetch(port, NULL, "/readyz", &g), 0);
    assert_int_equal(g.code, 503);
    assert_string_equal(g.body, "not ready: not leader\n");
    __atomic_store_n(&ready_flag, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(fetch(port, NULL, "/readyz", &g), 0);
    assert_int_equal(g.code, 200);

    assert_int_equal(fetch(port, NULL, "/metrics", &g), 0);
    assert_int_equal(g.code, 200);
    assert_non_null(strstr(g.ctype, "version=0.0.4"));
    assert_non_null(strstr(g.body, "# TYPE served_total counter\nserved_total 1\n"));

    assert_int_equal(fetch(port, NULL, "/nope", &g), 0);
    assert_int_equal(g.code, 404);
    assert_int_equal(fetch(port, "POST", "/metrics", &g), 0);
    assert_int_equal(g.code, 405);
    assert_int_equal(fetch(port, "DELETE", "/healthz", &g), 0);
    assert_int_equal(g.code, 405);

    /* The port is taken now. */
    http_server_opts_t o2 = { .bind_address = "127.0.0.1", .port = port, .metrics = r };
    assert_null(http_server_start(&o2, err, sizeof err));
    assert_non_null(strstr(err, "cannot listen on 127.0.0.1:"));

    http_server_stop(s);
    assert_int_equal(fetch(port, NULL, "/healthz", &g), -1);

    /* The default always-allowed paths: /metrics is not one, and without
     * auth it fails closed. */
    o.always_allow = NULL;
    s = http_server_start(&o, err, sizeof err);
    assert_non_null(s);
    port = http_server_port(s);
    assert_int_equal(fetch(port, NULL, "/metrics", &g), 0);
    assert_int_equal(g.code, 503);
    assert_non_null(strstr(g.body, "authentication is not configured on this server"));
    assert_int_equal(fetch(port, NULL, "/livez", &g), 0);
    assert_int_equal(g.code, 200);
    http_server_stop(s);
    metrics_free(r);
}

static void test_http_bad_address(void **st)
{
    char err[256] = "";
    http_server_opts_t o = { .bind_address = "localhost" };
    assert_null(http_server_start(&o, err, sizeof err));
    assert_string_equal(err, "http: bind address \"localhost\" is not an IP address");
    o.bind_address = "127.0.0.1";
    o.port = 70000;
    assert_null(http_server_start(&o, err, sizeof err));
    /* IPv6 loopback, when the host has it. */
    o.bind_address = "::1";
    o.port = 0;
    http_server_t *s = http_server_start(&o, err, sizeof err);
    if (s) {
        assert_true(http_server_port(s) > 0);
        http_server_stop(s);
    }
    http_server_stop(NULL);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_gauge_render),
        cmocka_unit_test(test_registration),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_collector),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_http),
        cmocka_unit_test(test_http_bad_address),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
