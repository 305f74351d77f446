/* taint_toleration.c -- TaintToleration: Filter rejects nodes with a
 * NoSchedule/NoExecute taint the pod does not tolerate; Score counts the
 * PreferNoSchedule taints it does not tolerate (fewer is better). */
#include <stdio.h>
#include "framework/plugins/plugins.h"

static int tolerated(const pod_t *pod, const taint_t *t)
{
    for (int i = 0; i < pod->ntolerations; i++)
        if (toleration_tolerates(&pod->tolerations[i], t))
            return 1;
    return 0;
}

static int tt_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    if (ni->node == NULL)
        return FW_SUCCESS;
    for (int i = 0; i < ni->node->ntaints; i++) {
        const taint_t *t = &ni->node->taints[i];
        if (t->effect != EFFECT_NO_SCHEDULE && t->effect != EFFECT_NO_EXECUTE)
            continue;
        if (!tolerated(pod, t)) {
            char reason[FW_REASON_LEN];
            snprintf(reason, sizeof(reason), "node(s) had taint {%s: %s}, that the pod didn't tolerate", t->key,
                     t->value ? t->value : "");
            fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, reason);
            return st->code;
        }
    }
    return FW_SUCCESS;
}

static int64_t tt_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni)
{
    int64_t count = 0;

    if (ni->node == NULL)
        return 0;
    for (int i = 0; i < ni->node->ntaints; i++) {
        const taint_t *t = &ni->node->taints[i];
        if (t->effect == EFFECT_PREFER_NO_SCHEDULE && !tolerated(pod, t))
            count++;
    }
    return count;
}

static void tt_normalize(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, int64_t *scores, int n)
{
    fw_default_normalize(scores, n, 1);
}

void plugin_taint_toleration(fw_plugin_t *pl, int score_weight)
{
    *pl = (fw_plugin_t){ .name = "TaintToleration",
                         .filter = tt_filter,
                         .score = tt_score,
                         .normalize = tt_normalize,
                         .weight = score_weight };
}
