/* nodematch.h -- a node constraint a pod set's cycle may carry: only nodes
 * whose labels have these values (a value "" means the label is absent).
 * The rows fill it (a gang's topology domain, a consolidated pod's held
 * node); the cycle and the TopologyDomain filter (cycle_state_set_match)
 * only read it, and know nothing of what made it. */
#ifndef AISCHED_FW_NODEMATCH_H
#define AISCHED_FW_NODEMATCH_H

#include "api/types.h"

#define FW_MATCH_MAX 8

/* Owned strings, keys[i] = values[i] for i < n. */
typedef struct fw_node_match {
    char *keys[FW_MATCH_MAX];
    char *values[FW_MATCH_MAX];
    int n;
} fw_node_match_t;

/* Frees the strings; m is then empty (n == 0). */
void fw_node_match_free(fw_node_match_t *m);
/* Whether node n's labels have every value of m (an empty m: any node). */
int fw_node_match(const fw_node_match_t *m, const node_t *n);
/* dst (empty) becomes a copy of src. */
void fw_node_match_copy(fw_node_match_t *dst, const fw_node_match_t *src);

#endif
