/* consolidation.h -- Run:ai's consolidation, as a pure planner: when a pod
 * fails only because free GPUs are fragmented, which movable pods to move
 * where so that one node has room for it, with the fewest moves. Works on
 * node copies the caller owns; every change it simulates is undone. */
#ifndef AISCHED_CONSOLIDATION_H
#define AISCHED_CONSOLIDATION_H

#include <stdint.h>

#include "api/types.h"
#include "framework/nodeinfo.h"

/* Whether pod fits ni as ni is now (the caller's filters). */
typedef int (*consol_fit_fn)(void *ud, const pod_t *pod, node_info_t *ni);
/* Whether the pod may be moved (recreated by its controller, preemptible).
 * Asked only of pods that run on the node they are in (preempt_removable):
 * the others in a view (nominated, assumed, held room) count but stay. */
typedef int (*consol_movable_fn)(void *ud, const pod_t *pod);

typedef struct consol_move {
    pod_t *pod; /* one ref */
    int to;     /* index of its destination in the nodes given */
} consol_move_t;

typedef struct consol_plan {
    int target; /* index of the node the waiting pod goes to */
    consol_move_t *moves;
    int nmoves;
    int64_t gpus_moved;
} consol_plan_t;

/* Free GPUs summed over the nodes, and the most free on one node. */
void consol_free_gpus(node_info_t *const *nodes, int n, int64_t *total, int64_t *best_node);

/* 1 and *out (free with consol_plan_clear) when moving at most max_moves
 * movable pods lets pod fit some node, every mover fitting another node
 * (never the target): the fewest moves, then the fewest GPUs moved, then
 * the target's name. On each target the movers tried are its movable pods
 * with the most GPUs first (for k movers, the k largest free the most).
 * 0 when no plan exists. */
int consol_plan(node_info_t **nodes, int n, pod_t *pod, int max_moves, consol_fit_fn fit, consol_movable_fn movable,
                void *ud, consol_plan_t *out);
void consol_plan_clear(consol_plan_t *p);

#endif
