/* test_dashboard.c -- the dashboard's JSON routes (pkg/dashboard) on a real
 * scheduler driven offline (pkg/sandbox): two pools, three nodes, a
 * 0.5-GPU fraction, a pod running in a pool it borrowed, a waiting gang
 * and pending pods. Each case compares exact numbers and strings with
 * what the objects and the scheduler's own records say. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <pthread.h>
#include <jansson.h>

#include "dashboard/dashboard.h"
#include "scheduler/capabilities.h"
#include "topology/topology.h"
#include "gpu/gpu.h"
#include "sandbox/sandbox.h"
#include "scheduler/dashboard.h"
#include "util/util.h"

#define T0 1800000000000LL /* 2027-01-15T08:00:00Z: the virtual clock's start */

/* ---- objects ------------------------------------------------------------ */

static json_t *node(const char *name, const char *cpu, const char *mem, const char *gpus, const char *pool)
{
    json_t *n = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}}, s:{s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}}}", "apiVersion",
                          "v1", "kind", "Node", "metadata", "name", name, "labels", "kubernetes.io/hostname", name,
                          "pool", pool, "status", "capacity", "cpu", cpu, "memory", mem, "pods", "110", "allocatable",
                          "cpu", cpu, "memory", mem, "pods", "110");
    if (gpus) {
        json_t *st = json_object_get(n, "status");
        json_object_set_new(json_object_get(st, "capacity"), "nvidia.com/gpu", json_string(gpus));
        json_object_set_new(json_object_get(st, "allocatable"), "nvidia.com/gpu", json_string(gpus));
    }
    return n;
}

/* A pod of ours in pool, created at created (RFC 3339); node: bound there. */
static json_t *pod(const char *name, const char *cpu, const char *mem, const char *gpus, const char *pool,
                   const char *created, const char *node_name)
{
    json_t *p = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{}, s:{s:s}}, s:{s:s, s:[{s:s, s:s, s:{s:{s:s, s:s}}}]},"
                          " s:{s:s}}",
                          "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "ns",
                          "creationTimestamp", created, "labels", "annotations", "resource.aibee.cn/pool", pool, "spec",
                          "schedulerName", "ai-scheduler", "containers", "name", "c", "image", "x", "resources",
                          "requests", "cpu", cpu, "memory", mem, "status", "phase", "Pending");
    if (gpus) {
        json_t *res =
            json_object_get(json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0), "resources");
        json_object_set_new(json_object_get(res, "requests"), "nvidia.com/gpu", json_string(gpus));
        json_object_set_new(res, "limits", json_pack("{s:s}", "nvidia.com/gpu", gpus));
    }
    if (node_name) {
        json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node_name));
        json_object_set_new(json_object_get(p, "status"), "phase", json_string("Running"));
    }
    return p;
}

static void label(json_t *o, const char *k, const char *v)
{
    json_t *m = json_object_get(o, "metadata");
    if (!json_object_get(m, "labels"))
        json_object_set_new(m, "labels", json_object());
    json_object_set_new(json_object_get(m, "labels"), k, json_string(v));
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

static json_t *queue_obj(const char *name, int gpu_quota)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:{s:i}}}}", "apiVersion", "resource.aibee.cn/v1alpha1", "kind",
                     "Queue", "metadata", "name", name, "spec", "resources", "gpu", "quota", gpu_quota);
}

/* ---- the sandbox and the dashboard on it -------------------------------- */

typedef struct fx {
    sandbox_t *sb;
    dashboard_t *d;
    char big_msg[2048]; /* the FailedScheduling message "big" got */
} fx_t;

static void on_action(void *ud, const sb_action_t *a)
{
    fx_t *f = ud;
    if (a->kind == SB_UNSCHEDULABLE && strcmp(a->name, "big") == 0)
        snprintf(f->big_msg, sizeof f->big_msg, "%s", a->message);
}

static scheduler_t *leading(void *ud)
{
    return sandbox_scheduler(ud);
}

static void add(fx_t *f, json_t *obj)
{
    char err[256] = "";
    if (sandbox_apply(f->sb, "ADDED", obj, err, sizeof err) != 0)
        fail_msg("apply: %s", err);
    json_decref(obj);
}

/* The cluster: pools a (a1: 4 GPUs, a2: cordoned, no GPU) and b (b1: 2
 * GPUs and 2 DRA devices); in a, "lent" (home pool b, 1 GPU) runs on a1 and "half" asks 0.5
 * GPU; gang ns/g (3 x 1 GPU, queue team) waits in b; "big" (pool a) and
 * "early" (pool b) ask more CPU than any node has. */
static void fx_build(fx_t *f, int records)
{
    memset(f, 0, sizeof *f);
    scheduler_opts_t so;
    scheduler_opts_default(&so);
    so.no_decision_records = !records;
    char err[256] = "";
    sandbox_opts_t o = { &so, 7, T0, on_action, f };
    f->sb = sandbox_new(&o, err, sizeof err);
    if (!f->sb)
        fail_msg("sandbox_new: %s", err);
    dashboard_opts_t dopts = { .leading = leading, .ud = f->sb, .version = "test", .identity = "me" };
    f->d = dashboard_new(&dopts);
    add(f, pool("a"));
    add(f, pool("b"));
    add(f, queue_obj("team", 2));
    add(f, node("a1", "16", "64Gi", "4", "a"));
    json_t *a2 = node("a2", "8", "16Gi", NULL, "a");
    json_object_set_new(a2, "spec", json_pack("{s:b}", "unschedulable", 1));
    add(f, a2);
    add(f, node("b1", "16", "64Gi", "2", "b"));
    /* b1 also publishes 2 DRA devices (a complete node-local pool). */
    add(f, json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:{s:s, s:i, s:i}, s:[{s:s}, {s:s}]}}", "apiVersion",
                     "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata", "name", "b1-gpus", "spec", "driver",
                     "gpu.example.com", "nodeName", "b1", "pool", "name", "b1", "generation", 1, "resourceSliceCount",
                     1, "devices", "name", "gpu-0", "name", "gpu-1"));
    add(f, pod("lent", "2", "4Gi", "1", "b", "2027-01-15T07:00:00Z", "a1"));
    json_t *half = pod("half", "1", "1Gi", NULL, "a", "2027-01-15T07:59:00Z", NULL);
    annotate(half, GPU_ANN_FRACTION, "0.5");
    add(f, half);
    json_t *pg = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:i}}", "apiVersion", "scheduling.x-k8s.io/v1alpha1",
                           "kind", "PodGroup", "metadata", "name", "g", "namespace", "ns", "creationTimestamp",
                           "2027-01-15T07:55:00Z", "spec", "minMember", 3);
    /* No queue on the PodGroup: its members' label is the queue the
     * scheduler charges, and the gang's rows must say the same. */
    add(f, pg);
    for (int i = 0; i < 3; i++) {
        char n[8];
        snprintf(n, sizeof n, "g%d", i);
        json_t *p = pod(n, "1", "1Gi", "1", "b", "2027-01-15T07:55:00Z", NULL);
        label(p, "scheduling.x-k8s.io/pod-group", "g");
        label(p, "resource.aibee.cn/queue", "team");
        add(f, p);
    }
    add(f, pod("big", "64", "1Gi", NULL, "a", "2027-01-15T07:58:00Z", NULL));
    add(f, pod("early", "64", "1Gi", NULL, "b", "2027-01-15T07:50:00Z", NULL));
    sandbox_run(f->sb);
    sandbox_advance(f->sb, T0 + 2000);
}

static void fx_free(fx_t *f)
{
    dashboard_free(f->d);
    sandbox_free(f->sb);
}

/* GET path: the status and the body parsed. */
static json_t *get(fx_t *f, const char *path, const char *query, int *code)
{
    char *body = NULL;
    const char *ctype = NULL;
    *code = dashboard_serve(f->d, path, query, &body, &ctype);
    assert_string_equal(ctype, "application/json");
    json_error_t e;
    json_t *doc = json_loads(body, 0, &e);
    if (!doc)
        fail_msg("not JSON (%s): %s", e.text, body);
    free(body);
    return doc;
}

static json_t *get_ok(fx_t *f, const char *path, const char *query)
{
    int code;
    json_t *doc = get(f, path, query, &code);
    if (getenv("DASH_DUMP")) {
        char *t = json_dumps(doc, JSON_INDENT(1));
        fprintf(stderr, "%s?%s:\n%s\n", path, query, t);
        free(t);
    }
    if (code != 200) {
        char *t = json_dumps(doc, 0);
        fail_msg("%s?%s: %d %s", path, query, code, t);
    }
    assert_int_equal(json_integer_value(json_object_get(doc, "now")), T0 + 2000);
    assert_true(json_integer_value(json_object_get(doc, "generation")) > 0);
    return doc;
}

static double num(const json_t *o, const char *path)
{
    /* "a.b.c" through objects */
    char buf[200];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *cur = o;
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
        cur = json_object_get(cur, k);
    if (!json_is_number(cur))
        fail_msg("%s is not a number", path);
    return json_number_value(cur);
}

static const json_t *find(const json_t *arr, const char *key, const char *val)
{
    size_t i;
    const json_t *v;
    json_array_foreach (arr, i, v) {
        const char *s = json_string_value(json_object_get(v, key));
        if (s && strcmp(s, val) == 0)
            return v;
    }
    fail_msg("no %s=%s", key, val);
    return NULL;
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* ---- cases -------------------------------------------------------------- */

static void test_overview(void **st)
{
    (void)st;
    fx_t f;
    fx_build(&f, 1);
    json_t *doc = get_ok(&f, "/api/v1/overview", "");
    const json_t *pools = json_object_get(doc, "pools");
    const json_t *a = find(pools, "name", "a"), *b = find(pools, "name", "b");
    assert_int_equal(num(a, "nodes"), 2);
    assert_int_equal(num(a, "cordoned"), 1);
    assert_int_equal(num(a, "notReady"), 0);
    /* a1: "lent" holds 1 GPU, "half" 0.5 of a shared one: 1.5 of 4 used. */
    assert_true(num(a, "resources.gpu.capacity") == 4);
    assert_true(num(a, "resources.gpu.used") == 1.5);
    assert_true(num(a, "resources.gpu.shared") == 1);
    assert_true(num(a, "resources.gpu.free") == 2.5);
    assert_true(num(a, "resources.cpu.capacity") == 24000);
    assert_true(num(a, "resources.memory.capacity") == 80.0 * 1024 * 1024 * 1024);
    /* pending in a: big (64 CPUs, 1Gi) */
    assert_int_equal(num(a, "pendingPods"), 1);
    assert_true(num(a, "resources.cpu.pending") == 64000);
    assert_true(num(a, "resources.memory.pending") == 1024.0 * 1024 * 1024);
    /* pending in b: the gang's 3 members and early */
    assert_int_equal(num(b, "pendingPods"), 4);
    assert_true(num(b, "resources.gpu.pending") == 3);
    assert_true(num(b, "resources.gpu.used") == 0);
    assert_int_equal(num(b, "waitingGangs"), 1);
    /* a lends to b: "lent" runs on a1 with home pool b. */
    const json_t *lending = json_object_get(doc, "lending");
    assert_int_equal(json_array_size(lending), 1);
    const json_t *l = json_array_get(lending, 0);
    assert_string_equal(str(l, "from"), "a");
    assert_string_equal(str(l, "to"), "b");
    assert_true(num(l, "gpu") == 1 && num(l, "cpu") == 2000 && num(l, "memory") == 4.0 * 1024 * 1024 * 1024);
    assert_int_equal(num(l, "pods"), 1);
    assert_string_equal(str(json_array_get(json_object_get(a, "lentTo"), 0), "pool"), "b");
    assert_string_equal(str(json_array_get(json_object_get(b, "borrowedFrom"), 0), "pool"), "a");
    assert_true(num(doc, "totals.gpu.capacity") == 6);
    assert_string_equal(str(json_object_get(doc, "leader"), "identity"), "me");
    json_decref(doc);
    fx_free(&f);
}

static void test_nodes(void **st)
{
    (void)st;
    fx_t f;
    fx_build(&f, 1);
    json_t *doc = get_ok(&f, "/api/v1/nodes", "pool=a");
    assert_int_equal(num(doc, "total"), 2);
    const json_t *items = json_object_get(doc, "items");
    const json_t *a1 = json_array_get(items, 0), *a2 = json_array_get(items, 1);
    assert_string_equal(str(a1, "name"), "a1");
    assert_string_equal(str(a2, "name"), "a2");
    assert_true(json_is_true(json_object_get(a2, "cordoned")));
    assert_true(json_is_true(json_object_get(a1, "ready")));
    assert_true(num(a1, "gpu.whole") == 4 && num(a1, "gpu.used") == 1.5 && num(a1, "gpu.shared") == 1 &&
                num(a1, "gpu.free") == 2.5);
    const json_t *slots = json_object_get(a1, "slots");
    assert_int_equal(json_array_size(slots), 1);
    const json_t *s0 = json_array_get(slots, 0);
    assert_true(num(s0, "used") == 0.5);
    const json_t *fr = json_array_get(json_object_get(s0, "fractions"), 0);
    assert_string_equal(str(fr, "pod"), "ns/half");
    assert_true(num(fr, "fraction") == 0.5);
    const char *res = str(s0, "reservation");
    assert_non_null(res);
    assert_memory_equal(res, GPU_RESERVATION_NS "/" GPU_RESERVATION_PREFIX "a1-", strlen(GPU_RESERVATION_NS "/") + 11);
    json_decref(doc);
    /* paging and the name filter */
    doc = get_ok(&f, "/api/v1/nodes", "limit=1&offset=1");
    assert_int_equal(num(doc, "total"), 3);
    assert_string_equal(str(json_array_get(json_object_get(doc, "items"), 0), "name"), "a2");
    json_decref(doc);
    doc = get_ok(&f, "/api/v1/nodes", "q=b");
    assert_int_equal(num(doc, "total"), 1);
    json_decref(doc);
    /* the map: pools by index, a2 cordoned (1), b1's 2 DRA devices free */
    doc = get_ok(&f, "/api/v1/nodes/map", "");
    char *t = json_dumps(json_object_get(doc, "nodes"), JSON_COMPACT);
    assert_string_equal(t, "[[\"a1\",1,0,4,1.5,1,18,0,0],[\"a2\",1,1,0,0,0,0,0,0],[\"b1\",2,0,2,0,0,0,2,0]]");
    free(t);
    t = json_dumps(json_object_get(doc, "fields"), JSON_COMPACT);
    assert_string_equal(
        t, "[\"name\",\"pool\",\"state\",\"gpu\",\"gpuUsed\",\"gpuShared\",\"cpuPct\",\"dra\",\"draUsed\"]");
    free(t);
    t = json_dumps(json_object_get(doc, "pools"), JSON_COMPACT);
    assert_string_equal(t, "[\"default\",\"a\",\"b\"]");
    free(t);
    json_decref(doc);
    fx_free(&f);
}

static void test_pending(void **st)
{
    (void)st;
    fx_t f;
    fx_build(&f, 1);
    json_t *doc = get_ok(&f, "/api/v1/pending", "");
    assert_int_equal(num(doc, "total"), 3); /* early, the gang (one row), big */
    const json_t *items = json_object_get(doc, "items");
    const json_t *e = json_array_get(items, 0), *g = json_array_get(items, 1), *b = json_array_get(items, 2);
    assert_string_equal(str(e, "name"), "early");
    assert_int_equal(num(e, "waitingSeconds"), 602);
    assert_string_equal(str(g, "kind"), "gang");
    assert_string_equal(str(g, "name"), "g");
    assert_string_equal(str(g, "queue"), "team");
    assert_string_equal(str(g, "pool"), "b");
    assert_string_equal(str(g, "gang"), "ns/g");
    assert_int_equal(num(g, "waitingSeconds"), 302);
    assert_string_equal(str(b, "name"), "big");
    assert_string_equal(str(b, "queue"), "default");
    assert_int_equal(num(b, "waitingSeconds"), 122);
    assert_true(json_is_null(json_object_get(b, "gang")));
    /* big's reason is its decision record's hint, else its message */
    assert_true(json_is_true(json_object_get(b, "hasDecision")));
    json_t *rec = scheduler_explain(sandbox_scheduler(f.sb), "pod", "ns", "big");
    assert_non_null(rec);
    const char *hint = str(rec, "hint");
    assert_string_equal(str(b, "reason"), hint && hint[0] ? hint : str(rec, "message"));
    json_decref(rec);
    json_decref(doc);
    /* ascending wait, a pool, a substring, a page */
    doc = get_ok(&f, "/api/v1/pending", "order=asc");
    assert_string_equal(str(json_array_get(json_object_get(doc, "items"), 0), "name"), "big");
    json_decref(doc);
    doc = get_ok(&f, "/api/v1/pending", "pool=b&limit=1&offset=1");
    assert_int_equal(num(doc, "total"), 2);
    assert_int_equal(num(doc, "limit"), 1);
    assert_string_equal(str(json_array_get(json_object_get(doc, "items"), 0), "name"), "g");
    json_decref(doc);
    doc = get_ok(&f, "/api/v1/pending", "q=ns%2Fbi&sort=name");
    assert_int_equal(num(doc, "total"), 1);
    json_decref(doc);
    doc = get_ok(&f, "/api/v1/pending", "sort=queue&order=desc");
    assert_string_equal(str(json_array_get(json_object_get(doc, "items"), 0), "queue"), "team");
    json_decref(doc);
    /* bad parameters: 400 Status */
    int code;
    doc = get(&f, "/api/v1/pending", "limit=501", &code);
    assert_int_equal(code, 400);
    assert_string_equal(str(doc, "kind"), "Status");
    json_decref(doc);
    doc = get(&f, "/api/v1/pending", "sort=size", &code);
    assert_int_equal(code, 400);
    json_decref(doc);
    doc = get(&f, "/api/v1/nope", "", &code);
    assert_int_equal(code, 404);
    json_decref(doc);
    fx_free(&f);
}

/* Without decision records, the reason is the FailedScheduling message the
 * scheduler wrote, exactly. */
static void test_pending_reason_without_records(void **st)
{
    (void)st;
    fx_t f;
    fx_build(&f, 0);
    assert_true(f.big_msg[0] != 0);
    json_t *doc = get_ok(&f, "/api/v1/pending", "q=big");
    const json_t *b = json_array_get(json_object_get(doc, "items"), 0);
    assert_false(json_is_true(json_object_get(b, "hasDecision")));
    assert_string_equal(str(b, "reason"), f.big_msg);
    json_decref(doc);
    fx_free(&f);
}

/* A placed gang that asked for one topology domain: the domain it holds
 * is the level's label on its members' node. */
static void test_gang_topology_domain(void **st)
{
    (void)st;
    fx_t f;
    fx_build(&f, 1);
    add(&f, pool("t"));
    json_t *n = node("t1", "8", "16Gi", "2", "t");
    label(n, "rack", "r7");
    add(&f, n);
    json_t *pg =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}}, s:{s:i}}", "apiVersion", "scheduling.x-k8s.io/v1alpha1",
                  "kind", "PodGroup", "metadata", "name", "tg", "namespace", "ns", "creationTimestamp",
                  "2027-01-15T07:55:00Z", "annotations", TOPO_ANN_REQUIRED, "rack", "spec", "minMember", 2);
    add(&f, pg);
    for (int i = 0; i < 2; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "tg%d", i);
        json_t *p = pod(nm, "1", "1Gi", "1", "t", "2027-01-15T07:55:00Z", NULL);
        label(p, "scheduling.x-k8s.io/pod-group", "tg");
        add(&f, p);
    }
    sandbox_run(f.sb);
    json_t *doc = get_ok(&f, "/api/v1/gangs", "q=tg");
    assert_int_equal(num(doc, "total"), 1);
    const json_t *g = json_array_get(json_object_get(doc, "items"), 0);
    assert_int_equal(num(g, "placed"), 2);
    const json_t *t = json_object_get(g, "topology");
    assert_string_equal(str(t, "key"), "rack");
    assert_true(json_is_true(json_object_get(t, "required")));
    assert_string_equal(str(t, "domain"), "r7");
    json_decref(doc);
    fx_free(&f);
}

static void test_gangs_and_queues(void **st)
{
    (void)st;
    fx_t f;
    fx_build(&f, 1);
    json_t *doc = get_ok(&f, "/api/v1/gangs", "");
    assert_int_equal(num(doc, "total"), 1);
    const json_t *g = json_array_get(json_object_get(doc, "items"), 0);
    assert_string_equal(str(g, "name"), "g");
    assert_string_equal(str(g, "queue"), "team");
    assert_string_equal(str(g, "pool"), "b");
    assert_int_equal(num(g, "placed"), 0);
    assert_int_equal(num(g, "minMember"), 3);
    assert_int_equal(num(g, "members"), 3);
    assert_true(json_is_null(json_object_get(g, "waitingBehind")));
    assert_true(str(g, "reason") && str(g, "reason")[0]);
    json_decref(doc);

    doc = get_ok(&f, "/api/v1/queues", "");
    const json_t *qs = json_object_get(doc, "queues");
    const json_t *team = find(qs, "name", "team");
    assert_true(num(team, "resources.gpu.quota") == 2);
    assert_true(json_is_null(json_object_get(json_object_get(json_object_get(team, "resources"), "gpu"), "limit")));
    assert_true(num(team, "resources.gpu.pending") == 3);
    assert_int_equal(num(team, "pendingPods"), 3);
    assert_true(json_is_null(json_object_get(team, "parent")));
    json_decref(doc);

    /* history: one sample, then the points since */
    dashboard_history_tick(f.d, T0 + 2000);
    doc = get_ok(&f, "/api/v1/queues/history", "queue=team&resource=gpu");
    assert_int_equal(num(doc, "intervalMs"), 10000);
    const json_t *pts = json_object_get(doc, "points");
    assert_int_equal(json_array_size(pts), 1);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(pts, 0), 0)), T0 + 2000);
    json_decref(doc);
    int code;
    doc = get(&f, "/api/v1/queues/history", "queue=nope", &code);
    assert_int_equal(code, 404);
    json_decref(doc);
    doc = get_ok(&f, "/api/v1/queues/history", "queue=team&since=1900000000000");
    assert_int_equal(json_array_size(json_object_get(doc, "points")), 0);
    json_decref(doc);
    /* the ring keeps the last 720 samples (2 h at 10 s) */
    for (int i = 1; i <= 730; i++)
        dashboard_history_tick(f.d, T0 + 2000 + (int64_t)i * 10000);
    doc = get_ok(&f, "/api/v1/queues/history", "queue=team&resource=cpu");
    pts = json_object_get(doc, "points");
    assert_int_equal(json_array_size(pts), 720);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(pts, 0), 0)), T0 + 2000 + 11 * 10000);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(pts, 719), 0)), T0 + 2000 + 730 * 10000);
    json_decref(doc);
    doc = get_ok(&f, "/api/v1/queues/history", "queue=team&since=1800007292001");
    assert_int_equal(json_array_size(json_object_get(doc, "points")), 1);
    json_decref(doc);
    doc = get(&f, "/api/v1/queues/history", "queue=team&resource=disk", &code);
    assert_int_equal(code, 400);
    json_decref(doc);
    fx_free(&f);
}

static void test_info_and_follower(void **st)
{
    (void)st;
    fx_t f;
    fx_build(&f, 1);
    json_t *doc = get_ok(&f, "/api/v1/info", "");
    assert_string_equal(str(doc, "version"), "test");
    assert_true(json_is_true(json_object_get(doc, "isLeader")));
    assert_int_equal(num(doc, "historyKeepMs"), 7200000);
    json_decref(doc);
    doc = get_ok(&f, "/api/v1/multicluster", "");
    assert_true(json_is_false(json_object_get(doc, "served")));
    json_decref(doc);
    /* the generation moves with a change the dashboard shows */
    uint64_t g0 = scheduler_generation(sandbox_scheduler(f.sb));
    add(&f, node("b2", "4", "8Gi", NULL, "b"));
    assert_true(scheduler_generation(sandbox_scheduler(f.sb)) > g0);
    /* a follower: 503 everywhere but info */
    dashboard_opts_t o = { .leading = NULL, .version = "test", .identity = "me" };
    dashboard_t *fol = dashboard_new(&o);
    char *body = NULL;
    const char *ctype;
    assert_int_equal(dashboard_serve(fol, "/api/v1/pending", "", &body, &ctype), 503);
    assert_non_null(strstr(body, "not the leader"));
    free(body);
    assert_int_equal(dashboard_serve(fol, "/api/v1/multicluster", "", &body, &ctype), 503);
    free(body);
    assert_int_equal(dashboard_serve(fol, "/api/v1/info", "", &body, &ctype), 200);
    assert_non_null(strstr(body, "\"isLeader\":false"));
    free(body);
    dashboard_free(fol);
    fx_free(&f);
}

/* Routes read from another thread while the scheduler takes pods and
 * binds them: the collectors take the scheduler's locks as its own readers
 * do (run under TSan and the sanitizer builds' lock-order check). */
typedef struct reader {
    dashboard_t *d;
    int stop, answers;
} reader_t;

static void *reader_main(void *arg)
{
    reader_t *r = arg;
    static const char *const paths[] = { "/api/v1/pending", "/api/v1/nodes", "/api/v1/nodes/map", "/api/v1/overview",
                                         "/api/v1/queues",  "/api/v1/gangs", "/api/v1/info" };
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
            char *body = NULL;
            const char *ctype;
            if (dashboard_serve(r->d, paths[i], "", &body, &ctype) == 200)
                __atomic_add_fetch(&r->answers, 1, __ATOMIC_RELEASE);
            free(body);
        }
        dashboard_history_tick(r->d, T0);
    }
    return NULL;
}

static void test_concurrent_reader(void **st)
{
    (void)st;
    fx_t f;
    fx_build(&f, 1);
    reader_t r = { f.d, 0, 0 };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, reader_main, &r), 0);
    for (int i = 0; i < 40; i++) {
        char n[16];
        snprintf(n, sizeof n, "more%d", i);
        add(&f, pod(n, "100m", "64Mi", NULL, i % 2 ? "a" : "b", "2027-01-15T07:59:30Z", NULL));
        if (i % 8 == 7)
            sandbox_run(f.sb);
    }
    sandbox_run(f.sb);
    /* On a loaded machine the reader may not have run yet: it must have
     * answered at least once (within 30 s) for the test to mean anything. */
    for (int i = 0; i < 3000 && !__atomic_load_n(&r.answers, __ATOMIC_ACQUIRE); i++)
        usleep(10000);
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    assert_true(r.answers > 0);
    int code;
    json_t *doc = get(&f, "/api/v1/pending", "q=more", &code);
    assert_int_equal(code, 200);
    assert_int_equal(json_integer_value(json_object_get(doc, "total")), 0); /* all 40 bound */
    json_decref(doc);
    fx_free(&f);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overview),          cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_pending),           cmocka_unit_test(test_pending_reason_without_records),
        cmocka_unit_test(test_gangs_and_queues),  cmocka_unit_test(test_gang_topology_domain),
        cmocka_unit_test(test_info_and_follower), cmocka_unit_test(test_concurrent_reader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
