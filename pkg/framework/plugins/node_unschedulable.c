/* node_unschedulable.c -- Filter NodeUnschedulable: keeps pods off cordoned
 * nodes (spec.unschedulable) unless they tolerate the unschedulable taint. */
#include "framework/plugins/plugins.h"

/* Whether the pod tolerates node.kubernetes.io/unschedulable:NoSchedule,
 * the taint a cordoned node implies. Worked out once per pod. */
static int nu_pre_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    char key[] = FW_TAINT_UNSCHEDULABLE, value[] = "";
    taint_t t = { key, value, EFFECT_NO_SCHEDULE };

    cs->tolerates_unschedulable = 0;
    for (int i = 0; i < pod->ntolerations; i++) {
        if (toleration_tolerates(&pod->tolerations[i], &t)) {
            cs->tolerates_unschedulable = 1;
            break;
        }
    }
    return FW_SUCCESS;
}

static int nu_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    if (ni->node == NULL) {
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, FW_REASON_UNKNOWN_CONDITION);
        return st->code;
    }
    if (ni->node->unschedulable && !cs->tolerates_unschedulable) {
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, FW_REASON_UNSCHEDULABLE);
        return st->code;
    }
    return FW_SUCCESS;
}

void plugin_node_unschedulable(fw_plugin_t *pl)
{
    *pl = (fw_plugin_t){ .name = "NodeUnschedulable", .pre_filter = nu_pre_filter, .filter = nu_filter };
}
