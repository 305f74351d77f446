/* gpu.h -- GPU sharing: what a pod asks of shared GPUs (KAI-Scheduler's
 * annotations), the shared devices of one node, and which devices a
 * fraction takes.
 *
 * A node's GPUs are slots 0..n-1 (n = allocatable nvidia.com/gpu; the first
 * GPU_MAX_DEVICES may be shared). A slot is shared while fractions use it.
 * Which physical GPU a whole-GPU pod got is kubelet's business, so the
 * invariant is a count: shared slots plus whole GPUs never exceed n. A slot
 * becomes a physical GPU through its reservation pod: kubelet gives that pod
 * one GPU, and the node agent exposes that GPU to the slot's fractions
 * (docs/gpu-sharing.md). A reservation whose fractions all left still holds
 * its GPU for kubelet; the scheduler counts that GPU free, reuses the slot
 * for the next fraction first, and deletes the reservation before a
 * whole-GPU pod that needs the GPU binds (scheduler/gpu.c).
 *
 * Pure functions, no locks: the caller (the cache, under its lock, or a
 * copy) serialises access to a gpu_node_t. */
#ifndef AISCHED_GPU_H
#define AISCHED_GPU_H

#include <stdint.h>
#include <jansson.h>

#include "api/types.h"
#include "framework/nodeinfo.h"

#define GPU_ANN_FRACTION         "gpu-fraction"
#define GPU_ANN_MEMORY           "gpu-memory"
#define GPU_ANN_NUM_DEVICES      "gpu-fraction-num-devices"
#define GPU_ANN_INDEX            "resource.aibee.cn/gpu-index"
#define GPU_ANN_RESERVATION_POD  "resource.aibee.cn/gpu-reservation-pod"
#define GPU_ANN_RESERVATION_NODE "resource.aibee.cn/gpu-reservation-node"
#define GPU_LABEL_RESERVATION    "resource.aibee.cn/gpu-reservation"
#define GPU_LABEL_MANAGED_BY     "app.kubernetes.io/managed-by"
#define GPU_MANAGER              "ai-scheduler"        /* GPU_LABEL_MANAGED_BY of reservation pods */
#define GPU_RESERVATION_PREFIX   "gpu-res-"            /* their names */
#define GPU_RESERVATION_NS       "ai-scheduler-system" /* default namespace */
#define GPU_LABEL_MEMORY         "nvidia.com/gpu.memory"
#define GPU_MAX_DEVICES          64
#define GPU_PPM                  1000000

/* A pod's sharing request, parsed with the pod through the pod extension
 * gpu_capability_register adds (api/podext.h); NULL on pods that neither
 * share a GPU nor reserve one. Owned by the pod. */
typedef struct gpu_req {
    int64_t frac_ppm;    /* gpu-fraction in millionths; 0 when by memory */
    int64_t mem_mib;     /* gpu-memory; 0 when by fraction */
    int ndev;            /* gpu-fraction-num-devices, >= 1 */
    uint64_t index_mask; /* slots written at bind (gpu-index); 0 if none */
    int reservation;     /* a reservation pod holding slot `slot` */
    int slot;
    char *err; /* why the request is invalid (the pod stays pending); NULL if valid */
} gpu_req_t;

/* From the pod's annotations; p is the pod parsed so far (namespace, name,
 * labels, nodeName and resource requests: a fraction with nvidia.com/gpu is
 * refused). Never fails: an invalid request comes back with err set. NULL
 * when the pod asks nothing. A pod labelled as a reservation that
 * ai-scheduler did not make (gpu_reservation_trusted) is parsed as any
 * other pod: its GPUs count, quota and preemption apply. */
gpu_req_t *gpu_req_parse(const pod_t *p, json_t *annotations);
/* The namespace reservation pods are made in (the scheduler's
 * gpu_namespace, set by the gpu-sharing row's init; GPU_RESERVATION_NS
 * until set). Process-wide, as pods are parsed before any scheduler sees
 * them; thread-safe. */
void gpu_set_reservation_namespace(const char *ns);
/* Whether p, labelled GPU_LABEL_RESERVATION=true, is a reservation pod
 * ai-scheduler made (see gpu.c for what proves it). */
int gpu_reservation_trusted(const pod_t *p, json_t *annotations);
void gpu_req_free(gpu_req_t *r);
/* A pod with a valid fraction / memory request. */
int gpu_is_fraction(const pod_t *p);
/* A trusted reservation pod (label GPU_LABEL_RESERVATION=true, made by
 * ai-scheduler, with a valid slot). */
int gpu_is_reservation(const pod_t *p);
/* The GPU share p holds on one device, in GPUs (a fraction, or memory over
 * the device's memory mem_mib; 0 when that is unknown), times its devices. */
double gpu_share(const pod_t *p, int64_t mem_mib);
/* The node's per-device memory (label), 0 when absent or malformed. */
int64_t gpu_node_memory(const node_t *n);

/* One node's shared slots and the fractions on them. Opaque; NULL means
 * nothing shared. Owned by its node_info (freed with it). */
typedef struct gpu_node gpu_node_t;

/* Registers GPU sharing's pod parser (the request above, into a pod's
 * extension slot) and its node accountant (the node's shared slots; a
 * shared slot counts once in requested nvidia.com/gpu, whoever holds it,
 * and a reservation pod's own GPU is that same slot). Called by
 * capabilities_init only (scheduler/capabilities.h). */
void gpu_capability_register(void);
/* The slots they got: read through the accessors below. */
extern int gpu_pod_ext, gpu_node_ext;
/* p's request, NULL when it has none. */
static inline const gpu_req_t *gpu_req_of(const pod_t *p)
{
    return (const gpu_req_t *)p->ext[gpu_pod_ext];
}
/* The node's shared slots, NULL while nothing there shares a GPU. */
static inline gpu_node_t *gpu_node_of(const node_info_t *ni)
{
    return (gpu_node_t *)ni->ext[gpu_node_ext];
}
gpu_node_t *gpu_node_clone(const gpu_node_t *g);
void gpu_node_free(gpu_node_t *g);
/* Accounts p starting (+1) or stopping (-1) on the node. A fraction with
 * no gpu-index yet (just assumed) takes the slots gpu_node_fit would pick.
 * *g is created on first use. gpu_used is the node's requested GPUs before
 * the change (whole GPUs plus shared slots). Returns the change in shared
 * slots, which the caller adds to the node's requested GPUs. */
int gpu_node_account(gpu_node_t **g, const node_t *node, int64_t gpu_used, const pod_t *p, int sign);
/* Filter for a fraction: 1 when it fits, else 0 with a reason
 * (kube-style "node(s) ..." wording) and whether no removal of pods can
 * help (*unresolvable). *mask gets the slots it would take (optional). */
int gpu_node_fit(const gpu_node_t *g, const node_t *node, int64_t gpu_used, const pod_t *p, uint64_t *mask,
                 const char **reason, int *unresolvable);
/* Score 0..100: fuller shared slots first (50..100), else nodes with more
 * GPUs in use (0..49), so fractions pack onto as few GPUs as possible. */
int64_t gpu_node_score(const gpu_node_t *g, const node_t *node, int64_t gpu_used, const pod_t *p);
/* The slots a fraction on this node holds (0 when it holds none). */
uint64_t gpu_node_mask_of(const gpu_node_t *g, const char *uid);
/* Slots shared now (with fractions). */
int gpu_node_shared(const gpu_node_t *g);
/* Slots with fractions or a reservation pod: the GPUs kubelet sees taken
 * by sharing. */
int gpu_node_reserved(const gpu_node_t *g);
/* Slots with a reservation pod but no fraction: bit i set. */
uint64_t gpu_node_idle_reserved(const gpu_node_t *g);
/* Slots with fractions but no reservation pod (one was deleted by hand,
 * or is being made): bit i set. */
uint64_t gpu_node_unreserved(const gpu_node_t *g);
/* Fraction in use of slot i (0..1), for tables and tests. */
double gpu_node_slot_use(const gpu_node_t *g, const node_t *node, int slot);

/* "0,3" for mask 0b1001, into buf; "" for 0. */
void gpu_mask_format(uint64_t mask, char *buf, size_t len);
/* Parses "0,3"; -1 on malformed text or an index >= GPU_MAX_DEVICES. */
int gpu_mask_parse(const char *s, uint64_t *mask);

#endif
