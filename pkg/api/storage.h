/* storage.h -- the storage objects the volume plugins read: a pod's
 * spec.volumes, PersistentVolumes, PersistentVolumeClaims, StorageClasses
 * and CSINodes, parsed from the API server's (untrusted) JSON.
 *
 * Ownership: pod volumes belong to their pod_t. pv_t, pvc_t, storage_class_t
 * and csinode_t are reference counted (atomic) like pod_t: *_from_json
 * returns one reference, *_ref adds one, *_unref drops one and frees at zero.
 * They are immutable once parsed; an update replaces the object. */
#ifndef AISCHED_STORAGE_H
#define AISCHED_STORAGE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "api/labels.h"

#define ANN_SELECTED_NODE  "volume.kubernetes.io/selected-node"
#define ANN_BIND_COMPLETED "pv.kubernetes.io/bind-completed"
#define ANN_BOUND_BY_CTRL  "pv.kubernetes.io/bound-by-controller"
#define ANN_BETA_CLASS     "volume.beta.kubernetes.io/storage-class"
#define NO_PROVISIONER     "kubernetes.io/no-provisioner"

typedef enum {
    PVOL_OTHER = 0,  /* emptyDir, configMap, hostPath, ...: nothing to check */
    PVOL_PVC,        /* id: claimName */
    PVOL_GCE_PD,     /* id: pdName */
    PVOL_AWS_EBS,    /* id: volumeID */
    PVOL_RBD,        /* id: image; monitors, pool */
    PVOL_ISCSI,      /* id: iqn */
    PVOL_AZURE_DISK, /* id: diskName */
    PVOL_CINDER,     /* id: volumeID */
    PVOL_CSI,        /* id: driver (inline CSI) */
    PVOL_EPHEMERAL   /* generic ephemeral (alpha in v1.20, off): ignored */
} pod_volume_kind_t;

typedef struct pod_volume {
    pod_volume_kind_t kind;
    char *name; /* spec.volumes[].name */
    char *id;   /* see the kinds; "" for PVOL_OTHER */
    int read_only;
    char **monitors; /* rbd only */
    int nmonitors;
    char *pool; /* rbd only ("rbd" when unset, as the API defaults it) */
} pod_volume_t;

/* spec.volumes of a pod; *out is NULL when there are none. */
int pod_volumes_from_json(json_t *spec, pod_volume_t **out, int *n, char *err, size_t errlen);
void pod_volumes_free(pod_volume_t *v, int n);

/* Access modes as bits. */
#define AM_RWO 1u
#define AM_ROX 2u
#define AM_RWX 4u

typedef struct pv {
    int refs; /* atomic */
    char *name;
    char *uid;
    char *resource_version;
    labels_t labels;
    int64_t capacity; /* spec.capacity.storage in bytes */
    unsigned access_modes;
    char *class_name; /* beta annotation, else spec.storageClassName; "" none */
    int block;        /* volumeMode Block */
    int has_claim_ref;
    char *claim_ns, *claim_name, *claim_uid; /* "" when unset */
    int available;                           /* status.phase Available */
    int deleting;
    int has_affinity;     /* spec.nodeAffinity.required set */
    selector_t *affinity; /* its terms, ORed */
    int naffinity;
    char *csi_driver; /* spec.csi; "" when not a CSI volume */
    char *csi_handle;
    pod_volume_kind_t intree; /* PVOL_AWS_EBS, PVOL_GCE_PD, PVOL_AZURE_DISK, PVOL_CINDER or PVOL_OTHER */
    char *intree_id;          /* its volumeID / pdName / diskName; "" otherwise */
} pv_t;

typedef struct pvc {
    int refs;
    char *ns;
    char *name;
    char *uid;
    char *key; /* ns/name */
    char *resource_version;
    char *class_name;    /* beta annotation, else spec.storageClassName; "" none */
    char *volume_name;   /* spec.volumeName, "" unbound */
    char *selected_node; /* ANN_SELECTED_NODE or "" */
    int has_selected_node;
    int bind_completed; /* ANN_BIND_COMPLETED present */
    int64_t request;    /* spec.resources.requests.storage, bytes */
    unsigned access_modes;
    int block;
    int has_selector;
    selector_t selector;
    int deleting;
} pvc_t;

typedef enum { SC_BIND_UNSET = 0, SC_BIND_IMMEDIATE, SC_BIND_WAIT } sc_binding_mode_t;

typedef struct storage_class {
    int refs;
    char *name;
    char *provisioner;
    sc_binding_mode_t mode;
    selector_t *topologies; /* allowedTopologies: terms ORed, each an AND of In */
    int ntopologies;
} storage_class_t;

typedef struct csi_driver_limit {
    char *name;
    int has_count;
    int64_t count; /* allocatable.count */
} csi_driver_limit_t;

typedef struct csinode {
    int refs;
    char *name;
    csi_driver_limit_t *drivers;
    int ndrivers;
} csinode_t;

pv_t *pv_from_json(json_t *obj, char *err, size_t errlen);
pvc_t *pvc_from_json(json_t *obj, char *err, size_t errlen);
storage_class_t *storage_class_from_json(json_t *obj, char *err, size_t errlen);
csinode_t *csinode_from_json(json_t *obj, char *err, size_t errlen);

pv_t *pv_ref(pv_t *v);
void pv_unref(pv_t *v);
pvc_t *pvc_ref(pvc_t *c);
void pvc_unref(pvc_t *c);
storage_class_t *storage_class_ref(storage_class_t *c);
void storage_class_unref(storage_class_t *c);
csinode_t *csinode_ref(csinode_t *c);
void csinode_unref(csinode_t *c);

/* volumeutil.CheckNodeAffinity: no required affinity matches every node;
 * otherwise one term must match (a term without requirements matches
 * nothing). */
int pv_matches_node(const pv_t *pv, const labels_t *node_labels, const char *node_name);
/* v1helper.MatchTopologySelectorTerms: no terms match every node. */
int storage_class_allows(const storage_class_t *sc, const labels_t *node_labels);
/* Fully bound as the volume binder sees it: spec.volumeName and the
 * bind-completed annotation. */
int pvc_is_fully_bound(const pvc_t *c);

#endif
