/* balanced_allocation.c -- Score NodeResourcesBalancedAllocation: prefers
 * nodes whose cpu and memory would be used in equal proportion with the pod
 * on them (100 - |cpu fraction - memory fraction| * 100, kube v1.20). */
#include <math.h>
#include "framework/plugins/plugins.h"

/* A node with none of a resource is treated as full of it. */
static double fraction(double requested, int64_t capacity)
{
    if (capacity <= 0)
        return 1.0;
    return requested / (double)capacity;
}

static int64_t ba_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni)
{
    double cpu, mem;

    if (ni->node == NULL)
        return 0;
    cpu = fraction((double)ni->nonzero_cpu + (double)pod->nonzero_cpu, ni->node->allocatable.milli_cpu);
    mem = fraction((double)ni->nonzero_mem + (double)pod->nonzero_mem, ni->node->allocatable.memory);
    if (cpu >= 1.0 || mem >= 1.0)
        return 0;
    return (int64_t)((1.0 - fabs(cpu - mem)) * (double)FW_MAX_SCORE);
}

void plugin_balanced_allocation(fw_plugin_t *pl, int score_weight)
{
    *pl = (fw_plugin_t){ .name = "NodeResourcesBalancedAllocation", .score = ba_score, .weight = score_weight };
}
