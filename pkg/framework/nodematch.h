/* nodematch.h -- a node constraint a pod set's cycle may carry: only nodes
 * whose labels have these values (a value "" means the label is absent).
 * The rows fill it (a gang's topology domain, a consolidated pod's held
 * node); the cycle and the TopologyDomain filter (cycle_state_set_match)
 * only read it, and know nothing of what made it. */
#ifndef AISCHED_FW_NODEMATCH_H
#define AISCHED_FW_NODEMATCH_H

#include "api/types.h"

#define FW_MATCH_MAX 8

/* A value per node name that is no node label (a topology level read from
 * the nodes' DRA devices): a snapshot taken when a row made the match,
 * immutable once sealed and shared by the matches copied from it (counted
 * references), so a filter reads it without a lock. */
typedef struct fw_node_values fw_node_values_t;
fw_node_values_t *fw_node_values_new(void);
/* Before fw_node_values_seal only: node's value (each node once). */
void fw_node_values_add(fw_node_values_t *v, const char *node, const char *value);
void fw_node_values_seal(fw_node_values_t *v);
/* node's value, or NULL when it has none. */
const char *fw_node_values_get(const fw_node_values_t *v, const char *node);
fw_node_values_t *fw_node_values_ref(fw_node_values_t *v);
void fw_node_values_unref(fw_node_values_t *v);

/* Owned strings, keys[i] = values[i] for i < n. by[i], when set, is where
 * entry i's value of a node is read instead of its labels (a reference
 * the match holds; keys[i] then only names it). */
typedef struct fw_node_match {
    char *keys[FW_MATCH_MAX];
    char *values[FW_MATCH_MAX];
    fw_node_values_t *by[FW_MATCH_MAX];
    int n;
} fw_node_match_t;

/* Frees the strings; m is then empty (n == 0). */
void fw_node_match_free(fw_node_match_t *m);
/* Whether node n's labels have every value of m (an empty m: any node). */
int fw_node_match(const fw_node_match_t *m, const node_t *n);
/* dst (empty) becomes a copy of src. */
void fw_node_match_copy(fw_node_match_t *dst, const fw_node_match_t *src);
/* Entry i's value for node n ("" when it has none). */
const char *fw_node_match_value(const fw_node_match_t *m, int i, const node_t *n);

#endif
