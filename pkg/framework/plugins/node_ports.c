/* node_ports.c -- Filter NodePorts: a host port (protocol, port, host IP) may
 * be taken once per node. 0.0.0.0 (or an empty IP) binds every address, so it
 * clashes with the same protocol and port on any IP. */
#include <string.h>
#include "framework/plugins/plugins.h"

static int is_any_ip(const char *ip)
{
    return ip[0] == '\0' || strcmp(ip, "0.0.0.0") == 0;
}

/* An empty protocol means TCP, as the API defaults it. */
static const char *proto(const host_port_t *hp)
{
    return hp->protocol[0] ? hp->protocol : "TCP";
}

static int ports_conflict(const host_port_t *a, const host_port_t *b)
{
    if (a->port <= 0 || a->port != b->port || strcmp(proto(a), proto(b)) != 0)
        return 0;
    return is_any_ip(a->host_ip) || is_any_ip(b->host_ip) || strcmp(a->host_ip, b->host_ip) == 0;
}

static int pod_conflicts(const pod_t *want, const pod_t *have)
{
    for (int i = 0; i < want->nports; i++)
        for (int j = 0; j < have->nports; j++)
            if (ports_conflict(&want->ports[i], &have->ports[j]))
                return 1;
    return 0;
}

static int np_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    if (pod->nports == 0)
        return FW_SUCCESS;
    for (int i = 0; i < ni->npods; i++) {
        const pod_t *p = ni->pods[i];
        /* Terminal pods have released their ports. */
        if (p->nports == 0 || pod_is_terminal(p))
            continue;
        if (pod_conflicts(pod, p)) {
            fw_status_add(st, FW_UNSCHEDULABLE, FW_REASON_NODE_PORTS);
            return st->code;
        }
    }
    return FW_SUCCESS;
}

void plugin_node_ports(fw_plugin_t *pl)
{
    *pl = (fw_plugin_t){ .name = "NodePorts", .filter = np_filter };
}
