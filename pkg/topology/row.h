/* row.h -- the topology row of the scheduling cycle (pkg/topology/row.c):
 * the domain a gang's minimum goes to. It has no room of its own and
 * reaches the core only through the services table (framework/services.h). */
#ifndef AISCHED_TOPOLOGY_ROW_H
#define AISCHED_TOPOLOGY_ROW_H

#include "scheduler/extension.h"

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
