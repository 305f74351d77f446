/* scheduler.h -- the ai-scheduler runtime: informers feed the cache, one
 * scheduling thread per Pool places pods on that pool's nodes, bind workers
 * post the bindings, a writer thread posts events and status patches.
 *
 *   informers -> cache + pool map -> per-pool queue -> pool thread
 *     (filter, score, assume) -> binder -> API server
 *     (no fit) -> preemption in the pool -> borrowing from another pool
 *
 * See docs/design.md for the picture. */
#ifndef AISCHED_SCHEDULER_H
#define AISCHED_SCHEDULER_H

/* DRA device classes whose devices Queues count as GPUs by default
 * (--dra-queue-resources): NVIDIA's GPUs and MIG slices, AMD's GPUs, the
 * example driver's. */
#define DRA_DEFAULT_QUEUE_RESOURCES "gpu.nvidia.com=gpu,mig.nvidia.com=gpu,gpu.amd.com=gpu,gpu.example.com=gpu"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include "framework/framework.h"
#include "kube/client.h"

/* Every knob of the scheduler, in one place. The configuration embeds this
 * struct (sched_config_t.sched, pkg/config): the file's keys and the flags
 * write straight into it and config_default starts from
 * scheduler_opts_default, so a new knob is one field here, one row in the
 * flag table and one config key (docs/operations.md, "Adding a knob").
 *
 * Strings are borrowed: whoever fills the struct keeps them alive while the
 * scheduler runs, and the scheduler never frees them. scheduler_opts_default
 * sets literals; a config's are its own heap copies, freed by config_free. */
typedef struct scheduler_opts {
    const char *scheduler_name;       /* pods with this spec.schedulerName are ours ("ai-scheduler") */
    fw_config_t fw;                   /* the first profile's framework (the config's top level) */
    int disable_preemption;           /* global switch (pools have their own) */
    int bind_workers;                 /* Bindings in flight at once (16) */
    int volume_bind_timeout_s;        /* PreBind waits this long for claims to bind (600) */
    int pool_status_interval_s;       /* Pool .status refresh (10) */
    int eviction_grace_s;             /* victims' grace period; -1 = the pod's own; 0 = at once */
    int sync_timeout_s;               /* wait for the first LIST of nodes and pods (60; no flag) */
    int gang_timeout_s;               /* a PodGroup's scheduleTimeoutSeconds when unset (60) */
    int stale_gang_grace_s;           /* a placed gang below minMember this long is stale (60) */
    int evict_stale_gangs;            /* evict the rest of a stale gang (off) */
    int usage_half_life_s;            /* queues: decayed usage half-life (0 = off) */
    int starvation_age_s;             /* queues: starvation bound (600) */
    int non_preemptible_priority;     /* queues: priority from which pods are non-preemptible (100) */
    const char *gpu_namespace;        /* GPU sharing: reservation pods' namespace (ai-scheduler-system) */
    const char *gpu_image;            /* GPU sharing: reservation pods' image */
    int max_consolidation_moves;      /* consolidation: most pods moved for one pod (8; 0 = off) */
    const char *topology_levels;      /* gangs' topology levels, widest first, comma-separated (NULL or "": none) */
    const char *dra_queue_resources;  /* DRA device classes Queues count as GPUs, "CLASS=gpu,..." (NULL or "": none) */
    int workload_groups;              /* gangs derived from pods' owners (grouper/) (on) */
    const char *workload_groups_file; /* rows loaded over the default workload table (NULL: none) */
    int workload_refresh_s;           /* managed PodGroups' owners re-read every (30) */
    int reservation_after_s;          /* a gang waiting this long reserves room (300; 0 = never) */
    int reservation_timeout_s;        /* a reservation ends after (1800) */
    uint64_t seed;                    /* random tie-breaks' seed (0: from the time, logged) */
    int no_decision_records;          /* keep no explain records (simulate, which never reads them; no flag) */
    /* Not knobs: the daemon wires the rest (the config leaves them as
     * scheduler_opts_default does: NULL, 0).
     * More profiles (KubeSchedulerConfiguration profiles[1..]): pods whose
     * schedulerName is extra_names[i] are ours too and use extra_fw[i].
     * Borrowed for the duration of scheduler_new; NULL/0 for one profile. */
    const char *const *extra_names;
    const fw_config_t *extra_fw;
    int nextra;
    const char *identity; /* reportingInstance of events (the leader election identity) */
    /* Called from a bind worker for each pod bound, with the time from
     * first queued to bound (for a latency histogram); may be NULL. */
    void (*on_bound)(void *ud, double e2e_seconds);
    void *on_bound_ud;
    /* Called from a pool thread when a gang's minimum is placed, with the
     * wait since it was first considered; gets on_gang_ud; may be NULL. */
    void (*on_gang_placed)(void *ud, double wait_seconds);
    void *on_gang_ud;
    /* Fencing (may be NULL): asked before every decision and every API
     * write (bind, eviction, event, patch); once it returns 0 the scheduler
     * is fenced for good, as after scheduler_fence. */
    int (*may_act)(void *ud);
    void *may_act_ud;
} scheduler_opts_t;

typedef struct scheduler scheduler_t;

void scheduler_opts_default(scheduler_opts_t *o);
/* kc is borrowed and must outlive the scheduler. */
scheduler_t *scheduler_new(const scheduler_opts_t *o, kube_client_t *kc, char *err, size_t errlen);
/* Starts informers, waits for the caches to sync, then starts the pool
 * threads and workers. -1 with a message if the API server cannot be read. */
int scheduler_start(scheduler_t *s, const volatile int *stop, char *err, size_t errlen);
/* Stops every thread it started (joins them). */
void scheduler_stop(scheduler_t *s);
void scheduler_free(scheduler_t *s);
/* Fencing: leadership is lost. From this call on no pool thread decides,
 * no bind, eviction or write is sent (queued ones are dropped, not
 * drained). Safe from any thread; scheduler_stop still has to be called. */
void scheduler_fence(scheduler_t *s);
int scheduler_ready(scheduler_t *s);

/* --- offline.c: the scheduler driven by its caller (the sandbox) ----------
 * No informer, pool, bind, eviction, writer or housekeeping thread: the
 * caller hands it watch events, runs cycles and drains the writes, all on
 * one thread. kc should be an in-process client (kube_client_new_inproc):
 * its requests are the scheduler's writes. The workload grouper stays off. */
int scheduler_start_offline(scheduler_t *s, char *err, size_t errlen);
/* One watch event of an object of kind ("Node", "Pod", "Pool", "Queue",
 * "PodGroup", "PodDisruptionBudget", "PriorityClass", "PersistentVolume",
 * "PersistentVolumeClaim", "StorageClass", "CSINode", "Service",
 * "ReplicaSet", "ReplicationController", "StatefulSet") to the handler its
 * informer calls; type "ADDED", "MODIFIED" or "DELETED"; key "ns/name" or
 * "name". 1 handled, 0 a kind the scheduler does not watch, -1 a bad type. */
int scheduler_feed(scheduler_t *s, const char *kind, const char *type, const char *key, json_t *obj);
/* One cycle on each live pool with a pod ready now, pools in id order;
 * returns the cycles run. */
int scheduler_run_pools(scheduler_t *s);
/* Runs what the cycles handed on: binds, evictions, volume waits, then
 * events and patches; returns how many were done (0: nothing was). */
int scheduler_drain(scheduler_t *s);
/* The once-a-second housekeeping (gang timeouts, reservations, GPU
 * reservation pods, Queue status) but Pool .status. */
void scheduler_housekeep(scheduler_t *s);
/* Earliest monotonic ms at which a queue has a pod to try (0: none), and
 * earliest checkpoint deadline (wall ms, 0: none). */
int64_t scheduler_next_due(scheduler_t *s, int64_t *ckpt_wall_ms);
/* Whether a pod waits in some pool's queue (active, backing off or unschedulable). */
int scheduler_has_pending(scheduler_t *s);
/* Whether the once-a-second housekeeping has work that time moves on: pods
 * wait, a checkpoint request is pending, or a row says it has (its timed
 * point: GPU reservation pods held, a stale gang). When not, a caller may
 * jump the clock past idle seconds. */
int scheduler_housekeep_wanted(scheduler_t *s);
/* The seed the pools' generators were derived from (opts.seed, or the
 * time's when that was 0). */
uint64_t scheduler_seed(const scheduler_t *s);

/* Counters for /metrics and logs. */
typedef struct scheduler_stats {
    unsigned long attempts_scheduled, attempts_unschedulable, attempts_error;
    unsigned long binds_ok, bind_errors;
    unsigned long preemptions, victims, borrowings, events_dropped;
    unsigned long evictions_refused; /* preemptions stopped by a refused eviction */
    unsigned long gangs_scheduled, gangs_timed_out, gang_preemptions;
    int gangs_stale, gangs_waiting; /* gauges */
    unsigned long gpu_reservations_created, gpu_reservations_deleted;
    unsigned long consolidations, consolidations_failed, consolidation_moves;
    /* Checkpoint before eviction (evictor.c): victims asked, and how each
     * ended: evicted after its acknowledgement, at its deadline; requests
     * withdrawn (one per preemption). */
    unsigned long checkpoint_requests, checkpoint_acked, checkpoint_deadlines, checkpoint_withdrawn;
    int gpu_shared_devices;   /* gauge, refreshed each second */
    double e2e_latency_sum_s; /* first queued -> bound, summed */
    unsigned long reservations_made, reservations_placed, reservations_expired, reservations_deleted;
} scheduler_stats_t;
void scheduler_get_stats(scheduler_t *s, scheduler_stats_t *out);
/* Writes the cache to the log: a digest and one line per node and pod
 * (scheduler/dump.c says the format). Any thread. */
void scheduler_dump_cache(scheduler_t *s);

/* Per-pool queue lengths for /metrics: calls fn for each live pool. */
typedef void (*scheduler_pool_fn)(void *ud, const char *pool, int active, int backoff, int unschedulable);
void scheduler_each_pool(scheduler_t *s, scheduler_pool_fn fn, void *ud);
/* The row of the scheduling cycle named name (scheduler/extension.h), for
 * what a row shows outside the cycle (its /metrics: the reservation row's
 * resv_row_each_pool); NULL when there is none. */
struct sched_row;
const struct sched_row *scheduler_row(scheduler_t *s, const char *name);
/* Per queue and pool (only while some Queue exists): allocated and fair
 * share (gpu, cpu millicores, memory MB) and pending pods. */
typedef void (*scheduler_queue_fn)(void *ud, const char *queue, const char *pool, const double alloc[3],
                                   const double fair[3], int pending);
void scheduler_each_queue(scheduler_t *s, scheduler_queue_fn fn, void *ud);
/* Reclaim counters per queue: reclaims made, pods reclaimed from it. */
void scheduler_each_queue_counter(
    scheduler_t *s, void (*fn)(void *ud, const char *queue, unsigned long reclaims, unsigned long reclaimed), void *ud);

/* The scheduler's own view that a LIST does not show (debugstate.c):
 * {"kind":"SchedulerState","scheduler","takenAt","assumed":[{uid,
 * namespace,name,node}],"nominated":[same]}, in namespace/name order. A new
 * reference; any thread. */
json_t *scheduler_debug_state(scheduler_t *s);
/* The /debug/state route (an http_route_fn; ud is the scheduler): 200 and
 * the state as JSON, 404 for any other path under the prefix. */
int scheduler_debug_state_http(void *ud, const char *path, const char *query, char **body, const char **ctype);
/* Decision records (explain): the last decision kept for a pending pod
 * (kind "pod") or gang ("podgroup") ns/name, as explain/explain.h says
 * (a new reference), or NULL when none is kept: not tried yet, placed,
 * gone, or dropped past the cap. Any thread; works on a sandbox too. */
json_t *scheduler_explain(scheduler_t *s, const char *kind, const char *ns, const char *name);
/* Why no record is kept, for a 404 ("it is bound to node n1", "it is not
 * ai-scheduler's", "not seen"); caller frees. Walks the cache: for the
 * debug endpoint only. */
char *scheduler_explain_absent(scheduler_t *s, const char *kind, const char *ns, const char *name);

#endif
