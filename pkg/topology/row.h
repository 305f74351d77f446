/* row.h -- the topology row of the scheduling cycle (pkg/topology/row.c):
 * the domain a gang's minimum goes to. Its room keeps the levels gangs may
 * ask for (--topology-levels), which it publishes; it reaches the core
 * only through the services table (framework/services.h). */
#ifndef AISCHED_TOPOLOGY_ROW_H
#define AISCHED_TOPOLOGY_ROW_H

#include "scheduler/extension.h"

/* check: --topology-levels parses (topo_levels_parse's rules). */
int topology_row_check(const scheduler_opts_t *o, char *err, size_t errlen);
/* The row's room: the levels parsed from the options (svc->opts). */
void *topology_row_init(const sched_services_t *svc, void *core);
void topology_row_fini(void *self);
/* publish: the levels (sched_published_t.topo_levels), read by the rows
 * through the services' topo_levels. */
void topology_row_publish(const sched_row_t *row, sched_published_t *pub);
/* pre_place, after the gang row: the domain that fits the whole minimum
 * (simulated on copies of the pool's nodes) and strands the least, or
 * EXT_FAIL when a topology-required gang fits no domain; an elastic member
 * of a topology-required gang stays in its minimum's domain, or in the
 * domain where the placed members run. */
ext_rc_t topology_row_pre_place(const sched_row_t *row, pod_set_t *set);
/* Preemption's plan_within: a topology-required gang's minimum is planned
 * inside each domain of its level among its pool's nodes. */
int topology_row_plan_within(const sched_row_t *row, const pod_set_t *set, fw_node_match_t **out);

#endif
