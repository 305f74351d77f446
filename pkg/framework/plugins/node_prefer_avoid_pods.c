/* node_prefer_avoid_pods.c -- NodePreferAvoidPods: a node whose
 * scheduler.alpha.kubernetes.io/preferAvoidPods annotation names the pod's
 * controlling ReplicationController or ReplicaSet scores 0, others 100. */
#include <string.h>
#include "framework/plugins/plugins.h"

static int64_t pa_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni)
{
    const char *kind = pod->controller_kind ? pod->controller_kind : "";

    if (strcmp(kind, "ReplicationController") != 0 && strcmp(kind, "ReplicaSet") != 0)
        return FW_MAX_SCORE;
    if (ni->node == NULL)
        return 0;
    for (int i = 0; i < ni->node->navoid; i++) {
        const avoid_ref_t *a = &ni->node->avoid[i];
        if (strcmp(a->kind, kind) == 0 && strcmp(a->uid, pod->controller_uid) == 0)
            return 0;
    }
    return FW_MAX_SCORE;
}

/* Most pods have no RC/RS controller: 100 everywhere, no per-node work. */
static void pa_pre_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, node_info_t *const *nodes, int n)
{
    const char *kind = pod->controller_kind ? pod->controller_kind : "";
    if (strcmp(kind, "ReplicationController") != 0 && strcmp(kind, "ReplicaSet") != 0)
        fw_score_uniform(cs, pl, FW_MAX_SCORE);
}

void plugin_node_prefer_avoid_pods(fw_plugin_t *pl)
{
    *pl = (fw_plugin_t){ .name = "NodePreferAvoidPods", .pre_score = pa_pre_score, .score = pa_score, .weight = 10000 };
}
