/* node_affinity.c -- NodeAffinity: Filter on spec.nodeSelector AND the
 * required node affinity (an OR of terms); Score by the summed weights of
 * the preferred terms a node matches, normalized by the best node. */
#include "framework/plugins/plugins.h"

/* A term with no requirements matches nothing (v1.NodeSelectorTerm), unlike
 * an empty label selector. */
static int term_matches(const selector_t *term, const node_t *node)
{
    if (selector_is_empty(term))
        return 0;
    return selector_matches(term, &node->labels, node->name);
}

static int matches_required(const pod_t *pod, const node_t *node)
{
    if (pod->has_node_selector && !selector_matches(&pod->node_selector, &node->labels, node->name))
        return 0;
    if (pod->naffinity_terms == 0)
        return 1;
    for (int i = 0; i < pod->naffinity_terms; i++)
        if (term_matches(&pod->affinity_terms[i], node))
            return 1;
    return 0;
}

int fw_pod_matches_node_affinity(const pod_t *pod, const node_t *node)
{
    return matches_required(pod, node);
}

static int na_pre_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    cs->has_affinity = pod->has_node_selector || pod->naffinity_terms > 0;
    return FW_SUCCESS;
}

static int na_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    if (!cs->has_affinity)
        return FW_SUCCESS;
    if (ni->node == NULL || !matches_required(pod, ni->node)) {
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, FW_REASON_NODE_AFFINITY);
        return st->code;
    }
    return FW_SUCCESS;
}

static int64_t na_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni)
{
    int64_t sum = 0;

    if (ni->node == NULL)
        return 0;
    for (int i = 0; i < pod->npreferred; i++) {
        const weighted_term_t *wt = &pod->preferred[i];
        if (wt->weight != 0 && term_matches(&wt->term, ni->node))
            sum += wt->weight;
    }
    return sum;
}

static void na_normalize(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, int64_t *scores, int n)
{
    fw_default_normalize(scores, n, 0);
}

void plugin_node_affinity(fw_plugin_t *pl, int score_weight)
{
    *pl = (fw_plugin_t){ .name = "NodeAffinity",
                         .pre_filter = na_pre_filter,
                         .filter = na_filter,
                         .score = na_score,
                         .normalize = na_normalize,
                         .weight = score_weight };
}
