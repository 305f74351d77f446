/* node_name.c -- Filter NodeName: a pod that names its node (spec.nodeName)
 * fits only there. Scheduled pods have none; preemption checks use it. */
#include <string.h>
#include "framework/plugins/plugins.h"

static int nn_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    if (pod->node_name == NULL || pod->node_name[0] == '\0')
        return FW_SUCCESS;
    if (ni->node == NULL || strcmp(pod->node_name, ni->node->name) != 0) {
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, FW_REASON_NODE_NAME);
        return st->code;
    }
    return FW_SUCCESS;
}

void plugin_node_name(fw_plugin_t *pl)
{
    *pl = (fw_plugin_t){ .name = "NodeName", .filter = nn_filter };
}
