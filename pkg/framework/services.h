/* services.h -- what a row (one capability of the scheduling cycle, in its
 * concept's folder: pkg/gpu/row.c...) may ask of the scheduler's core: one
 * const table of calls, filled by the core (pkg/scheduler/services.c) and
 * faked by unit tests, as kube's plugins get a framework.Handle.
 *
 * A row is a room: its state is its own (made by its init from the
 * services, freed by its fini), and it reaches the core's state only
 * through this table, never through struct scheduler. Each call gets back
 * the core handle the row was given (sched_row_t.core).
 *
 * The table grows with the rows moved out of pkg/scheduler: a call is
 * added when a row needs it, not before. */
#ifndef AISCHED_FRAMEWORK_SERVICES_H
#define AISCHED_FRAMEWORK_SERVICES_H

#include <jansson.h>
#include <stddef.h>

#include "cache/cache.h"
#include "framework/framework.h"
#include "fairshare/fairshare.h"
#include "framework/nodeinfo.h"
#include "kube/client.h"
#include "preemption/preemption.h"
#include "queue/queue.h"
#include "scheduler/scheduler.h"
#include "topology/topology.h"

struct pod_set;
/* A PodGroup as the gang row's calls give it (gang/gang.h, which the rows
 * that read one include). */
typedef struct gang_snap gang_snap_t;
struct sched_pool;
struct pool_spec;

/* One pool as rows see it (pools_visit): valid only during the call. */
typedef struct sched_pool_info {
    int id; /* its index: pools[i].id == i */
    const char *name;
    const struct pool_spec *spec; /* its flags and borrowingPools (pool/pool.h) */
    int dead;                     /* its Pool was deleted: its thread is ending */
} sched_pool_info_t;
typedef void (*sched_pools_fn)(void *ud, const sched_pool_info_t *pools, int n);

/* Copies of a pool's nodes as a set's first pod sees them (nominated room
 * and what rows hold there included), and a PreFilter state per member:
 * the ground a gang's simulation (preemption plan, lender or topology
 * choice) runs on without the cache lock. Made by sim_build, freed by
 * sim_free. */
typedef struct sched_sim {
    node_info_t **nodes;
    int nnodes;
    cycle_state_t **cs; /* one per member */
    pod_t **pods;       /* the members (borrowed), cs[i] is pods[i]'s */
    int nmembers;
    resources_t alloc, used; /* sums over the copies (lender choice) */
    int tasks;
} sched_sim_t;

/* A view of one node, valid only during the call that gives it. */
typedef void (*sched_node_fn)(void *ud, const node_info_t *ni);
/* A node's value of something kept outside the cache (device_attr_nodes). */
typedef void (*sched_node_value_fn)(void *ud, const char *node, const char *value);
/* Looks a node up by name (NULL: none); given to sched_nodes_frozen_fn. */
typedef const node_info_t *(*sched_node_lookup_fn)(void *core, const char *name);
typedef void (*sched_nodes_frozen_fn)(void *ud, void *core, sched_node_lookup_fn lookup);

typedef struct sched_services {
    /* Who we are and how we were configured (both live as long as the core). */
    const char *(*name)(void *core);
    const scheduler_opts_t *(*opts)(void *core);
    /* Nonzero once the scheduler lost its lease: decide and write nothing. */
    int (*fenced)(void *core);

    /* A synchronous request to the API server (a bind worker's or the
     * housekeeper's thread, never a pool thread): 0 with *status the HTTP
     * status and, when answer is not NULL, the body in *answer (caller
     * frees; NULL if none), or -1 with err when it could not be sent. */
    int (*api)(void *core, const char *method, const char *path, const char *body, long *status, char **answer,
               char *err, size_t errlen);
    /* The same with a JSON body (content_type NULL: application/json) and
     * answer (*out, optional; caller frees): 0 on a 2xx answer; -1 with
     * err (the API's Status message) and *status otherwise. */
    int (*api_json)(void *core, const char *method, const char *path, const char *content_type, json_t *body,
                    json_t **out, long *status, char *err, size_t errlen);
    /* One event on the pod, queued to the writer (never waits on the API). */
    void (*pod_event)(void *core, const pod_t *pod, const char *type, const char *reason, const char *message);

    /* Whether the pod's profile runs the plugin name at point (FW_PT_*). */
    int (*plugin_runs)(void *core, const pod_t *pod, int point, const char *name);
    /* Something a row watches changed in a way that may let waiting pods
     * fit: an object event every row's on_event hears; with no row
     * narrowing it, every pool tries its unschedulable pods again (kube's
     * MoveAllToActiveOrBackoffQueue); event names the change. */
    void (*wake_all)(void *core, const char *event);

    /* Whether the cache still holds the pod (pending, assumed or bound):
     * 0 once it was deleted. */
    int (*pod_known)(void *core, const char *uid);
    /* Undoes the pod's assumption in the cache: its bind will not happen. */
    void (*forget_assumed)(void *core, const char *uid);
    /* Hands a placed pod to the binder again (it taken): a row whose
     * pre_bind answered PREBIND_WAITING, once what it waited for came. */
    void (*bind)(void *core, queue_item_t *it, const char *node, const char *lender);

    /* Node views (the cache's): fn on one node under its lock; on every
     * node; or with every node frozen (no pod assumed or bound meanwhile)
     * and a lookup valid inside fn. fn must not call back into the table. */
    void (*node_visit)(void *core, const char *node, sched_node_fn fn, void *ud);
    void (*nodes_visit)(void *core, sched_node_fn fn, void *ud);
    void (*nodes_frozen)(void *core, sched_nodes_frozen_fn fn, void *ud);

    /* The counters and gauges /metrics shows: fn runs under their lock. */
    void (*stats)(void *core, void (*fn)(scheduler_stats_t *st, void *ud), void *ud);

    /* The API client, for a row with a worker of its own that reads
     * objects (the grouper's owner lookups); any thread. */
    kube_client_t *(*client)(void *core);
    /* A pre_enqueue row's hold on uid ended by itself: the pod enters its
     * home queue if it is still pending and no row keeps it out. Any
     * thread, no lock held. */
    void (*release)(void *core, const char *uid);
    /* Whether the first LIST of a row's watch of kind was delivered (1
     * where nothing is watched: a sandbox feeds what it has). */
    int (*watch_synced)(void *core, const char *kind);
    /* The GPUs the pod's DRA claims count as in its queue
     * (--dra-queue-resources; 0 without a say). Leaf locks only. */
    double (*queue_devices)(void *core, const pod_t *pod);
    /* The DRA claims of pod uid changed: its queue charge counts them as
     * they are now (a claim listed or allocated after the pod was
     * charged). No lock held. */
    void (*queue_refresh)(void *core, const char *uid);
    /* fn(ud, node, value) for each node whose DRA devices (node-local
     * slices of complete pools) carry attribute attr ("domain/name") with
     * one value; a node whose devices disagree is left out. fn runs under
     * the DRA store's read lock and must not call back into the table.
     * Nothing without the dynamic-resources row. */
    void (*device_attr_nodes)(void *core, const char *attr, sched_node_value_fn fn, void *ud);
    /* An event on a pod known only by namespace, name and uid. */
    void (*pod_event_by_name)(void *core, const char *ns, const char *name, const char *uid, const char *type,
                              const char *reason, const char *message);

    /* Pods as the core sees them. pod_fw: the framework of the pod's
     * profile; is_ours: a schedulerName one of our profiles has;
     * home_pool: the pool id a pod belongs to; pod_get: the cached pod by
     * uid (a reference, the caller unrefs; NULL: gone) and its state. */
    framework_t *(*pod_fw)(void *core, const pod_t *pod);
    int (*is_ours)(void *core, const char *scheduler_name);
    int (*home_pool)(void *core, const pod_t *pod);
    pod_t *(*pod_get)(void *core, const char *uid, cache_pod_state_t *st);
    /* Private copies of pool's nodes as pod sees them (nominated pods and
     * what rows hold there, node_view): *out an array of n copies, each
     * and the array the caller's to free. */
    int (*pool_views)(void *core, int pool, const pod_t *pod, node_info_t ***out);

    /* Queues (fairshare/): tenant_of is the pod's queue (-1: none);
     * same_queue whether two queues are one for preemption's rules;
     * preemptible whether its queue lets it be evicted over quota;
     * min_runtime whether a row's protect point (the minimum runtime)
     * keeps a running pod now from kind (FS_MINRT_PREEMPT or
     * FS_MINRT_RECLAIM); queue_admits whether pods[0..n) pass their
     * queue's limits (and quota) in pool (queues.h: admits). */
    int (*tenant_of)(void *core, const pod_t *pod);
    int (*same_queue)(void *core, int a, int b);
    int (*queue_admits)(void *core, int pool, pod_t *const *pods, int n);
    int (*preemptible)(void *core, const pod_t *pod);
    int (*min_runtime)(void *core, const pod_t *pod, int kind, int64_t now_wall);

    /* Acts of a row (a pool thread's: none waits on the API server).
     * may_evict: whether the set may displace pods (the pool's switch,
     * every member's preemptionPolicy and profile); nominate: the pod's
     * room on node, in the cache and on its status; evict_moves: the
     * eviction worker evicts cand's pods, each moved to dests[i] (takes
     * cand, one, and dests). */
    int (*may_evict)(void *core, const struct pod_set *set);
    void (*nominate)(void *core, pod_t *pod, const char *node);
    void (*evict_moves)(void *core, const pod_t *pod, preempt_candidate_t *cand, char **dests, int pool,
                        const char *pool_name);

    /* Gangs (the store is the core's and the gang row's). gang_get: the
     * PodGroup ns/name as the store has it, 0 with *out filled (the
     * caller's: gang_snap_clear), -1 when unknown; gang_considered: when
     * the gang was first tried (wall ms), remembered now if never;
     * gang_priority: floor raised to the value of g's priority class
     * annotation, when it names a known class. */
    int (*gang_get)(void *core, const char *ns, const char *name, gang_snap_t *out);
    int64_t (*gang_considered)(void *core, const char *key, int64_t now_wall);
    int32_t (*gang_priority)(void *core, const gang_snap_t *g, int32_t floor);
    /* Pods nominated to node (room their preemption made): refs in *out,
     * the caller unrefs each and frees the array; returns their count. */
    int (*nominated)(void *core, const char *node, pod_t ***out);
    /* A pool's queue (a pool that is gone: nothing). pool_wake: every
     * waiting pod moves to active (event: why, for the log); pod_activate:
     * uid's pod leaves its backoff or unschedulable wait now. */
    void (*pool_wake)(void *core, int pool, const char *event);
    void (*pod_activate)(void *core, int pool, const char *uid);
    /* One event on any object (involved: its involvedObject, taken),
     * queued to the writer; base_name names the Event. */
    void (*object_event)(void *core, const char *ns, json_t *involved, const char *type, const char *reason,
                         const char *message, const char *base_name);
    /* What a row shows in a Pool's .status (pool_status) changed: the
     * housekeeper writes the Pools' status again soon (rate limited). */
    void (*status_changed)(void *core);
    /* queues_active: some Queue object exists (else tenant ids mean
     * nothing); same_tree: queues a and b are under one top-level queue.
     * Both take the queues' leaf lock. */
    int (*queues_active)(void *core);
    int (*same_tree)(void *core, int a, int b);
    /* For the tenants row (fairshare/row.c). gang_queue: the queue label
     * of PodGroup ns/name (caller frees; NULL: none). accounting_read: fn
     * with the pods' charges still (the cache's read lock: an informer
     * re-charges a pod under the write lock). pool_queue: a pool thread's
     * pool (a tick's P): its number, name and scheduling queue; pools_each:
     * fn on every live pool, no lock held. bind_backlog: Bindings not on
     * the wire yet (other writes yield to them). patch: a write queued to
     * the writer (body taken); never waiting on the API server.
     * limit_room_pending: the pod holds no nominated room and evictions
     * made for it are queued or under way. evict_for_limit: reclaim under
     * a queue limit in pool, the n victims the store chose (uids, taken)
     * evicted for set's minimum through the one preemption commit (a gang
     * goes whole, a minimum runtime keeps them all): 1 when they go, -1
     * when the set would not be placed even with them gone (none goes). */
    char *(*gang_queue)(void *core, const char *ns, const char *name);
    void (*accounting_read)(void *core, void (*fn)(void *ud), void *ud);
    sched_queue_t *(*pool_queue)(void *core, struct sched_pool *P, int *id, const char **name);
    void (*pools_each)(void *core, void (*fn)(void *ud, struct sched_pool *P), void *ud);
    int (*bind_backlog)(void *core);
    void (*patch)(void *core, const char *path, const char *content_type, char *body);
    int (*limit_room_pending)(void *core, const char *uid);
    int (*evict_for_limit)(void *core, struct pod_set *set, int pool, char **uids, int n);
    /* The one preemption evaluator (pkg/scheduler/preempt_eval.c, shared
     * with the gang row and reclaim under a queue limit): room inside the
     * set's pool for its minimum, planned on copies (a set of one: kube's
     * candidate search; a gang's minimum: member by member), victims by
     * the core's victims table, committed in one step (charge, nominate,
     * evict). 1 when room is being made or victims chosen earlier are
     * still leaving; 0 when no plan frees room: then a minimum runtime
     * that kept victims is noted on the set (its wait note and wake-up)
     * and said in *kept (owned; NULL: none). *seen: what it saw. */
    int (*preempt)(void *core, struct pod_set *set, preempt_outcome_t *seen, char **kept);
    /* The pod gives up the room nominated for it (here and on the API),
     * and its queue's charge for it. */
    void (*drop_nomination)(void *core, const pod_t *pod);

    /* Pools (pool/): fn gets every pool at once, the pools' lock held (fn
     * takes no lock and calls nothing back); pool_queued: the pods waiting
     * in pool's queue (active, backoff, unschedulable), -1 when the pool is
     * gone; pool_room_for: whether pods[0..n) fit together in pool's free
     * room, placed member by member on copies of its nodes (no eviction),
     * with the sums of its nodes' allocatable and requested and its pods
     * (0 nodes: no fit); move_item: it leaves pool from's queue (done
     * there) for pool to's (to gone: the default pool's). */
    void (*pools_visit)(void *core, sched_pools_fn fn, void *ud);
    int (*pool_queued)(void *core, int pool);
    int (*pool_room_for)(void *core, int pool, pod_t *const *pods, int n, resources_t *alloc, resources_t *used,
                         int *tasks);
    void (*move_item)(void *core, int from, int to, queue_item_t *it);
    /* One event on another object known by kind, apiVersion, namespace,
     * name and uid (a PodGroup), queued to the writer. */
    void (*object_event_ref)(void *core, const char *kind, const char *api_version, const char *ns, const char *name,
                             const char *uid, const char *type, const char *reason, const char *message);
    /* The topology levels gangs may ask for (--topology-levels, widest
     * first; as long as the core). */
    const topo_levels_t *(*topo_levels)(void *core);
    /* Copies of pool's nodes for pods[0..n) (sched_sim_t): 0 when ready,
     * -1 when a member's PreFilter fails; sim_free it either way. Takes
     * the cache's read lock while it copies: a pool thread's call. */
    int (*sim_build)(void *core, int pool, pod_t *const *pods, int n, sched_sim_t *sim);
    void (*sim_free)(void *core, sched_sim_t *sim);

    /* Room held for a pending pod: 1 when a preemption nominated it (the
     * node in node[len] when node is given); charged: its queue counts it
     * while it is pending (a reclaim under a limit); leaving: its eviction
     * was requested. */
    int (*nomination)(void *core, const char *uid, char *node, size_t len);
    int (*charged)(void *core, const char *uid);
    int (*leaving)(void *core, const char *uid);
    /* The set's pool (set->P, on its own thread): take_pending takes the
     * pending pod uid out of its queue as if popped, refreshed from the
     * cache (NULL: not queued there, in flight, or gone); pool_active is
     * how many pods wait in its activeQ; fits_on whether pod passes every
     * filter on node now. */
    queue_item_t *(*take_pending)(void *core, struct sched_pool *P, const char *uid);
    int (*pool_active)(void *core, struct sched_pool *P);
    int (*fits_on)(void *core, struct sched_pool *P, const pod_t *pod, const char *node);
    /* Whether pool (by id) preempts (its switch and --disable-preemption). */
    int (*pool_preempts)(void *core, int pool);
    /* Whether pod's preemptionPolicy and profile let it preempt; whether a
     * pre_enqueue row keeps it out of the queues. */
    int (*may_preempt)(void *core, const pod_t *pod);
    int (*kept_out)(void *core, const pod_t *pod);
    /* Queues (fairshare/): set_request the queue and summed request of
     * pods[0..n) (0: Queues are off); yields fs_yields' answer. */
    int (*set_request)(void *core, pod_t *const *pods, int n, int *tenant, double req[FS_NRES]);
    int (*yields)(void *core, int pool, int tenant, const double req[FS_NRES], int other,
                  const double other_req[FS_NRES]);
    /* When gang ns/group's freezing window ends (wall ms; src says whose):
     * the minimum-runtime row's, published (extension.h). */
    int64_t (*freeze_end)(void *core, const char *ns, const char *group, const pod_t *member, char *src, size_t srclen);
    /* Preemption's rules for one more victim (vc: the evaluator's context,
     * as the expand point got it; *rank its rank), and the PDBs a set of
     * victims would violate (the caller holds what the expand point does). */
    int (*is_victim)(void *core, const pod_t *victim, const pod_t *preemptor, void *vc, int64_t *rank);
    int (*pdb_violations)(void *core, pod_t *const *pods, int n);
    /* For the victims point's rows: a pod's priority, raised to its gang's
     * class when that is higher; a member's class in its gang
     * (GANG_MEMBER_NONE, _MINIMUM: among the first minMember bound, or
     * _SURPLUS). Both take the gang store's leaf lock. */
    int32_t (*pod_priority)(void *core, const pod_t *pod);
    int (*gang_member_class)(void *core, const pod_t *pod);
    /* Housekeeping: whether Bindings are queued; one member of a stale
     * gang evicted; a decision record of kind ("podgroup") and key
     * forgotten. */
    int (*binds_queued)(void *core);
    void (*evict_stale)(void *core, pod_t *victim);
    void (*forget_record)(void *core, const char *kind, const char *key);
    /* The decision record kept for kind ("pod", "podgroup") ns/name, as
     * explain serves it (a new reference; NULL: none). */
    json_t *(*explain)(void *core, const char *kind, const char *ns, const char *name);
    /* The place in the rows' table of the row called name (-1: none): a
     * row reading another's round mark on an item. */
    int (*row_index)(void *core, const char *name);
    /* The PodGroup of a set the gang row formed (what it publishes: its
     * minimum's, or an elastic member's), or NULL; valid until the set's
     * end. For the rows that read a set's gang (topology, reservation). */
    const gang_snap_t *(*set_gang)(void *core, const struct pod_set *set);
    /* For the minimum-runtime row. pool_min_runtime: pool's default of
     * kind (FS_MINRT_*: preemptMinRuntime, reclaimMinRuntime; 0 when the
     * pool is gone), its name in name[len]; any_pool_min_runtime: some
     * live pool sets one (an atomic read, no lock). queue_min_runtime:
     * tenant's queue's (or its nearest ancestor's) minimum, else
     * pool_default, *from the queue that set it (caller frees; NULL: the
     * default); any_queue_min_runtime: some Queue sets one. gang_resize_
     * start: when gang ns/group last resized (wall ms, 0: never) and its
     * freezing window annotation in *win; gang_last_start: the latest
     * start among the pod's gang's members; gang_resized: the gang lost
     * surplus members at now_wall. The gang calls take its store's leaf
     * lock. */
    int64_t (*pool_min_runtime)(void *core, int pool, int kind, char *name, size_t len);
    int (*any_pool_min_runtime)(void *core);
    int64_t (*queue_min_runtime)(void *core, int tenant, int kind, int64_t pool_default, char **from);
    int (*any_queue_min_runtime)(void *core);
    int64_t (*gang_resize_start)(void *core, const char *ns, const char *group, int64_t *win);
    int64_t (*gang_last_start)(void *core, const pod_t *pod);
    void (*gang_resized)(void *core, const char *ns, const char *group, int64_t now_wall);
} sched_services_t;

/* PreBind's answers (a row's pre_bind, on a bind worker). */
enum { PREBIND_READY = 0, PREBIND_WAITING = 1, PREBIND_FAILED = 2 };

/* What a row's points get: its room, the table and the core to pass back. */
typedef struct sched_row {
    void *self;
    const sched_services_t *svc;
    void *core;
    int index; /* its place in the table: its slot in a pod set (pod_set_t.slot),
                * its bit in a queue item's marks */
} sched_row_t;

/* A row's marks on a queue item (queue_item_t.marks and round_marks, one
 * bit at the row's index): set and read by rows; the core clears the round
 * marks when the item is given back after its cycle, and a failed item
 * carrying one waits out a backoff. */
static inline int sched_mark(const sched_row_t *row, const queue_item_t *it)
{
    return (int)((it->marks >> row->index) & 1u);
}
static inline void sched_mark_set(const sched_row_t *row, queue_item_t *it)
{
    it->marks |= 1u << row->index;
}
/* index: the marking row's (a row may read another's: row_index). */
static inline int sched_round_mark(int index, const queue_item_t *it)
{
    return index >= 0 && ((it->round_marks >> index) & 1u);
}
static inline void sched_round_mark_set(const sched_row_t *row, queue_item_t *it)
{
    it->round_marks |= 1u << row->index;
}

#endif
