/* cycle.c -- a pool's scheduling thread and the one cycle it runs on every
 * pod set (extension.h): gate, admit, pre-place, then filter, score,
 * assume and reserve each member, hand the binds to the binder; on failure
 * the post-filter rows, and the set goes back to its queue. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"

uint64_t sched_rng_next(uint64_t *x)
{
    /* xorshift64*: enough for tie-breaks, no shared state between pools */
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ULL;
}

/* The node as a pod should see it: pods nominated there (room reserved by
 * a preemption) that rank at least as high as the pod count as present, as
 * kube-scheduler's RunFilterPluginsWithNominatedPods. Ranks follow
 * preemption's: a borrower (a pod whose home is not the node's pool) ranks
 * below every home pod of that pool whatever its priority, so it never
 * takes room promised to one; with Queues, a pod of a queue at or above
 * its fair share never takes room held for another queue's pod. The
 * nominated pods (and the held room) only count: no victim search takes
 * them off a view (preempt_removable). Returns ni itself, or a clone the
 * caller frees with node_info_free when *cloned is set. Cache lock held. */
/* What the rows with a nominee point say of room held for nominee: the
 * first NOMINEE_FREE wins, else any NOMINEE_KEPT, else NOMINEE_ANY. */
static int nominee_say(scheduler_t *s, const sched_ext_t *ext, const pod_t *nominee, const pod_t *pod, int pool,
                       int same_side)
{
    int say = NOMINEE_ANY;
    for (int i = 0; i < s->nnominee_rows; i++) {
        int k = s->nominee_rows[i];
        int r = ext[k].nominee(&s->rows[k], nominee, pod, pool, same_side);
        if (r == NOMINEE_FREE)
            return r;
        if (r == NOMINEE_KEPT)
            say = r;
    }
    return say;
}

node_info_t *node_with_nominated(scheduler_t *s, const pod_t *pod, node_info_t *ni, int *cloned)
{
    pod_t *const *noms = NULL;
    int nn = cache_nominated_locked(s->cache, ni->name, &noms);
    node_info_t *view = ni;
    *cloned = 0;
    /* Room the rows hold for others (a consolidation's movers, a large
     * gang's reservation), in table order. */
    int nrows = 0;
    const sched_ext_t *ext = sched_extensions(&nrows);
    for (int i = 0; i < s->nview_rows; i++) {
        int k = s->view_rows[i];
        view = ext[k].node_view(&s->rows[k], pod, view, cloned);
    }
    if (nn == 0)
        return view;
    int pod_home = pools_home_id(s, pod) == ni->pool;
    for (int i = 0; i < nn; i++) {
        if (strcmp(noms[i]->uid, pod->uid) == 0)
            continue;
        int nom_home = pools_home_id(s, noms[i]) == ni->pool;
        int say = nominee_say(s, ext, noms[i], pod, ni->pool, nom_home == pod_home);
        if (say == NOMINEE_FREE)
            continue;
        /* The core's rule: a home pod's room is kept from a borrower, and
         * among pods of one side from those of no higher priority. */
        int counts = say == NOMINEE_KEPT || (nom_home != pod_home ? nom_home : noms[i]->priority >= pod->priority);
        if (!counts)
            continue;
        if (!*cloned) {
            view = node_info_clone(ni);
            *cloned = 1;
        }
        node_info_add_pod(view, noms[i]);
    }
    return view;
}

int sched_pool_copies_locked(scheduler_t *s, int pool, const pod_t *pod, node_info_t *const *all, int nall,
                             node_info_t **out, resources_t *alloc, resources_t *used, int *tasks)
{
    int n = 0;
    for (int i = 0; i < nall; i++) {
        node_info_t *ni = all[i];
        if (ni->pool != pool || !ni->node)
            continue;
        cache_node_lock(s->cache, ni->name); /* its pool thread may be reserving */
        int cloned = 0;
        node_info_t *view = node_with_nominated(s, pod, ni, &cloned);
        out[n++] = cloned ? view : node_info_clone(ni);
        if (alloc) {
            res_add(alloc, &ni->node->allocatable);
            res_add(used, &ni->requested);
            *tasks += ni->npods;
        }
        cache_node_unlock(s->cache, ni->name);
    }
    return n;
}

/* The nominated pods node_with_nominated appended to the view go into (sign
 * +1) or out of (-1) the PreFilter state too, as kube's AddPod does. */
static void nominated_state(scheduler_t *s, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni,
                            const node_info_t *view, int sign)
{
    for (int i = ni->npods; i < view->npods; i++) {
        if (sign > 0)
            framework_add_pod(sched_pod_fw(s, pod), cs, pod, view->pods[i], view);
        else
            framework_remove_pod(sched_pod_fw(s, pod), cs, pod, view->pods[i], view);
    }
}

static int filter_node(scheduler_t *s, cycle_state_t *cs, const pod_t *pod, node_info_t *ni, fw_status_t *st)
{
    int cloned = 0;
    node_info_t *view = node_with_nominated(s, pod, ni, &cloned);
    fw_status_reset(st);
    if (cloned)
        nominated_state(s, cs, pod, ni, view, +1);
    int rc = framework_filter(sched_pod_fw(s, pod), cs, pod, view, st);
    if (cloned) {
        nominated_state(s, cs, pod, ni, view, -1);
        node_info_free(view);
        /* As kube's RunFilterPluginsWithNominatedPods: it must fit without
         * them too (pod affinity may hold only thanks to a nominated pod). */
        if (rc == FW_SUCCESS) {
            fw_status_reset(st);
            rc = framework_filter(sched_pod_fw(s, pod), cs, pod, ni, st);
        }
    }
    return rc;
}

static void sched_lock_node(void *ud, const char *node, int lock)
{
    if (lock)
        cache_node_lock(ud, node);
    else
        cache_node_unlock(ud, node);
}

void sched_cluster_view(scheduler_t *s, fw_cluster_t *cl)
{
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(s->cache, &n);
    *cl = s->row_cluster;
    cl->nodes = nodes;
    cl->nnodes = n;
    cl->index = cache_topo_index(s->cache);
    cl->node_lock = sched_lock_node;
    cl->lock_ud = s->cache;
}

/* The pool's node count, counted again only when the node set moved: a
 * walk of every node per pod is a cache miss per node (4% of the CPU at
 * 10,000 nodes). Cache read lock held. */
static int pool_nodes(sched_pool_t *P, node_info_t *const *nodes, int n)
{
    uint64_t ver = cache_nodes_version_locked(P->s->cache);
    if (ver != P->nodes_ver) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (nodes[i]->pool == P->id && nodes[i]->node)
                k++;
        P->nodes_n = k;
        P->nodes_ver = ver;
    }
    return P->nodes_n;
}

/* PreFilter, then Filter and Score over the pool's nodes, all under the
 * read lock: PreFilter may read the whole cluster (fw_cluster_t). */
void sched_decide(sched_pool_t *P, cycle_state_t *cs, const pod_t *pod, decision_t *d)
{
    sched_decide_diag(P, cs, pod, d, NULL);
}

/* A decision's start: the cache read lock taken (held until decide_end),
 * the cluster view in cs, d cleared. */
static void decide_begin(scheduler_t *s, cycle_state_t *cs, const pod_t *pod, decision_t *d, fw_cluster_t *cl)
{
    memset(d, 0, sizeof(*d));
    cache_interpod_prepare(s->cache, pod);
    cache_rdlock(s->cache);
    d->epoch = cache_interpod_epoch(s->cache);
    sched_cluster_view(s, cl);
    cycle_state_set_cluster(cs, cl);
}

/* The view is only valid under the lock: it leaves cs with it. */
static void decide_end(scheduler_t *s, cycle_state_t *cs)
{
    cycle_state_set_cluster(cs, NULL);
    cache_unlock(s->cache);
}

void sched_decide_diag(sched_pool_t *P, cycle_state_t *cs, const pod_t *pod, decision_t *d, fw_diagnosis_t **keep)
{
    scheduler_t *s = P->s;
    framework_t *fw = sched_pod_fw(s, pod);
    fw_status_t st;
    fw_cluster_t cl;
    decide_begin(s, cs, pod, d, &cl);
    int n = cl.nnodes;
    node_info_t *const *nodes = cl.nodes;
    fw_status_reset(&st);
    if (framework_pre_filter(fw, cs, pod, &st) != FW_SUCCESS) {
        if (st.code == FW_ERROR || st.nreasons == 0) {
            sbuf_t b = { 0 };
            sbuf_printf(&b, "0/%d nodes are available: %s.", n, st.nreasons ? st.reasons[0] : "prefilter failed");
            d->message = b.data;
        } else {
            /* kube gives every node PreFilter's status: "0/3 nodes are
             * available: 3 pod has unbound immediate PersistentVolumeClaims." */
            fw_diagnosis_t *pd = fw_diagnosis_new();
            for (int k = 0; k < n; k++)
                fw_diagnosis_add(pd, &st);
            d->message = fw_diagnosis_message(pd, n);
            if (keep)
                *keep = pd;
            else
                fw_diagnosis_free(pd);
        }
        decide_end(s, cs);
        return;
    }
    int pool_n = pool_nodes(P, nodes, n);
    d->pool_nodes = pool_n;
    int want = framework_num_feasible_to_find(fw, pool_n);
    node_info_t **feasible = util_xcalloc((size_t)(pool_n ? pool_n : 1), sizeof(*feasible));
    int nf = 0, i = 0;
    fw_diagnosis_t *diag = fw_diagnosis_new();
    unsigned start = n ? P->next_start % (unsigned)n : 0;
    for (i = 0; i < n && nf < want; i++) {
        node_info_t *ni = nodes[(start + (unsigned)i) % (unsigned)n];
        if (ni->pool != P->id || !ni->node)
            continue;
        if (filter_node(s, cs, pod, ni, &st) == FW_SUCCESS)
            feasible[nf++] = ni;
        else
            fw_diagnosis_add_node(diag, &st, ni->name);
    }
    /* Next search starts where this one stopped, spreading work like
     * kube-scheduler's nextStartNodeIndex. */
    P->next_start = n ? (start + (unsigned)i) % (unsigned)n : 0;
    if (nf > 0) {
        int64_t *scores = util_xcalloc((size_t)nf, sizeof(*scores));
        framework_score(fw, cs, pod, feasible, nf, scores);
        int best = 0, ties = 1;
        for (int k = 1; k < nf; k++) {
            if (scores[k] > scores[best]) {
                best = k;
                ties = 1;
            } else if (scores[k] == scores[best] && sched_rng_next(&P->rng) % (uint64_t)++ties == 0)
                best = k;
        }
        d->node = util_strdup(feasible[best]->name);
        d->generation = feasible[best]->generation;
        free(scores);
    } else {
        d->message = fw_diagnosis_message(diag, pool_n);
        if (keep) {
            /* A decision record keeps why (trace.c); the names are the cache's. */
            fw_diagnosis_own_examples(diag);
            *keep = diag;
            diag = NULL;
        }
    }
    fw_diagnosis_free(diag);
    free(feasible);
    decide_end(s, cs);
}

void sched_decide_on(sched_pool_t *P, cycle_state_t *cs, const pod_t *pod, const char *node, decision_t *d)
{
    scheduler_t *s = P->s;
    framework_t *fw = sched_pod_fw(s, pod);
    fw_status_t st;
    fw_cluster_t cl;
    decide_begin(s, cs, pod, d, &cl);
    d->pool_nodes = 1;
    node_info_t *ni = cache_node_locked(s->cache, node);
    fw_status_reset(&st);
    if (!ni || !ni->node || ni->pool != P->id) {
        d->message = util_strdup("its nominated node is gone or left the pool");
    } else if (framework_pre_filter(fw, cs, pod, &st) != FW_SUCCESS || filter_node(s, cs, pod, ni, &st) != FW_SUCCESS) {
        sbuf_t b = { 0 };
        sbuf_printf(&b, "0/1 nodes are available: node %s, its nominated node: %s.", node,
                    st.nreasons ? st.reasons[0] : "does not fit");
        d->message = b.data;
    } else {
        d->node = util_strdup(ni->name);
        d->generation = ni->generation;
    }
    decide_end(s, cs);
}

/* A decision record's best nodes: every node of P filtered (no early
 * stop), the feasible ones scored plugin by plugin, the best max kept. */
int sched_top_nodes(sched_pool_t *P, const pod_t *pod, int max, char **names, int64_t *totals, int64_t *per_plugin,
                    const char **plugins, int maxp, int *nplugins)
{
    scheduler_t *s = P->s;
    framework_t *fw = sched_pod_fw(s, pod);
    fw_status_t st;
    int found = 0;
    *nplugins = 0;
    cycle_state_t *cs = cycle_state_new();
    cache_interpod_prepare(s->cache, pod);
    cache_rdlock(s->cache);
    fw_cluster_t cl;
    sched_cluster_view(s, &cl);
    cycle_state_set_cluster(cs, &cl);
    fw_status_reset(&st);
    if (framework_pre_filter(fw, cs, pod, &st) == FW_SUCCESS) {
        node_info_t **feasible = util_xcalloc((size_t)cl.nnodes + 1, sizeof(*feasible));
        int nf = 0;
        for (int i = 0; i < cl.nnodes; i++) {
            node_info_t *ni = cl.nodes[i];
            if (ni->pool == P->id && ni->node && filter_node(s, cs, pod, ni, &st) == FW_SUCCESS)
                feasible[nf++] = ni;
        }
        if (nf > 0) {
            int64_t *tot = util_xcalloc((size_t)nf, sizeof(*tot));
            int64_t *pp = util_xcalloc((size_t)nf * (size_t)maxp + 1, sizeof(*pp));
            int np = framework_score_explain(fw, cs, pod, feasible, nf, tot, pp, plugins, maxp);
            *nplugins = np;
            /* selection of the best max, ties by name order (stable for a reader) */
            char *taken = util_xcalloc((size_t)nf, 1);
            for (found = 0; found < max && found < nf; found++) {
                int b = -1;
                for (int i = 0; i < nf; i++)
                    if (!taken[i] && (b < 0 || tot[i] > tot[b] ||
                                      (tot[i] == tot[b] && strcmp(feasible[i]->name, feasible[b]->name) < 0)))
                        b = i;
                taken[b] = 1;
                names[found] = util_strdup(feasible[b]->name);
                totals[found] = tot[b];
                for (int p = 0; p < np; p++)
                    per_plugin[found * maxp + p] = pp[p * nf + b];
            }
            free(taken);
            free(pp);
            free(tot);
        }
        free(feasible);
    }
    cycle_state_set_cluster(cs, NULL);
    cache_unlock(s->cache);
    cycle_state_free(cs);
    return found;
}

typedef struct refit {
    scheduler_t *s;
    cycle_state_t *cs;
    const pod_t *pod;
} refit_t;

static int refit(void *ud, node_info_t *ni)
{
    refit_t *r = ud;
    fw_status_t st;
    return filter_node(r->s, r->cs, r->pod, ni, &st) == FW_SUCCESS;
}

/* The exclusive re-check (cache write lock held): PreFilter and Filter
 * from scratch, against every pool's pods as they are now. */
static int refit_full(void *ud, node_info_t *ni)
{
    refit_t *r = ud;
    fw_status_t st;
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(r->s->cache, &n);
    /* Write lock held: no reserver runs, no node locking needed. */
    fw_cluster_t cl = r->s->row_cluster;
    cl.nodes = nodes;
    cl.nnodes = n;
    cl.index = cache_topo_index(r->s->cache);
    cycle_state_t *cs = cycle_state_new();
    cycle_state_set_cluster(cs, &cl);
    fw_status_reset(&st);
    int ok = framework_pre_filter(sched_pod_fw(r->s, r->pod), cs, r->pod, &st) == FW_SUCCESS &&
             filter_node(r->s, cs, r->pod, ni, &st) == FW_SUCCESS;
    cycle_state_free(cs);
    return ok;
}

/* Hard inter-pod constraints: the pod's placement depends on other pools'
 * pods, so it reserves exclusively (see cache.h). */
int sched_has_hard_interpod(const pod_t *p)
{
    return pod_affinity_hard(p->interpod);
}

/* Reserve: account the pod on the node unless the node changed under us in
 * a way that no longer fits, then every row's reserve (a volume choice,
 * re-checked on the live store so two pods never take the same PV). Pool
 * threads reserve concurrently (their nodes are disjoint), see
 * cache_assume; inter-pod constraints follow the rule in cache.h. */
int sched_assume(sched_pool_t *P, cycle_state_t *cs, pod_t *pod, decision_t *d)
{
    refit_t r = { P->s, cs, pod };
    char err[256];
    cache_interpod_t ip = { d->epoch, sched_has_hard_interpod(pod), refit_full };
    if (cache_assume_ex(P->s->cache, pod, d->node, P->id, d->generation, &ip, refit, &r) != 0)
        return 0;
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < n; i++) {
        if (!ext[i].reserve || ext[i].reserve(&P->s->rows[i], pod, d->node, err, sizeof(err)) == 0)
            continue;
        LOG_D("reserve pod=%s node=%s: %s: %s", pod->key, d->node, ext[i].name, err);
        while (--i >= 0)
            if (ext[i].reserve && ext[i].unreserve)
                ext[i].unreserve(&P->s->rows[i], pod);
        cache_unassume(P->s->cache, pod->uid);
        return 0;
    }
    return 1;
}

/* Undoes sched_assume: every row's unreserve, then the cache forgets
 * (the pod's nomination, if it held one, comes back). */
void sched_unassume(sched_pool_t *P, const pod_t *pod)
{
    sched_rows_unreserve(P->s, pod);
    cache_unassume(P->s->cache, pod->uid);
}

void sched_report(sched_pool_t *P, queue_item_t *it, const char *reason, char *message)
{
    scheduler_t *s = P->s;
    int changed = !it->last_message || strcmp(it->last_message, message) != 0;
    /* One event per new reason, and a reminder every 10 attempts, so a
     * thousand pending pods do not flood the API server. */
    if (changed || it->attempts % 10 == 0) {
        writer_pod_event(s->writer, it->pod, "Warning", reason, message);
        if (changed)
            writer_unschedulable_condition(s->writer, it->pod, message);
    }
    if (changed)
        LOG_I("unschedulable pod=%s pool=%s: %s", it->pod->key, P->name, message);
    else
        LOG_D("still unschedulable pod=%s pool=%s", it->pod->key, P->name);
    free(it->last_message);
    it->last_message = message;
}

/* Refreshes the item's pod from the cache. 0 if it is no longer ours to
 * schedule (bound, deleted, terminal, another scheduler) or a pre_enqueue
 * row keeps it out (held now: its release enqueues it anew). */
int sched_refresh(scheduler_t *s, queue_item_t *it)
{
    cache_pod_state_t st;
    pod_t *cur = cache_get_pod(s->cache, it->pod->uid, &st);
    if (!cur || st != CPOD_PENDING || !sched_is_ours(s, cur->scheduler_name) || cur->deleting ||
        gates_keep_out(s, cur)) {
        pod_unref(cur);
        return 0;
    }
    pod_unref(it->pod);
    it->pod = cur;
    return 1;
}

/* ------------------------------------------------------------ the cycle */

void pod_set_init(pod_set_t *set, sched_pool_t *P, set_kind_t kind, queue_item_t *it)
{
    memset(set, 0, sizeof(*set));
    set->P = P;
    set->pool_id = P->id;
    set->pool_name = P->name;
    set->records = P->s->explain != NULL;
    set->kind = kind;
    set->items = util_xcalloc(2, sizeof(*set->items));
    set->items[0] = it;
    set->n = set->need = 1;
    set->reason = "FailedScheduling";
}

void pod_set_why(pod_set_t *set, const char *reason, char *msg)
{
    free(set->why);
    set->why = msg;
    set->reason = reason ? reason : "FailedScheduling";
}

pod_t **pod_set_pods(const pod_set_t *set)
{
    pod_t **pods = util_xcalloc((size_t)set->need + 1, sizeof(*pods));
    for (int i = 0; i < set->need; i++)
        pods[i] = set->items[i]->pod;
    return pods;
}

void pod_set_clear(pod_set_t *set)
{
    /* The cycle gives every item on before it ends; one left here would be
     * a pod no queue holds: it goes back rather than being lost. */
    for (int i = 0; i < set->n; i++)
        if (set->items[i]) {
            LOG_W("pod=%s left in its set (%d); given back", set->items[i]->pod->key, (int)set->outcome);
            queue_requeue_backoff(set->P->q, set->items[i]);
        }
    free(set->items);
    free(set->label);
    free(set->group.ns);
    free(set->group.name);
    free(set->group.key);
    free(set->group.priority_class);
    free(set->why);
    free(set->placed_msg);
    free(set->wait_note);
    free(set->place_note);
    free(set->only_node);
    trace_set_free(set);
    fw_node_match_free(&set->match);
    memset(set, 0, sizeof(*set));
}

enum { PT_GATE, PT_ADMIT, PT_PRE_PLACE, PT_POST_FILTER };

static ext_rc_t (*row_point(const sched_ext_t *e, int pt))(const sched_row_t *, pod_set_t *)
{
    switch (pt) {
    case PT_GATE: return e->gate;
    case PT_ADMIT: return e->admit;
    case PT_PRE_PLACE: return e->pre_place;
    default: return e->post_filter;
    }
}

/* Runs point pt of every row in order until one says other than EXT_NEXT. */
static ext_rc_t run_rows(pod_set_t *set, int pt)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < n; i++) {
        ext_rc_t (*fn)(const sched_row_t *, pod_set_t *) = row_point(&ext[i], pt);
        if (!fn)
            continue;
        ext_rc_t rc = fn(&set->P->s->rows[i], set);
        if (rc != EXT_NEXT) {
            LOG_D("pod=%s: %s says %d", set->items[0] ? set->items[0]->pod->key : "(moved)", ext[i].name, (int)rc);
            return rc;
        }
    }
    return EXT_NEXT;
}

ext_rc_t sched_post_filter(pod_set_t *set)
{
    return run_rows(set, PT_POST_FILTER);
}

/* Every item still in the set goes back to P's queue; msg (may be NULL:
 * a race, said nowhere) is each member's reason and every row hears it. */
static void set_give_back(pod_set_t *set, const char *msg)
{
    sched_pool_t *P = set->P;
    if (msg) {
        int n = 0;
        const sched_ext_t *ext = sched_extensions(&n);
        for (int i = 0; i < n; i++)
            if (ext[i].report)
                ext[i].report(&P->s->rows[i], set, msg);
    }
    for (int i = 0; i < set->n; i++) {
        queue_item_t *it = set->items[i];
        if (!it)
            continue;
        if (msg)
            sched_report(P, it, set->reason, util_strdup(msg));
        it->round_marks = 0; /* the rows' marks for this try */
        if (set->backoff)
            queue_requeue_backoff(P->q, it);
        else if (set->wake_wall_ms > 0)
            /* One ms past the wall time: both clocks count whole ms, and a
             * pop inside the last one would still see the pod protected,
             * fail, and add a backoff step (4 s, not 2, after its victim). */
            queue_requeue_at(P->q, it, util_now_ms() + (set->wake_wall_ms - util_wall_ms()) + 1);
        else
            queue_requeue(P->q, it);
        set->items[i] = NULL;
    }
}

/* Fenced, or gone: nothing leaves this process. */
static void set_drop(pod_set_t *set)
{
    for (int i = 0; i < set->n; i++)
        if (set->items[i]) {
            queue_done(set->P->q, set->items[i]);
            queue_item_free(set->items[i]);
            set->items[i] = NULL;
        }
    set->outcome = SET_DROPPED;
}

enum { PLACE_OK, PLACE_FAIL, PLACE_RACE, PLACE_FENCED };

/* The set's first need members, all or nothing: each decided with the
 * ones before it assumed; the first that fails undoes them all. nodes[i]:
 * member i's node (owned) when PLACE_OK. */
static int set_place(pod_set_t *set, char **nodes)
{
    sched_pool_t *P = set->P;
    scheduler_t *s = P->s;
    int k, rc = PLACE_OK;
    for (k = 0; k < set->need; k++) {
        pod_t *pod = set->items[k]->pod;
        cycle_state_t *cs = cycle_state_new();
        if (set->has_match)
            cycle_state_set_match(cs, &set->match);
        decision_t d;
        fw_diagnosis_t *diag = NULL;
        if (set->only_node)
            sched_decide_on(P, cs, pod, set->only_node, &d);
        else
            sched_decide_diag(P, cs, pod, &d, &diag);
        if (!d.node && !set->only_node && set->has_match && set->match_soft) {
            free(d.message);
            fw_diagnosis_free(diag);
            diag = NULL;
            cycle_state_set_match(cs, NULL);
            sched_decide_diag(P, cs, pod, &d, &diag);
        }
        trace_set_diag(set, diag, d.pool_nodes); /* takes diag */
        if (d.node && scheduler_fenced(s))
            rc = PLACE_FENCED;
        else if (d.node && sched_assume(P, cs, pod, &d))
            nodes[k] = util_strdup(d.node);
        else if (d.node)
            rc = PLACE_RACE; /* the node changed between decision and reserve */
        else
            rc = PLACE_FAIL;
        if (rc == PLACE_FAIL)
            pod_set_why(set, "FailedScheduling", d.message);
        else
            free(d.message);
        free(d.node);
        cycle_state_free(cs);
        if (rc != PLACE_OK)
            break;
    }
    set->fits = k;
    if (rc != PLACE_OK)
        for (int i = 0; i < k; i++) {
            sched_unassume(P, set->items[i]->pod);
            free(nodes[i]);
            nodes[i] = NULL;
        }
    return rc;
}

/* Placed: the binds go out, then every row's commit. */
static void set_commit(pod_set_t *set, char **nodes)
{
    sched_pool_t *P = set->P;
    scheduler_t *s = P->s;
    trace_set_placed(set);
    for (int i = 0; i < set->need; i++) {
        queue_item_t *it = set->items[i];
        stats_add(s, &s->stats.attempts_scheduled, 1);
        LOG_D("assumed pod=%s node=%s pool=%s%s", it->pod->key, nodes[i], P->name, it->borrower ? " (borrowed)" : "");
        /* Placed elsewhere than the room it was promised: pods that saw
         * that room taken (node_with_nominated) may use it now. */
        if (cache_left_nomination(s->cache, it->pod->uid, nodes[i]))
            sched_event(s, SCHED_EV_NOMINATION_DROPPED, it->pod, NULL, "NominationDropped");
        queue_done(P->q, it);
        binder_submit(s->binder, it, nodes[i], it->borrower ? P->name : NULL);
        set->items[i] = NULL;
    }
    set->outcome = SET_PLACED;
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < n; i++)
        if (ext[i].commit)
            ext[i].commit(&P->s->rows[i], set);
}

/* The message a set that did not fit is given back with (caller frees). */
static char *fail_message(const pod_set_t *set)
{
    const char *why = set->why ? set->why : "no node fits";
    sbuf_t b = { 0 };
    if (!set->label)
        sbuf_printf(&b, "%s", why);
    else if (set->kind == SET_SURPLUS)
        sbuf_printf(&b, "elastic member of %s (beyond minMember): %s", set->label, why);
    else
        sbuf_printf(&b, "%s: %d/%d members placeable; %s", set->label, set->placed + set->fits, set->min, why);
    if (set->place_note)
        sbuf_printf(&b, "; %s", set->place_note);
    return b.data;
}

/* The post-filter rows' note of what the set waits for, after msg. */
static char *with_wait_note(const pod_set_t *set, char *msg)
{
    if (!set->wait_note || set->outcome == SET_ROOM || set->outcome == SET_MOVED)
        return msg;
    size_t n = strlen(msg);
    if (n > 0 && msg[n - 1] == '.')
        msg[n - 1] = '\0'; /* "...: 4 Insufficient cpu; preemption: ..." */
    sbuf_t b = { 0 };
    sbuf_printf(&b, "%s; %s", msg, set->wait_note);
    free(msg);
    return b.data;
}

/* A surplus member makes no room, so a nomination it carries is room held
 * for nobody: one made while it was in its gang's minimum, which was then
 * placed with other members, or restored from its status after a restart
 * (composition seed 641810842). It goes, as the preemption row drops the
 * nomination of a set that made no room. */
static void surplus_drop_nominations(pod_set_t *set)
{
    for (int i = 0; i < set->n; i++)
        if (set->items[i])
            postfilter_drop_nomination(set->P->s, set->items[i]->pod);
}

/* Did not fit: the post-filter rows in order (a surplus member displaces
 * nobody and goes nowhere: it ranks behind), then the set waits. */
static void set_failed(pod_set_t *set)
{
    scheduler_t *s = set->P->s;
    stats_add(s, &s->stats.attempts_unschedulable, (unsigned long)(set->need > 0 ? set->need : 1));
    char *msg = fail_message(set);
    set->outcome = SET_FAILED;
    if (set->kind == SET_SURPLUS)
        surplus_drop_nominations(set);
    else if (sched_post_filter(set) == EXT_DONE && set->outcome != SET_MOVED)
        set->outcome = SET_ROOM;
    msg = with_wait_note(set, msg);
    trace_set_done(set, msg);
    if (set->outcome != SET_MOVED) {
        /* A row's round mark: the item came back from a try elsewhere (a
         * lender that filled up meanwhile, another borrower having won the
         * race): retry after a backoff, not at the next event. */
        for (int i = 0; i < set->n; i++)
            if (set->items[i] && set->items[i]->round_marks)
                set->backoff = 1;
        set_give_back(set, msg);
    }
    free(msg);
}

static void run_set(pod_set_t *set);

/* A placed minimum's elastic members, each a set of one behind it. */
static void place_surplus(pod_set_t *min)
{
    for (int i = min->need; i < min->n; i++) {
        queue_item_t *it = min->items[i];
        if (!it)
            continue;
        min->items[i] = NULL;
        pod_set_t one;
        pod_set_init(&one, min->P, SET_SURPLUS, it);
        one.label = min->label ? util_strdup(min->label) : NULL;
        one.min = min->min;
        one.parent = min;
        run_set(&one);
        pod_set_clear(&one);
    }
}

static void run_set(pod_set_t *set)
{
    ext_rc_t rc = run_rows(set, PT_GATE);
    if (rc == EXT_NEXT && set->outcome == SET_OPEN)
        rc = run_rows(set, PT_ADMIT);
    if (rc == EXT_NEXT && set->outcome == SET_OPEN)
        rc = run_rows(set, PT_PRE_PLACE);
    if (set->outcome != SET_OPEN) {
        /* a row took the items (dropped or moved them) */
    } else if (rc == EXT_HOLD) {
        set->outcome = SET_HELD;
        char *msg = with_wait_note(set, util_strdup(set->why ? set->why : "held"));
        trace_set_done(set, msg);
        set_give_back(set, msg);
        free(msg);
    } else if (rc != EXT_NEXT) {
        set_failed(set);
    } else {
        char **nodes = util_xcalloc((size_t)set->need + 1, sizeof(*nodes));
        int pr = set_place(set, nodes);
        if (pr == PLACE_OK) {
            set_commit(set, nodes);
            place_surplus(set);
        } else if (pr == PLACE_FENCED) {
            set_drop(set);
        } else if (pr == PLACE_RACE) {
            set->backoff = 1;
            set->outcome = SET_FAILED;
            set_give_back(set, NULL);
        } else {
            set_failed(set);
        }
        for (int i = 0; i < set->need; i++)
            free(nodes[i]);
        free(nodes);
    }
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < n; i++)
        if (ext[i].end)
            ext[i].end(&set->P->s->rows[i], set);
}

void sched_schedule_item(sched_pool_t *P, queue_item_t *it)
{
    scheduler_t *s = P->s;
    if (scheduler_fenced(s) || !sched_refresh(s, it)) {
        queue_done(P->q, it);
        queue_item_free(it);
        return;
    }
    /* A home pod found in another pool's queue (its pool appeared since)
     * goes home. */
    int home = pools_home_id(s, it->pod);
    if (!it->borrower && home != P->id) {
        sched_pool_t *H = pools_get(s, home);
        if (H) {
            queue_done(P->q, it);
            queue_push_item(H->q, it);
            return;
        }
    }
    /* A constraint ai-scheduler only approximates is said, once. */
    if (it->attempts == 0 && it->pod->interpod && it->pod->interpod->warning)
        writer_pod_event(s->writer, it->pod, "Warning", "UnsupportedConstraint", it->pod->interpod->warning);
    pod_set_t set;
    pod_set_init(&set, P, SET_LONE, it);
    run_set(&set);
    pod_set_clear(&set);
}

int sched_pool_step(sched_pool_t *P)
{
    sched_rows_tick(P);
    queue_item_t *it = queue_pop_timeout(P->q, 0);
    if (!it)
        return 0;
    sched_schedule_item(P, it);
    return 1;
}

void *pool_thread_main(void *arg)
{
    sched_pool_t *P = arg;
    util_thread_name("pool-%s", P->name);
    LOG_D("pool %s: scheduling thread started", P->name);
    for (;;) {
        sched_rows_tick(P);
        queue_item_t *it = queue_pop(P->q);
        if (!it)
            break;
        sched_schedule_item(P, it);
    }
    LOG_D("pool %s: scheduling thread stopped", P->name);
    return NULL;
}
