/* default_spread.c -- PodTopologySpread's default spreading (kube-scheduler
 * v1.20 with the DefaultPodTopologySpread gate on, its default): a pod with
 * no topologySpreadConstraints of its own is scored as if it had the
 * system default constraints (hostname maxSkew 3, zone maxSkew 5, both
 * ScheduleAnyway) over the selector of the Services, RCs, ReplicaSets and
 * StatefulSets that select it. PreScore, Score and NormalizeScore follow
 * podtopologyspread/scoring.go. Pods with explicit constraints are left to
 * the explicit PodTopologySpread code (they score 0 here): that plugin calls
 * default_spread_* for the pods without, so v1.20's one plugin does both. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/plugins/plugins.h"
#include "owners/owners.h"
#include "util/hashmap.h"
#include "util/util.h"

#define LABEL_HOSTNAME     "kubernetes.io/hostname"
#define LABEL_ZONE         "topology.kubernetes.io/zone"
#define DS_MAX_CONSTRAINTS FW_MAX_DEFAULT_SPREAD
#define INVALID_SCORE      (-1)

typedef struct ds_constraint {
    const char *key; /* points into the framework's config or a literal */
    int max_skew;
    double weight; /* topologyNormalizingWeight */
} ds_constraint_t;

struct ds_state {
    int nc; /* 0: no default constraints apply, every node 100 */
    ds_constraint_t c[DS_MAX_CONSTRAINTS];
    selector_t sel;
    hashmap_t *pairs; /* "<constraint>\x1f<value>" -> int64_t in counts */
    int64_t *counts;
    int ncounts;
};

void default_spread_free(ds_state_t *s)
{
    if (s == NULL)
        return;
    selector_free(&s->sel);
    if (s->pairs)
        hashmap_free(s->pairs);
    free(s->counts);
    free(s);
}

/* kube's countPodsMatchSelector, minus terminal pods (kube's cache never
 * holds them). */
static int64_t count_matching(const node_info_t *ni, const selector_t *sel, const char *ns)
{
    int64_t n = 0;
    for (int i = 0; i < ni->npods; i++) {
        const pod_t *p = ni->pods[i];
        if (p->deleting || pod_is_terminal(p) || strcmp(p->ns, ns) != 0)
            continue;
        if (selector_matches(sel, &p->labels, NULL))
            n++;
    }
    return n;
}

static int has_all_keys(const ds_state_t *s, const node_t *node)
{
    for (int i = 0; i < s->nc; i++)
        if (labels_get(&node->labels, s->c[i].key) == NULL)
            return 0;
    return 1;
}

static void pair_key(char *buf, size_t len, int i, const char *value)
{
    snprintf(buf, len, "%d\x1f%s", i, value);
}

/* The constraints of the profile's defaulting, or none. */
static int build_constraints(const fw_config_t *cfg, ds_constraint_t *c)
{
    if (!cfg->spread_list_defaulting) {
        c[0] = (ds_constraint_t){ LABEL_HOSTNAME, 3, 0 };
        c[1] = (ds_constraint_t){ LABEL_ZONE, 5, 0 };
        return 2;
    }
    int n = 0;
    for (int i = 0; i < cfg->nspread_defaults && n < DS_MAX_CONSTRAINTS; i++)
        c[n++] = (ds_constraint_t){ cfg->spread_defaults[i].topology_key, cfg->spread_defaults[i].max_skew, 0 };
    return n;
}

ds_state_t *default_spread_prepare(const framework_t *fw, const fw_cluster_t *cl, const pod_t *pod,
                                   node_info_t *const *nodes, int n)
{
    node_info_t *const *all = cl && cl->nnodes > 0 ? cl->nodes : nodes;
    int nall = cl && cl->nnodes > 0 ? cl->nnodes : n;
    char key[512];

    if (pod->has_spread_constraints)
        return NULL;
    ds_state_t *s = util_xcalloc(1, sizeof(*s));
    struct owners *o = framework_owners(fw);
    if (o == NULL || owners_default_selector(o, pod->ns, &pod->labels, &s->sel) == 0)
        return s; /* no selecting object: no constraints, every node 100 */
    s->nc = build_constraints(framework_config(fw), s->c);
    if (s->nc == 0)
        return s;

    /* Topology values among the filtered nodes that have every key. */
    int topo_size[DS_MAX_CONSTRAINTS] = { 0 }, ignored = 0;
    s->pairs = hashmap_new((size_t)n * (size_t)s->nc + 1);
    s->counts = util_xcalloc((size_t)n * (size_t)s->nc + 1, sizeof(*s->counts));
    for (int i = 0; i < n; i++) {
        const node_t *node = nodes[i]->node;
        if (node == NULL || !has_all_keys(s, node)) {
            ignored++;
            continue;
        }
        for (int k = 0; k < s->nc; k++) {
            if (strcmp(s->c[k].key, LABEL_HOSTNAME) == 0)
                continue; /* per-node counts are taken at Score */
            pair_key(key, sizeof(key), k, labels_get(&node->labels, s->c[k].key));
            if (hashmap_get(s->pairs, key) == NULL) {
                hashmap_put(s->pairs, key, &s->counts[s->ncounts++]);
                topo_size[k]++;
            }
        }
    }
    for (int k = 0; k < s->nc; k++) {
        int sz = strcmp(s->c[k].key, LABEL_HOSTNAME) == 0 ? n - ignored : topo_size[k];
        s->c[k].weight = log((double)sz + 2);
    }
    /* Matching pods over the whole cluster, on nodes the pod could use. */
    for (int i = 0; i < nall; i++) {
        const node_t *node = all[i]->node;
        if (node == NULL || !fw_pod_matches_node_affinity(pod, node) || !has_all_keys(s, node))
            continue;
        for (int k = 0; k < s->nc; k++) {
            pair_key(key, sizeof(key), k, labels_get(&node->labels, s->c[k].key));
            int64_t *cnt = hashmap_get(s->pairs, key);
            if (cnt)
                *cnt += count_matching(all[i], &s->sel, pod->ns);
        }
    }
    return s;
}

int64_t default_spread_score(const ds_state_t *s, const pod_t *pod, const node_info_t *ni)
{
    char key[512];
    double score = 0;

    if (s == NULL)
        return 0;
    if (ni->node == NULL || !has_all_keys(s, ni->node))
        return INVALID_SCORE;
    for (int k = 0; k < s->nc; k++) {
        int64_t cnt = 0;
        if (strcmp(s->c[k].key, LABEL_HOSTNAME) == 0) {
            cnt = count_matching(ni, &s->sel, pod->ns);
        } else {
            pair_key(key, sizeof(key), k, labels_get(&ni->node->labels, s->c[k].key));
            const int64_t *p = hashmap_get(s->pairs, key);
            cnt = p ? *p : 0;
        }
        /* scoreForCount: maxSkew-1 waters down small differences. */
        score += (double)cnt * s->c[k].weight + (double)(s->c[k].max_skew - 1);
    }
    return (int64_t)score;
}

/* Fewer matching pods is better: 100 * (max + min - s) / max over the
 * nodes that have every key; the others get 0. */
void default_spread_normalize(const ds_state_t *s, int64_t *scores, int n)
{
    int64_t min = INT64_MAX, max = 0;

    if (s == NULL)
        return;
    for (int i = 0; i < n; i++) {
        if (scores[i] == INVALID_SCORE)
            continue;
        if (scores[i] < min)
            min = scores[i];
        if (scores[i] > max)
            max = scores[i];
    }
    for (int i = 0; i < n; i++) {
        if (scores[i] == INVALID_SCORE)
            scores[i] = 0;
        else if (max == 0)
            scores[i] = FW_MAX_SCORE;
        else
            scores[i] = FW_MAX_SCORE * (max + min - scores[i]) / max;
    }
}

int default_spread_uniform(const ds_state_t *s, int64_t *score)
{
    if (s == NULL) {
        *score = 0; /* explicit constraints: not ours to score */
        return 1;
    }
    if (s->nc == 0) {
        *score = FW_MAX_SCORE; /* kube: no constraints, max score 0, every node 100 */
        return 1;
    }
    return 0;
}
