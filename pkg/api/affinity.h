/* affinity.h -- a pod's inter-pod constraints: pod affinity and
 * anti-affinity terms (required and preferred) and topology spread
 * constraints, parsed once from the pod's JSON.
 *
 * Semantics follow kube-scheduler v1.20 (framework.NewPodInfo): a term's
 * namespaces default to the pod's own namespace; a nil labelSelector matches
 * no pod, an empty one ({}) every pod. namespaceSelector (a v1.21 field) is
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
    int32_t max_skew;   /* >= 1 */
    char *topology_key; /* never empty */
    int hard;           /* whenUnsatisfiable: DoNotSchedule (else ScheduleAnyway) */
    selector_t selector;
    int match_nothing; /* labelSelector absent: matches no pod */
    char *key;         /* canonical "selector|topologyKey" */
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
    char *warning; /* what is only approximated, or NULL */
} pod_affinity_t;

/* Parses spec.affinity.podAffinity/podAntiAffinity and
 * spec.topologySpreadConstraints. *out is NULL when the pod has none of
 * them. -1 with a message on a bad shape or an invalid value (maxSkew < 1,
 * empty topologyKey, unknown whenUnsatisfiable, weight outside 1..100). */
int pod_affinity_parse(pod_affinity_t **out, json_t *spec, const char *pod_ns, char *err, size_t errlen);
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

#endif
