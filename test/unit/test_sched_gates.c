/* test_sched_gates.c -- PreEnqueue (scheduler/gates.c) against a fake API
 * server: a pod with spec.schedulingGates or spec.resourceClaims is kept
 * out of the scheduling queues (never bound, no event for gates, no
 * pending demand, no preemption), and a pod whose last gate goes is bound
 * on the next cycle. Pods are shaped as a 1.35 API server serves them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "fake_api.h"
#include "fixtures.h"
#include "kube/client.h"
#include "fairshare/row.h"
#include "scheduler/capabilities.h"
#include "gang/row.h"
#include "scheduler/internal.h"
#include "util/util.h"

/* ---- fake API server ---------------------------------------------------- */

/* What the scheduler wrote: events ("event", reason, involved object's
 * name, message) and pod status patches ("patch", pod name, body). */
static struct {
    pthread_mutex_t mu;
    int bind_status;      /* answer to POST .../binding */
    const char *bind_msg; /* its message */
    int binds, evictions; /* requests seen */
    json_t *writes;       /* [{what, name, reason, text}] */
} api = { PTHREAD_MUTEX_INITIALIZER, 201, "ok", 0, 0, NULL };

static void record(const char *method, const char *url, const char *body)
{
    json_t *b = json_loads(body ? body : "", 0, NULL), *w = NULL;
    if (!strcmp(method, "POST") && strstr(url, "/events"))
        w = json_pack("{s:s, s:O?, s:O?, s:O?}", "what", "event", "reason", json_object_get(b, "reason"), "text",
                      json_object_get(b, "message"), "name",
                      json_object_get(json_object_get(b, "involvedObject"), "name"));
    else if (!strcmp(method, "PATCH") && strstr(url, "/pods/")) {
        const char *name = strstr(url, "/pods/") + 6;
        w = json_pack("{s:s, s:s%, s:s}", "what", "patch", "name", name, strcspn(name, "/"), "text", body ? body : "");
    }
    pthread_mutex_lock(&api.mu);
    if (w)
        json_array_append_new(api.writes, w);
    else if (!strcmp(method, "POST") && strstr(url, "/eviction"))
        api.evictions++;
    pthread_mutex_unlock(&api.mu);
    json_decref(b);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *data, size_t *size, void **con_cls)
{
    const char *body = NULL;
    if (fake_api_gather(con_cls, data, size, &body))
        return MHD_YES;
    if (!strcmp(method, "POST") && strstr(url, "/binding")) {
        pthread_mutex_lock(&api.mu);
        api.binds++;
        unsigned code = (unsigned)api.bind_status;
        const char *msg = api.bind_msg;
        pthread_mutex_unlock(&api.mu);
        return fake_api_status(c, code, msg);
    }
    record(method, url, body);
    return fake_api_status(c, strcmp(method, "PATCH") ? 201 : 200, "ok");
}

static fake_api_t fake;

static int setup(void **st)
{
    return fake_api_up(&fake, handler, "test_sched_gates");
}

static int teardown(void **st)
{
    fake_api_down(&fake);
    json_decref(api.writes);
    return 0;
}

static void api_reset(int bind_status, const char *bind_msg)
{
    pthread_mutex_lock(&api.mu);
    api.bind_status = bind_status;
    api.bind_msg = bind_msg;
    api.binds = api.evictions = 0;
    json_decref(api.writes);
    api.writes = json_array();
    pthread_mutex_unlock(&api.mu);
}

static int api_count(const int *field)
{
    return fake_api_read_int(&api.mu, field);
}

/* How many writes of this kind ("event", "patch") name this object, with
 * this reason when not NULL; *text (may be NULL) gets the last one's
 * message or body, copied. */
static int writes_of(const char *what, const char *reason, const char *name, char **text)
{
    int n = 0;
    size_t i;
    json_t *w;
    pthread_mutex_lock(&api.mu);
    json_array_foreach (api.writes, i, w) {
        const char *r = json_string_value(json_object_get(w, "reason"));
        if (strcmp(json_string_value(json_object_get(w, "what")), what) ||
            strcmp(json_string_value(json_object_get(w, "name")), name) || (reason && (!r || strcmp(r, reason))))
            continue;
        n++;
        if (text) {
            free(*text);
            *text = util_strdup(json_string_value(json_object_get(w, "text")));
        }
    }
    pthread_mutex_unlock(&api.mu);
    return n;
}

/* ---- helpers ------------------------------------------------------------- */

/* What was queued for the API is sent: the binder (whose answers write
 * events), the evictor and the writer drain, and new ones take their
 * places. */
static void flush_writes(scheduler_t *s)
{
    binder_free(s->binder);
    s->binder = binder_new(s, 1);
    evictor_wait_idle(s->evictor);
    writer_free(s->writer);
    s->writer = writer_new(s, 100);
}

static void add_node(scheduler_t *s, const char *name, const char *cpu)
{
    json_t *res = json_pack("{s:s, s:s, s:s}", "cpu", cpu, "memory", "16Gi", "pods", "110");
    json_t *j = json_pack("{s:s, s:s, s:{s:s, s:s+, s:s, s:{s:s}}, s:{}, s:{s:O, s:o}}", "apiVersion", "v1", "kind",
                          "Node", "metadata", "name", name, "uid", "node-", name, "resourceVersion", "10", "labels",
                          "kubernetes.io/hostname", name, "spec", "status", "capacity", res, "allocatable", res);
    assert_non_null(j);
    on_node_event(s, KUBE_ADDED, name, j);
    json_decref(j);
}

/* A scheduler with a writer, a binder and an evictor, and node n1 of cpu
 * CPUs; the fake API answers Bindings with bind_status and bind_msg. */
static scheduler_t *fresh(int bind_status, const char *bind_msg, const char *cpu)
{
    api_reset(bind_status, bind_msg);
    scheduler_t *s = fake_api_scheduler(fake.kc);
    s->writer = writer_new(s, 100);
    s->binder = binder_new(s, 1);
    s->evictor = evictor_new(s);
    add_node(s, "n1", cpu);
    return s;
}

/* The PodScheduled condition a status patch body carries (new reference). */
static json_t *patched_condition(const char *body)
{
    json_t *b = json_loads(body, 0, NULL);
    assert_non_null(b);
    json_t *c = json_incref(json_array_get(json_object_get(json_object_get(b, "status"), "conditions"), 0));
    json_decref(b);
    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(c, "type")), "PodScheduled");
    assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
    return c;
}

/* A pod as a 1.35 API server serves it. spec_extra and status_extra are
 * JSON members (with a trailing comma) added to spec and status; labels a
 * JSON object's members. */
static void pod_event(scheduler_t *s, kube_event_type_t type, const char *name, const char *rv, const char *labels,
                      int prio, const char *cpu, const char *node, const char *spec_extra, const char *status_extra)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'%s','namespace':'ns',"
             "'uid':'uid-%s','resourceVersion':'%s','creationTimestamp':'2026-01-01T00:00:00Z',"
             "'labels':{%s}},'spec':{%s'containers':[{'name':'c','image':'registry.k8s.io/pause:3.10',"
             "'resources':{'requests':{'cpu':'%s'}},'terminationMessagePath':'/dev/termination-log',"
             "'terminationMessagePolicy':'File','imagePullPolicy':'IfNotPresent'}],'restartPolicy':"
             "'Always','terminationGracePeriodSeconds':30,'dnsPolicy':'ClusterFirst','schedulerName':"
             "'ai-scheduler','priority':%d,'preemptionPolicy':'PreemptLowerPriority','nodeName':'%s',"
             "'enableServiceLinks':true},'status':{%s'phase':'%s','qosClass':'Burstable'}}",
             name, name, rv, labels ? labels : "", spec_extra ? spec_extra : "", cpu, prio, node,
             status_extra ? status_extra : "", node[0] ? "Running" : "Pending");
    json_t *j = parse_sq(text);
    char key[128];
    snprintf(key, sizeof key, "ns/%s", name);
    on_pod_event(s, type, key, j);
    json_decref(j);
}

#define GATES "'schedulingGates':[{'name':'example.com/foo'}],"
#define GATED_COND                                                                                                     \
    "'conditions':[{'type':'PodScheduled','status':'False','lastProbeTime':null,"                                      \
    "'lastTransitionTime':'2026-01-01T00:00:00Z','reason':'SchedulingGated',"                                          \
    "'message':'Scheduling is blocked due to non-empty scheduling gates'}],"
#define CLAIMS "'resourceClaims':[{'name':'gpu','resourceClaimTemplateName':'gpu-template'}],"

static int queued(scheduler_t *s)
{
    queue_stats_t qs;
    queue_get_stats(pools_get(s, DEFAULT_POOL_ID)->q, &qs);
    return qs.active + qs.backoff + qs.unschedulable + qs.inflight;
}

/* One cycle of the default pool, if a pod is ready within wait_ms: 1 when
 * one ran. */
static int cycle_once(scheduler_t *s, int wait_ms)
{
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_item_t *it = queue_pop_timeout(D->q, wait_ms);
    if (!it)
        return 0;
    sched_schedule_item(D, it);
    return 1;
}

/* Waits up to 2 s for n Bindings. */
static int wait_binds(int n)
{
    for (int i = 0; i < 200 && api_count(&api.binds) < n; i++)
        util_sleep_ms(10);
    return api_count(&api.binds);
}

/* The update that removes name's gates (the SchedulingGated condition stays
 * until it is bound) puts it in activeQ: the next cycle runs at once, no
 * waiting, and the Bindings reach binds. */
static void ungate_and_bind(scheduler_t *s, const char *name, const char *rv, const char *labels, int binds)
{
    pod_event(s, KUBE_MODIFIED, name, rv, labels, 0, "1", "", NULL, GATED_COND);
    assert_int_equal(gates_held_count(s), 0);
    assert_int_equal(cycle_once(s, 0), 1);
    assert_int_equal(wait_binds(binds), binds);
}

static int nominated_count(scheduler_t *s)
{
    pod_t *const *noms;
    cache_rdlock(s->cache);
    int n = cache_nominated_locked(s->cache, "n1", &noms);
    cache_unlock(s->cache);
    return n;
}

static int pending_of_tenant;
static void tenant_metric(void *ud, const char *queue, const char *pool, const double alloc[FS_NRES],
                          const double fair[FS_NRES], int pending)
{
    if (!strcmp(queue, (const char *)ud) && !strcmp(pool, DEFAULT_POOL))
        pending_of_tenant = pending;
}

/* ---- scheduling gates ---------------------------------------------------- */

/* A gated pod (as the API server creates it, condition included) is in no
 * queue: no cycle, no Binding, no event, no patch, and its queue's
 * pending demand counts only its ungated sibling (2 pods of queue train,
 * 1 gated: pending 1). The update that removes its gate puts it in
 * activeQ: the very next cycle (no 1 s backoff) binds it. */
static void test_gated_pod_waits_then_binds_at_once(void **st)
{
    scheduler_t *s = fresh(201, "ok", "4");
    json_t *q = parse_sq("{'apiVersion':'resource.aibee.cn/v1alpha1','kind':'Queue','metadata':{'name':"
                         "'train','uid':'q-train'},'spec':{'resources':{'cpu':{'quota':4000}}}}");
    scheduler_feed(s, "Queue", "ADDED", "train", q);
    json_decref(q);
    const char *lbl = "'resource.aibee.cn/queue':'train'";
    pod_event(s, KUBE_ADDED, "gated", "100", lbl, 0, "1", "", GATES, GATED_COND);
    pod_event(s, KUBE_ADDED, "plain", "101", lbl, 0, "1", "", NULL, NULL);
    assert_int_equal(queued(s), 1); /* plain only */
    assert_int_equal(gates_held_count(s), 1);
    tenants_row_tick(sched_row(s, "tenants"), pools_get(s, DEFAULT_POOL_ID));
    pending_of_tenant = -1;
    s->queues.ops->each_metric(s->queues.self, tenant_metric, (void *)"train");
    assert_int_equal(pending_of_tenant, 1);

    /* Every cycle there is: plain binds, gated is never tried. */
    while (cycle_once(s, 50))
        ;
    assert_int_equal(wait_binds(1), 1);
    pod_event(s, KUBE_MODIFIED, "plain", "102", lbl, 0, "1", "n1", NULL, NULL);
    /* Status-only updates of the gated pod leave it out. */
    pod_event(s, KUBE_MODIFIED, "gated", "103", lbl, 0, "1", "", GATES, GATED_COND);
    assert_int_equal(queued(s), 0);
    assert_int_equal(cycle_once(s, 50), 0);
    flush_writes(s);
    assert_int_equal(api_count(&api.binds), 1);
    assert_int_equal(writes_of("event", "FailedScheduling", "gated", NULL), 0);
    assert_int_equal(writes_of("patch", NULL, "gated", NULL), 0); /* the API's condition stands */

    /* The gate goes (the condition stays until the pod is bound). */
    int64_t t0 = util_now_ms();
    ungate_and_bind(s, "gated", "104", lbl, 2);
    /* A backoff would have kept it at least 1 s. */
    assert_true(util_now_ms() - t0 < 1000);
    flush_writes(s);
    assert_int_equal(writes_of("event", "FailedScheduling", "gated", NULL), 0);
    assert_int_equal(writes_of("event", "Scheduled", "gated", NULL), 1);
    scheduler_free(s);
}

/* A gated pod from a server that did not set the condition gets kube's,
 * once: its own condition's update event writes nothing more. */
static void test_gated_condition_written_once(void **st)
{
    scheduler_t *s = fresh(201, "ok", "4");
    pod_event(s, KUBE_ADDED, "bare", "100", NULL, 0, "1", "", GATES, NULL);
    flush_writes(s);
    char *body = NULL;
    assert_int_equal(writes_of("patch", NULL, "bare", &body), 1);
    json_t *c = patched_condition(body);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "SchedulingGated");
    assert_string_equal(json_string_value(json_object_get(c, "message")),
                        "Scheduling is blocked due to non-empty scheduling gates");
    json_decref(c);
    free(body);
    pod_event(s, KUBE_MODIFIED, "bare", "101", NULL, 0, "1", "", GATES, GATED_COND);
    pod_event(s, KUBE_MODIFIED, "bare", "102", NULL, 0, "1", "", GATES, NULL);
    flush_writes(s);
    assert_int_equal(writes_of("patch", NULL, "bare", NULL), 1);
    assert_int_equal(writes_of("event", "FailedScheduling", "bare", NULL), 0);
    assert_int_equal(queued(s), 0);
    scheduler_free(s);
}

static void add_podgroup(scheduler_t *s, const char *name, int min)
{
    json_t *j = json_pack("{s:s, s:s, s:{s:s, s:s, s:s+, s:s}, s:{s:i}}", "apiVersion", "scheduling.x-k8s.io/v1alpha1",
                          "kind", "PodGroup", "metadata", "name", name, "namespace", "ns", "uid", "pg-", name,
                          "creationTimestamp", "2026-01-01T00:00:00Z", "spec", "minMember", min);
    assert_non_null(j);
    gang_row_on_podgroup(sched_row(s, "gang")->self, KUBE_ADDED, name, j);
    json_decref(j);
}

/* A gang of 3 (minMember 3) with one gated member: 2 schedulable members
 * are fewer than 3, so no member is bound, whatever the cycles; the
 * members are told why. Its gate goes: the next cycle gathers all 3 and
 * binds them together. */
static void test_gang_with_gated_member_waits_whole(void **st)
{
    scheduler_t *s = fresh(201, "ok", "4");
    add_podgroup(s, "job", 3);
    const char *lbl = "'" GANG_LABEL "':'job'";
    pod_event(s, KUBE_ADDED, "m0", "100", lbl, 0, "1", "", NULL, NULL);
    pod_event(s, KUBE_ADDED, "m1", "101", lbl, 0, "1", "", NULL, NULL);
    pod_event(s, KUBE_ADDED, "m2", "102", lbl, 0, "1", "", GATES, GATED_COND);
    int cycles = 0;
    while (cycle_once(s, 50))
        cycles++;
    assert_int_equal(cycles, 2); /* m0 and m1, each held once */
    flush_writes(s);
    assert_int_equal(api_count(&api.binds), 0);
    char *msg = NULL;
    assert_int_equal(writes_of("event", "FailedScheduling", "m0", &msg), 1);
    assert_non_null(strstr(msg, "waiting for minMember 3 pods"));
    assert_non_null(strstr(msg, "1 of its members are kept out of scheduling"));
    free(msg);
    assert_int_equal(writes_of("event", "FailedScheduling", "m2", NULL), 0);

    ungate_and_bind(s, "m2", "103", lbl, 3);
    assert_int_equal(queued(s), 0);
    scheduler_free(s);
}

/* The API server refuses the Binding of a pod that has gates (a 409, the
 * message of kube's BindingREST): it is held, not retried; the update
 * that removes its gates enqueues it and it binds. */
static void test_bind_refused_as_gated_holds(void **st)
{
    scheduler_t *s = fresh(
        409, "Operation cannot be fulfilled on pods/binding \"p1\": pod p1 has non-empty .spec.schedulingGates", "4");
    pod_event(s, KUBE_ADDED, "p1", "100", NULL, 0, "1", "", NULL, NULL);
    assert_int_equal(cycle_once(s, 50), 1);
    assert_int_equal(wait_binds(1), 1);
    for (int i = 0; i < 100 && gates_held_count(s) == 0; i++)
        util_sleep_ms(10);
    assert_int_equal(gates_held_count(s), 1);
    assert_int_equal(queued(s), 0);
    assert_int_equal(cycle_once(s, 50), 0);
    api_reset(201, "ok");
    ungate_and_bind(s, "p1", "101", NULL, 1);
    scheduler_free(s);
}

static int always_fits(void *ud, node_info_t *ni)
{
    return 1;
}

/* A pod placed before an update showed gates (the API forbids adding them;
 * a stand-in may not) is not bound: its assumption is undone and it is
 * held until the gates go, then bound. */
static void test_binder_never_binds_gated(void **st)
{
    scheduler_t *s = fresh(201, "ok", "4");
    pod_event(s, KUBE_ADDED, "late", "100", NULL, 0, "1", "", NULL, NULL);
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    assert_non_null(it);
    assert_int_equal(cache_assume(s->cache, it->pod, "n1", DEFAULT_POOL_ID, 0, always_fits, NULL), 0);
    queue_done(D->q, it);
    pod_event(s, KUBE_MODIFIED, "late", "101", NULL, 0, "1", "", GATES, GATED_COND);
    binder_submit(s->binder, it, "n1", NULL);
    binder_free(s->binder); /* drains: the job was handled */
    s->binder = binder_new(s, 1);
    assert_int_equal(api_count(&api.binds), 0);
    assert_int_equal(gates_held_count(s), 1);
    cache_pod_state_t cst;
    pod_t *cur = cache_get_pod(s->cache, "uid-late", &cst);
    assert_int_equal(cst, CPOD_PENDING); /* no longer assumed on n1 */
    pod_unref(cur);
    ungate_and_bind(s, "late", "102", NULL, 1);
    scheduler_free(s);
}

/* ---- DRA claims ---------------------------------------------------------- */

/* n1 (2 CPUs) holds a priority-0 pod of 2 CPUs; a priority-1000 pod of 2
 * CPUs whose claim comes from a template the resourceclaim controller has
 * not made yet would preempt it, were it scheduled. It is not: no
 * Binding, no eviction, one FailedScheduling event and one Unschedulable
 * condition naming the pod's claim, none again on its updates. Even put
 * in a queue by mistake, its cycle drops it. */
static void test_claims_pod_held_no_preemption(void **st)
{
    scheduler_t *s = fresh(201, "ok", "2");
    pod_event(s, KUBE_ADDED, "low", "100", NULL, 0, "2", "n1", NULL, NULL);
    pod_event(s, KUBE_ADDED, "dra", "101", NULL, 1000, "2", "", CLAIMS, NULL);
    assert_int_equal(queued(s), 0);
    assert_int_equal(cycle_once(s, 50), 0);
    flush_writes(s);
    char *msg = NULL;
    assert_int_equal(writes_of("event", "FailedScheduling", "dra", &msg), 1);
    assert_non_null(strstr(msg, "waiting for the ResourceClaim of pod claim gpu (from a template) to be created"));
    char *body = NULL;
    assert_int_equal(writes_of("patch", NULL, "dra", &body), 1);
    json_t *c = patched_condition(body);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "Unschedulable");
    assert_string_equal(json_string_value(json_object_get(c, "message")), msg);
    json_decref(c);
    free(body);

    /* Its own condition comes back as an update; a relist repeats it. */
    sbuf_t cond = { 0 }; /* the message's apostrophes escaped for parse_sq */
    sbuf_puts(&cond, "'conditions':[{'type':'PodScheduled','status':'False','lastProbeTime':null,"
                     "'lastTransitionTime':'2026-01-01T00:00:01Z','reason':'Unschedulable','message':'");
    for (const char *m = msg; *m; m++)
        *m == '\'' ? sbuf_puts(&cond, "\\u0027") : sbuf_append(&cond, m, 1);
    sbuf_puts(&cond, "'}],");
    free(msg);
    pod_event(s, KUBE_MODIFIED, "dra", "102", NULL, 1000, "2", "", CLAIMS, cond.data);
    pod_event(s, KUBE_ADDED, "dra", "102", NULL, 1000, "2", "", CLAIMS, cond.data);
    sbuf_free(&cond);
    /* A stray enqueue: the cycle drops it at once. */
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    cache_pod_state_t cst;
    pod_t *p = cache_get_pod(s->cache, "uid-dra", &cst);
    assert_non_null(p);
    queue_add(D->q, p, 0);
    pod_unref(p);
    assert_int_equal(cycle_once(s, 50), 1);
    assert_int_equal(queued(s), 0);
    evictor_wait_idle(s->evictor);
    flush_writes(s);
    assert_int_equal(writes_of("event", "FailedScheduling", "dra", NULL), 1);
    assert_int_equal(writes_of("patch", NULL, "dra", NULL), 1);
    assert_int_equal(nominated_count(s), 0);
    assert_int_equal(api_count(&api.evictions), 0);
    assert_int_equal(api_count(&api.binds), 0);

    /* The same pod without the claim does preempt here: the setup allows it. */
    pod_event(s, KUBE_ADDED, "ctl", "103", NULL, 1000, "2", "", NULL, NULL);
    assert_int_equal(cycle_once(s, 50), 1);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_count(&api.evictions), 1);
    scheduler_free(s);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gated_pod_waits_then_binds_at_once), cmocka_unit_test(test_gated_condition_written_once),
        cmocka_unit_test(test_gang_with_gated_member_waits_whole), cmocka_unit_test(test_bind_refused_as_gated_holds),
        cmocka_unit_test(test_binder_never_binds_gated),           cmocka_unit_test(test_claims_pod_held_no_preemption),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
