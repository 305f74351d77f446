/* row.c -- the tenants row: Queue objects (fairshare/fairshare.h) on the
 * scheduler's side. Its room holds the fair-share store and each pool's
 * refresh state; its points are admission before a decision (limits and
 * quotas), the nominee rule across queues, the per-pool refresh of shares
 * and the housekeeping that writes Queue .status. What the core and the
 * other rows need of the Queues (the cache's accounting, the scheduling
 * queues' tenant and pick, reclaim's rules) it publishes through its
 * queues point (framework/queues.h). */
#include "fairshare/row.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fairshare/fairshare.h"
#include "gang/gang.h"
#include "gpu/gpu.h"
#include "util/log.h"
#include "util/util.h"

/* A pool's refresh state, touched by that pool's thread only. */
typedef struct tenants_pool {
    int64_t refresh_ms;             /* last refresh by the pool's thread */
    unsigned seen_nodes, seen_pods; /* gen_* at that refresh */
} tenants_pool_t;

/* The row's room. */
typedef struct tenants_row {
    const sched_services_t *svc;
    void *core;
    fs_store_t *fs; /* Queues, accounting and fair shares (a leaf lock) */
    /* Bumped (atomic) when capacity or Queues change (nodes) and when
     * pending pods arrive (pods): pool threads refresh their shares. */
    unsigned gen_nodes, gen_pods;
    /* Each pool's refresh state, by pool id (grown under mu, a leaf held
     * only to find or grow an entry). */
    pthread_mutex_t mu;
    tenants_pool_t *pools;
    int npools;
} tenants_row_t;

/* The GPUs a pod's DRA claims count as (the dynamic-resources row's, by
 * --dra-queue-resources). */
static double pod_devices(void *ud, const pod_t *p)
{
    tenants_row_t *r = ud;
    return r->svc->queue_devices ? r->svc->queue_devices(r->core, p) : 0;
}

void *tenants_row_init(const sched_services_t *svc, void *core)
{
    tenants_row_t *r = util_xcalloc(1, sizeof(*r));
    r->svc = svc;
    r->core = core;
    const scheduler_opts_t *o = svc->opts(core);
    fs_opts_t fo = { o->usage_half_life_s, o->starvation_age_s, o->non_preemptible_priority, pod_devices, r };
    r->fs = fs_store_new(&fo);
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void tenants_row_fini(void *self)
{
    tenants_row_t *r = self;
    if (!r)
        return;
    fs_store_free(r->fs);
    pthread_mutex_destroy(&r->mu);
    free(r->pools);
    free(r);
}

/* A pod's tenant: its own label, else its PodGroup's (the gang store's
 * copy of it, as the core keeps it). */
static int pod_tenant(tenants_row_t *r, const pod_t *p)
{
    const char *q = fs_pod_queue_label(p);
    const char *g = q ? NULL : gang_of(p);
    if (!g)
        return fs_tenant_id(r->fs, q);
    char *pq = r->svc->gang_queue(r->core, p->ns, g);
    int t = fs_tenant_id(r->fs, pq);
    free(pq);
    return t;
}

/* Across Queues the rule is reclaim's: a pod whose queue is at or above
 * its fair share here does not take the room held for another queue's
 * pod, whatever the priorities (that room was reclaimed from such queues;
 * taken back, it would be reclaimed again). */
int tenants_row_nominee(const sched_row_t *row, const pod_t *nominee, const pod_t *pod, int pool, int same_side)
{
    tenants_row_t *r = row->self;
    if (!same_side || !fs_active(r->fs))
        return NOMINEE_ANY;
    int tp = pod_tenant(r, pod);
    return tp != pod_tenant(r, nominee) && fs_at_share(r->fs, pool, tp) ? NOMINEE_KEPT : NOMINEE_ANY;
}

/* Charges p to its queue in pool: as running when it is bound, else as
 * holding room (an assumed pod, a preemptor), which counts the same but is
 * no victim of a limit's reclaim (fs_charge_held). */
static void charge_pod(tenants_row_t *r, const pod_t *p, int pool, int64_t gpu_mem_mib)
{
    if (pod_is_bound(p))
        fs_charge(r->fs, p, pod_tenant(r, p), pool, gpu_mem_mib, +1);
    else
        fs_charge_held(r->fs, p, pod_tenant(r, p), pool, gpu_mem_mib);
}

/* The cache's accounting hook (cache lock held): what runs is charged to
 * its queue in the pool whose node it holds (a borrower in its lender:
 * borrowed room counts against neither its home pool's share nor its
 * limits there), until it is gone (a pod being deleted still holds its
 * node for its grace period, and a limit counts it). */
static void q_account(void *self, const pod_t *p, const node_info_t *ni, int sign)
{
    tenants_row_t *r = self;
    /* A reservation pod's GPU is its fractions' (charged to their queues). */
    if (gpu_is_reservation(p))
        return;
    if (sign > 0)
        charge_pod(r, p, ni && ni->pool >= 0 ? ni->pool : r->svc->home_pool(r->core, p),
                   ni && ni->node ? gpu_node_memory(ni->node) : 0);
    else
        fs_uncharge(r->fs, p->uid);
}

/* The cache's nomination hook (cache write lock held). A nomination
 * restored from status.nominatedNodeName is charged to the pod's queue in
 * its node's pool as held room, as a live preemptor is (q_reserve): its
 * queue is not less used than it is until the pod binds, and a limit's
 * reclaim never picks it. A nomination that goes while the pod holds no
 * node takes that charge with it (a bind replaces it). */
static void q_nomination(void *self, const pod_t *p, const node_info_t *ni, int sign)
{
    tenants_row_t *r = self;
    if (sign > 0)
        fs_charge_held(r->fs, p, pod_tenant(r, p), ni && ni->pool >= 0 ? ni->pool : r->svc->home_pool(r->core, p), 0);
    else
        fs_uncharge(r->fs, p->uid);
}

static void q_changed(void *self, int nodes)
{
    tenants_row_t *r = self;
    __atomic_add_fetch(nodes ? &r->gen_nodes : &r->gen_pods, 1, __ATOMIC_RELEASE);
}

static void on_queue_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    tenants_row_t *r = ud;
    if (type == KUBE_DELETED) {
        fs_queue_delete(r->fs, key);
    } else {
        char err[256];
        fs_queue_spec_t *q = fs_queue_from_json(obj, err, sizeof(err));
        if (!q) {
            LOG_W("Queue %s ignored: %s", key, err);
            return;
        }
        if (q->invalid)
            LOG_W("Queue %s is invalid: %s", key, q->invalid);
        if (!fs_queue_upsert(r->fs, q))
            return;
    }
    q_changed(r, 1);
    /* Limits, quotas or the hierarchy may have moved: waiting pods retry. */
    r->svc->wake_all(r->core, "QueueChanged");
}

const sched_watch_t tenants_row_watches[] = {
    { "Queue", FS_QUEUE_API "/queues", on_queue_event, 1 },
    { 0 },
};

/* ------------------------------------------------------ pool numbers */

typedef struct pend_acc {
    fs_pending_t *a;
    int n, cap;
} pend_acc_t;

static void pend_cb(int tenant, const resources_t *req, int pods, void *ud)
{
    pend_acc_t *acc = ud;
    if (acc->n == acc->cap) {
        acc->cap = acc->cap ? acc->cap * 2 : 8;
        acc->a = util_xrealloc(acc->a, (size_t)acc->cap * sizeof(*acc->a));
    }
    fs_pending_t *p = &acc->a[acc->n++];
    p->tenant = tenant;
    fs_res_vec(req, p->v);
    p->pods = pods;
}

typedef struct pool_sum {
    int pool;
    resources_t sum;
} pool_sum_t;

static void capacity_cb(void *ud, const node_info_t *ni)
{
    pool_sum_t *c = ud;
    if (ni->pool == c->pool && ni->node)
        res_add(&c->sum, &ni->node->allocatable);
}

/* The pool's allocatable sum, GPU, CPU and memory. */
static void pool_capacity(tenants_row_t *r, int pool, double cap[FS_NRES])
{
    pool_sum_t c = { .pool = pool };
    res_zero(&c.sum);
    r->svc->nodes_visit(r->core, capacity_cb, &c);
    fs_res_vec(&c.sum, cap);
}

typedef struct share_ctx {
    tenants_row_t *r;
    int pool;
} share_ctx_t;

/* A queue under its share must not wait on its pods' backoff (up to 10 s)
 * while others' fresh pods take the room: its oldest backing-off pod is
 * retried at each refresh (one that failed with no event since waits for
 * one). This is also the starvation bound: a starving pod is its queue's
 * oldest, and its queue is under its share. */
static int under_share_cb(int tenant, int64_t first_ms, void *ud)
{
    share_ctx_t *c = ud;
    (void)first_ms;
    return fs_ratio(c->r->fs, c->pool, tenant) < 1.0 - 1e-9;
}

/* Capacity, pending demand, fair shares; pods that waited on the old
 * shares retry when a share moved. */
static void refresh_pool(tenants_row_t *r, struct sched_pool *P)
{
    int id = -1;
    const char *name = NULL;
    sched_queue_t *q = r->svc->pool_queue(r->core, P, &id, &name);
    double cap[FS_NRES];
    pool_capacity(r, id, cap);
    fs_set_pool(r->fs, id, name, cap);
    pend_acc_t acc = { 0 };
    queue_tenant_pending(q, pend_cb, &acc);
    fs_set_pending(r->fs, id, acc.a, acc.n);
    free(acc.a);
    if (fs_refresh(r->fs, id, util_now_ms()))
        queue_move_all_to_active(q, "QueueShareChanged");
    share_ctx_t c = { r, id };
    if (queue_activate_oldest(q, under_share_cb, &c) > 0)
        LOG_D("pool %s: the oldest pods of queues under their share retried now", name);
}

/* Whether pool id's shares are due at now (and, if so, its state moved to
 * now and gn/gp). */
static int refresh_due(tenants_row_t *r, int id, int64_t now, unsigned gn, unsigned gp)
{
    pthread_mutex_lock(&r->mu);
    if (id >= r->npools) {
        int n = id + 8;
        r->pools = util_xrealloc(r->pools, (size_t)n * sizeof(*r->pools));
        memset(r->pools + r->npools, 0, (size_t)(n - r->npools) * sizeof(*r->pools));
        r->npools = n;
    }
    tenants_pool_t *tp = &r->pools[id];
    /* Shares decided on an old capacity would hand a whole new node to
     * whichever queue pops first, and reclaim would then undo it. */
    int due = gn != tp->seen_nodes || (gp != tp->seen_pods && now - tp->refresh_ms >= TENANTS_REFRESH_FAST_MS) ||
              now - tp->refresh_ms >= TENANTS_REFRESH_MS;
    if (due) {
        tp->refresh_ms = now;
        tp->seen_nodes = gn;
        tp->seen_pods = gp;
    }
    pthread_mutex_unlock(&r->mu);
    return due;
}

void tenants_row_tick(const sched_row_t *row, struct sched_pool *P)
{
    tenants_row_t *r = row->self;
    if (!fs_active(r->fs))
        return;
    int id = -1;
    const char *name = NULL;
    r->svc->pool_queue(r->core, P, &id, &name);
    unsigned gn = __atomic_load_n(&r->gen_nodes, __ATOMIC_ACQUIRE);
    unsigned gp = __atomic_load_n(&r->gen_pods, __ATOMIC_ACQUIRE);
    if (id >= 0 && refresh_due(r, id, util_now_ms(), gn, gp))
        refresh_pool(r, P);
}

static void refresh_each(void *ud, struct sched_pool *P)
{
    refresh_pool(ud, P);
}

void tenants_row_housekeep(const sched_row_t *row)
{
    tenants_row_t *r = row->self;
    if (!fs_active(r->fs) || r->svc->fenced(r->core))
        return;
    r->svc->pools_each(r->core, refresh_each, r);
    /* While Bindings are queued they have the API server to themselves;
     * statuses follow within a second of the burst (as PodGroups'). */
    if (r->svc->bind_backlog(r->core) > 0)
        return;
    fs_tick_t t;
    fs_tick(r->fs, util_now_ms(), &t);
    for (int i = 0; i < t.npatches; i++) {
        char *name = util_urlencode(t.patches[i].name);
        sbuf_t path = { 0 };
        sbuf_printf(&path, FS_QUEUE_API "/queues/%s/status", name);
        r->svc->patch(r->core, path.data, "application/merge-patch+json", t.patches[i].body);
        t.patches[i].body = NULL;
        sbuf_free(&path);
        free(name);
    }
    for (int i = 0; i < t.nevents; i++) {
        json_t *inv = json_pack("{s:s, s:s, s:s, s:s}", "kind", "Queue", "apiVersion", "resource.aibee.cn/v1alpha1",
                                "name", t.events[i].name, "uid", t.events[i].uid);
        LOG_W("queue %s: %s: %s", t.events[i].name, t.events[i].reason, t.events[i].message);
        r->svc->object_event(r->core, "default", inv, "Warning", t.events[i].reason, t.events[i].message,
                             t.events[i].name);
    }
    fs_tick_clear(&t);
}

/* ------------------------------------------------------------ admission */

/* A limit keeps the set's minimum out: the victims fs_limit_victims chose
 * (its own queue's lower-priority pods, or sibling subtrees above their
 * shares) are evicted by the core's preemption (services' evict_for_limit),
 * and the members keep the room they free. 1 when they go, -1 when the
 * set would not be placed even with them gone, else 0. */
static int limit_reclaim(tenants_row_t *r, pod_set_t *set, const double req[FS_NRES], int pool)
{
    int np = set->need;
    queue_item_t *const *items = set->items;
    /* A borrower makes no room in its lender: the lender's pods are home. */
    if (np == 0 || items[0]->borrower || !r->svc->may_evict(r->core, set))
        return 0;
    char **uids = NULL;
    /* items are in queue order: the first has the highest priority; the
     * lowest one's decides what the set may take from its own queue. */
    int32_t prio = items[np - 1]->pod->priority;
    int n = fs_limit_victims(r->fs, pool, items[0]->tenant, req, prio, util_wall_ms(), &uids);
    if (n <= 0)
        return 0;
    return r->svc->evict_for_limit(r->core, set, pool, uids, n);
}

/* The pool a set's queue numbers are read in: where it is being placed
 * (a borrower's lender), as q_account charges it. */
static int admit_pool(tenants_row_t *r, const pod_set_t *set)
{
    const queue_item_t *it = set->items[0];
    return it->borrower ? set->pool_id : r->svc->home_pool(r->core, it->pod);
}

/* A set's minimum, as the set's items (admission) or as pods (a lender's
 * numbers, q_admits), admitted in pool. */
typedef struct admit_ctx {
    tenants_row_t *r;
    int pool;
    queue_item_t *const *items; /* or pods */
    pod_t *const *pods;
    int n;
    double *req;
    char *msg;
    size_t msglen;
    int rc;
} admit_ctx_t;

static const pod_t *admit_pod(const admit_ctx_t *a, int i)
{
    return a->items ? a->items[i]->pod : a->pods[i];
}

static void admit_locked(void *ud)
{
    admit_ctx_t *a = ud;
    tenants_row_t *r = a->r;
    int preemptible = 1;
    for (int i = 0; i < a->n; i++) {
        const pod_t *p = admit_pod(a, i);
        if (fs_is_charged(r->fs, p->uid))
            continue;
        double v[FS_NRES];
        fs_store_pod_vec(r->fs, p, v);
        for (int k = 0; k < FS_NRES; k++)
            a->req[k] += v[k];
        preemptible &= fs_pod_preemptible(r->fs, p);
    }
    a->rc = fs_admit(r->fs, a->pool, pod_tenant(r, admit_pod(a, 0)), a->req, preemptible, a->msg, a->msglen);
}

/* Admission of a set's minimum against its queue's limits and, for
 * non-preemptible work, quotas: 0, or FS_ADMIT_LIMIT / FS_ADMIT_QUOTA with
 * msg. Members already charged (preemptors holding the room they
 * reclaimed) were admitted when they reclaimed: they do not count twice.
 * a->req gets the uncharged members' sum. Read with the accounting still
 * (the cache's read lock): an informer update re-charges a pod (-1 then
 * +1) under the write lock, so the count seen here never misses a running
 * pod (seen once as a limit exceeded by one pod). */
static int admit_read(admit_ctx_t *a)
{
    memset(a->req, 0, sizeof(double) * FS_NRES);
    a->r->svc->accounting_read(a->r->core, admit_locked, a);
    return a->rc;
}

static int admit_set(tenants_row_t *r, const pod_set_t *set, double req[FS_NRES], char *msg, size_t msglen)
{
    admit_ctx_t a = { .r = r,
                      .pool = admit_pool(r, set),
                      .items = set->items,
                      .n = set->need,
                      .req = req,
                      .msg = msg,
                      .msglen = msglen };
    return admit_read(&a);
}

/* The notes said once per pod, also when no Queue exists at all. */
static void note_once(const sched_row_t *row, tenants_row_t *r, queue_item_t *it)
{
    if (sched_mark(row, it))
        return;
    sched_mark_set(row, it);
    const pod_t *p = it->pod;
    char *m = it->tenant != FS_DEFAULT_ID ? fs_fallback_message(r->fs, it->tenant) : NULL;
    if (m)
        r->svc->pod_event(r->core, p, "Warning", "UnknownQueue", m);
    free(m);
    if (p->preempt_min_runtime_ms == DURATION_BAD)
        r->svc->pod_event(r->core, p, "Warning", "InvalidMinRuntime",
                          "annotation " PREEMPT_MIN_RUNTIME_ANNOTATION
                          " is not a duration such as \"10m\" (a pod may lower its queue's minimum, never raise it); "
                          "ignored");
    if (p->reclaim_min_runtime_ms == DURATION_BAD)
        r->svc->pod_event(r->core, p, "Warning", "InvalidMinRuntime",
                          "annotation " RECLAIM_MIN_RUNTIME_ANNOTATION
                          " is not a duration such as \"10m\" (a pod may lower its queue's minimum, never raise it); "
                          "ignored");
    if (p->lifetime_s < 0)
        r->svc->pod_event(r->core, p, "Warning", "InvalidLifetime",
                          "annotation " LIFETIME_ANNOTATION " is not a positive whole number of seconds; ignored");
}

/* Room made under a queue limit (limit_reclaim) is the limit's, on no
 * node: the set holds it (charged, so admission passes its members) from
 * the moment its victims are chosen, so it must not be placed while any
 * of them still runs (one asked to checkpoint runs for its whole grace),
 * or its queue would hold more than its limit meanwhile. That
 * starts when the eviction job is queued, not when the evictor takes it:
 * placed in between (on a node with room), the set would make the evictor
 * withdraw the checkpointing victims it had not evicted yet ("placed
 * elsewhere"), and they would count again beside it. Room made on a node
 * is nominated there and was admitted with the victims counted. */
static int limit_room_pending(tenants_row_t *r, pod_set_t *set)
{
    for (int i = 0; i < set->need; i++) {
        const pod_t *p = set->items[i] ? set->items[i]->pod : NULL;
        if (p && r->svc->limit_room_pending(r->core, p->uid)) {
            sbuf_t b = { 0 };
            sbuf_printf(&b, "%s%swaiting for the pods reclaimed under its queue's limit to leave",
                        set->label ? set->label : "", set->label ? ": " : "");
            pod_set_why(set, NULL, b.data);
            return 1;
        }
    }
    return 0;
}

/* The queues row's admission: the set's minimum against its queue's limits
 * (and quota, for non-preemptible work), as minResources does for a gang.
 * Under a limit the set makes room (limit_reclaim), an elastic member
 * excepted: it ranks behind and displaces nobody. */
ext_rc_t tenants_row_admit(const sched_row_t *row, pod_set_t *set)
{
    tenants_row_t *r = row->self;
    for (int i = 0; i < set->n; i++)
        if (set->items[i])
            note_once(row, r, set->items[i]);
    if (set->need <= 0 || !fs_active(r->fs))
        return EXT_NEXT;
    if (limit_room_pending(r, set))
        return EXT_HOLD;
    double req[FS_NRES];
    char msg[512];
    int rc = admit_set(r, set, req, msg, sizeof(msg));
    if (rc == 0)
        return EXT_NEXT;
    pod_set_step(set, "admission", rc == FS_ADMIT_LIMIT ? "limit" : "quota", "%s", msg);
    /* Only a limit is made room under: a quota of non-preemptible work is
     * not (FS_ADMIT_QUOTA), whatever could be evicted. */
    const char *note = "";
    int made = rc == FS_ADMIT_LIMIT && set->kind != SET_SURPLUS ? limit_reclaim(r, set, req, admit_pool(r, set)) : 0;
    if (made > 0)
        note = "; reclaiming under the limit";
    else if (made < 0)
        note = "; no node would take it with room made under the limit, so none is";
    sbuf_t b = { 0 };
    if (set->kind == SET_SURPLUS)
        sbuf_printf(&b, "elastic member of %s (beyond minMember): %s", set->label, msg);
    else if (set->label)
        sbuf_printf(&b, "%s: its minimum of %d pods: %s%s", set->label, set->need, msg, note);
    else
        sbuf_printf(&b, "%s%s", msg, note);
    pod_set_why(set, NULL, b.data);
    /* A borrower its lender's numbers refuse no longer fits there: the
     * post-filter's lender row sends it home, where it may take back its
     * own pool's nodes from borrowers (it waited in the lender's queue
     * while a borrower held a node at home it fits: composition seed
     * 809706068, home-vs-borrower). */
    return set->items[0]->borrower ? EXT_FAIL : EXT_HOLD;
}

/* ----------------------------------------------- the queues interface */

static int q_active(void *self)
{
    return fs_active(((tenants_row_t *)self)->fs);
}

static int q_tenant_of(void *self, const pod_t *pod)
{
    return pod_tenant(self, pod);
}

static int q_pick(void *self, int pool, const int *tenants, const int64_t *head_first_ms, int n)
{
    return fs_pick(((tenants_row_t *)self)->fs, pool, tenants, head_first_ms, n, util_now_ms());
}

static int q_is_charged(void *self, const char *uid)
{
    return fs_is_charged(((tenants_row_t *)self)->fs, uid);
}

static void q_recharge(void *self, const pod_t *p, int pool)
{
    fs_stay(((tenants_row_t *)self)->fs, p->uid);
    charge_pod(self, p, pool, 0);
}

static void q_refresh_devices(void *self, const pod_t *p)
{
    fs_refresh_devices(((tenants_row_t *)self)->fs, p);
}

static void q_uncharge(void *self, const char *uid)
{
    fs_forget(((tenants_row_t *)self)->fs, uid);
}

static void q_leave(void *self, const char *uid)
{
    fs_leave(((tenants_row_t *)self)->fs, uid);
}

static int q_same_queue(void *self, int a, int b)
{
    return fs_same_queue(((tenants_row_t *)self)->fs, a, b);
}

static int q_same_tree(void *self, int a, int b)
{
    return fs_same_tree(((tenants_row_t *)self)->fs, a, b);
}

static int q_preemptible(void *self, const pod_t *pod)
{
    return fs_pod_preemptible(((tenants_row_t *)self)->fs, pod);
}

static int q_starving(void *self, int pool, int tenant, int64_t first_ms)
{
    return fs_starving(((tenants_row_t *)self)->fs, pool, tenant, first_ms, util_now_ms());
}

static int q_may_reclaim(void *self, int pool, int tenant, const double req[FS_NRES], int starving, int32_t prio,
                         int64_t created_ms, const char *victim_uid, int in_gang, int64_t now_ms, int *cross)
{
    return fs_may_reclaim(((tenants_row_t *)self)->fs, pool, tenant, req, starving, prio, created_ms, victim_uid,
                          in_gang, now_ms, cross);
}

void tenants_row_victims(const sched_row_t *row, const sched_victim_q_t *q, sched_victim_answer_t *a)
{
    if (!q->queues)
        return;
    tenants_row_t *r = row->self;
    int cross = 0;
    int in_gang = gang_of(q->victim) && row->svc->gang_member_class(row->core, q->victim) == GANG_MEMBER_MINIMUM;
    if (fs_may_reclaim(r->fs, q->pool_id, q->tenant, q->req, q->starving, q->prio, q->created_ms, q->victim->uid,
                       in_gang, q->now_wall, &cross)) {
        a->rule = VICTIM_BY_QUEUE;
        a->may = 1;
        a->kind = cross ? FS_MINRT_RECLAIM : FS_MINRT_PREEMPT;
    } else if (cross) {
        a->rule = VICTIM_BY_QUEUE; /* across queues only reclaim's rules */
    }
}

static int q_victims_ok(void *self, int pool, int tenant, const double req[FS_NRES], int starving,
                        const char *const *victim_uids, const int *jobs, int n, int64_t now_ms)
{
    return fs_victims_ok(((tenants_row_t *)self)->fs, pool, tenant, req, starving, victim_uids, jobs, n, now_ms);
}

static int q_yields(void *self, int pool, int tenant, const double req[FS_NRES], int other,
                    const double other_req[FS_NRES])
{
    return fs_yields(((tenants_row_t *)self)->fs, pool, tenant, req, other, other_req);
}

static int64_t q_checkpoint_grace(void *self, int tenant)
{
    return fs_checkpoint_grace(((tenants_row_t *)self)->fs, tenant);
}

static int q_any_min_runtime(void *self)
{
    return fs_any_min_runtime(((tenants_row_t *)self)->fs);
}

static int64_t q_min_runtime(void *self, int tenant, int kind, int64_t pool_default, char **from)
{
    return fs_min_runtime(((tenants_row_t *)self)->fs, tenant, kind, pool_default, from);
}

static int q_set_request(void *self, pod_t *const *pods, int n, int *tenant, double req[FS_NRES])
{
    tenants_row_t *r = self;
    if (!fs_active(r->fs) || n <= 0)
        return 0;
    *tenant = pod_tenant(r, pods[0]);
    memset(req, 0, sizeof(double) * FS_NRES);
    for (int i = 0; i < n; i++) {
        double v[FS_NRES];
        fs_store_pod_vec(r->fs, pods[i], v);
        for (int k = 0; k < FS_NRES; k++)
            req[k] += v[k];
    }
    return 1;
}

static int q_admits(void *self, int pool, pod_t *const *pods, int n)
{
    tenants_row_t *r = self;
    if (n <= 0 || !fs_active(r->fs))
        return 1;
    double req[FS_NRES];
    char msg[256];
    admit_ctx_t a = { .r = r, .pool = pool, .pods = pods, .n = n, .req = req, .msg = msg, .msglen = sizeof(msg) };
    return admit_read(&a) == 0;
}

static void q_reserve(void *self, int tenant, int pool, pod_t *const *preemptors, int np, pod_t *const *victims, int nv)
{
    tenants_row_t *r = self;
    const char **uids = util_xcalloc((size_t)nv + 1, sizeof(*uids));
    for (int i = 0; i < nv; i++)
        uids[i] = victims[i]->uid;
    fs_note_reclaim(r->fs, tenant, uids, nv);
    free(uids);
    /* Until the victims are gone and the preemptors bound, shares and
     * reclaim count them as already moved (the next pod of the reclaiming
     * queue must not reclaim the same share again), while limits and
     * quotas count the victims where they still run (fs_leave): room a
     * victim frees beyond the preemptors' need (a gang goes whole) is
     * nobody's until it is gone. */
    for (int i = 0; i < nv; i++)
        fs_leave(r->fs, victims[i]->uid);
    for (int i = 0; i < np; i++)
        fs_charge_held(r->fs, preemptors[i], pod_tenant(r, preemptors[i]), pool, 0);
}

static char *q_reclaim_note(void *self, const pod_t *preemptor, const pod_t *victim)
{
    tenants_row_t *r = self;
    if (!fs_active(r->fs))
        return NULL;
    char *vq = fs_queue_name(r->fs, pod_tenant(r, victim));
    char *pq = fs_queue_name(r->fs, pod_tenant(r, preemptor));
    char *note = NULL;
    if (strcmp(vq, pq) != 0) {
        sbuf_t b = { 0 };
        sbuf_printf(&b, "; reclaimed by queue \"%s\" from queue \"%s\"", pq, vq);
        note = b.data;
    }
    free(vq);
    free(pq);
    return note;
}

typedef struct queue_find {
    const char *queue, *pool;
    json_t *usage, *fair;
} queue_find_t;

static json_t *res_json(const double v[FS_NRES])
{
    return json_pack("{s:f, s:f, s:f}", "gpu", v[FS_GPU], "cpuMillicores", v[FS_CPU], "memoryMB", v[FS_MEM]);
}

static void queue_metric(void *ud, const char *queue, const char *pool, const double alloc[FS_NRES],
                         const double fair[FS_NRES], int pending)
{
    (void)pending;
    queue_find_t *f = ud;
    if (f->usage || strcmp(queue, f->queue) != 0 || strcmp(pool, f->pool) != 0)
        return;
    f->usage = res_json(alloc);
    f->fair = res_json(fair);
}

/* Its queue: name, usage and fair share in the pool, their ratio. */
static json_t *q_pod_json(void *self, int pool, const char *pool_name, const pod_t *pod)
{
    tenants_row_t *r = self;
    if (!fs_active(r->fs))
        return json_null();
    int tenant = pod_tenant(r, pod);
    char *name = fs_queue_name(r->fs, tenant);
    queue_find_t f = { name ? name : "", pool_name, NULL, NULL };
    fs_each_metric(r->fs, queue_metric, &f);
    json_t *q = json_pack("{s:s?, s:o, s:o, s:f, s:b}", "name", name, "usage", f.usage ? f.usage : json_null(),
                          "fairShare", f.fair ? f.fair : json_null(), "ratio", fs_ratio(r->fs, pool, tenant),
                          "preemptible", fs_pod_preemptible(r->fs, pod));
    free(name);
    return q;
}

static json_t *q_dashboard(void *self)
{
    return fs_dashboard_queues(((tenants_row_t *)self)->fs);
}

static const char *q_queue_name(void *self, const pod_t *pod)
{
    (void)self;
    const char *q = fs_pod_queue_label(pod);
    return q ? q : FS_DEFAULT_QUEUE;
}

static void q_each_metric(void *self, fs_metric_fn fn, void *ud)
{
    tenants_row_t *r = self;
    if (fs_active(r->fs))
        fs_each_metric(r->fs, fn, ud);
}

static void q_each_counter(void *self, fs_counter_fn fn, void *ud)
{
    fs_each_counter(((tenants_row_t *)self)->fs, fn, ud);
}

static const sched_queues_ops_t queues_ops = {
    .active = q_active,
    .tenant_of = q_tenant_of,
    .pick = q_pick,
    .account = q_account,
    .nomination = q_nomination,
    .changed = q_changed,
    .is_charged = q_is_charged,
    .recharge = q_recharge,
    .refresh_devices = q_refresh_devices,
    .uncharge = q_uncharge,
    .leave = q_leave,
    .same_queue = q_same_queue,
    .same_tree = q_same_tree,
    .preemptible = q_preemptible,
    .starving = q_starving,
    .may_reclaim = q_may_reclaim,
    .victims_ok = q_victims_ok,
    .yields = q_yields,
    .checkpoint_grace = q_checkpoint_grace,
    .any_min_runtime = q_any_min_runtime,
    .min_runtime = q_min_runtime,
    .admits = q_admits,
    .set_request = q_set_request,
    .reserve = q_reserve,
    .reclaim_note = q_reclaim_note,
    .pod_json = q_pod_json,
    .dashboard = q_dashboard,
    .queue_name = q_queue_name,
    .each_metric = q_each_metric,
    .each_counter = q_each_counter,
};

void tenants_row_queues(const sched_row_t *row, sched_queues_t *q)
{
    q->ops = &queues_ops;
    q->self = row->self;
}
