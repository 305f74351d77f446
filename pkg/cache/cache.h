/* cache.h -- the scheduler's picture of the cluster: every node with the pods
 * on it, every pod by uid, assumed pods between a decision and the API's
 * confirmation of the bind, and nominated pods (room reserved by preemption).
 *
 * Locking: one writer-preferring rwlock. Informer handlers write; pool
 * threads read while they filter and score, and reserve (cache_assume) under
 * the read lock too, holding the node's stripe lock and the pod map's mutex:
 * each pool changes only its own nodes, so pool threads never exclude each
 * other. Lock order: rwlock -> node stripe -> pod map -> topology index
 * (fw_topo_index_t's own mutex, a leaf). The *_locked
 * functions expect the caller to hold the rwlock (read or write as named);
 * every other function takes it itself. The partition callback runs under
 * the write lock and must not call back into the cache.
 *
 * Ownership: functions that take a pod_t or node_t add their own reference;
 * functions that return one return a new reference unless marked borrowed. */
#ifndef AISCHED_CACHE_H
#define AISCHED_CACHE_H

#include "api/types.h"
#include "framework/nodeinfo.h"

typedef struct cache cache_t;

/* Which pool (id) a node belongs to. */
typedef int (*cache_partition_fn)(void *ud, const node_t *node);

typedef enum {
    CPOD_NONE = 0, /* unknown, or gone */
    CPOD_PENDING,  /* unbound, not being bound */
    CPOD_ASSUMED,  /* placed by us, bind in flight */
    CPOD_BOUND,    /* spec.nodeName set (ours or anyone's) */
    CPOD_TERMINAL  /* Succeeded/Failed: holds nothing */
} cache_pod_state_t;

cache_t *cache_new(cache_partition_fn fn, void *ud);
void cache_free(cache_t *c);

void cache_rdlock(cache_t *c);
void cache_wrlock(cache_t *c);
void cache_unlock(cache_t *c);

/* Informer side. */
/* Returns 1 when the node is new or changed in a way that can make pods
 * fit (labels, taints, allocatable, unschedulable), 0 for other updates. */
int cache_upsert_node(cache_t *c, node_t *n);
void cache_delete_node(cache_t *c, const char *name);
/* Records the pod; returns its state before and (in *now) after. An unbound
 * update of an assumed pod leaves it assumed (the bind is in flight). A
 * pod that binds, ends or is deleted loses its nomination. */
cache_pod_state_t cache_upsert_pod(cache_t *c, pod_t *p, cache_pod_state_t *now);
/* cache_upsert_pod; with follow_nomination (the caller's word that the pod
 * is one of this scheduler's: its schedulerName is ours, and only a
 * scheduler of that name writes the field) a pending pod's
 * status.nominatedNodeName is taken as a nomination, as cache_nominate
 * makes one: on the pod's first sight (a restart, a failover, a loaded
 * copy) and whenever an update changes the field. Not for a node unknown
 * or gone, nor for a pod being deleted; a field cleared drops it. An update
 * that leaves the field as it was, or a change the cache has moved past
 * (it holds a nomination to a third node), leaves the nomination as it is:
 * the field lags this scheduler's own nominations. Without
 * follow_nomination the field is not read (cache_upsert_pod). */
cache_pod_state_t cache_upsert_pod_ex(cache_t *c, pod_t *p, int follow_nomination, cache_pod_state_t *now);
/* Forgets the pod; *old (optional) gets the last object (new ref) and
 * *pool_of_node the pool of the node it was on (a pending pod: of the node
 * it was nominated to, the room it held), or -1. */
cache_pod_state_t cache_delete_pod(cache_t *c, const char *uid, pod_t **old, int *pool_of_node);
/* Re-runs the partition for every node (pool specs changed). */
void cache_repartition(cache_t *c);

/* Lookups. */
pod_t *cache_get_pod(cache_t *c, const char *uid, cache_pod_state_t *state);

/* Scheduling side, under the lock. Borrowed arrays and pointers. */
node_info_t *const *cache_nodes_locked(cache_t *c, int *n);
/* Changes whenever a node appears, goes or moves to another pool: what a
 * per-pool node count computed under the lock depends on. */
uint64_t cache_nodes_version_locked(cache_t *c);
node_info_t *cache_node_locked(cache_t *c, const char *name);
/* Room reserved by preemption on a node: pods nominated there (borrowed). */
int cache_nominated_locked(cache_t *c, const char *node, pod_t *const **pods);
/* Places p on node as assumed; write lock held (the exclusive path of
 * cache_assume). -1 if the node is gone. */
int cache_assume_locked(cache_t *c, pod_t *p, const char *node);

/* Reserve without excluding other pool threads: under the read lock, with
 * the node's stripe lock held while it changes. If the node's generation
 * moved since the decision, fit(ud, ni) re-checks it (stripe held). Pods
 * holding a nomination take the write-locked path. 0 when placed, -1 when
 * the node is gone, left the pool, or no longer fits. */
typedef int (*cache_fit_fn)(void *ud, node_info_t *ni);
int cache_assume(cache_t *c, pod_t *p, const char *node, int pool, uint64_t generation, cache_fit_fn fit, void *ud);
/* Tests only: fn runs inside cache_assume's nominated path, between
 * dropping the read lock and taking the write lock (a window where the
 * watch may delete the pod). Set before any thread uses the cache. */
typedef void (*cache_gap_fn)(void *ud);
void cache_set_assume_gap_hook(cache_t *c, cache_gap_fn fn, void *ud);
/* Called whenever a pod starts (+1) or stops (-1) occupying a node (ni,
 * NULL when the node is unknown): assumed, bound, updated (-1 then +1),
 * forgotten, deleted. Runs under the
 * cache lock (write lock, or the read lock with the node's stripe held), so
 * fn must be thread-safe and take only leaf locks. Set before use. */
typedef void (*cache_account_fn)(void *ud, const pod_t *p, const node_info_t *ni, int sign);
void cache_set_account_hook(cache_t *c, cache_account_fn fn, void *ud);
/* Called with +1 when a pending pod's nomination is taken from its
 * status.nominatedNodeName (a restart, a failover, a loaded copy; ni: that
 * node), and with -1 (ni NULL) when a nomination goes while its pod holds
 * no node (dropped, cleared, its node deleted, the pod ended or deleted);
 * not when cache_nominate replaces one nor when the pod is assumed or
 * bound. Runs under the cache's write lock: fn takes only leaf locks. */
void cache_set_nomination_hook(cache_t *c, cache_account_fn fn, void *ud);
/* Inter-pod constraints (pod affinity, anti-affinity, topology spread)
 * depend on pods of every pool, so the per-node generation check above is
 * not enough when two pool threads place pods at once. The rule:
 *  - a pod with required (anti-)affinity or a DoNotSchedule spread
 *    constraint reserves exclusively: write lock, pod still pending, and
 *    full_fit re-runs PreFilter + Filter on the node against the cluster as
 *    it is now (ip->exclusive);
 *  - any other pod reserves on the shared path only if the inter-pod epoch
 *    (cache_interpod_epoch, read under the read lock when deciding) has not
 *    moved; it moves when a pod with required anti-affinity is accounted or
 *    node labels change, i.e. whenever an existing pod's anti-affinity could
 *    newly forbid the decided node. Otherwise it takes the exclusive path.
 * Pods with required anti-affinity are thus only ever added under the write
 * lock, so the epoch cannot move while a shared-path reserve runs. */
typedef struct cache_interpod {
    uint64_t epoch;        /* cache_interpod_epoch at decision time */
    int exclusive;         /* the pod has hard inter-pod constraints */
    cache_fit_fn full_fit; /* called with the write lock held */
} cache_interpod_t;
uint64_t cache_interpod_epoch(cache_t *c);
/* cache_assume with the inter-pod rule; ip NULL is cache_assume (for pods
 * and callers that know no inter-pod constraint is involved). */
int cache_assume_ex(cache_t *c, pod_t *p, const char *node, int pool, uint64_t generation, const cache_interpod_t *ip,
                    cache_fit_fn fit, void *ud);
/* The per-topology-value pod counts the inter-pod plugins read through
 * fw_cluster_t (borrowed; lives as long as the cache). */
struct fw_topo_index;
struct fw_topo_index *cache_topo_index(cache_t *c);
/* Makes sure the index has the entries pod's PreFilter needs (takes the
 * write lock briefly the first time a new term shows up). Call without the
 * cache lock, before deciding. */
void cache_interpod_prepare(cache_t *c, const pod_t *pod);
/* Readers of another pool's nodes (the read lock held) take the node's
 * stripe lock while they look at it: its own pool thread may be reserving. */
void cache_node_lock(cache_t *c, const char *node);
void cache_node_unlock(cache_t *c, const char *node);

/* Runs fn on the named node under the read lock and the node's stripe (fn
 * must not call into the cache). -1 when the node is unknown. */
int cache_node_visit(cache_t *c, const char *node, void (*fn)(void *ud, const node_info_t *ni), void *ud);

/* Bind failed: undo the assumption; 1 when the pod was assumed (its room
 * is free again), 0 when there was nothing to undo. */
int cache_forget(cache_t *c, const char *uid);
/* cache_forget for a pod the cycle assumed and gives back before any bind
 * (a gang's minimum that did not fit whole, a row's reserve refused): it
 * holds again the nomination the assumption dropped (unless its node is
 * gone), charged to its queue through the nomination hook as a restored
 * one is. Else its next turn would rank it behind its gang's members that
 * made no room, and its queue would count it nowhere while its victims
 * leave (composition seed 641810842). */
int cache_unassume(cache_t *c, const char *uid);
/* 1 when the pod, assumed on node, held a nomination to another node
 * until then: that node's room is free again for the pods that failed
 * for it. */
int cache_left_nomination(cache_t *c, const char *uid, const char *node);
/* Reserves room on node for a preemptor; ignored unless p is still
 * pending (deleted or bound meanwhile: nothing to hold room for). A pod
 * holds at most one nomination; deleting or binding it drops it, and so
 * does deleting the node. */
void cache_nominate(cache_t *c, pod_t *p, const char *node);
/* 1 when the pod held a nomination (its room is free again). */
int cache_clear_nomination(cache_t *c, const char *uid);
/* Whether the pod holds a nomination (linear in the nominations). */
int cache_is_nominated(cache_t *c, const char *uid);
/* 1 when the pod holds a nomination, its node copied into node (len
 * bytes, may be NULL); 0 when it holds none. Linear in the nominations. */
int cache_nomination_of(cache_t *c, const char *uid, char *node, size_t len);
/* The pending pods whose status.nominatedNodeName is trusted
 * (cache_upsert_pod_ex) and names a node the cache did not know when they
 * came (pods and nodes are listed at once) hold that room now if the node
 * is known; returns how many do. */
int cache_restore_nominations(cache_t *c);

/* Copies of every node and every non-terminal pod (refs), for statistics.
 * Free with cache_free_snapshot. */
void cache_snapshot(cache_t *c, node_t ***nodes, int *nn, pod_t ***pods, int *np);
void cache_free_snapshot(node_t **nodes, int nn, pod_t **pods, int np);

/* Each assumed pod (placed, bind in flight) with its node, then each
 * nomination (room made by preemption) with its node: what a LIST of the
 * API server does not show, for /debug/state. fn runs under the read lock
 * and must not call the cache. */
typedef void (*cache_placed_fn)(void *ud, const pod_t *p, const char *node, int nominated);
void cache_each_placed(cache_t *c, cache_placed_fn fn, void *ud);

/* Every pod in state CPOD_PENDING (unbound, not being bound): refs in a
 * new array (*out, caller unrefs and frees); returns how many. For the
 * dashboard's pending list: the pod map's lock is held for the copy only. */
int cache_pending_pods(cache_t *c, pod_t ***out);

typedef struct cache_stats {
    int nodes, pods, pending, assumed, bound, nominated;
} cache_stats_t;
void cache_get_stats(cache_t *c, cache_stats_t *s);

#endif
