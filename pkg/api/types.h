/* types.h -- the scheduler's view of Nodes and Pods, parsed once from the API
 * server's JSON and immutable afterwards.
 *
 * Ownership: pod_t and node_t are reference counted (atomic) because the
 * cache, the queues and the bind workers of several threads hold the same
 * object. *_from_json returns a new object with one reference; *_ref adds
 * one; *_unref drops one and frees at zero. An update replaces the object,
 * it never mutates a shared one. */
#ifndef AISCHED_TYPES_H
#define AISCHED_TYPES_H

#include <stdint.h>
#include <stddef.h>
#include <jansson.h>
#include "api/affinity.h"
#include "api/labels.h"
#include "api/resources.h"

#define POOL_ANNOTATION "resource.aibee.cn/pool"
/* Written through the Binding on a borrowed placement: the pool that lent the
 * node. Lets a restarted scheduler rebuild who borrowed what. */
#define BORROWED_ANNOTATION "resource.aibee.cn/borrowed-from"
/* Seconds after which a pod becomes preemptible (Armada's lifetime). */
#define LIFETIME_ANNOTATION "resource.aibee.cn/lifetime-seconds"
#define DEFAULT_POOL        "default"
/* Capabilities that may keep data on a pod (api/podext.h). */
#define POD_EXT_MAX 4
/* The lifecycle of a running pod under preemption (issue 26):
 * protected (younger than its minimum runtime) -> normal -> past its
 * lifetime. A pod may ask for less protection than its queue gives,
 * never more: a duration, "0" (none). */
#define PREEMPT_MIN_RUNTIME_ANNOTATION "resource.aibee.cn/preempt-min-runtime"
#define RECLAIM_MIN_RUNTIME_ANNOTATION "resource.aibee.cn/reclaim-min-runtime"
/* Opt-in: chosen as a victim, the pod is first asked to checkpoint and
 * given this long (a duration) to say it did. */
#define CHECKPOINT_GRACE_ANNOTATION "resource.aibee.cn/checkpoint-grace"
/* Written by the workload: when it last saved a checkpoint (RFC 3339). */
#define CHECKPOINTED_AT_ANNOTATION "resource.aibee.cn/checkpointed-at"
/* How long the pod is expected to run (a duration): backfill estimates. */
#define EXPECTED_RUNTIME_ANNOTATION "resource.aibee.cn/expected-runtime"
/* A duration field that is not set, and one that is set but malformed. */
#define DURATION_UNSET (-2)
#define DURATION_BAD   (-3)

typedef enum { EFFECT_NO_SCHEDULE, EFFECT_PREFER_NO_SCHEDULE, EFFECT_NO_EXECUTE, EFFECT_ALL } taint_effect_t;

typedef struct taint {
    char *key;
    char *value; /* may be "" */
    taint_effect_t effect;
} taint_t;

typedef struct toleration {
    char *key; /* "" with Exists matches every key */
    char *value;
    int op_exists;         /* operator Exists (else Equal) */
    taint_effect_t effect; /* EFFECT_ALL when empty */
} toleration_t;

typedef struct host_port {
    int port;
    char protocol[8]; /* TCP, UDP, SCTP */
    char host_ip[48]; /* "" means 0.0.0.0 */
} host_port_t;

typedef struct weighted_term {
    int weight;
    selector_t term;
} weighted_term_t;

typedef struct node {
    int refs; /* atomic */
    char *name;
    char *uid;
    char *resource_version;
    labels_t labels;
    taint_t *taints;
    int ntaints;
    int unschedulable;
    resources_t capacity;
    resources_t allocatable;
    /* Parsed in api/extras.c (ImageLocality, NodePreferAvoidPods). */
    struct node_image *images; /* status.images, one entry per name, sorted by name */
    int nimages;
    struct avoid_ref *avoid; /* preferAvoidPods annotation: controllers to avoid */
    int navoid;
} node_t;

/* One image name a node holds, with its size (status.images[].sizeBytes). */
typedef struct node_image {
    char *name;
    int64_t size;
} node_image_t;

/* A controller (kind + uid) a node prefers to avoid. */
typedef struct avoid_ref {
    char *kind;
    char *uid;
} avoid_ref_t;

typedef enum { PHASE_PENDING, PHASE_RUNNING, PHASE_SUCCEEDED, PHASE_FAILED, PHASE_UNKNOWN } pod_phase_t;

typedef struct pod {
    int refs; /* atomic */
    char *ns;
    char *name;
    char *uid;
    char *key; /* "ns/name", for logs and maps */
    char *resource_version;
    char *scheduler_name;
    char *node_name;      /* "" when unbound */
    char *nominated_node; /* status.nominatedNodeName or "" */
    char *pool;           /* annotation value, "" when absent */
    char *borrowed_from;  /* BORROWED_ANNOTATION or "" */
    pod_phase_t phase;
    int deleting;       /* metadata.deletionTimestamp set */
    int32_t priority;   /* spec.priority (0 when absent) */
    int64_t created_ms; /* creationTimestamp, wall ms */
    int64_t started_ms; /* status.startTime, else when bound (PodScheduled=True: extras.c), else created */
    int64_t lifetime_s; /* LIFETIME_ANNOTATION; 0 none, -1 malformed */
    /* PREEMPT_/RECLAIM_MIN_RUNTIME_ANNOTATION in ms: DURATION_UNSET,
     * DURATION_BAD, 0, or > 0 ("-1" is not a pod's to ask: BAD). */
    int64_t preempt_min_runtime_ms, reclaim_min_runtime_ms;
    int64_t checkpoint_grace_ms; /* CHECKPOINT_GRACE_ANNOTATION: DURATION_UNSET, _BAD, or >= 0 */
    int64_t checkpointed_at_ms;  /* CHECKPOINTED_AT_ANNOTATION, wall ms; 0 none or malformed */
    int64_t expected_runtime_ms; /* EXPECTED_RUNTIME_ANNOTATION: DURATION_UNSET, _BAD, or > 0 */
    labels_t labels;

    resources_t requests; /* what it occupies on its node: api/podres.h */
    int64_t nonzero_cpu;  /* for scoring: 100m when unset */
    int64_t nonzero_mem;  /* 200Mi when unset */

    selector_t node_selector; /* spec.nodeSelector as a selector */
    int has_node_selector;
    selector_t *affinity_terms; /* required node affinity: OR of terms */
    int naffinity_terms;
    weighted_term_t *preferred; /* preferred node affinity */
    int npreferred;
    toleration_t *tolerations;
    int ntolerations;
    host_port_t *ports; /* host ports in use */
    int nports;
    /* spec.volumes (api/storage.h), owned; NULL/0 when none. */
    struct pod_volume *volumes;
    int nvolumes;
    /* Parsed in api/extras.c: ownership, images, preemption policy and
     * what the scheduler does not implement. */
    char *controller_kind;      /* ownerReferences[controller].kind, NULL if none */
    char *controller_uid;       /* its uid ("" if unset), NULL if no controller */
    char *controller_api;       /* its apiVersion ("" if unset), NULL if no controller */
    char *controller_name;      /* its name ("" if unset), NULL if no controller */
    char **images;              /* spec.containers[].image, normalised (":latest") */
    int ncontainers;            /* entries in images */
    int preempt_never;          /* spec.preemptionPolicy: Never */
    int has_spread_constraints; /* spec.topologySpreadConstraints non-empty */
    char *unsupported;          /* fields we cannot honour, "a, b"; NULL if none */
    /* spec.schedulingGates (GA 1.30) and spec.resourceClaims (DRA, GA
     * 1.34): how many, and their names "a, b" for messages (NULL if none).
     * Either keeps the pod out of the scheduling queue (scheduler/gates.c). */
    int ngates, nclaims;
    char *gates, *claims;
    /* status.conditions[type=PodScheduled]: its reason and message as the
     * API has them (NULL when there is none), so a condition is not
     * written again. */
    char *scheduled_reason, *scheduled_message;
    /* Inter-pod constraints (pod (anti-)affinity, topology spread); NULL
     * when the pod has none. Owned. */
    pod_affinity_t *interpod;
    /* Each registered capability's data (api/podext.h), owned through its
     * free hook; NULL in a slot when the pod has nothing of it. ext_mask
     * has bit i set iff ext[i] is set: one test skips a plain pod. */
    void *ext[POD_EXT_MAX];
    unsigned ext_mask;
} pod_t;

/* Parse. Returns NULL with a message on input that is not a Node/Pod, a bad
 * quantity, a bad selector; never crashes on any JSON. */
node_t *node_from_json(json_t *obj, char *err, size_t errlen);
pod_t *pod_from_json(json_t *obj, char *err, size_t errlen);

/* api/extras.c: the fields above parsed into / freed from n and p (called by
 * node_from_json / pod_from_json and their free). */
int node_parse_extras(node_t *n, json_t *obj, char *err, size_t errlen);
void node_free_extras(node_t *n);
int pod_parse_extras(pod_t *p, json_t *obj, char *err, size_t errlen);
void pod_free_extras(pod_t *p);
/* Whether any node object alive reports images (ImageLocality's shortcut). */
int node_images_any(void);
/* The image of n called name (normalised), or NULL. */
const node_image_t *node_find_image(const node_t *n, const char *name);
/* kube's normalizedImageName: ":latest" when the name has no tag. Caller frees. */
char *image_normalize(const char *name);

node_t *node_ref(node_t *n);
void node_unref(node_t *n);
pod_t *pod_ref(pod_t *p);
void pod_unref(pod_t *p);

/* Terminal pods (Succeeded/Failed) hold no resources. */
int pod_is_terminal(const pod_t *p);
int pod_is_bound(const pod_t *p);
/* The pod's home pool: its annotation, or DEFAULT_POOL. (Whether the pool
 * exists is the pool module's question.) */
const char *pod_home_pool(const pod_t *p);

/* Toleration matching as v1.Toleration.ToleratesTaint. */
int toleration_tolerates(const toleration_t *t, const taint_t *taint);
int pod_tolerates_taints(const pod_t *p, const taint_t *taints, int ntaints, int only_hard,
                         const taint_t **first_untolerated);

#endif
