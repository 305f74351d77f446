/* row.h -- the consolidation row of the scheduling cycle (pkg/consolidation/row.c):
 * a lone GPU pod blocked by fragmentation moves recreatable pods, and the
 * room is held for their replacements. Its room is made by consol_row_init;
 * it reaches the core only through the services table (framework/services.h). */
#ifndef AISCHED_CONSOLIDATION_ROW_H
#define AISCHED_CONSOLIDATION_ROW_H

#include "scheduler/extension.h"

void *consol_row_init(const sched_services_t *svc, void *core);
void consol_row_fini(void *self);
/* post_filter, before preemption (moving loses no work): frees a node for
 * a lone GPU pod whose GPUs are free in its pool but on no single node, by
 * moving the fewest pods their controllers recreate. */
ext_rc_t consol_row_post_filter(const sched_row_t *row, pod_set_t *set);
/* pre_place: a moved pod's replacement goes back to the node held for it. */
ext_rc_t consol_row_pre_place(const sched_row_t *row, pod_set_t *set);
/* node_view: the node as pod sees it with the room held for movers'
 * replacements (other controllers' pods see it taken). Cache lock held. */
node_info_t *consol_row_node_view(const sched_row_t *row, const pod_t *pod, node_info_t *view, int *cloned);

#endif
