/* topo_index.h -- per-topology-value counts of pods, kept up to date as pods
 * come and go, so InterPodAffinity and PodTopologySpread PreFilter cost
 * O(distinct terms) instead of O(pods in the cluster).
 *
 * Two parts:
 *  - the registry of existing pods' terms (required anti-affinity, required
 *    affinity, preferred affinity and anti-affinity), always complete: per
 *    distinct term, the summed weight (count for required terms) of the pods
 *    carrying it, per value of the term's topology key;
 *  - lazy entries for what pending pods ask: per matcher (a term, all the
 *    pod's affinity terms together, or a spread constraint's namespace and
 *    selector) and topology key, the count of matching pods per value, and
 *    per topology key used by a spread constraint the nodes per value.
 *    Registered by fw_topo_index_prepare when a pending pod first needs one;
 *    the least recently used are dropped beyond a cap.
 *
 * A pod counts on its node while the node object exists and carries the
 * key; callers report every change (fw_topo_index_pod, fw_topo_index_node)
 * with the node object the pod was counted against.
 *
 * Owner: the cache (pkg/cache), which creates it, feeds it under its locks
 * and frees it. Locking: one internal mutex, a leaf below the cache's node
 * stripes and pod-map mutex; every function takes it. fw_topo_index_prepare
 * reads node_info pods: the caller holds the cache write lock. Query results
 * are copies, valid after the mutex is released. */
#ifndef AISCHED_TOPO_INDEX_H
#define AISCHED_TOPO_INDEX_H

#include "api/types.h"
#include "framework/nodeinfo.h"
#include "framework/plugins/topo_count.h"

typedef struct fw_topo_index fw_topo_index_t;

fw_topo_index_t *fw_topo_index_new(void);
void fw_topo_index_free(fw_topo_index_t *x);

/* Cache side: pod p counted (+1) or uncounted (-1) on a node whose object
 * is node (NULL: nothing to count). Terminal pods are ignored. */
void fw_topo_index_pod(fw_topo_index_t *x, const pod_t *p, const node_t *node, int sign);
/* A node object appeared (+1) or went (-1): spread domains. */
void fw_topo_index_node(fw_topo_index_t *x, const node_t *node, int sign);

/* Whether every lazy entry pod's PreFilter uses exists. */
int fw_topo_index_ready(fw_topo_index_t *x, const pod_t *pod);
/* Registers the missing ones, counting pods of nodes[] (cache write lock). */
void fw_topo_index_prepare(fw_topo_index_t *x, const pod_t *pod, node_info_t *const *nodes, int n);

/* Plugin side. Each adds into out and returns 1, or returns 0 (out left as
 * it was) when an entry is missing: the caller then scans the cluster. */
/* Existing pods' required anti-affinity terms pod matches. */
int fw_topo_index_existing_anti(fw_topo_index_t *x, const pod_t *pod, tp_counts_t *out);
/* Pods matching all of the pod's required affinity terms (per term's key)
 * into aff; pods matching each required anti-affinity term into anti. */
int fw_topo_index_incoming(fw_topo_index_t *x, const pod_t *pod, tp_counts_t *aff, tp_counts_t *anti);
/* InterPodAffinity's score map: the pod's preferred terms over existing
 * pods, existing pods' required affinity (weight hard_weight) and preferred
 * terms over the pod. *any: some term matched somewhere. */
int fw_topo_index_score(fw_topo_index_t *x, const pod_t *pod, int hard_weight, tp_counts_t *out, int *any);
/* One hard spread constraint of a pod without node selector or required
 * node affinity: every domain of the key at 0, plus matching pods of ns.
 * 0 also when the key has more than max_domains values. */
int fw_topo_index_spread(fw_topo_index_t *x, const spread_constraint_t *c, const char *ns, tp_counts_t *out,
                         int max_domains);

/* Whether p matches the required affinity terms some pending pod asked
 * about (kube moves such waiting pods when a matching pod is bound). */
int fw_topo_index_affinity_wanted(fw_topo_index_t *x, const pod_t *p);

#endif
