/* row.h -- the workload-groups row of the scheduling cycle (pkg/grouper/row.c):
 * a pending pod is held out of the queues while the grouper reads its
 * owners and makes its gang. Its room holds the grouper; it reaches the
 * core only through the services table (framework/services.h). */
#ifndef AISCHED_GROUPER_ROW_H
#define AISCHED_GROUPER_ROW_H

#include "grouper/grouper.h"
#include "scheduler/extension.h"

void *grouper_row_init(const sched_services_t *svc, void *core);
void grouper_row_fini(void *self);
/* start: with --workload-groups, the default workload table with the
 * options' file over it, and the grouper's worker (0, or -1 with err: a
 * bad table file); stop: the worker stops (before the writer its events
 * go to). */
int grouper_row_start(const sched_row_t *row, char *err, size_t errlen);
void grouper_row_stop(const sched_row_t *row);
/* pre_enqueue: held while the grouper reads the pod's owners (a moment:
 * no condition, no event); the grouper lets go by labelling the pod (its
 * update comes back through the informer) or through the services'
 * release. */
int grouper_row_pre_enqueue(const sched_row_t *row, const pod_t *pod, enqueue_hold_t *hold);
void grouper_row_housekeep(const sched_row_t *row);
/* A pod left the cache, or stopped pending (bound): its record goes. */
void grouper_row_pod_deleted(const sched_row_t *row, const pod_t *pod);
/* The PodGroup watch: the grouper's view of the PodGroups it manages
 * (kept in step with their owners' size). ud: the row's room. */
void grouper_row_on_podgroup(void *ud, kube_event_type_t type, const char *key, json_t *obj);
/* The grouper (NULL before start or when off): tests wait on it. */
grouper_t *grouper_row_grouper(void *self);

#endif
