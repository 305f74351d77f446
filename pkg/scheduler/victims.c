/* victims.c -- the core's answer to the victims table's pod question
 * (pe_victims): which pod may go for a preemptor, and its rank. Borrowers
 * first, then elastic gang surplus, then lower priority; across queues
 * only reclaim's rules; never a pod not ours, one already leaving, a GPU
 * reservation; a minimum runtime keeps young pods. Rows do not answer it
 * yet: the rules read the gang store, the fair-share store and the
 * evictor, which are still the core's. */
#include <string.h>

#include "scheduler/preempt_eval.h"
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
        if (vc->s->queues.ops->may_reclaim(vc->s->queues.self, vc->pool_id, vc->tenant, vc->req, vc->starving, vc->prio,
                                           vc->created_ms, victim->uid, in_gang, vc->now_wall, &cross)) {
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
