/* test_explain.c -- decision records (explain/): the bounded store (cap,
 * oldest dropped, replace, drop, concurrent use), the record's keys, the
 * filter diagnosis's examples and plugin, and the hints derived from a
 * record. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>

#include "explain/explain.h"
#include "framework/framework.h"
#include "scheduler/capabilities.h"

static json_t *rec_named(const char *pod)
{
    return explain_record_new("pod", pod, "gpu", 1795000000000LL);
}

static void test_store_cap_drops_oldest(void **state)
{
    (void)state;
    explain_store_t *st = explain_store_new(3);
    explain_put(st, "pod", "ns", "a", rec_named("ns/a"));
    explain_put(st, "pod", "ns", "b", rec_named("ns/b"));
    explain_put(st, "pod", "ns", "c", rec_named("ns/c"));
    /* a rewritten record is the newest: b is now the oldest */
    explain_put(st, "pod", "ns", "a", rec_named("ns/a"));
    explain_put(st, "pod", "ns", "d", rec_named("ns/d"));
    assert_int_equal(explain_count(st), 3);
    assert_null(explain_get(st, "pod", "ns", "b"));
    const char *kept[] = { "a", "c", "d" };
    for (int i = 0; i < 3; i++) {
        json_t *r = explain_get(st, "pod", "ns", kept[i]);
        assert_non_null(r);
        char want[16];
        snprintf(want, sizeof(want), "ns/%s", kept[i]);
        assert_string_equal(json_string_value(json_object_get(r, "pod")), want);
        json_decref(r);
    }
    explain_store_free(st);
}

static void test_store_kinds_and_drop(void **state)
{
    (void)state;
    explain_store_t *st = explain_store_new(0); /* default cap */
    explain_put(st, "pod", "ns", "x", rec_named("ns/x"));
    explain_put(st, "podgroup", "ns", "x", explain_record_new("podgroup", "ns/x-0", "gpu", 0));
    assert_int_equal(explain_count(st), 2);
    json_t *g = explain_get(st, "podgroup", "ns", "x");
    assert_string_equal(json_string_value(json_object_get(g, "kind")), "podgroup");
    json_decref(g);
    /* "ns/x" in namespace "ns" is not "x" in namespace "ns/x" */
    assert_null(explain_get(st, "pod", "ns/x", ""));
    assert_int_equal(explain_drop(st, "pod", "ns", "x"), 1);
    assert_int_equal(explain_drop(st, "pod", "ns", "x"), 0);
    assert_null(explain_get(st, "pod", "ns", "x"));
    assert_int_equal(explain_count(st), 1);
    /* a record held by a reader outlives its drop */
    g = explain_get(st, "podgroup", "ns", "x");
    explain_drop(st, "podgroup", "ns", "x");
    assert_string_equal(json_string_value(json_object_get(g, "pod")), "ns/x-0");
    json_decref(g);
    assert_int_equal(explain_count(st), 0);
    /* NULL store and NULL record: nothing, no crash */
    explain_put(NULL, "pod", "a", "b", rec_named("a/b"));
    explain_put(st, "pod", "a", "b", NULL);
    assert_null(explain_get(NULL, "pod", "a", "b"));
    assert_int_equal(explain_count(NULL), 0);
    explain_store_free(st);
}

typedef struct worker {
    explain_store_t *st;
    int id;
} worker_t;

static void *hammer(void *arg)
{
    worker_t *w = arg;
    char name[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "p%d-%d", w->id, i % 50);
        explain_put(w->st, "pod", "ns", name, rec_named(name));
        json_decref(explain_get(w->st, "pod", "ns", name));
        if (i % 7 == 0)
            explain_drop(w->st, "pod", "ns", name);
    }
    return NULL;
}

static void test_store_concurrent(void **state)
{
    (void)state;
    explain_store_t *st = explain_store_new(64);
    pthread_t t[4];
    worker_t w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker_t){ st, i };
        pthread_create(&t[i], NULL, hammer, &w[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_true(explain_count(st) <= 64);
    explain_store_free(st);
}

static void test_record_keys(void **state)
{
    (void)state;
    json_t *r = rec_named("ns/p");
    const char *keys[] = { "kind",           "pod",        "pool",          "queue", "admission", "attempts",
                           "nodesEvaluated", "filters",    "topNodes",      "gang",  "hint",      "message",
                           "outcome",        "postFilter", "filterDetails", "time" };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_non_null(json_object_get(r, keys[i]));
    assert_string_equal(json_string_value(json_object_get(r, "time")), "2026-11-18T11:06:40Z");
    const char *ex[] = { "n1", "n2", "n3", "n4" };
    explain_record_filter(r, "NodeResourcesFit", "Insufficient cpu", 4, ex, 4);
    explain_record_filter(r, NULL, "Insufficient cpu", 1, NULL, 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "filters"), "Insufficient cpu")), 5);
    json_t *d = json_array_get(json_object_get(r, "filterDetails"), 0);
    assert_int_equal(json_array_size(json_object_get(d, "examples")), EXPLAIN_EXAMPLES);
    assert_string_equal(json_string_value(json_object_get(d, "plugin")), "NodeResourcesFit");
    explain_record_top_node(r, "n9", 170,
                            json_pack("{s:i, s:i}", "NodeResourcesMostAllocated", 100, "ImageLocality", 70));
    explain_record_step(r, "preemption", "no candidate", "0 node(s)");
    char *s = json_dumps(r, JSON_SORT_KEYS | JSON_COMPACT);
    assert_non_null(strstr(s, "\"topNodes\":[{\"node\":\"n9\",\"score\":170,\"scores\":{\"ImageLocality\":70,"
                              "\"NodeResourcesMostAllocated\":100}}]"));
    assert_non_null(strstr(s, "\"postFilter\":[{\"detail\":\"0 node(s)\",\"result\":\"no candidate\","
                              "\"step\":\"preemption\"}]"));
    free(s);
    json_decref(r);
}

/* The diagnosis keeps 3 example nodes per reason and the failing plugin;
 * the examples are copies once owned. */
static void test_diagnosis_examples(void **state)
{
    (void)state;
    fw_diagnosis_t *d = fw_diagnosis_new();
    fw_status_t st;
    char names[5][8];
    for (int i = 0; i < 5; i++) {
        snprintf(names[i], sizeof(names[i]), "n%d", i);
        fw_status_reset(&st);
        fw_status_add(&st, FW_UNSCHEDULABLE, "Insufficient cpu");
        st.plugin = "NodeResourcesFit";
        fw_diagnosis_add_node(d, &st, names[i]);
    }
    fw_status_reset(&st);
    fw_status_add(&st, FW_UNSCHEDULABLE_UNRESOLVABLE, "node(s) had taint {a: b}, that the pod didn't tolerate");
    fw_diagnosis_add(d, &st); /* no node: no example */
    fw_diagnosis_own_examples(d);
    memset(names, 'x', sizeof(names)); /* the cache's names are gone */
    assert_int_equal(fw_diagnosis_len(d), 2);
    const char *reason, *plugin;
    const char *const *ex;
    int count, nex;
    assert_int_equal(fw_diagnosis_get(d, 0, &reason, &plugin, &count, &ex, &nex), 0);
    assert_string_equal(reason, "Insufficient cpu");
    assert_string_equal(plugin, "NodeResourcesFit");
    assert_int_equal(count, 5);
    assert_int_equal(nex, 3);
    assert_string_equal(ex[0], "n0");
    assert_string_equal(ex[2], "n2");
    assert_int_equal(fw_diagnosis_get(d, 1, &reason, &plugin, &count, &ex, &nex), 0);
    assert_null(plugin);
    assert_int_equal(nex, 0);
    assert_int_equal(fw_diagnosis_get(d, 2, &reason, &plugin, &count, &ex, &nex), -1);
    char *msg = fw_diagnosis_message(d, 5);
    assert_string_equal(msg, "0/5 nodes are available: 5 Insufficient cpu, 1 node(s) had taint {a: b}, that the pod "
                             "didn't tolerate.");
    free(msg);
    fw_diagnosis_free(d);
}

/* ---- hints */

static json_t *gpu_rec(int want, int free_total, int one, int cap)
{
    json_t *r = rec_named("ns/p");
    json_object_set_new(r, "request", json_pack("{s:i}", "gpu", want));
    json_object_set_new(r, "poolFree",
                        json_pack("{s:i, s:i, s:i}", "gpu", free_total, "gpuMaxOnOneNode", one, "gpuMaxCapacity", cap));
    json_object_set_new(r, "nodesEvaluated", json_integer(3));
    const char *ex[] = { "a" };
    explain_record_filter(r, "NodeResourcesFit", "Insufficient nvidia.com/gpu", 3, ex, 1);
    return r;
}

static void assert_hint(json_t *r, const char *want)
{
    char *h = explain_hint(r);
    if (!want) {
        assert_null(h);
    } else {
        assert_non_null(h);
        assert_string_equal(h, want);
    }
    free(h);
    json_decref(r);
}

static void test_hint_gpu(void **state)
{
    (void)state;
    /* the example: the GPUs are free, on no single node */
    json_t *r = gpu_rec(8, 12, 4, 8);
    explain_record_step(r, "consolidation", "no plan",
                        "no plan within 8 moves: 0 pod(s) could move; 2 pod(s) are not owned by a controller");
    explain_record_step(r, "preemption", "skipped", "off");
    assert_hint(r, "asks 8 GPUs on one node; pool gpu has 12 free GPUs, at most 4 on one node; consolidation: no plan "
                   "within 8 moves: 0 pod(s) could move; 2 pod(s) are not owned by a controller");
    /* larger than any node */
    assert_hint(gpu_rec(8, 12, 4, 4),
                "asks 8 GPUs on one node, but no node of pool gpu has more than 4 GPUs: it cannot fit there");
    /* the pool is short */
    r = gpu_rec(8, 6, 4, 8);
    explain_record_step(r, "preemption", "no candidate", "3 node(s) where evicting could help, 0 with victims allowed");
    assert_hint(r, "asks 8 GPUs on one node; pool gpu has 6 free GPUs (at most 4 on one node); preemption: 3 node(s) "
                   "where evicting could help, 0 with victims allowed");
}

static void test_hint_other(void **state)
{
    (void)state;
    /* one reason on every node that preemption cannot lift */
    json_t *r = rec_named("ns/p");
    json_object_set_new(r, "nodesEvaluated", json_integer(4));
    explain_record_filter(r, "NodeAffinity", "node(s) didn't match Pod's node affinity/selector", 4, NULL, 0);
    assert_hint(r, "every node of pool gpu (4) rejects it: node(s) didn't match Pod's node affinity/selector");
    /* queue admission */
    r = rec_named("ns/p");
    json_object_set_new(r, "queue", json_pack("{s:s}", "name", "team-a"));
    json_object_set_new(r, "admission", json_pack("{s:s, s:s}", "verdict", "limit", "message", "gpu 9 > limit 8"));
    assert_hint(r, "held by its queue \"team-a\" (limit): gpu 9 > limit 8");
    /* behind a gang */
    r = rec_named("ns/p");
    json_object_set_new(r, "waitingBehind", json_string("ns/big"));
    assert_hint(r, "waits behind pod group ns/big, which goes first in pool gpu and does not fit yet");
    /* a gang short of members that fit */
    r = rec_named("ns/p-0");
    json_object_set_new(r, "gang", json_pack("{s:s, s:i, s:i}", "name", "ns/g", "minMember", 4, "placeable", 2));
    assert_hint(r, "only 2 of the gang's minimum of 4 members fit in pool gpu at once");
    /* nothing to say; not a record at all */
    assert_hint(rec_named("ns/p"), NULL);
    assert_null(explain_hint(NULL));
    json_t *bad = json_pack("{s:i, s:s, s:i}", "filters", 3, "pool", "x", "nodesEvaluated", 2);
    assert_hint(bad, NULL);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_cap_drops_oldest),
        cmocka_unit_test(test_store_kinds_and_drop),
        cmocka_unit_test(test_store_concurrent),
        cmocka_unit_test(test_record_keys),
        cmocka_unit_test(test_diagnosis_examples),
        cmocka_unit_test(test_hint_gpu),
        cmocka_unit_test(test_hint_other),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
