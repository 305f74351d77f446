/* row.h -- the preemption row of the scheduling cycle (pkg/preemption/row.c):
 * a set that does not fit makes room inside its pool by evicting, through
 * the core's one preemption evaluator. It has no room of its own and
 * reaches the core only through the services table (framework/services.h). */
#ifndef AISCHED_PREEMPTION_ROW_H
#define AISCHED_PREEMPTION_ROW_H

#include "scheduler/extension.h"

/* post_filter, after consolidation (moving loses no work) and before
 * borrowing: room for the set's minimum by evicting (EXT_DONE), or its
 * nominations dropped (EXT_NEXT). */
ext_rc_t preemption_row_post_filter(const sched_row_t *row, pod_set_t *set);
/* victims: the priority rule. A pod below the preemptor's priority (or
 * its gang class's, when higher) may go; every victim is ranked by its
 * priority (with its gang's class), elastic surplus lowest. */
void preemption_row_victims(const sched_row_t *row, const sched_victim_q_t *q, sched_victim_answer_t *a);

#endif
