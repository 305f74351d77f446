/* nodeinfo.h -- what the framework knows of one node: the Node, the pods on
 * it (bound or assumed) and their summed requests. Owned by the cache; a
 * scheduling cycle reads it under the cache's lock or on a snapshot copy. */
#ifndef AISCHED_NODEINFO_H
#define AISCHED_NODEINFO_H

#include <stdint.h>
#include "api/types.h"

typedef struct node_info {
    node_t *node; /* one reference held; NULL while only pods know the name */
    char *name;   /* owned */
    pod_t **pods; /* one reference each */
    int npods, cap;
    resources_t requested; /* sum of requests of non-terminal pods */
    int64_t nonzero_cpu;   /* sums of pods' nonzero_* (scoring) */
    int64_t nonzero_mem;
    uint64_t generation; /* bumped on every change */
    int pool;            /* index of the pool owning the node (pool module) */
    int npods_affinity;  /* pods with any pod (anti-)affinity term */
    int npods_anti_req;  /* pods with required pod anti-affinity */
    /* Shared GPU slots and the fractions on them (gpu/gpu.h), owned; NULL
     * while nothing on the node shares a GPU. requested's nvidia.com/gpu
     * counts each slot with fractions once and no reservation pod's GPU. */
    struct gpu_node *gpu;
} node_info_t;

node_info_t *node_info_new(const char *name);
void node_info_free(node_info_t *ni);
void node_info_set_node(node_info_t *ni, node_t *n); /* takes a new ref */
void node_info_add_pod(node_info_t *ni, pod_t *p);   /* takes a new ref */
/* Removes by uid; returns 1 if found. */
int node_info_remove_pod(node_info_t *ni, const char *uid);
/* Deep copy for a snapshot (refs on node and pods). */
node_info_t *node_info_clone(const node_info_t *ni);

#endif
