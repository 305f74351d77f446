/* test_sandbox.c -- the scheduler on a copy of a cluster (pkg/sandbox): no
 * API server, one thread, a virtual clock. Each case compares the exact
 * actions (binds, evictions, unschedulable reports) with what the
 * scheduler's rules give. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "sandbox/sandbox.h"
#include "scheduler/internal.h"
#include "util/util.h"

#define T0 1800000000000LL /* 2027-01-15T08:00:00Z: the virtual clock's start */

/* ---- objects ------------------------------------------------------------ */

static json_t *node(const char *name, const char *cpu, const char *mem, const char *pool)
{
    json_t *n =
        json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:[{s:s, s:s}]}}",
                  "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels", "kubernetes.io/hostname",
                  name, "status", "capacity", "cpu", cpu, "memory", mem, "pods", "110", "allocatable", "cpu", cpu,
                  "memory", mem, "pods", "110", "conditions", "type", "Ready", "status", "True");
    if (pool)
        json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"), "pool", json_string(pool));
    return n;
}

/* A pod of ours asking cpu and mem; node: bound there (Running). */
static json_t *pod(const char *name, const char *cpu, const char *mem, int prio, const char *node_name)
{
    json_t *p =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:{}, s:{}}, s:{s:s, s:i, s:[{s:s, s:s, s:{s:{s:s, s:s}}}]},"
                  " s:{s:s}}",
                  "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "ns", "labels",
                  "annotations", "spec", "schedulerName", "ai-scheduler", "priority", prio, "containers", "name", "c",
                  "image", "x", "resources", "requests", "cpu", cpu, "memory", mem, "status", "phase", "Pending");
    if (node_name) {
        json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node_name));
        json_object_set_new(json_object_get(p, "status"), "phase", json_string("Running"));
    }
    return p;
}

static void label(json_t *o, const char *k, const char *v)
{
    json_object_set_new(json_object_get(json_object_get(o, "metadata"), "labels"), k, json_string(v));
}

static void annotate(json_t *o, const char *k, const char *v)
{
    json_object_set_new(json_object_get(json_object_get(o, "metadata"), "annotations"), k, json_string(v));
}

static json_t *pool(const char *name)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:{s:s}}}}", "apiVersion", "resource.aibee.cn/v1alpha1", "kind", "Pool",
                     "metadata", "name", name, "spec", "nodeSelector", "matchLabels", "pool", name);
}

/* ---- the action log ----------------------------------------------------- */

typedef struct log {
    sbuf_t text; /* one line per action */
    int binds, evicts, unsch;
} log_t;

static void on_action(void *ud, const sb_action_t *a)
{
    log_t *l = ud;
    static const char *const names[] = { "", "BIND", "EVICT", "UNSCHEDULABLE", "NOMINATE", "CREATE", "DELETE" };
    sbuf_printf(&l->text, "%s %s/%s", names[a->kind], a->ns, a->name);
    if (a->node)
        sbuf_printf(&l->text, " node=%s", a->node);
    if (a->lender)
        sbuf_printf(&l->text, " lender=%s", a->lender);
    if (a->kind == SB_EVICT)
        sbuf_printf(&l->text, " reason=%s by=%s", a->reason ? a->reason : "-", a->by ? a->by : "-");
    if (a->kind == SB_UNSCHEDULABLE)
        sbuf_printf(&l->text, " %s: %s", a->reason, a->message);
    sbuf_puts(&l->text, "\n");
    l->binds += a->kind == SB_BIND;
    l->evicts += a->kind == SB_EVICT;
    l->unsch += a->kind == SB_UNSCHEDULABLE;
}

static const char *logged(log_t *l)
{
    return l->text.data ? l->text.data : "";
}

static sandbox_t *sb_new(log_t *l, uint64_t seed)
{
    memset(l, 0, sizeof(*l));
    char err[256] = "";
    sandbox_opts_t o = { NULL, seed, T0, on_action, l };
    sandbox_t *sb = sandbox_new(&o, err, sizeof err);
    if (!sb)
        fail_msg("sandbox_new: %s", err);
    return sb;
}

/* Applies obj (taken) as ADDED. */
static void add(sandbox_t *sb, json_t *obj)
{
    char err[256] = "";
    int rc = sandbox_apply(sb, "ADDED", obj, err, sizeof err);
    if (rc != 0)
        fail_msg("apply: %s", err);
    json_decref(obj);
}

static void sb_done(sandbox_t *sb, log_t *l)
{
    sandbox_free(sb);
    sbuf_free(&l->text);
}

static const char *node_of(sandbox_t *sb, const char *name)
{
    json_t *p = sandbox_get(sb, "Pod", "ns", name);
    return p ? json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName")) : NULL;
}

/* ---- cases -------------------------------------------------------------- */

/* MostAllocated (the default): the pod goes to the fullest node that fits. */
static void test_binds_most_allocated(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l, 7);
    add(sb, node("n1", "8", "16Gi", NULL));
    add(sb, node("n2", "8", "16Gi", NULL));
    add(sb, node("n3", "8", "16Gi", NULL));
    add(sb, pod("old1", "2", "4Gi", 0, "n1"));
    add(sb, pod("old2", "5", "10Gi", 0, "n2"));
    add(sb, pod("new", "2", "4Gi", 0, NULL));
    assert_true(sandbox_run(sb) >= 1);
    assert_string_equal(logged(&l), "BIND ns/new node=n2\n");
    assert_string_equal(node_of(sb, "new"), "n2");
    json_t *p = sandbox_get(sb, "Pod", "ns", "new");
    assert_string_equal(json_string_value(json_object_get(json_object_get(p, "status"), "phase")), "Running");
    /* n2 has 1 CPU left: a 2-CPU pod now goes to n1 (6 CPUs left), the fuller of the two that fit. */
    add(sb, pod("next", "2", "4Gi", 0, NULL));
    sandbox_run(sb);
    assert_string_equal(node_of(sb, "next"), "n1");
    sb_done(sb, &l);
}

/* Priority preemption: the low-priority pod is evicted for the high one,
 * which then binds on the node it freed. */
static void test_preemption_evicts_and_binds(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l, 7);
    add(sb, node("n1", "4", "8Gi", NULL));
    add(sb, node("n2", "4", "8Gi", NULL));
    add(sb, pod("low", "3", "1Gi", 0, "n1"));
    add(sb, pod("mid", "3", "1Gi", 50, "n2"));
    add(sb, pod("high", "2", "1Gi", 100, NULL));
    sandbox_run(sb);
    sandbox_advance(sb, T0 + 15000);
    assert_int_equal(l.evicts, 1);
    assert_non_null(strstr(logged(&l), "EVICT ns/low node=n1 reason=preemption by=ns/high\n"));
    assert_non_null(strstr(logged(&l), "BIND ns/high node=n1\n"));
    assert_null(sandbox_get(sb, "Pod", "ns", "low"));
    assert_string_equal(node_of(sb, "mid"), "n2");
    sb_done(sb, &l);
}

/* A gang of 4 on room for 3 binds nothing; a fourth node lets all 4 bind. */
static void test_gang_all_or_nothing(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l, 7);
    add(sb, json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i}}", "apiVersion", "scheduling.x-k8s.io/v1alpha1", "kind",
                      "PodGroup", "metadata", "name", "g", "namespace", "ns", "spec", "minMember", 4));
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof n, "n%d", i);
        add(sb, node(n, "4", "8Gi", NULL));
    }
    for (int i = 0; i < 4; i++) {
        char n[8];
        snprintf(n, sizeof n, "w%d", i);
        json_t *p = pod(n, "3", "1Gi", 0, NULL);
        label(p, "scheduling.x-k8s.io/pod-group", "g");
        add(sb, p);
    }
    sandbox_run(sb);
    sandbox_advance(sb, T0 + 5000);
    assert_int_equal(l.binds, 0);
    assert_true(l.unsch >= 1);
    add(sb, node("n3", "4", "8Gi", NULL));
    sandbox_advance(sb, T0 + 30000);
    assert_int_equal(l.binds, 4);
    int seen[4] = { 0 };
    for (int i = 0; i < 4; i++) {
        char n[8];
        snprintf(n, sizeof n, "w%d", i);
        const char *at = node_of(sb, n);
        assert_non_null(at);
        seen[at[1] - '0']++;
    }
    for (int i = 0; i < 4; i++)
        assert_int_equal(seen[i], 1); /* one per node: 3 CPUs each */
    sb_done(sb, &l);
}

/* A pod whose pool is full borrows a node of another pool (SB_BIND lender). */
static void test_borrowing(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l, 7);
    add(sb, pool("a"));
    add(sb, pool("b"));
    add(sb, node("a1", "4", "8Gi", "a"));
    add(sb, node("b1", "4", "8Gi", "b"));
    json_t *full = pod("full", "4", "1Gi", 0, "a1");
    annotate(full, POOL_ANNOTATION, "a");
    add(sb, full);
    json_t *p = pod("p", "2", "1Gi", 0, NULL);
    annotate(p, POOL_ANNOTATION, "a");
    add(sb, p);
    sandbox_run(sb);
    sandbox_advance(sb, T0 + 15000);
    assert_non_null(strstr(logged(&l), "BIND ns/p node=b1 lender=b\n"));
    json_t *bp = sandbox_get(sb, "Pod", "ns", "p");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(bp, "metadata"), "annotations"), BORROWED_ANNOTATION)),
                        "b");
    sb_done(sb, &l);
}

/* A Queue at its limit holds the next pod (SB_UNSCHEDULABLE says why). */
static void test_queue_limit_holds(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l, 7);
    add(sb, json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:{s:i, s:i}}}}", "apiVersion", "resource.aibee.cn/v1alpha1", "kind",
                      "Queue", "metadata", "name", "q", "spec", "resources", "cpu", "quota", 2000, "limit", 2000));
    add(sb, node("n1", "8", "16Gi", NULL));
    json_t *a = pod("a", "2", "1Gi", 0, NULL), *b = pod("b", "2", "1Gi", 0, NULL);
    label(a, FS_QUEUE_LABEL, "q");
    label(b, FS_QUEUE_LABEL, "q");
    add(sb, a);
    sandbox_run(sb);
    add(sb, b);
    sandbox_advance(sb, T0 + 5000);
    assert_string_equal(node_of(sb, "a"), "n1");
    assert_null(node_of(sb, "b"));
    assert_int_equal(l.binds, 1);
    const char *u = strstr(logged(&l), "UNSCHEDULABLE ns/b ");
    assert_non_null(u);
    assert_non_null(strstr(u, "limit"));
    sb_done(sb, &l);
}

/* Twenty equal nodes, twenty pods: every placement is a tie-break. */
static char *tie_run(uint64_t seed)
{
    log_t l;
    sandbox_t *sb = sb_new(&l, seed);
    for (int i = 0; i < 20; i++) {
        char n[16];
        snprintf(n, sizeof n, "n%02d", i);
        add(sb, node(n, "4", "8Gi", NULL));
    }
    for (int i = 0; i < 20; i++) {
        char n[16];
        snprintf(n, sizeof n, "p%02d", i);
        add(sb, pod(n, "3", "6Gi", 0, NULL));
    }
    sandbox_run(sb);
    assert_int_equal(l.binds, 20);
    char *out = util_strdup(logged(&l));
    sb_done(sb, &l);
    return out;
}

static void test_deterministic(void **st)
{
    (void)st;
    char *a = tie_run(42), *b = tie_run(42);
    assert_string_equal(a, b);
    int differs = 0;
    for (uint64_t seed = 1; seed <= 3 && !differs; seed++) {
        char *c = tie_run(seed);
        differs = strcmp(a, c) != 0;
        free(c);
    }
    assert_true(differs);
    free(a);
    free(b);
}

/* A pod that failed waits out its backoff (1 s) on the virtual clock, even
 * when the node it needs arrives at once. */
static void test_backoff_follows_virtual_clock(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l, 7);
    add(sb, node("small", "1", "1Gi", NULL));
    add(sb, pod("p", "2", "1Gi", 0, NULL));
    sandbox_run(sb);
    assert_int_equal(l.binds, 0);
    assert_int_equal(l.unsch, 1);
    assert_int_equal(sandbox_now(sb), T0);
    add(sb, node("big", "4", "8Gi", NULL));
    sandbox_run(sb);
    assert_int_equal(l.binds, 0);
    int64_t due = sandbox_next_due(sb);
    assert_true(due > T0 && due <= T0 + 1000);
    sandbox_advance(sb, T0 + 999);
    assert_int_equal(l.binds, 0);
    sandbox_advance(sb, T0 + 1000);
    assert_int_equal(l.binds, 1);
    assert_string_equal(node_of(sb, "p"), "big");
    assert_int_equal(sandbox_now(sb), T0 + 1000);
    sb_done(sb, &l);
}

/* The scheduler inside talks to nothing but the copy. */
static void test_nothing_sent(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l, 7);
    scheduler_t *s = sandbox_scheduler(sb);
    assert_true(kube_client_is_inproc(s->kc));
    assert_string_equal(kube_client_server(s->kc), "inproc:");
    assert_null(s->inf_pods);
    assert_null(s->inf_nodes);
    sb_done(sb, &l);
}

/* Bad input: a clear error, nothing stored. */
static void test_bad_objects(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l, 7);
    char err[256] = "";
    json_t *o = json_pack("{s:s}", "kind", "Pod");
    assert_int_equal(sandbox_apply(sb, "ADDED", o, err, sizeof err), -1);
    assert_non_null(strstr(err, "metadata.name"));
    assert_int_equal(sandbox_apply(sb, "BOGUS", o, err, sizeof err), -1);
    json_decref(o);
    o = json_string("x");
    assert_int_equal(sandbox_apply(sb, "ADDED", o, err, sizeof err), -1);
    json_decref(o);
    /* A pod whose quantity does not parse: accepted, never bound. */
    json_t *bad = pod("bad", "lots", "1Gi", 0, NULL);
    add(sb, node("n1", "4", "8Gi", NULL));
    add(sb, bad);
    sandbox_run(sb);
    assert_int_equal(l.binds, 0);
    json_t *snap = json_pack("{s:s}", "items", "nope");
    assert_int_equal(sandbox_load(sb, snap, err, sizeof err), -1);
    json_decref(snap);
    sb_done(sb, &l);
}

/* sandbox_load orders a snapshot's items: pods listed before their nodes
 * and pools still land as they would live. */
static void test_load_orders_items(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l, 7);
    json_t *p = pod("p", "1", "1Gi", 0, NULL);
    annotate(p, POOL_ANNOTATION, "a");
    json_t *snap =
        json_pack("{s:s, s:s, s:[o, o, o, o]}", "apiVersion", "ai-scheduler.aibee.cn/v1", "kind", "ClusterSnapshot",
                  "items", p, node("b1", "4", "8Gi", "b"), node("a1", "4", "8Gi", "a"), pool("a"));
    char err[256] = "";
    assert_int_equal(sandbox_load(sb, snap, err, sizeof err), 0);
    json_decref(snap);
    sandbox_run(sb);
    assert_string_equal(logged(&l), "BIND ns/p node=a1\n");
    sb_done(sb, &l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binds_most_allocated),
        cmocka_unit_test(test_preemption_evicts_and_binds),
        cmocka_unit_test(test_gang_all_or_nothing),
        cmocka_unit_test(test_borrowing),
        cmocka_unit_test(test_queue_limit_holds),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_backoff_follows_virtual_clock),
        cmocka_unit_test(test_nothing_sent),
        cmocka_unit_test(test_bad_objects),
        cmocka_unit_test(test_load_orders_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
