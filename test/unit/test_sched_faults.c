/* test_sched_faults.c -- scheduler runtime pieces against a fake API server
 * (libmicrohttpd): a refused bind backs off with its age and attempts; pod
 * updates reach the queue at once. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "fake_api.h"
#include "gang/gang.h"
#include "kube/client.h"
#include "fairshare/row.h"
#include "minruntime/row.h"
#include "pool/row.h"
#include "scheduler/capabilities.h"
#include "scheduler/internal.h"
#include "scheduler/preempt_eval.h"
#include "util/util.h"

/* ---- fake API server ---------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    int bind_status;      /* answer to POST .../binding */
    int binds;            /* binding requests seen */
    int pools_delay_ms;   /* the Pool LIST answers this late */
    int pool_api;         /* /apis/resource.aibee.cn is served */
    int evict_delay_ms;   /* each eviction answers this late */
    int evict_refuse_at;  /* 1-based eviction that gets a 429; 0 none */
    int evictions;        /* eviction requests seen */
    char reasons[1024];   /* reasons of events posted, space separated */
    char bind_body[2048]; /* the last Binding posted */
    int patch_status;     /* answer to PATCH .../status */
    char trail[4096];     /* "METHOD url body\n" of each status PATCH and eviction */
} api = { PTHREAD_MUTEX_INITIALIZER, 201, 0, 0, 1, 0, 0, 0, "", "", 200, "" };

/* Appends one request to api.trail (under api.mu). */
static void trail_add(const char *method, const char *url, const char *body);

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned code, const char *text)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

/* LISTs and WATCHes for scheduler_start: one node of pool "gpu", no pods,
 * and the Pool "gpu" (after pools_delay_ms). Watches end at once. */
static enum MHD_Result serve_get(struct MHD_Connection *c, const char *url)
{
    int watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch") != NULL;
    if (!strcmp(url, "/apis/resource.aibee.cn")) {
        pthread_mutex_lock(&api.mu);
        int served = api.pool_api;
        pthread_mutex_unlock(&api.mu);
        if (!served)
            return fake_api_status(c, 404, "not found");
        return send_text(c, 200,
                         "{\"kind\":\"APIGroup\",\"name\":\"resource.aibee.cn\",\"versions\":"
                         "[{\"groupVersion\":\"resource.aibee.cn/v1alpha1\",\"version\":\"v1alpha1\"}]}");
    }
    if (watch)
        return send_text(c, 200, "");
    if (!strcmp(url, "/apis/resource.aibee.cn/v1alpha1/pools")) {
        pthread_mutex_lock(&api.mu);
        int delay = api.pools_delay_ms, served = api.pool_api;
        pthread_mutex_unlock(&api.mu);
        if (!served)
            return fake_api_status(c, 404, "not found");
        util_sleep_ms(delay);
        return send_text(c, 200,
                         "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[{\"apiVersion\":"
                         "\"resource.aibee.cn/v1alpha1\",\"kind\":\"Pool\",\"metadata\":{\"name\":\"gpu\","
                         "\"uid\":\"pool-uid\",\"generation\":1},\"spec\":{\"nodeSelector\":"
                         "{\"matchLabels\":{\"pool\":\"gpu\"}}}}]}");
    }
    if (!strcmp(url, "/api/v1/nodes"))
        return send_text(c, 200,
                         "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[{\"metadata\":"
                         "{\"name\":\"g0\",\"resourceVersion\":\"3\",\"labels\":{\"pool\":\"gpu\"}},"
                         "\"status\":{\"allocatable\":{\"cpu\":\"4\",\"pods\":\"10\"}}}]}");
    if (!strcmp(url, "/api/v1/pods") || strstr(url, "poddisruptionbudgets"))
        return send_text(c, 200, "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[]}");
    return fake_api_status(c, 404, "not found");
}

static void trail_add(const char *method, const char *url, const char *body)
{
    pthread_mutex_lock(&api.mu);
    size_t n = strlen(api.trail);
    snprintf(api.trail + n, sizeof api.trail - n, "%s %s %s\n", method, url, body ? body : "");
    pthread_mutex_unlock(&api.mu);
}

typedef struct upload {
    sbuf_t body;
} upload_t;

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *data, size_t *size, void **con_cls)
{
    upload_t *u = *con_cls;
    if (!u) {
        *con_cls = util_xcalloc(1, sizeof *u);
        return MHD_YES;
    }
    if (*size) {
        sbuf_append(&u->body, data, *size);
        *size = 0;
        return MHD_YES;
    }
    if (!strcmp(method, "GET"))
        return serve_get(c, url);
    if (!strcmp(method, "POST") && strstr(url, "/eviction")) {
        trail_add(method, url, u->body.data);
        pthread_mutex_lock(&api.mu);
        int n = ++api.evictions, delay = api.evict_delay_ms, refuse = api.evict_refuse_at == n;
        pthread_mutex_unlock(&api.mu);
        util_sleep_ms(delay);
        return fake_api_status(c, refuse ? 429 : 201,
                               refuse ? "Cannot evict pod as it would violate the pod's disruption budget." : "ok");
    }
    if (!strcmp(method, "POST") && strstr(url, "/events")) {
        json_t *ev = json_loads(u->body.data ? u->body.data : "", 0, NULL);
        const char *r = json_string_value(json_object_get(ev, "reason"));
        pthread_mutex_lock(&api.mu);
        if (r && strlen(api.reasons) + strlen(r) + 2 < sizeof api.reasons) {
            strcat(api.reasons, r);
            strcat(api.reasons, " ");
        }
        pthread_mutex_unlock(&api.mu);
        json_decref(ev);
        return fake_api_status(c, 201, "ok");
    }
    if (!strcmp(method, "PATCH") && strstr(url, "/status")) {
        trail_add(method, url, u->body.data);
        pthread_mutex_lock(&api.mu);
        unsigned code = (unsigned)api.patch_status;
        pthread_mutex_unlock(&api.mu);
        return fake_api_status(c, code, code < 300 ? "ok" : "refused");
    }
    if (!strcmp(method, "PATCH")) {
        trail_add(method, url, u->body.data); /* a pod's metadata (checkpoint requests) */
        return fake_api_status(c, 200, "ok");
    }
    pthread_mutex_lock(&api.mu);
    unsigned code = 404;
    if (!strcmp(method, "POST") && strstr(url, "/binding")) {
        api.binds++;
        code = (unsigned)api.bind_status;
        snprintf(api.bind_body, sizeof api.bind_body, "%s", u->body.data ? u->body.data : "");
    }
    pthread_mutex_unlock(&api.mu);
    return fake_api_status(c, code, code < 300 ? "ok" : "refused");
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    upload_t *u = *con_cls;
    if (u) {
        sbuf_free(&u->body);
        free(u);
    }
}

static struct MHD_Daemon *daemon_;
static kube_client_t *kc;

static int setup(void **st)
{
    int port;
    daemon_ = fake_api_start(handler, done, &port);
    kc = daemon_ ? fake_api_client(port, 0, 0, "test_sched_faults") : NULL;
    return kc ? 0 : -1;
}

static int teardown(void **st)
{
    kube_client_free(kc);
    MHD_stop_daemon(daemon_);
    return 0;
}

static void set_bind_status(int code)
{
    pthread_mutex_lock(&api.mu);
    api.bind_status = code;
    api.binds = 0;
    pthread_mutex_unlock(&api.mu);
}

static int binds_seen(void)
{
    pthread_mutex_lock(&api.mu);
    int n = api.binds;
    pthread_mutex_unlock(&api.mu);
    return n;
}

/* ---- helpers ------------------------------------------------------------- */

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        fail_msg("bad test JSON: %s: %s", text, e.text);
    return j;
}

static scheduler_t *new_sched(void)
{
    scheduler_opts_t o;
    scheduler_opts_default(&o);
    o.identity = "test";
    char err[256];
    scheduler_t *s = scheduler_new(&o, kc, err, sizeof err);
    assert_non_null(s);
    return s;
}

/* The topology levels are the topology row's: scheduler_new refuses
 * --topology-levels that do not parse (the row's check, with its
 * message), and the services answer the levels the row keeps. */
static void test_topology_levels_of_the_row(void **st)
{
    (void)st;
    scheduler_opts_t o;
    scheduler_opts_default(&o);
    o.identity = "test";
    o.topology_levels = "a,a";
    char err[256] = "";
    assert_null(scheduler_new(&o, kc, err, sizeof err));
    assert_string_equal(err, "topology level a listed twice");
    o.topology_levels = "zone, rack";
    scheduler_t *s = scheduler_new(&o, kc, err, sizeof err);
    assert_non_null(s);
    const topo_levels_t *l = sched_services.topo_levels(s);
    assert_int_equal(l->n, 2);
    assert_string_equal(l->keys[0], "zone");
    assert_string_equal(l->keys[1], "rack");
    scheduler_free(s);
}

/* The pod text describes, parsed and in the cache (the caller's ref). */
static pod_t *cached_pod(scheduler_t *s, const char *text)
{
    json_t *j = J(text);
    char err[256];
    pod_t *p = pod_from_json(j, err, sizeof err);
    json_decref(j);
    assert_non_null(p);
    cache_upsert_pod(s->cache, p, NULL);
    return p;
}

static node_t *add_node(scheduler_t *s, const char *name, const char *cpu)
{
    char text[512];
    snprintf(
        text, sizeof text,
        "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"16Gi\",\"pods\":\"110\"}}}",
        name, cpu);
    json_t *j = J(text);
    char err[256];
    node_t *n = node_from_json(j, err, sizeof err);
    json_decref(j);
    assert_non_null(n);
    cache_upsert_node(s->cache, n);
    return n;
}

static pod_t *add_pod(scheduler_t *s, const char *name, const char *cpu, const char *pool)
{
    char text[768];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\"%s%s%s},"
             "\"spec\":{\"schedulerName\":\"ai-scheduler\",\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]}}",
             name, name, pool ? ",\"annotations\":{\"resource.aibee.cn/pool\":\"" : "", pool ? pool : "",
             pool ? "\"}" : "", cpu);
    return cached_pod(s, text);
}

static int always_fits(void *ud, node_info_t *ni)
{
    return 1;
}

/* ---- fault 1: a refused bind backs off, keeps age and attempts ----------- */

static void refused_bind(int code)
{
    set_bind_status(code);
    scheduler_t *s = new_sched();
    node_t *n = add_node(s, "n1", "4");
    pod_t *p = add_pod(s, "p1", "1", NULL);
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);

    queue_add(D->q, p, 0);
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    assert_non_null(it);
    it->attempts = 3;     /* it failed a few times before */
    it->first_ms -= 5000; /* and is five seconds old */
    int64_t first = it->first_ms;
    assert_int_equal(cache_assume(s->cache, it->pod, "n1", DEFAULT_POOL_ID, 0, always_fits, NULL), 0);
    queue_done(D->q, it);

    s->binder = binder_new(s, 1);
    int64_t t0 = util_now_ms();
    binder_submit(s->binder, it, "n1", NULL);
    queue_stats_t qs;
    memset(&qs, 0, sizeof qs);
    for (int i = 0; i < 200 && qs.backoff == 0; i++) {
        util_sleep_ms(10);
        queue_get_stats(D->q, &qs);
    }
    binder_free(s->binder);
    s->binder = NULL;
    assert_int_equal(binds_seen(), 1);
    /* Back in the backoff queue, not in activeQ. */
    assert_int_equal(qs.backoff, 1);
    assert_int_equal(qs.active, 0);
    /* Not popped before its backoff (4th attempt: 8 s) runs out. */
    assert_null(queue_pop_timeout(D->q, 50));
    queue_item_t *back = queue_take(D->q, "uid-p1");
    assert_non_null(back);
    assert_int_equal(back->attempts, 4);
    assert_true(back->first_ms == first);
    assert_true(back->backoff_until >= t0 + 8000);
    /* The assumption was undone: the pod is pending again. */
    cache_pod_state_t cst;
    pod_t *cur = cache_get_pod(s->cache, "uid-p1", &cst);
    assert_int_equal(cst, CPOD_PENDING);
    pod_unref(cur);
    queue_item_free(back);
    pod_unref(p);
    node_unref(n);
    scheduler_free(s);
}

static void test_bind_500_backs_off(void **st)
{
    refused_bind(500);
}
static void test_bind_403_backs_off(void **st)
{
    refused_bind(403);
}
static void test_bind_422_backs_off(void **st)
{
    refused_bind(422);
}

/* ---- issue 22 fault 7: a Binding names the pod's UID ------------------- */

/* Assumes p on n1 and hands it to a binder; returns once the Binding's
 * answer was handled (the binder drained). */
static void bind_and_wait(scheduler_t *s, pod_t *p)
{
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_add(D->q, p, 0);
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    assert_non_null(it);
    assert_int_equal(cache_assume(s->cache, it->pod, "n1", DEFAULT_POOL_ID, 0, always_fits, NULL), 0);
    queue_done(D->q, it);
    if (!s->writer)
        s->writer = writer_new(s, 100); /* the Scheduled event */
    s->binder = binder_new(s, 1);
    binder_submit(s->binder, it, "n1", NULL);
    binder_free(s->binder); /* drains; the answers were handled */
    s->binder = NULL;
}

/* The Binding carries metadata.uid, so the API server refuses it for a pod
 * deleted and recreated under the same name meanwhile. */
static void test_bind_carries_uid(void **st)
{
    set_bind_status(201);
    scheduler_t *s = new_sched();
    node_t *n = add_node(s, "n1", "4");
    pod_t *p = add_pod(s, "p1", "1", NULL);
    bind_and_wait(s, p);
    assert_int_equal(binds_seen(), 1);
    pthread_mutex_lock(&api.mu);
    json_t *b = J(api.bind_body);
    pthread_mutex_unlock(&api.mu);
    json_t *meta = json_object_get(b, "metadata");
    assert_string_equal(json_string_value(json_object_get(b, "kind")), "Binding");
    assert_string_equal(json_string_value(json_object_get(meta, "name")), "p1");
    assert_string_equal(json_string_value(json_object_get(meta, "namespace")), "ns");
    assert_true(json_is_string(json_object_get(meta, "uid")));
    assert_string_equal(json_string_value(json_object_get(meta, "uid")), "uid-p1");
    assert_string_equal(json_string_value(json_object_get(json_object_get(b, "target"), "name")), "n1");
    json_decref(b);
    pod_unref(p);
    node_unref(n);
    scheduler_free(s);
}

/* 409 for a replaced pod (the UID precondition failed): the assumption is
 * forgotten and the item dropped, not retried against the new pod. */
static void test_bind_409_replaced_not_retried(void **st)
{
    set_bind_status(409);
    scheduler_t *s = new_sched();
    node_t *n = add_node(s, "n1", "4");
    pod_t *p = add_pod(s, "p1", "1", NULL);
    bind_and_wait(s, p);
    assert_int_equal(binds_seen(), 1);
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_stats_t qs;
    memset(&qs, 0, sizeof qs);
    queue_get_stats(D->q, &qs);
    assert_int_equal(qs.backoff, 0);
    assert_int_equal(qs.active, 0);
    assert_null(queue_take(D->q, "uid-p1"));
    cache_pod_state_t cst;
    pod_t *cur = cache_get_pod(s->cache, "uid-p1", &cst);
    assert_int_equal(cst, CPOD_PENDING); /* no longer assumed on n1 */
    pod_unref(cur);
    pod_unref(p);
    node_unref(n);
    scheduler_free(s);
    set_bind_status(201);
}

/* ---- issue 35 fault 5: room a failed bind gives back wakes waiters ------- */

/* The pods of the default pool's queue in unschedulableQ and backoffQ. */
static void waiting(scheduler_t *s, int *unsched, int *backoff)
{
    queue_stats_t qs;
    memset(&qs, 0, sizeof qs);
    queue_get_stats(pools_get(s, DEFAULT_POOL_ID)->q, &qs);
    *unsched = qs.unschedulable;
    *backoff = qs.backoff;
}

/* p1 is assumed on n1 (all of it) and p2 waits in unschedulableQ for that
 * room; then p1's Binding is answered code, or (code 0) p1 turns out kept
 * out of scheduling before its Binding goes. The assumption is undone and
 * p2 leaves unschedulableQ at once (for backoffQ: its own first backoff
 * still runs), not at the 60 s flush. */
static void failed_bind_wakes(int code)
{
    set_bind_status(code ? code : 201);
    scheduler_t *s = new_sched();
    node_t *n = add_node(s, "n1", "2");
    pod_t *p1 = add_pod(s, "p1", "2", NULL);
    pod_t *p2 = add_pod(s, "p2", "2", NULL);
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_add(D->q, p1, 0);
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    assert_non_null(it);
    assert_int_equal(cache_assume(s->cache, it->pod, "n1", DEFAULT_POOL_ID, 0, always_fits, NULL), 0);
    queue_done(D->q, it);
    queue_add(D->q, p2, 0);
    queue_item_t *w = queue_pop_timeout(D->q, 1000);
    assert_non_null(w);
    queue_requeue(D->q, w); /* failed: n1 is p1's */
    int unsched = 0, backoff = 0;
    waiting(s, &unsched, &backoff);
    assert_int_equal(unsched, 1);
    if (!code)
        gates_hold_uid(s, "uid-p1");
    s->binder = binder_new(s, 1);
    binder_submit(s->binder, it, "n1", NULL);
    binder_free(s->binder); /* drains; the answer was handled */
    s->binder = NULL;
    assert_int_equal(binds_seen(), code ? 1 : 0);
    cache_pod_state_t cst;
    pod_unref(cache_get_pod(s->cache, "uid-p1", &cst));
    assert_int_equal(cst, CPOD_PENDING);
    waiting(s, &unsched, &backoff);
    assert_int_equal(unsched, 0);
    assert_int_equal(backoff, code == 500 ? 2 : 1); /* a 500 retries p1 after its backoff too */
    pod_unref(p1);
    pod_unref(p2);
    node_unref(n);
    scheduler_free(s);
    set_bind_status(201);
}

static void test_bind_404_wakes_waiters(void **st)
{
    failed_bind_wakes(404);
}
static void test_bind_500_wakes_waiters(void **st)
{
    failed_bind_wakes(500);
}
static void test_held_back_bind_wakes_waiters(void **st)
{
    failed_bind_wakes(0);
}

/* ---- fault 5: pod updates reach the queue at once ------------------------ */

static json_t *pod_json(const char *name, int priority, const char *toleration)
{
    char text[768];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\"},"
             "\"spec\":{\"schedulerName\":\"ai-scheduler\",\"priority\":%d,%s%s%s"
             "\"containers\":[{\"name\":\"c\"}]}}",
             name, name, priority, toleration ? "\"tolerations\":[{\"key\":\"" : "", toleration ? toleration : "",
             toleration ? "\",\"operator\":\"Exists\"}]," : "");
    return J(text);
}

static void pod_event(scheduler_t *s, kube_event_type_t type, const char *name, int prio, const char *tol)
{
    json_t *j = pod_json(name, prio, tol);
    char key[64];
    snprintf(key, sizeof key, "ns/%s", name);
    on_pod_event(s, type, key, j);
    json_decref(j);
}

/* Pod p1 added and tried once: it waits in the default pool's
 * unschedulable queue. */
static sched_pool_t *p1_unschedulable(scheduler_t *s)
{
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    pod_event(s, KUBE_ADDED, "p1", 0, NULL);
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    assert_non_null(it);
    queue_requeue(D->q, it); /* failed: unschedulable */
    queue_stats_t qs;
    queue_get_stats(D->q, &qs);
    assert_int_equal(qs.unschedulable, 1);
    return D;
}

static void test_update_leaves_unschedulable(void **st)
{
    scheduler_t *s = new_sched();
    sched_pool_t *D = p1_unschedulable(s);
    queue_item_t *it;
    queue_stats_t qs;

    /* A status-only update does not wake it. */
    pod_event(s, KUBE_MODIFIED, "p1", 0, NULL);
    queue_get_stats(D->q, &qs);
    assert_int_equal(qs.unschedulable, 1);

    /* A new toleration does, at once. */
    pod_event(s, KUBE_MODIFIED, "p1", 0, "gpu");
    queue_get_stats(D->q, &qs);
    assert_int_equal(qs.unschedulable, 0);
    assert_int_equal(qs.active, 1);
    it = queue_pop_timeout(D->q, 100);
    assert_non_null(it);
    assert_int_equal(it->pod->ntolerations, 1);
    queue_done(D->q, it);
    queue_item_free(it);
    scheduler_free(s);
}

/* A running pod on n1 with spec cpu and status allocated/applied cpu. */
static void bound_event(scheduler_t *s, kube_event_type_t type, const char *spec_cpu, const char *status_cpu)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"big\",\"namespace\":\"ns\",\"uid\":\"uid-big\"},"
             "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},"
             "\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"c\","
             "\"allocatedResources\":{\"cpu\":\"%s\"},\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]}}",
             spec_cpu, status_cpu, status_cpu);
    json_t *j = J(text);
    on_pod_event(s, type, "ns/big", j);
    json_decref(j);
}

/* A bound pod's in-place scale-down (kube 1.33+'s UpdatePodScaleDown) wakes
 * unschedulable pods at once; a resize that frees nothing does not. */
static void test_resize_down_wakes_unschedulable(void **st)
{
    scheduler_t *s = new_sched();
    sched_pool_t *D = p1_unschedulable(s);
    queue_stats_t qs;
    /* Occupies max(spec 2, status 2) = 2 cpu; then spec 3 while 2 is
     * allocated: 3; then spec 1 while 3 is still allocated: max(1, 3) = 3,
     * nothing freed yet. */
    bound_event(s, KUBE_ADDED, "2", "2");
    bound_event(s, KUBE_MODIFIED, "3", "2");
    bound_event(s, KUBE_MODIFIED, "1", "3");
    queue_get_stats(D->q, &qs);
    assert_int_equal(qs.unschedulable, 1);
    /* The kubelet applied 1 cpu: 3 -> 1 frees 2 cpu on n1. */
    bound_event(s, KUBE_MODIFIED, "1", "1");
    queue_get_stats(D->q, &qs);
    assert_int_equal(qs.unschedulable, 0);
    scheduler_free(s);
}

static void test_priority_update_resorts(void **st)
{
    scheduler_t *s = new_sched();
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    pod_event(s, KUBE_ADDED, "old", 10, NULL);
    util_sleep_ms(2);
    pod_event(s, KUBE_ADDED, "young", 0, NULL);
    pod_event(s, KUBE_MODIFIED, "young", 100, NULL); /* now the most urgent */
    queue_item_t *it = queue_pop_timeout(D->q, 100);
    assert_non_null(it);
    assert_string_equal(it->pod->name, "young");
    assert_int_equal(it->pod->priority, 100);
    queue_done(D->q, it);
    queue_item_free(it);
    scheduler_free(s);
}

/* ---- fault 9: lender choice by absolute idle amount ------------------------ */

static resources_t cpu_gpu(int64_t mcpu, int64_t gpu)
{
    resources_t r;
    res_zero(&r);
    r.milli_cpu = mcpu;
    r.memory = 64LL << 30;
    if (gpu)
        res_add_scalar(&r, RES_GPU, gpu);
    return r;
}

static void test_lender_most_idle_absolute(void **st)
{
    /* Pool A: 16 CPUs, 8 in use (8 idle, half empty); pool B: 4 CPUs, empty. */
    resources_t alloc_a = cpu_gpu(16000, 0), used_a = cpu_gpu(8000, 0);
    resources_t alloc_b = cpu_gpu(4000, 0), used_b = cpu_gpu(0, 0);
    resources_t req = cpu_gpu(1000, 0);
    int64_t a = lender_idle(&alloc_a, &used_a, &req), b = lender_idle(&alloc_b, &used_b, &req);
    assert_int_equal(a, 8000);
    assert_int_equal(b, 4000);
    assert_true(lender_better(a, 3, b, 0)); /* more idle wins over fewer tasks */
    assert_false(lender_better(b, 0, a, 3));
    /* Three 1-CPU borrowers in a row still all prefer A (8-1-1 > 4). */
    for (int i = 0; i < 3; i++) {
        res_add(&used_a, &req);
        if (i < 2)
            assert_true(lender_better(lender_idle(&alloc_a, &used_a, &req), 3 + i, b, 0));
    }
    /* Ties go to the pool with fewer tasks. */
    assert_true(lender_better(4000, 1, 4000, 2));
    assert_false(lender_better(4000, 2, 4000, 2));

    /* A GPU pod counts GPUs only: 2 free GPUs beat 1 even with fewer CPUs. */
    resources_t g_alloc1 = cpu_gpu(8000, 8), g_used1 = cpu_gpu(0, 6);
    resources_t g_alloc2 = cpu_gpu(64000, 1), g_used2 = cpu_gpu(0, 0);
    resources_t greq = cpu_gpu(1000, 1);
    assert_int_equal(lender_idle(&g_alloc1, &g_used1, &greq), 2);
    assert_int_equal(lender_idle(&g_alloc2, &g_used2, &greq), 1);
    /* Memory only when neither GPU nor CPU is asked for. */
    resources_t mreq;
    res_zero(&mreq);
    mreq.memory = 1 << 30;
    resources_t m_alloc = cpu_gpu(1000, 0), m_used = cpu_gpu(0, 0);
    m_used.memory = 60LL << 30;
    assert_int_equal(lender_idle(&m_alloc, &m_used, &mreq), 4LL << 30);
}

/* ---- fault 2: start-up waits for the Pool list ---------------------------- */

static kube_client_t *slow_client(void)
{
    int port = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT)->port;
    char server[64], err[256];
    snprintf(server, sizeof server, "http://127.0.0.1:%d", port);
    kube_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = server;
    kube_client_opts_t o = { 0, 0, 30, "test_sched_faults" };
    kube_client_t *c = kube_client_new(&cfg, &o, err, sizeof err);
    assert_non_null(c);
    return c;
}

static int node_pool(scheduler_t *s, const char *node)
{
    cache_rdlock(s->cache);
    node_info_t *ni = cache_node_locked(s->cache, node);
    int id = ni ? ni->pool : -2;
    cache_unlock(s->cache);
    return id;
}

/* The Pool LIST takes 6.5 s (longer than the old 5 s grace): start-up waits
 * for it, so the node is in pool gpu before anything can be decided. */
static void test_start_waits_for_slow_pool_list(void **st)
{
    pthread_mutex_lock(&api.mu);
    api.pools_delay_ms = 6500;
    api.pool_api = 1;
    pthread_mutex_unlock(&api.mu);
    kube_client_t *c = slow_client();
    scheduler_opts_t o;
    scheduler_opts_default(&o);
    o.identity = "test";
    o.sync_timeout_s = 30;
    char err[256];
    scheduler_t *s = scheduler_new(&o, c, err, sizeof err);
    assert_non_null(s);
    int64_t t0 = util_now_ms();
    volatile int stop = 0;
    assert_int_equal(scheduler_start(s, &stop, err, sizeof err), 0);
    int64_t took = util_now_ms() - t0;
    int gpu_id = -1;
    pthread_mutex_lock(&s->pools_mu);
    sched_pool_t *P = hashmap_get(s->pool_by_name, "gpu");
    if (P)
        gpu_id = P->id;
    pthread_mutex_unlock(&s->pools_mu);
    int pool_of_g0 = node_pool(s, "g0");
    scheduler_stop(s);
    scheduler_free(s);
    kube_client_free(c);
    pthread_mutex_lock(&api.mu);
    api.pools_delay_ms = 0;
    pthread_mutex_unlock(&api.mu);
    assert_true(took >= 6000);
    assert_true(gpu_id > 0);
    assert_int_equal(pool_of_g0, gpu_id);
}

/* No Pool CRD at all: start-up does not wait (there is nothing to isolate). */
static void test_start_without_pool_api(void **st)
{
    pthread_mutex_lock(&api.mu);
    api.pool_api = 0;
    pthread_mutex_unlock(&api.mu);
    kube_client_t *c = slow_client();
    scheduler_opts_t o;
    scheduler_opts_default(&o);
    o.identity = "test";
    char err[256];
    scheduler_t *s = scheduler_new(&o, c, err, sizeof err);
    int64_t t0 = util_now_ms();
    volatile int stop = 0;
    assert_int_equal(scheduler_start(s, &stop, err, sizeof err), 0);
    int64_t took = util_now_ms() - t0;
    int pool_of_g0 = node_pool(s, "g0");
    scheduler_stop(s);
    scheduler_free(s);
    kube_client_free(c);
    pthread_mutex_lock(&api.mu);
    api.pool_api = 1;
    pthread_mutex_unlock(&api.mu);
    /* Not the 60 s sync timeout: start goes on without the Pool API. (The
     * owner kinds' 404s cost their own 3 s wait first; under TSan on a
     * loaded machine the whole start took 4.1 s, so 8 s, far below 60.) */
    assert_true(took < 8000);
    assert_int_equal(pool_of_g0, DEFAULT_POOL_ID);
}

/* ---- fault 4: nominations ------------------------------------------------- */

static pod_t *pod_from(scheduler_t *s, const char *name, const char *cpu, int prio, const char *pool, const char *node)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\",\"annotations\":"
             "{\"resource.aibee.cn/pool\":\"%s\"}},\"spec\":{\"schedulerName\":\"ai-scheduler\",\"priority\":%d,"
             "\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},"
             "\"status\":{\"phase\":\"%s\"}}",
             name, name, pool, prio, node, cpu, node[0] ? "Running" : "Pending");
    return cached_pod(s, text);
}

static void add_pool(scheduler_t *s, const char *name)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\",\"generation\":1},"
             "\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"%s\"}}}}",
             name, name, name);
    json_t *j = J(text);
    pools_on_event(s, KUBE_ADDED, name, j);
    json_decref(j);
}

/* A borrower of any priority sees the room nominated for a home pod of the
 * lender as taken; a home pod of lower priority does not. */
static void test_borrower_ranks_below_nominated_home_pod(void **st)
{
    scheduler_t *s = new_sched();
    add_pool(s, "gpu");
    json_t *nj = J("{\"metadata\":{\"name\":\"g0\",\"labels\":{\"pool\":\"gpu\"}},"
                   "\"status\":{\"allocatable\":{\"cpu\":\"4\",\"pods\":\"10\"}}}");
    char err[256];
    node_t *n = node_from_json(nj, err, sizeof err);
    json_decref(nj);
    cache_upsert_node(s->cache, n);
    pod_t *home = pod_from(s, "home", "3", 0, "gpu", "");
    pod_t *borrower = pod_from(s, "borrower", "2", 1000, "", "");
    pod_t *home_low = pod_from(s, "homelow", "2", -5, "gpu", "");
    pod_t *home_high = pod_from(s, "homehigh", "2", 50, "gpu", "");
    cache_nominate(s->cache, home, "g0");

    cache_rdlock(s->cache);
    node_info_t *ni = cache_node_locked(s->cache, "g0");
    int cloned = 0;
    node_info_t *view = node_with_nominated(s, borrower, ni, &cloned);
    assert_true(cloned); /* the nominated pod counts */
    assert_int_equal(view->requested.milli_cpu, 3000);
    node_info_free(view);
    view = node_with_nominated(s, home_low, ni, &cloned); /* home, lower priority: counts */
    assert_true(cloned);
    node_info_free(view);
    view = node_with_nominated(s, home_high, ni, &cloned); /* home, higher priority: may take it */
    assert_false(cloned);
    assert_int_equal(view->requested.milli_cpu, 0);
    cache_unlock(s->cache);

    pod_unref(home);
    pod_unref(borrower);
    pod_unref(home_low);
    pod_unref(home_high);
    node_unref(n);
    scheduler_free(s);
}

static void set_evictions(int delay_ms, int refuse_at)
{
    pthread_mutex_lock(&api.mu);
    api.evict_delay_ms = delay_ms;
    api.evict_refuse_at = refuse_at;
    api.evictions = 0;
    api.reasons[0] = '\0';
    pthread_mutex_unlock(&api.mu);
}

static int api_int(int *f)
{
    pthread_mutex_lock(&api.mu);
    int v = *f;
    pthread_mutex_unlock(&api.mu);
    return v;
}

/* The post-filter rows for one popped pod (a set of one); the item stays
 * the test's unless a row moved it. */
static ext_rc_t post_filter_one(sched_pool_t *P, queue_item_t *it)
{
    pod_set_t set;
    pod_set_init(&set, P, SET_LONE, it);
    ext_rc_t rc = sched_post_filter(&set);
    set.items[0] = NULL;
    pod_set_clear(&set);
    return rc;
}

/* The queues row's admission for a gang's minimum items[0..n): why it is
 * held (caller frees), or NULL. */
static char *admit_minimum(sched_pool_t *P, queue_item_t **items, int n)
{
    pod_set_t set;
    pod_set_init(&set, P, SET_MINIMUM, items[0]);
    free(set.items);
    set.items = calloc((size_t)n, sizeof(*set.items));
    memcpy(set.items, items, (size_t)n * sizeof(*items));
    set.n = set.need = n;
    set.label = strdup("pod group ns/job");
    char *why = tenants_row_admit(sched_row(P->s, "tenants"), &set) == EXT_HOLD ? strdup(set.why) : NULL;
    for (int i = 0; i < n; i++)
        set.items[i] = NULL;
    pod_set_clear(&set);
    return why;
}

/* n1 (2 CPUs) is full of two 1-CPU pods of priority 0; a 2-CPU pod of
 * priority 100 preempts both. The pool thread (the post-filter rows) returns at
 * once although each eviction takes 800 ms. */
static scheduler_t *preemption_setup(queue_item_t **out)
{
    scheduler_t *s = new_sched();
    s->writer = writer_new(s, 100);
    s->evictor = evictor_new(s);
    node_t *n = add_node(s, "n1", "2");
    node_unref(n);
    /* An unknown pool annotation: home is default, looked up under pools_mu. */
    pod_unref(pod_from(s, "v1", "1", 0, "no-such-pool", "n1"));
    pod_unref(pod_from(s, "v2", "1", 0, "no-such-pool", "n1"));
    pod_t *pre = pod_from(s, "pre", "2", 100, "", "");
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_add(D->q, pre, 0);
    pod_unref(pre);
    *out = queue_pop_timeout(D->q, 1000);
    assert_non_null(*out);
    return s;
}

static int nominated_on(scheduler_t *s, const char *node)
{
    pod_t *const *noms;
    cache_rdlock(s->cache);
    int n = cache_nominated_locked(s->cache, node, &noms);
    cache_unlock(s->cache);
    return n;
}

static void victims_teardown(scheduler_t *s)
{
    evictor_free(s->evictor);
    s->evictor = NULL;
    writer_free(s->writer);
    s->writer = NULL;
    scheduler_free(s);
}

static void preemption_teardown(scheduler_t *s, queue_item_t *it)
{
    queue_requeue(pools_get(s, DEFAULT_POOL_ID)->q, it);
    victims_teardown(s);
}

static void test_evictions_off_pool_thread(void **st)
{
    set_evictions(800, 0);
    queue_item_t *it;
    scheduler_t *s = preemption_setup(&it);
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    int64_t t0 = util_now_ms();
    assert_int_equal(post_filter_one(D, it), EXT_DONE);
    int64_t took = util_now_ms() - t0;
    assert_true(took < 500);                    /* not 2 x 800 ms */
    assert_int_equal(nominated_on(s, "n1"), 1); /* the room is reserved at once */
    /* Asked again meanwhile, it waits for its victims: no second job. */
    assert_int_equal(post_filter_one(D, it), EXT_DONE);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 2);
    scheduler_stats_t ss;
    scheduler_get_stats(s, &ss);
    assert_int_equal(ss.preemptions, 1);
    assert_int_equal(ss.victims, 2);
    assert_int_equal(ss.evictions_refused, 0);
    preemption_teardown(s, it);
}

/* kube-scheduler deletes a victim with no grace override (the pod's own
 * terminationGracePeriodSeconds) after patching a DisruptionTarget
 * condition (reason PreemptionByScheduler) onto its status: the default
 * (-1) does the same through the Eviction API, so its body carries no
 * deleteOptions; --eviction-grace-period 0 sends gracePeriodSeconds 0. A
 * server that refuses the condition (422) still gets the eviction. */
static void run_victims(int grace, int patch_status, char *trail, size_t n)
{
    set_evictions(0, 0);
    pthread_mutex_lock(&api.mu);
    api.patch_status = patch_status;
    api.trail[0] = 0;
    pthread_mutex_unlock(&api.mu);
    queue_item_t *it;
    scheduler_t *s = preemption_setup(&it);
    s->opts.eviction_grace_s = grace;
    assert_int_equal(post_filter_one(pools_get(s, DEFAULT_POOL_ID), it), EXT_DONE);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 2);
    pthread_mutex_lock(&api.mu);
    snprintf(trail, n, "%s", api.trail);
    api.patch_status = 200;
    pthread_mutex_unlock(&api.mu);
    preemption_teardown(s, it);
}

/* The trail's line that starts with prefix, or fails. */
static const char *trail_line(const char *trail, const char *prefix)
{
    const char *l = strstr(trail, prefix);
    if (!l)
        fail_msg("no \"%s\" in:\n%s", prefix, trail);
    return l;
}

static void test_victims_own_grace_and_condition(void **st)
{
    char trail[4096];
    scheduler_opts_t o;
    scheduler_opts_default(&o);
    assert_int_equal(o.eviction_grace_s, -1);
    run_victims(-1, 200, trail, sizeof trail);
    const char *patch = trail_line(trail, "PATCH /api/v1/namespaces/ns/pods/v1/status ");
    const char *evict = trail_line(trail, "POST /api/v1/namespaces/ns/pods/v1/eviction ");
    assert_true(patch < evict); /* condition first, as kube's prepareCandidate */
    const char *b = strchr(patch, '{');
    json_t *body = json_loadb(b, (size_t)(strchr(b, '\n') - b), 0, NULL);
    assert_non_null(body);
    json_t *cond = json_array_get(json_object_get(json_object_get(body, "status"), "conditions"), 0);
    assert_string_equal(json_string_value(json_object_get(cond, "type")), "DisruptionTarget");
    assert_string_equal(json_string_value(json_object_get(cond, "status")), "True");
    assert_string_equal(json_string_value(json_object_get(cond, "reason")), "PreemptionByScheduler");
    assert_non_null(strstr(json_string_value(json_object_get(cond, "message")),
                           ": preempting to accommodate a higher priority pod"));
    json_decref(body);
    assert_null(strstr(trail, "deleteOptions"));

    run_victims(0, 200, trail, sizeof trail);
    evict = trail_line(trail, "POST /api/v1/namespaces/ns/pods/v2/eviction ");
    assert_non_null(strstr(evict, "\"deleteOptions\":{\"gracePeriodSeconds\":0}"));

    /* A v1.20-era refusal of the condition: both victims still go. */
    run_victims(-1, 422, trail, sizeof trail);
    trail_line(trail, "POST /api/v1/namespaces/ns/pods/v1/eviction ");
    trail_line(trail, "POST /api/v1/namespaces/ns/pods/v2/eviction ");
}

/* The second eviction is refused (429): an event on the preemptor says so,
 * the counter moves, and the room is given back. */
static void test_refused_eviction_explained(void **st)
{
    set_evictions(0, 2);
    queue_item_t *it;
    scheduler_t *s = preemption_setup(&it);
    assert_int_equal(post_filter_one(pools_get(s, DEFAULT_POOL_ID), it), EXT_DONE);
    evictor_wait_idle(s->evictor);
    scheduler_stats_t ss;
    scheduler_get_stats(s, &ss);
    assert_int_equal(ss.evictions_refused, 1);
    assert_int_equal(ss.preemptions, 0);
    assert_int_equal(ss.victims, 1);
    assert_int_equal(nominated_on(s, "n1"), 0); /* no room held for nothing */
    int seen = 0;
    for (int i = 0; i < 100 && !seen; i++) {
        pthread_mutex_lock(&api.mu);
        seen = strstr(api.reasons, "PreemptionIncomplete") != NULL;
        pthread_mutex_unlock(&api.mu);
        if (!seen)
            util_sleep_ms(20);
    }
    assert_true(seen);
    preemption_teardown(s, it);
}

/* A set of one keeps every candidate node its victim search found: the
 * first eviction is refused (429), and the evictor moves the room to the
 * other node and evicts there (preempt_eval hands it all the candidates). */
static void test_refused_eviction_next_node(void **st)
{
    (void)st;
    set_evictions(0, 1);
    scheduler_t *s = new_sched();
    s->writer = writer_new(s, 100);
    s->evictor = evictor_new(s);
    node_unref(add_node(s, "n1", "2"));
    node_unref(add_node(s, "n2", "2"));
    pod_unref(pod_from(s, "v1", "2", 0, "no-such-pool", "n1"));
    pod_unref(pod_from(s, "v2", "2", 0, "no-such-pool", "n2"));
    pod_t *pre = pod_from(s, "pre", "2", 100, "", "");
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_add(D->q, pre, 0);
    pod_unref(pre);
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    assert_non_null(it);
    assert_int_equal(post_filter_one(D, it), EXT_DONE);
    evictor_wait_idle(s->evictor);
    scheduler_stats_t ss;
    scheduler_get_stats(s, &ss);
    assert_int_equal(ss.evictions_refused, 1);
    assert_int_equal(ss.preemptions, 1);
    assert_int_equal(api_int(&api.evictions), 2);
    assert_int_equal(nominated_on(s, "n1") + nominated_on(s, "n2"), 1);
    preemption_teardown(s, it);
}

/* ---- checkpoint before eviction ---------------------------------------- */

/* A running pod on node with a checkpoint-grace annotation (NULL: none)
 * and a checkpointed-at one (NULL: none), priority 0, 1 CPU. */
static pod_t *ckpt_pod_in(scheduler_t *s, const char *name, const char *node, const char *grace, const char *saved,
                          const char *gang)
{
    char text[1024], ann[256] = "\"resource.aibee.cn/pool\":\"no-such-pool\"";
    if (grace)
        snprintf(ann + strlen(ann), sizeof ann - strlen(ann), ",\"" CHECKPOINT_GRACE_ANNOTATION "\":\"%s\"", grace);
    if (saved)
        snprintf(ann + strlen(ann), sizeof ann - strlen(ann), ",\"" CHECKPOINTED_AT_ANNOTATION "\":\"%s\"", saved);
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\",\"annotations\":{%s}%s%s%s},"
             "\"spec\":{\"schedulerName\":\"ai-scheduler\",\"priority\":0,\"nodeName\":\"%s\",\"containers\":"
             "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\"}}",
             name, name, ann, gang ? ",\"labels\":{\"" GANG_LABEL "\":\"" : "", gang ? gang : "", gang ? "\"}" : "",
             node);
    return cached_pod(s, text);
}

static pod_t *ckpt_pod(scheduler_t *s, const char *name, const char *node, const char *grace, const char *saved)
{
    return ckpt_pod_in(s, name, node, grace, saved, NULL);
}

/* n1 (2 CPUs) holds v1 and v2 (1 CPU each, the graces given); pre (2
 * CPUs, priority 100) is popped and preempts both. */
static scheduler_t *ckpt_setup_in(const char *g1, const char *g2, const char *gang, queue_item_t **out)
{
    set_evictions(0, 0);
    pthread_mutex_lock(&api.mu);
    api.trail[0] = 0;
    pthread_mutex_unlock(&api.mu);
    scheduler_t *s = new_sched();
    s->writer = writer_new(s, 100);
    s->evictor = evictor_new(s);
    node_unref(add_node(s, "n1", "2"));
    pod_unref(ckpt_pod_in(s, "v1", "n1", g1, NULL, gang));
    pod_unref(ckpt_pod_in(s, "v2", "n1", g2, NULL, gang));
    pod_t *pre = pod_from(s, "pre", "2", 100, "", "");
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_add(D->q, pre, 0);
    pod_unref(pre);
    *out = queue_pop_timeout(D->q, 1000);
    assert_non_null(*out);
    assert_int_equal(post_filter_one(D, *out), EXT_DONE);
    evictor_wait_idle(s->evictor);
    return s;
}

static scheduler_t *ckpt_setup(const char *g1, const char *g2, queue_item_t **out)
{
    return ckpt_setup_in(g1, g2, NULL, out);
}

static int trail_has(const char *needle)
{
    pthread_mutex_lock(&api.mu);
    int has = strstr(api.trail, needle) != NULL;
    pthread_mutex_unlock(&api.mu);
    return has;
}

/* Waits up to ms for api.evictions to reach n; the time it took, or -1. */
static int64_t wait_evictions(int n, int ms)
{
    int64_t t0 = util_now_ms();
    while (api_int(&api.evictions) < n) {
        if (util_now_ms() - t0 > ms)
            return -1;
        util_sleep_ms(10);
    }
    return util_now_ms() - t0;
}

/* v1 asks for 30 s, v2 for none: v2 goes at once, v1 is asked (condition
 * and annotation), the preemptor waits without a second plan, and v1 goes
 * as soon as its acknowledgement reaches the informer. */
static void test_checkpoint_ack_evicts_at_once(void **st)
{
    queue_item_t *it;
    scheduler_t *s = ckpt_setup("30s", NULL, &it);
    assert_int_equal(api_int(&api.evictions), 1);
    assert_true(trail_has("POST /api/v1/namespaces/ns/pods/v2/eviction"));
    assert_true(evictor_requested(s->evictor, "uid-v1"));
    assert_false(evictor_requested(s->evictor, "uid-v2"));
    assert_true(trail_has("PATCH /api/v1/namespaces/ns/pods/v1/status {\"status\":{\"conditions\":[{\"type\":"
                          "\"PreemptionRequested\",\"status\":\"True\",\"reason\":\"Preemption\""));
    assert_true(trail_has(
        "PATCH /api/v1/namespaces/ns/pods/v1 {\"metadata\":{\"annotations\":{\"" PREEMPTION_REQUESTED_ANNOTATION
        "\":\""));
    assert_int_equal(nominated_on(s, "n1"), 1);
    /* Asked again meanwhile, it waits for its victims: no second plan. */
    assert_int_equal(post_filter_one(pools_get(s, DEFAULT_POOL_ID), it), EXT_DONE);
    evictor_wait_idle(s->evictor);
    util_sleep_ms(300);
    assert_int_equal(api_int(&api.evictions), 1);
    /* An old save (before the request) is no acknowledgement. */
    pod_t *old = ckpt_pod(s, "v1", "n1", "30s", "2020-01-01T00:00:00Z");
    evictor_pod_seen(s->evictor, old, 1);
    pod_unref(old);
    assert_int_equal(wait_evictions(2, 400), -1);
    char now[64];
    util_rfc3339(util_wall_ms(), now, sizeof now);
    pod_t *acked = ckpt_pod(s, "v1", "n1", "30s", now);
    evictor_pod_seen(s->evictor, acked, 1);
    pod_unref(acked);
    int64_t took = wait_evictions(2, 2000);
    assert_true(took >= 0 && took < 200); /* seen at once, not at the next tick */
    assert_true(trail_has("POST /api/v1/namespaces/ns/pods/v1/eviction"));
    for (int i = 0; i < 100 && evictor_requested(s->evictor, "uid-v1"); i++)
        util_sleep_ms(10); /* the request ends just after the eviction's answer */
    assert_false(evictor_requested(s->evictor, "uid-v1"));
    scheduler_stats_t ss;
    scheduler_get_stats(s, &ss);
    assert_int_equal(ss.checkpoint_requests, 1);
    assert_int_equal(ss.checkpoint_acked, 1);
    assert_int_equal(ss.checkpoint_deadlines, 0);
    assert_int_equal(ss.victims, 2);
    preemption_teardown(s, it);
}

/* v1 (grace 30 s) and v2 (none) are one gang: v2 is held with its mate
 * (evicting it at once would break a gang still saving) and both go when
 * v1 acknowledges. */
static void test_checkpoint_gang_mates_held(void **st)
{
    queue_item_t *it;
    scheduler_t *s = ckpt_setup_in("30s", NULL, "job", &it);
    util_sleep_ms(300);
    assert_int_equal(api_int(&api.evictions), 0);
    assert_true(evictor_requested(s->evictor, "uid-v1"));
    assert_true(evictor_requested(s->evictor, "uid-v2"));
    assert_false(trail_has("PATCH /api/v1/namespaces/ns/pods/v2/status")); /* held, not asked */
    char now[64];
    util_rfc3339(util_wall_ms(), now, sizeof now);
    pod_t *acked = ckpt_pod_in(s, "v1", "n1", "30s", now, "job");
    evictor_pod_seen(s->evictor, acked, 1);
    pod_unref(acked);
    assert_true(wait_evictions(2, 2000) >= 0);
    assert_true(trail_has("POST /api/v1/namespaces/ns/pods/v2/eviction"));
    preemption_teardown(s, it);
}

/* No acknowledgement: evicted at the deadline (the grace, rounded up to
 * the second the annotation names), not before. */
static void test_checkpoint_deadline(void **st)
{
    queue_item_t *it;
    int64_t t0 = util_now_ms();
    scheduler_t *s = ckpt_setup("1s", "1s", &it);
    assert_int_equal(api_int(&api.evictions), 0);
    int64_t took = wait_evictions(2, 4000);
    assert_true(took >= 0);
    int64_t at = util_now_ms() - t0;
    assert_true(at >= 1000 && at <= 2400);
    scheduler_stats_t ss;
    /* The counter moves just after the eviction's answer. */
    for (int i = 0; i < 100; i++) {
        scheduler_get_stats(s, &ss);
        if (ss.checkpoint_deadlines == 2)
            break;
        util_sleep_ms(10);
    }
    assert_int_equal(ss.checkpoint_requests, 2);
    assert_int_equal(ss.checkpoint_deadlines, 2);
    preemption_teardown(s, it);
}

/* The preemptor goes away during the grace: the request is withdrawn
 * (condition False, annotation removed), nothing is evicted, the victims
 * count for their queue again and the room is no longer held. */
static void test_checkpoint_withdrawn(void **st)
{
    queue_item_t *it;
    scheduler_t *s = ckpt_setup("30s", "30s", &it);
    assert_int_equal(api_int(&api.evictions), 0);
    pod_t *gone = NULL;
    cache_delete_pod(s->cache, "uid-pre", &gone, NULL);
    pod_unref(gone);
    /* v2's annotation is the withdrawal's last write. */
    const char *last =
        "PATCH /api/v1/namespaces/ns/pods/v2 {\"metadata\":{\"annotations\":{\"" PREEMPTION_REQUESTED_ANNOTATION
        "\":null}}}";
    for (int i = 0; i < 300 && !trail_has(last); i++)
        util_sleep_ms(10);
    assert_true(trail_has("PATCH /api/v1/namespaces/ns/pods/v1/status {\"status\":{\"conditions\":[{\"type\":"
                          "\"PreemptionRequested\",\"status\":\"False\",\"reason\":\"PreemptionWithdrawn\""));
    assert_true(trail_has(
        "PATCH /api/v1/namespaces/ns/pods/v2 {\"metadata\":{\"annotations\":{\"" PREEMPTION_REQUESTED_ANNOTATION
        "\":null}}}"));
    util_sleep_ms(300);
    assert_int_equal(api_int(&api.evictions), 0);
    assert_false(evictor_requested(s->evictor, "uid-v1"));
    assert_true(s->queues.ops->is_charged(s->queues.self, "uid-v1"));
    assert_true(s->queues.ops->is_charged(s->queues.self, "uid-v2"));
    assert_int_equal(nominated_on(s, "n1"), 0);
    scheduler_stats_t ss;
    scheduler_get_stats(s, &ss);
    assert_int_equal(ss.checkpoint_withdrawn, 1);
    preemption_teardown(s, it);
}

/* A pod carrying our annotation with no request here (an earlier run's):
 * cleared, nothing evicted; one this process just ended is not. */
static void test_checkpoint_stale_cleared(void **st)
{
    set_evictions(0, 0);
    pthread_mutex_lock(&api.mu);
    api.trail[0] = 0;
    pthread_mutex_unlock(&api.mu);
    scheduler_t *s = new_sched();
    s->writer = writer_new(s, 100);
    s->evictor = evictor_new(s);
    node_unref(add_node(s, "n1", "2"));
    pod_t *v = ckpt_pod(s, "v1", "n1", "30s", NULL);
    evictor_pod_seen(s->evictor, v, 1);
    pod_unref(v);
    for (int i = 0; i < 300 && !trail_has("PATCH /api/v1/namespaces/ns/pods/v1 "); i++)
        util_sleep_ms(10);
    assert_true(trail_has("PATCH /api/v1/namespaces/ns/pods/v1/status {\"status\":{\"conditions\":[{\"type\":"
                          "\"PreemptionRequested\",\"status\":\"False\",\"reason\":\"PreemptionWithdrawn\""));
    assert_int_equal(api_int(&api.evictions), 0);
    victims_teardown(s);
}

/* A row's round mark on an item (the lender row's: sent home) makes it
 * wait out a backoff when its cycle fails, not the next event, and the
 * core clears it as it gives the item back; an item without one waits as
 * unschedulable. */
static void test_round_mark_backs_off(void **st)
{
    set_evictions(0, 0);
    scheduler_t *s = new_sched();
    s->writer = writer_new(s, 100);
    s->evictor = evictor_new(s);
    node_unref(add_node(s, "n1", "2"));
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    for (int marked = 0; marked < 2; marked++) {
        pod_t *p = pod_from(s, marked ? "big1" : "big0", "4", 0, "", ""); /* fits nowhere */
        queue_add(D->q, p, 0);
        pod_unref(p);
        queue_item_t *it = queue_pop_timeout(D->q, 1000);
        assert_non_null(it);
        if (marked)
            it->round_marks = 1u << sched_row(s, "lender")->index;
        sched_schedule_item(D, it);
        queue_stats_t qs;
        queue_get_stats(D->q, &qs);
        assert_int_equal(qs.unschedulable, 1);
        assert_int_equal(qs.backoff, marked);
    }
    queue_item_t *it = queue_take(D->q, "uid-big1");
    assert_non_null(it);
    assert_int_equal(it->round_marks, 0);
    queue_item_free(it);
    victims_teardown(s);
}

/* A preemptor that finds no victims any more gives its old room back. */
static void test_give_up_clears_nomination(void **st)
{
    set_evictions(0, 0);
    scheduler_t *s = new_sched();
    s->writer = writer_new(s, 100);
    s->evictor = evictor_new(s);
    node_unref(add_node(s, "n1", "2"));
    pod_unref(pod_from(s, "big", "2", 1000, "", "n1")); /* cannot be preempted */
    pod_t *pre = pod_from(s, "pre", "2", 100, "", "");
    cache_nominate(s->cache, pre, "n1"); /* from an earlier round */
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_add(D->q, pre, 0);
    pod_unref(pre);
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    it->round_marks = 1u << sched_row(s, "lender")->index; /* sent home: no borrowing */
    assert_int_equal(post_filter_one(D, it), EXT_NEXT);
    assert_int_equal(nominated_on(s, "n1"), 0);
    preemption_teardown(s, it);
}

/* Issue 35 fault 5: a pending pod nominated to n1 holds room there for
 * lower-priority pods (node_with_nominated). When it gives the room up, or
 * is deleted, the pod waiting for that room leaves unschedulableQ at once
 * (was: at the 60 s flush); a pending pod that held nothing wakes nobody. */
static void test_nomination_gone_wakes_waiters(void **st)
{
    scheduler_t *s = new_sched();
    node_unref(add_node(s, "n1", "2"));
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    pod_event(s, KUBE_ADDED, "nom", 100, NULL);
    pod_event(s, KUBE_ADDED, "other", 100, NULL);
    queue_item_free(queue_take(D->q, "uid-nom")); /* out of the queue: it waits for its victims */
    queue_item_free(queue_take(D->q, "uid-other"));
    pod_t *nom = cache_get_pod(s->cache, "uid-nom", NULL);
    assert_non_null(nom);
    pod_event(s, KUBE_ADDED, "w", 0, NULL);
    int unsched = 0, backoff = 0;
    for (int round = 0; round < 3; round++) {
        queue_item_t *it = queue_take(D->q, "uid-w");
        if (it)
            queue_push_item(D->q, it);
        it = queue_pop_timeout(D->q, 1000);
        assert_non_null(it);
        queue_requeue(D->q, it); /* failed: n1 is held for nom */
        cache_nominate(s->cache, nom, "n1");
        waiting(s, &unsched, &backoff);
        assert_int_equal(unsched, 1);
        if (round == 0)
            pod_event(s, KUBE_DELETED, "other", 100, NULL); /* held nothing */
        else if (round == 1)
            postfilter_drop_nomination(s, nom); /* gave the room up */
        else
            pod_event(s, KUBE_DELETED, "nom", 100, NULL);
        waiting(s, &unsched, &backoff);
        assert_int_equal(unsched, round == 0 ? 1 : 0);
        assert_int_equal(backoff, round == 0 ? 0 : 1);
    }
    assert_int_equal(cache_is_nominated(s->cache, "uid-nom"), 0);
    pod_unref(nom);
    scheduler_free(s);
}

/* ---- fault 7: the victim search runs without the cache lock --------------- */

typedef struct lock_probe {
    scheduler_t *s;
    sched_pool_t *P;
    pod_t *pod;
    int rc;
    int done; /* atomic */
} lock_probe_t;

static void *run_preempt(void *arg)
{
    lock_probe_t *lp = arg;
    lp->rc = postfilter_preempt(lp->P, lp->pod, 0);
    __atomic_store_n(&lp->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *run_pod_update(void *arg)
{
    lock_probe_t *lp = arg;
    pod_unref(pod_from(lp->s, "newcomer", "1", 0, "", "")); /* takes the cache write lock */
    __atomic_store_n(&lp->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* The victim search is held up (pools_mu, which is_victim needs, is held
 * here); an informer's pod update must still get the cache write lock. */
static void test_preemption_scan_unlocked(void **st)
{
    set_evictions(0, 0);
    queue_item_t *it;
    scheduler_t *s = preemption_setup(&it);
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    lock_probe_t pre = { s, D, it->pod, -1, 0 }, upd = { s, D, NULL, 0, 0 };
    pthread_t a, w;
    pthread_mutex_lock(&s->pools_mu);
    pthread_create(&a, NULL, run_preempt, &pre);
    util_sleep_ms(200); /* the search is waiting for pools_mu */
    pthread_create(&w, NULL, run_pod_update, &upd);
    int updated = 0;
    for (int i = 0; i < 100 && !updated; i++) {
        util_sleep_ms(10);
        updated = __atomic_load_n(&upd.done, __ATOMIC_SEQ_CST);
    }
    int preempt_done_early = __atomic_load_n(&pre.done, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&s->pools_mu);
    pthread_join(a, NULL);
    pthread_join(w, NULL);
    assert_false(preempt_done_early); /* it really was held up */
    assert_true(updated);             /* and the write went through meanwhile */
    assert_int_equal(pre.rc, 1);
    evictor_wait_idle(s->evictor);
    preemption_teardown(s, it);
}

/* ---- issue 22: gangs as victims and as preemptors -------------------------- */

/* A gang member on node (or pending when node is ""), in the gang store too. */
static pod_t *gang_pod(scheduler_t *s, const char *name, const char *group, int prio, const char *node)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\",\"labels\":"
             "{\"" GANG_LABEL "\":\"%s\",\"app\":\"%s\"},\"creationTimestamp\":\"2026-01-01T00:00:01Z\"},"
             "\"spec\":{\"schedulerName\":\"ai-scheduler\",\"priority\":%d,\"nodeName\":\"%s\",\"containers\":"
             "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"%s\"}}",
             name, name, group, group, prio, node, node[0] ? "Running" : "Pending");
    pod_t *p = cached_pod(s, text);
    gang_pod_upsert(s->published.group_store, p);
    return p;
}

static void add_podgroup(scheduler_t *s, const char *name, int min)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"pg-%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"minMember\":%d}}",
             name, name, min);
    json_t *j = J(text);
    char err[256];
    podgroup_t *pg = podgroup_from_json(j, err, sizeof err);
    json_decref(j);
    assert_non_null(pg);
    gang_group_upsert(s->published.group_store, pg);
}

/* Queue train with cpu as its spec.resources.cpu (JSON). */
static void add_train_queue(scheduler_t *s, const char *cpu)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"apiVersion\":\"resource.aibee.cn/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"train\","
             "\"uid\":\"q-train\"},\"spec\":{\"resources\":{\"cpu\":%s}}}",
             cpu);
    json_t *q = J(text);
    scheduler_feed(s, "Queue", "ADDED", "train", q);
    json_decref(q);
}

static scheduler_t *victims_setup(void)
{
    set_evictions(0, 0);
    scheduler_t *s = new_sched();
    s->writer = writer_new(s, 100);
    s->evictor = evictor_new(s);
    node_unref(add_node(s, "n1", "1"));
    node_unref(add_node(s, "n2", "1"));
    return s;
}

/* Issue 22, fault 8: a gang goes whole, and each mate must itself be a
 * victim: a priority-500 pod does not evict the priority-1000 master of a
 * gang whose priority-0 worker sits where it wants to go. */
static void test_gang_mates_follow_victim_rules(void **st)
{
    scheduler_t *s = victims_setup();
    add_podgroup(s, "job", 2);
    pod_unref(gang_pod(s, "worker", "job", 0, "n1"));
    pod_unref(gang_pod(s, "master", "job", 1000, "n2"));
    pod_t *pre = pod_from(s, "pre", "1", 500, "", "");
    assert_int_equal(postfilter_preempt(pools_get(s, DEFAULT_POOL_ID), pre, 0), 0);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 0);
    assert_int_equal(nominated_on(s, "n1"), 0);
    /* The same gang at priority 0 throughout goes, whole. */
    pod_unref(gang_pod(s, "master", "job", 0, "n2"));
    assert_int_equal(postfilter_preempt(pools_get(s, DEFAULT_POOL_ID), pre, 0), 1);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 2);
    pod_unref(pre);
    victims_teardown(s);
}

/* Issue 22, fault 8: a PDB that protects a mate keeps the gang out of the
 * victims (the Eviction API would stop halfway, leaving half a gang). */
static void test_gang_victims_respect_pdb(void **st)
{
    scheduler_t *s = victims_setup();
    add_podgroup(s, "job", 2);
    pod_unref(gang_pod(s, "worker", "job", 0, "n1"));
    pod_unref(gang_pod(s, "master", "job", 0, "n2"));
    json_t *pdb = J("{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"job\","
                    "\"namespace\":\"ns\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"job\"}}},"
                    "\"status\":{\"disruptionsAllowed\":1}}");
    on_pdb_event(s, KUBE_ADDED, "ns/job", pdb);
    json_decref(pdb);
    pod_t *pre = pod_from(s, "pre", "1", 500, "", "");
    assert_int_equal(postfilter_preempt(pools_get(s, DEFAULT_POOL_ID), pre, 0), 0);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 0);
    pod_unref(pre);
    victims_teardown(s);
}

/* Issue 22, fault 6: a gang preempts for its minimum of two; the second
 * eviction is refused: every member's nomination goes, not the first's
 * only. */
static void test_refused_gang_eviction_gives_back_all(void **st)
{
    set_evictions(0, 2);
    scheduler_t *s = new_sched();
    s->writer = writer_new(s, 100);
    s->evictor = evictor_new(s);
    node_unref(add_node(s, "n1", "2"));
    pod_unref(pod_from(s, "v1", "1", 0, "", "n1"));
    pod_unref(pod_from(s, "v2", "1", 0, "", "n1"));
    add_podgroup(s, "train", 2);
    pod_t *a = gang_pod(s, "ta", "train", 100, "");
    pod_t *b = gang_pod(s, "tb", "train", 100, "");
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_add(D->q, a, 0);
    queue_add(D->q, b, 0);
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    assert_non_null(it);
    sched_schedule_item(D, it);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 2);
    scheduler_stats_t ss;
    scheduler_get_stats(s, &ss);
    assert_int_equal(ss.evictions_refused, 1);
    assert_int_equal(nominated_on(s, "n1"), 0);
    pod_unref(a);
    pod_unref(b);
    victims_teardown(s);
}

/* Issue 22, fault 2: a gang that reclaimed under its queue's limit holds a
 * provisional charge for its minimum; its next turn is not refused by that
 * same charge (a limit equal to the job's size). */
static void test_gang_not_blocked_by_own_charge(void **st)
{
    scheduler_t *s = victims_setup();
    add_train_queue(s, "{\"quota\":2000,\"limit\":2000}");
    add_podgroup(s, "job", 2);
    char text[1024];
    pod_t *m[2];
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof text,
                 "{\"metadata\":{\"name\":\"m%d\",\"namespace\":\"ns\",\"uid\":\"uid-m%d\",\"labels\":"
                 "{\"" GANG_LABEL "\":\"job\",\"resource.aibee.cn/queue\":\"train\"}},\"spec\":{\"schedulerName\":"
                 "\"ai-scheduler\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}",
                 i, i);
        m[i] = cached_pod(s, text);
    }
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    tenants_row_tick(sched_row(s, "tenants"), D);
    queue_add(D->q, m[0], 0);
    queue_add(D->q, m[1], 0);
    queue_item_t *items[2];
    for (int i = 0; i < 2; i++) {
        items[i] = queue_pop_timeout(D->q, 1000);
        assert_non_null(items[i]);
    }
    char *why = admit_minimum(D, items, 2);
    assert_null(why);
    /* It preempted: the minimum is charged until bound. */
    victim_ctx_t vc = { .s = s, .pool_id = DEFAULT_POOL_ID };
    pe_victim_ctx(D, m, 2, 0, &vc);
    assert_true(vc.queues);
    s->queues.ops->reserve(s->queues.self, vc.tenant, vc.pool_id, m, 2, NULL, 0);
    why = admit_minimum(D, items, 2);
    if (why)
        fail_msg("refused by its own charge: %s", why);
    assert_true(s->queues.ops->is_charged(s->queues.self, "uid-m0"));
    for (int i = 0; i < 2; i++) {
        queue_requeue(D->q, items[i]);
        pod_unref(m[i]);
    }
    victims_teardown(s);
}

/* Issue 22: one admission row for every pod set. A gang's minimum over its
 * queue's limit makes room among the queue's own lower-priority pods, as a
 * lone pod does; an elastic member beyond the minimum is held with the
 * limit's message and displaces nobody. */
static pod_t *queue_pod(scheduler_t *s, const char *name, int prio, const char *node, const char *group)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\",\"labels\":"
             "{\"resource.aibee.cn/queue\":\"train\"%s%s%s}},\"spec\":{\"schedulerName\":\"ai-scheduler\","
             "\"priority\":%d,\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
             "{\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"%s\"}}",
             name, name, group ? ",\"" GANG_LABEL "\":\"" : "", group ? group : "", group ? "\"" : "", prio, node,
             node[0] ? "Running" : "Pending");
    pod_t *p = cached_pod(s, text);
    if (group)
        gang_pod_upsert(s->published.group_store, p);
    return p;
}

static void test_limit_room_for_minimum_not_surplus(void **st)
{
    scheduler_t *s = victims_setup();
    add_train_queue(s, "{\"quota\":2000,\"limit\":2000}");
    pod_unref(queue_pod(s, "low1", 0, "n1", NULL));
    pod_unref(queue_pod(s, "low2", 0, "n2", NULL));
    add_podgroup(s, "job", 1);
    pod_t *m = queue_pod(s, "m0", 100, "", "job");
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    tenants_row_tick(sched_row(s, "tenants"), D);
    queue_add(D->q, m, 0);
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    assert_non_null(it);

    /* As an elastic member: held, nobody evicted. */
    pod_set_t set;
    pod_set_init(&set, D, SET_SURPLUS, it);
    set.label = strdup("pod group ns/job");
    assert_int_equal(tenants_row_admit(sched_row(s, "tenants"), &set), EXT_HOLD);
    assert_non_null(strstr(set.why, "elastic member of pod group ns/job"));
    assert_null(strstr(set.why, "reclaiming"));
    set.items[0] = NULL;
    pod_set_clear(&set);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 0);

    /* As the minimum: held while one of team's priority-0 pods goes. */
    char *why = admit_minimum(D, &it, 1);
    assert_non_null(why);
    if (!strstr(why, "reclaiming under the limit"))
        fail_msg("no room made: %s", why);
    free(why);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 1);
    queue_requeue(D->q, it);
    pod_unref(m);
    victims_teardown(s);
}

/* Composition seed 2 (ping-pong): a pod of queue other reclaimed a node
 * from the default queue and holds it nominated; the evicted pod's
 * replacement (default queue, above its fair share, higher priority) must
 * not take that room: it would be reclaimed again. */
static void test_over_share_queue_keeps_off_reclaimed_room(void **st)
{
    scheduler_t *s = victims_setup();
    add_train_queue(s, "{\"quota\":1000}");
    pod_unref(pod_from(s, "keep", "1", 0, "", "n2"));  /* the default queue's */
    pod_t *rec = queue_pod(s, "rec", 0, "", NULL);     /* train's reclaimer */
    pod_t *rep = pod_from(s, "rep", "1", 500, "", ""); /* the victim's replacement */
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_add(D->q, rec, 0);                   /* pending: train's share counts it */
    s->queues.ops->changed(s->queues.self, 1); /* shares now, not at the next refresh */
    const sched_row_t *row = sched_row(s, "tenants");
    tenants_row_tick(row, D);
    /* (kept only when rep's queue, the default, is at or above its share) */
    if (tenants_row_nominee(row, rec, rep, DEFAULT_POOL_ID, 1) != NOMINEE_KEPT)
        fail_msg("setup: the default queue should be at or above its share");
    cache_nominate(s->cache, rec, "n1");
    cycle_state_t *cs = cycle_state_new();
    decision_t d;
    sched_decide(D, cs, rep, &d);
    if (d.node)
        fail_msg("the replacement took %s, the room held for train's pod", d.node);
    free(d.message);
    cycle_state_free(cs);
    /* A pod of train itself sees the room as its queue's rules say
     * (priority), and a pod of the same queue as the nominee is unaffected. */
    assert_int_equal(tenants_row_nominee(row, rec, rep, DEFAULT_POOL_ID, 1), NOMINEE_KEPT);
    assert_int_equal(tenants_row_nominee(row, rep, rec, DEFAULT_POOL_ID, 1), NOMINEE_ANY);
    /* A borrower and a home pod: the core's rule (home first) alone. */
    assert_int_equal(tenants_row_nominee(row, rec, rep, DEFAULT_POOL_ID, 0), NOMINEE_ANY);
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    assert_non_null(it);
    queue_requeue(D->q, it);
    pod_unref(rec);
    pod_unref(rep);
    victims_teardown(s);
}

/* A gang's nominated room is the gang's: a member does not see another
 * member's nomination as taken (a whole-gang simulation would find no room
 * where the gang just preempted); a pod of another gang does. */
static void test_gang_mates_share_nominated_room(void **st)
{
    scheduler_t *s = victims_setup();
    add_podgroup(s, "job", 2);
    pod_t *a = gang_pod(s, "ja", "job", 100, "");
    pod_t *b = gang_pod(s, "jb", "job", 100, "");
    pod_t *o = gang_pod(s, "oa", "other", 100, "");
    cache_nominate(s->cache, b, "n1");
    cache_rdlock(s->cache);
    node_info_t *ni = cache_node_locked(s->cache, "n1");
    int cloned = 0;
    node_info_t *view = node_with_nominated(s, a, ni, &cloned);
    assert_false(cloned);
    view = node_with_nominated(s, o, ni, &cloned);
    assert_true(cloned);
    node_info_free(view);
    cache_unlock(s->cache);
    pod_unref(a);
    pod_unref(b);
    pod_unref(o);
    victims_teardown(s);
}

/* ---- fault 3: fencing ------------------------------------------------------ */

static int lease_ok = 1; /* atomic */
static int may_act(void *ud)
{
    return __atomic_load_n(&lease_ok, __ATOMIC_SEQ_CST);
}

/* Binds decided while leading are dropped, not drained, once the lease is
 * gone; the pool thread decides nothing more. */
static void test_fenced_drops_binds(void **st)
{
    set_bind_status(201);
    scheduler_opts_t o;
    scheduler_opts_default(&o);
    o.identity = "test";
    o.may_act = may_act;
    char err[256];
    scheduler_t *s = scheduler_new(&o, kc, err, sizeof err);
    node_unref(add_node(s, "n1", "4"));
    pod_t *p = add_pod(s, "p1", "1", NULL);
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    queue_add(D->q, p, 0);
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    assert_int_equal(cache_assume(s->cache, it->pod, "n1", DEFAULT_POOL_ID, 0, always_fits, NULL), 0);
    queue_done(D->q, it);
    assert_false(scheduler_fenced(s));
    __atomic_store_n(&lease_ok, 0, __ATOMIC_SEQ_CST); /* the lease ran out meanwhile */
    s->binder = binder_new(s, 1);
    binder_submit(s->binder, it, "n1", NULL);
    binder_free(s->binder); /* would drain: must drop */
    s->binder = NULL;
    assert_int_equal(binds_seen(), 0);
    assert_true(scheduler_fenced(s));
    __atomic_store_n(&lease_ok, 1, __ATOMIC_SEQ_CST);
    assert_true(scheduler_fenced(s)); /* for good */
    /* A pool thread with a pod to place does nothing either. */
    pod_t *p2 = add_pod(s, "p2", "1", NULL);
    queue_add(D->q, p2, 0);
    s->binder = binder_new(s, 1);
    pools_start_threads(s);
    util_sleep_ms(200);
    pools_stop_threads(s);
    binder_free(s->binder);
    s->binder = NULL;
    assert_int_equal(binds_seen(), 0);
    cache_pod_state_t cst;
    pod_t *cur = cache_get_pod(s->cache, "uid-p2", &cst);
    assert_int_equal(cst, CPOD_PENDING);
    pod_unref(cur);
    pod_unref(p);
    pod_unref(p2);
    scheduler_free(s);
}

/* ---- issue 26: minimum runtime ------------------------------------------ */

/* RFC 3339 (UTC) of now - ago_s. */
static void ago(int64_t ago_s, char *out, size_t n)
{
    time_t t = (time_t)(util_wall_ms() / 1000 - ago_s);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A running pod on node, started ago_s seconds ago, in queue (NULL: none),
 * with extra annotations (JSON members, may be ""). */
static pod_t *aged_pod(scheduler_t *s, const char *name, int prio, const char *node, int64_t ago_s, const char *queue,
                       const char *ann)
{
    char text[1536], st[40];
    ago(ago_s, st, sizeof st);
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\",\"labels\":{%s%s%s},"
             "\"annotations\":{%s},\"creationTimestamp\":\"%s\"},"
             "\"spec\":{\"schedulerName\":\"ai-scheduler\",\"priority\":%d,\"nodeName\":\"%s\",\"containers\":"
             "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"
             "\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\"}}",
             name, name, queue ? "\"" FS_QUEUE_LABEL "\":\"" : "", queue ? queue : "", queue ? "\"" : "", ann, st, prio,
             node, st);
    return cached_pod(s, text);
}

/* Queue name (parent may be NULL) with fields spliced into its spec. */
static void add_queue(scheduler_t *s, const char *name, const char *parent, const char *fields)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"apiVersion\":\"resource.aibee.cn/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"%s\","
             "\"uid\":\"q-%s\"},\"spec\":{%s%s%s%s%s}}",
             name, name, parent ? "\"parentQueue\":\"" : "", parent ? parent : "", parent ? "\"" : "",
             parent && fields[0] ? "," : "", fields);
    json_t *q = J(text);
    scheduler_feed(s, "Queue", "ADDED", name, q);
    json_decref(q);
}

static void set_pool_default(scheduler_t *s, int64_t preempt_ms, int64_t reclaim_ms)
{
    pools_lock(s);
    s->pools[DEFAULT_POOL_ID]->spec.preempt_min_runtime_ms = preempt_ms;
    s->pools[DEFAULT_POOL_ID]->spec.reclaim_min_runtime_ms = reclaim_ms;
    /* as pools.c's rebuild counts them for the minimum runtime's fast path */
    __atomic_store_n(&s->min_runtime_pools, preempt_ms || reclaim_ms, __ATOMIC_RELEASE);
    pools_unlock(s);
}

/* The minimum-runtime row, as the scheduler built it. */
static const sched_row_t *minrt_row(scheduler_t *s)
{
    const sched_row_t *row = sched_row(s, "minimum-runtime");
    assert_non_null(row);
    return row;
}

/* One preemption for pod alone (a set of one, as the preemption row asks
 * it): 1 when room is being made. What a minimum runtime kept is said on
 * the set: *note (owned; NULL: nothing, or room was made) and *wake, the
 * time the set is retried. */
static int preempt_noted(sched_pool_t *P, pod_t *pod, char **note, int64_t *wake)
{
    queue_item_t it = { .pod = pod };
    pod_set_t set;
    pod_set_init(&set, P, SET_LONE, &it);
    preempt_outcome_t seen;
    char *kept = NULL;
    int made = preempt_set(&set, &seen, &kept);
    free(kept);
    *note = set.wait_note;
    *wake = set.wake_wall_ms;
    set.wait_note = NULL;
    set.items[0] = NULL;
    pod_set_clear(&set);
    return made;
}

/* The applicable minimum: the leaf's field, else the nearest ancestor's,
 * else the pool's; an annotation lowers it, never raises it; "-1" is
 * never, lowered by any annotation; a malformed annotation is ignored. */
static void test_minrt_resolution(void **st)
{
    (void)st;
    scheduler_t *s = new_sched();
    char src[300];
    pod_t *p = aged_pod(s, "plain", 0, "", 0, NULL, "");
    assert_int_equal(minrt_applicable(minrt_row(s), p, FS_MINRT_PREEMPT, src, sizeof src), 0);
    set_pool_default(s, 120000, 0);
    assert_int_equal(minrt_applicable(minrt_row(s), p, FS_MINRT_PREEMPT, src, sizeof src), 120000);
    assert_non_null(strstr(src, "preemptMinRuntime 2m"));
    assert_non_null(strstr(src, "pool \""));
    assert_int_equal(minrt_applicable(minrt_row(s), p, FS_MINRT_RECLAIM, src, sizeof src), 0);
    pod_unref(p);

    add_queue(s, "org", NULL, "\"preemptMinRuntime\":\"10m\",\"reclaimMinRuntime\":\"-1\"");
    add_queue(s, "research", "org", "");
    add_queue(s, "fast", "org", "\"preemptMinRuntime\":\"1m\"");
    p = aged_pod(s, "r", 0, "", 0, "research", "");
    assert_int_equal(minrt_applicable(minrt_row(s), p, FS_MINRT_PREEMPT, src, sizeof src), 600000);
    assert_string_equal(src, "queue \"org\": preemptMinRuntime 10m");
    assert_int_equal(minrt_applicable(minrt_row(s), p, FS_MINRT_RECLAIM, src, sizeof src), -1);
    pod_unref(p);
    p = aged_pod(s, "f", 0, "", 0, "fast", "");
    assert_int_equal(minrt_applicable(minrt_row(s), p, FS_MINRT_PREEMPT, src, sizeof src), 60000);
    pod_unref(p);
    /* Lower: taken; higher: ignored; under "-1": taken. */
    p = aged_pod(s, "low", 0, "", 0, "research",
                 "\"" PREEMPT_MIN_RUNTIME_ANNOTATION "\":\"30s\",\"" RECLAIM_MIN_RUNTIME_ANNOTATION "\":\"5m\"");
    assert_int_equal(minrt_applicable(minrt_row(s), p, FS_MINRT_PREEMPT, src, sizeof src), 30000);
    assert_non_null(strstr(src, "annotation " PREEMPT_MIN_RUNTIME_ANNOTATION));
    assert_int_equal(minrt_applicable(minrt_row(s), p, FS_MINRT_RECLAIM, src, sizeof src), 300000);
    pod_unref(p);
    p = aged_pod(s, "high", 0, "", 0, "research", "\"" PREEMPT_MIN_RUNTIME_ANNOTATION "\":\"1h\"");
    assert_int_equal(minrt_applicable(minrt_row(s), p, FS_MINRT_PREEMPT, src, sizeof src), 600000);
    pod_unref(p);
    p = aged_pod(s, "bad", 0, "", 0, "research", "\"" PREEMPT_MIN_RUNTIME_ANNOTATION "\":\"soon\"");
    assert_int_equal(p->preempt_min_runtime_ms, DURATION_BAD);
    assert_int_equal(minrt_applicable(minrt_row(s), p, FS_MINRT_PREEMPT, src, sizeof src), 600000);
    pod_unref(p);
    scheduler_free(s);
}

/* Young pods are no victims (past their lifetime they are), the old one
 * goes; when all are young nothing goes and the note names the earliest
 * end of protection, the time the pod is retried. */
static void test_minrt_protects_young(void **st)
{
    (void)st;
    scheduler_t *s = victims_setup();
    set_pool_default(s, 600000, 0);
    pod_unref(aged_pod(s, "young", 0, "n1", 60, NULL, ""));
    pod_unref(aged_pod(s, "old", 0, "n2", 3600, NULL, ""));
    pod_t *pre = pod_from(s, "pre", "1", 500, "", "");
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    char *note = NULL;
    int64_t wake = 0;
    assert_int_equal(preempt_noted(D, pre, &note, &wake), 1);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 1);
    assert_int_equal(nominated_on(s, "n2"), 1);
    assert_null(note); /* room was made: the set waits for nothing */
    pod_unref(pre);
    victims_teardown(s);

    s = victims_setup();
    set_pool_default(s, 600000, 0);
    pod_t *y1 = aged_pod(s, "y1", 0, "n1", 60, NULL, "");
    pod_t *y2 = aged_pod(s, "y2", 0, "n2", 300, NULL, "");
    /* Past its 10 s lifetime: preemptible again, whatever its age. */
    pre = pod_from(s, "pre", "1", 500, "", "");
    D = pools_get(s, DEFAULT_POOL_ID);
    assert_int_equal(preempt_noted(D, pre, &note, &wake), 0);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 0);
    assert_non_null(note);
    assert_int_equal(wake, y2->started_ms + 600000); /* the earlier of the two */
    char t[40];
    util_rfc3339(y2->started_ms + 600000, t, sizeof t);
    assert_non_null(strstr(note, "preemption: 2 pods that could make room are protected by a minimum runtime until"));
    assert_non_null(strstr(note, t));
    free(note);
    pod_unref(aged_pod(s, "y1", 0, "n1", 60, NULL, "\"" LIFETIME_ANNOTATION "\":\"10\""));
    assert_int_equal(preempt_noted(D, pre, &note, &wake), 1);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 1);
    assert_int_equal(nominated_on(s, "n1"), 1);
    assert_null(note);
    pod_unref(y1);
    pod_unref(y2);
    pod_unref(pre);
    victims_teardown(s);
}

/* "-1" is never (no note of a time); across queues the reclaim minimum
 * applies, not the preempt one. */
static void test_minrt_never_and_kinds(void **st)
{
    (void)st;
    scheduler_t *s = victims_setup();
    set_pool_default(s, -1, 0);
    pod_unref(aged_pod(s, "a", 0, "n1", 3600, NULL, ""));
    pod_unref(aged_pod(s, "b", 0, "n2", 3600, NULL, ""));
    pod_t *pre = pod_from(s, "pre", "1", 500, "", "");
    char *note = NULL;
    int64_t wake = 0;
    assert_int_equal(preempt_noted(pools_get(s, DEFAULT_POOL_ID), pre, &note, &wake), 0);
    assert_non_null(note);
    assert_non_null(strstr(note, "preemption: 2 pods that could make room are never preempted"));
    assert_int_equal(wake, 0); /* no time to retry at */
    free(note);
    /* An annotation lowers "-1". */
    pod_unref(aged_pod(s, "a", 0, "n1", 3600, NULL, "\"" PREEMPT_MIN_RUNTIME_ANNOTATION "\":\"1m\""));
    assert_int_equal(preempt_noted(pools_get(s, DEFAULT_POOL_ID), pre, &note, &wake), 1);
    evictor_wait_idle(s->evictor);
    assert_int_equal(nominated_on(s, "n1"), 1);
    assert_null(note);
    pod_unref(pre);
    victims_teardown(s);

    /* Kinds: a young pod is kept from priority preemption in its queue by
     * preemptMinRuntime only; reclaimMinRuntime does not apply. */
    s = new_sched();
    add_queue(s, "a", NULL, "\"preemptMinRuntime\":\"0\",\"reclaimMinRuntime\":\"10m\"");
    pod_t *v = aged_pod(s, "v", 0, "n1", 60, "a", "");
    assert_int_equal(minrt_protected_until(minrt_row(s), v, FS_MINRT_PREEMPT, util_wall_ms(), (char[300]){ 0 }, 300),
                     0);
    assert_int_equal(minrt_protected_until(minrt_row(s), v, FS_MINRT_RECLAIM, util_wall_ms(), (char[300]){ 0 }, 300),
                     v->started_ms + 600000);
    pod_unref(v);
    scheduler_free(s);
}

/* A gang's age is its last member's start: an old member whose mate
 * started recently is protected, and so its gang (a protected mate keeps
 * the gang whole through the gang row's expand point, gang_row_expand). */
static void test_minrt_gang_age(void **st)
{
    (void)st;
    scheduler_t *s = victims_setup();
    set_pool_default(s, 600000, 0);
    add_podgroup(s, "job", 2);
    pod_t *w = gang_pod(s, "worker", "job", 0, "n1");
    pod_t *m = gang_pod(s, "master", "job", 0, "n2");
    /* The worker started an hour ago, the master a minute ago. */
    pod_unref(w);
    pod_unref(m);
    char text[1024], old[40], young[40];
    ago(3600, old, sizeof old);
    ago(60, young, sizeof young);
    const char *names[2] = { "worker", "master" }, *nodes[2] = { "n1", "n2" }, *starts[2] = { old, young };
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof text,
                 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\",\"labels\":"
                 "{\"" GANG_LABEL "\":\"job\",\"app\":\"job\"},\"creationTimestamp\":\"%s\"},"
                 "\"spec\":{\"schedulerName\":\"ai-scheduler\",\"priority\":0,\"nodeName\":\"%s\",\"containers\":"
                 "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"
                 "\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\"}}",
                 names[i], names[i], starts[i], nodes[i], starts[i]);
        pod_t *p = cached_pod(s, text);
        gang_pod_upsert(s->published.group_store, p);
        pod_unref(p);
    }
    pod_t *pre = pod_from(s, "pre", "1", 500, "", "");
    char *note = NULL;
    int64_t wake = 0;
    assert_int_equal(preempt_noted(pools_get(s, DEFAULT_POOL_ID), pre, &note, &wake), 0);
    evictor_wait_idle(s->evictor);
    assert_int_equal(api_int(&api.evictions), 0);
    assert_non_null(note);
    assert_non_null(strstr(note, "preemption: 2 pods that could make room"));
    int64_t young_ms = 0;
    cache_pod_state_t cst;
    pod_t *mm = cache_get_pod(s->cache, "uid-master", &cst);
    young_ms = mm->started_ms;
    pod_unref(mm);
    assert_int_equal(wake, young_ms + 600000);
    free(note);
    pod_unref(pre);
    victims_teardown(s);
}

/* ---- the victims point's combining rule (victims.c, extension.h) -------- */

/* The victims table's pod question (pe_victims) for preemptor pre inside
 * the default pool, Queues off: 1 when v may go, its rank in *rank. */
static int victim_of(scheduler_t *s, const pod_t *v, const pod_t *pre, int64_t *rank, pod_set_t *set)
{
    victim_ctx_t vc = { .s = s, .pool_id = DEFAULT_POOL_ID, .prio = pre->priority, .set = set };
    int64_t r = 0;
    int ok = pe_victims(s)->pod(v, pre, &vc, &r);
    if (rank)
        *rank = r;
    return ok;
}

/* A running pod holding GPU slot 0 of n1 as a reservation pod is labelled,
 * in namespace ns (the real ones: ai-scheduler-system), with extra
 * annotations (JSON members, may be ""). */
static pod_t *reservation_in(scheduler_t *s, const char *ns, const char *name, const char *ann)
{
    char text[1536];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"uid-%s\","
             "\"labels\":{\"resource.aibee.cn/gpu-reservation\":\"true\","
             "\"app.kubernetes.io/managed-by\":\"ai-scheduler\"},"
             "\"annotations\":{\"resource.aibee.cn/gpu-index\":\"0\","
             "\"resource.aibee.cn/gpu-reservation-node\":\"n1\"%s%s}},"
             "\"spec\":{\"nodeName\":\"n1\",\"schedulerName\":\"ai-scheduler\",\"priority\":0,\"containers\":"
             "[{\"name\":\"reserve\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\"},"
             "\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\"}}",
             name, ns, name, ann[0] ? "," : "", ann);
    return cached_pod(s, text);
}

#define BORROWED "\"resource.aibee.cn/pool\":\"other\""

/* A row saying never outweighs every row saying yes: a GPU reservation
 * of priority 0 is no victim of a priority-100 pod (the preemption row
 * says yes), not even lent from another pool (the lender row says yes,
 * as reclaim); the same pod outside the reservation namespace is an
 * ordinary pod and goes. */
static void test_victims_never_beats_allowed(void **st)
{
    scheduler_t *s = victims_setup();
    add_pool(s, "other");
    pod_t *pre = pod_from(s, "pre", "1", 100, "", "");
    pod_t *res = reservation_in(s, GPU_RESERVATION_NS, "gpu-res-n1-0-00001", "");
    pod_t *lent = reservation_in(s, GPU_RESERVATION_NS, "gpu-res-n1-0-00002", BORROWED);
    pod_t *forged = reservation_in(s, "team", "gpu-res-n1-0-00003", "");
    assert_true(gpu_is_reservation(res));
    assert_true(gpu_is_reservation(lent));
    assert_false(gpu_is_reservation(forged));
    assert_true(victim_of(s, forged, pre, NULL, NULL));
    assert_false(victim_of(s, res, pre, NULL, NULL));
    assert_false(victim_of(s, lent, pre, NULL, NULL));
    pod_unref(res);
    pod_unref(lent);
    pod_unref(forged);
    pod_unref(pre);
    victims_teardown(s);
}

/* Reclaim outweighs priority: a borrower goes even above the preemptor's
 * priority (a home pod of that priority does not), and ranks below every
 * home pod, one of priority 0 too. */
static void test_victims_reclaim_beats_priority(void **st)
{
    scheduler_t *s = victims_setup();
    add_pool(s, "other");
    pod_t *pre = pod_from(s, "pre", "1", 100, "", "");
    pod_t *home_hi = aged_pod(s, "home-hi", 1000, "n1", 3600, NULL, "");
    pod_t *home_lo = aged_pod(s, "home-lo", 0, "n1", 3600, NULL, "");
    pod_t *lent_hi = aged_pod(s, "lent-hi", 1000, "n2", 3600, NULL, BORROWED);
    int64_t r_home = 0, r_lent = 0;
    assert_false(victim_of(s, home_hi, pre, NULL, NULL));
    assert_true(victim_of(s, lent_hi, pre, &r_lent, NULL));
    assert_true(victim_of(s, home_lo, pre, &r_home, NULL));
    assert_true(r_lent < r_home);
    pod_unref(home_hi);
    pod_unref(home_lo);
    pod_unref(lent_hi);
    pod_unref(pre);
    victims_teardown(s);
}

/* Ranks, lowest evicted first, each the sum of every row's: borrowers
 * (by priority among themselves), then elastic gang surplus, then home
 * pods by priority, a member keeping its gang's minimum just above a lone
 * pod of its priority. */
static void test_victims_rank_order(void **st)
{
    scheduler_t *s = victims_setup();
    add_pool(s, "other");
    add_podgroup(s, "elastic", 1);
    add_podgroup(s, "pair", 2);
    pod_t *pre = pod_from(s, "pre", "1", 100, "", "");
    pod_t *e[2] = { gang_pod(s, "e0", "elastic", 50, "n1"), gang_pod(s, "e1", "elastic", 50, "n2") };
    pod_t *pair = gang_pod(s, "p0", "pair", 10, "n1");
    pod_unref(gang_pod(s, "p1", "pair", 10, "n2"));
    pod_t *surplus = gang_member_class(s->published.group_store, e[0]) == GANG_MEMBER_SURPLUS ? e[0] : e[1];
    assert_int_equal(gang_member_class(s->published.group_store, surplus), GANG_MEMBER_SURPLUS);
    assert_int_equal(gang_member_class(s->published.group_store, pair), GANG_MEMBER_MINIMUM);
    pod_t *order[] = {
        aged_pod(s, "lent-0", 0, "n1", 3600, NULL, BORROWED),
        aged_pod(s, "lent-50", 50, "n1", 3600, NULL, BORROWED),
        pod_ref(surplus),
        aged_pod(s, "home-0", 0, "n2", 3600, NULL, ""),
        aged_pod(s, "home-10", 10, "n2", 3600, NULL, ""),
        pod_ref(pair),
    };
    int n = (int)(sizeof(order) / sizeof(order[0]));
    int64_t prev = 0;
    for (int i = 0; i < n; i++) {
        int64_t rank = 0;
        if (!victim_of(s, order[i], pre, &rank, NULL))
            fail_msg("%s is no victim", order[i]->key);
        if (i > 0 && rank <= prev)
            fail_msg("%s ranks %lld, not above %s's %lld", order[i]->key, (long long)rank, order[i - 1]->key,
                     (long long)prev);
        prev = rank;
        pod_unref(order[i]);
    }
    pod_unref(e[0]);
    pod_unref(e[1]);
    pod_unref(pair);
    pod_unref(pre);
    victims_teardown(s);
}

/* A running pod of 1 CPU on n2, priority 0, not in the cache: uid, its
 * schedulerName, and extra metadata members (JSON, may be ""). */
static pod_t *uncached_pod(const char *uid, const char *sched, const char *meta)
{
    char text[1024], err[256];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"%s\"%s%s},"
             "\"spec\":{\"schedulerName\":\"%s\",\"priority\":0,\"nodeName\":\"n2\",\"containers\":"
             "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\"}}",
             uid, uid, meta[0] ? "," : "", meta, sched);
    json_t *j = J(text);
    pod_t *p = pod_from_json(j, err, sizeof err);
    json_decref(j);
    assert_non_null(p);
    return p;
}

/* The core's own exclusions, no row asked: a pod not ours, one being
 * deleted, the preemptor itself; each a pod of priority 0 that the rows
 * let go for a priority-100 preemptor otherwise. */
static void test_victims_core_exclusions(void **st)
{
    scheduler_t *s = victims_setup();
    pod_t *pre = pod_from(s, "pre", "1", 100, "", "");
    pod_t *plain = uncached_pod("uid-plain", "ai-scheduler", "");
    pod_t *theirs = uncached_pod("uid-theirs", "default-scheduler", "");
    pod_t *deleting = uncached_pod("uid-deleting", "ai-scheduler", "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"");
    pod_t *self = uncached_pod(pre->uid, "ai-scheduler", ""); /* a running copy of the preemptor's uid */
    assert_true(deleting->deleting);
    assert_true(victim_of(s, plain, pre, NULL, NULL));
    assert_false(victim_of(s, theirs, pre, NULL, NULL));
    assert_false(victim_of(s, deleting, pre, NULL, NULL));
    assert_false(victim_of(s, self, pre, NULL, NULL));
    pod_unref(plain);
    pod_unref(theirs);
    pod_unref(deleting);
    pod_unref(self);
    pod_unref(pre);
    victims_teardown(s);
}

/* Queues on: the victims table's pod question as the evaluator asks it
 * for pre alone in the default pool (pe_victim_ctx): 1 when v may go. */
static int queue_victim_of(scheduler_t *s, const pod_t *v, pod_t *pre)
{
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);
    victim_ctx_t vc = { .s = s, .pool_id = DEFAULT_POOL_ID };
    pe_victim_ctx(D, &pre, 1, 0, &vc);
    assert_true(vc.queues);
    int64_t rank = 0;
    return pe_victims(s)->pod(v, pre, &vc, &rank);
}

/* Across queues only reclaim's rules (a refusal there is final): a pod
 * of queue train inside its quota is no victim of a pod of the default
 * queue, though below its priority; a pod of the preemptor's own queue
 * is, by priority. */
static void test_victims_queue_refusal_beats_priority(void **st)
{
    scheduler_t *s = victims_setup();
    add_train_queue(s, "{\"quota\":2000}");
    pod_t *tv = queue_pod(s, "tv", 0, "n1", NULL);
    pod_t *dv = pod_from(s, "dv", "1", 0, "", "n2");
    pod_t *pre = pod_from(s, "pre", "1", 100, "", "");
    s->queues.ops->changed(s->queues.self, 1);
    tenants_row_tick(sched_row(s, "tenants"), pools_get(s, DEFAULT_POOL_ID));
    assert_true(queue_victim_of(s, dv, pre));
    assert_false(queue_victim_of(s, tv, pre));
    pod_unref(tv);
    pod_unref(dv);
    pod_unref(pre);
    victims_teardown(s);
}

/* A pod asked to checkpoint for one preemptor (its eviction requested)
 * is no victim of another. */
static void test_victims_not_requested_twice(void **st)
{
    scheduler_t *s = victims_setup();
    pod_unref(aged_pod(s, "busy", 1000, "n2", 3600, NULL, "")); /* n2: nothing to take */
    pod_t *v = ckpt_pod(s, "v", "n1", "30s", NULL);
    pod_t *first = pod_from(s, "first", "1", 100, "", "");
    pod_t *second = pod_from(s, "second", "1", 100, "", "");
    assert_true(victim_of(s, v, second, NULL, NULL));
    assert_int_equal(postfilter_preempt(pools_get(s, DEFAULT_POOL_ID), first, 0), 1);
    evictor_wait_idle(s->evictor);
    assert_true(evictor_requested(s->evictor, v->uid));
    assert_false(victim_of(s, v, second, NULL, NULL));
    pod_unref(v);
    pod_unref(first);
    pod_unref(second);
    victims_teardown(s);
}

/* A minimum runtime of the deciding answer's kind keeps a pod the rules
 * let go, and notes it: a pod preempted by priority is kept by the pool's
 * preemptMinRuntime while young; a borrower, reclaimed, is not (no
 * reclaimMinRuntime); an old pod goes. */
static void test_victims_min_runtime_of_deciding_kind(void **st)
{
    scheduler_t *s = victims_setup();
    add_pool(s, "other");
    set_pool_default(s, 600000, 0);
    /* The lender's pool (its pods' home) too: the borrower's minimum is
     * its home pool's, and there it is its reclaim one that applies. */
    pools_lock(s);
    for (int i = 0; i < s->npools; i++)
        if (s->pools[i] && strcmp(s->pools[i]->name, "other") == 0)
            s->pools[i]->spec.preempt_min_runtime_ms = 600000;
    pools_unlock(s);
    pod_t *pre = pod_from(s, "pre", "1", 100, "", "");
    pod_t *young = aged_pod(s, "young", 0, "n1", 60, NULL, "");
    pod_t *old = aged_pod(s, "old", 0, "n1", 3600, NULL, "");
    pod_t *lent = aged_pod(s, "lent", 0, "n2", 60, NULL, BORROWED);
    /* What the minimum-runtime row kept goes into the set's slot: one pod
     * (the young home pod), said by its kept point. */
    pod_set_t set = { 0 };
    assert_false(victim_of(s, young, pre, NULL, &set));
    assert_true(victim_of(s, old, pre, NULL, &set));
    assert_true(victim_of(s, lent, pre, NULL, &set));
    char *kept = NULL;
    sched_rows_kept(s, &set, 1, &kept);
    assert_non_null(kept);
    assert_non_null(strstr(kept, "preemption: 1 pod that could make room is protected by a minimum runtime"));
    free(kept);
    pod_unref(young);
    pod_unref(old);
    pod_unref(lent);
    pod_unref(pre);
    victims_teardown(s);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind_500_backs_off),
        cmocka_unit_test(test_bind_403_backs_off),
        cmocka_unit_test(test_bind_422_backs_off),
        cmocka_unit_test(test_bind_carries_uid),
        cmocka_unit_test(test_bind_409_replaced_not_retried),
        cmocka_unit_test(test_bind_404_wakes_waiters),
        cmocka_unit_test(test_bind_500_wakes_waiters),
        cmocka_unit_test(test_held_back_bind_wakes_waiters),
        cmocka_unit_test(test_update_leaves_unschedulable),
        cmocka_unit_test(test_resize_down_wakes_unschedulable),
        cmocka_unit_test(test_priority_update_resorts),
        cmocka_unit_test(test_lender_most_idle_absolute),
        cmocka_unit_test(test_start_waits_for_slow_pool_list),
        cmocka_unit_test(test_start_without_pool_api),
        cmocka_unit_test(test_topology_levels_of_the_row),
        cmocka_unit_test(test_borrower_ranks_below_nominated_home_pod),
        cmocka_unit_test(test_evictions_off_pool_thread),
        cmocka_unit_test(test_refused_eviction_explained),
        cmocka_unit_test(test_refused_eviction_next_node),
        cmocka_unit_test(test_victims_own_grace_and_condition),
        cmocka_unit_test(test_round_mark_backs_off),
        cmocka_unit_test(test_give_up_clears_nomination),
        cmocka_unit_test(test_nomination_gone_wakes_waiters),
        cmocka_unit_test(test_preemption_scan_unlocked),
        cmocka_unit_test(test_fenced_drops_binds),
        cmocka_unit_test(test_gang_mates_follow_victim_rules),
        cmocka_unit_test(test_gang_victims_respect_pdb),
        cmocka_unit_test(test_refused_gang_eviction_gives_back_all),
        cmocka_unit_test(test_gang_not_blocked_by_own_charge),
        cmocka_unit_test(test_limit_room_for_minimum_not_surplus),
        cmocka_unit_test(test_over_share_queue_keeps_off_reclaimed_room),
        cmocka_unit_test(test_gang_mates_share_nominated_room),
        cmocka_unit_test(test_minrt_resolution),
        cmocka_unit_test(test_minrt_protects_young),
        cmocka_unit_test(test_minrt_never_and_kinds),
        cmocka_unit_test(test_minrt_gang_age),
        cmocka_unit_test(test_checkpoint_ack_evicts_at_once),
        cmocka_unit_test(test_checkpoint_gang_mates_held),
        cmocka_unit_test(test_checkpoint_deadline),
        cmocka_unit_test(test_checkpoint_withdrawn),
        cmocka_unit_test(test_checkpoint_stale_cleared),
        cmocka_unit_test(test_victims_never_beats_allowed),
        cmocka_unit_test(test_victims_reclaim_beats_priority),
        cmocka_unit_test(test_victims_queue_refusal_beats_priority),
        cmocka_unit_test(test_victims_rank_order),
        cmocka_unit_test(test_victims_core_exclusions),
        cmocka_unit_test(test_victims_not_requested_twice),
        cmocka_unit_test(test_victims_min_runtime_of_deciding_kind),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
