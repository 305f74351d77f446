/* row.h -- the scheduling-gates row (kube's SchedulingGates PreEnqueue
 * plugin): a pod with spec.schedulingGates stays out of every scheduling
 * queue until its last gate goes. */
#ifndef AISCHED_GATES_ROW_H
#define AISCHED_GATES_ROW_H

#include "api/types.h"
#include "scheduler/extension.h"

/* The row's pre_enqueue: 1 (hold filled) while the pod has gates. */
int gates_row_pre_enqueue(const sched_row_t *row, const pod_t *pod, enqueue_hold_t *hold);

#endif
