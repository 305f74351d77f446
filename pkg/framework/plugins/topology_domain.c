/* topology_domain.c -- TopologyDomain: while a gang is placed inside one
 * topology domain (topology/row.c, topology/topology.h), nodes outside it
 * fail; without a domain every node passes at no cost. */
#include "framework/plugins/plugins.h"
#include "topology/topology.h"

#define FW_REASON_TOPOLOGY "node(s) were outside the gang's topology domain"

static int td_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    if (!cs->domain || topo_node_in(cs->domain, ni->node))
        return FW_SUCCESS;
    fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, FW_REASON_TOPOLOGY);
    return st->code;
}

void plugin_topology_domain(fw_plugin_t *pl)
{
    pl->name = "TopologyDomain";
    pl->filter = td_filter;
}
