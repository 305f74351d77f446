/* node_resources_fit.c -- Filter NodeResourcesFit: does the pod's request fit
 * in what the node has left (cpu, memory, ephemeral-storage, pod count,
 * extended resources)? fw_fits_resources is the core, shared with
 * preemption, which calls it with victims' requests taken out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dra/store.h"
#include "framework/plugins/plugins.h"
#include "util/util.h"

/* KEP-5004: the pod's extended resources a DeviceClass serves
 * (spec.extendedResourceName), decided at PreFilter (preemption's copies
 * are filtered without a cluster view). On a node whose allocatable lacks
 * one, DynamicResources allocates it from DRA devices instead, so it is
 * not this plugin's to refuse. kube: dynamicresources'
 * filterExtendedResources takes R exactly when the node's allocatable of R
 * is 0 and a class maps R, and noderesources (resource_allocation.go)
 * counts such an R from DRA devices, not allocatable, with
 * DRAExtendedResource on. */
typedef struct fit_state {
    const char *served[RES_MAX_SCALAR]; /* interned names */
    int n;
} fit_state_t;

static int dra_served(const fit_state_t *fs, const char *name)
{
    for (int i = 0; fs && i < fs->n; i++)
        if (fs->served[i] == name || !strcmp(fs->served[i], name))
            return 1;
    return 0;
}

static int requests_nothing(const resources_t *r)
{
    return r->milli_cpu == 0 && r->memory == 0 && r->ephemeral == 0 && r->nscalar == 0;
}

/* Adds "Insufficient <name>" to st. */
static void insufficient(fw_status_t *st, const char *name)
{
    char reason[FW_REASON_LEN];
    snprintf(reason, sizeof(reason), "Insufficient %s", name);
    fw_status_add(st, FW_UNSCHEDULABLE, reason);
}

/* want + used > have, without overflowing on absurd quantities. */
static int exceeds(int64_t have, int64_t used, int64_t want)
{
    if (want <= 0)
        return 0;
    if (used >= have)
        return 1;
    return want > have - used;
}

/* Every insufficient resource is reported, not just the first, so the
 * diagnosis counts them all as kube-scheduler does. */
static int fits_resources(const pod_t *pod, const node_t *node, const resources_t *requested, int npods,
                          const fit_state_t *fs, fw_status_t *st)
{
    const resources_t *want = &pod->requests, *have = &node->allocatable;
    int fits = 1;

    if ((int64_t)npods + 1 > have->pods) {
        fw_status_add(st, FW_UNSCHEDULABLE, FW_REASON_TOO_MANY_PODS);
        fits = 0;
    }
    if (requests_nothing(want))
        return fits;
    if (exceeds(have->milli_cpu, requested->milli_cpu, want->milli_cpu)) {
        insufficient(st, "cpu");
        fits = 0;
    }
    if (exceeds(have->memory, requested->memory, want->memory)) {
        insufficient(st, "memory");
        fits = 0;
    }
    if (exceeds(have->ephemeral, requested->ephemeral, want->ephemeral)) {
        insufficient(st, "ephemeral-storage");
        fits = 0;
    }
    /* A scalar the node does not list at all has 0 allocatable. */
    for (int i = 0; i < want->nscalar; i++) {
        const res_scalar_t *s = &want->scalar[i];
        if (res_get_scalar(have, s->name) == 0 && dra_served(fs, s->name))
            continue;
        if (exceeds(res_get_scalar(have, s->name), res_get_scalar(requested, s->name), s->value)) {
            insufficient(st, s->name);
            fits = 0;
        }
    }
    return fits;
}

int fw_fits_resources(const pod_t *pod, const node_t *node, const resources_t *requested, int npods, fw_status_t *st)
{
    return fits_resources(pod, node, requested, npods, NULL, st);
}

static int fit_pre_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    cs->requests_nothing = requests_nothing(&pod->requests);
    const fw_cluster_t *cl = cycle_state_cluster(cs);
    if (!cl || !cl->dra || pod->requests.nscalar == 0)
        return FW_SUCCESS;
    fit_state_t *fs = NULL;
    for (int i = 0; i < pod->requests.nscalar; i++) {
        const char *name = pod->requests.scalar[i].name;
        if (pod->requests.scalar[i].value <= 0 || !dra_store_ext_class(cl->dra, name, NULL, 0))
            continue;
        if (!fs)
            fs = util_xcalloc(1, sizeof(*fs));
        fs->served[fs->n++] = name;
    }
    if (fs)
        cycle_state_set_slot(cs, pl, fs);
    return FW_SUCCESS;
}

static int fit_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni,
                      fw_status_t *st)
{
    if (ni->node == NULL) {
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, FW_REASON_UNKNOWN_CONDITION);
        return st->code;
    }
    /* Cheap path: only the pod count can fail. */
    if (cs->requests_nothing && ni->requested.pods + 1 <= ni->node->allocatable.pods)
        return FW_SUCCESS;
    if (!fits_resources(pod, ni->node, &ni->requested, (int)ni->requested.pods, cycle_state_slot(cs, pl), st))
        return st->code;
    return FW_SUCCESS;
}

void plugin_node_resources_fit(fw_plugin_t *pl)
{
    *pl = (fw_plugin_t){
        .name = "NodeResourcesFit", .pre_filter = fit_pre_filter, .filter = fit_filter, .state_free = free
    };
}
