/* fuzz_cycle.c -- one scheduling cycle over objects from the API server:
 * {"nodes": [Node...], "pods": [Pod...], "pod": Pod}. The nodes and the
 * bound pods (spec.nodeName) make the cluster; the pod then goes through
 * PreFilter, every Filter on every node and Score on the feasible ones, with
 * the default plugins (affinity, spread, ports, taints, resources, GPU
 * sharing...). Huge quantities, odd selectors and missing fields must give a
 * status, never a crash or an overflow, and scores stay in range. */
#include "fuzz.h"
#include "api/types.h"
#include "framework/framework.h"
#include "framework/nodeinfo.h"
#include "scheduler/capabilities.h"

#define MAX_NODES 16
#define MAX_PODS  64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    capabilities_init();
    json_t *j = fuzz_json(data, size);
    if (!j)
        return 0;
    static framework_t *fw;
    if (!fw)
        fw = framework_new(NULL); /* kept: the plugins' configuration is not under test */
    char err[256];
    node_info_t *nodes[MAX_NODES];
    int nn = 0;
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(j, "nodes"), i, v) {
        if (nn == MAX_NODES)
            break;
        node_t *n = node_from_json(v, err, sizeof err);
        if (!n)
            continue;
        nodes[nn] = node_info_new(n->name);
        node_info_set_node(nodes[nn++], n);
        node_unref(n);
    }
    int np = 0;
    json_array_foreach (json_object_get(j, "pods"), i, v) {
        if (np++ == MAX_PODS)
            break;
        pod_t *p = pod_from_json(v, err, sizeof err);
        if (!p)
            continue;
        for (int k = 0; k < nn; k++) {
            if (p->node_name[0] && !strcmp(nodes[k]->name, p->node_name)) {
                node_info_add_pod(nodes[k], p);
                break;
            }
        }
        pod_unref(p);
    }
    pod_t *pod = pod_from_json(json_object_get(j, "pod"), err, sizeof err);
    if (pod) {
        cycle_state_t *cs = cycle_state_new();
        fw_cluster_t cl = { .nodes = nodes, .nnodes = nn };
        cycle_state_set_cluster(cs, &cl);
        fw_status_t st;
        if (framework_pre_filter(fw, cs, pod, &st) == FW_SUCCESS) {
            node_info_t *feasible[MAX_NODES];
            int nf = 0;
            for (int k = 0; k < nn; k++)
                if (framework_filter(fw, cs, pod, nodes[k], &st) == FW_SUCCESS)
                    feasible[nf++] = nodes[k];
            if (nf > 0) {
                int64_t scores[MAX_NODES];
                framework_score(fw, cs, pod, feasible, nf, scores);
                for (int k = 0; k < nf; k++)
                    FUZZ_ASSERT(scores[k] >= 0);
            }
        }
        cycle_state_set_cluster(cs, NULL);
        cycle_state_free(cs);
        pod_unref(pod);
    }
    for (int k = 0; k < nn; k++)
        node_info_free(nodes[k]);
    json_decref(j);
    return 0;
}
