/* test_sched_workloads.c -- the workload-groups row in the scheduler
 * (gates.c, informers.c, prioclass.c) with the real grouper against a fake
 * API server: a pod owned by a PyTorchJob stays out of the queues until the
 * PodGroup exists and the pod comes back labelled to it; a ReplicaSet's pod
 * is let in with no write; a pod whose owner is missing is let in alone
 * with one event; a PodGroup's priority class raises its gang's priority. */
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
#include "gang/gang.h"
#include "kube/client.h"
#include "scheduler/capabilities.h"
#include "gang/row.h"
#include "prioclass/row.h"
#include "scheduler/internal.h"
#include "util/util.h"

/* ---- fake API server ---------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    int owner_gets, pg_posts, pod_patches, events;
    char *pg_body, *patch_body, *event_msg;
} api = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, NULL, NULL, NULL };

static const char *PYTORCHJOB = "{'apiVersion':'kubeflow.org/v1','kind':'PyTorchJob','metadata':{'name':'tj',"
                                "'namespace':'ns','uid':'uid-tj','labels':{'resource.aibee.cn/queue':'research'}},"
                                "'spec':{'pytorchReplicaSpecs':{'Master':{'replicas':1},'Worker':{'replicas':1}}}}";
static const char *REPLICASET = "{'apiVersion':'apps/v1','kind':'ReplicaSet','metadata':{'name':'rs1','namespace':"
                                "'ns','uid':'uid-rs1','ownerReferences':[{'apiVersion':'apps/v1','kind':"
                                "'Deployment','name':'dep1','uid':'uid-dep1','controller':true}]},'spec':{}}";
static const char *DEPLOYMENT = "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'dep1',"
                                "'namespace':'ns','uid':'uid-dep1'},'spec':{}}";

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned code, const char *sq)
{
    json_t *j = parse_sq(sq);
    enum MHD_Result rc = fake_api_json(c, code, j);
    json_decref(j);
    return rc;
}

static void keep(char **dst, const char *body)
{
    free(*dst);
    *dst = util_strdup(body ? body : "");
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *data, size_t *size, void **con_cls)
{
    const char *body = NULL;
    if (fake_api_gather(con_cls, data, size, &body))
        return MHD_YES;
    pthread_mutex_lock(&api.mu);
    const char *answer = NULL;
    unsigned code = 200;
    if (!strcmp(method, "GET") && strstr(url, "/pytorchjobs/tj"))
        answer = PYTORCHJOB;
    else if (!strcmp(method, "GET") && strstr(url, "/replicasets/rs1"))
        answer = REPLICASET;
    else if (!strcmp(method, "GET") && strstr(url, "/deployments/dep1"))
        answer = DEPLOYMENT;
    if (!strcmp(method, "GET") &&
        (strstr(url, "/pytorchjobs/") || strstr(url, "/replicasets/") || strstr(url, "/deployments/")))
        api.owner_gets++;
    if (!strcmp(method, "POST") && strstr(url, "/podgroups")) {
        api.pg_posts++;
        keep(&api.pg_body, body);
        code = 201;
    } else if (!strcmp(method, "PATCH") && strstr(url, "/pods/") && !strstr(url, "/status")) {
        api.pod_patches++;
        keep(&api.patch_body, body);
    } else if (!strcmp(method, "POST") && strstr(url, "/events")) {
        json_t *b = json_loads(body ? body : "", 0, NULL);
        const char *reason = json_string_value(json_object_get(b, "reason"));
        if (reason && !strcmp(reason, "NotGrouped")) {
            api.events++;
            keep(&api.event_msg, json_string_value(json_object_get(b, "message")));
        }
        json_decref(b);
        code = 201;
    }
    pthread_mutex_unlock(&api.mu);
    if (answer)
        return reply_json(c, code, answer);
    if (!strcmp(method, "GET"))
        return fake_api_status(c, 404, "not found");
    if (!strcmp(method, "POST") && strstr(url, "/podgroups"))
        return fake_api_status(c, 201, body ? body : "{}");
    return fake_api_status(c, code, "ok");
}

static fake_api_t fake;

static int setup(void **st)
{
    return fake_api_up(&fake, handler, "test_sched_workloads");
}

static int teardown(void **st)
{
    fake_api_down(&fake);
    free(api.pg_body);
    free(api.patch_body);
    free(api.event_msg);
    return 0;
}

static int count(const int *f)
{
    return fake_api_read_int(&api.mu, f);
}

/* Waits up to 5 s for *f to reach n. */
static int wait_count(const int *f, int n)
{
    for (int i = 0; i < 500 && count(f) < n; i++)
        util_sleep_ms(10);
    return count(f);
}

static scheduler_t *fresh(void)
{
    pthread_mutex_lock(&api.mu);
    api.owner_gets = api.pg_posts = api.pod_patches = api.events = 0;
    pthread_mutex_unlock(&api.mu);
    scheduler_t *s = fake_api_scheduler(fake.kc);
    s->writer = writer_new(s, 100);
    char err[256];
    if (sched_rows_start(s, err, sizeof err) != 0)
        fail_msg("sched_rows_start: %s", err);
    return s;
}

static void done(scheduler_t *s)
{
    sched_rows_stop(s);
    writer_free(s->writer);
    s->writer = NULL;
    scheduler_free(s);
}

/* A pending pod of ours; owner "" for none, else "Kind/apiVersion-group/name/uid"
 * spelled out by the caller as a JSON ownerReferences member. */
static void pod_event(scheduler_t *s, kube_event_type_t type, const char *name, const char *rv, const char *labels,
                      const char *owner_ref)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'%s','namespace':'ns','uid':'uid-%s',"
             "'resourceVersion':'%s','creationTimestamp':'2026-01-01T00:00:00Z','labels':{%s}%s},"
             "'spec':{'containers':[{'name':'c','image':'i','resources':{'requests':{'cpu':'1'}}}],"
             "'schedulerName':'ai-scheduler'},'status':{'phase':'Pending'}}",
             name, name, rv, labels ? labels : "", owner_ref ? owner_ref : "");
    json_t *j = parse_sq(text);
    char key[128];
    snprintf(key, sizeof key, "ns/%s", name);
    on_pod_event(s, type, key, j);
    json_decref(j);
}

#define OWNED_BY_TJ                                                                                                    \
    ",'ownerReferences':[{'apiVersion':'kubeflow.org/v1','kind':'PyTorchJob','name':'tj','uid':'uid-tj',"              \
    "'controller':true,'blockOwnerDeletion':true}]"
#define OWNED_BY_RS                                                                                                    \
    ",'ownerReferences':[{'apiVersion':'apps/v1','kind':'ReplicaSet','name':'rs1','uid':'uid-rs1',"                    \
    "'controller':true}]"
#define OWNED_BY_MISSING                                                                                               \
    ",'ownerReferences':[{'apiVersion':'kubeflow.org/v1','kind':'PyTorchJob','name':'gone','uid':'uid-gone',"          \
    "'controller':true}]"

static int queued(scheduler_t *s)
{
    queue_stats_t qs;
    queue_get_stats(pools_get(s, DEFAULT_POOL_ID)->q, &qs);
    return qs.active + qs.backoff + qs.unschedulable + qs.inflight;
}

static int wait_queued(scheduler_t *s, int n)
{
    for (int i = 0; i < 500 && queued(s) < n; i++)
        util_sleep_ms(10);
    return queued(s);
}

/* ---- cases ----------------------------------------------------------------- */

/* A PyTorchJob's pod: held (in no queue) while the grouper creates
 * pytorchjob-tj (minMember 2, owned by the job, queue from the job's label)
 * and labels the pod; the labelled pod comes back and enters the queue. */
static void test_pytorchjob_pod_held_until_labelled(void **st)
{
    scheduler_t *s = fresh();
    pod_event(s, KUBE_ADDED, "tj-master-0", "10", NULL, OWNED_BY_TJ);
    assert_int_equal(queued(s), 0);
    assert_true(gates_is_held(s, "uid-tj-master-0"));
    assert_int_equal(wait_count(&api.pod_patches, 1), 1);
    assert_int_equal(count(&api.pg_posts), 1);
    pthread_mutex_lock(&api.mu);
    json_t *pg = json_loads(api.pg_body, 0, NULL), *patch = json_loads(api.patch_body, 0, NULL);
    pthread_mutex_unlock(&api.mu);
    assert_non_null(pg);
    assert_non_null(patch);
    json_t *meta = json_object_get(pg, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "name")), "pytorchjob-tj");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(pg, "spec"), "minMember")), 2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "labels"), "resource.aibee.cn/queue")),
                        "research");
    json_t *ref = json_array_get(json_object_get(meta, "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(ref, "uid")), "uid-tj");
    assert_true(json_is_true(json_object_get(ref, "controller")));
    json_t *lbl = json_object_get(json_object_get(patch, "metadata"), "labels");
    assert_string_equal(json_string_value(json_object_get(lbl, GANG_LABEL)), "pytorchjob-tj");
    json_decref(pg);
    json_decref(patch);
    /* Patched but not seen yet: still out. */
    util_sleep_ms(50);
    assert_int_equal(queued(s), 0);
    pod_event(s, KUBE_MODIFIED, "tj-master-0", "11", "'" GANG_LABEL "':'pytorchjob-tj'", OWNED_BY_TJ);
    assert_int_equal(queued(s), 1);
    assert_false(gates_is_held(s, "uid-tj-master-0"));
    /* The second pod of the job: no second PodGroup, its own label patch. */
    pod_event(s, KUBE_ADDED, "tj-worker-0", "12", NULL, OWNED_BY_TJ);
    assert_int_equal(wait_count(&api.pod_patches, 2), 2);
    assert_int_equal(count(&api.pg_posts), 1);
    assert_int_equal(queued(s), 1);
    done(s);
}

/* A Deployment's pods: the first costs the GETs of its ReplicaSet and
 * Deployment and enters the queue with no write; the next enters at once. */
static void test_replicaset_pods_let_in(void **st)
{
    scheduler_t *s = fresh();
    pod_event(s, KUBE_ADDED, "web-1", "10", NULL, OWNED_BY_RS);
    assert_int_equal(wait_queued(s, 1), 1);
    assert_int_equal(count(&api.owner_gets), 2);
    pod_event(s, KUBE_ADDED, "web-2", "11", NULL, OWNED_BY_RS);
    assert_int_equal(queued(s), 2); /* no wait: the decision is known */
    assert_int_equal(count(&api.owner_gets), 2);
    assert_int_equal(count(&api.pod_patches), 0);
    assert_int_equal(count(&api.pg_posts), 0);
    assert_int_equal(gates_held_count(s), 0);
    done(s);
}

/* An owner that does not exist: the pod is scheduled alone, with one
 * NotGrouped event that says why; a pod with no owner is never held. */
static void test_missing_owner_single_with_event(void **st)
{
    scheduler_t *s = fresh();
    pod_event(s, KUBE_ADDED, "bare", "9", NULL, NULL);
    assert_int_equal(queued(s), 1);
    pod_event(s, KUBE_ADDED, "orphan", "10", NULL, OWNED_BY_MISSING);
    assert_int_equal(wait_queued(s, 2), 2);
    writer_free(s->writer); /* drains the event */
    s->writer = writer_new(s, 100);
    assert_int_equal(wait_count(&api.events, 1), 1);
    pthread_mutex_lock(&api.mu);
    assert_non_null(strstr(api.event_msg, "gone"));
    pthread_mutex_unlock(&api.mu);
    assert_int_equal(count(&api.pg_posts), 0);
    done(s);
}

/* A PodGroup's priority class: its members rank and preempt with the
 * class's value when it is above their own, never below it. */
static void test_gang_priority_class(void **st)
{
    scheduler_t *s = fresh();
    json_t *pc = parse_sq("{'apiVersion':'scheduling.k8s.io/v1','kind':'PriorityClass','metadata':{'name':'high'},"
                          "'value':1000}");
    prioclass_row_on_event(sched_row(s, "priority-classes")->self, KUBE_ADDED, "high", pc);
    json_decref(pc);
    json_t *pg = parse_sq("{'apiVersion':'scheduling.x-k8s.io/v1alpha1','kind':'PodGroup','metadata':{'name':'g',"
                          "'namespace':'ns','uid':'uid-g','annotations':{'" GANG_PRIORITY_CLASS_ANNOTATION
                          "':'high'}},'spec':{'minMember':1}}");
    gang_row_on_podgroup(sched_row(s, "gang")->self, KUBE_ADDED, "ns/g", pg);
    json_decref(pg);
    pod_event(s, KUBE_ADDED, "m", "10", "'" GANG_LABEL "':'g'", NULL);
    pod_event(s, KUBE_ADDED, "lone", "11", NULL, NULL);
    pod_t *m = cache_get_pod(s->cache, "uid-m", NULL), *lone = cache_get_pod(s->cache, "uid-lone", NULL);
    assert_non_null(m);
    assert_non_null(lone);
    assert_int_equal(m->priority, 0);
    assert_int_equal(sched_pod_priority(s, m), 1000);
    assert_int_equal(sched_pod_priority(s, lone), 0);
    gang_snap_t g;
    assert_int_equal(gang_snapshot(s->published.group_store, "ns", "g", &g), 0);
    assert_int_equal(sched_services.gang_priority(s, &g, 0), 1000);
    assert_int_equal(sched_services.gang_priority(s, &g, 2000), 2000); /* never below its members */
    gang_snap_clear(&g);
    /* The class goes: back to the members' own. */
    prioclass_row_on_event(sched_row(s, "priority-classes")->self, KUBE_DELETED, "high", NULL);
    assert_int_equal(sched_pod_priority(s, m), 0);
    pod_unref(m);
    pod_unref(lone);
    done(s);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytorchjob_pod_held_until_labelled),
        cmocka_unit_test(test_replicaset_pods_let_in),
        cmocka_unit_test(test_missing_owner_single_with_event),
        cmocka_unit_test(test_gang_priority_class),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
