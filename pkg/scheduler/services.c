/* services.c -- the core's side of the services table (framework/services.h):
 * what rows may ask of the scheduler, and the rows' rooms. */
#include <stdlib.h>
#include <string.h>

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
    int nn = 0, n = 0;
    node_info_t *const *all = cache_nodes_locked(s->cache, &nn);
    node_info_t **nodes = util_xcalloc((size_t)nn + 1, sizeof(*nodes));
    for (int i = 0; i < nn; i++) {
        if (all[i]->pool != pool || !all[i]->node)
            continue;
        cache_node_lock(s->cache, all[i]->name);
        int cloned = 0;
        node_info_t *v = node_with_nominated(s, pod, all[i], &cloned);
        nodes[n++] = cloned ? v : node_info_clone(all[i]);
        cache_node_unlock(s->cache, all[i]->name);
    }
    cache_unlock(s->cache);
    *out = nodes;
    return n;
}

static int svc_tenant_of(void *core, const pod_t *pod)
{
    return tenants_pod_tenant(core, pod);
}

static int svc_same_queue(void *core, int a, int b)
{
    return fs_same_queue(((scheduler_t *)core)->fs, a, b);
}

static int svc_preemptible(void *core, const pod_t *pod)
{
    return fs_pod_preemptible(((scheduler_t *)core)->fs, pod);
}

static int svc_min_runtime(void *core, const pod_t *pod, int kind, int64_t now_wall)
{
    return minrt_check(core, pod, kind, now_wall, NULL);
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

static void svc_object_event(void *core, const char *kind, const char *api_version, const char *ns, const char *name,
                             const char *uid, const char *type, const char *reason, const char *message)
{
    json_t *inv = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind", kind, "apiVersion", api_version, "namespace", ns,
                            "name", name, "uid", uid ? uid : "");
    writer_object_event(((scheduler_t *)core)->writer, ns, inv, type, reason, message, name);
}

static const topo_levels_t *svc_topo_levels(void *core)
{
    return &((scheduler_t *)core)->topo;
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
    return fs_is_charged(((scheduler_t *)core)->fs, uid);
}

static void svc_drop_nomination(void *core, const pod_t *pod)
{
    postfilter_drop_nomination(core, pod);
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

static void svc_pool_wake(void *core, int pool, const char *reason)
{
    sched_pool_t *P = pools_get(core, pool);
    if (P)
        queue_move_all_to_active(P->q, reason);
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

static int32_t svc_gang_priority(void *core, const gang_snap_t *g, int32_t floor)
{
    return sched_gang_priority(core, g, floor);
}

static int svc_set_request(void *core, pod_t *const *pods, int n, int *tenant, double req[FS_NRES])
{
    return tenants_set_request(core, pods, n, tenant, req);
}

static int svc_yields(void *core, int pool, int tenant, const double req[FS_NRES], int other,
                      const double other_req[FS_NRES])
{
    return fs_yields(((scheduler_t *)core)->fs, pool, tenant, req, other, other_req);
}

static int64_t svc_freeze_end(void *core, const char *ns, const char *group, const pod_t *member, char *src,
                              size_t srclen)
{
    return minrt_freeze_end(core, ns, group, member, src, srclen);
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

static int svc_binds_queued(void *core)
{
    return __atomic_load_n(&((scheduler_t *)core)->bind_backlog, __ATOMIC_RELAXED) > 0;
}

static void svc_patch(void *core, const char *path, const char *content_type, char *body)
{
    writer_patch(((scheduler_t *)core)->writer, path, content_type, body);
}

static void svc_evict_stale(void *core, pod_t *victim)
{
    evictor_evict_stale(((scheduler_t *)core)->evictor, victim);
}

static void svc_forget_record(void *core, const char *kind, const char *key)
{
    trace_forget(core, kind, key);
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
    .pod_event_by_name = svc_pod_event_by_name,
    .pod_fw = svc_pod_fw,
    .is_ours = svc_is_ours,
    .home_pool = svc_home_pool,
    .pod_get = svc_pod_get,
    .pool_views = svc_pool_views,
    .tenant_of = svc_tenant_of,
    .same_queue = svc_same_queue,
    .preemptible = svc_preemptible,
    .min_runtime = svc_min_runtime,
    .may_evict = svc_may_evict,
    .nominate = svc_nominate,
    .evict_moves = svc_evict_moves,
    .object_event = svc_object_event,
    .topo_levels = svc_topo_levels,
    .sim_build = svc_sim_build,
    .sim_free = svc_sim_free,
    .nomination = svc_nomination,
    .charged = svc_charged,
    .drop_nomination = svc_drop_nomination,
    .leaving = svc_leaving,
    .take_pending = svc_take_pending,
    .pool_active = svc_pool_active,
    .fits_on = svc_fits_on,
    .pool_wake = svc_pool_wake,
    .pool_preempts = svc_pool_preempts,
    .may_preempt = svc_may_preempt,
    .kept_out = svc_kept_out,
    .gang_priority = svc_gang_priority,
    .set_request = svc_set_request,
    .yields = svc_yields,
    .freeze_end = svc_freeze_end,
    .is_victim = svc_is_victim,
    .pdb_violations = svc_pdb_violations,
    .binds_queued = svc_binds_queued,
    .patch = svc_patch,
    .evict_stale = svc_evict_stale,
    .forget_record = svc_forget_record,
};

void *sched_row_core(const sched_services_t *svc, void *core)
{
    (void)svc;
    return core;
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
        if (ext[i].publish)
            ext[i].publish(&s->rows[i], &pub);
    }
    s->gangs = pub.gangs;
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

int sched_rows_expand(scheduler_t *s, void *vc, const pod_t *preemptor, preempt_candidate_t *cands, int n)
{
    int nx = 0;
    const sched_ext_t *ext = sched_extensions(&nx);
    for (int i = 0; i < s->nrows && i < nx; i++)
        if (ext[i].expand)
            n = ext[i].expand(&s->rows[i], vc, preemptor, cands, n);
    return n;
}

void sched_rows_preempting(scheduler_t *s, const gang_snap_t *g, const char *pool, int nvictims, int need)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].preempting)
            ext[i].preempting(&s->rows[i], g, pool, nvictims, need);
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
