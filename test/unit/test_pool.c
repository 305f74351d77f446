/* test_pool.c -- Pool spec parsing, partition, borrowing rule, usage sums
 * and the .status document. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "pool/pool.h"
#include "util/util.h"

#define GI (1024LL * 1024 * 1024)

static json_t *load(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        fail_msg("bad fixture: %s: %s", e.text, s);
    return j;
}

static int parse(pool_spec_t *p, const char *s, char *err, size_t errlen)
{
    json_t *j = load(s);
    int rc = pool_spec_from_json(p, j, err, errlen);
    json_decref(j);
    return rc;
}

/* A label set of up to two labels, sorted as labels_t requires. */
typedef struct {
    label_t items[2];
    labels_t l;
} lbl_t;

static const labels_t *mklabels(lbl_t *b, const char *k1, const char *v1, const char *k2, const char *v2)
{
    b->l.items = b->items;
    b->l.n = 0;
    if (k1)
        b->items[b->l.n++] = (label_t){ (char *)k1, (char *)v1 };
    if (k2)
        b->items[b->l.n++] = (label_t){ (char *)k2, (char *)v2 };
    if (b->l.n == 2 && k1 && k2 && strcmp(k1, k2) > 0) {
        label_t t = b->items[0];
        b->items[0] = b->items[1];
        b->items[1] = t;
    }
    return &b->l;
}

static void test_parse_full(void **st)
{
    pool_spec_t p;
    char err[256] = "";
    int rc = parse(&p,
                   "{\"apiVersion\":\"resource.aibee.cn/v1alpha1\",\"kind\":\"Pool\","
                   " \"metadata\":{\"name\":\"demo\",\"uid\":\"u-1\",\"resourceVersion\":\"42\",\"generation\":3,"
                   "   \"creationTimestamp\":\"2019-05-24T05:37:07Z\"},"
                   " \"spec\":{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"demo\"},"
                   "   \"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]}]},"
                   "   \"disablePreemption\":true,\"disableBorrowing\":false,\"disableSharing\":true,"
                   "   \"borrowingPools\":[\"gpu-pool\",\"cpu-pool\"]}}",
                   err, sizeof(err));
    assert_int_equal(rc, 0);
    assert_string_equal(p.name, "demo");
    assert_string_equal(p.uid, "u-1");
    assert_string_equal(p.resource_version, "42");
    assert_int_equal(p.generation, 3);
    assert_int_equal(p.created_ms, 1558676227000LL);
    assert_int_equal(p.disable_preemption, 1);
    assert_int_equal(p.disable_borrowing, 0);
    assert_int_equal(p.disable_sharing, 1);
    assert_int_equal(p.nborrowing, 2);
    assert_string_equal(p.borrowing_pools[0], "gpu-pool");
    assert_string_equal(p.borrowing_pools[1], "cpu-pool");

    lbl_t b;
    assert_true(selector_matches(&p.selector, mklabels(&b, "pool", "demo", "zone", "a"), "n1"));
    assert_false(selector_matches(&p.selector, mklabels(&b, "pool", "demo", "zone", "c"), "n1"));
    assert_false(selector_matches(&p.selector, mklabels(&b, "pool", "other", "zone", "a"), "n1"));
    pool_spec_free(&p);
    assert_null(p.name);
}

static void test_parse_minimal(void **st)
{
    pool_spec_t p;
    char err[256] = "";
    assert_int_equal(parse(&p, "{\"metadata\":{\"name\":\"bare\"}}", err, sizeof(err)), 0);
    assert_string_equal(p.name, "bare");
    assert_string_equal(p.uid, "");
    assert_string_equal(p.resource_version, "");
    assert_int_equal(p.selector.n, 0);
    assert_int_equal(p.disable_preemption + p.disable_borrowing + p.disable_sharing, 0);
    assert_int_equal(p.nborrowing, 0);
    assert_null(p.borrowing_pools);
    pool_spec_free(&p);

    /* nulls read as absent, an empty selector stays empty */
    assert_int_equal(parse(&p,
                           "{\"metadata\":{\"name\":\"n\",\"uid\":null},\"spec\":{\"nodeSelector\":{},"
                           "\"disableSharing\":null,\"borrowingPools\":[]}}",
                           err, sizeof(err)),
                     0);
    assert_int_equal(p.selector.n, 0);
    assert_int_equal(p.disable_sharing, 0);
    assert_int_equal(p.nborrowing, 0);
    pool_spec_free(&p);

    assert_int_equal(parse(&p, "{\"metadata\":{\"name\":\"s\"},\"spec\":null}", err, sizeof(err)), 0);
    pool_spec_free(&p);
}

static void test_parse_invalid(void **st)
{
    static const struct {
        const char *json, *want;
    } bad[] = {
        { "[]", "not an object" },
        { "{}", "metadata" },
        { "{\"metadata\":{\"name\":\"\"}}", "metadata.name" },
        { "{\"metadata\":{\"name\":7}}", "metadata.name" },
        { "{\"metadata\":{\"name\":\"p\",\"uid\":5}}", "metadata.uid" },
        { "{\"metadata\":{\"name\":\"p\",\"generation\":\"1\"}}", "generation" },
        { "{\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"yesterday\"}}", "creationTimestamp" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":[]}", "spec" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"disableSharing\":\"false\"}}", "disableSharing" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"disablePreemption\":1}}", "disablePreemption" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"disableBorrowing\":\"true\"}}", "disableBorrowing" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":\"gpu=true\"}}", "nodeSelector" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"gpu\":true}}}}",
          "matchLabels" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":[]}}}", "matchLabels" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchExpressions\":{}}}}", "matchExpressions" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchExpressions\":"
          "[{\"key\":\"a\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}}}",
          "operator" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchExpressions\":"
          "[{\"key\":\"a\",\"operator\":\"Equals\",\"values\":[\"1\"]}]}}}",
          "operator" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchExpressions\":"
          "[{\"key\":\"a\",\"operator\":\"In\"}]}}}",
          "needs values" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchExpressions\":"
          "[{\"key\":\"a\",\"operator\":\"NotIn\",\"values\":[]}]}}}",
          "needs values" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchExpressions\":"
          "[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}}}",
          "no values" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchExpressions\":"
          "[{\"key\":\"a\",\"operator\":\"In\",\"values\":[1]}]}}}",
          "values[0]" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchExpressions\":"
          "[{\"operator\":\"Exists\"}]}}}",
          "key" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"matchExpressions\":[\"x\"]}}}", "key" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"borrowingPools\":\"gpu-pool\"}}", "borrowingPools" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"borrowingPools\":[\"a\",3]}}", "borrowingPools[1]" },
        { "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"borrowingPools\":[\"\"]}}", "borrowingPools[0]" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pool_spec_t p;
        char err[256] = "";
        int rc = parse(&p, bad[i].json, err, sizeof(err));
        if (rc != -1)
            fail_msg("accepted: %s", bad[i].json);
        if (!strstr(err, bad[i].want))
            fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i].json, err, bad[i].want);
        assert_null(p.name); /* nothing left to free on failure */
        pool_spec_free(&p);  /* and freeing it anyway is harmless */
    }
    /* spec errors name the pool, for the warning line */
    pool_spec_t p;
    char err[256] = "";
    assert_int_equal(
        parse(&p, "{\"metadata\":{\"name\":\"gpu-pool\"},\"spec\":{\"disableSharing\":\"no\"}}", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "gpu-pool"));
    /* a NULL error buffer is fine */
    assert_int_equal(pool_spec_from_json(&p, NULL, NULL, 0), -1);
}

static void parse_ok(pool_spec_t *p, const char *s)
{
    char err[256] = "";
    if (parse(p, s, err, sizeof(err)) < 0)
        fail_msg("%s: %s", s, err);
}

static void test_partition(void **st)
{
    pool_spec_t s[3];
    parse_ok(&s[0],
             "{\"metadata\":{\"name\":\"gpu-pool\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"gpu\":\"true\"}}}}");
    parse_ok(&s[1],
             "{\"metadata\":{\"name\":\"cpu-pool\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"cpu\":\"true\"}}}}");
    parse_ok(&s[2], "{\"metadata\":{\"name\":\"empty\"},\"spec\":{\"nodeSelector\":{}}}");
    lbl_t b;
    assert_int_equal(pool_partition_node(s, 3, mklabels(&b, "gpu", "true", NULL, NULL), "n1"), 0);
    assert_int_equal(pool_partition_node(s, 3, mklabels(&b, "cpu", "true", "x", "y"), "n2"), 1);
    /* no match, conflicting matches, no labels: default */
    assert_int_equal(pool_partition_node(s, 3, mklabels(&b, "gpu", "false", NULL, NULL), "n3"), -1);
    assert_int_equal(pool_partition_node(s, 3, mklabels(&b, "cpu", "true", "gpu", "true"), "n4"), -1);
    assert_int_equal(pool_partition_node(s, 3, mklabels(&b, NULL, NULL, NULL, NULL), "n5"), -1);
    assert_int_equal(pool_partition_node(s, 3, NULL, "n6"), -1);
    /* the empty-selector pool claims nothing, so it never causes a conflict */
    assert_int_equal(pool_partition_node(s + 2, 1, mklabels(&b, "any", "thing", NULL, NULL), "n7"), -1);
    assert_int_equal(pool_partition_node(s, 0, mklabels(&b, "gpu", "true", NULL, NULL), "n8"), -1);
    for (int i = 0; i < 3; i++)
        pool_spec_free(&s[i]);
}

static void test_may_borrow(void **st)
{
    pool_spec_t a, b, c, d;
    parse_ok(&a, "{\"metadata\":{\"name\":\"a\"}}");
    parse_ok(&b, "{\"metadata\":{\"name\":\"b\"}}");
    parse_ok(&c, "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"disableSharing\":true,\"disableBorrowing\":true}}");
    parse_ok(&d, "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"borrowingPools\":[\"b\"]}}");
    assert_true(pool_may_borrow(&a, &b));
    assert_true(pool_may_borrow(&b, &a));
    assert_false(pool_may_borrow(&a, &a)); /* never from itself */
    assert_false(pool_may_borrow(&a, &c)); /* c does not share */
    assert_false(pool_may_borrow(&c, &a)); /* c does not borrow */
    assert_true(pool_may_borrow(&d, &b));  /* listed */
    assert_false(pool_may_borrow(&d, &a)); /* not listed */
    assert_true(pool_may_borrow(&a, &d));
    assert_false(pool_may_borrow(NULL, &a));

    pool_spec_t def;
    pool_spec_default(&def);
    assert_string_equal(def.name, "default");
    assert_int_equal(def.selector.n, 0);
    assert_int_equal(def.disable_preemption + def.disable_borrowing + def.disable_sharing + def.nborrowing, 0);
    assert_true(pool_may_borrow(&a, &def));
    assert_true(pool_may_borrow(&def, &a));
    pool_spec_free(&def);
    pool_spec_free(&a);
    pool_spec_free(&b);
    pool_spec_free(&c);
    pool_spec_free(&d);
}

/* ---- usage: hand-built nodes and pods (no parser in the way) */

static node_t mknode(const char *name, lbl_t *b, const char *k, const char *v, int64_t mcpu, int64_t mem, int64_t gpu)
{
    node_t n;
    memset(&n, 0, sizeof(n));
    n.refs = 1;
    n.name = (char *)name;
    n.labels = *mklabels(b, k, v, NULL, NULL);
    res_zero(&n.capacity);
    n.capacity.milli_cpu = mcpu;
    n.capacity.memory = mem;
    n.capacity.ephemeral = 100 * GI;
    n.capacity.pods = 110;
    if (gpu)
        res_add_scalar(&n.capacity, RES_GPU, gpu);
    n.allocatable = n.capacity;
    n.allocatable.milli_cpu = mcpu - 500; /* reserved */
    return n;
}

static pod_t mkpod(const char *name, const char *home, const char *node, const char *sched, pod_phase_t phase,
                   int64_t mcpu, int64_t gpu)
{
    pod_t p;
    memset(&p, 0, sizeof(p));
    p.refs = 1;
    p.ns = (char *)"ns";
    p.name = p.key = (char *)name;
    p.pool = (char *)home;
    p.node_name = (char *)node;
    p.nominated_node = (char *)"";
    p.borrowed_from = (char *)"";
    p.scheduler_name = (char *)sched;
    p.phase = phase;
    res_zero(&p.requests);
    p.requests.milli_cpu = mcpu;
    p.requests.memory = GI;
    if (gpu)
        res_add_scalar(&p.requests, RES_GPU, gpu);
    return p;
}

typedef struct {
    pool_spec_t specs[2];
    lbl_t lb[4];
    node_t nodes[4];
    pod_t pods[12];
    pool_usage_t u[3];
} world_t;

static void build_world(world_t *w)
{
    parse_ok(&w->specs[0],
             "{\"metadata\":{\"name\":\"cpu-pool\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"cpu\":\"true\"}}}}");
    parse_ok(&w->specs[1],
             "{\"metadata\":{\"name\":\"gpu-pool\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"gpu\":\"true\"}}}}");
    w->nodes[0] = mknode("g1", &w->lb[0], "gpu", "true", 16000, 64 * GI, 8);
    w->nodes[1] = mknode("g2", &w->lb[1], "gpu", "true", 16000, 64 * GI, 8);
    w->nodes[2] = mknode("c1", &w->lb[2], "cpu", "true", 8000, 32 * GI, 0);
    w->nodes[3] = mknode("d1", &w->lb[3], NULL, NULL, 4000, 16 * GI, 0);
    int i = 0;
    w->pods[i++] = mkpod("own-gpu", "gpu-pool", "g1", "ai-scheduler", PHASE_RUNNING, 2000, 2);
    w->pods[i++] = mkpod("cpu-on-gpu", "cpu-pool", "g2", "ai-scheduler", PHASE_RUNNING, 1500, 0);
    w->pods[i++] = mkpod("unknown-home", "nosuch", "d1", "ai-scheduler", PHASE_RUNNING, 500, 0);
    w->pods[i++] = mkpod("gpu-on-default", "gpu-pool", "d1", "other", PHASE_RUNNING, 1000, 0);
    w->pods[i++] = mkpod("done", "gpu-pool", "g1", "ai-scheduler", PHASE_SUCCEEDED, 8000, 4);
    w->pods[i++] = mkpod("ghost", "cpu-pool", "gone-node", "ai-scheduler", PHASE_RUNNING, 3000, 0);
    w->pods[i++] = mkpod("wait-cpu", "cpu-pool", "", "ai-scheduler", PHASE_PENDING, 250, 0);
    w->pods[i++] = mkpod("wait-other-sched", "cpu-pool", "", "default-scheduler", PHASE_PENDING, 250, 0);
    w->pods[i++] = mkpod("failed-unbound", "cpu-pool", "", "ai-scheduler", PHASE_FAILED, 250, 0);
    w->pods[i++] = mkpod("wait-default", "", "", "ai-scheduler", PHASE_PENDING, 100, 1);
    w->pods[i] = mkpod("wait-deleting", "gpu-pool", "", "ai-scheduler", PHASE_PENDING, 100, 1);
    w->pods[i++].deleting = 1;
    w->pods[i++] = mkpod("own-cpu", "cpu-pool", "c1", "ai-scheduler", PHASE_RUNNING, 1000, 0);

    node_t *np[4];
    pod_t *pp[12];
    for (int k = 0; k < 4; k++)
        np[k] = &w->nodes[k];
    for (int k = 0; k < 12; k++)
        pp[k] = &w->pods[k];
    pool_usage_compute(w->specs, 2, np, 4, pp, 12, "ai-scheduler", w->u);
}

static void free_world(world_t *w)
{
    pool_spec_free(&w->specs[0]);
    pool_spec_free(&w->specs[1]);
}

static void test_usage(void **st)
{
    world_t w;
    build_world(&w);
    const pool_usage_t *cpu = &w.u[0], *gpu = &w.u[1], *def = &w.u[2];

    assert_int_equal(cpu->nodes, 1);
    assert_int_equal(gpu->nodes, 2);
    assert_int_equal(def->nodes, 1);
    assert_int_equal(gpu->capacity.milli_cpu, 32000);
    assert_int_equal(gpu->allocatable.milli_cpu, 31000);
    assert_int_equal(res_get_scalar(&gpu->capacity, RES_GPU), 16);
    assert_int_equal(gpu->capacity.memory, 128 * GI);
    assert_int_equal(gpu->capacity.pods, 220);

    /* gpu-pool: its own pod and cpu-pool's borrower; the terminal pod counts nothing */
    assert_int_equal(gpu->used.milli_cpu, 3500);
    assert_int_equal(res_get_scalar(&gpu->used, RES_GPU), 2);
    assert_int_equal(gpu->pods_running, 2);
    assert_int_equal(gpu->shared.milli_cpu, 1500);
    assert_int_equal(gpu->shared.pods, 1);
    assert_int_equal(gpu->borrowed.milli_cpu, 1000); /* its pod on d1 */
    assert_int_equal(gpu->pending, 0);               /* the deleting one is not pending */

    /* cpu-pool: own pod on c1; borrower on g2; ghost node ignored */
    assert_int_equal(cpu->used.milli_cpu, 1000);
    assert_int_equal(cpu->used.memory, GI);
    assert_int_equal(cpu->pods_running, 1);
    assert_int_equal(cpu->shared.milli_cpu, 0);
    assert_int_equal(cpu->borrowed.milli_cpu, 1500);
    assert_int_equal(cpu->borrowed.pods, 1);
    assert_int_equal(cpu->pending, 1); /* other scheduler and failed excluded */
    assert_int_equal(cpu->pending_req.milli_cpu, 250);

    /* default: unknown-home pod is its own; gpu-pool's pod there is shared */
    assert_int_equal(def->used.milli_cpu, 1500);
    assert_int_equal(def->pods_running, 2);
    assert_int_equal(def->shared.milli_cpu, 1000);
    assert_int_equal(def->borrowed.milli_cpu, 0);
    assert_int_equal(def->pending, 1);
    assert_int_equal(res_get_scalar(&def->pending_req, RES_GPU), 1);
    free_world(&w);
}

static void test_usage_empty(void **st)
{
    pool_usage_t u[1];
    memset(u, 0x5a, sizeof(u));
    pool_usage_compute(NULL, 0, NULL, 0, NULL, 0, "ai-scheduler", u);
    assert_int_equal(u[0].nodes, 0);
    assert_int_equal(u[0].pending, 0);
    assert_int_equal(u[0].used.milli_cpu, 0);
    assert_int_equal(u[0].capacity.nscalar, 0);
}

/* A pod with scheduling gates is not waiting for a node: it counts as gated,
 * not pending (kube's pending_pods{queue="gated"}); a pod with DRA claims
 * ai-scheduler does not allocate is pending (unschedulable, as kube shows
 * it). Default pool: pending = plain + claims = 2 pods, 250m + 500m = 750m;
 * gated = 1 (its 4000m is in no sum). */
static void test_usage_gated(void **st)
{
    pod_t pods[3] = {
        mkpod("plain", "", "", "ai-scheduler", PHASE_PENDING, 250, 0),
        mkpod("gated", "", "", "ai-scheduler", PHASE_PENDING, 4000, 0),
        mkpod("claims", "", "", "ai-scheduler", PHASE_PENDING, 500, 0),
    };
    pods[1].ngates = 1;
    pods[2].nclaims = 1;
    pod_t *pp[3] = { &pods[0], &pods[1], &pods[2] };
    pool_usage_t u[1];
    pool_usage_compute(NULL, 0, NULL, 0, pp, 3, "ai-scheduler", u);
    assert_int_equal(u[0].pending, 2);
    assert_int_equal(u[0].pending_req.milli_cpu, 750);
    assert_int_equal(u[0].gated, 1);
    json_t *s = pool_usage_to_status(&u[0]);
    assert_int_equal(json_integer_value(json_object_get(s, "pending")), 2);
    assert_int_equal(json_integer_value(json_object_get(s, "gated")), 1);
    json_decref(s);
}

static const char *status_str(json_t *st, const char *list, const char *res)
{
    const char *s = json_string_value(json_object_get(json_object_get(st, list), res));
    if (!s)
        fail_msg("status.%s[%s] missing", list, res);
    return s;
}

static void test_status(void **st)
{
    world_t w;
    build_world(&w);
    json_t *s = pool_usage_to_status(&w.u[1]); /* gpu-pool */
    assert_string_equal(status_str(s, "capacity", "cpu"), "32");
    assert_string_equal(status_str(s, "allocatable", "cpu"), "31");
    assert_string_equal(status_str(s, "used", "cpu"), "3500m");
    assert_string_equal(status_str(s, "requests", "cpu"), "3500m");
    assert_string_equal(status_str(s, "shared", "cpu"), "1500m");
    assert_string_equal(status_str(s, "borrowed", "cpu"), "1");
    assert_string_equal(status_str(s, "free", "cpu"), "27500m");
    assert_string_equal(status_str(s, "capacity", "memory"), "128Gi");
    assert_string_equal(status_str(s, "used", "memory"), "2Gi");
    assert_string_equal(status_str(s, "free", "memory"), "126Gi");
    assert_string_equal(status_str(s, "capacity", "ephemeral-storage"), "200Gi");
    assert_string_equal(status_str(s, "capacity", "nvidia.com/gpu"), "16");
    assert_string_equal(status_str(s, "used", "nvidia.com/gpu"), "2");
    assert_string_equal(status_str(s, "free", "nvidia.com/gpu"), "14");
    assert_string_equal(status_str(s, "shared", "nvidia.com/gpu"), "0");
    assert_string_equal(status_str(s, "capacity", "pods"), "220");
    assert_string_equal(status_str(s, "used", "pods"), "2");
    assert_string_equal(status_str(s, "free", "pods"), "218");
    assert_int_equal(json_integer_value(json_object_get(s, "nodes")), 2);
    assert_true(json_is_integer(json_object_get(s, "pending")));
    assert_int_equal(json_integer_value(json_object_get(s, "pending")), 0);
    json_decref(s);

    s = pool_usage_to_status(&w.u[0]); /* cpu-pool: pending 1 */
    assert_int_equal(json_integer_value(json_object_get(s, "pending")), 1);
    assert_string_equal(status_str(s, "used", "cpu"), "1");
    json_decref(s);
    free_world(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_full),  cmocka_unit_test(test_parse_minimal), cmocka_unit_test(test_parse_invalid),
        cmocka_unit_test(test_partition),   cmocka_unit_test(test_may_borrow),    cmocka_unit_test(test_usage),
        cmocka_unit_test(test_usage_empty), cmocka_unit_test(test_usage_gated),   cmocka_unit_test(test_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
