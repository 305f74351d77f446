/* sandbox.h -- the scheduler run on a copy of a cluster with no API server:
 * objects go in through the informers' own handlers, the cycle runs on the
 * caller's thread, and every write the scheduler makes (Binding, eviction,
 * event, status patch, reservation pod) is applied to the copy and told to
 * the caller, never sent anywhere. `whatif` asks it one question on the
 * live state; `simulate` runs a workload through it in virtual time.
 *
 * Deterministic: the same objects applied in the same order, the same seed
 * and the same clock give the same actions in the same order.
 *
 * Not thread-safe: one thread drives a sandbox. The clock is process-wide
 * (util_clock_override): one sandbox with a virtual clock per process. */
#ifndef AISCHED_SANDBOX_H
#define AISCHED_SANDBOX_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/scheduler.h"

typedef struct sandbox sandbox_t;

typedef enum {
    SB_BIND = 1,      /* a pod was bound to node (lender: the pool it borrowed from, else NULL) */
    SB_EVICT,         /* a pod was evicted (node: where it ran, NULL if pending; why; by: the preemptor's ns/name) */
    SB_UNSCHEDULABLE, /* a pod got FailedScheduling (reason, message), once per new message */
    SB_NOMINATE,      /* a pod was nominated to node (room made for it) */
    SB_CREATE,        /* the scheduler created a pod (a GPU reservation pod) */
    SB_DELETE         /* the scheduler deleted a pod it created */
} sb_action_kind_t;

typedef struct sb_action {
    sb_action_kind_t kind;
    const char *ns, *name, *uid; /* the pod */
    const char *node;
    const char *lender;  /* SB_BIND: the lending pool, or NULL */
    const char *reason;  /* SB_UNSCHEDULABLE: the event's reason; SB_EVICT: "preemption",
                          * "reclaim from queue X", "borrowed-node reclaim", "consolidation move" */
    const char *message; /* SB_UNSCHEDULABLE: the event's message; SB_EVICT: the Preempted event's */
    const char *by;      /* SB_EVICT: the preemptor "ns/name", or NULL */
    int64_t at_ms;       /* the clock's wall ms */
} sb_action_t;
typedef void (*sb_action_fn)(void *ud, const sb_action_t *a);

typedef struct sandbox_opts {
    const scheduler_opts_t *sched; /* as the daemon fills them from the config (copied) */
    uint64_t seed;                 /* every random tie-break's */
    int64_t start_wall_ms;         /* > 0: a virtual clock starting there; 0: the real clock */
    sb_action_fn on_action;        /* may be NULL */
    void *ud;
} sandbox_opts_t;

sandbox_t *sandbox_new(const sandbox_opts_t *o, char *err, size_t errlen);
void sandbox_free(sandbox_t *sb);

/* One watch event on the copy: type "ADDED", "MODIFIED" or "DELETED"; obj
 * (borrowed) is a Kubernetes object with apiVersion and kind (Node, Pod,
 * Pool, Queue, PodGroup, PodDisruptionBudget, PriorityClass,
 * PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode, Service,
 * ReplicaSet, ReplicationController, StatefulSet, DeviceClass,
 * ResourceSlice, ResourceClaim; others are ignored).
 * -1 with err for a malformed object. */
int sandbox_apply(sandbox_t *sb, const char *type, json_t *obj, char *err, size_t errlen);

/* Every item of a snapshot document (its "items", as `ai-scheduler
 * snapshot` writes them) applied as ADDED, in an order that lets each see
 * what it depends on (priority classes, pools, queues, nodes, then pods). */
int sandbox_load(sandbox_t *sb, json_t *snapshot, char *err, size_t errlen);

/* Runs cycles, pools in id order, until no pool has a pod to try now and no
 * write is in flight; returns the number of cycles run. */
int sandbox_run(sandbox_t *sb);

/* Moves the virtual clock forward to wall ms (never back) and runs what
 * became due on the way: backoffs and timed wakes, the once-a-second
 * housekeeping (gang timeouts, reservations, checkpoint deadlines). Then
 * sandbox_run. */
void sandbox_advance(sandbox_t *sb, int64_t wall_ms);
int64_t sandbox_now(const sandbox_t *sb);
/* The earliest wall ms at which something is due (a backoff ends, a timed
 * wake, a checkpoint deadline), or 0 when nothing is. */
int64_t sandbox_next_due(sandbox_t *sb);

/* An object of the copy as it is now (borrowed; valid until the next call
 * that changes the copy), or NULL. kind as in sandbox_apply; ns NULL for
 * cluster-scoped kinds. */
json_t *sandbox_get(sandbox_t *sb, const char *kind, const char *ns, const char *name);

/* How many objects of kind the copy has in ns (NULL for cluster-scoped). */
int sandbox_count(sandbox_t *sb, const char *kind, const char *ns);

/* The scheduler inside (for its read-only reports: scheduler_each_queue,
 * scheduler_each_pool, the explain store). */
scheduler_t *sandbox_scheduler(sandbox_t *sb);

#endif
