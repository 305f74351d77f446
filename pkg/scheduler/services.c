/* services.c -- the core's side of the services table (framework/services.h):
 * what rows may ask of the scheduler, and the rows' rooms. */
#include <stdlib.h>
#include <string.h>

#include "gang/gang.h" /* the services' gang calls forward to the published store */
#include "scheduler/internal.h"
#include "scheduler/preempt_eval.h"
#include "util/log.h"
#include "util/util.h"

static const char *svc_name(void *core)
{
    return ((scheduler_t *)core)->name;
}

static const scheduler_opts_t *svc_opts(void *core)
{
    return &((scheduler_t *)core)->opts;
}

static int svc_fenced(void *core)
{
    return scheduler_fenced(core);
}

static int svc_api(void *core, const char *method, const char *path, const char *body, long *status, char **answer,
                   char *err, size_t errlen)
{
    scheduler_t *s = core;
    kube_response_t resp = { 0 };
    int rc = kube_request(s->kc, method, path, NULL, body, &resp, err, errlen);
    *status = rc == 0 ? resp.status : 0;
    if (answer)
        *answer = rc == 0 && resp.body ? util_strdup(resp.body) : NULL;
    kube_response_free(&resp);
    return rc == 0 ? 0 : -1;
}

static int svc_api_json(void *core, const char *method, const char *path, const char *content_type, json_t *body,
                        json_t **out, long *status, char *err, size_t errlen)
{
    return kube_send_json(((scheduler_t *)core)->kc, method, path, content_type, body, out, status, err, errlen);
}

static void svc_pod_event(void *core, const pod_t *pod, const char *type, const char *reason, const char *message)
{
    writer_pod_event(((scheduler_t *)core)->writer, pod, type, reason, message);
}

static int svc_plugin_runs(void *core, const pod_t *pod, int point, const char *name)
{
    return framework_runs(sched_pod_fw(core, pod), point, name);
}

/* An object event: the rows' on_event answers say what it wakes. */
static void svc_wake_all(void *core, const char *event)
{
    sched_event(core, SCHED_EV_OBJECT, NULL, NULL, event);
}

static int svc_pod_known(void *core, const char *uid)
{
    cache_pod_state_t st;
    pod_t *cur = cache_get_pod(((scheduler_t *)core)->cache, uid, &st);
    pod_unref(cur);
    return cur && st != CPOD_NONE;
}

static void svc_forget_assumed(void *core, const char *uid)
{
    cache_forget(((scheduler_t *)core)->cache, uid);
}

static void svc_bind(void *core, queue_item_t *it, const char *node, const char *lender)
{
    binder_submit(((scheduler_t *)core)->binder, it, node, lender);
}

static void svc_node_visit(void *core, const char *node, sched_node_fn fn, void *ud)
{
    cache_node_visit(((scheduler_t *)core)->cache, node, fn, ud);
}

static void svc_nodes_visit(void *core, sched_node_fn fn, void *ud)
{
    cache_t *c = ((scheduler_t *)core)->cache;
    cache_rdlock(c);
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(c, &n);
    for (int i = 0; i < n; i++) {
        cache_node_lock(c, nodes[i]->name);
        fn(ud, nodes[i]);
        cache_node_unlock(c, nodes[i]->name);
    }
    cache_unlock(c);
}

static const node_info_t *frozen_lookup(void *core, const char *name)
{
    return cache_node_locked(((scheduler_t *)core)->cache, name);
}

/* The cache's write lock: no pod is assumed, bound or moved meanwhile. */
static void svc_nodes_frozen(void *core, sched_nodes_frozen_fn fn, void *ud)
{
    cache_t *c = ((scheduler_t *)core)->cache;
    cache_wrlock(c);
    fn(ud, core, frozen_lookup);
    cache_unlock(c);
}

static void svc_stats(void *core, void (*fn)(scheduler_stats_t *st, void *ud), void *ud)
{
    scheduler_t *s = core;
    stats_lock(s);
    fn(&s->stats, ud);
    stats_unlock(s);
}

static kube_client_t *svc_client(void *core)
{
    return ((scheduler_t *)core)->kc;
}

static void svc_release(void *core, const char *uid)
{
    sched_pod_released(core, uid);
}

static int svc_watch_synced(void *core, const char *kind)
{
    informer_t *inf = sched_row_informer(core, kind);
    return !inf || informer_has_synced(inf);
}

static void svc_pod_event_by_name(void *core, const char *ns, const char *name, const char *uid, const char *type,
                                  const char *reason, const char *message)
{
    scheduler_t *s = core;
    if (s->writer)
        writer_pod_event_by_name(s->writer, ns, name, uid, type, reason, message);
}

static framework_t *svc_pod_fw(void *core, const pod_t *pod)
{
    return sched_pod_fw(core, pod);
}

static int svc_is_ours(void *core, const char *scheduler_name)
{
    return sched_is_ours(core, scheduler_name);
}

static int svc_home_pool(void *core, const pod_t *pod)
{
    return pools_home_id(core, pod);
}

static pod_t *svc_pod_get(void *core, const char *uid, cache_pod_state_t *st)
{
    return cache_get_pod(((scheduler_t *)core)->cache, uid, st);
}

static int svc_pool_views(void *core, int pool, const pod_t *pod, node_info_t ***out)
{
    scheduler_t *s = core;
    cache_rdlock(s->cache);
    int nn = 0;
    node_info_t *const *all = cache_nodes_locked(s->cache, &nn);
    node_info_t **nodes = util_xcalloc((size_t)nn + 1, sizeof(*nodes));
    int n = sched_pool_copies_locked(s, pool, pod, all, nn, nodes, NULL, NULL, NULL);
    cache_unlock(s->cache);
    *out = nodes;
    return n;
}

static int svc_tenant_of(void *core, const pod_t *pod)
{
    return sched_pod_tenant(core, pod);
}

static int svc_same_queue(void *core, int a, int b)
{
    scheduler_t *s = core;
    return s->queues.ops->same_queue(s->queues.self, a, b);
}

static int svc_queue_admits(void *core, int pool, pod_t *const *pods, int n)
{
    scheduler_t *s = core;
    return s->queues.ops->admits(s->queues.self, pool, pods, n);
}

static int svc_preemptible(void *core, const pod_t *pod)
{
    scheduler_t *s = core;
    return s->queues.ops->preemptible(s->queues.self, pod);
}

/* The victims point's last step for one pod, with no preemptor and no
 * set: what a consolidation may move. */
static int svc_min_runtime(void *core, const pod_t *pod, int kind, int64_t now_wall)
{
    sched_victim_q_t q = { .victim = pod, .pool_id = -1, .now_wall = now_wall };
    return sched_rows_protect(core, &q, kind);
}

static int svc_may_evict(void *core, const pod_set_t *set)
{
    (void)core;
    return sched_set_may_evict(set);
}

static void svc_nominate(void *core, pod_t *pod, const char *node)
{
    scheduler_t *s = core;
    cache_nominate(s->cache, pod, node);
    writer_nominate(s->writer, pod, node);
}

static void svc_evict_moves(void *core, const pod_t *pod, preempt_candidate_t *cand, char **dests, int pool,
                            const char *pool_name)
{
    evictor_submit_moves(((scheduler_t *)core)->evictor, pod, cand, dests, pool, pool_name);
}

static int svc_gang_get(void *core, const char *ns, const char *name, gang_snap_t *out)
{
    return gang_snapshot(((scheduler_t *)core)->published.group_store, ns, name, out);
}

static int64_t svc_gang_considered(void *core, const char *key, int64_t now_wall)
{
    return gang_considered(((scheduler_t *)core)->published.group_store, key, now_wall);
}

/* The value of a class: 1 and *out when it names a known one (the
 * priority-classes row's lookup, once the rows are built). */
static int class_value(scheduler_t *s, const char *cls, int32_t *out)
{
    const sched_published_t *pub = &s->published;
    return cls && pub->class_value && pub->class_value(pub->classes, cls, out);
}

int32_t sched_class_priority(scheduler_t *s, const char *cls, int32_t floor)
{
    int32_t v;
    return class_value(s, cls, &v) && v > floor ? v : floor;
}

/* The first answer of the rows' group_class point (owned), or NULL. */
static char *rows_group_class(scheduler_t *s, const pod_t *p)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++) {
        char *cls = ext[i].group_class ? ext[i].group_class(&s->rows[i], p) : NULL;
        if (cls)
            return cls;
    }
    return NULL;
}

int32_t sched_pod_priority(scheduler_t *s, const pod_t *p)
{
    char *cls = rows_group_class(s, p);
    if (!cls)
        return p->priority;
    int32_t v;
    int has = class_value(s, cls, &v);
    free(cls);
    return has && v > p->priority ? v : p->priority;
}

static int32_t svc_gang_priority(void *core, const gang_snap_t *g, int32_t floor)
{
    return g ? sched_class_priority(core, g->priority_class, floor) : floor;
}

static int svc_nominated(void *core, const char *node, pod_t ***out)
{
    cache_t *c = ((scheduler_t *)core)->cache;
    cache_rdlock(c);
    pod_t *const *noms = NULL;
    int n = cache_nominated_locked(c, node, &noms);
    *out = util_xcalloc((size_t)n + 1, sizeof(**out));
    for (int i = 0; i < n; i++)
        (*out)[i] = pod_ref(noms[i]);
    cache_unlock(c);
    return n;
}

static void svc_pool_wake(void *core, int pool, const char *event)
{
    sched_pool_t *P = pools_get(core, pool);
    if (P)
        queue_move_all_to_active(P->q, event);
}

static void svc_pod_activate(void *core, int pool, const char *uid)
{
    sched_pool_t *P = pools_get(core, pool);
    if (P)
        queue_activate_uid(P->q, uid);
}

static char *svc_gang_queue(void *core, const char *ns, const char *name)
{
    return gang_queue_of(((scheduler_t *)core)->published.group_store, ns, name);
}

static void svc_accounting_read(void *core, void (*fn)(void *ud), void *ud)
{
    cache_t *c = ((scheduler_t *)core)->cache;
    cache_rdlock(c);
    fn(ud);
    cache_unlock(c);
}

static sched_queue_t *svc_pool_queue(void *core, struct sched_pool *P, int *id, const char **name)
{
    (void)core;
    *id = P->id;
    *name = P->name;
    return P->q;
}

typedef struct pools_each_ctx {
    void (*fn)(void *ud, struct sched_pool *P);
    void *ud;
} pools_each_ctx_t;

static void pools_each_cb(sched_pool_t *P, void *ud)
{
    pools_each_ctx_t *c = ud;
    c->fn(c->ud, P);
}

static void svc_pools_each(void *core, void (*fn)(void *ud, struct sched_pool *P), void *ud)
{
    pools_each_ctx_t c = { fn, ud };
    pools_each_live(core, pools_each_cb, &c);
}

static int svc_bind_backlog(void *core)
{
    return __atomic_load_n(&((scheduler_t *)core)->bind_backlog, __ATOMIC_RELAXED);
}

static void svc_patch(void *core, const char *path, const char *content_type, char *body)
{
    writer_patch(((scheduler_t *)core)->writer, path, content_type, body);
}

static void svc_object_event(void *core, const char *ns, json_t *involved, const char *type, const char *reason,
                             const char *message, const char *base_name)
{
    writer_object_event(((scheduler_t *)core)->writer, ns, involved, type, reason, message, base_name);
}

static void svc_status_changed(void *core)
{
    status_changed(core);
}

static int svc_queues_active(void *core)
{
    scheduler_t *s = core;
    return s->queues.ops->active(s->queues.self);
}

static int svc_same_tree(void *core, int a, int b)
{
    scheduler_t *s = core;
    return s->queues.ops->same_tree(s->queues.self, a, b);
}

static int svc_limit_room_pending(void *core, const char *uid)
{
    scheduler_t *s = core;
    return !cache_is_nominated(s->cache, uid) &&
           (evictor_has_job(s->evictor, uid) || evictor_awaiting(s->evictor, uid));
}

static int svc_evict_for_limit(void *core, pod_set_t *set, int pool, char **uids, int n)
{
    (void)core;
    return pe_limit_reclaim(set, pool, uids, n);
}

static int svc_preempt(void *core, pod_set_t *set, preempt_outcome_t *seen, char **kept)
{
    (void)core;
    return preempt_set(set, seen, kept);
}

static void svc_object_event_ref(void *core, const char *kind, const char *api_version, const char *ns,
                                 const char *name, const char *uid, const char *type, const char *reason,
                                 const char *message)
{
    json_t *inv = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind", kind, "apiVersion", api_version, "namespace", ns,
                            "name", name, "uid", uid ? uid : "");
    writer_object_event(((scheduler_t *)core)->writer, ns, inv, type, reason, message, name);
}

static double svc_queue_devices(void *core, const pod_t *pod)
{
    const sched_published_t *pub = &((scheduler_t *)core)->published;
    return pub->queue_devices ? pub->queue_devices(pub->queue_devices_self, pod) : 0;
}

static void svc_device_attr_nodes(void *core, const char *attr, sched_node_value_fn fn, void *ud)
{
    const sched_published_t *pub = &((scheduler_t *)core)->published;
    if (pub->device_attr_nodes)
        pub->device_attr_nodes(pub->device_attr_self, attr, fn, ud);
}

static void svc_queue_refresh(void *core, const char *uid)
{
    scheduler_t *s = core;
    cache_pod_state_t st;
    pod_t *cur = cache_get_pod(s->cache, uid, &st);
    if (cur && s->queues.ops && s->queues.ops->refresh_devices)
        s->queues.ops->refresh_devices(s->queues.self, cur);
    pod_unref(cur);
}

static const topo_levels_t *svc_topo_levels(void *core)
{
    static const topo_levels_t none = { .n = 0 };
    const topo_levels_t *l = ((scheduler_t *)core)->published.topo_levels;
    return l ? l : &none;
}

static const gang_snap_t *svc_set_gang(void *core, const pod_set_t *set)
{
    const sched_published_t *pub = &((scheduler_t *)core)->published;
    return pub->set_group ? pub->set_group(pub->set_group_row, set) : NULL;
}

static int svc_sim_build(void *core, int pool, pod_t *const *pods, int n, sched_sim_t *sim)
{
    return pe_sim_build(core, pool, pods, n, sim);
}

static void svc_sim_free(void *core, sched_sim_t *sim)
{
    (void)core;
    pe_sim_free(sim);
}

static int svc_nomination(void *core, const char *uid, char *node, size_t len)
{
    cache_t *c = ((scheduler_t *)core)->cache;
    return node ? cache_nomination_of(c, uid, node, len) : cache_is_nominated(c, uid);
}

static int svc_charged(void *core, const char *uid)
{
    scheduler_t *s = core;
    return s->queues.ops->is_charged(s->queues.self, uid);
}

static void svc_drop_nomination(void *core, const pod_t *pod)
{
    postfilter_drop_nomination(core, pod);
}

/* Every pool's info at once, under pools_mu. */
static void svc_pools_visit(void *core, sched_pools_fn fn, void *ud)
{
    scheduler_t *s = core;
    pools_lock(s);
    int n = s->npools;
    sched_pool_info_t *info = util_xcalloc((size_t)n + 1, sizeof(*info));
    for (int i = 0; i < n; i++)
        info[i] = (sched_pool_info_t){
            .id = s->pools[i]->id, .name = s->pools[i]->name, .spec = &s->pools[i]->spec, .dead = s->pools[i]->dead
        };
    fn(ud, info, n);
    pools_unlock(s);
    free(info);
}

static int svc_pool_queued(void *core, int pool)
{
    sched_pool_t *P = pools_get(core, pool);
    if (!P)
        return -1;
    queue_stats_t qs;
    queue_get_stats(P->q, &qs);
    return qs.active + qs.backoff + qs.unschedulable;
}

static int svc_pool_room_for(void *core, int pool, pod_t *const *pods, int n, resources_t *alloc, resources_t *used,
                             int *tasks)
{
    return pe_room_for(core, pool, pods, n, alloc, used, tasks);
}

static void svc_move_item(void *core, int from, int to, queue_item_t *it)
{
    scheduler_t *s = core;
    /* The item came out of from's queue on from's own thread: that pool
     * is there even once deleted (a pool is freed only with the
     * scheduler), and its queue takes the item's done. */
    pools_lock(s);
    sched_pool_t *F = s->pools[from];
    pools_unlock(s);
    sched_pool_t *T = pools_get(s, to);
    if (!T)
        T = pools_get(s, DEFAULT_POOL_ID);
    queue_done(F->q, it);
    queue_push_item(T->q, it);
}

static int svc_leaving(void *core, const char *uid)
{
    return evictor_outgoing(((scheduler_t *)core)->evictor, uid);
}

static queue_item_t *svc_take_pending(void *core, struct sched_pool *P, const char *uid)
{
    queue_item_t *o = queue_take_out(P->q, uid);
    if (o && !sched_refresh(core, o)) {
        queue_done(P->q, o);
        queue_item_free(o);
        o = NULL;
    }
    return o;
}

static int svc_pool_active(void *core, struct sched_pool *P)
{
    (void)core;
    queue_stats_t qs;
    queue_get_stats(P->q, &qs);
    return qs.active;
}

static int svc_fits_on(void *core, struct sched_pool *P, const pod_t *pod, const char *node)
{
    (void)core;
    cycle_state_t *cs = cycle_state_new();
    decision_t d;
    sched_decide_on(P, cs, pod, node, &d);
    cycle_state_free(cs);
    int fits = d.node != NULL;
    free(d.node);
    free(d.message);
    return fits;
}

static int svc_pool_preempts(void *core, int pool)
{
    scheduler_t *s = core;
    int no_preempt = 1;
    pools_flags(s, pool, &no_preempt, NULL, NULL);
    return !no_preempt && !s->opts.disable_preemption;
}

static int svc_may_preempt(void *core, const pod_t *pod)
{
    return sched_may_preempt(core, pod);
}

static int svc_kept_out(void *core, const pod_t *pod)
{
    return sched_kept_out(core, pod);
}

static int svc_set_request(void *core, pod_t *const *pods, int n, int *tenant, double req[FS_NRES])
{
    scheduler_t *s = core;
    return s->queues.ops->set_request(s->queues.self, pods, n, tenant, req);
}

static int svc_yields(void *core, int pool, int tenant, const double req[FS_NRES], int other,
                      const double other_req[FS_NRES])
{
    scheduler_t *s = core;
    return s->queues.ops->yields(s->queues.self, pool, tenant, req, other, other_req);
}

static int64_t svc_freeze_end(void *core, const char *ns, const char *group, const pod_t *member, char *src,
                              size_t srclen)
{
    const sched_published_t *pub = &((scheduler_t *)core)->published;
    return pub->freeze_end ? pub->freeze_end(pub->freeze_row, ns, group, member, src, srclen) : 0;
}

static int svc_is_victim(void *core, const pod_t *victim, const pod_t *preemptor, void *vc, int64_t *rank)
{
    (void)core;
    return postfilter_is_victim(victim, preemptor, vc, rank);
}

static int svc_pdb_violations(void *core, pod_t *const *pods, int n)
{
    scheduler_t *s = core;
    return preempt_pdb_violations(pods, n, s->pdbs, s->npdbs);
}

static int32_t svc_pod_priority(void *core, const pod_t *pod)
{
    return sched_pod_priority(core, pod);
}

static int svc_gang_member_class(void *core, const pod_t *pod)
{
    return gang_member_class(((scheduler_t *)core)->published.group_store, pod);
}

static int svc_binds_queued(void *core)
{
    return __atomic_load_n(&((scheduler_t *)core)->bind_backlog, __ATOMIC_RELAXED) > 0;
}

static void svc_evict_stale(void *core, pod_t *victim)
{
    evictor_evict_stale(((scheduler_t *)core)->evictor, victim);
}

static void svc_forget_record(void *core, const char *kind, const char *key)
{
    trace_forget(core, kind, key);
}

static json_t *svc_explain(void *core, const char *kind, const char *ns, const char *name)
{
    return scheduler_explain(core, kind, ns, name);
}

static int svc_row_index(void *core, const char *name)
{
    const sched_row_t *row = sched_row(core, name);
    return row ? row->index : -1;
}

static int64_t svc_pool_min_runtime(void *core, int pool, int kind, char *name, size_t len)
{
    return pools_min_runtime(core, pool, kind == FS_MINRT_RECLAIM, name, len);
}

static int svc_any_pool_min_runtime(void *core)
{
    return __atomic_load_n(&((scheduler_t *)core)->min_runtime_pools, __ATOMIC_ACQUIRE) != 0;
}

static int64_t svc_queue_min_runtime(void *core, int tenant, int kind, int64_t pool_default, char **from)
{
    scheduler_t *s = core;
    return s->queues.ops->min_runtime(s->queues.self, tenant, kind, pool_default, from);
}

static int svc_any_queue_min_runtime(void *core)
{
    scheduler_t *s = core;
    return s->queues.ops->any_min_runtime(s->queues.self);
}

static int64_t svc_gang_resize_start(void *core, const char *ns, const char *group, int64_t *win)
{
    return gang_resize_start(((scheduler_t *)core)->published.group_store, ns, group, win);
}

static int64_t svc_gang_last_start(void *core, const pod_t *pod)
{
    return gang_last_start(((scheduler_t *)core)->published.group_store, pod);
}

static void svc_gang_resized(void *core, const char *ns, const char *group, int64_t now_wall)
{
    gang_resized(((scheduler_t *)core)->published.group_store, ns, group, now_wall);
}

const sched_services_t sched_services = {
    .name = svc_name,
    .opts = svc_opts,
    .fenced = svc_fenced,
    .api = svc_api,
    .api_json = svc_api_json,
    .pod_event = svc_pod_event,
    .plugin_runs = svc_plugin_runs,
    .wake_all = svc_wake_all,
    .pod_known = svc_pod_known,
    .forget_assumed = svc_forget_assumed,
    .bind = svc_bind,
    .node_visit = svc_node_visit,
    .nodes_visit = svc_nodes_visit,
    .nodes_frozen = svc_nodes_frozen,
    .stats = svc_stats,
    .client = svc_client,
    .release = svc_release,
    .watch_synced = svc_watch_synced,
    .queue_devices = svc_queue_devices,
    .queue_refresh = svc_queue_refresh,
    .device_attr_nodes = svc_device_attr_nodes,
    .pod_event_by_name = svc_pod_event_by_name,
    .pod_fw = svc_pod_fw,
    .is_ours = svc_is_ours,
    .home_pool = svc_home_pool,
    .pod_get = svc_pod_get,
    .pool_views = svc_pool_views,
    .tenant_of = svc_tenant_of,
    .same_queue = svc_same_queue,
    .queue_admits = svc_queue_admits,
    .preemptible = svc_preemptible,
    .min_runtime = svc_min_runtime,
    .may_evict = svc_may_evict,
    .nominate = svc_nominate,
    .evict_moves = svc_evict_moves,
    .gang_get = svc_gang_get,
    .gang_considered = svc_gang_considered,
    .gang_priority = svc_gang_priority,
    .nominated = svc_nominated,
    .pool_wake = svc_pool_wake,
    .pod_activate = svc_pod_activate,
    .object_event = svc_object_event,
    .status_changed = svc_status_changed,
    .queues_active = svc_queues_active,
    .same_tree = svc_same_tree,
    .gang_queue = svc_gang_queue,
    .accounting_read = svc_accounting_read,
    .pool_queue = svc_pool_queue,
    .pools_each = svc_pools_each,
    .bind_backlog = svc_bind_backlog,
    .patch = svc_patch,
    .limit_room_pending = svc_limit_room_pending,
    .evict_for_limit = svc_evict_for_limit,
    .preempt = svc_preempt,
    .drop_nomination = svc_drop_nomination,
    .pools_visit = svc_pools_visit,
    .pool_queued = svc_pool_queued,
    .pool_room_for = svc_pool_room_for,
    .move_item = svc_move_item,
    .object_event_ref = svc_object_event_ref,
    .topo_levels = svc_topo_levels,
    .sim_build = svc_sim_build,
    .sim_free = svc_sim_free,
    .nomination = svc_nomination,
    .charged = svc_charged,
    .leaving = svc_leaving,
    .take_pending = svc_take_pending,
    .pool_active = svc_pool_active,
    .fits_on = svc_fits_on,
    .pool_preempts = svc_pool_preempts,
    .may_preempt = svc_may_preempt,
    .kept_out = svc_kept_out,
    .set_request = svc_set_request,
    .yields = svc_yields,
    .freeze_end = svc_freeze_end,
    .is_victim = svc_is_victim,
    .pdb_violations = svc_pdb_violations,
    .pod_priority = svc_pod_priority,
    .gang_member_class = svc_gang_member_class,
    .binds_queued = svc_binds_queued,
    .evict_stale = svc_evict_stale,
    .forget_record = svc_forget_record,
    .explain = svc_explain,
    .row_index = svc_row_index,
    .set_gang = svc_set_gang,
    .pool_min_runtime = svc_pool_min_runtime,
    .any_pool_min_runtime = svc_any_pool_min_runtime,
    .queue_min_runtime = svc_queue_min_runtime,
    .any_queue_min_runtime = svc_any_queue_min_runtime,
    .gang_resize_start = svc_gang_resize_start,
    .gang_last_start = svc_gang_last_start,
    .gang_resized = svc_gang_resized,
};

/* ---- the Queues (the tenants row's queues point) --------------------------- */

int sched_pod_tenant(scheduler_t *s, const pod_t *p)
{
    return s->queues.ops->tenant_of(s->queues.self, p);
}

void sched_unreserve_preemptor(scheduler_t *s, const pod_t *pod)
{
    cache_pod_state_t st;
    pod_t *cur = cache_get_pod(s->cache, pod->uid, &st);
    if (!cur || st == CPOD_PENDING)
        s->queues.ops->uncharge(s->queues.self, pod->uid);
    pod_unref(cur);
}

static void node_pool_cb(void *ud, const node_info_t *ni)
{
    *(int *)ud = ni->pool;
}

/* The pool a pod is charged in: its node's, else its home pool. */
static int charge_pool(scheduler_t *s, const pod_t *p)
{
    int pool = -1;
    if (p->node_name[0] && cache_node_visit(s->cache, p->node_name, node_pool_cb, &pool) == 0 && pool >= 0)
        return pool;
    return pools_home_id(s, p);
}

void sched_recharge(scheduler_t *s, const pod_t *victim)
{
    cache_pod_state_t st;
    pod_t *cur = cache_get_pod(s->cache, victim->uid, &st);
    if (cur && (st == CPOD_BOUND || st == CPOD_ASSUMED) && !cur->deleting)
        s->queues.ops->recharge(s->queues.self, cur, charge_pool(s, cur));
    pod_unref(cur);
}

typedef struct queue_metric_ctx {
    scheduler_queue_fn fn;
    void *ud;
} queue_metric_ctx_t;

static void metric_cb(void *ud, const char *queue, const char *pool, const double alloc[FS_NRES],
                      const double fair[FS_NRES], int pending)
{
    queue_metric_ctx_t *c = ud;
    c->fn(c->ud, queue, pool, alloc, fair, pending);
}

void scheduler_each_queue(scheduler_t *s, scheduler_queue_fn fn, void *ud)
{
    queue_metric_ctx_t c = { fn, ud };
    s->queues.ops->each_metric(s->queues.self, metric_cb, &c);
}

void scheduler_each_queue_counter(
    scheduler_t *s, void (*fn)(void *ud, const char *queue, unsigned long reclaims, unsigned long reclaimed), void *ud)
{
    s->queues.ops->each_counter(s->queues.self, fn, ud);
}

int sched_rows_check(const scheduler_opts_t *o, char *err, size_t errlen)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < n; i++)
        if (ext[i].check && ext[i].check(o, err, errlen) != 0)
            return -1;
    return 0;
}

void sched_rows_init(scheduler_t *s)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    if (n > SCHED_MAX_ROWS) { /* a pod set has no slot for the rows past it */
        LOG_E("%d rows, more than SCHED_MAX_ROWS (%d)", n, SCHED_MAX_ROWS);
        abort();
    }
    s->rows = util_xcalloc((size_t)n, sizeof(*s->rows));
    s->nrows = n;
    s->view_rows = util_xcalloc((size_t)n, sizeof(*s->view_rows));
    s->nominee_rows = util_xcalloc((size_t)n, sizeof(*s->nominee_rows));
    sched_published_t pub = { 0 };
    for (int i = 0; i < n; i++) {
        s->rows[i] = (sched_row_t){ .svc = &sched_services, .core = s, .index = i };
        if (ext[i].init)
            s->rows[i].self = ext[i].init(&sched_services, s);
        if (ext[i].node_view)
            s->view_rows[s->nview_rows++] = i;
        if (ext[i].nominee)
            s->nominee_rows[s->nnominee_rows++] = i;
        if (ext[i].cluster)
            ext[i].cluster(&s->rows[i], &s->row_cluster);
        if (ext[i].queues)
            ext[i].queues(&s->rows[i], &s->queues);
        if (ext[i].publish)
            ext[i].publish(&s->rows[i], &pub);
    }
    /* The core asks the Queues on every path (accounting, the scheduling
     * queues' pick, victims): a table without a row publishing them is a
     * build mistake, not a configuration. */
    if (!s->queues.ops) {
        LOG_E("no row publishes the queues interface");
        abort();
    }
    s->published = pub;
}

void sched_rows_fini(scheduler_t *s)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].fini)
            ext[i].fini(s->rows[i].self);
    free(s->rows);
    free(s->view_rows);
    free(s->nominee_rows);
    s->rows = NULL;
    s->view_rows = NULL;
    s->nrows = s->nview_rows = 0;
}

const sched_row_t *sched_row(scheduler_t *s, const char *name)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (strcmp(ext[i].name, name) == 0)
            return &s->rows[i];
    return NULL;
}

const struct sched_row *scheduler_row(scheduler_t *s, const char *name)
{
    return sched_row(s, name);
}

int sched_rows_start(scheduler_t *s, char *err, size_t errlen)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].start && ext[i].start(&s->rows[i], err, errlen) != 0)
            return -1;
    return 0;
}

void sched_rows_stop(scheduler_t *s)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].stop)
            ext[i].stop(&s->rows[i]);
}

void sched_rows_pod_settled(scheduler_t *s, const pod_t *pod)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].pod_settled)
            ext[i].pod_settled(&s->rows[i], pod);
}

int sched_rows_timed(scheduler_t *s)
{
    int n = 0, any = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].timed)
            any |= ext[i].timed(&s->rows[i]);
    return any;
}

void sched_rows_pod_seen(scheduler_t *s, pod_t *pod)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].pod_seen)
            ext[i].pod_seen(&s->rows[i], pod);
}

void sched_rows_pod_deleted(scheduler_t *s, const pod_t *pod)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].pod_deleted)
            ext[i].pod_deleted(&s->rows[i], pod);
}

void sched_rows_unreserve(scheduler_t *s, const pod_t *pod)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = (s->nrows < n ? s->nrows : n) - 1; i >= 0; i--)
        if (ext[i].unreserve)
            ext[i].unreserve(&s->rows[i], pod);
}

int sched_rows_drain(scheduler_t *s)
{
    int n = 0, had = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].drain)
            had |= ext[i].drain(&s->rows[i]);
    return had;
}

void sched_rows_tick(sched_pool_t *P)
{
    scheduler_t *s = P->s;
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].tick)
            ext[i].tick(&s->rows[i], P);
}

void sched_rows_pool_status(scheduler_t *s, const char *pool, json_t *status)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].pool_status)
            ext[i].pool_status(&s->rows[i], pool, status);
}

int sched_rows_expand(scheduler_t *s, void *vc, const pod_t *preemptor, preempt_candidate_t *cands, int n)
{
    int nx = 0;
    const sched_ext_t *ext = sched_extensions(&nx);
    for (int i = 0; i < s->nrows && i < nx; i++)
        if (ext[i].expand)
            n = ext[i].expand(&s->rows[i], vc, preemptor, cands, n);
    return n;
}

void sched_rows_preempting(scheduler_t *s, const pod_set_t *set, const char *pool, int nvictims, int need)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].preempting)
            ext[i].preempting(&s->rows[i], set, pool, nvictims, need);
}

int sched_rows_plan_within(scheduler_t *s, const pod_set_t *set, fw_node_match_t **out)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++) {
        int k = ext[i].plan_within ? ext[i].plan_within(&s->rows[i], set, out) : -1;
        if (k >= 0)
            return k;
    }
    return -1;
}

json_t *sched_rows_record(scheduler_t *s, const pod_set_t *set, const char *behind)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++) {
        json_t *j = ext[i].record ? ext[i].record(&s->rows[i], set, behind) : NULL;
        if (j)
            return j;
    }
    return NULL;
}

int sched_rows_mates(scheduler_t *s, const pod_t *victim, pod_t ***out)
{
    *out = NULL;
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++) {
        int k = ext[i].mates ? ext[i].mates(&s->rows[i], victim, out) : 0;
        if (k > 0 || *out)
            return k;
    }
    return 0;
}

int sched_rows_minimum_member(scheduler_t *s, const pod_t *pod)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].minimum_member && ext[i].minimum_member(&s->rows[i], pod))
            return 1;
    return 0;
}

const char *sched_rows_group_of(scheduler_t *s, const pod_t *pod)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++) {
        const char *g = ext[i].group_of ? ext[i].group_of(&s->rows[i], pod) : NULL;
        if (g)
            return g;
    }
    return NULL;
}

char *sched_rows_absent(scheduler_t *s, const char *kind, const char *ns, const char *name)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++) {
        char *msg = ext[i].absent ? ext[i].absent(&s->rows[i], kind, ns, name) : NULL;
        if (msg)
            return msg;
    }
    return NULL;
}

int sched_rows_protect(scheduler_t *s, const sched_victim_q_t *q, int kind)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].protect && ext[i].protect(&s->rows[i], q, kind))
            return 1;
    return 0;
}

void sched_rows_kept(scheduler_t *s, pod_set_t *set, int made, char **text)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].kept)
            ext[i].kept(&s->rows[i], set, made, text);
}

void sched_rows_victims_taken(scheduler_t *s, pod_t *const *victims, int nv)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].victims_taken)
            ext[i].victims_taken(&s->rows[i], victims, nv);
}

void sched_rows_post_bind(scheduler_t *s, const pod_t *pod, const char *node, const char *lender)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].post_bind)
            ext[i].post_bind(&s->rows[i], pod, node, lender);
}

int sched_rows_each_watch(scheduler_t *s, int (*fn)(void *ud, void *self, const sched_watch_t *w, informer_t *inf),
                          void *ud)
{
    int n = 0, k = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < n && i < s->nrows; i++)
        for (const sched_watch_t *w = ext[i].watches; w && w->kind; w++, k++) {
            int rc = fn(ud, s->rows[i].self, w, s->watch_infs ? s->watch_infs[k] : NULL);
            if (rc)
                return rc;
        }
    return 0;
}

static int count_watch(void *ud, void *self, const sched_watch_t *w, informer_t *inf)
{
    (void)self;
    (void)w;
    (void)inf;
    ++*(int *)ud;
    return 0;
}

typedef struct watch_build {
    scheduler_t *s;
    informer_t **infs; /* distinct, owned */
    int n;
    informer_t **by_watch; /* per watch, borrowed from infs */
    int k;
} watch_build_t;

/* One informer per path: a second row watching the same objects adds its
 * handler to the first's (one LIST and WATCH, each row its own state). */
static int new_watch(void *ud, void *self, const sched_watch_t *w, informer_t *inf)
{
    (void)inf;
    watch_build_t *b = ud;
    informer_t *shared = NULL;
    for (int i = 0; i < b->n && !shared; i++)
        if (strcmp(informer_path(b->infs[i]), w->path) == 0)
            shared = b->infs[i];
    if (shared && informer_add_handler(shared, w->on_event, self) != 0)
        LOG_E("watch %s: too many rows share its informer; %s events are not delivered", w->path, w->kind);
    if (!shared)
        shared = b->infs[b->n++] = informer_new(b->s->kc, w->path, NULL, w->on_event, self);
    b->by_watch[b->k++] = shared;
    return 0;
}

void sched_rows_watch(scheduler_t *s)
{
    int n = 0;
    sched_rows_each_watch(s, count_watch, &n);
    watch_build_t b = { s, util_xcalloc((size_t)(n ? n : 1), sizeof(informer_t *)), 0,
                        util_xcalloc((size_t)(n ? n : 1), sizeof(informer_t *)), 0 };
    sched_rows_each_watch(s, new_watch, &b);
    s->row_infs = b.infs;
    s->nrow_infs = b.n;
    s->watch_infs = b.by_watch;
}

typedef struct watch_find {
    const char *kind;
    informer_t *inf;
} watch_find_t;

static int find_watch(void *ud, void *self, const sched_watch_t *w, informer_t *inf)
{
    (void)self;
    watch_find_t *f = ud;
    if (strcmp(w->kind, f->kind) != 0)
        return 0;
    f->inf = inf;
    return 1;
}

informer_t *sched_row_informer(scheduler_t *s, const char *kind)
{
    watch_find_t f = { kind, NULL };
    sched_rows_each_watch(s, find_watch, &f);
    return f.inf;
}
