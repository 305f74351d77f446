/* test_grouper.c -- the grouper (grouper/grouper.c) against a fake API server that serves owner objects
 * (a PyTorchJob 1+3, an indexed Job, a ReplicaSet -> Deployment chain, a LeaderWorkerSet's leader and worker
 * chain), PodGroups and pod patches, and records every request: what is created, patched and told, and what
 * grouper_hold answers before and after. */
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
#include "fairshare/fairshare.h"
#include "gang/gang.h"
#include "grouper/grouper.h"
#include "grouper/row.h"
#include "scheduler/capabilities.h"
#include "scheduler/internal.h"
#include "util/util.h"

#define NS      "ns"
#define PG_PATH PODGROUP_API "/namespaces/" NS "/podgroups"
#define LWS_IDX "leaderworkerset.sigs.k8s.io/group-index"

/* ---- fake API server ---------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    json_t *objects;  /* path -> object served to GET (owners, PodGroups) */
    json_t *forced;   /* path -> status answered to any method */
    json_t *requests; /* [{method, path, body}] */
} api = { PTHREAD_MUTEX_INITIALIZER, NULL, NULL, NULL };

/* POST .../podgroups: created, or 409; mu held. */
static unsigned podgroup_post(const char *url, json_t *body, json_t **out)
{
    const char *name = json_string_value(json_object_get(json_object_get(body, "metadata"), "name"));
    if (!name)
        return 422;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", url, name);
    if (json_object_get(api.objects, path))
        return 409;
    json_object_set(api.objects, path, body);
    *out = json_incref(body);
    return 201;
}

/* PATCH of a PodGroup's spec.minMember; mu held. */
static unsigned podgroup_patch(const char *url, json_t *body, json_t **out)
{
    json_t *pg = json_object_get(api.objects, url);
    json_t *min = json_object_get(json_object_get(body, "spec"), "minMember");
    if (!pg)
        return 404;
    if (min)
        json_object_set(json_object_get(pg, "spec"), "minMember", min);
    *out = json_incref(pg);
    return 200;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *data, size_t *size, void **con_cls)
{
    const char *text = NULL;
    if (fake_api_gather(con_cls, data, size, &text))
        return MHD_YES;
    json_t *body = text ? json_loads(text, 0, NULL) : NULL, *out = NULL;
    unsigned code = 404;
    pthread_mutex_lock(&api.mu);
    json_array_append_new(api.requests,
                          json_pack("{s:s, s:s, s:s}", "method", method, "path", url, "body", text ? text : ""));
    json_t *forced = json_object_get(api.forced, url);
    if (forced)
        code = (unsigned)json_integer_value(forced);
    else if (!strcmp(method, "GET") && json_object_get(api.objects, url)) {
        out = json_incref(json_object_get(api.objects, url));
        code = 200;
    } else if (!strcmp(method, "POST") && !strcmp(url, PG_PATH))
        code = podgroup_post(url, body, &out);
    else if (!strcmp(method, "PATCH") && strstr(url, "/podgroups/"))
        code = podgroup_patch(url, body, &out);
    else if (!strcmp(method, "PATCH") && strstr(url, "/pods/")) {
        out = json_pack("{s:s}", "kind", "Pod");
        code = 200;
    }
    pthread_mutex_unlock(&api.mu);
    json_decref(body);
    enum MHD_Result rc = out ? fake_api_json(c, code, out) : fake_api_status(c, code, "fake");
    json_decref(out);
    return rc;
}

static fake_api_t fake;

/* ---- the served objects ---------------------------------------------------- */

static json_t *owner_ref(const char *api_version, const char *kind, const char *name, const char *uid)
{
    return json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", api_version, "kind", kind, "name", name, "uid",
                     uid, "controller", 1, "blockOwnerDeletion", 1);
}

/* Serves obj (taken) at path with the metadata given; ctrl (taken, may be
 * NULL) as its ownerReferences, labels and annotations (taken, may be
 * NULL). */
static void serve(const char *path, const char *api_version, const char *kind, const char *name, const char *uid,
                  json_t *ctrl, json_t *labels, json_t *annotations, json_t *spec)
{
    json_t *meta = json_pack("{s:s, s:s, s:s}", "name", name, "namespace", NS, "uid", uid);
    if (ctrl)
        json_object_set_new(meta, "ownerReferences", ctrl);
    if (labels)
        json_object_set_new(meta, "labels", labels);
    if (annotations)
        json_object_set_new(meta, "annotations", annotations);
    json_t *obj = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", api_version, "kind", kind, "metadata", meta, "spec",
                            spec ? spec : json_object());
    pthread_mutex_lock(&api.mu);
    json_object_set_new(api.objects, path, obj);
    pthread_mutex_unlock(&api.mu);
}

static void force(const char *path, int code)
{
    pthread_mutex_lock(&api.mu);
    json_object_set_new(api.forced, path, json_integer(code));
    pthread_mutex_unlock(&api.mu);
}

#define PJ_PATH(n)  "/apis/kubeflow.org/v1/namespaces/" NS "/pytorchjobs/" n
#define JOB_PATH(n) "/apis/batch/v1/namespaces/" NS "/jobs/" n
#define RS_PATH(n)  "/apis/apps/v1/namespaces/" NS "/replicasets/" n
#define DEP_PATH(n) "/apis/apps/v1/namespaces/" NS "/deployments/" n
#define STS_PATH(n) "/apis/apps/v1/namespaces/" NS "/statefulsets/" n
#define LWS_PATH(n) "/apis/leaderworkerset.x-k8s.io/v1/namespaces/" NS "/leaderworkersets/" n
#define POD_PATH(n) "/api/v1/namespaces/" NS "/pods/" n

static void serve_pytorchjob(const char *path, const char *name, const char *uid, int workers, json_t *labels,
                             json_t *policy)
{
    json_t *spec = json_pack("{s:{s:{s:i}, s:{s:i}}}", "pytorchReplicaSpecs", "Master", "replicas", 1, "Worker",
                             "replicas", workers);
    if (policy)
        json_object_set_new(spec, "runPolicy", json_pack("{s:o}", "schedulingPolicy", policy));
    serve(path, "kubeflow.org/v1", "PyTorchJob", name, uid, NULL, labels, NULL, spec);
}

static void serve_all(void)
{
    serve_pytorchjob(PJ_PATH("train"), "train", "pj-1", 3, json_pack("{s:s}", FS_QUEUE_LABEL, "team-a"),
                     json_pack("{s:s}", "priorityClass", "high"));
    serve(JOB_PATH("idx"), "batch/v1", "Job", "idx", "job-1", NULL, NULL, NULL,
          json_pack("{s:s, s:i, s:i}", "completionMode", "Indexed", "parallelism", 2, "completions", 2));
    serve(JOB_PATH("plain"), "batch/v1", "Job", "plain", "job-2", NULL, NULL, NULL,
          json_pack("{s:s, s:i, s:i}", "completionMode", "NonIndexed", "parallelism", 2, "completions", 2));
    serve(DEP_PATH("web"), "apps/v1", "Deployment", "web", "dep-1", NULL, NULL, NULL, NULL);
    serve(RS_PATH("web-5d4f"), "apps/v1", "ReplicaSet", "web-5d4f", "rs-1",
          owner_ref("apps/v1", "Deployment", "web", "dep-1"), NULL, NULL, NULL);
    serve(DEP_PATH("api"), "apps/v1", "Deployment", "api", "dep-2", NULL, json_pack("{s:s}", FS_QUEUE_LABEL, "team-b"),
          json_pack("{s:s}", POOL_ANNOTATION, "gpu-pool"), NULL);
    serve(RS_PATH("api-77"), "apps/v1", "ReplicaSet", "api-77", "rs-2",
          owner_ref("apps/v1", "Deployment", "api", "dep-2"), NULL, NULL, NULL);
    /* LeaderWorkerSet: worker pod -> worker StatefulSet -> leader Pod -> leader StatefulSet -> LeaderWorkerSet */
    serve(LWS_PATH("lws"), "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "lws", "lws-1", NULL, NULL, NULL,
          json_pack("{s:{s:i}}", "leaderWorkerTemplate", "size", 3));
    serve(STS_PATH("lws"), "apps/v1", "StatefulSet", "lws", "sts-leader",
          owner_ref("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "lws", "lws-1"), NULL, NULL, NULL);
    serve(POD_PATH("lws-0"), "v1", "Pod", "lws-0", "uid-lws-0",
          owner_ref("apps/v1", "StatefulSet", "lws", "sts-leader"), json_pack("{s:s}", LWS_IDX, "0"), NULL, NULL);
    serve(STS_PATH("lws-0"), "apps/v1", "StatefulSet", "lws-0", "sts-w0", owner_ref("v1", "Pod", "lws-0", "uid-lws-0"),
          NULL, NULL, NULL);
    /* A cycle: ReplicaSet cyc-a owned by Deployment cyc-b owned by cyc-a. */
    serve(RS_PATH("cyc-a"), "apps/v1", "ReplicaSet", "cyc-a", "ca", owner_ref("apps/v1", "Deployment", "cyc-b", "cb"),
          NULL, NULL, NULL);
    serve(DEP_PATH("cyc-b"), "apps/v1", "Deployment", "cyc-b", "cb", owner_ref("apps/v1", "ReplicaSet", "cyc-a", "ca"),
          NULL, NULL, NULL);
    /* A chain of three ReplicaSets. */
    serve(RS_PATH("d1"), "apps/v1", "ReplicaSet", "d1", "d1", owner_ref("apps/v1", "ReplicaSet", "d2", "d2"), NULL,
          NULL, NULL);
    serve(RS_PATH("d2"), "apps/v1", "ReplicaSet", "d2", "d2", owner_ref("apps/v1", "ReplicaSet", "d3", "d3"), NULL,
          NULL, NULL);
    serve(RS_PATH("d3"), "apps/v1", "ReplicaSet", "d3", "d3", NULL, NULL, NULL, NULL);
    /* A PyTorchJob whose PodGroup's name a user took. */
    serve_pytorchjob(PJ_PATH("mine"), "mine", "m-1", 1, NULL, NULL);
    serve(PG_PATH "/pytorchjob-mine", "scheduling.x-k8s.io/v1alpha1", "PodGroup", "pytorchjob-mine", "pg-user", NULL,
          NULL, NULL, json_pack("{s:i}", "minMember", 2));
    serve_pytorchjob(PJ_PATH("secret"), "secret", "s-1", 1, NULL, NULL);
    force(PJ_PATH("secret"), 403);
    serve_pytorchjob(PJ_PATH("elastic"), "elastic", "el-1", 1, NULL, NULL);
}

/* ---- hooks ----------------------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    json_t *releases; /* [uid] */
    json_t *events;   /* [{uid, type, reason, message}] */
    int fenced;
} hk = { PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 0 };

static void hook_release(void *ud, const char *uid)
{
    pthread_mutex_lock(&hk.mu);
    json_array_append_new(hk.releases, json_string(uid));
    pthread_mutex_unlock(&hk.mu);
}

static void hook_event(void *ud, const char *ns, const char *name, const char *uid, const char *type,
                       const char *reason, const char *message)
{
    pthread_mutex_lock(&hk.mu);
    json_array_append_new(
        hk.events, json_pack("{s:s, s:s, s:s, s:s}", "uid", uid, "type", type, "reason", reason, "message", message));
    pthread_mutex_unlock(&hk.mu);
}

static int hook_fenced(void *ud)
{
    return fake_api_read_int(&hk.mu, &hk.fenced);
}

static void set_fenced(int f)
{
    pthread_mutex_lock(&hk.mu);
    hk.fenced = f;
    pthread_mutex_unlock(&hk.mu);
}

/* ---- setup and helpers ------------------------------------------------------- */

static int setup(void **st)
{
    api.objects = json_object();
    api.forced = json_object();
    api.requests = json_array();
    hk.releases = json_array();
    hk.events = json_array();
    return fake_api_up(&fake, handler, "test_grouper");
}

static int teardown(void **st)
{
    fake_api_down(&fake);
    json_decref(api.objects);
    json_decref(api.forced);
    json_decref(api.requests);
    json_decref(hk.releases);
    json_decref(hk.events);
    return 0;
}

/* A grouper on the fake with fresh served objects, no requests and no hook
 * calls recorded; max_depth 0 keeps the default. */
/* The fake API with fresh served objects, no requests and no hook calls
 * recorded. */
static void reset_fake(void)
{
    pthread_mutex_lock(&api.mu);
    json_object_clear(api.objects);
    json_object_clear(api.forced);
    json_array_clear(api.requests);
    pthread_mutex_unlock(&api.mu);
    serve_all();
    pthread_mutex_lock(&hk.mu);
    json_array_clear(hk.releases);
    json_array_clear(hk.events);
    hk.fenced = 0;
    pthread_mutex_unlock(&hk.mu);
}

/* A grouper (started) with o over a reset fake API. */
static grouper_t *fresh_with(const grouper_opts_t *o)
{
    reset_fake();
    grouper_hooks_t h = { NULL, hook_release, hook_event, hook_fenced };
    grouper_t *g = grouper_new(fake.kc, wl_table_new_default(), o, &h);
    assert_int_equal(grouper_start(g), 0);
    return g;
}

static grouper_t *fresh(int max_depth)
{
    grouper_opts_t o;
    grouper_opts_default(&o);
    o.refresh_s = 0; /* every grouper_housekeep call refreshes */
    if (max_depth)
        o.max_depth = max_depth;
    return fresh_with(&o);
}

/* A pending pod of ours named name (uid "uid-NAME") with labels (taken,
 * may be NULL), annotations (taken, may be NULL) and its controller, as
 * the informer delivers it. */
static json_t *pod_json(const char *name, json_t *labels, json_t *annotations, const char *api_version,
                        const char *kind, const char *owner, const char *owner_uid)
{
    char uid[128];
    snprintf(uid, sizeof uid, "uid-%s", name);
    json_t *meta = json_pack("{s:s, s:s, s:s, s:o}", "name", name, "namespace", NS, "uid", uid, "labels",
                             labels ? labels : json_object());
    if (annotations)
        json_object_set_new(meta, "annotations", annotations);
    if (kind)
        json_object_set_new(meta, "ownerReferences", owner_ref(api_version, kind, owner, owner_uid));
    return json_pack("{s:s, s:s, s:o, s:{s:s, s:[{s:s, s:s}]}, s:{s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata",
                     meta, "spec", "schedulerName", "ai-scheduler", "containers", "name", "c", "image", "pause",
                     "status", "phase", "Pending");
}

/* pod_json's pod, parsed. */
static pod_t *mkpod(const char *name, json_t *labels, json_t *annotations, const char *api_version, const char *kind,
                    const char *owner, const char *owner_uid)
{
    json_t *j = pod_json(name, labels, annotations, api_version, kind, owner, owner_uid);
    char err[256] = "";
    pod_t *p = pod_from_json(j, err, sizeof err);
    json_decref(j);
    if (!p)
        fail_msg("pod_from_json: %s", err);
    return p;
}

/* The pod as the informer delivers it after our patch: the pod group
 * label (pg may be NULL) and queue label (may be NULL) added. */
static pod_t *labelled(const char *name, const char *pg, const char *queue, const char *pool, const char *api_version,
                       const char *kind, const char *owner, const char *owner_uid)
{
    json_t *labels = json_object();
    if (pg)
        json_object_set_new(labels, GANG_LABEL, json_string(pg));
    if (queue)
        json_object_set_new(labels, FS_QUEUE_LABEL, json_string(queue));
    return mkpod(name, labels, pool ? json_pack("{s:s}", POOL_ANNOTATION, pool) : NULL, api_version, kind, owner,
                 owner_uid);
}

/* Requests with this method and path (body copied to *body when not
 * NULL: the last one's). */
static int requests(const char *method, const char *path, json_t **body)
{
    int n = 0;
    size_t i;
    json_t *r;
    pthread_mutex_lock(&api.mu);
    json_array_foreach (api.requests, i, r) {
        if (strcmp(json_string_value(json_object_get(r, "method")), method) ||
            strcmp(json_string_value(json_object_get(r, "path")), path))
            continue;
        n++;
        if (body) {
            json_decref(*body);
            *body = json_loads(json_string_value(json_object_get(r, "body")), 0, NULL);
        }
    }
    pthread_mutex_unlock(&api.mu);
    return n;
}

static int nrequests(void)
{
    pthread_mutex_lock(&api.mu);
    int n = (int)json_array_size(api.requests);
    pthread_mutex_unlock(&api.mu);
    return n;
}

static int released(const char *uid)
{
    int n = 0;
    size_t i;
    json_t *r;
    pthread_mutex_lock(&hk.mu);
    json_array_foreach (hk.releases, i, r)
        n += !strcmp(json_string_value(r), uid);
    pthread_mutex_unlock(&hk.mu);
    return n;
}

/* Events on uid; *msg (may be NULL) gets the last one's message, copied. */
static int events(const char *uid, char **msg)
{
    int n = 0;
    size_t i;
    json_t *e;
    pthread_mutex_lock(&hk.mu);
    json_array_foreach (hk.events, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "uid")), uid))
            continue;
        n++;
        assert_string_equal(json_string_value(json_object_get(e, "type")), "Warning");
        assert_string_equal(json_string_value(json_object_get(e, "reason")), "NotGrouped");
        if (msg) {
            free(*msg);
            *msg = util_strdup(json_string_value(json_object_get(e, "message")));
        }
    }
    pthread_mutex_unlock(&hk.mu);
    return n;
}

/* Waits (5 s at most) until the worker has nothing queued or in hand. */
static void wait_idle(grouper_t *g)
{
    int64_t end = util_now_ms() + 5000;
    grouper_stats_t st;
    for (;;) {
        grouper_get_stats(g, &st);
        if (st.work_queued == 0)
            return;
        if (util_now_ms() > end)
            fail_msg("the grouper is still busy (%d items)", st.work_queued);
        util_sleep_ms(5);
    }
}

static void done(grouper_t *g, pod_t **pods, int n)
{
    grouper_free(g);
    for (int i = 0; i < n; i++)
        pod_unref(pods[i]);
}

/* ---- tests --------------------------------------------------------------------- */

static void test_pytorchjob_gang(void **st)
{
    grouper_t *g = fresh(0);
    pod_t *p = mkpod("train-master-0", NULL, NULL, "kubeflow.org/v1", "PyTorchJob", "train", "pj-1");
    assert_int_equal(grouper_hold(g, p), 1);
    wait_idle(g);
    json_t *body = NULL;
    assert_int_equal(requests("GET", PJ_PATH("train"), NULL), 1);
    assert_int_equal(requests("POST", PG_PATH, &body), 1);
    json_t *want = parse_sq("{'apiVersion':'scheduling.x-k8s.io/v1alpha1','kind':'PodGroup','metadata':{"
                            "'name':'pytorchjob-train','namespace':'ns','labels':{'app.kubernetes.io/managed-by':"
                            "'ai-scheduler','resource.aibee.cn/queue':'team-a'},'annotations':{"
                            "'resource.aibee.cn/priority-class':'high'},'ownerReferences':[{'apiVersion':"
                            "'kubeflow.org/v1','kind':'PyTorchJob','name':'train','uid':'pj-1','controller':true,"
                            "'blockOwnerDeletion':false}]},'spec':{'minMember':4}}");
    assert_true(json_equal(body, want));
    json_decref(want);
    assert_int_equal(requests("PATCH", POD_PATH("train-master-0"), &body), 1);
    want = parse_sq("{'metadata':{'uid':'uid-train-master-0','labels':{'scheduling.x-k8s.io/pod-group':"
                    "'pytorchjob-train','resource.aibee.cn/queue':'team-a'}}}");
    assert_true(json_equal(body, want));
    json_decref(want);
    json_decref(body);
    /* Patched: held until the informer shows the label; never released. */
    assert_int_equal(grouper_hold(g, p), 1);
    pod_t *l = labelled("train-master-0", "pytorchjob-train", "team-a", NULL, "kubeflow.org/v1", "PyTorchJob", "train",
                        "pj-1");
    assert_int_equal(grouper_hold(g, l), 0);
    assert_int_equal(released("uid-train-master-0"), 0);
    assert_int_equal(events("uid-train-master-0", NULL), 0);
    /* A worker of the same job: labelled only (no second create, no owner read). */
    pod_t *w = mkpod("train-worker-0", NULL, NULL, "kubeflow.org/v1", "PyTorchJob", "train", "pj-1");
    assert_int_equal(grouper_hold(g, w), 1);
    wait_idle(g);
    assert_int_equal(requests("POST", PG_PATH, NULL), 1);
    assert_int_equal(requests("GET", PJ_PATH("train"), NULL), 1);
    assert_int_equal(requests("PATCH", POD_PATH("train-worker-0"), NULL), 1);
    grouper_stats_t s;
    grouper_get_stats(g, &s);
    assert_int_equal(s.groups_created, 1);
    assert_int_equal(s.pods_grouped, 2);
    pod_t *pods[] = { p, l, w };
    done(g, pods, 3);
}

static void test_indexed_job(void **st)
{
    grouper_t *g = fresh(0);
    pod_t *p = mkpod("idx-0", NULL, NULL, "batch/v1", "Job", "idx", "job-1");
    pod_t *q = mkpod("plain-0", NULL, NULL, "batch/v1", "Job", "plain", "job-2");
    assert_int_equal(grouper_hold(g, p), 1);
    assert_int_equal(grouper_hold(g, q), 1);
    wait_idle(g);
    json_t *body = NULL;
    assert_int_equal(requests("POST", PG_PATH, &body), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(body, "metadata"), "name")), "job-idx");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(body, "spec"), "minMember")), 2);
    assert_int_equal(requests("PATCH", POD_PATH("idx-0"), &body), 1);
    json_t *want = parse_sq("{'metadata':{'uid':'uid-idx-0','labels':{'scheduling.x-k8s.io/pod-group':'job-idx'}}}");
    assert_true(json_equal(body, want));
    json_decref(want);
    json_decref(body);
    /* Not Indexed: the kind's ordinary non-gang case, released quietly. */
    assert_int_equal(released("uid-plain-0"), 1);
    assert_int_equal(events("uid-plain-0", NULL), 0);
    assert_int_equal(requests("PATCH", POD_PATH("plain-0"), NULL), 0);
    assert_int_equal(grouper_hold(g, q), 0);
    pod_t *pods[] = { p, q };
    done(g, pods, 2);
}

static void test_replicaset_hot_path(void **st)
{
    grouper_t *g = fresh(0);
    pod_t *p[3];
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "web-5d4f-%d", i);
        p[i] = mkpod(name, NULL, NULL, "apps/v1", "ReplicaSet", "web-5d4f", "rs-1");
    }
    assert_int_equal(grouper_hold(g, p[0]), 1);
    wait_idle(g);
    assert_int_equal(released("uid-web-5d4f-0"), 1);
    assert_int_equal(grouper_hold(g, p[0]), 0);
    /* The 2nd and 3rd are let in at once, with no request. */
    assert_int_equal(grouper_hold(g, p[1]), 0);
    assert_int_equal(grouper_hold(g, p[2]), 0);
    assert_int_equal(requests("GET", RS_PATH("web-5d4f"), NULL), 1);
    assert_int_equal(requests("GET", DEP_PATH("web"), NULL), 1);
    assert_int_equal(nrequests(), 2);
    assert_int_equal(released("uid-web-5d4f-1"), 0);
    grouper_stats_t s;
    grouper_get_stats(g, &s);
    assert_int_equal(s.pods_waiting, 0);
    assert_int_equal(s.work_queued, 0);
    assert_int_equal(s.owner_reads, 2);
    done(g, p, 3);
}

static void test_copies_queue_and_pool(void **st)
{
    grouper_t *g = fresh(0);
    pod_t *p = mkpod("api-77-a", NULL, NULL, "apps/v1", "ReplicaSet", "api-77", "rs-2");
    assert_int_equal(grouper_hold(g, p), 1);
    wait_idle(g);
    json_t *body = NULL;
    assert_int_equal(requests("PATCH", POD_PATH("api-77-a"), &body), 1);
    json_t *want = parse_sq("{'metadata':{'uid':'uid-api-77-a','labels':{'resource.aibee.cn/queue':'team-b'},"
                            "'annotations':{'resource.aibee.cn/pool':'gpu-pool'}}}");
    assert_true(json_equal(body, want));
    json_decref(want);
    json_decref(body);
    assert_int_equal(grouper_hold(g, p), 1);
    pod_t *l = labelled("api-77-a", NULL, "team-b", "gpu-pool", "apps/v1", "ReplicaSet", "api-77", "rs-2");
    assert_int_equal(grouper_hold(g, l), 0);
    assert_int_equal(released("uid-api-77-a"), 0);
    /* A pod with its own queue and pool: nothing to write, in at once. */
    pod_t *own = mkpod("api-77-b", json_pack("{s:s}", FS_KAI_QUEUE_LABEL, "mine"),
                       json_pack("{s:s}", POOL_ANNOTATION, "p2"), "apps/v1", "ReplicaSet", "api-77", "rs-2");
    assert_int_equal(grouper_hold(g, own), 0);
    assert_int_equal(requests("PATCH", POD_PATH("api-77-b"), NULL), 0);
    pod_t *pods[] = { p, l, own };
    done(g, pods, 3);
}

static void test_leaderworkerset(void **st)
{
    grouper_t *g = fresh(0);
    pod_t *w = mkpod("lws-0-1", json_pack("{s:s}", LWS_IDX, "0"), NULL, "apps/v1", "StatefulSet", "lws-0", "sts-w0");
    assert_int_equal(grouper_hold(g, w), 1);
    wait_idle(g);
    assert_int_equal(requests("GET", STS_PATH("lws-0"), NULL), 1);
    assert_int_equal(requests("GET", POD_PATH("lws-0"), NULL), 1);
    assert_int_equal(requests("GET", STS_PATH("lws"), NULL), 1);
    assert_int_equal(requests("GET", LWS_PATH("lws"), NULL), 1);
    json_t *body = NULL;
    assert_int_equal(requests("POST", PG_PATH, &body), 1);
    json_t *meta = json_object_get(body, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "name")), "leaderworkerset-lws-0");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(meta, "ownerReferences"), 0), "uid")),
        "lws-1");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(body, "spec"), "minMember")), 3);
    assert_int_equal(requests("PATCH", POD_PATH("lws-0-1"), &body), 1);
    json_t *want = parse_sq(
        "{'metadata':{'uid':'uid-lws-0-1','labels':{'scheduling.x-k8s.io/pod-group':'leaderworkerset-lws-0'}}}");
    assert_true(json_equal(body, want));
    json_decref(want);
    json_decref(body);
    /* The leader: same group, labelled only. */
    pod_t *l = mkpod("lws-0", json_pack("{s:s}", LWS_IDX, "0"), NULL, "apps/v1", "StatefulSet", "lws", "sts-leader");
    assert_int_equal(grouper_hold(g, l), 1);
    wait_idle(g);
    assert_int_equal(requests("POST", PG_PATH, NULL), 1);
    assert_int_equal(requests("PATCH", POD_PATH("lws-0"), NULL), 1);
    /* No group index: on its own, with an event. */
    pod_t *n = mkpod("lws-x", NULL, NULL, "apps/v1", "StatefulSet", "lws", "sts-leader");
    assert_int_equal(grouper_hold(g, n), 1);
    wait_idle(g);
    char *msg = NULL;
    assert_int_equal(events("uid-lws-x", &msg), 1);
    assert_non_null(strstr(msg, LWS_IDX));
    free(msg);
    assert_int_equal(released("uid-lws-x"), 1);
    pod_t *pods[] = { w, l, n };
    done(g, pods, 3);
}

/* The pod (owned by kind/name/uid) is released with one event saying want. */
static void check_error(grouper_t *g, const char *pod, const char *api_version, const char *kind, const char *name,
                        const char *uid, const char *want)
{
    pod_t *p = mkpod(pod, NULL, NULL, api_version, kind, name, uid);
    char puid[128], *msg = NULL;
    snprintf(puid, sizeof puid, "uid-%s", pod);
    assert_int_equal(grouper_hold(g, p), 1);
    wait_idle(g);
    assert_int_equal(released(puid), 1);
    assert_int_equal(events(puid, &msg), 1);
    if (!strstr(msg, want) || !strstr(msg, "the pod is scheduled as a pod of its own"))
        fail_msg("event: %s (want %s)", msg, want);
    free(msg);
    assert_int_equal(grouper_hold(g, p), 0);
    pod_unref(p);
}

static void test_owner_errors(void **st)
{
    grouper_t *g = fresh(0);
    check_error(g, "ghost-0", "kubeflow.org/v1", "PyTorchJob", "ghost", "gh-1",
                "PyTorchJob ghost not found (not created yet, or its CRD is not installed)");
    assert_int_equal(requests("GET", PJ_PATH("ghost"), NULL), 1);
    check_error(g, "secret-0", "kubeflow.org/v1", "PyTorchJob", "secret", "s-1",
                "no RBAC to get pytorchjobs.kubeflow.org");
    /* A replaced owner (another uid at the name) is not found. */
    check_error(g, "train-old", "kubeflow.org/v1", "PyTorchJob", "train", "pj-0", "PyTorchJob train not found");
    check_error(g, "cyc-0", "apps/v1", "ReplicaSet", "cyc-a", "ca", "cycle");
    assert_int_equal(requests("GET", RS_PATH("cyc-a"), NULL), 1);
    assert_int_equal(requests("POST", PG_PATH, NULL), 0);
    assert_int_equal(requests("PATCH", POD_PATH("cyc-0"), NULL), 0);
    grouper_free(g);
    g = fresh(2);
    check_error(g, "deep-0", "apps/v1", "ReplicaSet", "d1", "d1", "deeper than 2");
    assert_int_equal(requests("GET", RS_PATH("d3"), NULL), 0);
    grouper_free(g);
}

static void test_retries(void **st)
{
    /* 5xx: tried 4 times (100 ms, 400 ms, 1.6 s apart), then an event; the
     * failed walk is reused for the owner's next pod for a while. */
    grouper_t *g = fresh(0);
    serve_pytorchjob(PJ_PATH("flaky"), "flaky", "f-1", 1, NULL, NULL);
    force(PJ_PATH("flaky"), 503);
    int64_t t0 = util_now_ms();
    check_error(g, "flaky-0", "kubeflow.org/v1", "PyTorchJob", "flaky", "f-1", "reading PyTorchJob flaky failed");
    assert_true(util_now_ms() - t0 >= 2100);
    assert_int_equal(requests("GET", PJ_PATH("flaky"), NULL), 4);
    check_error(g, "flaky-1", "kubeflow.org/v1", "PyTorchJob", "flaky", "f-1", "reading PyTorchJob flaky failed");
    assert_int_equal(requests("GET", PJ_PATH("flaky"), NULL), 4);
    grouper_free(g);
}

static void test_user_podgroup_wins(void **st)
{
    grouper_t *g = fresh(0);
    pod_t *p = mkpod("mine-0", NULL, NULL, "kubeflow.org/v1", "PyTorchJob", "mine", "m-1");
    assert_int_equal(grouper_hold(g, p), 1);
    wait_idle(g);
    assert_int_equal(requests("POST", PG_PATH, NULL), 1);
    assert_int_equal(requests("GET", PG_PATH "/pytorchjob-mine", NULL), 1);
    assert_int_equal(requests("PATCH", PG_PATH "/pytorchjob-mine", NULL), 0);
    assert_int_equal(requests("PATCH", POD_PATH("mine-0"), NULL), 0);
    char *msg = NULL;
    assert_int_equal(events("uid-mine-0", &msg), 1);
    assert_string_equal(msg, "PodGroup ns/pytorchjob-mine exists and was not created by ai-scheduler for PyTorchJob "
                             "mine: the pod is not grouped");
    free(msg);
    assert_int_equal(released("uid-mine-0"), 1);
    assert_int_equal(grouper_hold(g, p), 0);
    pod_t *pods[] = { p };
    done(g, pods, 1);
}

static void test_ours_after_restart(void **st)
{
    /* A PodGroup of ours exists (409): verified by label and owner, and
     * resized when its minimum differs. */
    grouper_t *g = fresh(0);
    serve(PG_PATH "/pytorchjob-train", "scheduling.x-k8s.io/v1alpha1", "PodGroup", "pytorchjob-train", "pg-1",
          owner_ref("kubeflow.org/v1", "PyTorchJob", "train", "pj-1"),
          json_pack("{s:s}", GROUPER_MANAGED_LABEL, GROUPER_MANAGED_VALUE), NULL, json_pack("{s:i}", "minMember", 2));
    pod_t *p = mkpod("train-master-0", NULL, NULL, "kubeflow.org/v1", "PyTorchJob", "train", "pj-1");
    assert_int_equal(grouper_hold(g, p), 1);
    wait_idle(g);
    json_t *body = NULL;
    assert_int_equal(requests("PATCH", PG_PATH "/pytorchjob-train", &body), 1);
    json_t *want = parse_sq("{'spec':{'minMember':4}}");
    assert_true(json_equal(body, want));
    json_decref(want);
    json_decref(body);
    assert_int_equal(requests("PATCH", POD_PATH("train-master-0"), NULL), 1);
    assert_int_equal(events("uid-train-master-0", NULL), 0);
    pod_t *pods[] = { p };
    done(g, pods, 1);
}

static void test_resize(void **st)
{
    grouper_t *g = fresh(0);
    pod_t *p = mkpod("elastic-0", NULL, NULL, "kubeflow.org/v1", "PyTorchJob", "elastic", "el-1");
    assert_int_equal(grouper_hold(g, p), 1);
    wait_idle(g);
    json_t *body = NULL;
    assert_int_equal(requests("POST", PG_PATH, &body), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(body, "spec"), "minMember")), 2);
    /* Unchanged owner: a refresh reads it and writes nothing. */
    grouper_housekeep(g);
    wait_idle(g);
    assert_int_equal(requests("GET", PJ_PATH("elastic"), NULL), 2);
    assert_int_equal(requests("PATCH", PG_PATH "/pytorchjob-elastic", NULL), 0);
    /* 1 + 3 replicas: one PATCH of minMember. */
    serve_pytorchjob(PJ_PATH("elastic"), "elastic", "el-1", 3, NULL, NULL);
    grouper_housekeep(g);
    wait_idle(g);
    assert_int_equal(requests("PATCH", PG_PATH "/pytorchjob-elastic", &body), 1);
    json_t *want = parse_sq("{'spec':{'minMember':4}}");
    assert_true(json_equal(body, want));
    json_decref(want);
    grouper_housekeep(g);
    wait_idle(g);
    assert_int_equal(requests("PATCH", PG_PATH "/pytorchjob-elastic", NULL), 1);
    /* The owner is gone: untracked, no more reads. */
    pthread_mutex_lock(&api.mu);
    json_object_del(api.objects, PJ_PATH("elastic"));
    pthread_mutex_unlock(&api.mu);
    grouper_housekeep(g);
    wait_idle(g);
    int reads = requests("GET", PJ_PATH("elastic"), NULL);
    grouper_housekeep(g);
    wait_idle(g);
    assert_int_equal(requests("GET", PJ_PATH("elastic"), NULL), reads);
    grouper_stats_t s;
    grouper_get_stats(g, &s);
    assert_int_equal(s.groups_resized, 1);
    json_decref(body);
    pod_t *pods[] = { p };
    done(g, pods, 1);
}

/* A new pod of a workload read anew (its decision expired after 1 s)
 * brings its resize at once, without waiting for the refresh (1 h here). */
static void test_resize_by_new_pod(void **st)
{
    grouper_opts_t o;
    grouper_opts_default(&o);
    o.owner_ttl_s = 1;
    o.refresh_s = 3600;
    grouper_t *g = fresh_with(&o);
    pod_t *p0 = mkpod("grow-0", NULL, NULL, "kubeflow.org/v1", "PyTorchJob", "grow", "gr-1");
    serve_pytorchjob(PJ_PATH("grow"), "grow", "gr-1", 1, NULL, NULL);
    assert_int_equal(grouper_hold(g, p0), 1);
    wait_idle(g);
    json_t *body = NULL;
    assert_int_equal(requests("POST", PG_PATH, &body), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(body, "spec"), "minMember")), 2);
    json_decref(body);
    serve_pytorchjob(PJ_PATH("grow"), "grow", "gr-1", 3, NULL, NULL);
    util_sleep_ms(1100);
    pod_t *p1 = mkpod("grow-1", NULL, NULL, "kubeflow.org/v1", "PyTorchJob", "grow", "gr-1");
    assert_int_equal(grouper_hold(g, p1), 1);
    wait_idle(g);
    assert_int_equal(requests("GET", PJ_PATH("grow"), NULL), 2);
    assert_int_equal(requests("POST", PG_PATH, NULL), 1);
    body = NULL;
    assert_int_equal(requests("PATCH", PG_PATH "/pytorchjob-grow", &body), 1);
    json_t *want = parse_sq("{'spec':{'minMember':4}}");
    assert_true(json_equal(body, want));
    json_decref(want);
    json_decref(body);
    assert_int_equal(requests("PATCH", POD_PATH("grow-1"), NULL), 1);
    pod_t *pods[] = { p0, p1 };
    done(g, pods, 2);
}

static void test_podgroup_informer(void **st)
{
    /* A managed PodGroup seen by the informer (made before a restart) is
     * refreshed; a user's is not tracked. */
    grouper_t *g = fresh(0);
    json_t *ours = parse_sq("{'metadata':{'name':'job-idx','namespace':'ns','labels':{'app.kubernetes.io/managed-by':"
                            "'ai-scheduler'},'ownerReferences':[{'apiVersion':'batch/v1','kind':'Job','name':'idx',"
                            "'uid':'job-1','controller':true}]},'spec':{'minMember':1}}");
    json_t *user = parse_sq("{'metadata':{'name':'u','namespace':'ns','ownerReferences':[{'apiVersion':'batch/v1',"
                            "'kind':'Job','name':'idx','uid':'job-1','controller':true}]},'spec':{'minMember':1}}");
    json_t *junk = parse_sq("{'metadata':{'labels':{'app.kubernetes.io/managed-by':'ai-scheduler'},"
                            "'ownerReferences':[{'apiVersion':7,'kind':'Job','controller':true}]},'spec':[]}");
    serve(PG_PATH "/job-idx", "scheduling.x-k8s.io/v1alpha1", "PodGroup", "job-idx", "pg-2", NULL, NULL, NULL,
          json_pack("{s:i}", "minMember", 1));
    grouper_podgroup(g, NS, "job-idx", ours);
    grouper_podgroup(g, NS, "u", user);
    grouper_podgroup(g, NS, "junk", junk);
    grouper_podgroup(g, NS, "junk", NULL);
    grouper_housekeep(g);
    wait_idle(g);
    assert_int_equal(requests("GET", JOB_PATH("idx"), NULL), 1);
    json_t *body = NULL;
    assert_int_equal(requests("PATCH", PG_PATH "/job-idx", &body), 1);
    json_t *want = parse_sq("{'spec':{'minMember':2}}");
    assert_true(json_equal(body, want));
    json_decref(want);
    json_decref(body);
    assert_int_equal(nrequests(), 2);
    /* Deleted: no longer refreshed. */
    grouper_podgroup(g, NS, "job-idx", NULL);
    grouper_housekeep(g);
    wait_idle(g);
    assert_int_equal(nrequests(), 2);
    json_decref(ours);
    json_decref(user);
    json_decref(junk);
    grouper_free(g);
}

static void test_fenced(void **st)
{
    grouper_t *g = fresh(0);
    set_fenced(1);
    pod_t *p = mkpod("idx-1", NULL, NULL, "batch/v1", "Job", "idx", "job-1");
    assert_int_equal(grouper_hold(g, p), 1);
    /* No request while fenced (the worker tries again every second). */
    int64_t end = util_now_ms() + 1500;
    while (util_now_ms() < end) {
        assert_int_equal(nrequests(), 0);
        util_sleep_ms(20);
    }
    assert_int_equal(grouper_hold(g, p), 1);
    assert_int_equal(released("uid-idx-1"), 0);
    set_fenced(0);
    end = util_now_ms() + 5000;
    while (requests("PATCH", POD_PATH("idx-1"), NULL) == 0 && util_now_ms() < end)
        util_sleep_ms(10);
    assert_int_equal(requests("PATCH", POD_PATH("idx-1"), NULL), 1);
    assert_int_equal(requests("POST", PG_PATH, NULL), 1);
    pod_t *pods[] = { p };
    done(g, pods, 1);
}

static void test_pod_patch_answers(void **st)
{
    grouper_t *g = fresh(0);
    /* 409 (the pod was replaced): the record is dropped, nothing told. */
    force(POD_PATH("idx-2"), 409);
    pod_t *a = mkpod("idx-2", NULL, NULL, "batch/v1", "Job", "idx", "job-1");
    assert_int_equal(grouper_hold(g, a), 1);
    wait_idle(g);
    assert_int_equal(released("uid-idx-2"), 0);
    assert_int_equal(events("uid-idx-2", NULL), 0);
    /* 403: on its own with an event. */
    force(POD_PATH("idx-3"), 403);
    pod_t *b = mkpod("idx-3", NULL, NULL, "batch/v1", "Job", "idx", "job-1");
    assert_int_equal(grouper_hold(g, b), 1);
    wait_idle(g);
    assert_int_equal(released("uid-idx-3"), 1);
    assert_int_equal(events("uid-idx-3", NULL), 1);
    assert_int_equal(grouper_hold(g, b), 0);
    /* Forgotten while patched: a new object starts again. */
    grouper_forget(g, "uid-idx-2");
    grouper_forget(g, "uid-nobody");
    pod_t *pods[] = { a, b };
    done(g, pods, 2);
}

static void test_no_controller_and_labelled(void **st)
{
    grouper_t *g = fresh(0);
    pod_t *bare = mkpod("bare", NULL, NULL, NULL, NULL, NULL, NULL);
    pod_t *grouped =
        mkpod("g0", json_pack("{s:s}", GANG_LABEL, "mine"), NULL, "kubeflow.org/v1", "PyTorchJob", "train", "pj-1");
    pod_t *unknown = mkpod("u0", NULL, NULL, "example.com/v1", "Thing", "t", "t-1");
    assert_int_equal(grouper_hold(g, bare), 0);
    assert_int_equal(grouper_hold(g, grouped), 0);
    assert_int_equal(grouper_hold(g, unknown), 1);
    wait_idle(g);
    assert_int_equal(released("uid-u0"), 1);
    assert_int_equal(events("uid-u0", NULL), 0);
    assert_int_equal(nrequests(), 0);
    pod_t *pods[] = { bare, grouped, unknown };
    done(g, pods, 3);
}

static void test_untrusted_owners(void **st)
{
    /* Owners of every wrong shape end in a decision, never a crash. */
    grouper_t *g = fresh(0);
    const char *bodies[] = { "{'metadata':7}", "{'metadata':{'uid':'x-1','ownerReferences':{}}}",
                             "{'metadata':{'uid':'x-1','ownerReferences':[7,{'controller':true}]}}",
                             "{'metadata':{'uid':'x-1','labels':[],'annotations':'a'},'spec':null}", "[]" };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        grouper_free(g);
        g = fresh(0);
        pthread_mutex_lock(&api.mu);
        json_object_set_new(api.objects, PJ_PATH("x"), parse_sq(bodies[i]));
        pthread_mutex_unlock(&api.mu);
        char name[32];
        snprintf(name, sizeof name, "x-%zu", i);
        pod_t *p = mkpod(name, NULL, NULL, "kubeflow.org/v1", "PyTorchJob", "x", "x-1");
        assert_int_equal(grouper_hold(g, p), 1);
        wait_idle(g);
        char uid[64];
        snprintf(uid, sizeof uid, "uid-%s", name);
        assert_int_equal(released(uid), 1);
        assert_int_equal(grouper_hold(g, p), 0);
        pod_unref(p);
    }
    grouper_free(g);
}

/* ---- in the scheduler: a pod let in keeps its queue item ---------------- */

static int64_t clock_base_mono, clock_base_wall, clock_ahead;

static int64_t ahead_mono(void *ud)
{
    return clock_base_mono + __atomic_load_n(&clock_ahead, __ATOMIC_ACQUIRE);
}

static int64_t ahead_wall(void *ud)
{
    return clock_base_wall + __atomic_load_n(&clock_ahead, __ATOMIC_ACQUIRE);
}

/* The informer's event for pod_json's pod (labels taken, may be NULL), of
 * ReplicaSet q-1 (under Deployment q, whose queue label is team-q). */
static void rs_q_pod_event(scheduler_t *s, kube_event_type_t type, json_t *labels)
{
    json_t *j = pod_json("q-1-a", labels, NULL, "apps/v1", "ReplicaSet", "q-1", "rs-q");
    on_pod_event(s, type, NS "/q-1-a", j);
    json_decref(j);
}

/* A pod whose queue label the grouper copied from its owner is let in
 * once: an update after its owner's decision expired (300 s) leaves its
 * queue item as it was (the same age, the attempts it made) and reads no
 * owner again. It was held again, taken out of its queue and put back as
 * a new item (age 0, attempts 0): starvation protection never saw it old,
 * and each round cost the owner reads. */
static void test_let_in_pod_keeps_queue_item(void **st)
{
    reset_fake();
    serve(DEP_PATH("q"), "apps/v1", "Deployment", "q", "dep-q", NULL, json_pack("{s:s}", FS_QUEUE_LABEL, "team-q"),
          NULL, NULL);
    serve(RS_PATH("q-1"), "apps/v1", "ReplicaSet", "q-1", "rs-q", owner_ref("apps/v1", "Deployment", "q", "dep-q"),
          NULL, NULL, NULL);
    clock_base_mono = util_now_ms();
    clock_base_wall = util_wall_ms();
    __atomic_store_n(&clock_ahead, 0, __ATOMIC_RELEASE);
    util_clock_override(ahead_mono, ahead_wall, NULL);
    scheduler_opts_t o;
    scheduler_opts_default(&o);
    o.identity = "test";
    char err[256] = "";
    scheduler_t *s = scheduler_new(&o, fake.kc, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(sched_rows_start(s, err, sizeof err), 0);
    grouper_t *g = grouper_row_grouper(sched_row(s, "workload-groups")->self);
    sched_pool_t *D = pools_get(s, DEFAULT_POOL_ID);

    rs_q_pod_event(s, KUBE_ADDED, NULL); /* held while its owners are read */
    wait_idle(g);
    json_t *body = NULL;
    assert_int_equal(requests("PATCH", POD_PATH("q-1-a"), &body), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(body, "metadata"), "labels"),
                                                          FS_QUEUE_LABEL)),
                        "team-q");
    json_decref(body);
    rs_q_pod_event(s, KUBE_MODIFIED, json_pack("{s:s}", FS_QUEUE_LABEL, "team-q")); /* the copy: let in */
    queue_item_t *it = queue_pop_timeout(D->q, 1000);
    assert_non_null(it);
    int64_t first = it->first_ms;
    queue_requeue(D->q, it); /* a failed attempt */
    int reads = requests("GET", RS_PATH("q-1"), NULL);
    assert_int_equal(reads, 1);

    __atomic_store_n(&clock_ahead, 301000, __ATOMIC_RELEASE);
    rs_q_pod_event(s, KUBE_MODIFIED, json_pack("{s:s}", FS_QUEUE_LABEL, "team-q")); /* a status write, say */
    wait_idle(g);
    it = queue_take(D->q, "uid-q-1-a");
    assert_non_null(it);
    assert_int_equal(it->attempts, 1);
    assert_true(it->first_ms == first);
    /* the tenant a pod labelled team-q of its own counts in */
    pod_t *own = fx_pod("{'metadata':{'name':'own','namespace':'default','uid':'uid-own','labels':{'" FS_QUEUE_LABEL
                        "':'team-q'}},'spec':{'containers':[{'name':'c'}]}}");
    assert_int_not_equal(sched_pod_tenant(s, own), FS_DEFAULT_ID);
    assert_int_equal(sched_pod_tenant(s, it->pod), sched_pod_tenant(s, own));
    pod_unref(own);
    assert_int_equal(requests("GET", RS_PATH("q-1"), NULL), reads);
    queue_item_free(it);
    scheduler_free(s);
    util_clock_override(NULL, NULL, NULL);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytorchjob_gang),
        cmocka_unit_test(test_indexed_job),
        cmocka_unit_test(test_replicaset_hot_path),
        cmocka_unit_test(test_copies_queue_and_pool),
        cmocka_unit_test(test_leaderworkerset),
        cmocka_unit_test(test_owner_errors),
        cmocka_unit_test(test_retries),
        cmocka_unit_test(test_user_podgroup_wins),
        cmocka_unit_test(test_ours_after_restart),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_resize_by_new_pod),
        cmocka_unit_test(test_podgroup_informer),
        cmocka_unit_test(test_fenced),
        cmocka_unit_test(test_pod_patch_answers),
        cmocka_unit_test(test_no_controller_and_labelled),
        cmocka_unit_test(test_untrusted_owners),
        cmocka_unit_test(test_let_in_pod_keeps_queue_item),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
