/* row.h -- the tenants row of the scheduling cycle (pkg/fairshare/row.c):
 * Queue objects, fair share, quotas and limits. Its room holds the
 * fair-share store and each pool's refresh state; it reaches the core only
 * through the services table (framework/services.h), and publishes what
 * the core and the other rows need of the Queues through its queues point
 * (framework/queues.h). */
#ifndef AISCHED_FAIRSHARE_ROW_H
#define AISCHED_FAIRSHARE_ROW_H

#include "framework/queues.h"
#include "framework/services.h"
#include "scheduler/extension.h"

/* Shares are refreshed by a pool's thread at once after a node or Queue
 * change, within TENANTS_REFRESH_FAST_MS of new pending pods, and at least
 * every TENANTS_REFRESH_MS. */
#define TENANTS_REFRESH_MS      200
#define TENANTS_REFRESH_FAST_MS 20

/* The row's room (its init and fini in the row table). */
void *tenants_row_init(const sched_services_t *svc, void *core);
void tenants_row_fini(void *self);
/* The Queue objects: their handler takes the room. */
extern const sched_watch_t tenants_row_watches[];
/* Hands the core the Queues' calls bound to the room. */
void tenants_row_queues(const sched_row_t *row, sched_queues_t *q);
/* Admission of a set's minimum against its queue's limits (room is made
 * under a limit, an elastic member excepted) and, for non-preemptible
 * work, its quota: EXT_HOLD with set->why, else EXT_NEXT. */
ext_rc_t tenants_row_admit(const sched_row_t *row, pod_set_t *set);
/* Room nominated for nominee is kept from pod when both are home (or both
 * borrowers, same_side) in pool, in different queues, and pod's is at or
 * above its fair share there (cache lock may be held: the store is a leaf). */
int tenants_row_nominee(const sched_row_t *row, const pod_t *nominee, const pod_t *pod, int pool, int same_side);
/* A pool's thread: capacity, pending and fair shares, when due. */
void tenants_row_tick(const sched_row_t *row, struct sched_pool *P);
/* Housekeeper, once a second: every pool refreshed, Queue .status, events. */
void tenants_row_housekeep(const sched_row_t *row);
/* victims: queue reclaim. With Queues, priority preempts only inside a
 * queue: across queues a pod goes only by reclaim's rules (may_reclaim),
 * and a refusal there is final; inside one, a starving queue may take its
 * own younger pods of no higher priority. Otherwise no say. */
void tenants_row_victims(const sched_row_t *row, const sched_victim_q_t *q, sched_victim_answer_t *a);

#endif
