/* gang.h -- gangs: scheduler-plugins' PodGroups (scheduling.x-k8s.io/v1alpha1)
 * and the pods that name one with the label scheduling.x-k8s.io/pod-group,
 * plus what the scheduler remembers of each gang between attempts (when it
 * was first considered, whether it waits or timed out, whether it went
 * stale) and the PodGroup .status that follows from it all.
 *
 * Locking: one mutex inside the store, a leaf: nothing is called out while
 * it is held. Ownership: the store keeps its own references and copies;
 * everything handed out (gang_snap_t, strings, JSON) belongs to the caller,
 * who frees it as said at each function. */
#ifndef AISCHED_GANG_H
#define AISCHED_GANG_H

#include <stdint.h>
#include <jansson.h>
#include "api/types.h"

#define GANG_LABEL       "scheduling.x-k8s.io/pod-group"
#define PODGROUP_API     "/apis/scheduling.x-k8s.io/v1alpha1"
#define PODGROUP_VERSION "scheduling.x-k8s.io/v1alpha1"
/* A PodGroup annotation: the PriorityClass whose value is its gang's
 * priority (at least its members' own), for the gang's rank among waiting
 * gangs and its power to preempt. The grouper writes it from the owning
 * workload; a user's PodGroup may set it too: it grants nothing a pod's own
 * priorityClassName could not. */
#define GANG_PRIORITY_CLASS_ANNOTATION "resource.aibee.cn/priority-class"
/* A PodGroup annotation: PaddlePaddle's freezing window (design 000), a
 * duration: after the scheduler changes an elastic gang's size it makes no
 * further change to it for this long (default: its queue's reclaim
 * minimum runtime). */
#define GANG_FREEZING_WINDOW_ANNOTATION "resource.aibee.cn/freezing-window"

/* A PodGroup as parsed. invalid says why the gang cannot be scheduled
 * (minMember <= 0, a bad field); NULL when usable. */
typedef struct podgroup {
    char *ns, *name, *uid;
    int32_t min_member;
    int32_t timeout_s; /* spec.scheduleTimeoutSeconds; 0 when unset */
    resources_t min_resources;
    int64_t created_ms;
    char *queue; /* its queue label (resource.aibee.cn/queue or kai.scheduler/queue), or NULL */
    char *invalid;
    /* resource.aibee.cn/topology-required|preferred (label or annotation):
     * the node label of the level its minimum must / should share; NULL if none. */
    char *topo_level;
    int topo_required;
    char *priority_class;       /* GANG_PRIORITY_CLASS_ANNOTATION, or NULL */
    int64_t freezing_window_ms; /* GANG_FREEZING_WINDOW_ANNOTATION: DURATION_UNSET, _BAD or >= 0 */
    char *observed_status;      /* the status fields the scheduler writes, as the API has them (gang.c) */
} podgroup_t;

/* NULL with a message when obj is not a PodGroup at all (no name, uid);
 * a PodGroup with a bad spec parses, with ->invalid set. */
podgroup_t *podgroup_from_json(json_t *obj, char *err, size_t errlen);
void podgroup_free(podgroup_t *pg);

/* The group a pod names (borrowed from the pod), or NULL. */
const char *gang_of(const pod_t *p);

typedef struct gang_store gang_store_t;
gang_store_t *gang_store_new(void);
void gang_store_free(gang_store_t *gs);
/* The queue label of PodGroup ns/name, if known and set (caller frees). */
char *gang_queue_of(gang_store_t *gs, const char *ns, const char *name);
/* Its priority class annotation, if known and set (caller frees). */
char *gang_priority_class_of(gang_store_t *gs, const char *ns, const char *name);

/* Informer side. upsert takes pg and returns 1 when what scheduling reads
 * changed (a new object, minMember, the timeout, minResources, validity),
 * 0 for a status-only update. A delete keeps a tombstone while pods still
 * name the group: they fall back to single-pod scheduling. */
int gang_group_upsert(gang_store_t *gs, podgroup_t *pg);
void gang_group_delete(gang_store_t *gs, const char *ns, const char *name);
/* Any pod update (pods that name no group are ignored unless they did). */
void gang_pod_upsert(gang_store_t *gs, pod_t *p);
void gang_pod_delete(gang_store_t *gs, const pod_t *p);

typedef enum { GANG_OK = 0, GANG_MISSING, GANG_DELETED, GANG_INVALID } gang_state_t;

/* What a scheduling attempt needs, copied out. */
typedef struct gang_snap {
    char *key; /* "ns/name" */
    char *ns, *name, *uid;
    gang_state_t state;
    char *invalid;
    int32_t min_member;
    int32_t timeout_s;
    int64_t created_ms;
    resources_t min_resources;
    pod_t **members; /* one ref each: every live member */
    int nmembers;
    int64_t start_ms; /* first considered, 0 if never */
    char *topo_level; /* see podgroup_t */
    int topo_required;
    char *priority_class; /* see podgroup_t */
} gang_snap_t;
/* 0 and *out filled (free with gang_snap_clear); -1 if ns/name is unknown
 * (no PodGroup, no member). */
int gang_snapshot(gang_store_t *gs, const char *ns, const char *name, gang_snap_t *out);
void gang_snap_clear(gang_snap_t *s);

/* A gang's age for the minimum runtime ("a gang's age is its last
 * member's start"): the latest started_ms among the bound, live members of
 * p's gang; p's own start when it is in no known gang. */
int64_t gang_last_start(gang_store_t *gs, const pod_t *p);

/* Freezing window. Surplus placed or taken within GANG_RESIZE_BURST_MS of
 * a change's start is the same change, so a gang grows to what fits at
 * once. */
#define GANG_RESIZE_BURST_MS 2000
/* The scheduler changed the size of gang ns/name (surplus placed, or
 * evicted as a victim) at now_wall; a new change starts unless one began
 * less than GANG_RESIZE_BURST_MS ago. */
void gang_resized(gang_store_t *gs, const char *ns, const char *name, int64_t now_wall);
/* When the gang's last size change began (wall ms; 0: none known) and its
 * PodGroup's window annotation (*window_ms: DURATION_UNSET when none or
 * unknown, DURATION_BAD when malformed). The memory is in this process
 * only: after a restart a gang that holds surplus counts from its latest
 * member's start (its newest surplus is the best sign of its last change). */
int64_t gang_resize_start(gang_store_t *gs, const char *ns, const char *name, int64_t *window_ms);

/* Scheduler memory. */
/* The gang had its members pending and was tried: remembers the first
 * time (scheduleStartTime); returns it. */
/* One turn of a gang at a time, across pool threads (a gang that borrows
 * has members queued in its lender and its home pool): begin waits while
 * another thread runs the gang's turn. A turn never waits on another
 * gang's, so two threads cannot wait on each other. */
void gang_turn_begin(gang_store_t *gs, const char *key);
void gang_turn_end(gang_store_t *gs, const char *key);
int64_t gang_considered(gang_store_t *gs, const char *key, int64_t now_wall_ms);
/* Its minimum was placed: clears waiting and timeout; returns the wait in
 * seconds since first considered (for the histogram), -1 if unknown.
 * *was_waiting (may be NULL): it was holding back the pods behind it. */
double gang_placed(gang_store_t *gs, const char *key, int64_t now_wall_ms, int *was_waiting);
/* What a waiting gang asks, for the caller's queue rule (gang_blocker's
 * yields): owner (the caller's queue id, -1: none) and amounts in the
 * caller's units; the store keeps it as given. */
#define GANG_CLAIM_DIMS 4
typedef struct gang_claim {
    int owner;
    double amount[GANG_CLAIM_DIMS];
} gang_claim_t;
/* Asked by gang_blocker_q, with no lock of the store held, of each
 * waiting gang with a claim: 1 when the set being gated is held behind
 * it. ahead: the gang ranks ahead of the set (priority, then age), and
 * holds it unless the rule says it would give way to the set; not ahead,
 * it holds the set only when the set must give way to it (their queues:
 * one would take the room back from the other by reclaim). */
typedef int (*gang_yield_fn)(void *ud, const gang_claim_t *claim, int ahead);
/* Its minimum did not fit (message says why, for the timeout event). With
 * blocks, it waits in pool with this rank (its highest member priority,
 * its creation time) and holds back the pods behind it; claim (may be
 * NULL) is what it asks, for gang_blocker's yields. */
void gang_waiting(gang_store_t *gs, const char *key, int pool, int32_t prio, int64_t created_ms, const char *message,
                  int blocks, const gang_claim_t *claim);
/* Backfill gate. Does a waiting gang other than self_key, within its
 * timeout, rank ahead of a pod (priority prio, created created_ms) in pool
 * and could not evict it (prio not below the gang's, or no preemption)?
 * Returns a malloc'd reason naming the gang, or NULL. surplus: elastic
 * members rank behind every waiting gang's minimum. */
char *gang_blocker(gang_store_t *gs, int pool, const char *self_key, int32_t prio, int64_t created_ms, int surplus,
                   int pool_preempts);
/* gang_blocker with the caller's queue rule (yields) deciding for the
 * waiting gangs that have a claim. */
char *gang_blocker_q(gang_store_t *gs, int pool, const char *self_key, int32_t prio, int64_t created_ms, int surplus,
                     int pool_preempts, gang_yield_fn yields, void *ud);
/* gang_blocker for a pod of no gang that holds a nomination in pool (room
 * its preemption made) and asks to go to that room only: a waiting gang
 * whose priority is not above prio does not hold it back. That gang's
 * members see the nominated room as taken (a nominee ranking at least as
 * high counts on its node, as in kube's filter with nominated pods), so
 * the gang has the same room whether the pod waits or binds there; held
 * back, the pod only kept both waiting until the gang timed out. A gang
 * above prio could use that room: it still holds the pod back. */
char *gang_blocker_nominee(gang_store_t *gs, int pool, int32_t prio, int64_t created_ms, int pool_preempts);
/* Number of gangs waiting (cheap, no lock): 0 means no gate to check. */
int gang_nwaiting(gang_store_t *gs);

/* Is p (a bound member) beyond its gang's minimum, i.e. elastic surplus?
 * The latest-started bound members are the surplus. */
int gang_is_surplus(gang_store_t *gs, const pod_t *p);
enum { GANG_MEMBER_NONE = 0, GANG_MEMBER_MINIMUM = 1, GANG_MEMBER_SURPLUS = 2 };
/* NONE (no valid gang, or not bound), MINIMUM (a bound member that keeps
 * its gang at minMember) or SURPLUS. */
int gang_member_class(gang_store_t *gs, const pod_t *p);
/* The other bound, live members of p's gang when p keeps it at its
 * minimum (not surplus): refs in *out (caller unrefs, frees the array). */
int gang_mates(gang_store_t *gs, const pod_t *p, pod_t ***out);

/* Housekeeping (once a second), from the members as the API has them
 * (scheduled = bound), so nothing outside the store is read under its lock. */
typedef struct gang_patch {
    char *path, *body; /* owned (take body by setting it NULL) */
} gang_patch_t;
typedef struct gang_event {
    char *ns, *name, *uid, *msg; /* owned */
    const char *type, *reason;   /* static strings */
} gang_event_t;
typedef struct gang_tick {
    /* Status patches to write, owned by the caller. */
    gang_patch_t *patches;
    int npatches;
    /* Events to post on PodGroups, owned. */
    gang_event_t *events;
    int nevents;
    /* Gangs that just timed out or stopped waiting: pools to wake. */
    int *wake_pools;
    int nwake;
    /* Pods to evict (stale gangs with evict_stale): refs. */
    pod_t **evict;
    int nevict;
    int timed_out; /* gangs that timed out this tick */
    int stale;     /* gangs stale now */
    int waiting;   /* gangs waiting now */
    int unwaited;  /* gangs that stopped waiting (members gone) */
} gang_tick_t;
/* write_status 0: keep changed statuses for a later tick (the scheduler
 * passes 0 while Bindings are queued: they go first). */
void gang_tick(gang_store_t *gs, int64_t now_wall_ms, int default_timeout_s, int stale_grace_s, int evict_stale,
               int write_status, gang_tick_t *out);
void gang_tick_clear(gang_tick_t *t);
/* Status changes soon (a member moved): the next tick rewrites it. */
void gang_touch(gang_store_t *gs, const char *ns, const char *name);
/* Pending gangs per pool for the pool table: waiting[pool id] += 1. */
void gang_count_waiting(gang_store_t *gs, int *per_pool, int npools);

/* The dashboard's view of one PodGroup (gang_each_row), strings borrowed
 * for the call. placed: bound, live members; waiting_behind: the waiting
 * gang of the same pool that ranks ahead of this one (gang_blocker's
 * order), NULL when none or this gang is not waiting. */
typedef struct gang_row {
    const char *key, *ns, *name, *queue, *topo_level, *wait_msg, *waiting_behind, *invalid;
    const char *phase;
    const char *member_pool; /* a member's home pool (pod_home_pool), NULL without members */
    const pod_t *member;     /* that member (borrowed for the call), NULL without members */
    const char *placed_node; /* the node of a member that holds one, NULL when none does */
    int32_t min_member;
    int members, placed, running, succeeded, failed;
    int64_t created_ms, start_ms; /* wall; start 0: never considered */
    int waiting, wait_pool, timed_out;
    int topo_required; /* topo_level is required (else preferred) */
} gang_row_t;
/* Calls fn for every PodGroup seen (a gang with a PodGroup object), under
 * the store's lock: fn copies what it keeps and must not call the store. */
void gang_each_row(gang_store_t *gs, void (*fn)(void *ud, const gang_row_t *r), void *ud);

/* Pure: the phase scheduler-plugins' controller would give these counts. */
const char *gang_phase(int nmembers, int min_member, int scheduled, int running, int succeeded, int failed,
                       int timed_out);

#endif
