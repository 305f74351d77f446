/* pod_topology_spread.c -- PodTopologySpread (kube-scheduler v1.20): Filter
 * on DoNotSchedule constraints (skew = matching pods in the node's domain +
 * self - global minimum over eligible domains <= maxSkew), Score on
 * ScheduleAnyway constraints (fewer matching pods is better, weighted by
 * log(number of domains + 2)).
 *
 * Eligible domains come from nodes that pass the pod's nodeSelector and
 * required node affinity and carry every constraint's key; as in v1.20,
 * pods count on any node of an eligible domain. Pods being deleted never
 * count; default (system) constraints are not applied here.
 *
 * Fields of later releases, as current kube (podtopologyspread/filtering.go,
 * scoring.go of 1.33-1.35): minDomains (fewer eligible domains than it: the
 * global minimum is 0); and, for a pod whose constraints set
 * nodeAffinityPolicy or nodeTaintsPolicy, domains and counts come only from
 * the nodes that pass each constraint's policies (matchNodeInclusionPolicies).
 * matchLabelKeys is already in the selector (api/affinity.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "framework/plugins/plugins.h"
#include "framework/plugins/topo_count.h"
#include "framework/topo_index.h"

/* Above this many domains (hostname spread on a big cluster) copying them
 * all costs as much as the scan. */
#define INDEX_MAX_DOMAINS 256
#include "util/util.h"

/* kube's criticalPaths: [0] always holds the minimum. Values are owned. */
typedef struct crit_paths {
    char *val[2];
    int32_t num[2];
} crit_paths_t;

typedef struct pts_state {
    const pod_affinity_t *a; /* borrowed from the pod; NULL: no constraints */
    int has_cluster;
    const spread_constraint_t **hard; /* DoNotSchedule constraints */
    int nhard;
    crit_paths_t *paths; /* per hard constraint */
    int *ndomains;       /* per hard constraint: eligible domains (minDomains) */
    tp_counts_t pairs;   /* eligible pairs -> matching pods */
    /* PreScore */
    const spread_constraint_t **soft; /* ScheduleAnyway constraints */
    int nsoft;
    double *weights; /* per soft constraint */
    tp_counts_t score_pairs;
    char *ignored; /* per scored node: lacks a soft key */
    int nscored;
    /* v1.20's default spreading (system default constraints over the
     * selectors of the pod's Services/RCs/RSs/StatefulSets) for a pod
     * without constraints of its own; NULL otherwise. */
    ds_state_t *dflt;
} pts_state_t;

static void pts_state_free(void *p)
{
    pts_state_t *s = p;
    if (!s)
        return;
    for (int i = 0; i < s->nhard; i++) {
        free(s->paths[i].val[0]);
        free(s->paths[i].val[1]);
    }
    free(s->paths);
    free(s->ndomains);
    free(s->hard);
    free(s->soft);
    free(s->weights);
    free(s->ignored);
    tpc_free(&s->pairs);
    tpc_free(&s->score_pairs);
    default_spread_free(s->dflt);
    free(s);
}

static void paths_update(crit_paths_t *p, const char *val, int32_t num)
{
    int i = -1;
    if (p->val[0] && strcmp(val, p->val[0]) == 0)
        i = 0;
    else if (p->val[1] && strcmp(val, p->val[1]) == 0)
        i = 1;
    if (i >= 0) {
        p->num[i] = num;
        if (p->num[0] > p->num[1]) {
            char *tv = p->val[0];
            int32_t tn = p->num[0];
            p->val[0] = p->val[1];
            p->num[0] = p->num[1];
            p->val[1] = tv;
            p->num[1] = tn;
        }
    } else if (num < p->num[0]) {
        free(p->val[1]);
        p->val[1] = p->val[0];
        p->num[1] = p->num[0];
        p->val[0] = util_strdup(val);
        p->num[0] = num;
    } else if (num < p->num[1]) {
        free(p->val[1]);
        p->val[1] = util_strdup(val);
        p->num[1] = num;
    }
}

static int has_all_keys(const node_t *node, const spread_constraint_t *const *c, int n)
{
    for (int i = 0; i < n; i++)
        if (!labels_get(&node->labels, c[i]->topology_key))
            return 0;
    return 1;
}

/* kube's matchNodeInclusionPolicies: nodeAffinityPolicy Honor keeps only
 * nodes matching the pod's nodeSelector and required node affinity;
 * nodeTaintsPolicy Honor drops nodes with a NoSchedule/NoExecute taint the
 * pod does not tolerate. */
static int node_included(const spread_constraint_t *c, const pod_t *pod, const node_t *node)
{
    if (c->affinity_honor && !fw_pod_matches_node_affinity(pod, node))
        return 0;
    return !c->taints_honor || pod_tolerates_taints(pod, node->taints, node->ntaints, 1, NULL);
}

/* Whether the constraint's selector matches the pod's labels (no namespace:
 * kube's self-match and AddPod/RemovePod check the namespace apart). */
static int selector_hit(const spread_constraint_t *c, const pod_t *p)
{
    return !c->match_nothing && selector_matches(&c->selector, &p->labels, NULL);
}

/* A node of the cluster view: its pods read under its stripe. */
static int64_t count_on_node_locked(const fw_cluster_t *cl, const node_info_t *ni, const spread_constraint_t *c,
                                    const char *ns);

static int64_t count_on_node(const node_info_t *ni, const spread_constraint_t *c, const char *ns)
{
    int64_t n = 0;
    for (int j = 0; j < ni->npods; j++)
        if (!pod_is_terminal(ni->pods[j]) && spread_matches(c, ns, ni->pods[j]))
            n++;
    return n;
}

static int64_t count_on_node_locked(const fw_cluster_t *cl, const node_info_t *ni, const spread_constraint_t *c,
                                    const char *ns)
{
    fw_cluster_node_lock(cl, ni, 1);
    int64_t n = count_on_node(ni, c, ns);
    fw_cluster_node_lock(cl, ni, 0);
    return n;
}

/* v1.20's calPreFilterState: domains of nodes passing the pod's node
 * affinity, at 0, then the matching pods of every node of such a domain. */
static void pre_filter_v120(pts_state_t *s, const fw_cluster_t *cl, const pod_t *pod)
{
    for (int i = 0; i < cl->nnodes; i++) {
        const node_t *node = cl->nodes[i]->node;
        if (!node || !fw_pod_matches_node_affinity(pod, node) || !has_all_keys(node, s->hard, s->nhard))
            continue;
        for (int k = 0; k < s->nhard; k++)
            tpc_add(&s->pairs, s->hard[k]->topology_key, labels_get(&node->labels, s->hard[k]->topology_key), 0, 0);
    }
    for (int i = 0; i < cl->nnodes && tpc_len(&s->pairs) > 0; i++) {
        const node_info_t *ni = cl->nodes[i];
        if (!ni->node)
            continue;
        for (int k = 0; k < s->nhard; k++) {
            const char *key = s->hard[k]->topology_key, *v = labels_get(&ni->node->labels, key);
            int present = 0;
            tpc_get(&s->pairs, key, v ? v : "", &present);
            if (present) {
                int64_t n = count_on_node_locked(cl, ni, s->hard[k], pod->ns);
                if (n)
                    tpc_add(&s->pairs, key, v ? v : "", n, 0);
            }
        }
    }
}

/* Current kube's calPreFilterState: a node carrying every key makes a
 * domain of each constraint whose policies it passes, and only its pods
 * count there. */
static void pre_filter_policies(pts_state_t *s, const fw_cluster_t *cl, const pod_t *pod)
{
    for (int i = 0; i < cl->nnodes; i++) {
        const node_info_t *ni = cl->nodes[i];
        if (!ni->node || !has_all_keys(ni->node, s->hard, s->nhard))
            continue;
        for (int k = 0; k < s->nhard; k++) {
            if (!node_included(s->hard[k], pod, ni->node))
                continue;
            const char *key = s->hard[k]->topology_key;
            tpc_add(&s->pairs, key, labels_get(&ni->node->labels, key),
                    count_on_node_locked(cl, ni, s->hard[k], pod->ns), 0);
        }
    }
}

static int pts_pre_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    const fw_cluster_t *cl = cycle_state_cluster(cs);
    const pod_affinity_t *a = pod->interpod;
    pts_state_t *s = util_xcalloc(1, sizeof(*s));

    s->a = a;
    s->has_cluster = cl != NULL;
    tpc_init(&s->pairs, 8);
    tpc_init(&s->score_pairs, 8);
    cycle_state_set_slot(cs, pl, s);
    if (!a || a->nspread_hard == 0)
        return FW_SUCCESS;
    s->hard = util_xcalloc((size_t)a->nspread_hard, sizeof(*s->hard));
    s->paths = util_xcalloc((size_t)a->nspread_hard, sizeof(*s->paths));
    s->ndomains = util_xcalloc((size_t)a->nspread_hard, sizeof(*s->ndomains));
    for (int i = 0; i < a->nspread; i++)
        if (a->spread[i].hard)
            s->hard[s->nhard++] = &a->spread[i];
    for (int i = 0; i < s->nhard; i++)
        s->paths[i].num[0] = s->paths[i].num[1] = INT32_MAX;
    int indexed = cl && cl->index && s->nhard == 1 && spread_counts_all_nodes(s->hard[0], pod) &&
                  fw_topo_index_spread(cl->index, s->hard[0], pod->ns, &s->pairs, INDEX_MAX_DOMAINS);
    if (cl && !indexed && a->spread_policies)
        pre_filter_policies(s, cl, pod);
    else if (cl && !indexed)
        pre_filter_v120(s, cl, pod);
    size_t it = 0, klen;
    const char *k, *v;
    int64_t n;
    while (tpc_next(&s->pairs, &it, &k, &klen, &v, &n)) {
        for (int c = 0; c < s->nhard; c++) {
            const char *key = s->hard[c]->topology_key;
            if (strlen(key) == klen && memcmp(key, k, klen) == 0) {
                paths_update(&s->paths[c], v, n > INT32_MAX ? INT32_MAX : (int32_t)n);
                s->ndomains[c]++;
            }
        }
    }
    return FW_SUCCESS;
}

/* kube's updateWithPod (AddPod/RemovePod during preemption). */
static void update_with_pod(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const pod_t *other,
                            const node_info_t *ni, int64_t d)
{
    pts_state_t *s = cycle_state_slot(cs, pl);
    if (!s || !s->has_cluster || s->nhard == 0 || !ni->node || strcmp(other->ns, pod->ns) != 0 ||
        pod_is_terminal(other) || !has_all_keys(ni->node, s->hard, s->nhard))
        return;
    for (int c = 0; c < s->nhard; c++) {
        const char *key = s->hard[c]->topology_key, *v = labels_get(&ni->node->labels, key);
        int present = 0;
        if (!selector_hit(s->hard[c], other))
            continue;
        int64_t n = tpc_get(&s->pairs, key, v, &present);
        /* v1.20 counts only in the domains PreFilter found; current kube
         * counts on every node its policies include, a new domain too. */
        if (s->a->spread_policies ? !node_included(s->hard[c], pod, ni->node) : !present)
            continue;
        if (!present)
            s->ndomains[c]++;
        tpc_add(&s->pairs, key, v, d, 0);
        n += d;
        paths_update(&s->paths[c], v, n > INT32_MAX ? INT32_MAX : (int32_t)n);
    }
}

static void pts_add_pod(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const pod_t *other,
                        const node_info_t *ni)
{
    update_with_pod(pl, cs, pod, other, ni, 1);
}

static void pts_remove_pod(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const pod_t *other,
                           const node_info_t *ni)
{
    update_with_pod(pl, cs, pod, other, ni, -1);
}

static int pts_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni,
                      fw_status_t *st)
{
    const pts_state_t *s = cycle_state_slot(cs, pl);
    if (!s || s->nhard == 0 || !ni->node)
        return FW_SUCCESS;
    for (int c = 0; c < s->nhard; c++) {
        const spread_constraint_t *sc = s->hard[c];
        const char *v = labels_get(&ni->node->labels, sc->topology_key);
        if (!v) {
            fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, FW_REASON_SPREAD_MISSING_LABEL);
            return st->code;
        }
        int64_t self = selector_hit(sc, pod) ? 1 : 0;
        int64_t match = tpc_get(&s->pairs, sc->topology_key, v, NULL);
        /* kube's minMatchNum: too few eligible domains, global minimum 0. */
        int64_t min = s->ndomains[c] < sc->min_domains ? 0 : (int64_t)s->paths[c].num[0];
        if (match + self - min > sc->max_skew) {
            fw_status_add(st, FW_UNSCHEDULABLE, FW_REASON_SPREAD);
            return st->code;
        }
    }
    return FW_SUCCESS;
}

/* ---- scoring --------------------------------------------------------------- */

static void pts_pre_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, node_info_t *const *nodes, int n)
{
    pts_state_t *s = cycle_state_slot(cs, pl);
    const fw_cluster_t *cl = cycle_state_cluster(cs);
    const pod_affinity_t *a = pod->interpod;

    if (!s)
        return;
    free(s->soft);
    free(s->weights);
    free(s->ignored);
    s->soft = NULL;
    s->weights = NULL;
    s->nsoft = 0;
    tpc_free(&s->score_pairs);
    tpc_init(&s->score_pairs, 8);
    s->ignored = util_xcalloc((size_t)n + 1, 1);
    s->nscored = n;
    default_spread_free(s->dflt);
    s->dflt = NULL;
    if ((!a || a->nspread == 0) && pl->ctx) {
        int64_t u = 0;
        s->dflt = default_spread_prepare(pl->ctx, cl, pod, nodes, n);
        if (default_spread_uniform(s->dflt, &u))
            fw_score_uniform(cs, pl, u);
        return;
    }
    if (!a || a->nspread == a->nspread_hard)
        return;
    s->soft = util_xcalloc((size_t)a->nspread, sizeof(*s->soft));
    for (int i = 0; i < a->nspread; i++)
        if (!a->spread[i].hard)
            s->soft[s->nsoft++] = &a->spread[i];
    s->weights = util_xcalloc((size_t)s->nsoft, sizeof(*s->weights));
    int *size = util_xcalloc((size_t)s->nsoft, sizeof(*size));
    int nignored = 0;
    for (int i = 0; i < n; i++) {
        const node_t *node = nodes[i]->node;
        if (!node || !has_all_keys(node, s->soft, s->nsoft)) {
            s->ignored[i] = 1;
            nignored++;
            continue;
        }
        for (int c = 0; c < s->nsoft; c++) {
            const char *key = s->soft[c]->topology_key;
            if (strcmp(key, FW_LABEL_HOSTNAME) == 0)
                continue;
            const char *v = labels_get(&node->labels, key);
            int present = 0;
            tpc_get(&s->score_pairs, key, v, &present);
            if (!present) {
                tpc_add(&s->score_pairs, key, v, 0, 0);
                size[c]++;
            }
        }
    }
    for (int c = 0; c < s->nsoft; c++) {
        int sz = strcmp(s->soft[c]->topology_key, FW_LABEL_HOSTNAME) == 0 ? n - nignored : size[c];
        s->weights[c] = log((double)sz + 2);
    }
    free(size);
    for (int i = 0; cl && i < cl->nnodes && tpc_len(&s->score_pairs) > 0; i++) {
        const node_info_t *ni = cl->nodes[i];
        if (!ni->node || !has_all_keys(ni->node, s->soft, s->nsoft) ||
            (!a->spread_policies && !fw_pod_matches_node_affinity(pod, ni->node)))
            continue;
        for (int c = 0; c < s->nsoft; c++) {
            const char *key = s->soft[c]->topology_key, *v = labels_get(&ni->node->labels, key);
            int present = 0;
            if (a->spread_policies && !node_included(s->soft[c], pod, ni->node))
                continue;
            tpc_get(&s->score_pairs, key, v, &present);
            if (!present)
                continue;
            int64_t cnt = count_on_node_locked(cl, ni, s->soft[c], pod->ns);
            if (cnt)
                tpc_add(&s->score_pairs, key, v, cnt, 0);
        }
    }
}

static int64_t pts_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni)
{
    const pts_state_t *s = cycle_state_slot(cs, pl);
    double score = 0;
    if (s && s->dflt)
        return default_spread_score(s->dflt, pod, ni);
    if (!s || s->nsoft == 0 || !ni->node || !has_all_keys(ni->node, s->soft, s->nsoft))
        return 0;
    for (int c = 0; c < s->nsoft; c++) {
        const spread_constraint_t *sc = s->soft[c];
        const char *v = labels_get(&ni->node->labels, sc->topology_key);
        int64_t cnt;
        if (strcmp(sc->topology_key, FW_LABEL_HOSTNAME) == 0)
            cnt = count_on_node(ni, sc, pod->ns);
        else
            cnt = tpc_get(&s->score_pairs, sc->topology_key, v, NULL);
        score += (double)cnt * s->weights[c] + (double)(sc->max_skew - 1);
    }
    return (int64_t)score;
}

/* kube's NormalizeScore: ignored nodes get 0; the rest
 * 100 * (max + min - s) / max, or 100 when every score is 0. */
static void pts_normalize(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, int64_t *scores, int n)
{
    const pts_state_t *s = cycle_state_slot(cs, pl);
    int64_t min = INT64_MAX, max = 0;
    if (s && s->dflt) {
        default_spread_normalize(s->dflt, scores, n);
        return;
    }
    /* Without soft constraints kube gives every node 100: the same offset
     * everywhere, which changes no choice; 0 keeps totals comparable. */
    if (!s || s->nsoft == 0) {
        memset(scores, 0, sizeof(*scores) * (size_t)n);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (s->ignored && i < s->nscored && s->ignored[i]) {
            scores[i] = -1;
            continue;
        }
        if (scores[i] < min)
            min = scores[i];
        if (scores[i] > max)
            max = scores[i];
    }
    for (int i = 0; i < n; i++) {
        if (scores[i] == -1)
            scores[i] = 0;
        else if (max == 0)
            scores[i] = FW_MAX_SCORE;
        else
            scores[i] = FW_MAX_SCORE * (max + min - scores[i]) / max;
    }
}

void plugin_pod_topology_spread(fw_plugin_t *pl, int score_weight)
{
    *pl = (fw_plugin_t){ .name = "PodTopologySpread",
                         .pre_filter = pts_pre_filter,
                         .filter = pts_filter,
                         .pre_score = pts_pre_score,
                         .score = pts_score,
                         .normalize = pts_normalize,
                         .add_pod = pts_add_pod,
                         .remove_pod = pts_remove_pod,
                         .state_free = pts_state_free,
                         .weight = score_weight };
}
