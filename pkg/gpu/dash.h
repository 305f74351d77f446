/* dash.h -- what the gpu-sharing row shows on the dashboard's pages
 * (pkg/gpu/dash.c): shared GPUs counted by their fractions, each node's
 * shared slots, a pod's share; the node_use, node_doc and pod_use points
 * (scheduler/extension.h). */
#ifndef AISCHED_GPU_DASH_H
#define AISCHED_GPU_DASH_H

#include <jansson.h>

#include "scheduler/extension.h"

/* node_use: GPUs in use are the whole ones plus the fractions used of
 * each shared slot (a shared slot counts once in requested GPUs); shared:
 * the slots shared now. */
void gpu_row_node_use(const sched_row_t *row, const node_info_t *ni, sched_node_use_t *u);
/* node_doc: "slots":[{"index","used","fractions":[{"pod","fraction"}],
 * "reservation"}], the node's slots with fractions or a reservation pod
 * ([] when none, or ni NULL). */
void gpu_row_node_doc(const sched_row_t *row, const node_info_t *ni, json_t *item);
/* pod_use: a fraction's share (in GPUs, over all its devices) added; a
 * reservation pod is a holder. */
void gpu_row_pod_use(const sched_row_t *row, const pod_t *pod, sched_pod_use_t *u);

#endif
