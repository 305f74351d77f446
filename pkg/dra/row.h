/* row.h -- the dynamic-resources row: pods that use DRA resource claims. */
#ifndef AISCHED_DRA_ROW_H
#define AISCHED_DRA_ROW_H

#include "api/types.h"
#include "scheduler/extension.h"

/* The row's pre_enqueue: 1 (hold filled: an Unschedulable condition and
 * one event naming the claims) for a pod with spec.resourceClaims, which
 * ai-scheduler does not allocate yet. */
int dra_row_pre_enqueue(const sched_row_t *row, const pod_t *pod, enqueue_hold_t *hold);

#endif
