/* internal.h -- state shared by the scheduler's own files (not public).
 *
 * Lock order, outermost first: cache lock -> pools_mu -> pdb_mu (and, inside
 * the cache, rwlock -> node stripe -> pod map). pools_mu
 * and pdb_mu are leaf locks held only briefly; nothing calls into the cache
 * or the API while holding them. The cache's topology index mutex is a leaf
 * inside the cache (after the pod map). Queues have their own internal lock and are
 * never called with pools_mu held either. */
#ifndef AISCHED_SCHED_INTERNAL_H
#define AISCHED_SCHED_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "cache/cache.h"
#include "kube/informer.h"
#include "pool/pool.h"
#include "preemption/preemption.h"
#include "queue/queue.h"
#include "scheduler/scheduler.h"
#include "util/hashmap.h"

#define DEFAULT_POOL_ID 0

typedef struct sched_pool {
    int            id;          /* index in scheduler.pools; never reused */
    char          *name;
    pool_spec_t    spec;        /* guarded by pools_mu */
    int            has_object;  /* a Pool object exists (default may have none) */
    int            dead;        /* deleted; thread stopping */
    sched_queue_t *q;
    pthread_t      thread;
    int            started;
    unsigned       next_start;  /* where the next feasibility search starts */
    uint64_t       rng;
    struct scheduler *s;
} sched_pool_t;

typedef struct api_writer api_writer_t;
typedef struct binder binder_t;

struct scheduler {
    scheduler_opts_t opts;
    char            *name;      /* scheduler_name, owned */
    char            *identity;
    kube_client_t   *kc;
    framework_t     *fw;
    cache_t         *cache;

    pthread_mutex_t  pools_mu;
    sched_pool_t   **pools;     /* by id; dead ones stay as tombstones */
    int              npools, cap_pools;
    hashmap_t       *pool_by_name;   /* live pools except default -> sched_pool_t */
    pool_spec_t     *spec_arr;       /* shallow copies of live specs for partitioning */
    int             *spec_ids;
    int              nspecs;
    int              threads_on;     /* pool threads may run (caches synced) */
    hashmap_t       *pod_uid_by_key; /* ns/name -> uid; pods informer thread only */

    pthread_mutex_t  pdb_mu;
    pdb_t          **pdbs;
    int              npdbs;
    hashmap_t       *pdb_by_key;     /* ns/name -> pdb_t (same objects as pdbs) */

    informer_t      *inf_pools, *inf_nodes, *inf_pods, *inf_pdbs;
    api_writer_t    *writer;
    binder_t        *binder;
    int              bind_backlog;   /* binds waiting for a worker (atomic); the writer yields to them */
    pthread_t        housekeeper;
    int              housekeeper_started;
    pthread_mutex_t  hk_mu;
    pthread_cond_t   hk_cv;
    int              stopping;
    int              ready;

    pthread_mutex_t  stats_mu;
    scheduler_stats_t stats;
    int              use_policy_v1;
};

/* pools.c */
void          pools_init(scheduler_t *s);
void          pools_destroy(scheduler_t *s);
int           pools_partition(void *ud, const node_t *node);
/* Pool id of a pod's home pool (default when unknown). */
int           pools_home_id(scheduler_t *s, const pod_t *p);
/* Live pool by id, or NULL; the pointer stays valid until scheduler_free. */
sched_pool_t *pools_get(scheduler_t *s, int id);
void          pools_start_threads(scheduler_t *s);
void          pools_stop_threads(scheduler_t *s);
void          pools_on_event(void *ud, kube_event_type_t type, const char *key, json_t *obj);
/* Calls fn for every live pool, without pools_mu held. */
void          pools_each_live(scheduler_t *s, void (*fn)(sched_pool_t *P, void *ud), void *ud);
void          pools_move_all(scheduler_t *s, const char *event);
void          pools_delete_pod(scheduler_t *s, const char *uid);
void          pools_sweep_dead(scheduler_t *s);
/* Copies a pool's flags under pools_mu. */
void          pools_flags(scheduler_t *s, int id, int *no_preempt, int *no_borrow, int *no_share);

/* cycle.c: the pool thread */
void         *pool_thread_main(void *arg);
node_info_t  *node_with_nominated(scheduler_t *s, const pod_t *pod, node_info_t *ni, int *cloned);

/* postfilter.c: preemption and borrowing */
/* PF_MOVED: the item now sits in another queue (lender, or home) and the
 * caller must not touch it. */
typedef enum { PF_NONE = 0, PF_PREEMPTED, PF_MOVED } pf_result_t;
pf_result_t   postfilter_run(sched_pool_t *P, queue_item_t *it);

/* binder.c */
binder_t     *binder_new(scheduler_t *s, int workers);
/* Takes a reference on pod. lender: pool name when borrowed, else NULL. */
void          binder_submit(binder_t *b, pod_t *pod, const char *node, const char *lender, int64_t first_ms);
void          binder_free(binder_t *b);

/* writer.c: events and patches, asynchronous, bounded */
api_writer_t *writer_new(scheduler_t *s, int max_pending);
void          writer_free(api_writer_t *w);
void          writer_pod_event(api_writer_t *w, const pod_t *p, const char *type, const char *reason, const char *message);
void          writer_pool_event(api_writer_t *w, const char *pool, const char *uid, const char *type, const char *reason, const char *message);
void          writer_unschedulable_condition(api_writer_t *w, const pod_t *p, const char *message);
void          writer_nominate(api_writer_t *w, const pod_t *p, const char *node);
void          writer_patch(api_writer_t *w, const char *path, const char *content_type, char *body /* taken */);

/* informers.c: pods, nodes, pdbs handlers */
void          on_node_event(void *ud, kube_event_type_t type, const char *key, json_t *obj);
void          on_pod_event(void *ud, kube_event_type_t type, const char *key, json_t *obj);
void          on_pdb_event(void *ud, kube_event_type_t type, const char *key, json_t *obj);
void          pdbs_destroy(scheduler_t *s);

void          stats_add(scheduler_t *s, unsigned long *field, unsigned long n);

#endif
