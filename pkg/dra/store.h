/* store.h -- DRA's objects as the scheduler knows them (DeviceClasses,
 * ResourceSlices, ResourceClaims, ResourceClaimTemplates of
 * resource.k8s.io/v1) and the devices held in flight between Reserve and
 * the claim's watch event, as the cache holds assumed pods.
 *
 * A device is in use when a claim's status.allocation names it (without
 * adminAccess) or a pod's reservation holds it for a claim whose
 * allocation the watch has not shown yet. A pool's devices count only
 * when the pool is complete: every one of its resourceSliceCount slices
 * of its highest generation is known. */
#ifndef AISCHED_DRA_STORE_H
#define AISCHED_DRA_STORE_H

#include <jansson.h>
#include <stddef.h>

#include "api/labels.h"
#include "api/types.h"
#include "dra/alloc.h"
#include "dra/device.h"
#include "kube/informer.h"

typedef struct dra_store dra_store_t;

dra_store_t *dra_store_new(void);
void dra_store_free(dra_store_t *s);

/* What an object event changed for waiting pods. */
enum {
    DRA_CHANGE_NONE = 0, /* nothing a waiting pod can gain */
    DRA_CHANGE_NEW,      /* a claim appeared: only pods kept out waiting for it gain */
    DRA_CHANGE_MORE      /* devices or classes appeared, or devices were freed */
};

/* Informer events (key: "name" or "ns/name"; obj NULL for a delete found
 * by relist). Each returns a DRA_CHANGE_*; an object it cannot read is
 * dropped with a warning (err) and counts as absent. */
int dra_store_class(dra_store_t *s, kube_event_type_t type, const char *key, json_t *obj, char *err, size_t errlen);
int dra_store_slice(dra_store_t *s, kube_event_type_t type, const char *key, json_t *obj, char *err, size_t errlen);
int dra_store_claim(dra_store_t *s, kube_event_type_t type, const char *key, json_t *obj, char *err, size_t errlen);
int dra_store_template(dra_store_t *s, kube_event_type_t type, const char *key, json_t *obj);

/* KEP-5004: whether a DeviceClass serves extended resource res (its
 * spec.extendedResourceName, or the implicit
 * deviceclass.resource.kubernetes.io/<class>): 1 with its name in cls, 0
 * not (nor while DRA is not served or listed). Several classes naming res:
 * the one created last, on a tie the first by name, as kube picks. */
int dra_store_ext_class(dra_store_t *s, const char *res, char *cls, size_t len);

/* Whether the API server serves resource.k8s.io/v1 (1 until told). */
void dra_store_set_served(dra_store_t *s, int served);
int dra_store_served(dra_store_t *s);
/* Whether claims, classes and slices are listed (1 until told): before,
 * devices in use are unknown and pods with claims wait. */
void dra_store_set_listed(dra_store_t *s, int listed);

/* A pod's claims made ready for Filter: each claim's requests with their
 * classes' selectors compiled, or why the pod cannot be placed anywhere
 * now (a claim or class missing, a selector outside the CEL subset...). */
typedef struct dra_prep dra_prep_t;
typedef enum {
    DRA_PREP_OK = 0,  /* *out set (NULL: the pod has no claim to check) */
    DRA_PREP_WAIT,    /* nothing fits until an object changes (why) */
    DRA_PREP_INVALID, /* the pod's or a claim's own content is refused (why) */
} dra_prep_rc_t;
dra_prep_rc_t dra_prepare(dra_store_t *s, const pod_t *pod, dra_prep_t **out, char *why, size_t whylen);
void dra_prep_free(dra_prep_t *p);
/* Preemption's simulation: other left (or came back to) the node copy:
 * the claims only it and others gone use count as free. */
void dra_prep_remove_pod(dra_prep_t *p, const pod_t *other);
/* other came back (a victim), or was added to node's view (a nominated
 * pod, a gang's member on the copies): its unallocated claims take as
 * many of node's free devices as they ask. */
void dra_prep_add_pod(dra_prep_t *p, const pod_t *other, const char *node);

/* Filter: 0 every claim can be allocated (or is allocated) for a pod on
 * node (name, labels), 1 not (why: what failed, the same words for every
 * node that fails alike), -1 an error (why). alloc: the node's allocatable
 * (NULL: none): the pod's extended resources it lacks and a class serves
 * are allocated as one more claim's requests (KEP-5004). */
int dra_prep_fits(const dra_prep_t *p, const char *node, const labels_t *labels, const resources_t *alloc, char *why,
                  size_t whylen);

/* Reserve: the pod's allocation on node, chosen again on the live store,
 * held until the claims' watch shows it or unreserve: 0, or -1 with err
 * (the node no longer fits). A pod with no claim to allocate holds
 * nothing and gets 0. */
int dra_store_reserve(dra_store_t *s, const pod_t *pod, const char *node, const labels_t *labels,
                      const resources_t *alloc, char *err, size_t errlen);
/* Forgets the pod's hold; returns how many of its claims PreBind had
 * already written (their undo is the caller's: dra_undo_t). */
typedef struct dra_undo {
    char *ns, *name;  /* the claim */
    char *pod_uid;    /* remove from reservedFor */
    char *pod_name;   /* the pod (in ns): not undone while it is bound */
    int deallocate;   /* and clear the allocation this pod made, if no one
                        * else is reserved */
    int delete_claim; /* the extended-resource claim PreBind created: delete it */
    struct dra_undo *next;
} dra_undo_t;
dra_undo_t *dra_store_unreserve(dra_store_t *s, const char *pod_uid);
void dra_undo_free(dra_undo_t *u);
/* Whether the pod holds a reservation now (Reserve to PreBind). */
int dra_store_has_hold(dra_store_t *s, const char *pod_uid);

/* PreBind: the claim writes the pod's hold needs, in order. */
typedef struct dra_write {
    char *ns, *name;
    json_t *claim;      /* the claim as last seen (a copy) */
    json_t *allocation; /* status.allocation to write, or NULL (shared: reserve only) */
    /* KEP-5004's claim: create (POST) it first, then write its status as
     * any claim's, then the pod's status.extendedResourceClaimStatus
     * (mappings: its requestMappings). NULL for the pod's own claims. */
    json_t *create, *mappings;
    struct dra_write *next;
} dra_write_t;
/* The writes for the pod (NULL: none), or -1 with err when its hold is
 * gone (*out NULL). */
int dra_store_writes(dra_store_t *s, const pod_t *pod, dra_write_t **out, char *err, size_t errlen);
void dra_write_free(dra_write_t *w);
/* PreBind created the pod's extended-resource claim as name: 0, or -1
 * when the hold has none to create. */
int dra_store_ext_created(dra_store_t *s, const char *pod_uid, const char *name);
/* The pod's Binding took: its hold goes once the claims' watch has shown
 * every allocation it made (until then its devices stay counted). */
void dra_store_bound(dra_store_t *s, const char *pod_uid);
/* PreBind wrote the claim's status for the pod. */
void dra_store_written(dra_store_t *s, const char *pod_uid, const char *ns, const char *name);

/* What Queues count of DRA devices (--dra-queue-resources): the devices
 * of class cls count as GPUs, one each (cap NULL) or their capacity cap
 * ("memory", or "domain/memory") over unit (milli-units: 80Gi). */
typedef struct dra_qmap {
    char *cls, *cap;
    int64_t unit;
} dra_qmap_t;
/* "CLASS=gpu[:CAPACITY/QUANTITY],..." (gpu or nvidia.com/gpu): 0 with *out
 * (dra_qmap_free), or -1 with err. */
int dra_qmap_parse(const char *spec, dra_qmap_t **out, int *n, char *err, size_t errlen);
void dra_qmap_free(dra_qmap_t *m, int n);
/* The GPUs the pod's claims count as: the devices allocated to them (or
 * held for the pod by a Reserve), else what they ask (ExactCount's count,
 * each its class's capacity at most any device has; All counts once
 * allocated). A claim shared by pods counts for each. */
double dra_store_queue_count(dra_store_t *s, const pod_t *pod, const dra_qmap_t *maps, int n);

/* fn(ud, node, value) for each node whose devices in node-local slices of
 * complete pools carry attribute attr (fully qualified) with one value
 * (ints and bools as text); devices without it do not count, and a node
 * whose devices disagree is left out. fn runs under the store's read lock. */
void dra_store_node_attr(dra_store_t *s, const char *attr, void (*fn)(void *ud, const char *node, const char *value),
                         void *ud);
/* Devices on node (complete pools whose slices select it): n and in use. */
void dra_store_node_counts(dra_store_t *s, const char *node, const labels_t *labels, int *devices, int *used);

#endif
