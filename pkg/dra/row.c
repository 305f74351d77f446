/* row.c -- the dynamic-resources row: a pod whose spec.resourceClaims
 * kube-scheduler's DynamicResources plugin would allocate is kept out of
 * the queues with a reason that says so, never bound without its claims. */
#include "dra/row.h"
#include "util/util.h"

int dra_row_pre_enqueue(const sched_row_t *row, const pod_t *pod, enqueue_hold_t *hold)
{
    (void)row;
    if (pod->nclaims == 0)
        return 0;
    sbuf_t b = { 0 };
    sbuf_printf(&b,
                "the pod uses DRA resource claims (spec.resourceClaims: %s); ai-scheduler does not allocate "
                "DRA claims (kube-scheduler's DynamicResources plugin does), so the pod stays pending",
                pod->claims ? pod->claims : "");
    hold->reason = "Unschedulable";
    hold->message = b.data;
    hold->event = 1;
    return 1;
}
