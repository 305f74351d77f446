/* row.h -- the volumes row of the scheduling cycle (pkg/volume/row.c),
 * kube's VolumeBinding outside its Filter: the storage informers, Reserve
 * (the pod's volume choice), PreBind (the claims' writes, then the wait for
 * them to be bound, in one waiter thread). Its room (the volume store and
 * the waiter) is made by volume_row_init; it reaches the core only through
 * the services table (framework/services.h). */
#ifndef AISCHED_VOLUME_ROW_H
#define AISCHED_VOLUME_ROW_H

#include <jansson.h>
#include <stddef.h>

#include "api/types.h"
#include "framework/framework.h"
#include "framework/services.h"
#include "queue/queue.h"
#include "scheduler/extension.h"

/* The row's room (its init and fini in the row table): the store, and a
 * waiter whose thread volume_row_start starts. */
void *volume_row_init(const sched_services_t *svc, void *core);
void volume_row_fini(void *self);
/* PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes:
 * their handlers take the room. */
extern const sched_watch_t volume_row_watches[];
/* Gives the Filter plugins the store (fw_cluster_t.volumes). */
void volume_row_cluster(const sched_row_t *row, fw_cluster_t *cl);
/* Reserve: assumes the pod's volume choice on node, re-checked on the live
 * store: -1 with err when the node no longer fits the pod's volumes.
 * Unreserve forgets it. */
int volume_row_reserve(const sched_row_t *row, const pod_t *pod, const char *node, char *err, size_t errlen);
void volume_row_unreserve(const sched_row_t *row, const pod_t *pod);
/* PreBind, from a bind worker: READY (the pod has no volume choice), or
 * the claims' writes then WAITING (the waiter takes *it and hands it to the
 * binder again once the claims are bound, binding failed or timed out), or
 * FAILED with err (a write refused). */
int volume_row_pre_bind(const sched_row_t *row, queue_item_t **it, const char *node, const char *lender, json_t **ann,
                        char *err, size_t errlen);
/* The waiter's thread: started by scheduler_start, stopped (pods still
 * waiting dropped) before the binder it hands pods to. */
int volume_row_start(const sched_row_t *row, char *err, size_t errlen);
void volume_row_stop(const sched_row_t *row);
/* Without the thread (offline mode): checks each waiting pod once; 1 when
 * any was waiting. */
int volume_row_drain(const sched_row_t *row);

#endif
