/* inter_pod_affinity.c -- InterPodAffinity (kube-scheduler v1.20): Filter on
 * the pod's required affinity and anti-affinity terms and on existing pods'
 * required anti-affinity terms (symmetry); Score by preferred terms of both
 * sides and existing pods' required affinity (hardPodAffinityWeight 1).
 *
 * PreFilter counts, per topology pair (label key, value), the existing pods
 * that match; Filter then costs one hash lookup per term on the node. */
#include <stdlib.h>
#include <string.h>
#include "framework/plugins/plugins.h"
#include "framework/plugins/topo_count.h"
#include "framework/topo_index.h"
#include "util/util.h"

#define HARD_POD_AFFINITY_WEIGHT 1

typedef struct ipa_state {
    const pod_affinity_t *a;   /* the pod's terms (borrowed; NULL: none) */
    int has_cluster;           /* PreFilter saw the cluster (AddPod/RemovePod apply) */
    int self_match_all;        /* the pod matches all its own affinity terms */
    tp_counts_t existing_anti; /* existing pods' anti terms the pod matches */
    tp_counts_t aff;           /* pods matching all the pod's affinity terms */
    tp_counts_t anti;          /* pods matching the pod's anti-affinity terms */
    int score_any;             /* PreScore: some term matched */
    tp_counts_t score;         /* PreScore: summed weights per pair */
} ipa_state_t;

static void ipa_state_free(void *p)
{
    ipa_state_t *s = p;
    if (!s)
        return;
    tpc_free(&s->existing_anti);
    tpc_free(&s->aff);
    tpc_free(&s->anti);
    tpc_free(&s->score);
    free(s);
}

static int matches_all(const pod_t *p, const pod_aff_term_t *t, int n)
{
    if (n == 0)
        return 0;
    for (int i = 0; i < n; i++)
        if (!aff_term_matches(&t[i], p))
            return 0;
    return 1;
}

/* kube's updateWithAffinityTerms: target counts for every term's pair only
 * when it matches all of them. */
static void update_aff(tp_counts_t *m, const pod_t *target, const node_t *node, const pod_aff_term_t *t, int n,
                       int64_t d)
{
    if (!matches_all(target, t, n))
        return;
    for (int i = 0; i < n; i++) {
        const char *v = labels_get(&node->labels, t[i].topology_key);
        if (v)
            tpc_add(m, t[i].topology_key, v, d, 1);
    }
}

/* kube's updateWithAntiAffinityTerms: each term target matches counts. */
static void update_anti(tp_counts_t *m, const pod_t *target, const node_t *node, const pod_aff_term_t *t, int n,
                        int64_t d)
{
    for (int i = 0; i < n; i++) {
        if (!aff_term_matches(&t[i], target))
            continue;
        const char *v = labels_get(&node->labels, t[i].topology_key);
        if (v)
            tpc_add(m, t[i].topology_key, v, d, 1);
    }
}

static int ipa_pre_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    const fw_cluster_t *cl = cycle_state_cluster(cs);
    const pod_affinity_t *a = pod->interpod;
    ipa_state_t *s = util_xcalloc(1, sizeof(*s));
    int incoming = a && (a->naff_req > 0 || a->nanti_req > 0);
    int scan_existing = 1, scan_incoming = incoming;

    s->a = a;
    s->has_cluster = cl != NULL;
    tpc_init(&s->existing_anti, 8);
    tpc_init(&s->aff, 8);
    tpc_init(&s->anti, 8);
    if (cl && cl->index) {
        /* The index answers in O(distinct terms); a missing entry (evicted
         * meanwhile) falls back to kube's scan. */
        scan_existing = !fw_topo_index_existing_anti(cl->index, pod, &s->existing_anti);
        if (incoming)
            scan_incoming = !fw_topo_index_incoming(cl->index, pod, &s->aff, &s->anti);
    }
    for (int i = 0; cl && (scan_existing || scan_incoming) && i < cl->nnodes; i++) {
        const node_info_t *ni = cl->nodes[i];
        if (!ni->node)
            continue;
        fw_cluster_node_lock(cl, ni, 1);
        for (int j = 0; j < ni->npods && (ni->npods_anti_req > 0 || scan_incoming); j++) {
            const pod_t *q = ni->pods[j];
            if (pod_is_terminal(q) || strcmp(q->uid, pod->uid) == 0)
                continue;
            if (scan_existing && q->interpod && q->interpod->nanti_req > 0)
                update_anti(&s->existing_anti, pod, ni->node, q->interpod->anti_req, q->interpod->nanti_req, 1);
            if (scan_incoming) {
                update_aff(&s->aff, q, ni->node, a->aff_req, a->naff_req, 1);
                update_anti(&s->anti, q, ni->node, a->anti_req, a->nanti_req, 1);
            }
        }
        fw_cluster_node_lock(cl, ni, 0);
    }
    if (a)
        s->self_match_all = matches_all(pod, a->aff_req, a->naff_req);
    cycle_state_set_slot(cs, pl, s);
    return FW_SUCCESS;
}

static void update_with_pod(cycle_state_t *cs, const fw_plugin_t *pl, const pod_t *pod, const pod_t *other,
                            const node_info_t *ni, int64_t d)
{
    ipa_state_t *s = cycle_state_slot(cs, pl);
    if (!s || !s->has_cluster || !ni->node || pod_is_terminal(other))
        return;
    if (other->interpod)
        update_anti(&s->existing_anti, pod, ni->node, other->interpod->anti_req, other->interpod->nanti_req, d);
    if (s->a) {
        update_aff(&s->aff, other, ni->node, s->a->aff_req, s->a->naff_req, d);
        update_anti(&s->anti, other, ni->node, s->a->anti_req, s->a->nanti_req, d);
    }
}

static void ipa_add_pod(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const pod_t *other,
                        const node_info_t *ni)
{
    update_with_pod(cs, pl, pod, other, ni, 1);
}

static void ipa_remove_pod(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const pod_t *other,
                           const node_info_t *ni)
{
    update_with_pod(cs, pl, pod, other, ni, -1);
}

/* kube's satisfyPodAffinity, including the rule that lets the first pod of
 * a group that selects itself go anywhere its topology keys exist. */
static int satisfies_affinity(const ipa_state_t *s, const node_t *node)
{
    int exist = 1;
    for (int i = 0; i < s->a->naff_req; i++) {
        const pod_aff_term_t *t = &s->a->aff_req[i];
        const char *v = labels_get(&node->labels, t->topology_key);
        if (!v)
            return 0;
        if (tpc_get(&s->aff, t->topology_key, v, NULL) <= 0)
            exist = 0;
    }
    return exist || (tpc_len(&s->aff) == 0 && s->self_match_all);
}

static int satisfies_anti(const ipa_state_t *s, const node_t *node)
{
    if (tpc_len(&s->anti) == 0)
        return 1;
    for (int i = 0; i < s->a->nanti_req; i++) {
        const pod_aff_term_t *t = &s->a->anti_req[i];
        const char *v = labels_get(&node->labels, t->topology_key);
        if (v && tpc_get(&s->anti, t->topology_key, v, NULL) > 0)
            return 0;
    }
    return 1;
}

static int satisfies_existing_anti(const ipa_state_t *s, const node_t *node)
{
    if (tpc_len(&s->existing_anti) == 0)
        return 1;
    for (int i = 0; i < s->existing_anti.nkeys; i++) {
        const char *k = s->existing_anti.keys[i];
        const char *v = labels_get(&node->labels, k);
        if (v && tpc_get(&s->existing_anti, k, v, NULL) > 0)
            return 0;
    }
    return 1;
}

static int fail(fw_status_t *st, fw_code_t code, const char *reason)
{
    fw_status_add(st, code, FW_REASON_AFFINITY_NOT_MATCH);
    fw_status_add(st, code, reason);
    return st->code;
}

static int ipa_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni,
                      fw_status_t *st)
{
    const ipa_state_t *s = cycle_state_slot(cs, pl);
    if (!s || !ni->node)
        return FW_SUCCESS;
    if (s->a && s->a->naff_req > 0 && !satisfies_affinity(s, ni->node))
        return fail(st, FW_UNSCHEDULABLE_UNRESOLVABLE, FW_REASON_AFFINITY_RULES);
    if (s->a && s->a->nanti_req > 0 && !satisfies_anti(s, ni->node))
        return fail(st, FW_UNSCHEDULABLE, FW_REASON_ANTI_AFFINITY_RULES);
    if (!satisfies_existing_anti(s, ni->node))
        return fail(st, FW_UNSCHEDULABLE, FW_REASON_EXISTING_ANTI_AFFINITY);
    return FW_SUCCESS;
}

/* ---- scoring --------------------------------------------------------------- */

/* kube's processTerm: target matching the term adds weight*mult to the
 * pair of node's value for the term's key. */
static void score_terms(ipa_state_t *s, const pod_aff_term_t *t, int n, int weight, int mult, const pod_t *target,
                        const node_t *node)
{
    for (int i = 0; i < n; i++) {
        if (!aff_term_matches(&t[i], target))
            continue;
        const char *v = labels_get(&node->labels, t[i].topology_key);
        if (!v)
            continue;
        tpc_add(&s->score, t[i].topology_key, v, (int64_t)(weight ? weight : t[i].weight) * mult, 0);
        s->score_any = 1;
    }
}

static int has_pod_affinity(const pod_t *p)
{
    const pod_affinity_t *a = p->interpod;
    return a && a->naff_req + a->nanti_req + a->naff_pref + a->nanti_pref > 0;
}

/* kube's PreScore: over every node of the cluster (not only the feasible
 * ones), every pod when the incoming pod has preferred terms, else only
 * pods with affinity terms of their own. */
static void ipa_pre_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, node_info_t *const *nodes, int n)
{
    ipa_state_t *s = cycle_state_slot(cs, pl);
    const fw_cluster_t *cl = cycle_state_cluster(cs);
    const pod_affinity_t *a = pod->interpod;
    int has_pref = a && (a->naff_pref > 0 || a->nanti_pref > 0);

    if (!s)
        return;
    tpc_free(&s->score);
    tpc_init(&s->score, 8);
    s->score_any = 0;
    if (cl && cl->index && fw_topo_index_score(cl->index, pod, HARD_POD_AFFINITY_WEIGHT, &s->score, &s->score_any))
        return;
    tpc_free(&s->score);
    tpc_init(&s->score, 8);
    s->score_any = 0;
    for (int i = 0; cl && i < cl->nnodes; i++) {
        const node_info_t *ni = cl->nodes[i];
        if (!ni->node || ni->node->labels.n == 0)
            continue;
        fw_cluster_node_lock(cl, ni, 1);
        for (int j = 0; j < ni->npods && (has_pref || ni->npods_affinity > 0); j++) {
            const pod_t *q = ni->pods[j];
            if (pod_is_terminal(q) || strcmp(q->uid, pod->uid) == 0 || (!has_pref && !has_pod_affinity(q)))
                continue;
            if (has_pref) {
                score_terms(s, a->aff_pref, a->naff_pref, 0, 1, q, ni->node);
                score_terms(s, a->anti_pref, a->nanti_pref, 0, -1, q, ni->node);
            }
            const pod_affinity_t *qa = q->interpod;
            if (!qa)
                continue;
            score_terms(s, qa->aff_req, qa->naff_req, HARD_POD_AFFINITY_WEIGHT, 1, pod, ni->node);
            score_terms(s, qa->aff_pref, qa->naff_pref, 0, 1, pod, ni->node);
            score_terms(s, qa->anti_pref, qa->nanti_pref, 0, -1, pod, ni->node);
        }
        fw_cluster_node_lock(cl, ni, 0);
    }
}

static int64_t ipa_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni)
{
    const ipa_state_t *s = cycle_state_slot(cs, pl);
    int64_t sum = 0;
    if (!s || !s->score_any || !ni->node)
        return 0;
    for (int i = 0; i < s->score.nkeys; i++) {
        const char *v = labels_get(&ni->node->labels, s->score.keys[i]);
        if (v)
            sum += tpc_get(&s->score, s->score.keys[i], v, NULL);
    }
    return sum;
}

/* Min-max to 0..100 in floating point, as kube does (min and max start
 * at 0, so all-negative or all-positive scores keep their distance to 0). */
static void ipa_normalize(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, int64_t *scores, int n)
{
    const ipa_state_t *s = cycle_state_slot(cs, pl);
    int64_t max = 0, min = 0;
    if (!s || !s->score_any)
        return;
    for (int i = 0; i < n; i++) {
        if (scores[i] > max)
            max = scores[i];
        if (scores[i] < min)
            min = scores[i];
    }
    int64_t diff = max - min;
    for (int i = 0; i < n; i++) {
        double f = 0;
        if (diff > 0)
            f = (double)FW_MAX_SCORE * ((double)(scores[i] - min) / (double)diff);
        scores[i] = (int64_t)f;
    }
}

void plugin_inter_pod_affinity(fw_plugin_t *pl, int score_weight)
{
    *pl = (fw_plugin_t){ .name = "InterPodAffinity",
                         .pre_filter = ipa_pre_filter,
                         .filter = ipa_filter,
                         .pre_score = ipa_pre_score,
                         .score = ipa_score,
                         .normalize = ipa_normalize,
                         .add_pod = ipa_add_pod,
                         .remove_pod = ipa_remove_pod,
                         .state_free = ipa_state_free,
                         .weight = score_weight };
}
