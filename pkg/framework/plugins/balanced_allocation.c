/* balanced_allocation.c -- Score NodeResourcesBalancedAllocation: prefers
 * nodes whose cpu and memory would be used in equal proportion with the pod
 * on them (100 - |cpu fraction - memory fraction| * 100, kube v1.20; kube
 * 1.23+'s standard deviation for v1 profiles). */
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

/* Adds requested/capacity (at most 1) unless the node has none of it. */
static void add_fraction(double *f, int *n, int64_t requested, int64_t capacity)
{
    if (capacity <= 0)
        return;
    double x = (double)requested / (double)capacity;
    f[(*n)++] = x > 1.0 ? 1.0 : x;
}

/* kube 1.23+ (balanced_allocation.go, resource_allocation.go): the pod's and
 * the node's actual requests (useRequested, no 100m/200Mi defaults); a pod
 * requesting neither cpu nor memory is best-effort and the plugin is
 * skipped (0 on every node, kube 1.33's fix for issue 129138); score
 * (1 - std) * 100 where std over two fractions is |a - b| / 2. */
static int64_t ba_score_v1(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni)
{
    if (ni->node == NULL || (pod->requests.milli_cpu == 0 && pod->requests.memory == 0))
        return 0;
    double f[2];
    int n = 0;
    add_fraction(f, &n, ni->requested.milli_cpu + pod->requests.milli_cpu, ni->node->allocatable.milli_cpu);
    add_fraction(f, &n, ni->requested.memory + pod->requests.memory, ni->node->allocatable.memory);
    double std = n == 2 ? fabs(f[0] - f[1]) / 2.0 : 0.0;
    return (int64_t)((1.0 - std) * (double)FW_MAX_SCORE);
}

void plugin_balanced_allocation_v1(fw_plugin_t *pl, int score_weight)
{
    plugin_balanced_allocation(pl, score_weight);
    pl->score = ba_score_v1;
}
