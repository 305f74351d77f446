/* informers.c -- what the scheduler does with each watched object: nodes
 * and pods feed the cache and wake the queues, PDBs feed preemption. Each
 * handler runs on its informer's thread. */
#include <stdlib.h>
#include <string.h>

#include "framework/topo_index.h"
#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"

void stats_add(scheduler_t *s, unsigned long *field, unsigned long n)
{
    stats_lock(s);
    *field += n;
    stats_unlock(s);
}

void on_node_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    scheduler_t *s = ud;
    status_changed(s);
    s->queues.ops->changed(s->queues.self, 1);
    if (type == KUBE_DELETED) {
        cache_delete_node(s->cache, key);
        LOG_D("node %s deleted", key);
        return;
    }
    char err[256];
    node_t *n = node_from_json(obj, err, sizeof(err));
    if (!n) {
        LOG_W("node %s ignored: %s", key, err);
        return;
    }
    int changed = cache_upsert_node(s->cache, n);
    node_unref(n);
    if (changed)
        sched_event(s, SCHED_EV_NODE_CHANGED, NULL, key, "NodeChanged");
}

static const char *str_at(json_t *obj, const char *a, const char *b)
{
    json_t *v = json_object_get(json_object_get(obj, a), b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A pod we cannot parse (say, a malformed quantity the API let through) is
 * never silently dropped: its owner gets an event saying why. */
static void report_bad_pod(scheduler_t *s, const char *key, json_t *obj, const char *err)
{
    const char *sched = str_at(obj, "spec", "schedulerName");
    const char *node = str_at(obj, "spec", "nodeName");
    if (!sched_is_ours(s, sched) || (node && node[0]))
        return;
    LOG_W("pod %s cannot be scheduled: %s", key, err);
    const char *ns = str_at(obj, "metadata", "namespace"), *name = str_at(obj, "metadata", "name");
    const char *uid = str_at(obj, "metadata", "uid");
    if (!ns || !name || !uid)
        return;
    char msg[400];
    snprintf(msg, sizeof(msg), "invalid pod spec: %s", err);
    writer_pod_event_by_name(s->writer, ns, name, uid, "Warning", "FailedScheduling", msg);
}

static void forget_pod(scheduler_t *s, const char *uid)
{
    int pool = -1;
    pod_t *old = NULL;
    cache_pod_state_t st = cache_delete_pod(s->cache, uid, &old, &pool);
    s->queues.ops->uncharge(s->queues.self, uid); /* a preemptor's provisional charge, a victim's leaving mark */
    gates_release(s, uid);
    pools_delete_pod(s, uid);
    if (old)
        sched_rows_pod_deleted(s, old);
    /* A pending pod holds room too when nominated (pool >= 0: the pool of
     * that node): lower-priority pods see it taken (node_with_nominated). */
    if (st == CPOD_BOUND || st == CPOD_ASSUMED || (st == CPOD_PENDING && pool >= 0))
        sched_event(s, SCHED_EV_POD_DELETED, old, old ? old->node_name : NULL, "PodDeleted");
    pod_unref(old);
}

/* A pending pod enters its home pool's activeQ. */
static void enqueue_home(scheduler_t *s, pod_t *p)
{
    sched_pool_t *H = pools_get(s, pools_home_id(s, p));
    if (!H)
        H = pools_get(s, DEFAULT_POOL_ID);
    queue_add(H->q, p, 0);
    s->queues.ops->changed(s->queues.self, 0);
}

void sched_pod_released(scheduler_t *s, const char *uid)
{
    cache_pod_state_t st;
    pod_t *p = cache_get_pod(s->cache, uid, &st);
    if (p && st == CPOD_PENDING && sched_is_ours(s, p->scheduler_name) && !p->deleting && !gates_keep_out(s, p) &&
        gates_release(s, uid))
        enqueue_home(s, p); /* a pod deleted meanwhile is dropped when popped (sched_refresh) */
    pod_unref(p);
}

/* kube 1.33+'s UpdatePodScaleDown: a bound pod's in-place resize gave back
 * some of a resource, so a pod NodeResourcesFit refused may fit now. */
static int requests_shrank(const resources_t *old, const resources_t *now)
{
    if (now->milli_cpu < old->milli_cpu || now->memory < old->memory || now->ephemeral < old->ephemeral)
        return 1;
    for (int i = 0; i < old->nscalar; i++)
        if (res_get_scalar(now, old->scalar[i].name) < old->scalar[i].value)
            return 1;
    return 0;
}

/* Whether the pod carries our checkpoint request (evictor.c). */
static int pod_has_request(json_t *obj)
{
    json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    return json_is_string(json_object_get(ann, PREEMPTION_REQUESTED_ANNOTATION));
}

void on_pod_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    scheduler_t *s = ud;
    status_changed(s); /* Used and Pending move with pods */
    char *known = hashmap_get(s->pod_uid_by_key, key);
    if (type == KUBE_DELETED) {
        trace_forget(s, "pod", key);
        if (known) {
            forget_pod(s, known);
            free(hashmap_remove(s->pod_uid_by_key, key));
        }
        return;
    }
    char err[256];
    pod_t *p = pod_from_json(obj, err, sizeof(err));
    if (!p) {
        report_bad_pod(s, key, obj, err);
        return;
    }
    if (known && strcmp(known, p->uid) != 0) {
        /* Same name, new object: the old one is gone. */
        forget_pod(s, known);
        free(hashmap_remove(s->pod_uid_by_key, key));
        known = NULL;
    }
    if (!known)
        hashmap_put(s->pod_uid_by_key, key, util_strdup(p->uid));
    pod_t *old = pod_is_bound(p) ? cache_get_pod(s->cache, p->uid, NULL) : NULL;
    cache_pod_state_t now = CPOD_NONE;
    /* status.nominatedNodeName is room a scheduler of the pod's
     * schedulerName made: ours only when that name is ours (a label or the
     * pod's own word would let anyone reserve a node). */
    int ours = sched_is_ours(s, p->scheduler_name);
    cache_pod_state_t before = cache_upsert_pod_ex(s->cache, p, ours, &now);
    sched_rows_pod_seen(s, p);
    if (ours && before != now && (now == CPOD_BOUND || now == CPOD_TERMINAL))
        sched_rows_pod_settled(s, p);
    if (now == CPOD_ASSUMED && ours && !p->deleting)
        gates_keep_out(s, p); /* the cache keeps the object we bind; the binder asks */
    else if (now != CPOD_PENDING || !ours || p->deleting)
        gates_release(s, p->uid); /* bound, gone, or not ours: held no more */
    if (now == CPOD_PENDING && before == CPOD_NONE && ours && !p->deleting) {
        sched_warn_unsupported(s, p);
        if (!gates_keep_out(s, p))
            enqueue_home(s, p);
    } else if (now == CPOD_PENDING && before == CPOD_PENDING && ours) {
        /* A changed toleration, priority, label or pool annotation is seen
         * now, not at the unschedulable flush: the queued item takes the new
         * object, is re-sorted, and leaves unschedulableQ if it changed. */
        if (p->deleting || gates_keep_out(s, p))
            pools_delete_pod(s, p->uid);
        else if (gates_release(s, p->uid))
            enqueue_home(s, p); /* its last gate went: at once, no backoff */
        else
            pools_update_pod(s, p);
    } else if (now == CPOD_BOUND && before == CPOD_PENDING) {
        pools_delete_pod(s, p->uid); /* bound by someone else */
    } else if (now == CPOD_TERMINAL && (before == CPOD_BOUND || before == CPOD_ASSUMED)) {
        sched_event(s, SCHED_EV_POD_COMPLETED, p, p->node_name, "PodCompleted");
    }
    /* A pod waiting for pod affinity may fit now (kube's AssignedPodAdd). */
    if (now == CPOD_BOUND && before != CPOD_BOUND && fw_topo_index_affinity_wanted(cache_topo_index(s->cache), p))
        sched_event(s, SCHED_EV_POD_ASSIGNED, p, p->node_name, "AssignedPodAdd");
    else if (now == CPOD_BOUND && before == CPOD_BOUND && old && requests_shrank(&old->requests, &p->requests))
        sched_event(s, SCHED_EV_POD_ASSIGNED, p, p->node_name, "AssignedPodUpdate");
    if (ours && now == CPOD_BOUND)
        evictor_pod_seen(s->evictor, p, pod_has_request(obj));
    pod_unref(old);
    pod_unref(p);
}

/* --- PodDisruptionBudgets ------------------------------------------------- */

static void pdbs_rebuild_locked(scheduler_t *s)
{
    free(s->pdbs);
    s->npdbs = 0;
    s->pdbs = util_xcalloc(hashmap_len(s->pdb_by_key) + 1, sizeof(*s->pdbs));
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(s->pdb_by_key, &it, &k, &v);)
        s->pdbs[s->npdbs++] = v;
}

void on_pdb_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    scheduler_t *s = ud;
    pdb_t *p = NULL;
    if (type != KUBE_DELETED) {
        char err[256];
        p = pdb_from_json(obj, err, sizeof(err));
        if (!p)
            LOG_W("PodDisruptionBudget %s ignored: %s", key, err);
    }
    pdb_lock(s);
    pdb_t *old = p ? hashmap_put(s->pdb_by_key, key, p) : hashmap_remove(s->pdb_by_key, key);
    pdbs_rebuild_locked(s);
    pdb_unlock(s);
    if (old)
        pdb_free(old);
}

void pdbs_destroy(scheduler_t *s)
{
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(s->pdb_by_key, &it, &k, &v);)
        pdb_free(v);
    hashmap_free(s->pdb_by_key);
    free(s->pdbs);
    pthread_mutex_destroy(&s->pdb_mu);
}
