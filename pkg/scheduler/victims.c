/* victims.c -- the core's side of the victims table's pod question
 * (pe_victims): which pod may go for a preemptor, and its rank. The core
 * keeps the mechanism (never a pod not ours, one being deleted, the
 * preemptor, one already leaving); the rules, and what keeps a victim the
 * rules allow (a minimum runtime), are the rows' answers to the victims
 * point (extension.h), combined here by the rule written there. */
#include <string.h>

#include "scheduler/preempt_eval.h"

/* The mechanism: 1 when no row needs asking (the pod cannot go). */
static int victim_excluded(const pod_t *victim, const pod_t *preemptor, const victim_ctx_t *vc)
{
    if (!sched_is_ours(vc->s, victim->scheduler_name))
        return 1; /* not ours to evict */
    if (victim->deleting || strcmp(victim->uid, preemptor->uid) == 0)
        return 1;
    /* Asked to checkpoint for another preemptor: already on its way out. */
    return evictor_requested(vc->s->evictor, victim->uid);
}

/* The rows' answers combined (extension.h, above sched_victim_answer_t):
 * the strongest rule decides, the rank is the sum of every row's. 1 with
 * *kind (a FS_MINRT_ kind) when victim may go. */
static int victim_by_rows(const sched_victim_q_t *q, scheduler_t *s, int64_t *rank, int *kind)
{
    int nx = 0;
    const sched_ext_t *ext = sched_extensions(&nx);
    sched_victim_answer_t best = { 0 };
    int64_t sum = 0;
    for (int i = 0; i < s->nrows && i < nx; i++) {
        if (!ext[i].victims)
            continue;
        sched_victim_answer_t a = { 0 };
        ext[i].victims(&s->rows[i], q, &a);
        sum += a.rank;
        if (a.rule > best.rule)
            best = a;
        if (best.rule == VICTIM_NEVER)
            return 0;
    }
    if (best.rule == VICTIM_PASS || !best.may)
        return 0;
    *rank = sum;
    *kind = best.kind;
    return 1;
}

int postfilter_is_victim(const pod_t *victim, const pod_t *preemptor, void *ud, int64_t *rank)
{
    victim_ctx_t *vc = ud;
    if (victim_excluded(victim, preemptor, vc))
        return 0;
    sched_victim_q_t q = {
        .victim = victim,
        .preemptor = preemptor,
        .pool_id = vc->pool_id,
        .queues = vc->queues,
        .tenant = vc->tenant,
        .req = vc->req,
        .starving = vc->starving,
        .prio = vc->prio,
        .created_ms = vc->created_ms,
        .now_wall = vc->now_wall,
        .has_group_prio = vc->has_group_prio,
        .group_prio = vc->group_prio,
        .set = vc->set,
    };
    int kind;
    if (!victim_by_rows(&q, vc->s, rank, &kind))
        return 0;
    /* Young pods (and a frozen gang's surplus) are kept, and noted: the
     * preemptor's message names when the first of them may go. */
    return !sched_rows_protect(vc->s, &q, kind);
}
