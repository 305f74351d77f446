/* dynamic_resources.c -- DynamicResources' PreFilter and Filter: PreFilter
 * makes the pod's claims ready (dra/store.h: requests with their classes'
 * selectors compiled); Filter allocates them on each node in turn (the
 * structured-parameters allocator, dra/alloc.h), with the claim KEP-5004
 * makes for extended resources a DeviceClass serves on nodes that do not
 * advertise them. PreEnqueue, Reserve and PreBind live in the
 * dynamic-resources row (dra/row.c). */
#include <stdio.h>
#include <string.h>

#include "dra/claims.h"
#include "dra/store.h"
#include "framework/plugins/plugins.h"

/* A node's reason is short (FW_REASON_LEN): the selectors the allocator
 * names ("... matching <selectors>; the node has 4") are left out, the
 * claim, request, class and counts kept. */
static void shorten(char *why)
{
    char *m = strstr(why, " matching "), *semi = m ? strstr(m, "; ") : NULL;
    if (m && semi)
        memmove(m, semi, strlen(semi) + 1);
}

static void dr_state_free(void *p)
{
    dra_prep_free(p);
}

static int dr_pre_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    if (!dra_pod(pod) && !dra_pod_ext(pod))
        return FW_SUCCESS;
    const fw_cluster_t *cl = cycle_state_cluster(cs);
    /* Extended resources alone are the device plugin's without DRA. */
    if (!dra_pod(pod) && (!cl || !cl->dra))
        return FW_SUCCESS;
    if (!cl || !cl->dra) {
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, "the pod uses DRA claims and no DRA store is known");
        return st->code;
    }
    char why[FW_REASON_LEN * 4];
    dra_prep_t *p = NULL;
    if (dra_prepare(cl->dra, pod, &p, why, sizeof(why)) != DRA_PREP_OK) {
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, why);
        return st->code;
    }
    cycle_state_set_slot(cs, pl, p);
    return FW_SUCCESS;
}

static int dr_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    (void)pod;
    const dra_prep_t *p = cycle_state_slot(cs, pl);
    if (!p)
        return FW_SUCCESS;
    char why[FW_REASON_LEN * 4];
    int rc = dra_prep_fits(p, ni->node->name, &ni->node->labels, &ni->node->allocatable, why, sizeof(why));
    if (rc != 0) {
        shorten(why);
        fw_status_add(st, rc < 0 ? FW_ERROR : FW_UNSCHEDULABLE, why);
    }
    return st->code;
}

/* Preemption's simulation: the claims a victim alone used free their
 * devices on the copy. */
static void dr_remove_pod(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const pod_t *other,
                          const node_info_t *ni)
{
    (void)pod;
    (void)ni;
    dra_prep_remove_pod(cycle_state_slot(cs, pl), other);
}

static void dr_add_pod(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const pod_t *other,
                       const node_info_t *ni)
{
    (void)pod;
    dra_prep_add_pod(cycle_state_slot(cs, pl), other, ni && ni->node ? ni->node->name : NULL);
}

void plugin_dynamic_resources(fw_plugin_t *pl)
{
    *pl = (fw_plugin_t){ .name = "DynamicResources",
                         .pre_filter = dr_pre_filter,
                         .filter = dr_filter,
                         .add_pod = dr_add_pod,
                         .remove_pod = dr_remove_pod,
                         .state_free = dr_state_free };
}
