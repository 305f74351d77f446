/* test_simulate.c -- the simulator (pkg/simulate): the workload file's
 * checks, and the virtual-time loop and its outputs against a tiny fake of
 * the sandbox (first fit by CPU, one preemption rule), exact answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/types.h"
#include "scheduler/capabilities.h"
#include "simulate/internal.h"
#include "simulate/simulate.h"
#include "simulate/workload.h"
#include "util/util.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */

/* ------------------------------------------------------------ workload */

static int load(sim_workload_t *w, const char *text, char *err)
{
    char e[512] = "";
    memset(w, 0, sizeof(*w));
    json_t *doc = sim_yaml_load(text, strlen(text), e, sizeof e);
    if (!doc) {
        strcpy(err, e);
        return -1;
    }
    int rc = sim_workload_from_json(w, doc, "ai-scheduler", err, 512);
    json_decref(doc);
    return rc;
}

static const char *WL_OK = "apiVersion: ai-scheduler.aibee.cn/v1\n"
                           "kind: Workload\n"
                           "start: \"2026-01-01T00:00:00Z\"\n"
                           "jobs:\n"
                           "- name: train\n"
                           "  namespace: team-a\n"
                           "  arrival: 90s\n"
                           "  runTime: 10m\n"
                           "  queue: qa\n"
                           "  pool: gpu\n"
                           "  priorityClassName: high\n"
                           "  replicas: 3\n"
                           "  gang: {minMember: 2, annotations: {resource.aibee.cn/topology-required: "
                           "network.aibee.cn/block}}\n"
                           "  template:\n"
                           "    metadata: {labels: {app: t}}\n"
                           "    spec:\n"
                           "      containers:\n"
                           "      - name: c\n"
                           "        image: busybox\n"
                           "        resources: {requests: {cpu: 2, nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}\n"
                           "- name: web\n"
                           "  arrival: \"2026-01-01T00:05:00Z\"\n"
                           "  runTime: 60\n"
                           "  priority: 5\n"
                           "  pods:\n"
                           "  - metadata: {name: web-x}\n"
                           "    spec: {containers: [{name: c, image: nginx}]}\n";

static void test_workload_ok(void **state)
{
    (void)state;
    sim_workload_t w;
    char err[512] = "";
    assert_int_equal(load(&w, WL_OK, err), 0);
    assert_int_equal(w.njobs, 2);
    assert_int_equal(w.start_wall_ms, T0);
    sim_job_t *j = &w.jobs[0];
    assert_string_equal(j->name, "train");
    assert_string_equal(j->ns, "team-a");
    assert_int_equal(j->arrival, 90000);
    assert_int_equal(j->arrival_abs, 0);
    assert_int_equal(j->run_ms, 600000);
    assert_int_equal(j->npods, 3);
    assert_int_equal(j->min, 2);
    assert_string_equal(j->priority_class, "high");
    json_t *pod = j->pods[2];
    char name[64];
    assert_string_equal(sim_pod_name(j, 2, name, sizeof name), "train-2");
    assert_ptr_equal(pod, j->pods[0]); /* replicas share the template's object */
    json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "resource.aibee.cn/queue")), "qa");
    assert_string_equal(json_string_value(json_object_get(labels, "scheduling.x-k8s.io/pod-group")), "train");
    assert_string_equal(json_string_value(json_object_get(labels, "app")), "t");
    json_t *ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
    assert_string_equal(json_string_value(json_object_get(ann, "resource.aibee.cn/pool")), "gpu");
    json_t *spec = json_object_get(pod, "spec");
    assert_string_equal(json_string_value(json_object_get(spec, "schedulerName")), "ai-scheduler");
    json_t *pg = j->podgroup;
    assert_non_null(pg);
    assert_string_equal(json_string_value(json_object_get(pg, "kind")), "PodGroup");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(pg, "spec"), "minMember")), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_object_get(pg, "metadata"), "annotations"),
                                          "resource.aibee.cn/topology-required")),
        "network.aibee.cn/block");
    j = &w.jobs[1];
    assert_int_equal(j->arrival, T0 + 300000);
    assert_int_equal(j->arrival_abs, 1);
    assert_int_equal(j->run_ms, 60000);
    assert_int_equal(j->min, 1);
    assert_null(j->podgroup);
    assert_null(j->queue);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j->pods[0], "spec"), "priority")), 5);
    sim_workload_free(&w);
}

static void expect_error(const char *text, const char *want)
{
    sim_workload_t w;
    char err[512] = "";
    assert_int_equal(load(&w, text, err), -1);
    if (!strstr(err, want))
        fail_msg("error \"%s\" does not say \"%s\"", err, want);
    assert_int_equal(w.njobs, 0);
}

#define TMPL "  template: {spec: {containers: [{name: c, image: x}]}}\n"

static void test_workload_errors(void **state)
{
    (void)state;
    expect_error("- name: a\n" TMPL, "jobs[0] (a): runTime: missing");
    expect_error("- name: a\n  runTime: 0s\n" TMPL, "jobs[0] (a): runTime: want a positive duration");
    expect_error("- name: a\n  runTime: 1m\n  arival: 5s\n" TMPL, "jobs[0]: unknown field \"arival\" in the job");
    expect_error("- name: a\n  runTime: 1m\n  arrival: soon\n" TMPL, "jobs[0] (a): arrival: not a duration");
    expect_error("- name: a\n  runTime: 1m\n  arrival: 2026-13-45T00:00:00Z\n" TMPL, "arrival: not an RFC 3339 time");
    expect_error("- name: a\n  runTime: 1m\n  replicas: 2\n  gang: {minMember: 3}\n" TMPL,
                 "jobs[0] (a): gang.minMember: want a whole number from 1 to the job's pod count");
    expect_error("- name: a\n  runTime: 1m\n" TMPL "- name: a\n  runTime: 1m\n" TMPL, "jobs[1]: job default/a twice");
    expect_error("- name: a\n  runTime: 1m\n  priority: 1\n  priorityClassName: x\n" TMPL,
                 "priority and priorityClassName: give one");
    expect_error("- name: a\n  runTime: 1m\n", "want either template (with replicas) or pods");
    expect_error("- name: Bad_Name\n  runTime: 1m\n" TMPL, "jobs[0]: name: want a lower-case DNS name");
    expect_error("- name: a\n  runTime: 1m\n  template: {spec: {containers: [{name: c, image: x, resources: "
                 "{requests: {cpu: lots}}}]}}\n",
                 "jobs[0] (a): pod: ");
    expect_error("- name: a\n  runTime: 1m\n  template: {spec: {nodeName: n1, containers: [{name: c, image: x}]}}\n",
                 "sets spec.nodeName");
    expect_error("jobs: []\n", "jobs: want 1 to");
    expect_error("kind: Pod\njobs: []\n", "kind: want Workload, not Pod");
    expect_error("- name: a\n  runTime: 1m\n  replicas: 0\n" TMPL, "replicas: want a whole number from 1");
    expect_error("- [unclosed\n", "line ");
    expect_error("{\"jobs\": [}", "JSON: ");
}

/* ------------------------------------------------------------ fake sandbox */

typedef struct fpod {
    char *ns, *name, *uid;
    int64_t cpu;
    int prio;
    int node; /* -1 pending */
    json_t *obj;
    int live;
} fpod_t;

typedef struct fake {
    int nnodes;
    int64_t cap[4], used[4];
    fpod_t pods[256];
    int npods;
    int64_t now;
    sim_t *sim;
    int preempt;       /* a pending pod evicts lower-priority pods of its node to fit */
    int evict_pending; /* so many times, a pending pod that fits nowhere evicts lower-priority pending pods */
    int64_t due;       /* next_due's answer */
    int runs;
} fake_t;

static void emit(fake_t *f, sb_action_kind_t kind, fpod_t *p)
{
    char node[16];
    snprintf(node, sizeof node, "n%d", p->node);
    sb_action_t a = { .kind = kind,
                      .ns = p->ns,
                      .name = p->name,
                      .uid = p->uid,
                      .node = p->node >= 0 ? node : NULL, /* as the sandbox says a pending pod's */
                      .at_ms = f->now,
                      .reason = kind == SB_EVICT ? "preemption, by \"high\"" : NULL };
    sim_on_action(f->sim, &a);
}

static int f_apply(void *ctx, const char *type, json_t *obj, char *err, size_t errlen)
{
    fake_t *f = ctx;
    if (strcmp(json_string_value(json_object_get(obj, "kind")), "Pod"))
        return 0;
    pod_t *p = pod_from_json(obj, err, errlen);
    if (!p)
        return -1;
    if (!strcmp(type, "ADDED")) {
        for (int i = 0; i < f->npods; i++)
            if (f->pods[i].live && !strcmp(f->pods[i].name, p->name))
                return util_errf(err, errlen, "%s exists", p->name);
        fpod_t *q = &f->pods[f->npods++];
        q->ns = util_strdup(p->ns);
        q->name = util_strdup(p->name);
        q->uid = util_strdup(p->uid);
        q->cpu = p->requests.milli_cpu;
        q->prio = p->priority;
        q->node = -1;
        q->obj = json_deep_copy(obj);
        q->live = 1;
    } else {
        for (int i = 0; i < f->npods; i++)
            if (f->pods[i].live && !strcmp(f->pods[i].name, p->name)) {
                f->pods[i].live = 0;
                if (f->pods[i].node >= 0)
                    f->used[f->pods[i].node] -= f->pods[i].cpu;
            }
    }
    pod_unref(p);
    return 0;
}

static int f_fit(fake_t *f, int64_t cpu)
{
    for (int n = 0; n < f->nnodes; n++)
        if (f->cap[n] - f->used[n] >= cpu)
            return n;
    return -1;
}

static int f_run(void *ctx)
{
    fake_t *f = ctx;
    f->runs++;
    for (int i = 0; i < f->npods; i++) {
        fpod_t *p = &f->pods[i];
        if (!p->live || p->node >= 0)
            continue;
        int n = f_fit(f, p->cpu);
        if (n < 0 && f->preempt) {
            for (int k = 0; k < f->npods && n < 0; k++) {
                fpod_t *v = &f->pods[k];
                if (v->live && v->node >= 0 && v->prio < p->prio) {
                    emit(f, SB_EVICT, v);
                    f->used[v->node] -= v->cpu;
                    v->live = 0;
                    n = f_fit(f, p->cpu);
                }
            }
        }
        for (int k = 0; k < f->npods && n < 0 && f->evict_pending > 0; k++) {
            fpod_t *v = &f->pods[k];
            if (v->live && v->node < 0 && v->prio < p->prio) {
                emit(f, SB_EVICT, v);
                v->live = 0;
                f->evict_pending--;
            }
        }
        if (n < 0)
            continue;
        p->node = n;
        f->used[n] += p->cpu;
        emit(f, SB_BIND, p);
    }
    return 1;
}

static void f_advance(void *ctx, int64_t t)
{
    fake_t *f = ctx;
    if (t > f->now)
        f->now = t;
    if (f->due && f->due <= t)
        f->due = 0;
    f_run(f);
}

static int64_t f_next_due(void *ctx)
{
    return ((fake_t *)ctx)->due;
}

static json_t *f_get(void *ctx, const char *kind, const char *ns, const char *name)
{
    fake_t *f = ctx;
    if (strcmp(kind, "Pod"))
        return NULL; /* the fake keeps pods only */
    for (int i = 0; i < f->npods; i++)
        if (f->pods[i].live && !strcmp(f->pods[i].ns, ns) && !strcmp(f->pods[i].name, name))
            return f->pods[i].obj;
    return NULL;
}

static void f_each_queue(void *ctx, scheduler_queue_fn fn, void *ud)
{
    fake_t *f = ctx;
    double alloc[3] = { 0, 0, 0 }, fair[3] = { 0, 2000, 0 };
    for (int n = 0; n < f->nnodes; n++)
        alloc[1] += (double)f->used[n];
    fn(ud, "qa", "default", alloc, fair, 0);
}

static void fake_free(fake_t *f)
{
    for (int i = 0; i < f->npods; i++) {
        free(f->pods[i].ns);
        free(f->pods[i].name);
        free(f->pods[i].uid);
        json_decref(f->pods[i].obj);
    }
}

static json_t *snapshot(int nodes)
{
    json_t *items = json_array();
    for (int i = 0; i < nodes; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        json_array_append_new(items, json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:{s:s,s:s,s:s}}}", "apiVersion", "v1", "kind",
                                               "Node", "metadata", "name", name, "uid", name, "status", "allocatable",
                                               "cpu", "1", "memory", "1Gi", "pods", "110"));
    }
    json_array_append_new(items, json_pack("{s:s,s:s,s:{s:s},s:i}", "apiVersion", "scheduling.k8s.io/v1", "kind",
                                           "PriorityClass", "metadata", "name", "high", "value", 1000));
    return json_pack("{s:s,s:o}", "kind", "ClusterSnapshot", "items", items);
}

/* text loaded into w, and f cleared to nodes fake nodes of 1 CPU at T0 (a
 * case sets its switches after). */
static void fake_setup(fake_t *f, sim_workload_t *w, const char *text, int nodes)
{
    char err[512] = "";
    if (load(w, text, err) < 0)
        fail_msg("%s", err);
    memset(f, 0, sizeof(*f));
    f->nnodes = nodes;
    for (int i = 0; i < nodes; i++)
        f->cap[i] = 1000;
    f->now = T0;
}

/* What fn writes of s (caller frees). */
static char *written(sim_t *s, int (*fn)(sim_t *s, FILE *f))
{
    char *txt;
    size_t len;
    FILE *m = open_memstream(&txt, &len);
    assert_int_equal(fn(s, m), 0);
    fclose(m);
    return txt;
}

/* Runs w on f (fake_setup's) with o; *csv the CSV. */
static sim_t *simulate_on(fake_t *f, sim_workload_t *w, const sim_opts_t *o, char **csv)
{
    char err[512] = "";
    sim_backend_t b = { f, f_apply, f_run, f_advance, f_next_due, f_get, f_each_queue };
    sim_t *s = sim_new(o, w, &b);
    f->sim = s;
    json_t *snap = snapshot(f->nnodes);
    if (sim_load(s, snap, err, sizeof err) < 0)
        fail_msg("%s", err);
    json_decref(snap);
    if (sim_run(s, err, sizeof err) < 0)
        fail_msg("%s", err);
    *csv = written(s, sim_write_csv);
    return s;
}

/* Runs text on nodes fake nodes of 1 CPU; *csv the CSV. */
static sim_t *simulate(fake_t *f, sim_workload_t *w, const char *text, int nodes, int64_t until, char **csv)
{
    fake_setup(f, w, text, nodes);
    sim_opts_t o = { .start_wall_ms = T0, .until_ms = until, .seed = 7, .max_samples = 64 };
    return simulate_on(f, w, &o, csv);
}

#define CPU1 "  template: {spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 1}}}]}}\n"

static void test_loop_waits_for_room(void **state)
{
    (void)state;
    fake_t f;
    sim_workload_t w;
    char *csv;
    sim_t *s = simulate(&f, &w,
                        "- name: a\n  runTime: 100s\n  replicas: 2\n  queue: qa\n" CPU1
                        "- name: b\n  arrival: 10s\n  runTime: 50s\n  queue: qa\n" CPU1
                        "- name: c\n  arrival: 10s\n  runTime: 1s\n  queue: qb\n  pool: p\n" CPU1,
                        2, 0, &csv);
    assert_string_equal(csv, "job,queue,pool,arrival,start,finish,wait,nodes,preempted\n"
                             "default/a,qa,default,0.000,0.000,100.001,0.000,n0 n1,0\n"
                             "default/b,qa,default,10.000,100.000,150.000,90.000,n0,0\n"
                             "default/c,qb,p,10.000,100.001,101.001,90.001,n1,0\n");
    /* a's second pod is created 1 ms after its first, as a controller would */
    assert_int_equal(s->binds, 4);
    assert_int_equal(s->end_at, T0 + 150000);
    /* the pool's mean use: 2 CPUs for 100 s, 2 for 1 s, 1 for 49 s, over 150 s of 2 CPUs */
    json_t *res = sim_result(s);
    json_t *pool = json_array_get(json_object_get(res, "pools"), 0);
    assert_string_equal(json_string_value(json_object_get(pool, "pool")), "default");
    double mean = json_number_value(json_object_get(json_object_get(pool, "meanUtilization"), "cpu"));
    assert_true(mean > 0.836 && mean < 0.837); /* 251/300 */
    json_t *wq = json_object_get(json_object_get(res, "waitPercentiles"), "qa");
    assert_int_equal(json_integer_value(json_object_get(wq, "count")), 2);
    assert_true(json_number_value(json_object_get(wq, "p50")) == 0.0); /* a started with its first pod */
    assert_true(json_number_value(json_object_get(wq, "p90")) == 90.0);
    json_decref(res);
    free(csv);
    sim_free(s);
    sim_workload_free(&w);
    fake_free(&f);
}

static void test_loop_eviction_reruns(void **state)
{
    (void)state;
    fake_t f;
    sim_workload_t w;
    char *csv;
    /* low runs from 0; high (priority class 1000) arrives at 30 s and evicts
     * it; low comes back pending with a new uid and runs its 100 s again
     * once high is done at 40 s. */
    fake_setup(&f, &w,
               "- name: low\n  runTime: 100s\n" CPU1
               "- name: high\n  arrival: 30s\n  runTime: 10s\n  priorityClassName: high\n" CPU1,
               1);
    f.preempt = 1;
    sim_opts_t o = { .start_wall_ms = T0, .seed = 1 };
    sim_t *s = simulate_on(&f, &w, &o, &csv);
    assert_string_equal(csv, "job,queue,pool,arrival,start,finish,wait,nodes,preempted\n"
                             "default/low,default,default,0.000,0.000,140.000,0.000,n0,1\n"
                             "default/high,default,default,30.000,30.000,40.000,0.000,n0,0\n");
    assert_int_equal(s->evictions, 1);
    free(csv);
    csv = written(s, sim_write_events);
    assert_string_equal(csv, "time,action,pod,uid,node,reason\n"
                             "0.000,bind,default/low-0,sim-0-0-0,n0,\n"
                             "30.000,evict,default/low-0,sim-0-0-0,n0,\"preemption, by \"\"high\"\"\"\n"
                             "30.000,bind,default/high-0,sim-1-0-0,n0,\n"
                             "40.000,finish,default/high-0,sim-1-0-0,n0,\n"
                             "40.000,bind,default/low-0,sim-0-0-1,n0,\n"
                             "140.000,finish,default/low-0,sim-0-0-1,n0,\n");
    /* the replacement is the pod's second incarnation */
    assert_string_equal(f.pods[2].name, "low-0");
    assert_string_equal(f.pods[2].uid, "sim-0-0-1");
    assert_int_equal(s->pods[0].gen, 1);
    free(csv);
    sim_free(s);
    sim_workload_free(&w);
    fake_free(&f);
}

/* Issue 35, fault 7: an eviction of a pending pod is one too (the API
 * server deletes the pod): low, waiting behind a, is evicted pending when
 * high arrives at 20 s; it is counted and reported, and its controller's
 * replacement runs after high. The loop dropped it: low was reported as
 * never started, waiting for a pod the copy no longer had. */
static void test_loop_pending_eviction(void **state)
{
    (void)state;
    fake_t f;
    sim_workload_t w;
    char *csv;
    fake_setup(&f, &w,
               "- name: a\n  runTime: 50s\n" CPU1 "- name: low\n  arrival: 10s\n  runTime: 100s\n" CPU1
               "- name: high\n  arrival: 20s\n  runTime: 10s\n  priorityClassName: high\n" CPU1,
               1);
    f.evict_pending = 1;
    sim_opts_t o = { .start_wall_ms = T0, .seed = 1 };
    sim_t *s = simulate_on(&f, &w, &o, &csv);
    assert_string_equal(csv, "job,queue,pool,arrival,start,finish,wait,nodes,preempted\n"
                             "default/a,default,default,0.000,0.000,50.000,0.000,n0,0\n"
                             "default/low,default,default,10.000,60.000,160.000,50.000,n0,1\n"
                             "default/high,default,default,20.000,50.000,60.000,30.000,n0,0\n");
    assert_int_equal(s->evictions, 1);
    free(csv);
    csv = written(s, sim_write_events);
    assert_string_equal(csv, "time,action,pod,uid,node,reason\n"
                             "0.000,bind,default/a-0,sim-0-0-0,n0,\n"
                             "20.000,evict,default/low-0,sim-1-0-0,,\"preemption, by \"\"high\"\"\"\n"
                             "50.000,finish,default/a-0,sim-0-0-0,n0,\n"
                             "50.000,bind,default/high-0,sim-2-0-0,n0,\n"
                             "60.000,finish,default/high-0,sim-2-0-0,n0,\n"
                             "60.000,bind,default/low-0,sim-1-0-1,n0,\n"
                             "160.000,finish,default/low-0,sim-1-0-1,n0,\n");
    free(csv);
    csv = written(s, sim_write_summary);
    assert_non_null(strstr(csv, "jobs 3: 3 started, 3 finished, 0 never started, 1 preempted"));
    free(csv);
    sim_free(s);
    sim_workload_free(&w);
    fake_free(&f);
}

static void test_loop_stops_when_nothing_can_start(void **state)
{
    (void)state;
    fake_t f;
    sim_workload_t w;
    char *csv;
    sim_t *s = simulate(&f, &w,
                        "- name: big\n  runTime: 10s\n"
                        "  template: {spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 2}}}]}}\n"
                        "- name: ok\n  arrival: 5s\n  runTime: 10s\n" CPU1,
                        1, 0, &csv);
    assert_string_equal(csv, "job,queue,pool,arrival,start,finish,wait,nodes,preempted\n"
                             "default/big,default,default,0.000,,,,,0\n"
                             "default/ok,default,default,5.000,5.000,15.000,0.000,n0,0\n");
    assert_int_equal(s->end_at, T0 + 15000);
    char *txt = written(s, sim_write_summary);
    assert_non_null(strstr(txt, "jobs 2: 1 started, 1 finished, 1 never started, 0 preempted"));
    assert_non_null(strstr(txt, "never started: default/big\n"));
    free(txt);
    free(csv);
    sim_free(s);
    sim_workload_free(&w);
    fake_free(&f);
}

static void test_loop_until(void **state)
{
    (void)state;
    fake_t f;
    sim_workload_t w;
    char *csv;
    sim_t *s = simulate(&f, &w, "- name: a\n  runTime: 100s\n" CPU1 "- name: b\n  arrival: 200s\n  runTime: 10s\n" CPU1,
                        1, 50000, &csv);
    assert_string_equal(csv, "job,queue,pool,arrival,start,finish,wait,nodes,preempted\n"
                             "default/a,default,default,0.000,0.000,,0.000,n0,0\n"
                             "default/b,default,default,200.000,,,,,0\n");
    assert_int_equal(s->end_at, T0 + 50000);
    free(csv);
    sim_free(s);
    sim_workload_free(&w);
    fake_free(&f);
}

/* The same inputs twice: the same bytes in every output. */
static char *outputs(void)
{
    fake_t f;
    sim_workload_t w;
    char *csv, *all;
    size_t len;
    sim_t *s = simulate(&f, &w,
                        "- name: a\n  runTime: 100s\n  replicas: 2\n  queue: qa\n" CPU1
                        "- name: b\n  arrival: 10s\n  runTime: 50s\n  queue: qa\n" CPU1
                        "- name: c\n  arrival: 10s\n  runTime: 1s\n  queue: qb\n" CPU1,
                        2, 0, &csv);
    FILE *m = open_memstream(&all, &len);
    fputs(csv, m);
    json_t *doc = sim_result(s);
    json_dumpf(doc, m, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(doc);
    sim_write_html(s, m);
    fclose(m);
    free(csv);
    sim_free(s);
    sim_workload_free(&w);
    fake_free(&f);
    return all;
}

static void test_deterministic_and_self_contained(void **state)
{
    (void)state;
    char *a = outputs(), *b = outputs();
    assert_string_equal(a, b);
    /* the report fetches nothing: no src=, href= or url( */
    const char *html = strstr(a, "<!DOCTYPE html>");
    assert_non_null(html);
    assert_null(strstr(html, "src="));
    assert_null(strstr(html, "href="));
    assert_null(strstr(html, "url("));
    assert_non_null(strstr(html, "<svg"));
    assert_non_null(strstr(html, "queue qa, pool default"));
    free(a);
    free(b);
}

static void test_series_bounded(void **state)
{
    (void)state;
    sim_series_t se;
    sim_series_init(&se, "q", "p", 1, 1);
    for (int i = 0; i < 10000; i++) {
        double v = i;
        sim_series_add(&se, i * 1000, &v, 0, 16);
    }
    assert_true(se.n <= 16);
    assert_int_equal(se.t[0], 0);
    /* the spacing doubled each time it filled, so the samples stay even */
    for (int i = 2; i < se.n; i++)
        assert_int_equal(se.t[i] - se.t[i - 1], se.t[1] - se.t[0]);
    sim_series_free(&se);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workload_ok),
        cmocka_unit_test(test_workload_errors),
        cmocka_unit_test(test_loop_waits_for_room),
        cmocka_unit_test(test_loop_eviction_reruns),
        cmocka_unit_test(test_loop_pending_eviction),
        cmocka_unit_test(test_loop_stops_when_nothing_can_start),
        cmocka_unit_test(test_loop_until),
        cmocka_unit_test(test_deterministic_and_self_contained),
        cmocka_unit_test(test_series_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
