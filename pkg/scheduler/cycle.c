/* cycle.c -- a pool's scheduling thread: pop, filter, score, assume, hand
 * the bind to the binder; on failure run the post-filter (preemption, then
 * borrowing) and give the pod back to its queue. */
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
 * takes room promised to one. Returns ni itself, or a clone the caller
 * frees with node_info_free when *cloned is set. Cache lock held. */
node_info_t *node_with_nominated(scheduler_t *s, const pod_t *pod, node_info_t *ni, int *cloned)
{
    pod_t *const *noms = NULL;
    int nn = cache_nominated_locked(s->cache, ni->name, &noms);
    node_info_t *view = ni;
    *cloned = 0;
    /* Room held for the replacements of pods a consolidation moved. */
    view = consol_view(s, pod, view, cloned);
    if (nn == 0)
        return view;
    int pod_home = pools_home_id(s, pod) == ni->pool;
    const char *gang = gang_of(pod);
    for (int i = 0; i < nn; i++) {
        if (strcmp(noms[i]->uid, pod->uid) == 0)
            continue;
        /* A gang's room is held for the gang: its members do not keep it
         * from one another (a whole-gang simulation sees it free). */
        if (gang && strcmp(noms[i]->ns, pod->ns) == 0 && gang_of(noms[i]) && strcmp(gang_of(noms[i]), gang) == 0)
            continue;
        int nom_home = pools_home_id(s, noms[i]) == ni->pool;
        int counts = nom_home != pod_home ? nom_home : noms[i]->priority >= pod->priority;
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
    *cl = (fw_cluster_t){ .nodes = nodes,
                          .nnodes = n,
                          .index = cache_topo_index(s->cache),
                          .node_lock = sched_lock_node,
                          .lock_ud = s->cache,
                          .volumes = s->volumes };
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
    scheduler_t *s = P->s;
    framework_t *fw = sched_pod_fw(s, pod);
    fw_status_t st;
    memset(d, 0, sizeof(*d));
    cache_interpod_prepare(s->cache, pod);
    cache_rdlock(s->cache);
    d->epoch = cache_interpod_epoch(s->cache);
    fw_cluster_t cl;
    sched_cluster_view(s, &cl);
    int n = cl.nnodes;
    node_info_t *const *nodes = cl.nodes;
    cycle_state_set_cluster(cs, &cl);
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
            fw_diagnosis_free(pd);
        }
        cycle_state_set_cluster(cs, NULL);
        cache_unlock(s->cache);
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
            fw_diagnosis_add(diag, &st);
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
    }
    fw_diagnosis_free(diag);
    free(feasible);
    /* The view is only valid under this lock. */
    cycle_state_set_cluster(cs, NULL);
    cache_unlock(s->cache);
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
    fw_cluster_t cl = { .nodes = nodes, .nnodes = n, .index = cache_topo_index(r->s->cache), .volumes = r->s->volumes };
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
static int has_hard_interpod(const pod_t *p)
{
    const pod_affinity_t *a = p->interpod;
    return a && (a->naff_req > 0 || a->nanti_req > 0 || a->nspread_hard > 0);
}

/* Reserve: account the pod on the node unless the node changed under us in
 * a way that no longer fits. Pool threads reserve concurrently (their nodes
 * are disjoint), see cache_assume; inter-pod constraints follow the rule in
 * cache.h. */
int sched_assume(sched_pool_t *P, cycle_state_t *cs, pod_t *pod, decision_t *d)
{
    refit_t r = { P->s, cs, pod };
    char err[256];
    cache_interpod_t ip = { d->epoch, has_hard_interpod(pod), refit_full };
    if (cache_assume_ex(P->s->cache, pod, d->node, P->id, d->generation, &ip, refit, &r) != 0)
        return 0;
    /* Reserve (VolumeBinding): the volume choice, re-checked on the live
     * store so two pods never take the same PV. */
    if (volumes_reserve(P->s, pod, d->node, err, sizeof(err)) != 0) {
        LOG_D("reserve pod=%s node=%s: volumes: %s", pod->key, d->node, err);
        cache_forget(P->s->cache, pod->uid);
        return 0;
    }
    return 1;
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
 * schedule (bound, deleted, terminal, another scheduler). */
int sched_refresh(scheduler_t *s, queue_item_t *it)
{
    cache_pod_state_t st;
    pod_t *cur = cache_get_pod(s->cache, it->pod->uid, &st);
    if (!cur || st != CPOD_PENDING || !sched_is_ours(s, cur->scheduler_name) || cur->deleting) {
        pod_unref(cur);
        return 0;
    }
    pod_unref(it->pod);
    it->pod = cur;
    return 1;
}

static void hostname_of(void *ud, const node_info_t *ni)
{
    topo_domain_t *d = ud;
    const char *h = ni->node ? labels_get(&ni->node->labels, "kubernetes.io/hostname") : NULL;
    if (h && h[0]) {
        d->keys[0] = util_strdup("kubernetes.io/hostname");
        d->values[0] = util_strdup(h);
        d->n = 1;
    }
}

/* The node a consolidation held for this replacement, as a one-node domain
 * (by its hostname label); 0 when none. */
static int held_node(scheduler_t *s, const pod_t *pod, topo_domain_t *d)
{
    char *node = consol_claim(s, pod);
    if (!node)
        return 0;
    cache_node_visit(s->cache, node, hostname_of, d);
    free(node);
    return d->n > 0;
}

static void schedule_one(sched_pool_t *P, queue_item_t *it)
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
    /* A gang's member takes the whole gang's turn; any other pod first
     * passes the gate that keeps it from delaying a waiting gang. */
    if (gang_of(it->pod) && gang_turn(P, it))
        return;
    if (gang_gate(P, it))
        return;
    if (queues_admit(P, it))
        return;
    cycle_state_t *cs = cycle_state_new();
    decision_t d;
    /* A pod moved by a consolidation comes back where room was held for it. */
    topo_domain_t held = { 0 };
    if (held_node(s, it->pod, &held))
        cycle_state_set_domain(cs, &held);
    sched_decide(P, cs, it->pod, &d);
    if (!d.node && held.n > 0) {
        free(d.message);
        cycle_state_set_domain(cs, NULL);
        sched_decide(P, cs, it->pod, &d);
    }
    topo_domain_free(&held);
    if (d.node && scheduler_fenced(s)) {
        /* The lease went while deciding: nothing leaves this process. */
        queue_done(P->q, it);
        queue_item_free(it);
    } else if (d.node && sched_assume(P, cs, it->pod, &d)) {
        stats_add(s, &s->stats.attempts_scheduled, 1);
        LOG_D("assumed pod=%s node=%s pool=%s%s", it->pod->key, d.node, P->name, it->borrower ? " (borrowed)" : "");
        queue_done(P->q, it);
        binder_submit(s->binder, it, d.node, it->borrower ? P->name : NULL);
    } else if (d.node) {
        /* The node changed between decision and reserve: try again soon. */
        queue_requeue_backoff(P->q, it);
    } else {
        stats_add(s, &s->stats.attempts_unschedulable, 1);
        pf_result_t r = postfilter_run(P, it);
        if (r != PF_MOVED) { /* a moved item belongs to another queue now */
            /* Back from a lender that filled up meanwhile (another borrower
             * won the race): retry after a backoff, not at the next event. */
            int back_from_lender = it->tried_borrow;
            sched_report(P, it, "FailedScheduling", d.message);
            d.message = NULL;
            it->tried_borrow = 0;
            if (back_from_lender)
                queue_requeue_backoff(P->q, it);
            else
                queue_requeue(P->q, it);
        }
    }
    free(d.node);
    free(d.message);
    cycle_state_free(cs);
}

void *pool_thread_main(void *arg)
{
    sched_pool_t *P = arg;
    util_thread_name("pool-%s", P->name);
    LOG_D("pool %s: scheduling thread started", P->name);
    for (;;) {
        queues_refresh(P);
        queue_item_t *it = queue_pop(P->q);
        if (!it)
            break;
        schedule_one(P, it);
    }
    LOG_D("pool %s: scheduling thread stopped", P->name);
    return NULL;
}
