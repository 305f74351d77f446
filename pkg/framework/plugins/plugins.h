/* plugins.h -- internal to the framework: the per-cycle state the plugins
 * share, their constructors and a few helpers they have in common.
 *
 * Not part of the framework's public contract; only framework.c, the plugin
 * files and the framework's unit tests include it. */
#ifndef AISCHED_FW_PLUGINS_H
#define AISCHED_FW_PLUGINS_H

#include <stdint.h>
#include "framework/framework.h"
#include "api/storage.h"

/* kube-scheduler v1.20 reason strings. */
#define FW_REASON_UNKNOWN_CONDITION "node(s) had unknown conditions"
#define FW_REASON_UNSCHEDULABLE     "node(s) were unschedulable"
#define FW_REASON_NODE_NAME         "node(s) didn't match the requested hostname"
#define FW_REASON_NODE_AFFINITY     "node(s) didn't match Pod's node affinity/selector"
#define FW_REASON_NODE_PORTS        "node(s) didn't have free ports for the requested pod ports"
#define FW_REASON_TOO_MANY_PODS     "Too many pods"
/* InterPodAffinity and PodTopologySpread (v1.20). */
#define FW_REASON_AFFINITY_NOT_MATCH     "node(s) didn't match pod affinity/anti-affinity"
#define FW_REASON_AFFINITY_RULES         "node(s) didn't match pod affinity rules"
#define FW_REASON_ANTI_AFFINITY_RULES    "node(s) didn't match pod anti-affinity rules"
#define FW_REASON_EXISTING_ANTI_AFFINITY "node(s) didn't satisfy existing pods anti-affinity rules"
#define FW_REASON_SPREAD                 "node(s) didn't match pod topology spread constraints"
#define FW_REASON_SPREAD_MISSING_LABEL   FW_REASON_SPREAD " (missing required label)"
#define FW_LABEL_HOSTNAME                "kubernetes.io/hostname"

#define FW_TAINT_UNSCHEDULABLE "node.kubernetes.io/unschedulable"

/* What PreFilter works out once per pod so Filter (run for thousands of
 * nodes) does not: a few flags, no allocation. `pod` says whom it is for;
 * the framework re-runs PreFilter when asked to filter another pod. */
#define FW_MAX_PLUGINS 32

struct cycle_state {
    const pod_t *pod;
    int prefiltered;
    const fw_cluster_t *cluster;  /* borrowed; may be NULL */
    const fw_node_match_t *match; /* borrowed; the pod set's node match, NULL for none */
    /* Per-plugin data by plugin index, with the function that frees it. */
    void *slot[FW_MAX_PLUGINS];
    void (*slot_free[FW_MAX_PLUGINS])(void *);
    int tolerates_unschedulable; /* NodeUnschedulable */
    int requests_nothing;        /* NodeResourcesFit: only the pod count matters */
    int has_affinity;            /* NodeAffinity: nodeSelector or required terms */
    /* Set by a PreScore (fw_score_uniform) that knows every node scores the
     * same after normalisation: Score and NormalizeScore are skipped. */
    unsigned char uniform_set[FW_MAX_PLUGINS];
    int64_t uniform[FW_MAX_PLUGINS];
};

/* From PreScore: every node gets `score` (already normalised) from this
 * plugin for this pod; the framework adds weight * score without calling
 * Score per node. */
void fw_score_uniform(cycle_state_t *cs, const fw_plugin_t *pl, int64_t score);

/* Resolved weight of one resource for the (Least|Most)Allocated scorer. */
typedef enum { RK_CPU, RK_MEMORY, RK_EPHEMERAL, RK_SCALAR } res_kind_t;

typedef struct res_scorer_entry {
    res_kind_t kind;
    const char *name; /* scalar name, interned (res_intern): the config it came from may be a temporary */
    int64_t weight;
} res_scorer_entry_t;

typedef struct res_scorer_ctx {
    score_strategy_t strategy;
    int skip_unrequested; /* leave out extended resources the pod does not request (kube 1.23+) */
    res_scorer_entry_t res[8];
    int nres;
} res_scorer_ctx_t;

/* Constructors: fill *pl (which the caller owns). */
void plugin_node_unschedulable(fw_plugin_t *pl);
void plugin_node_name(fw_plugin_t *pl);
void plugin_node_resources_fit(fw_plugin_t *pl);
void plugin_node_ports(fw_plugin_t *pl);
void plugin_node_affinity(fw_plugin_t *pl, int score_weight);
void plugin_taint_toleration(fw_plugin_t *pl, int score_weight);
/* ctx is filled from the configuration and must outlive the plugin. */
void plugin_resource_allocation(fw_plugin_t *pl, res_scorer_ctx_t *ctx, const fw_config_t *c);
void plugin_balanced_allocation(fw_plugin_t *pl, int score_weight);
/* kube 1.23+'s NodeResourcesBalancedAllocation (v1 profiles). */
void plugin_balanced_allocation_v1(fw_plugin_t *pl, int score_weight);
/* Volume plugins (they read the store through fw_cluster_t.volumes). */
void plugin_volume_restrictions(fw_plugin_t *pl);
void plugin_node_volume_limits(fw_plugin_t *pl);
/* EBSLimits (0), GCEPDLimits (1), AzureDiskLimits (2). */
void plugin_in_tree_volume_limits(fw_plugin_t *pl, int which);
void plugin_volume_binding(fw_plugin_t *pl);
void plugin_dynamic_resources(fw_plugin_t *pl);
void plugin_volume_zone(fw_plugin_t *pl);
void plugin_image_locality(fw_plugin_t *pl);
void plugin_node_prefer_avoid_pods(fw_plugin_t *pl);
/* Default spreading, which PodTopologySpread runs for pods without
 * explicit constraints (v1.20's system defaults over the selectors of the
 * pod's Services/RCs/RSs/StatefulSets; fw gives the owners store and the
 * defaulting config): prepare at PreScore (NULL when the pod has its own
 * constraints: nothing to do), score per node (-1 for a node lacking a key,
 * as kube's IgnoredNodes), normalize in place, free with the cycle. */
typedef struct ds_state ds_state_t;
ds_state_t *default_spread_prepare(const framework_t *fw, const fw_cluster_t *cl, const pod_t *pod,
                                   node_info_t *const *nodes, int n);
int64_t default_spread_score(const ds_state_t *s, const pod_t *pod, const node_info_t *ni);
void default_spread_normalize(const ds_state_t *s, int64_t *scores, int n);
void default_spread_free(ds_state_t *s);
/* 1 when every node scores the same (*score) for this state: NULL (explicit
 * constraints: 0) or no default constraint applies (100). */
int default_spread_uniform(const ds_state_t *s, int64_t *score);
/* The framework's owners store (NULL until framework_set_owners). */
struct owners *framework_owners(const framework_t *fw);
void plugin_pod_topology_spread(fw_plugin_t *pl, int score_weight);
void plugin_inter_pod_affinity(fw_plugin_t *pl, int score_weight);
/* GPU fractions (gpu/gpu.h): filter by free slots, score by packing. */
void plugin_gpu_sharing(fw_plugin_t *pl, int score_weight);
/* A pod set's node match (cycle_state_set_match): nodes outside fail. */
void plugin_topology_domain(fw_plugin_t *pl);

/* Brackets a read of a node's pods in the cluster view (see fw_cluster_t). */
static inline void fw_cluster_node_lock(const fw_cluster_t *cl, const node_info_t *ni, int lock)
{
    if (cl->node_lock)
        cl->node_lock(cl->lock_ud, ni->name, lock);
}

/* spec.nodeSelector and required node affinity (kube's
 * PodMatchesNodeSelectorAndAffinityTerms). */
int fw_pod_matches_node_affinity(const pod_t *pod, const node_t *node);

/* kube's DefaultNormalizeScore: scale to 0..FW_MAX_SCORE by the maximum;
 * reverse turns "more is worse" counts into scores. */
void fw_default_normalize(int64_t *scores, int n, int reverse);

/* num * FW_MAX_SCORE / den without overflow; den > 0. */
int64_t fw_scale_score(int64_t num, int64_t den);

#endif
