/* dashboard.h -- what the web dashboard (pkg/dashboard) reads of a running
 * scheduler: a change counter and JSON collectors for pools, queues,
 * pending work and nodes, shaped as docs' dashboard contract (issue 25);
 * the gang list is the gang row's (gang/dash.h).
 *
 * Collectors copy the few fields they need under the scheduler's locks (as
 * scheduler_debug_state does) and sort, filter and build JSON outside them.
 * They serve names, reasons and numbers only: never an env value, a Secret
 * or a token. Any thread; works on a sandbox (offline) scheduler too. Units:
 * cpu millicores, memory bytes, gpu GPUs (fractions as doubles). Every
 * answer is a new reference; the caller adds "generation" and "now". */
#ifndef AISCHED_SCHED_DASHBOARD_H
#define AISCHED_SCHED_DASHBOARD_H

#include <jansson.h>
#include <stdint.h>

#include "framework/dashlist.h"
#include "scheduler/scheduler.h"

/* Bumped on every change the dashboard shows: each informer event the
 * scheduler takes (pods, nodes, pools, queues, podgroups; binds, evictions,
 * nominations and status writes come back that way) and each bind handed
 * to the binder. Atomic, any thread. */
uint64_t scheduler_generation(scheduler_t *s);

/* {"total","offset","limit","items":[{"kind":"pod"|"gang","namespace",
 * "name","queue","pool","waitingSeconds","reason","gang","hasDecision"}]}.
 * A gang with pending members is one "gang" row (its members are not
 * repeated); waitingSeconds counts from creation (the oldest pending
 * member's for a gang). */
json_t *scheduler_dash_pending(scheduler_t *s, const dash_list_opts_t *o);
/* {"total","offset","limit","items":[{"name","pool","cordoned","ready",
 * "gpu":{"whole","used","shared","free"},"cpu":{"capacity","used"},
 * "memory":{"capacity","used"},"pods","slots":[...]}]} in name order; pool
 * and q filter. */
json_t *scheduler_dash_nodes(scheduler_t *s, const dash_list_opts_t *o);
/* The compact map: {"pools":[...],"fields":[...],"nodes":[[...],...]}. */
json_t *scheduler_dash_nodes_map(scheduler_t *s);
/* {"pools":[...],"lending":[...],"totals":{...}} (the caller adds leader). */
json_t *scheduler_dash_overview(scheduler_t *s);
/* {"queues":[...]} (fs_dashboard_queues), parents before children. */
json_t *scheduler_dash_queues(scheduler_t *s);
/* Per queue, summed over pools: allocated and fair share (gpu, cpu
 * millicores, memory bytes); for the history sampler. */
typedef void (*dash_queue_sample_fn)(void *ud, const char *queue, const double alloc[3], const double fair[3]);
void scheduler_dash_queue_sample(scheduler_t *s, dash_queue_sample_fn fn, void *ud);

#endif
