/* resource_allocation.c -- Score NodeResources(Least|Most)Allocated: a
 * weighted average over configured resources of how free (least) or how full
 * (most) the node would be with the pod on it. Most-allocated packs GPU jobs
 * tightly and keeps whole nodes free for large ones. */
#include <stdio.h>
#include <string.h>
#include "framework/plugins/plugins.h"

static int64_t sat_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Node allocatable and requested-with-the-pod for one resource. cpu and
 * memory use the nonzero sums (pods without requests count 100m/200Mi) so
 * request-less pods still spread, as kube-scheduler does. */
static void alloc_and_req(const res_scorer_entry_t *e, const pod_t *pod, const node_info_t *ni, int64_t *alloc,
                          int64_t *req)
{
    const resources_t *a = &ni->node->allocatable;
    switch (e->kind) {
    case RK_CPU:
        *alloc = a->milli_cpu;
        *req = sat_add(ni->nonzero_cpu, pod->nonzero_cpu);
        break;
    case RK_MEMORY:
        *alloc = a->memory;
        *req = sat_add(ni->nonzero_mem, pod->nonzero_mem);
        break;
    case RK_EPHEMERAL:
        *alloc = a->ephemeral;
        *req = sat_add(ni->requested.ephemeral, pod->requests.ephemeral);
        break;
    default:
        *alloc = res_get_scalar(a, e->name);
        *req = sat_add(res_get_scalar(&ni->requested, e->name), res_get_scalar(&pod->requests, e->name));
        break;
    }
}

static int64_t least_requested(int64_t req, int64_t alloc)
{
    if (req > alloc)
        return 0;
    return fw_scale_score(alloc - req, alloc);
}

/* requested can exceed allocatable through the nonzero defaults; a full
 * node is then simply full. */
static int64_t most_requested(int64_t req, int64_t alloc)
{
    if (req > alloc)
        req = alloc;
    return fw_scale_score(req, alloc);
}

/* Resources the node has none of are left out of the average: a CPU-only
 * node is not marked down for lacking GPUs. */
static int64_t ra_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni)
{
    const res_scorer_ctx_t *ctx = pl->ctx;
    int64_t sum = 0, wsum = 0;

    if (ni->node == NULL)
        return 0;
    for (int i = 0; i < ctx->nres; i++) {
        const res_scorer_entry_t *e = &ctx->res[i];
        int64_t alloc, req;
        if (ctx->skip_unrequested && e->kind == RK_SCALAR && res_get_scalar(&pod->requests, e->name) == 0)
            continue; /* kube 1.23+: not part of this pod's score */
        alloc_and_req(e, pod, ni, &alloc, &req);
        if (alloc <= 0)
            continue;
        sum += e->weight *
               (ctx->strategy == SCORE_MOST_ALLOCATED ? most_requested(req, alloc) : least_requested(req, alloc));
        wsum += e->weight;
    }
    return wsum ? sum / wsum : 0;
}

static res_kind_t kind_of(const char *name)
{
    if (strcmp(name, "cpu") == 0)
        return RK_CPU;
    if (strcmp(name, "memory") == 0)
        return RK_MEMORY;
    if (strcmp(name, "ephemeral-storage") == 0)
        return RK_EPHEMERAL;
    return RK_SCALAR;
}

void plugin_resource_allocation(fw_plugin_t *pl, res_scorer_ctx_t *ctx, const fw_config_t *c)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->strategy = c->strategy;
    ctx->skip_unrequested = c->v1_resource_scores;
    for (int i = 0; i < c->nres_weights && i < 8; i++) {
        const fw_resource_weight_t *w = &c->res_weights[i];
        const char *iname = res_intern(w->name);
        if (w->weight <= 0 || w->name[0] == '\0' || !iname)
            continue;
        res_scorer_entry_t *e = &ctx->res[ctx->nres++];
        e->kind = kind_of(w->name);
        e->name = iname;
        e->weight = w->weight;
    }
    *pl = (fw_plugin_t){ .name = c->strategy == SCORE_MOST_ALLOCATED ? "NodeResourcesMostAllocated"
                                                                     : "NodeResourcesLeastAllocated",
                         .score = ra_score,
                         .ctx = ctx,
                         .weight = c->weight_resources };
}
