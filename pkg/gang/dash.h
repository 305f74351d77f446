/* dash.h -- what the gang row shows outside the cycle (pkg/gang/dash.c):
 * its groups for the dashboard's pending page and overview (the groups
 * and group_of points), the dashboard's gang list, and the pending-gangs
 * metric. row: the gang row (scheduler_row(s, "gang")); a NULL row shows
 * nothing. */
#ifndef AISCHED_GANG_DASH_H
#define AISCHED_GANG_DASH_H

#include <jansson.h>

#include "framework/dashlist.h"
#include "scheduler/extension.h"

/* groups: each PodGroup seen, a gang whose minimum is placed done. */
void gang_row_groups(const sched_row_t *row, const char *const *pools, int npools, sched_group_fn fn, void *ud);
/* group_of: the pod's pod-group label. */
const char *gang_row_group_of(const sched_row_t *row, const pod_t *pod);
/* The dashboard's gang list: {"total","offset","limit","items":[{
 * "namespace","name","queue","pool","phase","placed","minMember",
 * "members","waitingSeconds","waitingBehind","topology","reason",
 * "hasDecision"}]}; o's queue, pool and q filter. */
json_t *gang_row_dash_gangs(const sched_row_t *row, const dash_list_opts_t *o);
/* Gangs waiting in each live pool, for /metrics. */
void gang_row_each_pool(const sched_row_t *row, void (*fn)(void *ud, const char *pool, int waiting), void *ud);

#endif
