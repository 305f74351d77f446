/* pool.h -- the Pool API (pools.resource.aibee.cn/v1alpha1): spec parsing,
 * the node partition rule, and per-pool usage arithmetic shared by the
 * scheduler (status writes) and `ai-scheduler pools` (the table).
 *
 * A node belongs to the one pool whose selector matches it; none or several
 * means the default pool. A pod's home pool is its annotation, or default
 * when absent or unknown. A pod bound on a node of another pool is a borrower
 * there: it counts as Used and Shared in the lending pool, Borrowed in its
 * home pool. */
#ifndef AISCHED_POOL_H
#define AISCHED_POOL_H

#include <jansson.h>
#include "api/labels.h"
#include "api/types.h"

typedef struct pool_spec {
    char *name;
    char *uid;
    char *resource_version;
    int64_t generation;
    selector_t selector;
    int disable_preemption;
    int disable_borrowing;
    int disable_sharing;
    char **borrowing_pools; /* may borrow only from these; NULL/0 = any */
    int nborrowing;
    /* spec.preemptMinRuntime / reclaimMinRuntime: the default of the
     * pool's Queues (ms; -1 never a victim; 0, the default, none). */
    int64_t preempt_min_runtime_ms, reclaim_min_runtime_ms;
    int64_t created_ms;
} pool_spec_t;

/* Validates as the API's schema would not: selector operators, value lists,
 * types of the flags. -1 and a message on anything wrong. */
int pool_spec_from_json(pool_spec_t *out, json_t *obj, char *err, size_t errlen);
void pool_spec_free(pool_spec_t *p);
/* The built-in default pool: matches nothing by selector, every flag false. */
void pool_spec_default(pool_spec_t *out);

/* Index in specs[] of the single pool whose selector matches the node, or -1
 * for the default pool (no match, or more than one). specs[] never contains
 * the default pool itself. */
int pool_partition_node(const pool_spec_t *specs, int n, const labels_t *labels, const char *node_name);
/* May a pod of pool `from` borrow from pool `to` (flags and borrowingPools)? */
int pool_may_borrow(const pool_spec_t *from, const pool_spec_t *to);

typedef struct pool_usage {
    resources_t capacity;    /* sum of node capacity */
    resources_t allocatable; /* sum of node allocatable */
    resources_t used;        /* requests of non-terminal pods bound to its nodes */
    resources_t shared;      /* of those, pods of other pools (lent out) */
    resources_t borrowed;    /* its own pods running on other pools' nodes */
    resources_t pending_req; /* requests of its pending pods */
    int nodes;
    int pods_running;  /* non-terminal pods on its nodes */
    int pending;       /* its pods waiting for a node */
    int pending_gangs; /* distinct gangs (PodGroups) among those pods */
    int gated;         /* its unbound pods with scheduling gates: not pending, not tried */
    int gpu_shared;    /* GPUs of its nodes split into fractions (reservation pods, gpu/gpu.h) */
    /* Held for a large gang's reservation, as the Pool's .status.reservation
     * says (the table reads it; pool_usage_compute leaves them 0). */
    int64_t held_gpu;
    int held_nodes;
    char held_for[256]; /* its PodGroup, "ns/name" ("" when none) */
} pool_usage_t;

/* Computes usage for n_specs pools plus default (out[n_specs] is default;
 * out must have n_specs+1 entries). Pending counts unbound, non-terminal pods
 * whose schedulerName is scheduler_name, except those with scheduling
 * gates: they count as gated (kube's pending_pods{queue="gated"}). */
void pool_usage_compute(const pool_spec_t *specs, int n_specs, node_t *const *nodes, int nnodes, pod_t *const *pods,
                        int npods, const char *scheduler_name, pool_usage_t *out);
/* The Pool's .status as written by the scheduler: {capacity, allocatable,
 * used (alias requests), shared, borrowed, free, pending, gated, nodes} with
 * Kubernetes quantity strings. New reference. */
json_t *pool_usage_to_status(const pool_usage_t *u);

#endif
