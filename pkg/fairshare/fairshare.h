/* fairshare.h -- tenants: the Queue objects (queues.resource.aibee.cn), their
 * hierarchy, what each queue holds and waits for in each pool, its fair
 * share (weighted max-min water-filling down the hierarchy), its decayed
 * usage, and the admission and reclaim rules built on those numbers.
 *
 * Queues are known by a small id: fs_tenant_id interns any queue name a pod
 * carries (bounded, see FS_MAX_NAMES), whether or not a Queue of that name
 * exists; the store resolves an id to the queue its pods count in (itself
 * when it is a valid leaf, else `default`) each time it is asked, so a
 * Queue created after its pods needs nothing re-queued.
 *
 * Units are KAI-Scheduler's: GPUs, CPU millicores, memory MB (10^6 bytes).
 *
 * Locking: one mutex inside the store, a leaf: nothing is called out while
 * it is held. It is taken alone, under the cache lock (fs_charge, from the
 * cache's accounting hook), under a scheduling queue's mutex (the tenant
 * and pick callbacks) and under pdb_mu (reclaim victim checks).
 * Ownership: the store owns the specs it is given; everything it hands out
 * (strings, JSON, fs_tick_t arrays) is the caller's, freed as said. */
#ifndef AISCHED_FAIRSHARE_H
#define AISCHED_FAIRSHARE_H

#include <stdint.h>
#include <jansson.h>
#include "api/types.h"

#define FS_QUEUE_LABEL       "resource.aibee.cn/queue"
#define FS_KAI_QUEUE_LABEL   "kai.scheduler/queue"
#define FS_PREEMPTIBLE_LABEL "resource.aibee.cn/preemptible"
#define FS_DEFAULT_QUEUE     "default"
#define FS_QUEUE_API         "/apis/resource.aibee.cn/v1alpha1"
#define FS_DEFAULT_ID        0
/* Distinct queue names remembered from pods' labels; pods naming more go
 * to default. Queue objects' names are counted apart (fairshare.c). */
#define FS_MAX_NAMES        1024
#define FS_MAX_OBJECT_NAMES 65536

enum { FS_GPU = 0, FS_CPU, FS_MEM, FS_NRES };
extern const char *const fs_res_names[FS_NRES]; /* "gpu", "cpu", "memory" */

/* One resource of a Queue spec; a negative value means unset. */
typedef struct fs_res {
    double quota, weight, limit;
} fs_res_t;

typedef struct fs_pool_res {
    char *pool;
    fs_res_t res[FS_NRES];
} fs_pool_res_t;

/* A Queue as parsed. invalid says why it cannot be used on its own (a bad
 * field); hierarchy faults are found by the store. */
typedef struct fs_queue_spec {
    char *name, *uid, *parent; /* parent NULL when top-level */
    int64_t priority;
    fs_res_t res[FS_NRES];
    fs_pool_res_t *pools; /* spec.pools overrides */
    int npools;
    double excess_budget[FS_NRES]; /* resource-seconds; < 0 unset */
    /* spec.preemptMinRuntime / reclaimMinRuntime (ms; -1 never a victim,
     * 0 none) and spec.checkpointGrace (ms), DURATION_UNSET when not set:
     * inherited from the parent, at the top from the pool's. */
    int64_t preempt_min_runtime_ms, reclaim_min_runtime_ms, checkpoint_grace_ms;
    char *invalid;
    char *spec_json;   /* spec, compact: tells a spec change from a status write */
    char *status_json; /* {"status":...} as the API has it, compact, sorted; NULL if none */
} fs_queue_spec_t;

/* NULL + message when obj is not a Queue at all (no name); a Queue with a
 * bad spec parses with ->invalid set. */
fs_queue_spec_t *fs_queue_from_json(json_t *obj, char *err, size_t errlen);
void fs_queue_spec_free(fs_queue_spec_t *q);

/* A resource vector, and a pod's request, in store units. A shared-GPU
 * request counts its fraction of a GPU (gpu/gpu.h; one by memory only
 * once its node's GPU memory is known, at fs_charge). */
void fs_res_vec(const resources_t *r, double v[FS_NRES]);
void fs_pod_vec(const pod_t *p, double v[FS_NRES]);
/* The queue label a pod carries (borrowed), or NULL. */
const char *fs_pod_queue_label(const pod_t *p);

typedef struct fs_opts {
    int usage_half_life_s;        /* 0: ratios use allocation, no decay */
    int starvation_age_s;         /* 600 */
    int non_preemptible_priority; /* 100 */
    /* The GPUs a pod's device claims count as (DRA), added to its gpu;
     * NULL: none. Called under the store's lock: leaf locks only. */
    double (*pod_devices)(void *ud, const pod_t *p);
    void *pod_devices_ud;
} fs_opts_t;

typedef struct fs_store fs_store_t;
fs_store_t *fs_store_new(const fs_opts_t *o);
void fs_store_free(fs_store_t *fs);
/* fs_pod_vec with what the store's options add (the pod's DRA devices). */
void fs_store_pod_vec(fs_store_t *fs, const pod_t *p, double v[FS_NRES]);

/* Informer side. upsert takes q; returns 1 when anything scheduling reads
 * changed (0 for a status-only update). A Queue named default replaces
 * the implicit one. */
int fs_queue_upsert(fs_store_t *fs, fs_queue_spec_t *q);
void fs_queue_delete(fs_store_t *fs, const char *name);
/* Any Queue object known (otherwise every pod is in default). */
int fs_active(fs_store_t *fs);

/* Interns a queue name (NULL or "" is default). Thread-safe. */
int fs_tenant_id(fs_store_t *fs, const char *name);
/* When tenant does not resolve to itself (unknown, invalid, not a leaf),
 * a message saying so (caller frees); NULL when it does. */
char *fs_fallback_message(fs_store_t *fs, int tenant);
/* Whether the pod may be reclaimed or preempted (priority threshold,
 * label), ignoring its lifetime. */
int fs_pod_preemptible(fs_store_t *fs, const pod_t *p);

/* Accounting: a pod started (+1) or stopped (-1) occupying a node, charged
 * to tenant in pool; gpu_mem_mib is that node's per-GPU memory (0 if
 * unknown), for a share asked by memory. Idempotent per uid: a second +1
 * replaces the charge, a -1 for an unknown uid does nothing. */
void fs_charge(fs_store_t *fs, const pod_t *p, int tenant, int pool, int64_t gpu_mem_mib, int sign);
/* fs_charge(+1) for a pod that holds room without running: a preemptor
 * holding the room it made, a pod placed whose Binding is in flight. It
 * counts as a running pod does, but fs_limit_victims never chooses it
 * (evicting a pod that is not bound deletes it). */
void fs_charge_held(fs_store_t *fs, const pod_t *p, int tenant, int pool, int64_t gpu_mem_mib);
/* Whether uid is charged (running, or a preemptor holding room). */
int fs_is_charged(fs_store_t *fs, const char *uid);
/* Drops uid's charge, if any (the cache's hook: the pod stops holding a
 * node, or is charged again after). A leaving mark (fs_leave) stays. */
void fs_uncharge(fs_store_t *fs, const char *uid);
/* The pod's DRA claims changed (a claim listed after the pod was charged,
 * an allocation written): its charge counts their GPUs as they are now
 * (the store's pod_devices); nothing when it has no charge. */
void fs_refresh_devices(fs_store_t *fs, const pod_t *p);
/* fs_uncharge, and uid's leaving mark goes too: the pod is gone, or a
 * preemptor gives up the room it held. */
void fs_forget(fs_store_t *fs, const char *uid);
/* A victim is on its way out (its preemption decided, its checkpoint
 * asked, its eviction begun). Until it is gone its charge has two views:
 * fair shares and reclaim count it as freed (the preemptor holds that
 * room; nothing reclaims it twice, fs_limit_victims, fs_may_reclaim and
 * fs_victims_ok never choose it again), while limits and quotas
 * (fs_admit) count it as held, as its node does: no other pod of its
 * queue's subtree is admitted into room it still occupies. The mark
 * outlives the cache's re-charges (an informer update is -1 then +1)
 * until fs_forget or fs_stay. */
void fs_leave(fs_store_t *fs, const char *uid);
/* A victim that stays after all (its eviction refused, its preemption
 * withdrawn): it counts everywhere again. */
void fs_stay(fs_store_t *fs, const char *uid);

/* Pool inputs: its name and capacity, and the pending demand of each
 * tenant (fs_set_pending replaces the pool's previous pending vector). */
void fs_set_pool(fs_store_t *fs, int pool, const char *name, const double cap[FS_NRES]);
typedef struct fs_pending {
    int tenant;
    double v[FS_NRES];
    int pods;
} fs_pending_t;
void fs_set_pending(fs_store_t *fs, int pool, const fs_pending_t *p, int n);
/* Recomputes the pool's fair shares and decayed usage; 1 when a share
 * moved (pods that waited on the old shares may fit now). */
int fs_refresh(fs_store_t *fs, int pool, int64_t now_ms);

/* Order: share ratio of the queue tenant counts in (usage over fair share,
 * dominant resource; < 1 means under its share). */
double fs_ratio(fs_store_t *fs, int pool, int tenant);
/* Whether tenant holds at least its fair share of some resource it uses
 * in pool (unweighted, unlike fs_ratio's order). */
int fs_at_share(fs_store_t *fs, int pool, int tenant);
/* Which of n tenants with ready pods goes next: a starving head first (its
 * first_ms older than the starvation age while its queue is under its
 * share), else the lowest ratio; ties to the earlier index. */
int fs_pick(fs_store_t *fs, int pool, const int *tenants, const int64_t *head_first_ms, int n, int64_t now_ms);
/* A pod queued since first_ms (monotonic ms) starves. */
int fs_starving(fs_store_t *fs, int pool, int tenant, int64_t first_ms, int64_t now_ms);

/* Admission: 0 when req fits the queue's and its ancestors' limits (and,
 * for non-preemptible work, their quotas); else a message naming the queue
 * and the resource, and FS_ADMIT_QUOTA (a non-preemptible quota is passed:
 * checked first) or FS_ADMIT_LIMIT (a limit is passed; quotas hold). */
#define FS_ADMIT_LIMIT (-1)
#define FS_ADMIT_QUOTA (-2)
int fs_admit(fs_store_t *fs, int pool, int tenant, const double req[FS_NRES], int preemptible, char *msg,
             size_t msglen);

/* Whether a set of tenant asking req yields room to a waiting set of
 * other asking other_req (the backfill gate across queues): other could
 * take that room back by reclaim without passing its fair share, tenant's
 * side of the tree, with req placed, would be over its own, and
 * other_req fits what no queue holds in pool now (the room is there for
 * it: a set that cannot have room soon holds nothing back). Placed first,
 * the set would be reclaimed at once (its pods evicted after seconds,
 * again whenever it is placed again). */
int fs_yields(fs_store_t *fs, int pool, int tenant, const double req[FS_NRES], int other,
              const double other_req[FS_NRES]);
/* Reclaim, per victim: may a pod of tenant (asking req; starving) evict
 * the running pod victim_uid (in_gang: a member of its gang's minimum,
 * which goes whole)? Same queue: only when starving, for newer preemptible
 * pods of priority <= prio. Across queues: the victim is preemptible (or
 * past its lifetime), the reclaimer stays within its fair share, and the
 * victim's queue stays at or above its share after (unless the reclaimer
 * starves, or the victim overran its excess budget: then the reclaimer's
 * ratio after must not pass the victim queue's) or, for a gang member, is
 * over its share with the member counted (over-quota work goes back
 * whole). *cross is set when the queues differ. */
int fs_may_reclaim(fs_store_t *fs, int pool, int tenant, const double req[FS_NRES], int starving, int32_t prio,
                   int64_t created_ms, const char *victim_uid, int in_gang, int64_t now_ms, int *cross);
/* The same rules for a whole victim set (their sums per queue), by job:
 * jobs[i] (an index below n) is victim i's job, shared by the members of
 * one gang's minimum; NULL: each victim is a job of its own. A job of
 * several pods may go while its queue, with the job counted and the other
 * victims gone, is over its share (KAI-Scheduler judges each job with the
 * ones before it gone); victims that go one by one keep their queue at or
 * above its share. */
int fs_victims_ok(fs_store_t *fs, int pool, int tenant, const double req[FS_NRES], int starving,
                  const char *const *victim_uids, const int *jobs, int n, int64_t now_ms);
/* When limits on the path of tenant (its own or an ancestor's) keep a
 * pod of priority prio asking req out: the pods whose going frees enough
 * of every such limit, lowest priority then newest first. They are the queue's
 * own pods of lower priority (priority preemption inside a queue) and,
 * when the limit is an ancestor's and the queue stays within its fair
 * share, preemptible pods of sibling subtrees above their shares, by
 * reclaim's rules; never a held charge (fs_charge_held) nor a victim
 * already leaving (fs_leave: the limits it frees are counted freed, the
 * excess asked is what stays beyond them). Returns how many
 * (uids in *out, an array the caller frees with each string), 0 when there
 * is no such set. */
int fs_limit_victims(fs_store_t *fs, int pool, int tenant, const double req[FS_NRES], int32_t prio, int64_t now_ms,
                     char ***out);
/* Minimum runtime (KAI-Scheduler's preemptMinRuntime / reclaimMinRuntime)
 * of tenant's pods: the field of the queue its pods count in if set, else
 * of the nearest ancestor that sets it, else pool_default. ms; 0 none, -1
 * never a victim of that kind. *from (may be NULL): the name of the Queue
 * that set it (caller frees), NULL when pool_default applied. */
enum { FS_MINRT_PREEMPT = 0, FS_MINRT_RECLAIM = 1 };
/* Whether any Queue sets a minimum runtime (no lock: a fast path). */
int fs_any_min_runtime(fs_store_t *fs);
int64_t fs_min_runtime(fs_store_t *fs, int tenant, int kind, int64_t pool_default, char **from);
/* Whether tenants a and b count in the same queue. */
int fs_same_queue(fs_store_t *fs, int a, int b);
/* Whether they count under the same top-level queue: a limit or a share
 * on the path of one may then depend on the other's usage. */
int fs_same_tree(fs_store_t *fs, int a, int b);
/* Counts a reclaim by tenant taking victims (uids). */
void fs_note_reclaim(fs_store_t *fs, int tenant, const char *const *victim_uids, int n);
/* Name of the queue tenant counts in (caller frees). */
char *fs_queue_name(fs_store_t *fs, int tenant);

/* Housekeeping, once a second: decayed usage and excess budgets advance,
 * fair shares are recomputed, and the Queue objects whose status changed
 * get a body; newly invalid Queues get an event. */
typedef struct fs_patch {
    char *name; /* Queue name */
    char *body; /* merge patch {"status":...} */
} fs_patch_t;
typedef struct fs_event {
    char *name, *uid, *reason, *message;
} fs_event_t;
typedef struct fs_tick {
    fs_patch_t *patches;
    int npatches;
    fs_event_t *events;
    int nevents;
} fs_tick_t;
void fs_tick(fs_store_t *fs, int64_t now_ms, fs_tick_t *out);
void fs_tick_clear(fs_tick_t *t);

/* Metrics: one call per (queue, pool) with a known Queue or any use. */
typedef void (*fs_metric_fn)(void *ud, const char *queue, const char *pool, const double alloc[FS_NRES],
                             const double fair[FS_NRES], int pending);
void fs_each_metric(fs_store_t *fs, fs_metric_fn fn, void *ud);
/* The dashboard's queue table (a new reference): [{"name", "parent"
 * (null at the top), "children", "weight" (the GPU weight, null unset),
 * "valid", "resources":{gpu|cpu|memory: {"quota","limit","weight",
 * "fairShare","allocated","pending"}}, "pools":[{"name","resources",
 * "pendingPods"}], "pendingPods", "runningPods"}], parents before
 * children, siblings by name. Units as the dashboard's: GPUs, CPU
 * millicores, memory bytes (the store's MB times 10^6); unset spec fields
 * are null. Queues with a Queue object, and default. */
json_t *fs_dashboard_queues(fs_store_t *fs);
/* Reclaim counters per queue: as reclaimer (reclaims) and as victim (pods). */
typedef void (*fs_counter_fn)(void *ud, const char *queue, unsigned long reclaims, unsigned long reclaimed);
void fs_each_counter(fs_store_t *fs, fs_counter_fn fn, void *ud);

/* The checkpoint grace (ms, >= 0; 0 opts out) of the queue tenant counts
 * in: its own spec.checkpointGrace, else the nearest ancestor's that sets
 * it; DURATION_UNSET when none does (no pool-wide default). */
int64_t fs_checkpoint_grace(fs_store_t *fs, int tenant);

/* Pure: water-filling of share among n children (see fairshare.c). quota
 * < 0 is none, cap is min(limit, demand); out gets each child's share. */
void fs_waterfill(double share, int n, const double *quota, const double *weight, const int64_t *prio,
                  const double *cap, double *out);

#endif
