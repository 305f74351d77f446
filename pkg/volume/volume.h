/* volume.h -- what the scheduler knows of storage: PVs, PVCs, classes, CSI
 * nodes, and the binding decisions in flight.
 *
 * The store is fed by informers and read by the volume plugins; it also
 * runs kube-scheduler v1.20's volume binder logic
 * (pkg/controller/volume/scheduling): sorting a pod's claims, matching
 * unbound claims to available PVs or to dynamic provisioning on a node,
 * reserving that choice (an assumed claimRef on the PV, an assumed
 * selected-node on the claim) so no other pod takes the same PV, and
 * checking, after the API updates, that the claims got bound.
 *
 * Locking: one rwlock, a leaf: nothing is called out while it is held. The
 * *_locked functions expect the caller to hold it (read is enough); the
 * others take it. It nests inside the cache lock (plugins run under it).
 *
 * Ownership: the store holds one reference on each object it keeps;
 * *_locked lookups return borrowed pointers valid while the lock is held. */
#ifndef AISCHED_VOLUME_H
#define AISCHED_VOLUME_H

#include <stddef.h>
#include "api/storage.h"
#include "api/types.h"

/* kube-scheduler v1.20 wording. */
#define VB_REASON_BIND_CONFLICT     "node(s) didn't find available persistent volumes to bind"
#define VB_REASON_NODE_CONFLICT     "node(s) had volume node affinity conflict"
#define VB_REASON_PV_NOT_EXIST      "pvc(s) bound to non-existent pv(s)"
#define VB_REASON_UNBOUND_IMMEDIATE "pod has unbound immediate PersistentVolumeClaims"

typedef struct volume_store volume_store_t;

volume_store_t *volume_store_new(void);
void volume_store_free(volume_store_t *vs);

/* Informer side: put adds its own reference (replacing the old object),
 * del removes by name (PVCs by "ns/name"). */
void volume_store_put_pv(volume_store_t *vs, pv_t *pv);
void volume_store_del_pv(volume_store_t *vs, const char *name);
void volume_store_put_pvc(volume_store_t *vs, pvc_t *pvc);
void volume_store_del_pvc(volume_store_t *vs, const char *key);
void volume_store_put_class(volume_store_t *vs, storage_class_t *sc);
void volume_store_del_class(volume_store_t *vs, const char *name);
void volume_store_put_csinode(volume_store_t *vs, csinode_t *cn);
void volume_store_del_csinode(volume_store_t *vs, const char *name);

void volume_store_rdlock(volume_store_t *vs);
void volume_store_unlock(volume_store_t *vs);

/* Borrowed lookups (lock held); NULL when unknown. */
const pvc_t *volume_pvc_locked(volume_store_t *vs, const char *ns, const char *name);
const pv_t *volume_pv_locked(volume_store_t *vs, const char *name);
const storage_class_t *volume_class_locked(volume_store_t *vs, const char *name);
const csinode_t *volume_csinode_locked(volume_store_t *vs, const char *node);

/* ---- the volume binder ---------------------------------------------------- */

/* A pod's claims as VolumeBinding's PreFilter sorts them; holds a reference
 * on each claim. skip: the pod uses no claim. */
typedef struct vb_claims {
    int skip;
    pvc_t **bound;
    int nbound;
    pvc_t **to_bind; /* unbound, WaitForFirstConsumer: ours to bind */
    int nto_bind;
} vb_claims_t;

typedef enum { VB_OK = 0, VB_UNSCHEDULABLE = 1, VB_ERROR = 2 } vb_rc_t;

/* GetPodVolumes (and podHasPVCs): VB_UNSCHEDULABLE with kube's message for a
 * missing or deleting claim and for unbound Immediate claims; VB_ERROR for
 * a class without a binding mode. vs may be NULL (no storage known). */
vb_rc_t volume_claims_get(volume_store_t *vs, const pod_t *pod, vb_claims_t *out, char *msg, size_t msglen);
void volume_claims_free(vb_claims_t *c);

/* FindPodVolumes' failure bits, turned into reasons in kube's order. */
#define VB_NODE_CONFLICT 1u
#define VB_BIND_CONFLICT 2u
#define VB_PV_NOT_EXIST  4u

/* FindPodVolumes for one node (lock held): 0 with *reasons (0 = fits), or
 * -1 with a message (no class for a claim, unknown class). */
int volume_find_locked(volume_store_t *vs, const vb_claims_t *c, const node_t *node, unsigned *reasons, char *err,
                       size_t errlen);

/* What FindPodVolumes needs for every node, taken once per cycle under the
 * lock (PreFilter), so Filter runs without it: the claims, their bound PVs,
 * and per unbound claim its selected node, class and the PVs that could
 * serve it on some node, smallest first. Holds references. Reserve checks
 * the choice again on the live store. */
typedef struct vb_prepared {
    vb_claims_t claims;
    pv_t **bound_pv;       /* per bound claim; NULL: PV unknown */
    char **selected;       /* per claim to bind: effective selected node or NULL */
    storage_class_t **cls; /* per claim to bind: its class or NULL */
    pv_t ***cand;          /* per claim to bind: candidate PVs */
    int *ncand;
    const char ***host; /* per candidate: the one hostname its affinity allows, or NULL */
    int *exclusive;     /* the claim's pre-bound PV: it or nothing */
} vb_prepared_t;

vb_rc_t volume_prepare(volume_store_t *vs, const pod_t *pod, vb_prepared_t *out, char *msg, size_t msglen);
/* volume_find_locked on the prepared view; no lock needed. */
int volume_prepared_find(const vb_prepared_t *p, const node_t *node, unsigned *reasons, char *err, size_t errlen);
void volume_prepared_free(vb_prepared_t *p);

/* Reserve (AssumePodVolumes): re-runs the match against the live store for
 * the chosen node and records the choice for the pod: matched PVs get an
 * assumed claimRef, claims to provision an assumed selected-node, so other
 * pods see them taken. 0 when reserved (or nothing to bind), -1 with a
 * message when the node no longer fits the pod's volumes. */
int volume_assume(volume_store_t *vs, const pod_t *pod, const node_t *node, char *err, size_t errlen);
/* Unreserve: drops the pod's plan and its assumptions (idempotent). */
void volume_forget(volume_store_t *vs, const char *pod_uid);
/* Whether the pod has a plan whose API updates are still to be made or
 * confirmed (PreBind has work). */
int volume_has_plan(volume_store_t *vs, const char *pod_uid);

/* What PreBind must write: a static binding sets the PV's claimRef, a
 * provisioning sets the claim's selected-node. Copies, owned by the plan. */
typedef struct vb_write {
    int is_pv;        /* 1: PV claimRef; 0: PVC annotation */
    char *name;       /* PV name, or PVC name */
    char *ns;         /* PVC namespace (both kinds: the claim's) */
    char *claim_name; /* static: the claim */
    char *claim_uid;
    char *rv;          /* resourceVersion to write against */
    char *written_rv;  /* resourceVersion the API answered with, or NULL */
    int bound_by_ctrl; /* static: the PV was not pre-bound to the claim */
} vb_write_t;

typedef struct vb_plan {
    char *node;
    vb_write_t *w;
    int nw;
    char *failed; /* why binding must be retried, or NULL */
} vb_plan_t;

/* A copy of the pod's plan for the writes; NULL when none. */
vb_plan_t *volume_plan_copy(volume_store_t *vs, const char *pod_uid);
void volume_plan_free(vb_plan_t *p);
/* Records the resourceVersion the API returned for write i. */
void volume_plan_written(volume_store_t *vs, const char *pod_uid, int i, const char *rv);
/* Marks the plan failed (PreBind then reports msg). */
void volume_plan_fail(volume_store_t *vs, const char *pod_uid, const char *msg);
/* checkBindings: 1 when every claim is bound, 0 to wait, -1 with kube's
 * message when binding must be retried (claimRef reset, provisioning
 * failed). node may be NULL (then PV node affinity is not re-checked). */
int volume_plan_check(volume_store_t *vs, const char *pod_uid, const node_t *node, char *err, size_t errlen);

/* The CSI attach-limit resource name of a driver (volumeutil.GetCSIAttachLimitKey). */
void volume_csi_limit_key(const char *driver, char *out, size_t n);

#endif
