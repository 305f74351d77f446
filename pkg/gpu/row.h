/* row.h -- the gpu-sharing row of the scheduling cycle (pkg/gpu/row.c):
 * the reservation pods that hold shared GPUs, written at PreBind, collected
 * when idle. Its room is made by gpu_row_init; it reaches the core only
 * through the services table (framework/services.h). */
#ifndef AISCHED_GPU_ROW_H
#define AISCHED_GPU_ROW_H

#include <jansson.h>
#include <stddef.h>

#include "api/types.h"
#include "framework/services.h"
#include "gpu/gpu.h"
#include "queue/queue.h"
#include "scheduler/extension.h"

/* The row's room (its init and fini in the row table). init also sets
 * the process-wide reservation namespace (gpu_set_reservation_namespace)
 * from the options' gpu_namespace. */
void *gpu_row_init(const sched_services_t *svc, void *core);
void gpu_row_fini(void *self);
/* PreBind, from a bind worker: for a fraction, makes sure each of its
 * slots has a reservation pod and gives the annotations the Binding
 * carries (gpu-index, reservation pod names; *ann is the caller's); for a
 * whole-GPU pod, collects the idle reservations in its way. 0 with *ann
 * NULL for other pods; -1 with a message when it cannot. */
int gpu_row_prebind(void *self, const pod_t *pod, const char *node, json_t **ann, char *err, size_t errlen);
/* The row's pre_bind point: gpu_row_prebind, annotations merged into *ann. */
int gpu_row_pre_bind(const sched_row_t *row, queue_item_t **it, const char *node, const char *lender, json_t **ann,
                     char *err, size_t errlen);
/* Housekeeper, once a second: deletes reservation pods no fraction has
 * used for a few seconds (after a restart too), restores missing ones,
 * refreshes the shared gauge. */
void gpu_row_housekeep(const sched_row_t *row);
/* timed: reservation pods are held (they live until idle a few seconds). */
int gpu_row_timed(const sched_row_t *row);
/* A pod was deleted: when it was a reservation pod, a creation the row
 * still trusts under that name ends (the next fraction on the slot makes a
 * new one rather than name a pod that no longer exists). */
void gpu_row_pod_deleted(const sched_row_t *row, const pod_t *pod);
/* victims: a GPU reservation goes with its fractions, never as a victim. */
void gpu_row_victims(const sched_row_t *row, const sched_victim_q_t *q, sched_victim_answer_t *a);

#endif
