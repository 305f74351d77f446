/* tenants.c -- tenants (fairshare/fairshare.h) on the scheduler side: the
 * Queue informer, the tenant and pick functions of each pool's queue, the
 * cache's accounting hook, admission before a decision, the fair-share
 * rules handed to preemption (reclaim), and the housekeeping that writes
 * Queue .status. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/preempt_eval.h"
#include "util/log.h"
#include "util/util.h"

/* A pod's tenant: its own label, else its PodGroup's. */
int tenants_pod_tenant(scheduler_t *s, const pod_t *p)
{
    const char *q = fs_pod_queue_label(p);
    const char *g = q ? NULL : gang_of(p);
    if (!g)
        return fs_tenant_id(s->fs, q);
    char *pq = gang_queue_of(s->gangs, p->ns, g);
    int t = fs_tenant_id(s->fs, pq);
    free(pq);
    return t;
}

/* Across Queues the rule is reclaim's: a pod whose queue is at or above
 * its fair share here does not take the room held for another queue's
 * pod, whatever the priorities (that room was reclaimed from such queues;
 * taken back, it would be reclaimed again). */
int tenants_nominee(const sched_row_t *row, const pod_t *nominee, const pod_t *pod, int pool, int same_side)
{
    scheduler_t *s = row->self;
    if (!same_side || !fs_active(s->fs))
        return NOMINEE_ANY;
    int tp = tenants_pod_tenant(s, pod);
    return tp != tenants_pod_tenant(s, nominee) && fs_at_share(s->fs, pool, tp) ? NOMINEE_KEPT : NOMINEE_ANY;
}

int tenants_tenant_of(const pod_t *pod, void *ud)
{
    sched_pool_t *P = ud;
    return tenants_pod_tenant(P->s, pod);
}

int tenants_pick(const int *tenants, const int64_t *head_first_ms, int n, void *ud)
{
    sched_pool_t *P = ud;
    return fs_pick(P->s->fs, P->id, tenants, head_first_ms, n, util_now_ms());
}

/* Charges p to its queue in pool: as running when it is bound, else as
 * holding room (an assumed pod, a preemptor), which counts the same but is
 * no victim of a limit's reclaim (fs_charge_held). */
static void charge_pod(scheduler_t *s, const pod_t *p, int pool, int64_t gpu_mem_mib)
{
    if (pod_is_bound(p))
        fs_charge(s->fs, p, tenants_pod_tenant(s, p), pool, gpu_mem_mib, +1);
    else
        fs_charge_held(s->fs, p, tenants_pod_tenant(s, p), pool, gpu_mem_mib);
}

/* The cache's accounting hook (cache lock held): what runs is charged to
 * its queue in the pool whose node it holds (a borrower in its lender:
 * borrowed room counts against neither its home pool's share nor its
 * limits there), until it is gone (a pod being deleted still holds its
 * node for its grace period, and a limit counts it). */
void tenants_account(void *ud, const pod_t *p, const node_info_t *ni, int sign)
{
    scheduler_t *s = ud;
    /* A reservation pod's GPU is its fractions' (charged to their queues). */
    if (gpu_is_reservation(p))
        return;
    if (sign > 0)
        charge_pod(s, p, ni && ni->pool >= 0 ? ni->pool : pools_home_id(s, p),
                   ni && ni->node ? gpu_node_memory(ni->node) : 0);
    else
        fs_uncharge(s->fs, p->uid);
}

/* The cache's nomination hook (cache write lock held). A nomination
 * restored from status.nominatedNodeName is charged to the pod's queue in
 * its node's pool as held room, as tenants_reserve charges a live
 * preemptor: its queue is not less used than it is until the pod binds,
 * and a limit's reclaim never picks it. A nomination that goes while the
 * pod holds no node takes that charge with it (a bind replaces it). */
void tenants_nomination(void *ud, const pod_t *p, const node_info_t *ni, int sign)
{
    scheduler_t *s = ud;
    if (sign > 0)
        fs_charge_held(s->fs, p, tenants_pod_tenant(s, p), ni && ni->pool >= 0 ? ni->pool : pools_home_id(s, p), 0);
    else
        fs_uncharge(s->fs, p->uid);
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

void on_tenant_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    scheduler_t *s = ud;
    if (type == KUBE_DELETED) {
        fs_queue_delete(s->fs, key);
    } else {
        char err[256];
        fs_queue_spec_t *q = fs_queue_from_json(obj, err, sizeof(err));
        if (!q) {
            LOG_W("Queue %s ignored: %s", key, err);
            return;
        }
        if (q->invalid)
            LOG_W("Queue %s is invalid: %s", key, q->invalid);
        if (!fs_queue_upsert(s->fs, q))
            return;
    }
    tenants_changed(s, 1);
    /* Limits, quotas or the hierarchy may have moved: waiting pods retry. */
    sched_event(s, SCHED_EV_OBJECT, NULL, NULL, "QueueChanged");
}

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

/* The pool's allocatable sum, GPU, CPU and memory. */
static void pool_capacity(scheduler_t *s, int pool, double cap[FS_NRES])
{
    resources_t sum;
    res_zero(&sum);
    cache_rdlock(s->cache);
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(s->cache, &n);
    for (int i = 0; i < n; i++)
        if (nodes[i]->pool == pool && nodes[i]->node)
            res_add(&sum, &nodes[i]->node->allocatable);
    cache_unlock(s->cache);
    fs_res_vec(&sum, cap);
}

/* A queue under its share must not wait on its pods' backoff (up to 10 s)
 * while others' fresh pods take the room: its oldest backing-off pod is
 * retried at each refresh (one that failed with no event since waits for
 * one). This is also the starvation bound: a starving pod is its queue's
 * oldest, and its queue is under its share. */
static int under_share_cb(int tenant, int64_t first_ms, void *ud)
{
    sched_pool_t *P = ud;
    (void)first_ms;
    return fs_ratio(P->s->fs, P->id, tenant) < 1.0 - 1e-9;
}

/* Capacity, pending demand, fair shares; pods that waited on the old
 * shares retry when a share moved. */
static void refresh_pool(sched_pool_t *P)
{
    scheduler_t *s = P->s;
    double cap[FS_NRES];
    pool_capacity(s, P->id, cap);
    fs_set_pool(s->fs, P->id, P->name, cap);
    pend_acc_t acc = { 0 };
    queue_tenant_pending(P->q, pend_cb, &acc);
    fs_set_pending(s->fs, P->id, acc.a, acc.n);
    free(acc.a);
    if (fs_refresh(s->fs, P->id, util_now_ms()))
        queue_move_all_to_active(P->q, "QueueShareChanged");
    if (queue_activate_oldest(P->q, under_share_cb, P) > 0)
        LOG_D("pool %s: the oldest pods of queues under their share retried now", P->name);
}

void tenants_changed(scheduler_t *s, int nodes)
{
    __atomic_add_fetch(nodes ? &s->fs_gen_nodes : &s->fs_gen_pods, 1, __ATOMIC_RELEASE);
}

void tenants_refresh(sched_pool_t *P)
{
    scheduler_t *s = P->s;
    if (!fs_active(s->fs))
        return;
    int64_t now = util_now_ms();
    unsigned gn = __atomic_load_n(&s->fs_gen_nodes, __ATOMIC_ACQUIRE);
    unsigned gp = __atomic_load_n(&s->fs_gen_pods, __ATOMIC_ACQUIRE);
    /* Shares decided on an old capacity would hand a whole new node to
     * whichever queue pops first, and reclaim would then undo it. */
    int due = gn != P->fs_seen_nodes || (gp != P->fs_seen_pods && now - P->fs_refresh_ms >= TENANTS_REFRESH_FAST_MS) ||
              now - P->fs_refresh_ms >= TENANTS_REFRESH_MS;
    if (!due)
        return;
    P->fs_refresh_ms = now;
    P->fs_seen_nodes = gn;
    P->fs_seen_pods = gp;
    refresh_pool(P);
}

static void refresh_each(sched_pool_t *P, void *ud)
{
    (void)ud;
    refresh_pool(P);
}

void tenants_housekeep(scheduler_t *s)
{
    if (!fs_active(s->fs) || scheduler_fenced(s))
        return;
    pools_each_live(s, refresh_each, NULL);
    /* While Bindings are queued they have the API server to themselves;
     * statuses follow within a second of the burst (as PodGroups'). */
    if (__atomic_load_n(&s->bind_backlog, __ATOMIC_RELAXED) > 0)
        return;
    fs_tick_t t;
    fs_tick(s->fs, util_now_ms(), &t);
    for (int i = 0; i < t.npatches; i++) {
        char *name = util_urlencode(t.patches[i].name);
        sbuf_t path = { 0 };
        sbuf_printf(&path, FS_QUEUE_API "/queues/%s/status", name);
        writer_patch(s->writer, path.data, "application/merge-patch+json", t.patches[i].body);
        t.patches[i].body = NULL;
        sbuf_free(&path);
        free(name);
    }
    for (int i = 0; i < t.nevents; i++) {
        json_t *inv = json_pack("{s:s, s:s, s:s, s:s}", "kind", "Queue", "apiVersion", "resource.aibee.cn/v1alpha1",
                                "name", t.events[i].name, "uid", t.events[i].uid);
        LOG_W("queue %s: %s: %s", t.events[i].name, t.events[i].reason, t.events[i].message);
        writer_object_event(s->writer, "default", inv, "Warning", t.events[i].reason, t.events[i].message,
                            t.events[i].name);
    }
    fs_tick_clear(&t);
}

/* ------------------------------------------------------------ admission */

/* Whether a minimum runtime keeps one of the victims fs_limit_victims
 * chose in pool (its own queue's pod at home: preempt; another queue's, or
 * a borrower whose lender takes its room back: reclaim, as for any
 * victim): then none goes, and the set's message says until when. */
static int limit_victims_protected(pod_set_t *set, const preempt_candidate_t *c, int pool)
{
    scheduler_t *s = set->P->s;
    minrt_note_t note = { 0 };
    int64_t now = util_wall_ms();
    for (int i = 0; i < c->nvictims; i++) {
        const pod_t *v = c->victims[i];
        int same = fs_same_queue(s->fs, set->items[0]->tenant, tenants_pod_tenant(s, v)) && pools_home_id(s, v) == pool;
        minrt_check(s, v, same ? FS_MINRT_PREEMPT : FS_MINRT_RECLAIM, now, &note);
    }
    int kept = note.n > 0;
    minrt_note_to_set(set, &note);
    minrt_note_clear(&note);
    return kept;
}

/* A limit keeps the set's minimum out: the victims fs_limit_victims chose
 * (its own queue's lower-priority pods, or sibling subtrees above their
 * shares) are evicted, and the members keep the room they free. */
static int limit_reclaim(pod_set_t *set, const double req[FS_NRES], int pool)
{
    sched_pool_t *P = set->P;
    scheduler_t *s = P->s;
    int np = set->need;
    queue_item_t *const *items = set->items;
    int no_preempt = 1;
    pools_flags(s, P->id, &no_preempt, NULL, NULL);
    /* A borrower makes no room in its lender: the lender's pods are home. */
    if (s->opts.disable_preemption || no_preempt || np == 0 || items[0]->borrower)
        return 0;
    for (int i = 0; i < np; i++)
        if (!sched_may_preempt(s, items[i]->pod) || evictor_has_job(s->evictor, items[i]->pod->uid))
            return 0;
    char **uids = NULL;
    /* items are in queue order: the first has the highest priority; the
     * lowest one's decides what the set may take from its own queue. */
    int32_t prio = items[np - 1]->pod->priority;
    int n = fs_limit_victims(s->fs, pool, items[0]->tenant, req, prio, util_wall_ms(), &uids);
    if (n <= 0)
        return 0;
    preempt_candidate_t *c = util_xcalloc(1, sizeof(*c));
    c->victims = util_xcalloc((size_t)n, sizeof(*c->victims));
    for (int i = 0; i < n; i++) {
        cache_pod_state_t st;
        pod_t *v = cache_get_pod(s->cache, uids[i], &st);
        if (v && st == CPOD_BOUND && preempt_removable(v, NULL) && !v->deleting)
            c->victims[c->nvictims++] = v;
        else
            pod_unref(v);
        free(uids[i]);
    }
    free(uids);
    if (c->nvictims == n && limit_victims_protected(set, c, pool)) {
        preempt_candidate_clear(c);
        free(c);
        return 0;
    }
    if (c->nvictims < n) { /* one went meanwhile: choose again next time */
        preempt_candidate_clear(c);
        free(c);
        return 0;
    }
    c->node = util_strdup(c->victims[0]->node_name);
    pod_t **pods = util_xcalloc((size_t)np, sizeof(*pods));
    for (int i = 0; i < np; i++)
        pods[i] = items[i]->pod;
    victim_ctx_t vc = { .s = s, .pool_id = pool };
    tenants_victim_ctx(P, pods, np, 0, &vc);
    /* A gang goes whole, each mate by the victim rules, or not at all. */
    pdb_lock(s);
    int left = pe_victims(s)->expand(&vc, pods[0], c, 1);
    pdb_unlock(s);
    if (left == 0) {
        free(c);
        free(pods);
        return 0;
    }
    /* The room is the limit's, on no node: nobody is nominated. */
    pe_commit_t cm = { .P = P, .vc = &vc, .pods = pods, .np = np, .cands = c, .nc = 1, .by = PE_BY_LIMIT };
    preempt_commit(&cm);
    free(pods);
    return 1;
}

/* The pool a set's queue numbers are read in: where it is being placed
 * (a borrower's lender), as tenants_account charges it. */
static int admit_pool(sched_pool_t *P, const queue_item_t *it)
{
    return it->borrower ? P->id : pools_home_id(P->s, it->pod);
}

/* Admission of a pod set (one pod, or a gang's minimum) against its
 * queue's limits and, for non-preemptible work, quotas: 0, or
 * FS_ADMIT_LIMIT / FS_ADMIT_QUOTA with msg.
 * Members already charged (preemptors holding the room they reclaimed)
 * were admitted when they reclaimed: they do not count twice. *req gets
 * the uncharged members' sum. */
static int admit_set(sched_pool_t *P, queue_item_t *const *items, int n, double req[FS_NRES], char *msg, size_t msglen)
{
    scheduler_t *s = P->s;
    int preemptible = 1;
    memset(req, 0, sizeof(double) * FS_NRES);
    /* Read under the cache's read lock: an informer update re-charges a pod
     * (-1 then +1) under the write lock, so the count seen here never misses
     * a running pod (seen once as a limit exceeded by one pod). */
    cache_rdlock(s->cache);
    for (int i = 0; i < n; i++) {
        if (fs_is_charged(s->fs, items[i]->pod->uid))
            continue;
        double v[FS_NRES];
        fs_pod_vec(items[i]->pod, v);
        for (int r = 0; r < FS_NRES; r++)
            req[r] += v[r];
        preemptible &= fs_pod_preemptible(s->fs, items[i]->pod);
    }
    int rc =
        fs_admit(s->fs, admit_pool(P, items[0]), tenants_pod_tenant(s, items[0]->pod), req, preemptible, msg, msglen);
    cache_unlock(s->cache);
    return rc;
}

/* The notes said once per pod, also when no Queue exists at all. */
static void note_once(scheduler_t *s, queue_item_t *it)
{
    if (it->queue_noted)
        return;
    it->queue_noted = 1;
    char *m = it->tenant != FS_DEFAULT_ID ? fs_fallback_message(s->fs, it->tenant) : NULL;
    if (m)
        writer_pod_event(s->writer, it->pod, "Warning", "UnknownQueue", m);
    free(m);
    minrt_warn_annotations(s, it->pod);
    if (it->pod->lifetime_s < 0)
        writer_pod_event(s->writer, it->pod, "Warning", "InvalidLifetime",
                         "annotation " LIFETIME_ANNOTATION " is not a positive whole number of seconds; ignored");
}

/* Room made under a queue limit (limit_reclaim) is the limit's, on no
 * node: its victims stop counting at once, so the set must not be placed
 * while any of them still runs (one asked to checkpoint runs for its whole
 * grace), or its queue would hold more than its limit meanwhile. That
 * starts when the eviction job is queued, not when the evictor takes it:
 * placed in between (on a node with room), the set would make the evictor
 * withdraw the checkpointing victims it had not evicted yet ("placed
 * elsewhere"), and they would count again beside it. Room made on a node
 * is nominated there and was admitted with the victims counted. */
static int limit_room_pending(pod_set_t *set)
{
    scheduler_t *s = set->P->s;
    for (int i = 0; i < set->need; i++) {
        const pod_t *p = set->items[i] ? set->items[i]->pod : NULL;
        if (p && !cache_is_nominated(s->cache, p->uid) &&
            (evictor_has_job(s->evictor, p->uid) || evictor_awaiting(s->evictor, p->uid))) {
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
ext_rc_t tenants_ext_admit(const sched_row_t *row, pod_set_t *set)
{
    sched_pool_t *P = set->P;
    scheduler_t *s = P->s;
    for (int i = 0; i < set->n; i++)
        if (set->items[i])
            note_once(s, set->items[i]);
    if (set->need <= 0 || !fs_active(s->fs))
        return EXT_NEXT;
    if (limit_room_pending(set))
        return EXT_HOLD;
    double req[FS_NRES];
    char msg[512];
    int rc = admit_set(P, set->items, set->need, req, msg, sizeof(msg));
    if (rc == 0)
        return EXT_NEXT;
    pod_set_step(set, "admission", rc == FS_ADMIT_LIMIT ? "limit" : "quota", "%s", msg);
    /* Only a limit is made room under: a quota of non-preemptible work is
     * not (FS_ADMIT_QUOTA), whatever could be evicted. */
    const char *note = "";
    if (rc == FS_ADMIT_LIMIT && set->kind != SET_SURPLUS && limit_reclaim(set, req, admit_pool(P, set->items[0])))
        note = "; reclaiming under the limit";
    sbuf_t b = { 0 };
    if (set->kind == SET_SURPLUS)
        sbuf_printf(&b, "elastic member of %s (beyond minMember): %s", set->label, msg);
    else if (set->label)
        sbuf_printf(&b, "%s: its minimum of %d pods: %s%s", set->label, set->need, msg, note);
    else
        sbuf_printf(&b, "%s%s", msg, note);
    pod_set_why(set, NULL, b.data);
    return EXT_HOLD;
}

/* ------------------------------------------------------------- reclaim */

int tenants_set_request(scheduler_t *s, pod_t *const *pods, int n, int *tenant, double req[FS_NRES])
{
    if (!fs_active(s->fs) || n <= 0)
        return 0;
    *tenant = tenants_pod_tenant(s, pods[0]);
    memset(req, 0, sizeof(double) * FS_NRES);
    for (int i = 0; i < n; i++) {
        double v[FS_NRES];
        fs_pod_vec(pods[i], v);
        for (int r = 0; r < FS_NRES; r++)
            req[r] += v[r];
    }
    return 1;
}

void tenants_victim_ctx(sched_pool_t *P, pod_t *const *pods, int n, int64_t first_ms, victim_ctx_t *vc)
{
    scheduler_t *s = P->s;
    vc->queues = fs_active(s->fs);
    if (!tenants_set_request(s, pods, n, &vc->tenant, vc->req))
        return;
    vc->prio = pods[0]->priority;
    vc->created_ms = pods[0]->created_ms;
    vc->now_wall = util_wall_ms();
    vc->starving = first_ms > 0 && fs_starving(s->fs, P->id, vc->tenant, first_ms, util_now_ms());
}

/* The index of the job victim k joins among kept[0..k) (each marked
 * minimum[] when a member of its gang's minimum, which goes whole: one job
 * for reclaim), else k. */
static int victim_job(pod_t *const *kept, const int *minimum, const int *jobs, int k)
{
    const char *g = minimum[k] ? gang_of(kept[k]) : NULL;
    for (int j = 0; g && j < k; j++) {
        const char *gj = minimum[j] ? gang_of(kept[j]) : NULL;
        if (gj && strcmp(gj, g) == 0 && strcmp(kept[j]->ns, kept[k]->ns) == 0)
            return jobs[j];
    }
    return k;
}

/* Reclaim's rules over a victim set, by job (fs_victims_ok): a gang's
 * minimum members are one job, a lone pod or an elastic member beyond
 * minMember one of its own (KAI-Scheduler splits a job's victims the same
 * way). Borrowers of vc's pool are left out: a pool takes back what it
 * lent whatever queue the borrower is in (the rule of
 * postfilter_is_victim), so no share of theirs is weighed here. */
static int victims_ok(const victim_ctx_t *vc, pod_t *const *victims, int n)
{
    const char **uids = util_xcalloc((size_t)n + 1, sizeof(*uids));
    pod_t **kept = util_xcalloc((size_t)n + 1, sizeof(*kept));
    int *jobs = util_xcalloc((size_t)n + 1, sizeof(*jobs)), *minimum = util_xcalloc((size_t)n + 1, sizeof(*minimum));
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (pools_home_id(vc->s, victims[i]) != vc->pool_id)
            continue;
        kept[k] = victims[i];
        minimum[k] = gang_of(victims[i]) && gang_member_class(vc->s->gangs, victims[i]) == GANG_MEMBER_MINIMUM;
        jobs[k] = victim_job(kept, minimum, jobs, k);
        uids[k++] = victims[i]->uid;
    }
    int ok = fs_victims_ok(vc->s->fs, vc->pool_id, vc->tenant, vc->req, vc->starving, uids, jobs, k, vc->now_wall);
    free(uids);
    free(kept);
    free(jobs);
    free(minimum);
    return ok;
}

int tenants_filter_candidates(const victim_ctx_t *vc, preempt_candidate_t *cands, int n)
{
    if (!vc->queues)
        return n;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (victims_ok(vc, cands[i].victims, cands[i].nvictims))
            cands[k++] = cands[i];
        else
            preempt_candidate_clear(&cands[i]);
    }
    return k;
}

int tenants_victims_ok(const victim_ctx_t *vc, pod_t *const *victims, int n)
{
    return !vc->queues || victims_ok(vc, victims, n);
}

void tenants_reserve(const victim_ctx_t *vc, pod_t *const *preemptors, int np, pod_t *const *victims, int nv)
{
    if (!vc->queues)
        return;
    scheduler_t *s = vc->s;
    const char **uids = util_xcalloc((size_t)nv + 1, sizeof(*uids));
    for (int i = 0; i < nv; i++)
        uids[i] = victims[i]->uid;
    fs_note_reclaim(s->fs, vc->tenant, uids, nv);
    free(uids);
    /* Until the victims are gone and the preemptors bound, the queues
     * count them as already moved: the next pod of the reclaiming queue
     * must not reclaim the same share again. */
    for (int i = 0; i < nv; i++)
        fs_uncharge(s->fs, victims[i]->uid);
    for (int i = 0; i < np; i++)
        fs_charge_held(s->fs, preemptors[i], tenants_pod_tenant(s, preemptors[i]), vc->pool_id, 0);
}

void tenants_unreserve_preemptor(scheduler_t *s, const pod_t *pod)
{
    cache_pod_state_t st;
    pod_t *cur = cache_get_pod(s->cache, pod->uid, &st);
    if (!cur || st == CPOD_PENDING)
        fs_uncharge(s->fs, pod->uid);
    pod_unref(cur);
}

void tenants_recharge(scheduler_t *s, const pod_t *victim)
{
    cache_pod_state_t st;
    pod_t *cur = cache_get_pod(s->cache, victim->uid, &st);
    if (cur && (st == CPOD_BOUND || st == CPOD_ASSUMED) && !cur->deleting)
        charge_pod(s, cur, charge_pool(s, cur), 0);
    pod_unref(cur);
}

char *tenants_reclaim_note(scheduler_t *s, const pod_t *preemptor, const pod_t *victim)
{
    if (!fs_active(s->fs))
        return NULL;
    char *vq = fs_queue_name(s->fs, tenants_pod_tenant(s, victim));
    char *pq = fs_queue_name(s->fs, tenants_pod_tenant(s, preemptor));
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

/* ------------------------------------------------------------- metrics */

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
    if (fs_active(s->fs))
        fs_each_metric(s->fs, metric_cb, &c);
}

void scheduler_each_queue_counter(
    scheduler_t *s, void (*fn)(void *ud, const char *queue, unsigned long reclaims, unsigned long reclaimed), void *ud)
{
    fs_each_counter(s->fs, fn, ud);
}
