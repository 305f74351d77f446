/* row.h -- the dynamic-resources row (kube's DynamicResources outside its
 * Filter): the DeviceClass, ResourceSlice, ResourceClaim and
 * ResourceClaimTemplate informers, PreEnqueue (a pod whose claims cannot
 * be allocated anywhere now waits out of the queues, saying why), Reserve
 * (the pod's devices held in the store), PreBind (each claim's allocation
 * and reservedFor written through its /status). */
#ifndef AISCHED_DRA_ROW_H
#define AISCHED_DRA_ROW_H

#include <jansson.h>
#include <stddef.h>

#include "api/types.h"
#include "framework/framework.h"
#include "framework/services.h"
#include "queue/queue.h"
#include "scheduler/extension.h"

/* --dra-queue-resources is "CLASS=gpu,...": 0, or -1 with err. */
int dra_row_check(const scheduler_opts_t *o, char *err, size_t errlen);
void *dra_row_init(const sched_services_t *svc, void *core);
/* What Queues count of a pod's claims (sched_published_t.queue_devices),
 * and the nodes' device attributes a topology level may read
 * (device_attr_nodes). */
void dra_row_publish(const sched_row_t *row, sched_published_t *pub);
void dra_row_fini(void *self);
extern const sched_watch_t dra_row_watches[];
extern const sched_watch_wait_t dra_row_wait;
/* Asks the API server whether resource.k8s.io/v1 is served (the store
 * says so to pods until it is). */
int dra_row_start(const sched_row_t *row, char *err, size_t errlen);
/* Gives the Filter plugin the store (fw_cluster_t.dra). */
void dra_row_cluster(const sched_row_t *row, fw_cluster_t *cl);
/* 1 (hold filled, one event) for a pod whose claims are missing,
 * invalid, or not served: it waits out of the queues until a DRA object
 * changes (the row lets it go then) or the pod does. */
int dra_row_pre_enqueue(const sched_row_t *row, const pod_t *pod, enqueue_hold_t *hold);
/* The Binding took: the pod's hold goes once its claims show the
 * allocations (dra_store_bound). */
void dra_row_post_bind(const sched_row_t *row, const pod_t *pod, const char *node, const char *lender);
/* A pod left the cache: it is no longer kept out. */
void dra_row_pod_deleted(const sched_row_t *row, const pod_t *pod);
int dra_row_reserve(const sched_row_t *row, const pod_t *pod, const char *node, char *err, size_t errlen);
void dra_row_unreserve(const sched_row_t *row, const pod_t *pod);
int dra_row_pre_bind(const sched_row_t *row, queue_item_t **it, const char *node, const char *lender, json_t **ann,
                     char *err, size_t errlen);
/* Undoes what PreBind wrote for pods whose bind did not happen; checks
 * again whether DRA is served while it is not. */
void dra_row_housekeep(const sched_row_t *row);
int dra_row_drain(const sched_row_t *row);
/* The dashboard's nodes page: "draDevices": {"total", "used"}, the DRA
 * devices of complete pools on the node and how many are allocated or
 * held. */
void dra_row_node_doc(const sched_row_t *row, const node_info_t *ni, json_t *item);
/* The node map's figures: the node's DRA devices and how many are in use. */
void dra_row_node_use(const sched_row_t *row, const node_info_t *ni, sched_node_use_t *u);

#endif
