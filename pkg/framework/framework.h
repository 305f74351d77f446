/* framework.h -- the scheduling framework: extension points and the plugins
 * behind them, as kube-scheduler's pkg/scheduler/framework.
 *
 *   QueueSort -> PreFilter -> Filter -> (PostFilter: preemption, borrowing)
 *   -> PreScore -> Score -> NormalizeScore -> Reserve -> Permit -> Bind
 *
 * This module runs PreFilter, Filter, PreScore, Score and NormalizeScore over
 * a set of nodes; QueueSort lives in queue/, PostFilter in preemption/,
 * Reserve/Permit/Bind in scheduler/. A plugin is a small table of function
 * pointers (any may be NULL), one file each under framework/plugins/.
 *
 * A cycle_state_t is made per scheduling attempt and lets PreFilter compute
 * once what every Filter call needs. */
#ifndef AISCHED_FRAMEWORK_H
#define AISCHED_FRAMEWORK_H

#include <stddef.h>
#include <stdint.h>
#include "api/types.h"
#include "framework/nodeinfo.h"
#include "framework/nodematch.h"

#define FW_MAX_REASONS 6
#define FW_REASON_LEN  96
#define FW_MAX_SCORE   100

typedef enum {
    FW_SUCCESS = 0,
    FW_UNSCHEDULABLE = 1,              /* may fit after preemption */
    FW_UNSCHEDULABLE_UNRESOLVABLE = 2, /* preemption cannot help (selector, taint, ...) */
    FW_ERROR = 3
} fw_code_t;

/* Why a node was rejected; reasons are kube-scheduler's wording
 * ("Insufficient cpu", "node(s) didn't match Pod's node affinity/selector"). */
typedef struct fw_status {
    fw_code_t code;
    int nreasons;
    char reasons[FW_MAX_REASONS][FW_REASON_LEN];
    const char *plugin; /* the failing plugin's name (static), NULL if none */
} fw_status_t;

void fw_status_reset(fw_status_t *st);
void fw_status_add(fw_status_t *st, fw_code_t code, const char *reason);

typedef struct cycle_state cycle_state_t;
typedef struct fw_plugin fw_plugin_t;

/* What PreFilter may read beyond the pod and the node at hand: the whole
 * cluster, for plugins whose answer depends on other nodes and pods
 * (InterPodAffinity, PodTopologySpread, volumes). Borrowed from the cache:
 * valid while the caller holds the cache lock. Unit tests may leave any
 * member NULL/0; plugins then behave as if the cluster were empty. */
struct fw_topo_index;
typedef struct fw_cluster {
    node_info_t *const *nodes; /* every node of the cluster (all pools) */
    int nnodes;
    struct volume_store *volumes; /* PVs, PVCs, classes, CSINodes (volume/volume.h); may be NULL */
    struct dra_store *dra;        /* DRA's classes, slices, claims (dra/store.h); may be NULL */
    /* Incremental per-topology-value pod counts (framework/topo_index.h),
     * owned by the cache; NULL: the inter-pod plugins scan nodes[]. */
    struct fw_topo_index *index;
    /* Other pool threads reserve on their nodes under the read lock, holding
     * the node's stripe: a plugin reading another node's pods brackets the
     * read with node_lock(lock_ud, name, 1) / (.., 0). NULL: no locking. */
    void (*node_lock)(void *lock_ud, const char *node, int lock);
    void *lock_ud;
} fw_cluster_t;

typedef enum { SCORE_LEAST_ALLOCATED = 0, SCORE_MOST_ALLOCATED = 1 } score_strategy_t;

/* Plugin table. ctx is the plugin's own configuration. */
struct fw_plugin {
    const char *name;
    int (*pre_filter)(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st);
    int (*filter)(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st);
    int64_t (*score)(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni);
    /* Rescales raw scores in place to 0..FW_MAX_SCORE. */
    void (*normalize)(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, int64_t *scores, int n);
    /* PreScore: sees the feasible nodes before Score runs on each of them. */
    void (*pre_score)(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, node_info_t *const *nodes, int n);
    /* PreFilterExtensions: `other` is added to / removed from ni (preemption
     * simulating victims' removal); the PreFilter state follows. */
    void (*add_pod)(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const pod_t *other,
                    const node_info_t *ni);
    void (*remove_pod)(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const pod_t *other,
                       const node_info_t *ni);
    /* Frees what this plugin's PreFilter left in its cycle-state slot
     * (cycle_state_slot); NULL when it allocates nothing. */
    void (*state_free)(void *slot);
    void *ctx;
    int weight; /* score weight; 0 disables scoring */
    int index;  /* position in the framework; its cycle-state slot */
};

/* Per-resource weights for the (Least|Most)Allocated strategy. */
typedef struct fw_resource_weight {
    char name[64]; /* "cpu", "memory", "nvidia.com/gpu", ... */
    int weight;
} fw_resource_weight_t;

/* Extension points as KubeSchedulerConfiguration names them. The framework
 * runs preFilter, filter, preScore and score; the others are reached through
 * plugins outside it (queue order, preemption, binder), which a profile may
 * only keep or disable. */
typedef enum {
    FW_PT_QUEUE_SORT,
    FW_PT_PRE_FILTER,
    FW_PT_FILTER,
    FW_PT_POST_FILTER,
    FW_PT_PRE_SCORE,
    FW_PT_SCORE,
    FW_PT_RESERVE,
    FW_PT_PERMIT,
    FW_PT_PRE_BIND,
    FW_PT_BIND,
    FW_PT_POST_BIND,
    FW_NPOINTS
} fw_point_t;

#define FW_PLUGIN_NAME_LEN 64
#define FW_MAX_PLUGIN_OPS  64

/* One line of a profile's `plugins:` section: enable (with a weight at
 * score) or disable a plugin at a point; name "*" disables every default. */
typedef struct fw_plugin_op {
    int point;  /* fw_point_t */
    int enable; /* 1 enabled, 0 disabled */
    int weight; /* score weight; 0 means 1, as kube */
    int line;   /* source line for messages, 0 if none */
    char name[FW_PLUGIN_NAME_LEN];
} fw_plugin_op_t;

/* PodTopologySpread's default constraints (pluginConfig args). */
#define FW_MAX_DEFAULT_SPREAD 4
typedef struct fw_spread_default {
    int max_skew;
    char topology_key[FW_PLUGIN_NAME_LEN * 2];
} fw_spread_default_t;

typedef struct fw_config {
    score_strategy_t strategy;           /* default SCORE_MOST_ALLOCATED (bin-pack GPUs) */
    fw_resource_weight_t res_weights[8]; /* default cpu 1, memory 1, nvidia.com/gpu 3 */
    int nres_weights;
    int weight_resources;             /* NodeResources(Least|Most)Allocated, default 1 */
    int weight_balanced;              /* NodeResourcesBalancedAllocation, default 1 */
    int weight_node_affinity;         /* preferred NodeAffinity, default 1 */
    int weight_taint_toleration;      /* PreferNoSchedule, default 1 */
    int percentage_of_nodes_to_score; /* 0 = adaptive like kube-scheduler */
    /* kube 1.23+ maths of the resource scores (kubescheduler.config.k8s.io/v1
     * profiles): the Least/Most allocated scorer leaves out an extended
     * resource the pod does not request; BalancedAllocation scores
     * (1 - std) of the actual request fractions and skips best-effort pods.
     * 0: v1.20's. */
    int v1_resource_scores;
    /* The profile's plugin changes over v1.20's default set, in order. */
    fw_plugin_op_t plugin_ops[FW_MAX_PLUGIN_OPS];
    int nplugin_ops;
    /* PodTopologySpread defaulting: System (zone 5, hostname 3, ScheduleAnyway)
     * unless list_defaulting, then spread_defaults (ScheduleAnyway only). */
    int spread_list_defaulting;
    fw_spread_default_t spread_defaults[FW_MAX_DEFAULT_SPREAD];
    int nspread_defaults;
} fw_config_t;

/* "filter" -> FW_PT_FILTER (KubeSchedulerConfiguration keys); -1 if none. */
int fw_point_from_name(const char *name);
const char *fw_point_name(int point);
/* 1: a plugin of that name extends the point; 0: no such plugin; -1: the
 * plugin exists but does not extend the point. */
int fw_plugin_known(const char *name, int point);
/* Checks a configuration the way kube-scheduler does when it builds a
 * profile (a plugin enabled twice at one point, no bind or queue-sort
 * plugin). 0, or -1 with *line the offending op's line (0 if none). */
int fw_config_check(const fw_config_t *c, char *err, size_t errlen, int *line);

typedef struct framework framework_t;

void fw_config_default(fw_config_t *c);
/* Builds the default plugin set from the configuration; caller frees. */
framework_t *framework_new(const fw_config_t *c);
void framework_free(framework_t *fw);
const fw_config_t *framework_config(const framework_t *fw);
/* Whether the profile keeps DefaultPreemption at postFilter. */
int framework_preemption_enabled(const framework_t *fw);
/* Score weight of an enabled score plugin, 0 when it is not enabled there. */
int framework_score_weight(const framework_t *fw, const char *name);
/* Whether the named plugin's Filter runs in this profile. */
int framework_filter_enabled(const framework_t *fw, const char *name);
/* Source of the Services/RCs/ReplicaSets/StatefulSets for default spreading
 * (owners/owners.h); borrowed, may be NULL (then no default spreading). */
struct owners;
void framework_set_owners(framework_t *fw, struct owners *o);

cycle_state_t *cycle_state_new(void);
void cycle_state_free(cycle_state_t *cs);
/* The cluster view for the next PreFilter (borrowed; NULL for none). */
void cycle_state_set_cluster(cycle_state_t *cs, const fw_cluster_t *cl);
const fw_cluster_t *cycle_state_cluster(const cycle_state_t *cs);
/* The nodes the attempt must stay in (a pod set's node match, set by its
 * rows), enforced by the TopologyDomain filter; borrowed, NULL for none. */
void cycle_state_set_match(cycle_state_t *cs, const fw_node_match_t *m);
const fw_node_match_t *cycle_state_match(const cycle_state_t *cs);
/* A plugin's private per-cycle data (owned by the state; freed through the
 * plugin's state_free when PreFilter runs again or the state is freed). */
void *cycle_state_slot(const cycle_state_t *cs, const fw_plugin_t *pl);
void cycle_state_set_slot(cycle_state_t *cs, const fw_plugin_t *pl, void *data);

/* The view PreFilter uses for a state given none (preemption's per-node
 * simulation, borrowing): only members valid without the cache lock (the
 * volume store); copied. */
void framework_set_base_cluster(framework_t *fw, const fw_cluster_t *cl);
/* Whether the profile runs plugin name at point (for points the scheduler
 * runs itself: VolumeBinding's Reserve and PreBind). */
int framework_runs(const framework_t *fw, int point, const char *name);

/* PreFilter for all plugins; FW_SUCCESS or the first failure in st. */
int framework_pre_filter(framework_t *fw, cycle_state_t *cs, const pod_t *pod, fw_status_t *st);
/* PreFilterExtensions of every plugin: `other` was added to / removed from
 * ni after PreFilter ran for pod (cs must be prefiltered for pod). */
void framework_add_pod(framework_t *fw, cycle_state_t *cs, const pod_t *pod, const pod_t *other, const node_info_t *ni);
void framework_remove_pod(framework_t *fw, cycle_state_t *cs, const pod_t *pod, const pod_t *other,
                          const node_info_t *ni);
/* Every Filter on one node; st gets the reasons of the failing plugins. */
int framework_filter(framework_t *fw, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st);
/* Scores the feasible nodes: out[i] = sum over plugins of weight *
 * normalized score. */
void framework_score(framework_t *fw, cycle_state_t *cs, const pod_t *pod, node_info_t *const *nodes, int n,
                     int64_t *out);

/* How many feasible nodes to find before scoring (kube-scheduler's
 * percentageOfNodesToScore, adaptive: 50% at 100 nodes down to 5%, at
 * least 100). */
int framework_num_feasible_to_find(const framework_t *fw, int nnodes);
/* Score, plugin by plugin, for a decision record (not the hot path): for
 * each score plugin p, per_plugin[p * n + i] is node i's weighted score and
 * names[p] the plugin's name; returns the number of score plugins (at most
 * maxp). out[i] is the total, as framework_score's. */
int framework_score_explain(framework_t *fw, cycle_state_t *cs, const pod_t *pod, node_info_t *const *nodes, int n,
                            int64_t *out, int64_t *per_plugin, const char **names, int maxp);

/* Failure summary across nodes: "0/5 nodes are available: 3 Insufficient cpu,
 * 2 node(s) didn't match Pod's node affinity/selector." Reasons sorted as
 * kube-scheduler sorts them (alphabetically). Caller frees. */
typedef struct fw_diagnosis fw_diagnosis_t;
fw_diagnosis_t *fw_diagnosis_new(void);
void fw_diagnosis_add(fw_diagnosis_t *d, const fw_status_t *st);
/* The same, with the node that gave st: the first few nodes per reason are
 * kept as examples. node is borrowed until fw_diagnosis_own_examples (the
 * cache's names, valid under its lock) so a pass that places the pod
 * copies nothing. */
void fw_diagnosis_add_node(fw_diagnosis_t *d, const fw_status_t *st, const char *node);
/* Copies the borrowed example names: the diagnosis outlives the lock. */
void fw_diagnosis_own_examples(fw_diagnosis_t *d);
/* Its reasons, for a decision record: reason i's text, failing plugin (may
 * be NULL), node count and up to FW_DIAG_EXAMPLES example nodes. */
#define FW_DIAG_EXAMPLES 3
int fw_diagnosis_len(const fw_diagnosis_t *d);
int fw_diagnosis_get(const fw_diagnosis_t *d, int i, const char **reason, const char **plugin, int *count,
                     const char *const **examples, int *nexamples);
char *fw_diagnosis_message(const fw_diagnosis_t *d, int nnodes);
void fw_diagnosis_free(fw_diagnosis_t *d);

/* Whether a pod fits a node's resources given the node's requested vector;
 * used by preemption to simulate removals. Adds reasons to st if not. */
int fw_fits_resources(const pod_t *pod, const node_t *node, const resources_t *requested, int npods, fw_status_t *st);

#endif
