/* postfilter.c -- when a pod does not fit its pool: preempt inside the pool
 * first (borrowers, then lower-priority home pods), then borrow from the
 * sharing pool with the most idle units of the pod's scarcest requested
 * kind, then fewest tasks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/preempt_eval.h"
#include "util/log.h"
#include "util/util.h"

/* Victim ranks, lowest evicted first: RANK_SCALE x priority, plus one for
 * a pod that keeps its gang at minMember (of two pods of one priority, the
 * one whose eviction does not take a whole gang with it goes). Elastic
 * gang surplus drops below every home pod that is not surplus, and
 * borrowers below every home pod (reclaim takes their surplus first). */
#define RANK_SCALE          4
#define SURPLUS_RANK_SHIFT  (((int64_t)1) << 36)
#define BORROWER_RANK_SHIFT (((int64_t)1) << 38)

static int64_t victim_rank(scheduler_t *s, const pod_t *victim)
{
    int64_t rank = (int64_t)sched_pod_priority(s, victim) * RANK_SCALE;
    if (gang_of(victim)) {
        int cls = gang_member_class(s->gangs, victim);
        if (cls == GANG_MEMBER_SURPLUS)
            rank -= SURPLUS_RANK_SHIFT;
        else if (cls == GANG_MEMBER_MINIMUM)
            rank += 1;
    }
    return rank;
}

/* The victim rules without the minimum runtime: 1 with *kind (a
 * FS_MINRT_ kind) when victim may go for preemptor. */
static int victim_by_rules(const pod_t *victim, const pod_t *preemptor, victim_ctx_t *vc, int64_t *rank, int *kind)
{
    *kind = FS_MINRT_PREEMPT;
    if (!sched_is_ours(vc->s, victim->scheduler_name))
        return 0; /* not ours to evict */
    if (victim->deleting || strcmp(victim->uid, preemptor->uid) == 0)
        return 0;
    /* Asked to checkpoint for another preemptor: already on its way out. */
    if (evictor_requested(vc->s->evictor, victim->uid))
        return 0;
    /* A GPU reservation goes with its fractions, never as a victim. */
    if (gpu_is_reservation(victim))
        return 0;
    if (pools_home_id(vc->s, victim) != vc->pool_id) {
        *rank = victim_rank(vc->s, victim) - BORROWER_RANK_SHIFT;
        *kind = FS_MINRT_RECLAIM; /* the lender takes its room back */
        return 1;
    }
    if (vc->queues) {
        /* With queues, priority preempts only inside a queue; across
         * queues only reclaim's rules take a pod (fairshare.h). */
        int cross = 0;
        int in_gang = gang_of(victim) && gang_member_class(vc->s->gangs, victim) == GANG_MEMBER_MINIMUM;
        if (fs_may_reclaim(vc->s->fs, vc->pool_id, vc->tenant, vc->req, vc->starving, vc->prio, vc->created_ms,
                           victim->uid, in_gang, vc->now_wall, &cross)) {
            *rank = victim_rank(vc->s, victim);
            *kind = cross ? FS_MINRT_RECLAIM : FS_MINRT_PREEMPT;
            return 1;
        }
        if (cross)
            return 0;
    }
    int32_t by = preemptor->priority;
    if (vc->has_gang_prio && vc->gang_prio > by)
        by = vc->gang_prio;
    if (sched_pod_priority(vc->s, victim) < by) {
        *rank = victim_rank(vc->s, victim);
        return 1;
    }
    return 0;
}

int postfilter_is_victim(const pod_t *victim, const pod_t *preemptor, void *ud, int64_t *rank)
{
    victim_ctx_t *vc = ud;
    int kind;
    if (!victim_by_rules(victim, preemptor, vc, rank, &kind))
        return 0;
    /* Young pods (and a frozen gang's surplus) are kept, and noted: the
     * preemptor's message names when the first of them may go. */
    int64_t now = vc->now_wall ? vc->now_wall : util_wall_ms();
    return !minrt_check(vc->s, victim, kind, now, vc->prot);
}

int postfilter_candidates_wanted(int nodes)
{
    int k = nodes / 10;
    return k < 100 ? 100 : k;
}

/* A preemptor already nominated to a node where victims are still
 * terminating waits for them rather than preempting again. */
int postfilter_waiting_for_victims(scheduler_t *s, const pod_t *pod)
{
    if (s->evictor && evictor_awaiting(s->evictor, pod->uid))
        return 1;
    const char *node = pod->nominated_node;
    if (!node || !node[0])
        return 0;
    int waiting = 0;
    cache_rdlock(s->cache);
    node_info_t *ni = cache_node_locked(s->cache, node);
    if (ni)
        cache_node_lock(s->cache, node);
    for (int i = 0; ni && i < ni->npods; i++)
        if (ni->pods[i]->deleting && ni->pods[i]->priority < pod->priority)
            waiting = 1;
    if (ni)
        cache_node_unlock(s->cache, node);
    cache_unlock(s->cache);
    return waiting;
}

/* A set of one made of pod (preempt_eval): 1 when room is reserved (or
 * victims are on their way out), 0 when no node can be freed. */
int postfilter_preempt(sched_pool_t *P, pod_t *pod, int64_t first_ms)
{
    return postfilter_preempt_noted(P, pod, first_ms, NULL);
}

int postfilter_preempt_noted(sched_pool_t *P, pod_t *pod, int64_t first_ms, minrt_note_t *prot)
{
    pe_request_t r = { .P = P, .pods = &pod, .need = 1, .first_ms = first_ms, .prot = prot };
    pe_outcome_t out;
    return preempt_eval(&r, &out);
}

/* The pod gave up the room it was promised (it found none by preemption,
 * or it goes to borrow): drop the nomination, here and on the API. */
void postfilter_drop_nomination(scheduler_t *s, const pod_t *pod)
{
    /* Lower-priority pods saw the room taken (node_with_nominated). */
    if (cache_clear_nomination(s->cache, pod->uid))
        sched_event(s, SCHED_EV_NOMINATION_DROPPED, pod, NULL, "NominationDropped");
    tenants_unreserve_preemptor(s, pod);
    if (pod->nominated_node && pod->nominated_node[0])
        writer_nominate(s->writer, pod, NULL);
}

/* --- borrowing ------------------------------------------------------------ */

typedef struct lender_score {
    int64_t idle; /* free amount of the pod's scarcest requested kind */
    int tasks;
    int fits;
} lender_score_t;

static int64_t free_of(int64_t alloc, int64_t used)
{
    return alloc > used ? alloc - used : 0;
}

/* Design 002: "the sharing pool with the most idle resources": the absolute
 * free amount of the kind the pod needs most rarely, GPU, else CPU, else
 * memory. A fraction would drain a small empty pool before a large
 * half-empty one. */
int64_t lender_idle(const resources_t *alloc, const resources_t *used, const resources_t *req)
{
    if (res_get_scalar(req, RES_GPU) > 0)
        return free_of(res_get_scalar(alloc, RES_GPU), res_get_scalar(used, RES_GPU));
    if (req->milli_cpu > 0 || req->memory == 0)
        return free_of(alloc->milli_cpu, used->milli_cpu);
    return free_of(alloc->memory, used->memory);
}

int lender_better(int64_t idle_a, int tasks_a, int64_t idle_b, int tasks_b)
{
    return idle_a > idle_b || (idle_a == idle_b && tasks_a < tasks_b);
}

static void score_lender(scheduler_t *s, const sched_pool_t *L, const pod_t *pod, cycle_state_t *cs,
                         lender_score_t *out)
{
    resources_t alloc, used;
    res_zero(&alloc);
    res_zero(&used);
    memset(out, 0, sizeof(*out));
    fw_status_t st;
    cache_rdlock(s->cache);
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(s->cache, &n);
    for (int i = 0; i < n; i++) {
        node_info_t *ni = nodes[i];
        if (ni->pool != L->id || !ni->node)
            continue;
        cache_node_lock(s->cache, ni->name); /* L's thread may be reserving here */
        res_add(&alloc, &ni->node->allocatable);
        res_add(&used, &ni->requested);
        out->tasks += ni->npods;
        if (!out->fits && framework_filter(sched_pod_fw(s, pod), cs, pod, ni, &st) == FW_SUCCESS)
            out->fits = 1;
        cache_node_unlock(s->cache, ni->name);
    }
    cache_unlock(s->cache);
    /* A GPU fraction's scarcest kind is the GPU, though it requests none. */
    resources_t req = pod->requests;
    if (gpu_is_fraction(pod))
        res_add_scalar(&req, RES_GPU, 1);
    out->idle = lender_idle(&alloc, &used, &req);
}

/* The lender of the set's minimum (design 002, one rule for a pod and a
 * gang): among the pools P may borrow from, those where the whole minimum
 * fits (a pod: some node passes its filters; a gang's minimum: placed
 * member by member on copies of the free room, pe_lender_score), the one with the
 * most idle units of its scarcest kind, then the fewest tasks (its pods
 * and the pods queued in it). */
static sched_pool_t *choose_lender(pod_set_t *set)
{
    sched_pool_t *P = set->P;
    scheduler_t *s = P->s;
    const pod_t *pod = set->items[0]->pod;
    int *ids = NULL, nids = 0;
    pools_lock(s);
    ids = util_xcalloc((size_t)s->npools, sizeof(*ids));
    for (int i = 0; i < s->npools; i++) {
        sched_pool_t *L = s->pools[i];
        if (L->dead || L == P)
            continue;
        if (pool_may_borrow(&P->spec, &L->spec))
            ids[nids++] = L->id;
    }
    pools_unlock(s);

    int gang = set->kind == SET_MINIMUM;
    cycle_state_t *cs = cycle_state_new();
    fw_status_t st;
    fw_status_reset(&st);
    sched_pool_t *best = NULL;
    lender_score_t bs = { 0 };
    if (gang || framework_pre_filter(sched_pod_fw(s, pod), cs, pod, &st) == FW_SUCCESS) {
        for (int i = 0; i < nids; i++) {
            sched_pool_t *L = pools_get(s, ids[i]);
            if (!L)
                continue;
            lender_score_t sc;
            if (gang)
                pe_lender_score(L, set->items, set->need, &sc.fits, &sc.idle, &sc.tasks);
            else
                score_lender(s, L, pod, cs, &sc);
            queue_stats_t qs;
            queue_get_stats(L->q, &qs);
            sc.tasks += qs.active + qs.backoff + qs.unschedulable;
            if (!sc.fits)
                continue;
            if (!best || lender_better(sc.idle, sc.tasks, bs.idle, bs.tasks)) {
                best = L;
                bs = sc;
            }
        }
    }
    cycle_state_free(cs);
    free(ids);
    return best;
}

/* A borrower that no longer fits its lender goes back to its home pool,
 * marked so that it waits there instead of bouncing between pools. */
void postfilter_return_home(sched_pool_t *P, queue_item_t *it)
{
    scheduler_t *s = P->s;
    sched_pool_t *H = pools_get(s, pools_home_id(s, it->pod));
    if (!H)
        H = pools_get(s, DEFAULT_POOL_ID);
    it->borrower = 0;
    it->tried_borrow = 1;
    queue_done(P->q, it);
    queue_push_item(H->q, it);
}

/* Whether the set may evict: the pool's preemption switch, and every
 * member of its minimum's preemptionPolicy and profile. */
int sched_set_may_evict(const pod_set_t *set)
{
    scheduler_t *s = set->P->s;
    int no_preempt = 1;
    pools_flags(s, set->P->id, &no_preempt, NULL, NULL);
    if (s->opts.disable_preemption || no_preempt)
        return 0;
    for (int i = 0; i < set->need; i++)
        if (!sched_may_preempt(s, set->items[i]->pod))
            return 0;
    return 1;
}

/* The lender row, first of the post-filter rows: a borrower that no longer
 * fits its lender goes home whole, and makes no room here (the lender's
 * pods are home). */
ext_rc_t lender_ext_post_filter(const sched_row_t *row, pod_set_t *set)
{
    sched_pool_t *P = set->P;
    if (!set->items[0]->borrower)
        return EXT_NEXT;
    pod_set_step(set, "lender", "returned home", "a borrower that no longer fits pool %s goes back to its own",
                 P->name);
    LOG_D("borrower pod=%s (%d in its set) no longer fits pool %s; back to its pool", set->items[0]->pod->key, set->n,
          P->name);
    for (int i = 0; i < set->n; i++) {
        if (set->items[i])
            postfilter_return_home(P, set->items[i]);
        set->items[i] = NULL;
    }
    set->outcome = SET_MOVED;
    return EXT_DONE;
}

/* The preemption row's step for the decision record (of a gang's plan
 * only its outcome is said). */
static void preemption_step(pod_set_t *set, int made, const pe_outcome_t *seen, const minrt_note_t *prot)
{
    char *kept = minrt_note_text(prot);
    if (set->kind == SET_MINIMUM)
        pod_set_step(set, "preemption", made ? "planned" : "no candidate",
                     made ? "room is being made for the minimum (victims chosen)"
                          : "no victims free room for the minimum%s%s",
                     kept ? "; " : "", kept ? kept : "");
    else if (made && seen->waiting)
        pod_set_step(set, "preemption", "waiting", "victims chosen earlier are still leaving");
    else if (made)
        pod_set_step(set, "preemption", "planned", "%d victim(s) on node %s (of %d candidate node(s))", seen->victims,
                     seen->node, seen->cands);
    else
        pod_set_step(set, "preemption", kept ? "protected" : "no candidate",
                     "%d node(s) where evicting could help, %d with victims allowed%s%s", seen->nodes, seen->cands,
                     kept ? "; " : "", kept ? kept : "");
    free(kept);
}

/* The preemption row: room inside the pool for the set's minimum, planned
 * on copies by one evaluator for a set of one (kube's candidates) and a
 * gang's minimum (every member with the ones before it): preempt_eval.c.
 * When no room is made, what an earlier round held for the set goes. */
ext_rc_t preemption_ext_post_filter(const sched_row_t *row, pod_set_t *set)
{
    sched_pool_t *P = set->P;
    if (set->need > 0 && sched_set_may_evict(set)) {
        minrt_note_t prot = { 0 };
        pod_t **pods = util_xcalloc((size_t)set->need, sizeof(*pods));
        for (int i = 0; i < set->need; i++)
            pods[i] = set->items[i]->pod;
        pe_request_t r = { .P = P,
                           .pods = pods,
                           .need = set->need,
                           .first_ms = set->items[0]->first_ms,
                           .g = set->kind == SET_MINIMUM ? set->gang : NULL,
                           .prot = &prot };
        pe_outcome_t out;
        int made = preempt_eval(&r, &out);
        free(pods);
        if (!made)
            minrt_note_to_set(set, &prot);
        preemption_step(set, made, &out, &prot);
        minrt_note_clear(&prot);
        if (made)
            return EXT_DONE;
    } else if (set->need > 0) {
        pod_set_step(set, "preemption", "skipped",
                     "preemption is off in pool %s, or a member's preemptionPolicy is Never", P->name);
    }
    for (int i = 0; i < set->n; i++)
        if (set->items[i])
            postfilter_drop_nomination(P->s, set->items[i]->pod);
    return EXT_NEXT;
}

/* The borrowing row's post_bind: a pod bound on a borrowed node is told
 * whose node it is. */
void borrowing_ext_post_bind(scheduler_t *s, const pod_t *pod, const char *node, const char *lender)
{
    if (!lender)
        return;
    char msg[512];
    snprintf(msg, sizeof(msg), "Borrowed node %s of pool %s (may be reclaimed by that pool)", node, lender);
    writer_pod_event(s->writer, pod, "Normal", "Borrowed", msg);
}

/* The borrowing row: the whole set to the sharing pool that fits it with
 * the most idle units of its scarcest kind, then fewest tasks. */
ext_rc_t borrowing_ext_post_filter(const sched_row_t *row, pod_set_t *set)
{
    sched_pool_t *P = set->P;
    scheduler_t *s = P->s;
    int no_borrow = 1;
    pools_flags(s, P->id, NULL, &no_borrow, NULL);
    if (no_borrow || set->need == 0) {
        if (set->need > 0)
            pod_set_step(set, "borrowing", "skipped", "pool %s does not borrow", P->name);
        return EXT_NEXT;
    }
    for (int i = 0; i < set->n; i++)
        if (set->items[i] && set->items[i]->tried_borrow) {
            pod_set_step(set, "borrowing", "skipped", "back from a lender that no longer fits it: it waits at home");
            return EXT_NEXT; /* back from a lender: it waits at home */
        }
    sched_pool_t *L = choose_lender(set);
    if (!L) {
        pod_set_step(set, "borrowing", "no lender", "no pool that lends has a node where it fits");
        return EXT_NEXT;
    }
    LOG_I("borrowing for pod=%s (%d in its set) from pool=%s for pool=%s", set->items[0]->pod->key, set->n, L->name,
          P->name);
    stats_add(s, &s->stats.borrowings, (unsigned long)set->n);
    for (int i = 0; i < set->n; i++) {
        queue_item_t *it = set->items[i];
        if (!it)
            continue;
        it->borrower = 1;
        queue_done(P->q, it);
        queue_push_item(L->q, it);
        set->items[i] = NULL;
    }
    set->outcome = SET_MOVED;
    return EXT_DONE;
}
