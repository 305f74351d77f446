/* queues.h -- what the core and the other rows may ask of the Queues
 * (tenants, fair share, quotas and limits): a const table of calls bound
 * to the tenants row's room, which the row publishes through its queues
 * point (scheduler/extension.h) and the core keeps. Nothing outside
 * pkg/fairshare reaches the fair-share store but through it; services.c
 * forwards what other rows need (tenant_of, same_queue, preemptible).
 *
 * "Tenant" is a Queue object's number in the store; "queue" alone in the
 * core is a scheduling queue. Every call takes the room (self) first. */
#ifndef AISCHED_FRAMEWORK_QUEUES_H
#define AISCHED_FRAMEWORK_QUEUES_H

#include <jansson.h>
#include <stdint.h>

#include "api/types.h"
#include "fairshare/fairshare.h"
#include "framework/nodeinfo.h"

typedef struct sched_queues_ops {
    /* Whether any Queue exists (else every call below is a no-op or
     * answers the default queue). */
    int (*active)(void *self);
    /* A pod's tenant: its own label, else its PodGroup's. */
    int (*tenant_of)(void *self, const pod_t *pod);
    /* The scheduling queue's pick among tenants with ready heads in pool. */
    int (*pick)(void *self, int pool, const int *tenants, const int64_t *head_first_ms, int n);
    /* The cache's accounting and nomination hooks (cache_set_account_hook,
     * cache_set_nomination_hook): self is their ud. */
    void (*account)(void *self, const pod_t *p, const node_info_t *ni, int sign);
    void (*nomination)(void *self, const pod_t *p, const node_info_t *ni, int sign);
    /* Capacity (nodes) or pending pods changed: shares are due again. */
    void (*changed)(void *self, int nodes);
    /* A pod's charge: whether it has one, charged again (running in pool,
     * its eviction refused or withdrawn), dropped (gone, or its room given
     * up), leaving (a victim whose eviction begins: fs_leave). */
    int (*is_charged)(void *self, const char *uid);
    void (*recharge)(void *self, const pod_t *p, int pool);
    /* Its DRA claims changed: its charge counts their GPUs as they are now
     * (fs_refresh_devices). */
    void (*refresh_devices)(void *self, const pod_t *p);
    void (*uncharge)(void *self, const char *uid);
    void (*leave)(void *self, const char *uid);
    /* The store's rules (fairshare.h: fs_same_queue, fs_same_tree,
     * fs_pod_preemptible, fs_starving, fs_may_reclaim, fs_victims_ok,
     * fs_yields, fs_checkpoint_grace, fs_any_min_runtime, fs_min_runtime). */
    int (*same_queue)(void *self, int a, int b);
    int (*same_tree)(void *self, int a, int b);
    int (*preemptible)(void *self, const pod_t *pod);
    int (*starving)(void *self, int pool, int tenant, int64_t first_ms);
    int (*may_reclaim)(void *self, int pool, int tenant, const double req[FS_NRES], int starving, int32_t prio,
                       int64_t created_ms, const char *victim_uid, int in_gang, int64_t now_ms, int *cross);
    int (*victims_ok)(void *self, int pool, int tenant, const double req[FS_NRES], int starving,
                      const char *const *victim_uids, const int *jobs, int n, int64_t now_ms);
    int (*yields)(void *self, int pool, int tenant, const double req[FS_NRES], int other,
                  const double other_req[FS_NRES]);
    int64_t (*checkpoint_grace)(void *self, int tenant);
    int (*any_min_runtime)(void *self);
    int64_t (*min_runtime)(void *self, int tenant, int kind, int64_t pool_default, char **from);
    /* Whether pods[0..n) (a set's minimum) pass their queue's limits,
     * and its quota when not preemptible, in pool (fs_admit): a lender's
     * numbers, asked before a set borrows there. 1 when Queues are off. */
    int (*admits)(void *self, int pool, pod_t *const *pods, int n);
    /* The tenant pods[0..n) count in (the first's) and their request
     * summed: 0 when Queues are off (nothing filled). */
    int (*set_request)(void *self, pod_t *const *pods, int n, int *tenant, double req[FS_NRES]);
    /* A preemption was decided in pool for tenant: the reclaim is counted,
     * the victims leave (fs_leave) and the preemptors hold their room. */
    void (*reserve)(void *self, int tenant, int pool, pod_t *const *preemptors, int np, pod_t *const *victims, int nv);
    /* "; reclaimed by queue ..." when the two pods' queues differ (caller
     * frees), else NULL. */
    char *(*reclaim_note)(void *self, const pod_t *preemptor, const pod_t *victim);
    /* Reports: a pod's queue in pool for its decision record (json null
     * when Queues are off); the dashboard's queues; each (queue, pool)'s
     * numbers and each queue's reclaim counters. */
    json_t *(*pod_json)(void *self, int pool, const char *pool_name, const pod_t *pod);
    json_t *(*dashboard)(void *self);
    /* The queue a pod's own label names, as the dashboard lists a pod
     * (the default queue when none; borrowed from the pod, or static). */
    const char *(*queue_name)(void *self, const pod_t *pod);
    void (*each_metric)(void *self, fs_metric_fn fn, void *ud);
    void (*each_counter)(void *self, fs_counter_fn fn, void *ud);
} sched_queues_ops_t;

/* The interface as the core keeps it: the calls and the room they take. */
typedef struct sched_queues {
    const sched_queues_ops_t *ops;
    void *self;
} sched_queues_t;

#endif
