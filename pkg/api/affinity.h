/* affinity.h -- a pod's inter-pod constraints: pod affinity and
 * anti-affinity terms (required and preferred) and topology spread
 * constraints, parsed once from the pod's JSON.
 *
 * Semantics follow kube-scheduler v1.20 (framework.NewPodInfo): a term's
 * namespaces default to the pod's own namespace; a nil labelSelector matches
 * no pod, an empty one ({}) every pod. The fields of later releases follow
 * current kube (1.33-1.35): matchLabelKeys / mismatchLabelKeys are merged
 * into the selector here, once, with the pod's own labels (as the API
 * server's PrepareForCreate and PodTopologySpread's
 * filterTopologySpreadConstraints do); a selector the API server already
 * merged is recognised and not merged twice. namespaceSelector (a v1.21 field) is
 * honoured only as {} (all namespaces); any other namespaceSelector is
 * approximated by the listed namespaces (or the pod's own) and recorded in
 * `warning` so the scheduler can tell the user.
 *
 * Ownership: a pod_affinity_t belongs to its pod_t (pod_affinity_free); it is
 * immutable after parsing, like the pod. */
#ifndef AISCHED_AFFINITY_H
#define AISCHED_AFFINITY_H

#include <stdint.h>
#include <stddef.h>
#include <jansson.h>
#include "api/labels.h"

struct pod;

typedef struct pod_aff_term {
    char **namespaces; /* sorted, unique; at least one unless all_namespaces */
    int nnamespaces;
    int all_namespaces; /* namespaceSelector: {} */
    selector_t selector;
    int match_nothing;  /* labelSelector absent (nil): matches no pod */
    char *topology_key; /* never empty */
    int weight;         /* preferred terms: 1..100; required: 0 */
    char *key;          /* canonical "namespaces|selector|topologyKey" */
} pod_aff_term_t;

typedef struct spread_constraint {
    int32_t max_skew;    /* >= 1 */
    char *topology_key;  /* never empty */
    int hard;            /* whenUnsatisfiable: DoNotSchedule (else ScheduleAnyway) */
    int32_t min_domains; /* minDomains (hard only), 1 when unset */
    int affinity_honor;  /* nodeAffinityPolicy: Honor (the default) */
    int taints_honor;    /* nodeTaintsPolicy: Honor (default Ignore) */
    selector_t selector; /* with matchLabelKeys merged */
    int match_nothing;   /* labelSelector absent: matches no pod */
    char *key;           /* canonical "selector|topologyKey" */
} spread_constraint_t;

typedef struct pod_affinity {
    pod_aff_term_t *aff_req; /* podAffinity required */
    int naff_req;
    pod_aff_term_t *anti_req; /* podAntiAffinity required */
    int nanti_req;
    pod_aff_term_t *aff_pref; /* podAffinity preferred (weighted) */
    int naff_pref;
    pod_aff_term_t *anti_pref; /* podAntiAffinity preferred (weighted) */
    int nanti_pref;
    spread_constraint_t *spread; /* topologySpreadConstraints */
    int nspread;
    int nspread_hard;
    /* Some constraint sets nodeAffinityPolicy or nodeTaintsPolicy: spread
     * counts follow current kube (only pods of nodes that pass each
     * constraint's policies count) instead of v1.20 (every pod of an
     * eligible domain). */
    int spread_policies;
    char *warning; /* what is only approximated, or NULL */
} pod_affinity_t;

/* Whether a has required pod affinity or anti-affinity, or a
 * DoNotSchedule spread constraint: other pods' labels can keep its pod
 * from fitting (a NULL: none). */
int pod_affinity_hard(const pod_affinity_t *a);

/* Parses spec.affinity.podAffinity/podAntiAffinity and
 * spec.topologySpreadConstraints; pod_labels (the pod's own) resolve
 * matchLabelKeys and mismatchLabelKeys. *out is NULL when the pod has none
 * of them. -1 with a message on a bad shape or a value kube's API
 * validation refuses (maxSkew < 1, empty topologyKey, unknown
 * whenUnsatisfiable, weight outside 1..100, minDomains < 1 or without
 * DoNotSchedule, a policy other than Honor/Ignore, label keys without a
 * labelSelector, not a label name, in both matchLabelKeys and
 * mismatchLabelKeys, or already in the selector). */
int pod_affinity_parse(pod_affinity_t **out, json_t *spec, const char *pod_ns, const labels_t *pod_labels, char *err,
                       size_t errlen);
void pod_affinity_free(pod_affinity_t *a);

/* Deep copy (dst owns it; aff_term_clear releases it). */
void aff_term_copy(pod_aff_term_t *dst, const pod_aff_term_t *src);
void aff_term_clear(pod_aff_term_t *t);

/* Does pod p match the term's namespaces and label selector? */
int aff_term_matches(const pod_aff_term_t *t, const struct pod *p);
/* Does p match the constraint's selector within namespace ns? (Spread
 * constraints count only pods of the incoming pod's namespace, and never
 * pods being deleted.) */
int spread_matches(const spread_constraint_t *c, const char *ns, const struct pod *p);
/* Whether every node carrying c's key is one of c's domains for pod p (no
 * node affinity to honour, taints ignored): what the topology index counts. */
int spread_counts_all_nodes(const spread_constraint_t *c, const struct pod *p);

#endif
