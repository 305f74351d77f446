/* row.c -- the preemption row, on a pool thread (PostFilter): room inside
 * the pool for a set's minimum, planned on copies by the core's one
 * evaluator (a set of one as kube's candidate search, a gang's minimum
 * member by member; services.h's preempt). The row decides whether to ask,
 * says what came of it, and lets go of earlier rooms when none is made. */
#include <stdlib.h>

#include "gang/gang.h"
#include "preemption/row.h"

/* Victim ranks, lowest evicted first: RANK_SCALE x priority, plus one for
 * a pod that keeps its gang at minMember (of two pods of one priority, the
 * one whose eviction does not take a whole gang with it goes). Elastic
 * gang surplus drops below every home pod that is not surplus (the
 * lender row drops borrowers further: pool/row.c). */
#define RANK_SCALE         4
#define SURPLUS_RANK_SHIFT (((int64_t)1) << 36)

static int64_t victim_rank(const sched_row_t *row, const pod_t *victim)
{
    int64_t rank = (int64_t)row->svc->pod_priority(row->core, victim) * RANK_SCALE;
    if (gang_of(victim)) {
        int cls = row->svc->gang_member_class(row->core, victim);
        if (cls == GANG_MEMBER_SURPLUS)
            rank -= SURPLUS_RANK_SHIFT;
        else if (cls == GANG_MEMBER_MINIMUM)
            rank += 1;
    }
    return rank;
}

void preemption_row_victims(const sched_row_t *row, const sched_victim_q_t *q, sched_victim_answer_t *a)
{
    a->rank = victim_rank(row, q->victim);
    int32_t by = q->preemptor->priority;
    if (q->has_group_prio && q->group_prio > by)
        by = q->group_prio;
    a->rule = VICTIM_BY_PRIORITY;
    a->may = row->svc->pod_priority(row->core, q->victim) < by;
    a->kind = FS_MINRT_PREEMPT;
}

/* The step for the decision record (of a gang's plan only its outcome is
 * said); kept: what a minimum runtime protected, or NULL. */
static void preemption_step(pod_set_t *set, int made, const preempt_outcome_t *seen, const char *kept)
{
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
}

ext_rc_t preemption_row_post_filter(const sched_row_t *row, pod_set_t *set)
{
    const sched_services_t *svc = row->svc;
    if (set->need > 0 && svc->may_evict(row->core, set)) {
        preempt_outcome_t seen;
        char *kept = NULL;
        int made = svc->preempt(row->core, set, &seen, &kept);
        preemption_step(set, made, &seen, kept);
        free(kept);
        if (made)
            return EXT_DONE;
    } else if (set->need > 0) {
        pod_set_step(set, "preemption", "skipped",
                     "preemption is off in pool %s, or a member's preemptionPolicy is Never", set->pool_name);
    }
    /* No room made: what an earlier round nominated the members to goes. */
    for (int i = 0; i < set->n; i++)
        if (set->items[i])
            svc->drop_nomination(row->core, set->items[i]->pod);
    return EXT_NEXT;
}
