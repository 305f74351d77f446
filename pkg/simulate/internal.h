/* internal.h -- the simulator's state, shared by the loop (simulate.c) and
 * the outputs (report.c). */
#ifndef AISCHED_SIMULATE_INTERNAL_H
#define AISCHED_SIMULATE_INTERNAL_H

#include "simulate/simulate.h"
#include "util/hashmap.h"
#include "util/util.h"

#define SIM_INF           INT64_MAX
#define SIM_CREATE_GAP_MS 1 /* between a job's pods (simulate.c, sim_new) */
/* An eviction of a pod that ran less than this is counted apart: work a
 * reclaim undid almost at once (issue 35's ping-pong measure). */
#define SIM_SHORT_RUN_MS 60000

enum { SIM_GPU = 0, SIM_CPU, SIM_MEM, SIM_NRES }; /* GPUs, millicores, MB: scheduler_each_queue's units */

typedef enum { POD_WAITING = 0, POD_PENDING, POD_RUNNING, POD_DONE } sim_pod_state_t;

typedef struct sim_pod {
    int job, idx;
    char *key; /* "ns/name" */
    int gen;   /* incarnation: 0 first, +1 each time it is recreated */
    sim_pod_state_t state;
    int64_t finish_at;
    int64_t bound_at; /* when its current run began */
    char *node;       /* the node of its last run, or NULL */
    int pool;         /* the pool of that node (index in s->pools), -1 */
    double req[SIM_NRES];
} sim_pod_t;

typedef struct sim_job_state {
    int64_t arrival_at, start_at, finish_at; /* wall ms; start/finish 0 until then */
    int running, done, preempted;
    int evicted;           /* instants at which it lost pods to evictions */
    int short_evictions;   /* of its pods evicted after running less than SIM_SHORT_RUN_MS */
    int64_t last_evict_at; /* the last such instant, 0 before */
} sim_job_state_t;

/* A series of samples over time: t (ms after the start) and nv values each. */
typedef struct sim_series {
    char *name, *pool; /* a queue's name and pool, or a pool's name */
    int nv;
    int64_t *t;
    double *v; /* n * nv */
    int n, cap;
    int64_t every; /* a sample at least this long after the last kept one */
} sim_series_t;

typedef struct sim_pool {
    char *name;
    double cap[SIM_NRES];
    double used[SIM_NRES];
    double area[SIM_NRES]; /* integral of used over time (unit x ms) */
    int64_t area_at;
    sim_series_t series; /* used, over time */
} sim_pool_t;

typedef struct sim_finish {
    int64_t at;
    int pod, gen;
} sim_finish_t;

typedef struct sim_action {
    sb_action_kind_t kind;
    int pod; /* index, or -1 for a pod not of the workload */
    char *key, *uid, *node, *reason;
    int64_t at;
} sim_action_t;

struct sim {
    sim_opts_t o;
    const sim_workload_t *w;
    sim_backend_t b;
    sim_pod_t *pods;
    int npods;
    int *first_pod; /* per job: its first pod's index */
    sim_job_state_t *js;
    sim_finish_t *creates; /* every pod's creation (at, pod), in order; gen unused */
    int next_create;
    hashmap_t *by_key; /* "ns/name" -> pod index + 1 */
    sim_finish_t *heap;
    int nheap, capheap;
    sim_action_t *acts;
    int nacts, capacts;
    int *recreate;
    int nrecreate, caprecreate;
    sim_pool_t *pools;
    int npools;
    hashmap_t *node_pool;  /* node name -> pool index + 1 */
    hashmap_t *other_pods; /* pods of the snapshot bound to a node: "ns/name" -> sim_pod_t (no job) */
    hashmap_t *prio;       /* PriorityClass name -> its value + offset (see sim_load) */
    sim_series_t *queues;
    int nqueues;
    hashmap_t *queue_idx; /* "queue\tpool" -> index + 1 */
    int64_t now, end_at, last_progress;
    int running;
    unsigned long binds, evictions, other_evictions, arrivals_done, finishes;
    unsigned long short_evictions; /* of workload pods that ran less than SIM_SHORT_RUN_MS */
    int has_gpu;
    int ran;
    sbuf_t events; /* events.csv's rows: each bind and eviction of a workload pod, in order */
};

void sim_series_init(sim_series_t *se, const char *name, const char *pool, int nv, int64_t every);
void sim_series_add(sim_series_t *se, int64_t t, const double *v, int force, int max);
void sim_series_free(sim_series_t *se);

#endif
