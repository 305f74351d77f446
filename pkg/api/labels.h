/* labels.h -- label sets and selectors.
 *
 * One selector type serves three APIs: metav1.LabelSelector (Pools, PDBs:
 * matchLabels + matchExpressions with In/NotIn/Exists/DoesNotExist), and
 * v1.NodeSelectorTerm (node affinity: matchExpressions on labels with In,
 * NotIn, Exists, DoesNotExist, Gt, Lt, plus matchFields on metadata.name).
 * Parsing never trusts its input: bad shapes give -1 and a message. */
#ifndef AISCHED_LABELS_H
#define AISCHED_LABELS_H

#include <stddef.h>
#include <jansson.h>

typedef struct label {
    char *key;
    char *value;
} label_t;

/* Sorted by key; owns its strings. */
typedef struct labels {
    label_t *items;
    int n;
} labels_t;

int labels_from_json(labels_t *out, json_t *obj, char *err, size_t errlen); /* obj may be NULL */
const char *labels_get(const labels_t *l, const char *key);                 /* borrowed, NULL if absent */
void labels_free(labels_t *l);
int labels_copy(labels_t *dst, const labels_t *src);

typedef enum { SEL_IN, SEL_NOT_IN, SEL_EXISTS, SEL_DOES_NOT_EXIST, SEL_GT, SEL_LT } sel_op_t;

typedef struct sel_req {
    char *key;
    sel_op_t op;
    char **values;
    int nvalues;
    int on_field; /* matchFields: key is "metadata.name" */
} sel_req_t;

/* A conjunction of requirements. An empty selector matches everything, as a
 * LabelSelector does ({} selects all). */
typedef struct selector {
    sel_req_t *reqs;
    int n;
} selector_t;

/* metav1.LabelSelector: matchLabels and matchExpressions (In, NotIn, Exists,
 * DoesNotExist). Gt/Lt and unknown operators are rejected. */
int selector_from_label_selector(selector_t *out, json_t *obj, char *err, size_t errlen);
/* v1.NodeSelectorTerm; all six operators, matchFields on metadata.name only. */
int selector_from_node_term(selector_t *out, json_t *obj, char *err, size_t errlen);
/* map[string]string (pod.spec.nodeSelector) as equality requirements. */
int selector_from_map(selector_t *out, json_t *obj, char *err, size_t errlen);
/* name is used for matchFields (metadata.name). */
int selector_matches(const selector_t *s, const labels_t *l, const char *name);
void selector_free(selector_t *s);
int selector_copy(selector_t *dst, const selector_t *src);
/* A node-selector term with no requirements matches nothing (v1 semantics). */
int selector_is_empty(const selector_t *s);

#endif
