/* row.h -- the reservation row of the scheduling cycle (pkg/reservation/row.c):
 * a gang that has waited past --reservation-after and fits neither now nor
 * by preemption gets a few whole nodes of its pool held for it. Its room
 * (one reservation per pool) is made by resv_row_init; it reaches the core
 * only through the services table (framework/services.h). The rules are
 * reservation.h's. */
#ifndef AISCHED_RESERVATION_ROW_H
#define AISCHED_RESERVATION_ROW_H

#include <jansson.h>
#include <stdint.h>

#include "scheduler/extension.h"

void *resv_row_init(const sched_services_t *svc, void *core);
void resv_row_fini(void *self);
/* post_filter (after preemption and borrowing): a gang's minimum past
 * --reservation-after gets held nodes in its pool (or, not yet due, the
 * housekeeper wakes it when it is). */
ext_rc_t resv_row_post_filter(const sched_row_t *row, pod_set_t *set);
/* pre_place: notes the held room in the message of a set that may not fit
 * (the gang itself, or a pod the held room refuses), and gives the gang
 * its turn once the held room covers its minimum. */
ext_rc_t resv_row_pre_place(const sched_row_t *row, pod_set_t *set);
/* commit: the gang's minimum is placed, its reservation ends. */
void resv_row_commit(const sched_row_t *row, pod_set_t *set);
/* housekeep: wakes gangs due for a reservation, expires reservations, ends
 * a deleted or placed gang's and refreshes the expected start. */
void resv_row_housekeep(const sched_row_t *row);
/* node_view: the node as pod sees it with the room held for a reservation
 * (a stand-in pod fills a held node for pods that may not backfill).
 * Cache lock held. */
node_info_t *resv_row_node_view(const sched_row_t *row, const pod_t *pod, node_info_t *view, int *cloned);
/* on_event: a bound pod left (deleted, or finished) a node held for a
 * reservation. The gang is woken once the held room covers its minimum,
 * and the answer wakes of the reservation's pool only the other pods that
 * may use what the pod freed: those the held room admits (backfill), those
 * under the pod's top-level queue (its usage fell), those with hard pod
 * affinity or spread terms (its labels went); the other pools' pods all
 * move. Moving every unschedulable pod of the pool would retry pods that
 * may not use the room, and grow their backoff until they miss the room
 * that frees elsewhere. No opinion (0) for any other event or node. */
int resv_row_on_event(const sched_row_t *row, const sched_event_t *ev, sched_wake_t *wake);
/* pool_status: Pool .status.reservation (gang, nodes, held amount, since,
 * expires, expectedStart); null once the pool had one and has none. */
void resv_row_pool_status(const sched_row_t *row, const char *pool, json_t *status);
/* Each pool that had a reservation, for /metrics: active (0/1), GPUs and
 * nodes held. row: the reservation row (scheduler_row(s, "reservation")). */
void resv_row_each_pool(const sched_row_t *row,
                        void (*fn)(void *ud, const char *pool, int active, int64_t gpus, int nodes), void *ud);

#endif
