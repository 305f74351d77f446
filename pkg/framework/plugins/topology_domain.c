/* topology_domain.c -- TopologyDomain: while a pod set is placed inside a
 * node match (cycle_state_set_match: a gang's topology domain, from
 * topology/row.c), nodes outside it fail; without one every node passes
 * at no cost. The name is the configuration's. */
#include "framework/plugins/plugins.h"

#define FW_REASON_TOPOLOGY "node(s) were outside the gang's topology domain"

static int td_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    if (!cs->match || fw_node_match(cs->match, ni->node))
        return FW_SUCCESS;
    fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, FW_REASON_TOPOLOGY);
    return st->code;
}

void plugin_topology_domain(fw_plugin_t *pl)
{
    pl->name = "TopologyDomain";
    pl->filter = td_filter;
}
