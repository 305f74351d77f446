/* gpu_sharing.c -- GpuSharing: PreFilter refuses an invalid shared-GPU
 * request, Filter finds the slots a fraction fits (gpu/gpu.h), Score packs
 * fractions onto the fullest shared GPU. Its Reserve and PreBind (the
 * reservation pods, the gpu-index written at bind) run in the scheduler
 * (scheduler/gpu.c). Pods that share no GPU pass untouched. */
#include "framework/plugins/plugins.h"
#include "gpu/gpu.h"

static int gs_pre_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    const gpu_req_t *r = gpu_req_of(pod);
    if (r && !r->reservation && r->err) {
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, r->err);
        return st->code;
    }
    return FW_SUCCESS;
}

static int gs_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    if (!gpu_is_fraction(pod))
        return FW_SUCCESS;
    const char *reason = NULL;
    int unresolvable = 0;
    if (gpu_node_fit(gpu_node_of(ni), ni->node, res_get_scalar(&ni->requested, RES_GPU), pod, NULL, &reason,
                     &unresolvable))
        return FW_SUCCESS;
    fw_status_add(st, unresolvable ? FW_UNSCHEDULABLE_UNRESOLVABLE : FW_UNSCHEDULABLE, reason);
    return st->code;
}

static void gs_pre_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, node_info_t *const *nodes, int n)
{
    if (!gpu_is_fraction(pod))
        fw_score_uniform(cs, pl, 0);
}

static int64_t gs_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni)
{
    return gpu_node_score(gpu_node_of(ni), ni->node, res_get_scalar(&ni->requested, RES_GPU), pod);
}

void plugin_gpu_sharing(fw_plugin_t *pl, int score_weight)
{
    pl->name = "GpuSharing";
    pl->pre_filter = gs_pre_filter;
    pl->filter = gs_filter;
    pl->pre_score = gs_pre_score;
    pl->score = gs_score;
    pl->weight = score_weight;
}
