/* row.h -- the pools' rows of the scheduling cycle (pkg/pool/row.c): the
 * lender row sends a borrower that no longer fits its lender home, the
 * borrowing row sends a set that fits nowhere at home to the sharing pool
 * with the most idle room (design 002). Neither has a room of its own;
 * both reach the core only through the services table
 * (framework/services.h). */
#ifndef AISCHED_POOL_ROW_H
#define AISCHED_POOL_ROW_H

#include "scheduler/extension.h"

/* post_filter, first: a set of borrowers goes home whole (EXT_DONE) and
 * makes no room here (the lender's pods are home). */
ext_rc_t pool_lender_row_post_filter(const sched_row_t *row, pod_set_t *set);
/* post_filter, after preemption: the whole set to the sharing pool where
 * its minimum fits with the most idle units of its scarcest kind, then
 * the fewest tasks (EXT_DONE), or EXT_NEXT when none does. */
ext_rc_t pool_borrowing_row_post_filter(const sched_row_t *row, pod_set_t *set);
/* post_bind: a pod bound on a borrowed node is told whose node it is. */
void pool_borrowing_row_post_bind(const sched_row_t *row, const pod_t *pod, const char *node, const char *lender);
/* victims: a borrower (a pod whose home is another pool) may go, as
 * reclaim (the lender takes its room back), ranked below every home pod. */
void pool_lender_row_victims(const sched_row_t *row, const sched_victim_q_t *q, sched_victim_answer_t *a);

/* Lender choice (design 002), pure: the free amount of the pod's scarcest
 * requested kind (GPU, else CPU, else memory) over a pool's nodes, and the
 * order "most idle, then fewest tasks". */
int64_t lender_idle(const resources_t *alloc, const resources_t *used, const resources_t *req);
int lender_better(int64_t idle_a, int tasks_a, int64_t idle_b, int tasks_b);

#endif
