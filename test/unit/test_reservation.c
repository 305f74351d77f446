/* test_reservation.c -- reservation for large gangs, the pure rules
 * (reservation/reservation.h) with exact answers: which nodes are held (fewest,
 * soonest free, least lost opportunity across topology domains), when a
 * running pod is expected to finish, and who may backfill held room. Plus
 * the two knobs through flags and the config file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "config/config.h"
#include "pool/table.h"
#include "scheduler/capabilities.h"
#include "reservation/reservation.h"

#include "fixtures.h"

#define NOW   1000000000LL
#define MIN_S 60000LL

/* A pod with these annotations (may be ""), priority, started at started. */
static pod_t *apod(const char *ann, int prio, int64_t started_ms)
{
    char buf[700];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'p','uid':'u','annotations':{%s}},"
             "'spec':{'priority':%d,'containers':[{'name':'c','resources':{'requests':{'nvidia.com/gpu':'1'}}}]}}",
             ann, prio);
    pod_t *p = fx_pod(buf);
    p->started_ms = started_ms;
    return p;
}

static void test_pod_done_and_runtime(void **st)
{
    (void)st;
    pod_t *a = apod("'resource.aibee.cn/expected-runtime':'2m'", 0, NOW);
    assert_int_equal(resv_pod_runtime(a), 2 * MIN_S);
    assert_int_equal(resv_pod_done(a), NOW + 2 * MIN_S);
    /* No expected runtime: its lifetime-seconds (after which it may be preempted). */
    pod_t *b = apod("'resource.aibee.cn/lifetime-seconds':'30'", 0, NOW);
    assert_int_equal(resv_pod_done(b), NOW + 30000);
    /* Expected runtime wins over lifetime. */
    pod_t *c = apod("'resource.aibee.cn/lifetime-seconds':'30','resource.aibee.cn/expected-runtime':'10s'", 0, NOW);
    assert_int_equal(resv_pod_runtime(c), 10000);
    /* Unknown, and a malformed annotation: unknown. */
    pod_t *d = apod("", 0, NOW);
    pod_t *e = apod("'resource.aibee.cn/expected-runtime':'soon'", 0, NOW);
    assert_int_equal(resv_pod_done(d), -1);
    assert_int_equal(resv_pod_runtime(e), -1);
    pod_unref(a);
    pod_unref(b);
    pod_unref(c);
    pod_unref(d);
    pod_unref(e);
}

static void test_backfill_rule(void **st)
{
    (void)st;
    int64_t expect = NOW + 10 * MIN_S;
    pod_t *short_ = apod("'resource.aibee.cn/expected-runtime':'5m'", 0, 0);
    pod_t *exact = apod("'resource.aibee.cn/expected-runtime':'10m'", 0, 0);
    pod_t *long_ = apod("'resource.aibee.cn/expected-runtime':'11m'", 0, 0);
    pod_t *unknown = apod("", 0, 0);
    pod_t *low = apod("", -5, 0);
    assert_true(resv_may_backfill(short_, NOW, expect, 0, 1));
    assert_true(resv_may_backfill(exact, NOW, expect, 0, 1)); /* done by then */
    assert_false(resv_may_backfill(long_, NOW, expect, 0, 1));
    assert_false(resv_may_backfill(unknown, NOW, expect, 0, 1));
    /* Preemptible by the gang: lower priority, and the gang may preempt. */
    assert_true(resv_may_backfill(low, NOW, expect, 0, 1));
    assert_false(resv_may_backfill(low, NOW, expect, 0, 0));
    assert_false(resv_may_backfill(unknown, NOW, expect, 0, 1)); /* equal priority */
    /* A pod that outranks the gang is not held back, however long it runs
     * and whether or not the gang may preempt (issue 35, fault 10). */
    assert_true(resv_may_backfill(unknown, NOW, expect, -1, 1));
    assert_true(resv_may_backfill(long_, NOW, expect, -1, 0));
    /* Later the same pod no longer finishes in time. */
    assert_false(resv_may_backfill(short_, NOW + 6 * MIN_S, expect, 0, 1));
    pod_unref(short_);
    pod_unref(exact);
    pod_unref(long_);
    pod_unref(unknown);
    pod_unref(low);
}

static int has(const resv_cand_t *c, const int *idx, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(c[idx[i]].name, name) == 0)
            return 1;
    return 0;
}

/* 32 GPUs on 4-GPU nodes: the 8 nodes soonest free, not the others. */
static void test_choose_soonest_fewest(void **st)
{
    (void)st;
    resv_cand_t c[16];
    char names[16][8];
    for (int i = 0; i < 16; i++) {
        snprintf(names[i], sizeof(names[i]), "n%02d", i);
        /* n00 frees last ... n15 first */
        c[i] = (resv_cand_t){ .name = names[i], .free = 0, .alloc = 4, .done_ms = NOW + (16 - i) * MIN_S };
    }
    int idx[16];
    int64_t expect = 0;
    double lost = 0;
    int n = resv_choose(c, 16, 32, NOW, idx, &expect, &lost);
    assert_int_equal(n, 8);
    for (int i = 8; i < 16; i++)
        assert_true(has(c, idx, n, names[i]));
    assert_int_equal(expect, NOW + 8 * MIN_S); /* n08, the latest of the eight */
    /* Idle GPU-ms while waiting: node i frees at (16-i) min, idle until 8 min. */
    double want = 32.0 * (double)(8 * MIN_S);
    for (int k = 1; k <= 8; k++)
        want += 4.0 * (double)((8 - k) * MIN_S);
    assert_true(lost == want);
    /* Of nodes free at the same time, the one with most free first. */
    resv_cand_t d[3] = { { .name = "a", .free = 1, .alloc = 4, .done_ms = NOW + MIN_S },
                         { .name = "b", .free = 3, .alloc = 4, .done_ms = NOW + MIN_S },
                         { .name = "c", .free = 0, .alloc = 4, .done_ms = NOW + 2 * MIN_S } };
    n = resv_choose(d, 3, 4, NOW, idx, &expect, &lost);
    assert_int_equal(n, 1);
    assert_string_equal(d[idx[0]].name, "b");
    /* Larger than everything: none. */
    n = resv_choose(d, 3, 13, NOW, idx, &expect, &lost);
    assert_int_equal(n, 0);
}

/* Topology: one domain, the one with least lost opportunity. Rack r1 has
 * 4 GPUs free now but its other node frees later than both of r2's. */
static void test_choose_domain(void **st)
{
    (void)st;
    resv_cand_t c[5] = {
        { .name = "a1", .domain = "r1", .free = 4, .alloc = 4, .done_ms = NOW },
        { .name = "a2", .domain = "r1", .free = 0, .alloc = 4, .done_ms = NOW + 6 * MIN_S },
        { .name = "b1", .domain = "r2", .free = 0, .alloc = 4, .done_ms = NOW + 5 * MIN_S },
        { .name = "b2", .domain = "r2", .free = 0, .alloc = 4, .done_ms = NOW + 5 * MIN_S },
        { .name = "c1", .domain = "r3", .free = 4, .alloc = 4, .done_ms = NOW }, /* too small alone */
    };
    int idx[5];
    int64_t expect = 0;
    double lost = 0;
    int n = resv_choose(c, 5, 8, NOW, idx, &expect, &lost);
    /* r1: 4 free GPUs idle 6 min + the gang's 8 GPUs 6 min = 72 GPU-min;
     * r2: nothing idle, the gang's 8 GPUs 5 min = 40. */
    assert_int_equal(n, 2);
    assert_true(has(c, idx, n, "b1") && has(c, idx, n, "b2"));
    assert_int_equal(expect, NOW + 5 * MIN_S);
    assert_true(lost == 8.0 * 5 * MIN_S);
    /* With r2 slower (60 min: 480 GPU-min) r1's 72 cost less: r1. */
    for (int i = 0; i < 5; i++)
        if (c[i].domain && strcmp(c[i].domain, "r2") == 0)
            c[i].done_ms = NOW + 60 * MIN_S;
    n = resv_choose(c, 5, 8, NOW, idx, &expect, &lost);
    assert_int_equal(n, 2);
    assert_true(has(c, idx, n, "a1") && has(c, idx, n, "a2"));
    assert_int_equal(expect, NOW + 6 * MIN_S);
    assert_true(lost == 4.0 * 6 * MIN_S + 8.0 * 6 * MIN_S);
}

static const char *write_tmp(const char *body)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/test_reservation.%ld.yaml", (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(body, f);
    fclose(f);
    return path;
}

static void test_knobs(void **st)
{
    (void)st;
    sched_config_t c;
    char err[256] = "";
    config_default(&c);
    assert_int_equal(c.sched.reservation_after_s, 300);
    assert_int_equal(c.sched.reservation_timeout_s, 1800);
    const char *path = write_tmp("apiVersion: ai-scheduler.aibee.cn/v1alpha1\n"
                                 "kind: AiSchedulerConfiguration\n"
                                 "reservationAfter: 0\n"
                                 "reservationTimeout: 10m\n");
    char *argv[] = { "ai-scheduler", "--config", (char *)path, NULL };
    assert_int_equal(config_parse_args(&c, 3, argv, err, sizeof err), 0);
    assert_int_equal(c.sched.reservation_after_s, 0); /* disabled */
    assert_int_equal(c.sched.reservation_timeout_s, 600);
    char *argv2[] = { "ai-scheduler", "--reservation-after", "90s", NULL };
    assert_int_equal(config_parse_args(&c, 3, argv2, err, sizeof err), 0);
    assert_int_equal(c.sched.reservation_after_s, 90);
    char *argv3[] = { "ai-scheduler", "--reservation-timeout", "0", NULL };
    assert_int_equal(config_parse_args(&c, 3, argv3, err, sizeof err), -1);
    assert_non_null(strstr(err, "reservation-timeout"));
    config_free(&c);
    unlink(path);
}

/* `ai-scheduler pools`: the held room from Pool .status.reservation. */
static void test_pool_table_held(void **st)
{
    (void)st;
    json_error_t je;
    json_t *nodes = json_loads("[{\"metadata\":{\"name\":\"n1\",\"labels\":{\"pool\":\"p\"}},"
                               "\"status\":{\"allocatable\":{\"cpu\":\"8\",\"nvidia.com/gpu\":\"4\"},"
                               "\"capacity\":{\"cpu\":\"8\",\"nvidia.com/gpu\":\"4\"}}}]",
                               0, &je);
    json_t *pools = json_loads(
        "[{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"p\"}}},"
        "\"status\":{\"reservation\":{\"podGroup\":\"ns/big\",\"nodes\":[\"n1\"],\"resource\":\"nvidia.com/gpu\","
        "\"held\":4}}},"
        "{\"metadata\":{\"name\":\"q\"},\"spec\":{},\"status\":{\"reservation\":{\"nodes\":\"bad\"}}}]",
        0, &je);
    assert_non_null(nodes);
    assert_non_null(pools);
    json_t *pods = json_array();
    pool_table_t t;
    pool_table_load(&t, stderr, nodes, pods, pools, "ai-scheduler");
    assert_int_equal(t.n, 2);
    assert_int_equal(t.usage[0].held_nodes, 1);
    assert_int_equal(t.usage[0].held_gpu, 4);
    assert_string_equal(t.usage[0].held_for, "ns/big");
    assert_int_equal(t.usage[1].held_nodes, 0); /* malformed: ignored */
    int rows = 0;
    char **cells = pool_table_cells(t.specs, t.n, &t.dflt, t.usage, &rows);
    int seen_gpu = 0, seen_nodes = 0;
    for (int r = 0; r < rows; r++) {
        const char *res = cells[r * POOL_TABLE_COLS + 2], *used = cells[r * POOL_TABLE_COLS + 5];
        seen_gpu += strcmp(res, "gpu") == 0 && strcmp(used, "0 (4 held)") == 0;
        seen_nodes += strcmp(res, "nodes") == 0 && strcmp(used, "1 held for ns/big") == 0;
    }
    assert_int_equal(seen_gpu, 2); /* pool p and the total */
    assert_int_equal(seen_nodes, 1);
    for (int i = 0; i < rows * POOL_TABLE_COLS; i++)
        free(cells[i]);
    free(cells);
    json_t *doc = pool_table_doc(t.specs, t.n, &t.dflt, t.usage);
    char *held = json_dumps(json_object_get(json_array_get(doc, 0), "held"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(held, "{\"gpu\":4,\"nodes\":1,\"pod_group\":\"ns/big\"}");
    free(held);
    json_decref(doc);
    pool_table_free(&t);
    json_decref(nodes);
    json_decref(pools);
    json_decref(pods);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_done_and_runtime),
        cmocka_unit_test(test_backfill_rule),
        cmocka_unit_test(test_choose_soonest_fewest),
        cmocka_unit_test(test_choose_domain),
        cmocka_unit_test(test_knobs),
        cmocka_unit_test(test_pool_table_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
