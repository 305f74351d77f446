/* row.c -- the scheduling-gates row: kube's SchedulingGates plugin rejects
 * a pod at PreEnqueue while spec.schedulingGates is non-empty, and the API
 * server, which set PodScheduled=False reason SchedulingGated when it
 * created the pod, refuses its Binding. */
#include "gates/row.h"
#include "util/util.h"

/* The condition kube's API server gives a gated pod at creation
 * (applySchedulingGatedCondition). */
#define GATED_REASON  "SchedulingGated"
#define GATED_MESSAGE "Scheduling is blocked due to non-empty scheduling gates"

int gates_row_pre_enqueue(const sched_row_t *row, const pod_t *pod, enqueue_hold_t *hold)
{
    (void)row;
    if (pod->ngates == 0)
        return 0;
    hold->reason = GATED_REASON;
    hold->message = util_strdup(GATED_MESSAGE);
    hold->event = 0; /* kube sends none: the condition says it */
    return 1;
}
