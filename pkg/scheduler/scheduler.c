/* scheduler.c -- lifecycle of the scheduler: wiring, start-up order (caches
 * synced before the first decision, so a restart never double-books a
 * node), the housekeeping thread (Pool .status, summaries), shutdown. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "explain/explain.h"
#include "scheduler/capabilities.h"
#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"

/* The knobs' one set of defaults: config_default starts from these too. */
void scheduler_opts_default(scheduler_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->scheduler_name = "ai-scheduler";
    fw_config_default(&o->fw);
    o->bind_workers = 16;
    o->volume_bind_timeout_s = 600;
    o->pool_status_interval_s = 10;
    /* kube-scheduler deletes a victim with no grace override: the pod's
     * own terminationGracePeriodSeconds. 0 is the original Ai-Scheduler's
     * (资源抢占: reclaimed pods killed at once). */
    o->eviction_grace_s = -1;
    o->sync_timeout_s = 60;
    o->gang_timeout_s = 60;
    o->stale_gang_grace_s = 60;
    o->starvation_age_s = 600;
    o->non_preemptible_priority = 100;
    o->gpu_namespace = GPU_RESERVATION_NS;
    o->gpu_image = "registry.k8s.io/pause:3.9";
    o->topology_levels = TOPO_DEFAULT_LEVELS;
    o->dra_queue_resources = DRA_DEFAULT_QUEUE_RESOURCES;
    o->max_consolidation_moves = 8;
    o->workload_groups = 1;
    o->workload_refresh_s = 30;
    o->reservation_after_s = 300;
    o->reservation_timeout_s = 1800;
}

scheduler_t *scheduler_new(const scheduler_opts_t *o, kube_client_t *kc, char *err, size_t errlen)
{
    capabilities_init(); /* the cache's pods carry every capability's data */
    scheduler_t *s = util_xcalloc(1, sizeof(*s));
    s->opts = *o;
    if (!s->opts.seed) {
        /* Logged, so a run's ties can be replayed (--seed, or a sandbox). */
        s->opts.seed = ((uint64_t)util_wall_ms() << 20) ^ (uint64_t)util_now_us() ^ (uint64_t)getpid();
        if (!s->opts.seed)
            s->opts.seed = 1;
        LOG_I("random seed %llu", (unsigned long long)s->opts.seed);
    }
    s->name = util_strdup(o->scheduler_name ? o->scheduler_name : "ai-scheduler");
    if (o->identity) {
        s->identity = util_strdup(o->identity);
    } else {
        char host[128] = "ai-scheduler";
        gethostname(host, sizeof(host) - 1);
        sbuf_t b = { 0 };
        sbuf_printf(&b, "%s_%ld", host, (long)getpid());
        s->identity = b.data;
    }
    s->kc = kc;
    if (sched_rows_check(o, err, errlen) != 0 || profiles_init(s, o, err, errlen) != 0) {
        profiles_destroy(s);
        free(s->name);
        free(s->identity);
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->stats_mu, NULL);
    pthread_mutex_init(&s->pdb_mu, NULL);
    pthread_mutex_init(&s->hk_mu, NULL);
    pthread_cond_init(&s->hk_cv, NULL);
    s->pdb_by_key = hashmap_new(16);
    s->pod_uid_by_key = hashmap_new(4096);
    s->status_last = hashmap_new(16);
    pools_init(s);
    s->cache = cache_new(pools_partition, s);
    s->held = held_new();
    /* NULL: no record is built (trace.c), scheduler_explain finds none */
    s->explain = o->no_decision_records ? NULL : explain_store_new(EXPLAIN_DEFAULT_CAP);
    sched_rows_init(s);
    /* What runs, and the room restored nominations hold, is charged to its
     * queue (the tenants row's accounting). */
    cache_set_account_hook(s->cache, s->queues.ops->account, s->queues.self);
    cache_set_nomination_hook(s->cache, s->queues.ops->nomination, s->queues.self);
    /* What the rows keep for the Filter plugins, for the views made with no cluster */
    for (int i = 0; i < s->nprofiles; i++)
        framework_set_base_cluster(s->profiles[i].fw, &s->row_cluster);
    return s;
}

/* --- housekeeping: Pool status and a periodic summary --------------------- */

/* Rate limit of change-driven Pool status writes. */
#define STATUS_MIN_INTERVAL_MS 1000

void status_changed(scheduler_t *s)
{
    if (__atomic_exchange_n(&s->status_dirty, 1, __ATOMIC_ACQ_REL))
        return;
    hk_lock(s);
    pthread_cond_broadcast(&s->hk_cv);
    hk_unlock(s);
}

/* Was this exact status already written for this Pool object? Remembers
 * it if not. Keyed by name and uid: a Pool deleted and re-created under
 * the same name is a new object with no status. */
static int status_unchanged(scheduler_t *s, const char *name, const char *uid, const char *body)
{
    sbuf_t key = { 0 };
    sbuf_printf(&key, "%s/%s", name, uid ? uid : "");
    char *last = hashmap_get(s->status_last, key.data);
    int same = last && strcmp(last, body) == 0;
    if (!same)
        free(hashmap_put(s->status_last, key.data, util_strdup(body)));
    sbuf_free(&key);
    return same;
}

/* Writes every Pool's .status; with only_changed, skips the ones whose
 * status is the same as last written. */
static void write_pool_status(scheduler_t *s, int only_changed)
{
    node_t **nodes;
    pod_t **pods;
    int nn, np;
    cache_snapshot(s->cache, &nodes, &nn, &pods, &np);
    pools_lock(s);
    int nspecs = s->nspecs;
    pool_spec_t *specs = util_xcalloc((size_t)nspecs + 1, sizeof(*specs));
    for (int i = 0; i < nspecs; i++) {
        specs[i] = s->spec_arr[i];
        /* A Pool may change or go while we compute outside pools_mu: keep
         * our own copies of what pool_usage_compute reads (name, selector). */
        specs[i].name = util_strdup(s->spec_arr[i].name);
        selector_copy(&specs[i].selector, &s->spec_arr[i].selector);
        specs[i].borrowing_pools = NULL;
        specs[i].nborrowing = 0;
        specs[i].uid = s->spec_arr[i].uid ? util_strdup(s->spec_arr[i].uid) : NULL;
        specs[i].resource_version = NULL;
    }
    int default_has_object = s->pools[DEFAULT_POOL_ID]->has_object;
    char *default_uid = s->pools[DEFAULT_POOL_ID]->spec.uid ? util_strdup(s->pools[DEFAULT_POOL_ID]->spec.uid) : NULL;
    pools_unlock(s);

    pool_usage_t *u = util_xcalloc((size_t)nspecs + 1, sizeof(*u));
    pool_usage_compute(specs, nspecs, nodes, nn, pods, np, s->name, u);
    for (int i = 0; i <= nspecs; i++) {
        const char *name = i < nspecs ? specs[i].name : DEFAULT_POOL;
        if (i == nspecs && !default_has_object)
            break;
        json_t *status = pool_usage_to_status(&u[i]);
        sched_rows_pool_status(s, name, status);
        json_t *patch = json_pack("{s:o}", "status", status);
        char *body = json_dumps(patch, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(patch);
        if (status_unchanged(s, name, i < nspecs ? specs[i].uid : default_uid, body) && only_changed) {
            free(body);
            continue;
        }
        char *en = util_urlencode(name);
        sbuf_t path = { 0 };
        sbuf_printf(&path, "/apis/resource.aibee.cn/v1alpha1/pools/%s/status", en);
        writer_patch(s->writer, path.data, "application/merge-patch+json", body);
        sbuf_free(&path);
        free(en);
    }
    for (int i = 0; i < nspecs; i++) {
        free(specs[i].name);
        free(specs[i].uid);
        selector_free(&specs[i].selector);
    }
    free(default_uid);
    free(specs);
    free(u);
    cache_free_snapshot(nodes, nn, pods, np);
}

static void log_summary(scheduler_t *s)
{
    cache_stats_t cs;
    cache_get_stats(s->cache, &cs);
    scheduler_stats_t st;
    scheduler_get_stats(s, &st);
    LOG_I("summary: nodes=%d pods=%d pending=%d binding=%d bound_total=%lu unschedulable_attempts=%lu "
          "preemptions=%lu borrowings=%lu",
          cs.nodes, cs.pods, cs.pending, cs.assumed, st.binds_ok, st.attempts_unschedulable, st.preemptions,
          st.borrowings);
}

void sched_housekeep_rows(scheduler_t *s)
{
    pools_sweep_dead(s);
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < n && i < s->nrows; i++)
        if (ext[i].housekeep)
            ext[i].housekeep(&s->rows[i]);
}

/* Pool .status: written once the caches sync, then within a second of a
 * change (at most once a second, only the pools whose status moved, and
 * not while Bindings wait), and in full every pool_status_interval_s in
 * case someone else wrote it. */
static void *housekeeper_main(void *arg)
{
    scheduler_t *s = arg;
    util_thread_name("housekeeper");
    int64_t interval = (int64_t)(s->opts.pool_status_interval_s > 0 ? s->opts.pool_status_interval_s : 10) * 1000;
    int64_t next_full = 0, last_write = 0, next_summary = util_now_ms() + 60000, next_sweep = 0;
    hk_lock(s);
    while (!s->stopping) {
        hk_unlock(s);
        int64_t now = util_now_ms();
        if (now >= next_full) {
            __atomic_store_n(&s->status_dirty, 0, __ATOMIC_RELEASE);
            write_pool_status(s, 0);
            last_write = now;
            next_full = now + interval;
        } else if (now - last_write >= STATUS_MIN_INTERVAL_MS &&
                   __atomic_load_n(&s->bind_backlog, __ATOMIC_RELAXED) == 0 &&
                   __atomic_exchange_n(&s->status_dirty, 0, __ATOMIC_ACQ_REL)) {
            /* Not while Bindings wait: each write walks every pod (a tenth
             * of the CPU at 100,000 pods), and the full write above still
             * comes every interval. */
            write_pool_status(s, 1);
            last_write = now;
        }
        if (now >= next_sweep) {
            sched_housekeep_rows(s);
            next_sweep = now + 1000;
        }
        if (now >= next_summary) {
            log_summary(s);
            next_summary = now + 60000;
        }
        hk_lock(s);
        if (s->stopping)
            break;
        /* Sleep a second, or until a change may be written. */
        int64_t wait_ms = 1000;
        if (__atomic_load_n(&s->status_dirty, __ATOMIC_ACQUIRE)) {
            int64_t due = last_write + STATUS_MIN_INTERVAL_MS - util_now_ms();
            wait_ms = due < 10 ? 10 : due < 1000 ? due : 1000;
        }
        struct timespec ts;
        util_deadline(CLOCK_REALTIME, wait_ms, &ts);
        pthread_cond_timedwait(&s->hk_cv, &s->hk_mu, &ts);
    }
    hk_unlock(s);
    return NULL;
}

/* --- start and stop ------------------------------------------------------- */

/* An informer whose first LIST must be in before anything is decided. */
typedef struct sync_need {
    informer_t *inf;
    const char *what;
} sync_need_t;

/* Waits for every first LIST in needs (no deadline per informer: a slow one
 * just takes longer), up to timeout_s in all. A new kind of object that
 * partitions the cluster or gates pods (PodGroups, Queues) goes in the same
 * list. */
static int wait_all_synced(const sync_need_t *needs, int n, int timeout_s, const volatile int *stop, char *err,
                           size_t errlen)
{
    int64_t deadline = util_now_ms() + (int64_t)timeout_s * 1000;
    for (int i = 0; i < n; i++) {
        while (!informer_wait_synced(needs[i].inf, 100)) {
            if (stop && *stop) {
                snprintf(err, errlen, "stopped while waiting for %s", needs[i].what);
                return -1;
            }
            if (util_now_ms() >= deadline) {
                snprintf(err, errlen, "timed out after %ds listing %s from the API server", timeout_s, needs[i].what);
                return -1;
            }
        }
    }
    return 0;
}

/* Does the discovery document at path list, in its array `list`, an
 * entry whose `field` is value? 1 yes, 0 no (404: its CRD is not
 * installed), -1 unknown (the API server did not answer: keep asking,
 * never guess "no"). */
static int api_lists(scheduler_t *s, const char *path, const char *list, const char *field, const char *value)
{
    json_t *j = NULL;
    long status = 0;
    char err[256];
    if (kube_get_json(s->kc, path, &j, &status, err, sizeof(err)) != 0)
        return status == 404 ? 0 : -1;
    int found = 0;
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(j, list), i, v) {
        const char *got = json_string_value(json_object_get(v, field));
        if (got && strcmp(got, value) == 0)
            found = 1;
    }
    json_decref(j);
    return found;
}

/* Is group_version (e.g. "resource.aibee.cn/v1alpha1") served under
 * group_path ("/apis/resource.aibee.cn")? */
static int api_served(scheduler_t *s, const char *group_path, const char *group_version)
{
    return api_lists(s, group_path, "versions", "groupVersion", group_version);
}

/* A row's watch that pods wait for (sched_ext_t.wait): its list gets up
 * to w->ms, unless its API is not served. */
static void wait_row_watch(scheduler_t *s, const sched_watch_wait_t *w, const volatile int *stop)
{
    int64_t deadline = util_now_ms() + w->ms;
    informer_t *inf = sched_row_informer(s, w->kind);
    while (inf && !informer_wait_synced(inf, 200)) {
        int served =
            w->served_path ? api_lists(s, w->served_path, w->served_list, w->served_field, w->served_value) : 1;
        if (served == 0) {
            LOG_I("%s", w->unserved ? w->unserved : w->kind);
            return;
        }
        if ((stop && *stop) || util_now_ms() >= deadline) {
            LOG_W("%s", w->late ? w->late : w->kind);
            return;
        }
    }
}

/* The rows' watches that pods wait for, in table order. */
static void wait_row_watches(scheduler_t *s, const volatile int *stop)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < n && i < s->nrows; i++)
        if (ext[i].wait)
            wait_row_watch(s, ext[i].wait, stop);
}

/* Pools partition the nodes: their list must be in before the first
 * decision, or a pod could land on a node of a pool not yet known. */
static int wait_pools(scheduler_t *s, const volatile int *stop, char *err, size_t errlen)
{
    int64_t deadline = util_now_ms() + (int64_t)s->opts.sync_timeout_s * 1000;
    for (;;) {
        if (informer_wait_synced(s->inf_pools, 200))
            return 0;
        int served = api_served(s, "/apis/resource.aibee.cn", "resource.aibee.cn/v1alpha1");
        if (served == 0) {
            LOG_W("the Pool API (resource.aibee.cn/v1alpha1) is not served (is the CRD from pools/crd.yaml "
                  "applied?); all nodes are in the default pool until it is");
            return 0;
        }
        if (served == 1) {
            sync_need_t need = { s->inf_pools, "pools" };
            int left = (int)((deadline - util_now_ms()) / 1000);
            return wait_all_synced(&need, 1, left > 0 ? left : 1, stop, err, errlen);
        }
        if (stop && *stop) {
            snprintf(err, errlen, "stopped while waiting for pools");
            return -1;
        }
        if (util_now_ms() >= deadline) {
            snprintf(err, errlen, "timed out after %ds waiting for the Pool API", s->opts.sync_timeout_s);
            return -1;
        }
        util_sleep_ms(500);
    }
}

int scheduler_start(scheduler_t *s, const volatile int *stop, char *err, size_t errlen)
{
    s->use_policy_v1 = kube_has_api(s->kc, "policy/v1");
    s->writer = writer_new(s, 20000);
    /* Before the pods informer: it tells the evictor of checkpoint
     * requests (evictor_pod_seen), a restart's stale ones in its first list. */
    s->evictor = evictor_new(s);
    /* The rows' own workers (the grouper's, the volume waiter's), before
     * the informers that feed them. */
    if (sched_rows_start(s, err, errlen) != 0)
        return -1;
    s->inf_pools = informer_new(s->kc, "/apis/resource.aibee.cn/v1alpha1/pools", NULL, pools_on_event, s);
    s->inf_nodes = informer_new(s->kc, "/api/v1/nodes", NULL, on_node_event, s);
    s->inf_pods = informer_new(s->kc, "/api/v1/pods", NULL, on_pod_event, s);
    s->inf_pdbs = informer_new(
        s->kc, s->use_policy_v1 ? "/apis/policy/v1/poddisruptionbudgets" : "/apis/policy/v1beta1/poddisruptionbudgets",
        NULL, on_pdb_event, s);
    owners_informers_create(s);
    if (informer_start(s->inf_pools) != 0) {
        snprintf(err, errlen, "cannot start the pool watcher");
        return -1;
    }
    /* Pools first, so nodes land in their pool from the start. */
    if (wait_pools(s, stop, err, errlen) != 0)
        return -1;
    /* The rows' watches (Queues, PodGroups, PriorityClasses, storage)
     * start before nodes and pods, so a pod's gang and queue are known
     * when it arrives. */
    sched_rows_watch(s);
    int started = 1;
    for (int i = 0; i < s->nrow_infs; i++)
        started = started && informer_start(s->row_infs[i]) == 0;
    if (!started || informer_start(s->inf_nodes) != 0 || informer_start(s->inf_pods) != 0 ||
        informer_start(s->inf_pdbs) != 0) {
        snprintf(err, errlen, "cannot start watchers");
        return -1;
    }
    int64_t storage_t0 = util_now_ms();
    sync_need_t needs[] = { { s->inf_nodes, "nodes" }, { s->inf_pods, "pods" } };
    if (wait_all_synced(needs, (int)(sizeof(needs) / sizeof(needs[0])), s->opts.sync_timeout_s, stop, err, errlen) != 0)
        return -1;
    /* Nodes and pods are listed at once: a pending pod's
     * status.nominatedNodeName (room an earlier leader made) on a node not
     * listed yet when the pod came is restored now. */
    int restored = cache_restore_nominations(s->cache);
    if (restored)
        LOG_I("%d nomination(s) restored from status.nominatedNodeName", restored);
    informer_wait_synced(s->inf_pdbs, 5000);
    /* PriorityClasses are not waited for: until they are listed a gang
     * ranks by its members' priority; their arrival re-sorts the queues. */
    wait_row_watches(s, stop);
    owners_informers_start(s);
    /* Storage lists get 3 s from their start (mostly spent meanwhile): a
     * missing RBAC grant must not stop pods without claims; a pod whose
     * claim is not listed yet is unschedulable until the claim arrives. */
    static const char *const storage[] = { "PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode" };
    for (size_t i = 0; i < sizeof(storage) / sizeof(storage[0]); i++) {
        int64_t left = storage_t0 + 3000 - util_now_ms();
        informer_t *inf = sched_row_informer(s, storage[i]);
        if (inf && !informer_wait_synced(inf, left > 0 ? (int)left : 0))
            LOG_W("storage objects not listed yet (RBAC for PVs, PVCs, storageclasses, csinodes?)");
    }
    cache_stats_t cs;
    cache_get_stats(s->cache, &cs);
    LOG_I("caches synced: %d nodes, %d pods (%d pending)", cs.nodes, cs.pods, cs.pending);
    s->binder = binder_new(s, s->opts.bind_workers);
    if (!s->binder) {
        snprintf(err, errlen, "cannot start the binder");
        return -1;
    }
    pools_start_threads(s);
    if (pthread_create(&s->housekeeper, NULL, housekeeper_main, s) == 0)
        s->housekeeper_started = 1;
    __atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
    return 0;
}

void scheduler_fence(scheduler_t *s)
{
    if (!__atomic_exchange_n(&s->fenced, 1, __ATOMIC_SEQ_CST))
        LOG_E("fenced: leadership lost; no more decisions, binds or writes");
}

int scheduler_fenced(scheduler_t *s)
{
    if (__atomic_load_n(&s->fenced, __ATOMIC_ACQUIRE))
        return 1;
    if (s->opts.may_act && !s->opts.may_act(s->opts.may_act_ud)) {
        if (!__atomic_exchange_n(&s->fenced, 1, __ATOMIC_ACQ_REL))
            LOG_E("fenced: the lease is no longer ours; no more decisions, binds or writes");
        return 1;
    }
    return 0;
}

int scheduler_ready(scheduler_t *s)
{
    return __atomic_load_n(&s->ready, __ATOMIC_ACQUIRE);
}

/* Decisions stop first (pool threads, then the binds already decided),
 * then the watches, all signalled at once so shutdown takes one watch
 * poll interval rather than one per informer: a leader hands over fast. */
void scheduler_stop(scheduler_t *s)
{
    __atomic_store_n(&s->ready, 0, __ATOMIC_RELEASE);
    informer_t *infs[] = { s->inf_pods,
                           s->inf_nodes,
                           s->inf_pools,
                           s->inf_pdbs,
                           s->inf_owners[OWNER_SERVICE],
                           s->inf_owners[OWNER_RC],
                           s->inf_owners[OWNER_RS],
                           s->inf_owners[OWNER_STS] };
    size_t ninf = sizeof(infs) / sizeof(infs[0]);
    for (size_t i = 0; i < ninf; i++)
        if (infs[i])
            informer_request_stop(infs[i]);
    for (int i = 0; i < s->nrow_infs; i++)
        informer_request_stop(s->row_infs[i]);
    pools_stop_threads(s);
    sched_rows_stop(s); /* before the binder they hand pods to, the writer their events go to */
    binder_free(s->binder);
    s->binder = NULL;
    for (size_t i = 0; i < ninf; i++)
        if (infs[i])
            informer_stop(infs[i]);
    for (int i = 0; i < s->nrow_infs; i++)
        informer_stop(s->row_infs[i]);
    /* After the pods informer, which calls into it. */
    evictor_free(s->evictor);
    s->evictor = NULL;
    hk_lock(s);
    s->stopping = 1;
    pthread_cond_broadcast(&s->hk_cv);
    hk_unlock(s);
    if (s->housekeeper_started)
        pthread_join(s->housekeeper, NULL);
    s->housekeeper_started = 0;
    writer_free(s->writer);
    s->writer = NULL;
}

void scheduler_free(scheduler_t *s)
{
    if (!s)
        return;
    /* Workers still running (scheduler_stop was not called: a caller that
     * built the parts it needed, as the unit tests do) stop before the
     * state they read goes; the rows' threads first, which hand pods to
     * the binder. */
    sched_rows_stop(s);
    binder_free(s->binder);
    s->binder = NULL;
    evictor_free(s->evictor);
    s->evictor = NULL;
    writer_free(s->writer);
    s->writer = NULL;
    informer_t *infs[] = { s->inf_pods, s->inf_nodes, s->inf_pools, s->inf_pdbs };
    for (size_t i = 0; i < sizeof(infs) / sizeof(infs[0]); i++)
        informer_free(infs[i]);
    for (int i = 0; i < s->nrow_infs; i++)
        informer_free(s->row_infs[i]);
    free(s->row_infs);
    free(s->watch_infs);
    s->row_infs = s->watch_infs = NULL;
    s->nrow_infs = 0;
    cache_free(s->cache);
    held_free(s->held);
    explain_store_free(s->explain);
    pools_destroy(s);
    /* After the queues, whose callbacks read the tenants row's store; the
     * gang row's store (s->published.group_store) goes with its room. */
    sched_rows_fini(s);
    s->published.group_store = NULL;
    pdbs_destroy(s);
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(s->pod_uid_by_key, &it, &k, &v);)
        free(v);
    hashmap_free(s->pod_uid_by_key);
    for (size_t it = 0; hashmap_next(s->status_last, &it, &k, &v);)
        free(v);
    hashmap_free(s->status_last);
    profiles_destroy(s);
    pthread_mutex_destroy(&s->stats_mu);
    pthread_mutex_destroy(&s->hk_mu);
    pthread_cond_destroy(&s->hk_cv);
    free(s->name);
    free(s->identity);
    free(s);
}

void scheduler_get_stats(scheduler_t *s, scheduler_stats_t *out)
{
    stats_lock(s);
    *out = s->stats;
    stats_unlock(s);
}

typedef struct each_pool_ctx {
    scheduler_pool_fn fn;
    void *ud;
} each_pool_ctx_t;

static void report_pool(sched_pool_t *P, void *arg)
{
    each_pool_ctx_t *c = arg;
    queue_stats_t qs;
    queue_get_stats(P->q, &qs);
    c->fn(c->ud, P->name, qs.active, qs.backoff, qs.unschedulable);
}

void scheduler_each_pool(scheduler_t *s, scheduler_pool_fn fn, void *ud)
{
    each_pool_ctx_t c = { fn, ud };
    pools_each_live(s, report_pool, &c);
}
