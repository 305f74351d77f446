/* internal.h -- state shared by the scheduler's own files (not public).
 *
 * Locking: the order of every lock here (pools_mu, pdb_mu, hk_mu,
 * stats_mu, the cache's, the queues', the stores', the binder's, the
 * writer's, the evictor's...) and why each edge exists are written once, in
 * LOCKORDER_RANKS (util/lockorder.h); the sanitizer builds check it. Take
 * the scheduler's own mutexes through the helpers below (pools_lock, ...). */
#ifndef AISCHED_SCHED_INTERNAL_H
#define AISCHED_SCHED_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "cache/cache.h"
#include "fairshare/fairshare.h"
#include "framework/queues.h"
#include "gpu/gpu.h"
#include "grouper/grouper.h"
#include "kube/informer.h"
#include "owners/owners.h"
#include "pool/pool.h"
#include "preemption/preemption.h"
#include "queue/queue.h"
#include "scheduler/extension.h"
#include "scheduler/scheduler.h"
#include "util/hashmap.h"
#include "util/lockorder.h"

#define DEFAULT_POOL_ID 0

typedef struct sched_pool {
    int id; /* index in scheduler.pools; never reused */
    char *name;
    pool_spec_t spec; /* guarded by pools_mu */
    int has_object;   /* a Pool object exists (default may have none) */
    int dead;         /* deleted; thread stopping */
    sched_queue_t *q;
    pthread_t thread;
    int started;
    unsigned next_start; /* where the next feasibility search starts */
    int nodes_n;         /* this pool's nodes, counted at cache nodes version nodes_ver */
    uint64_t nodes_ver;  /* 0: not counted yet (the cache's version starts at 1) */
    uint64_t rng;
    struct scheduler *s;
} sched_pool_t;

/* One scheduling profile: pods whose schedulerName is name use fw. */
typedef struct sched_profile {
    char *name;      /* owned */
    framework_t *fw; /* owned */
} sched_profile_t;

typedef struct api_writer api_writer_t;
typedef struct binder binder_t;
typedef struct evictor evictor_t;
typedef struct held_set held_set_t;
struct explain_store;

struct scheduler {
    scheduler_opts_t opts;
    char *name; /* scheduler_name, owned */
    char *identity;
    kube_client_t *kc;
    framework_t *fw;
    cache_t *cache;

    pthread_mutex_t pools_mu;
    sched_pool_t **pools; /* by id; dead ones stay as tombstones */
    int npools, cap_pools;
    hashmap_t *pool_by_name; /* live pools except default -> sched_pool_t */
    pool_spec_t *spec_arr;   /* shallow copies of live specs for partitioning */
    int *spec_ids;
    int nspecs;
    int threads_on;            /* pool threads may run (caches synced) */
    hashmap_t *pod_uid_by_key; /* ns/name -> uid; pods informer thread only */

    pthread_mutex_t pdb_mu;
    pdb_t **pdbs;
    int npdbs;
    hashmap_t *pdb_by_key; /* ns/name -> pdb_t (same objects as pdbs) */

    informer_t *inf_pools, *inf_nodes, *inf_pods, *inf_pdbs;
    /* The informers of the rows' watches (sched_watch_t), one per path
     * (services.c: sched_rows_watch); NULL until scheduler_start. */
    informer_t **row_infs;
    int nrow_infs;
    /* Each declared watch's informer (in the rows' order; rows watching
     * one path share one of row_infs), NULL before scheduler_start. */
    informer_t **watch_infs;
    api_writer_t *writer;
    binder_t *binder;
    evictor_t *evictor;
    int bind_backlog; /* binds not on the wire yet: for a worker or a slot (atomic); other writes yield to them */
    pthread_t housekeeper;
    int housekeeper_started;
    pthread_mutex_t hk_mu;
    pthread_cond_t hk_cv;
    int stopping;
    int ready;
    int fenced;             /* lost the lease: decide and write nothing (atomic) */
    int status_dirty;       /* Pool .status may be stale (atomic); see status_changed */
    hashmap_t *status_last; /* "name/uid" -> last status body written; housekeeper only */

    pthread_mutex_t stats_mu;
    scheduler_stats_t stats;
    int use_policy_v1;

    /* profiles.c: profiles[0] is (name, fw); owners feed default spreading */
    sched_profile_t *profiles;
    int nprofiles;
    owners_t *owners;
    informer_t *inf_owners[OWNER_NKINDS];

    /* The Queues (tenants, fair share, quotas and limits): the calls the
     * tenants row publishes through its queues point (framework/queues.h),
     * bound to its room; set when the rows are built. */
    sched_queues_t queues;

    /* The rows' rooms, one per row of the table (extensions.c), in its
     * order: made at scheduler_new (services.c), freed last. */
    sched_row_t *rows;
    int nrows;
    /* The rows with a node_view point (indexes into rows): asked for every
     * node a cycle filters, so found once. */
    int *view_rows;
    int nview_rows;
    /* The rows with a nominee point, found once for the same reason. */
    int *nominee_rows;
    int nnominee_rows;
    /* What the rows keep for the Filter plugins (their cluster point, asked
     * once when they are built): every cluster view starts from it. */
    fw_cluster_t row_cluster;
    /* gates.c: pending pods a pre_enqueue row keeps out of the queues */
    held_set_t *held;
    /* Live Pools whose spec sets a minimum runtime (atomic; written under
     * pools_mu by pools.c): the services' any_pool_min_runtime. */
    int min_runtime_pools;
    /* What rows publish (sched_published_t): the freezing window's end,
     * the PriorityClass values. */
    sched_published_t published;
    /* trace.c: the decision records of pending pods and gangs (explain/,
     * its own leaf mutex) */
    struct explain_store *explain;
    /* dashboard.c: what moves the dashboard's change counter besides the
     * informers' events (binds, and events fed to a sandbox); atomic, see
     * sched_dash_changed and scheduler_generation */
    uint64_t dash_gen;
};

/* Something the dashboard shows changed outside an informer (a bind
 * handed to the binder, an event fed to a sandbox): scheduler_generation. */
static inline void sched_dash_changed(scheduler_t *s)
{
    __atomic_add_fetch(&s->dash_gen, 1, __ATOMIC_RELAXED);
}

/* The scheduler's own mutexes, with the lock order checked (lockorder.h). */
static inline void pools_lock(scheduler_t *s)
{
    lo_mutex_lock(&s->pools_mu, LO_POOLS);
}
static inline void pools_unlock(scheduler_t *s)
{
    lo_mutex_unlock(&s->pools_mu, LO_POOLS);
}
static inline void pdb_lock(scheduler_t *s)
{
    lo_mutex_lock(&s->pdb_mu, LO_PDB);
}
static inline void pdb_unlock(scheduler_t *s)
{
    lo_mutex_unlock(&s->pdb_mu, LO_PDB);
}
static inline void hk_lock(scheduler_t *s)
{
    lo_mutex_lock(&s->hk_mu, LO_HK);
}
static inline void hk_unlock(scheduler_t *s)
{
    lo_mutex_unlock(&s->hk_mu, LO_HK);
}
static inline void stats_lock(scheduler_t *s)
{
    lo_mutex_lock(&s->stats_mu, LO_STATS);
}
static inline void stats_unlock(scheduler_t *s)
{
    lo_mutex_unlock(&s->stats_mu, LO_STATS);
}

/* pools.c */
void pools_init(scheduler_t *s);
void pools_destroy(scheduler_t *s);
int pools_partition(void *ud, const node_t *node);
/* Pool id of a pod's home pool (default when unknown). */
int pools_home_id(scheduler_t *s, const pod_t *p);
/* Live pool by id, or NULL; the pointer stays valid until scheduler_free. */
sched_pool_t *pools_get(scheduler_t *s, int id);
void pools_start_threads(scheduler_t *s);
void pools_stop_threads(scheduler_t *s);
void pools_on_event(void *ud, kube_event_type_t type, const char *key, json_t *obj);
/* Calls fn for every live pool, without pools_mu held. */
void pools_each_live(scheduler_t *s, void (*fn)(sched_pool_t *P, void *ud), void *ud);
/* Every pool's unschedulable pods move (what sched_event does when no row
 * answers; a test's shortcut). */
void pools_move_all(scheduler_t *s, const char *event);
/* events.c: an event that may let waiting pods fit: the rows answer what
 * it wakes (on_event), and the core moves those pods out of
 * unschedulableQ; every pool's when no row answers. pod, node: the pod and
 * node involved, or NULL. */
void sched_event(scheduler_t *s, sched_event_kind_t kind, const pod_t *pod, const char *node, const char *reason);
void pools_delete_pod(scheduler_t *s, const char *uid);
/* A queued pod's object changed: whichever queue holds it takes the update. */
void pools_update_pod(scheduler_t *s, pod_t *p);
void pools_sweep_dead(scheduler_t *s);
/* Copies a pool's flags under pools_mu. */
void pools_flags(scheduler_t *s, int id, int *no_preempt, int *no_borrow, int *no_share);
/* A live pool's reclaimMinRuntime (reclaim) or preemptMinRuntime in ms,
 * and its name in name[len]; 0 when the pool is gone. Under pools_mu. */
int64_t pools_min_runtime(scheduler_t *s, int id, int reclaim, char *name, size_t len);

/* cycle.c: the pool thread */
void *pool_thread_main(void *arg);
/* One turn of the pool thread's loop without waiting: 1 when a pod was
 * ready and its cycle ran, 0 when none was. */
int sched_pool_step(sched_pool_t *P);
/* The next number of a pool's generator (P->rng, its thread only):
 * score ties and where a victim search starts. */
uint64_t sched_rng_next(uint64_t *x);
typedef struct decision {
    char *node; /* chosen node, owned; NULL if none */
    uint64_t generation;
    uint64_t epoch; /* cache_interpod_epoch when deciding */
    char *message;  /* failure summary, owned */
    int pool_nodes;
} decision_t;
/* PreFilter, Filter and Score over P's nodes for pod (the cache read lock
 * taken inside); d is the caller's to free (node, message). */
void sched_decide(sched_pool_t *P, cycle_state_t *cs, const pod_t *pod, decision_t *d);
/* Reserve: 1 when the pod is assumed on d->node and every row's reserve
 * took it (its volumes chosen). */
int sched_assume(sched_pool_t *P, cycle_state_t *cs, pod_t *pod, decision_t *d);
/* sched_decide that, when no node fits, gives *keep the filter pass's
 * diagnosis (caller frees); keep NULL is sched_decide. */
void sched_decide_diag(sched_pool_t *P, cycle_state_t *cs, const pod_t *pod, decision_t *d, fw_diagnosis_t **keep);
/* sched_decide on node alone (a node of P): PreFilter and Filter, as the
 * pod sees it with the nominations there, no Score. */
void sched_decide_on(sched_pool_t *P, cycle_state_t *cs, const pod_t *pod, const char *node, decision_t *d);
/* The feasible nodes of P for pod, best first, with each score plugin's
 * share: up to max of them in names/totals, per_plugin[i * maxp + p] and
 * plugins[p] (a decision record's topNodes; not the hot path). Returns how
 * many nodes, *nplugins the plugins. */
int sched_top_nodes(sched_pool_t *P, const pod_t *pod, int max, char **names, int64_t *totals, int64_t *per_plugin,
                    const char **plugins, int maxp, int *nplugins);
/* Whether the pod has required pod (anti-)affinity or a DoNotSchedule
 * spread constraint: other pods' labels can keep it from fitting. */
int sched_has_hard_interpod(const pod_t *p);
/* Undoes sched_assume (every row's unreserve, and the cache forgets). */
void sched_unassume(sched_pool_t *P, const pod_t *pod);
/* One cycle (extension.h) for a popped item, a set of one that the gang
 * row widens to its gang: the item is given on (bound, requeued, moved or
 * freed) before it returns. */
void sched_schedule_item(sched_pool_t *P, queue_item_t *it);
/* The post-filter rows in order, until one makes room or moves the set
 * (EXT_DONE; moved items are NULL in set->items). */
ext_rc_t sched_post_filter(pod_set_t *set);
/* Event (reason, Warning) and PodScheduled condition for an unschedulable
 * item, once per new message; takes message. */
void sched_report(sched_pool_t *P, queue_item_t *it, const char *reason, char *message);
/* The item's pod from the cache; 0 if it is no longer ours to schedule. */
int sched_refresh(scheduler_t *s, queue_item_t *it);
/* The whole cluster as PreFilter sees it (every node, the inter-pod index,
 * the volume store); borrowed from the cache: cache lock held. */
void sched_cluster_view(scheduler_t *s, fw_cluster_t *cl);
node_info_t *node_with_nominated(scheduler_t *s, const pod_t *pod, node_info_t *ni, int *cloned);
/* Private copies into out (room for nall) of pool's nodes among
 * all[0..nall) as pod sees them (node_with_nominated); with alloc, the
 * sums of the nodes' allocatable and requested (nominations not
 * counted) and their pods are added. Returns how many. Cache read lock
 * held. */
int sched_pool_copies_locked(scheduler_t *s, int pool, const pod_t *pod, node_info_t *const *all, int nall,
                             node_info_t **out, resources_t *alloc, resources_t *used, int *tasks);

/* preempt_eval.c: what the preemption row asks of the core, and the
 * evaluator's entries for tests and the gang row.
 * Whether the set may evict: the pool's switch, every member of its
 * minimum's preemptionPolicy and profile. */
int sched_set_may_evict(const pod_set_t *set);
/* Preemption inside P for pod alone (queued since first_ms, monotonic),
 * by preempt_eval: 1 when room is reserved (or victims are on their way
 * out), 0 when no node can be freed. */
int postfilter_preempt(sched_pool_t *P, pod_t *pod, int64_t first_ms);

/* victims.c (the victims point's combining rule), shared with the evaluator */
typedef struct victim_ctx {
    scheduler_t *s;
    int pool_id;
    /* Queues (pe_victim_ctx): across queues only reclaim's rules. */
    int queues;
    int tenant;
    double req[FS_NRES]; /* the preemptor's (a gang: its minimum's) request */
    int starving;
    int32_t prio;
    int64_t created_ms, now_wall;
    /* A group's preemption (a set of many): the priority of its class
     * (sched_class_priority), which its members preempt with when it is
     * above their own. */
    int has_group_prio;
    int32_t group_prio;
    /* The set the preemption is for: a protect row notes there the pods
     * it kept (NULL: not noted). */
    pod_set_t *set;
} victim_ctx_t;
/* preempt_victim_fn for preemption inside pool_id: borrowers rank lowest,
 * then elastic gang surplus, then lower-priority home pods. */
int postfilter_is_victim(const pod_t *victim, const pod_t *preemptor, void *ud, int64_t *rank);
/* preempt_eval.c: how many candidate nodes a preemption's victim search looks for before
 * it stops: kube-scheduler's minCandidateNodesPercentage (10%) of the
 * nodes, at least minCandidateNodesAbsolute (100). */
int postfilter_candidates_wanted(int nodes);
/* Victims of a preemptor still terminating: evicted for it (evictor_awaiting), or on its nominated node. */
int postfilter_waiting_for_victims(scheduler_t *s, const pod_t *pod);
/* The pod gives up the room nominated for it, here and on the API. */
void postfilter_drop_nomination(scheduler_t *s, const pod_t *pod);

/* preempt_eval.c: the Queues' side of a victim search (s->queues):
 * vc's queue fields for preemptors pods[0..n) (one pod, or a gang's
 * minimum) queued since first_ms (0: never starving); candidates whose
 * victim set breaks reclaim's rules dropped (and cleared), how many are
 * left returned, in place; a victim set checked by the same rules. */
void pe_victim_ctx(sched_pool_t *P, pod_t *const *pods, int n, int64_t first_ms, victim_ctx_t *vc);
int pe_queue_candidates(const victim_ctx_t *vc, preempt_candidate_t *cands, int n);
int pe_queue_victims_ok(const victim_ctx_t *vc, pod_t *const *victims, int n);
/* Reclaim under a queue limit (services' evict_for_limit): the victims
 * the store chose (uids, taken) go for set's minimum, or none do: 1 when
 * they go, -1 when the set would not be placed with them gone. */
int pe_limit_reclaim(pod_set_t *set, int pool, char **uids, int n);
/* A preemptor gave up its room: its provisional charge goes. A victim
 * whose eviction was refused counts again. */
void sched_unreserve_preemptor(scheduler_t *s, const pod_t *pod);
void sched_recharge(scheduler_t *s, const pod_t *victim);
/* The queue (tenant) a pod counts in. */
int sched_pod_tenant(scheduler_t *s, const pod_t *p);

/* services.c: the services table rows get (framework/services.h), and
 * the rows' rooms. */
extern const sched_services_t sched_services;
/* Every row's check of the options (before anything is built): 0, or -1
 * with err, the first refusal's. */
int sched_rows_check(const scheduler_opts_t *o, char *err, size_t errlen);
/* Every row's init, in table order (s->rows); sched_rows_fini frees them. */
void sched_rows_init(scheduler_t *s);
void sched_rows_fini(scheduler_t *s);
/* The row named name (its room and services), or NULL. */
const sched_row_t *sched_row(scheduler_t *s, const char *name);
/* Whether some row's timed point says its housekeeping has timed work. */
int sched_rows_timed(scheduler_t *s);
/* Pods informer: every row's pod_seen, pod_deleted, pod_settled. */
void sched_rows_pod_seen(scheduler_t *s, pod_t *pod);
void sched_rows_pod_deleted(scheduler_t *s, const pod_t *pod);
void sched_rows_pod_settled(scheduler_t *s, const pod_t *pod);
/* A placed pod's bind will not happen (PreBind or the Binding failed, or
 * it is held back): every row's unreserve, as kube's binding cycle does. */
void sched_rows_unreserve(scheduler_t *s, const pod_t *pod);
/* Every row's start in table order (scheduler_start: 0, or -1 with err at
 * the first that fails), stop (scheduler_stop, before the binder goes;
 * again by scheduler_free: stop is idempotent), and, in offline mode,
 * drain once (1 when any row had work). */
int sched_rows_start(scheduler_t *s, char *err, size_t errlen);
void sched_rows_stop(scheduler_t *s);
int sched_rows_drain(scheduler_t *s);
/* A pool thread's turn: every row's tick. */
void sched_rows_tick(sched_pool_t *P);
/* A Binding succeeded: every row's post_bind. */
void sched_rows_post_bind(scheduler_t *s, const pod_t *pod, const char *node, const char *lender);
/* The housekeeper writes Pool pool's .status: every row's pool_status adds
 * its fields to status. */
void sched_rows_pool_status(scheduler_t *s, const char *pool, json_t *status);
/* Every row's expand point in table order (preempt_eval's victims table),
 * and every row's preempting point. */
int sched_rows_expand(scheduler_t *s, void *vc, const pod_t *preemptor, preempt_candidate_t *cands, int n);
void sched_rows_preempting(scheduler_t *s, const pod_set_t *set, const char *pool, int nvictims, int need);
/* The first answer of the rows' plan_within point (-1: none said), and
 * of their record point (NULL: none said). */
int sched_rows_plan_within(scheduler_t *s, const pod_set_t *set, fw_node_match_t **out);
json_t *sched_rows_record(scheduler_t *s, const pod_set_t *set, const char *behind);
/* The first answer of the rows' mates, minimum_member, group_of and
 * absent points (0 or NULL: none said). */
int sched_rows_mates(scheduler_t *s, const pod_t *victim, pod_t ***out);
int sched_rows_minimum_member(scheduler_t *s, const pod_t *pod);
const char *sched_rows_group_of(scheduler_t *s, const pod_t *pod);
char *sched_rows_absent(scheduler_t *s, const char *kind, const char *ns, const char *name);
/* The victims point's last step (extension.h's combining rule, 4): 1 when
 * a row's protect point keeps q's victim from kind (the first that does
 * ends the asking). After the evaluation for q->set, every row's kept
 * point (*text: what was kept, owned, NULL if nothing; text may be NULL).
 * A committed preemption's victims: every row's victims_taken. */
int sched_rows_protect(scheduler_t *s, const sched_victim_q_t *q, int kind);
void sched_rows_kept(scheduler_t *s, pod_set_t *set, int made, char **text);
void sched_rows_victims_taken(scheduler_t *s, pod_t *const *victims, int n);
/* An informer for each row's watch (s->row_infs), not started. */
void sched_rows_watch(scheduler_t *s);
/* The informer of the rows' watch of kind, or NULL (none yet, or no row
 * watches it). */
informer_t *sched_row_informer(scheduler_t *s, const char *kind);
/* Calls fn for each row's watch in table order, with the row's room and
 * the watch's informer (NULL before scheduler_start); stops at a nonzero
 * return and returns it. */
int sched_rows_each_watch(scheduler_t *s, int (*fn)(void *ud, void *self, const sched_watch_t *w, informer_t *inf),
                          void *ud);

/* gates.c: PreEnqueue. The rows: scheduling gates (kube's SchedulingGates)
 * and DRA claims, which ai-scheduler does not allocate (kube's
 * DynamicResources would). */
held_set_t *held_new(void);
void held_free(held_set_t *h);
/* Whether a pre_enqueue row keeps pod out of the queues (nothing written). */
int sched_kept_out(scheduler_t *s, const pod_t *pod);
/* Whether pod stays out of the queues: if so it is remembered as held and,
 * the first time, gets what its row says (condition, event) unless the
 * API shows that condition already. Any thread, no lock held. */
int gates_keep_out(scheduler_t *s, const pod_t *pod);
/* services.c: floor raised to the value of PriorityClass cls, if it
 * names a known one (the priority-classes row's published lookup). */
int32_t sched_class_priority(scheduler_t *s, const char *cls, int32_t floor);
/* A pod's priority for preemption: its own, or its group's class (the
 * rows' group_class) if higher. Takes the rows' leaf locks and the class
 * store's in turn. */
int32_t sched_pod_priority(scheduler_t *s, const pod_t *p);
/* informers.c: a pre_enqueue row's hold on uid ended by itself (the
 * grouper decided): the pod enters its home queue if it is still pending
 * and no row keeps it out. Any thread, no lock held. */
void sched_pod_released(scheduler_t *s, const char *uid);
/* A pod the API server says is gated (a refused Binding): held as such. */
void gates_hold_uid(scheduler_t *s, const char *uid);
/* The pod is no longer held (1 if it was): it may enter a queue now. */
int gates_release(scheduler_t *s, const char *uid);
int gates_is_held(scheduler_t *s, const char *uid);
/* Pods held now. */
int gates_held_count(scheduler_t *s);

/* trace.c: decision records (explain/explain.h) */
typedef struct pod_set_trace {
    json_t *steps;        /* [{step, result, detail}] */
    fw_diagnosis_t *diag; /* why its failing member fit nowhere (owned) */
    int nodes;            /* the nodes that pass evaluated */
} pod_set_trace_t;
/* The failing member's filter pass (takes diag; NULL: it fit). */
void trace_set_diag(pod_set_t *set, fw_diagnosis_t *diag, int nodes);
/* The set is given back (held, unschedulable or making room) with msg:
 * its record, and its members', are written. */
void trace_set_done(pod_set_t *set, const char *msg);
/* The set is placed: its records go (no cost while none is kept). */
void trace_set_placed(pod_set_t *set);
void trace_set_free(pod_set_t *set);
/* A pod or PodGroup ("ns/name") left: its record goes. */
void trace_forget(scheduler_t *s, const char *kind, const char *key);

/* binder.c */
binder_t *binder_new(scheduler_t *s, int workers);
/* Takes the item (already queue_done'd): bound, it is freed; refused, it
 * goes back to its home pool's backoff queue with its age and attempts.
 * lender: pool name when borrowed, else NULL. */
void binder_submit(binder_t *b, queue_item_t *it, const char *node, const char *lender);
void binder_free(binder_t *b);
/* offline.c's: no workers; binder_drain runs every queued bind (PreBind
 * and the Binding, answered inline by an in-process client) on the
 * caller's thread and returns how many. */
binder_t *binder_new_offline(scheduler_t *s);
int binder_drain(binder_t *b);

/* evictor.c: a preemption's evictions, off the pool thread */
evictor_t *evictor_new(scheduler_t *s);
/* Takes cands (an array of n, freed by the worker) and evicts the best
 * candidate's victims, the next candidate's when one is refused (each
 * refusal: a Warning event on the first preemptor and evictions_refused).
 * preemptors: the pod set the room is for (one pod, or a gang's minimum;
 * referenced). The caller nominated and charged them already. When all
 * are refused every one's nomination and charge is dropped and the
 * queues woken. */
void evictor_submit(evictor_t *e, pod_t *const *preemptors, int np, preempt_candidate_t *cands, int n, int pool_id,
                    const char *pool);
/* Consolidation: evicts cand's pods (moved: each to dests[i], named in its
 * event); takes cand (one) and dests (cand->nvictims strings). */
void evictor_submit_moves(evictor_t *e, const pod_t *pod, preempt_candidate_t *cand, char **dests, int pool_id,
                          const char *pool);
/* Evicts one member of a stale gang (--evict-stale-gangs), with an event. */
void evictor_evict_stale(evictor_t *e, pod_t *victim);
/* A job for this preemptor is queued or running. */
int evictor_has_job(evictor_t *e, const char *uid);
/* Victims evicted for this preemptor (any node) are still there. */
int evictor_awaiting(evictor_t *e, const char *uid);
/* uid is a victim on its way out: in a queued or running job, asked to
 * checkpoint, or evicted and not gone yet. */
int evictor_outgoing(evictor_t *e, const char *uid);
/* Tests: returns once no job is queued or running. */
void evictor_wait_idle(evictor_t *e);
/* Checkpoint before eviction (evictor.c): the condition a victim with a
 * grace gets, and our annotation carrying its deadline (RFC 3339) for a
 * downward API volume; only ai-scheduler writes it. */
#define CKPT_CONDITION                  "PreemptionRequested"
#define PREEMPTION_REQUESTED_ANNOTATION "resource.aibee.cn/preemption-requested"
/* Pods informer, after the cache took p: a requested victim's update (its
 * acknowledgement) is seen at once; has_request (p carries our
 * annotation) with no request pending here: cleared soon, nothing evicted. */
void evictor_pod_seen(evictor_t *e, const pod_t *p, int has_request);
/* uid is a victim asked to checkpoint, not evicted yet (on its way out:
 * no victim of another preemption). */
int evictor_requested(evictor_t *e, const char *uid);
/* Drops queued jobs (no draining) and joins. */
void evictor_free(evictor_t *e);
/* offline.c's: no thread; evictor_drain runs the queued jobs and one visit
 * of the checkpoint requests on the caller's thread (returns the jobs
 * run); evictor_next_due is the earliest checkpoint deadline (wall ms), 0
 * when none waits. */
evictor_t *evictor_new_offline(scheduler_t *s);
int evictor_drain(evictor_t *e);
int64_t evictor_next_due(evictor_t *e);

/* scheduler.c: nonzero once scheduler_fence was called. */
int scheduler_fenced(scheduler_t *s);

/* writer.c: events and patches, asynchronous, bounded */
api_writer_t *writer_new(scheduler_t *s, int max_pending);
void writer_free(api_writer_t *w);
/* offline.c's: no thread, no kube_async; writer_drain sends what is
 * queued on the caller's thread, in order, and returns how many. */
api_writer_t *writer_new_offline(scheduler_t *s, int max_pending);
int writer_drain(api_writer_t *w);
void writer_pod_event(api_writer_t *w, const pod_t *p, const char *type, const char *reason, const char *message);
/* The same for a pod known only by namespace, name and uid (one that did
 * not parse, or the grouper's). */
void writer_pod_event_by_name(api_writer_t *w, const char *ns, const char *name, const char *uid, const char *type,
                              const char *reason, const char *message);
/* An event on any object: involved is the involvedObject (taken). */
void writer_object_event(api_writer_t *w, const char *ns, json_t *involved, const char *type, const char *reason,
                         const char *message, const char *base_name);
void writer_pool_event(api_writer_t *w, const char *pool, const char *uid, const char *type, const char *reason,
                       const char *message);
void writer_unschedulable_condition(api_writer_t *w, const pod_t *p, const char *message);
/* PodScheduled=False with this reason (SchedulingGated, Unschedulable). */
void writer_unscheduled_condition(api_writer_t *w, const pod_t *p, const char *reason, const char *message);
/* node NULL clears status.nominatedNodeName. */
void writer_nominate(api_writer_t *w, const pod_t *p, const char *node);
void writer_patch(api_writer_t *w, const char *path, const char *content_type, char *body /* taken */);

/* informers.c: pods, nodes, pdbs handlers */
void on_node_event(void *ud, kube_event_type_t type, const char *key, json_t *obj);
void on_pod_event(void *ud, kube_event_type_t type, const char *key, json_t *obj);
void on_pdb_event(void *ud, kube_event_type_t type, const char *key, json_t *obj);
void pdbs_destroy(scheduler_t *s);

void stats_add(scheduler_t *s, unsigned long *field, unsigned long n);
/* scheduler.c: the housekeeper's once-a-second work but Pool .status and
 * the summary: dead pools swept, every row's housekeep. */
void sched_housekeep_rows(scheduler_t *s);
/* scheduler.c: something Pool .status shows changed (nodes, pods, pools);
 * the housekeeper rewrites it soon, at most once a second. */
void status_changed(scheduler_t *s);

/* profiles.c: profiles, the owners informers, unsupported-field warnings */
int profiles_init(scheduler_t *s, const scheduler_opts_t *o, char *err, size_t errlen);
void profiles_destroy(scheduler_t *s);
/* The framework of the pod's profile (the first profile's if none matches). */
framework_t *sched_pod_fw(scheduler_t *s, const pod_t *p);
/* Whether a pod with this schedulerName belongs to one of our profiles. */
int sched_is_ours(scheduler_t *s, const char *scheduler_name);
/* Whether the pod may evict others: not preemptionPolicy Never, and its
 * profile keeps DefaultPreemption. */
int sched_may_preempt(scheduler_t *s, const pod_t *p);
/* One Warning event naming the fields the pod sets that we ignore. */
void sched_warn_unsupported(scheduler_t *s, const pod_t *p);
void owners_informers_create(scheduler_t *s);
/* An owner object's watch event (kind: OWNER_SERVICE...), as its informer gives it. */
void sched_owner_event(scheduler_t *s, int kind, kube_event_type_t type, const char *key, json_t *obj);
void owners_informers_start(scheduler_t *s);

#endif
