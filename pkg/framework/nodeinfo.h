/* nodeinfo.h -- what the framework knows of one node: the Node, the pods on
 * it (bound or assumed) and their summed requests. Owned by the cache; a
 * scheduling cycle reads it under the cache's lock or on a snapshot copy. */
#ifndef AISCHED_NODEINFO_H
#define AISCHED_NODEINFO_H

#include <stdint.h>
#include "api/types.h"

/* Capabilities that may keep state on a node (node_ext_t). */
#define NODE_EXT_MAX 4

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
    /* Each registered accountant's state for the node (node_ext_t), owned
     * through its hooks; NULL while no pod on the node has given it any. */
    void *ext[NODE_EXT_MAX];
} node_info_t;

/* A capability's node accountant: state per node built from the pods
 * that carry the capability's data (pod_t.ext[pod_ext]), and a correction
 * to one scalar of the node's requested sum. Registered once at startup,
 * before any thread (capabilities_init, scheduler/capabilities.h). */
typedef struct node_ext {
    const char *name; /* for messages */
    int pod_ext;      /* the pod slot (api/podext.h) whose pods it sees */
    /* The scalar of requested that account's return value corrects;
     * interned (res_intern) or a RES_* name. */
    const char *resource;
    /* p starts (+1) or stops (-1) holding resources on ni (only pods with
     * ext[pod_ext] set, never terminal ones); *data is ni's state, created
     * on first use. Runs before p's requests enter (or leave) ni's sums,
     * so ni->requested is the node's before the change. Returns what to
     * add to requested's `resource` after p's requests are. */
    int64_t (*account)(void **data, const node_info_t *ni, const pod_t *p, int sign);
    void *(*clone)(const void *data);
    void (*free)(void *data);
} node_ext_t;

/* Registers ext (kept by pointer: static storage); returns its slot in
 * node_info_t.ext. Aborts once the registry is sealed (pod_ext_seal) or
 * when full. */
int node_ext_register(const node_ext_t *ext);

node_info_t *node_info_new(const char *name);
void node_info_free(node_info_t *ni);
void node_info_set_node(node_info_t *ni, node_t *n); /* takes a new ref */
void node_info_add_pod(node_info_t *ni, pod_t *p);   /* takes a new ref */
/* Removes by uid; returns 1 if found. */
int node_info_remove_pod(node_info_t *ni, const char *uid);
/* Deep copy for a snapshot (refs on node and pods). */
node_info_t *node_info_clone(const node_info_t *ni);

#endif
