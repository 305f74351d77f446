/* topo_count.h -- counts keyed by topology pair (label key, label value),
 * the bookkeeping InterPodAffinity and PodTopologySpread share. A pair can be
 * present with count 0 (a spread domain with no matching pod yet).
 *
 * Ownership: a tp_counts_t owns its key copies; tpc_free releases them. Not
 * thread-safe: one lives in one cycle state. */
#ifndef AISCHED_TOPO_COUNT_H
#define AISCHED_TOPO_COUNT_H

#include <stdint.h>
#include "util/hashmap.h"

typedef struct tp_counts {
    hashmap_t *m; /* "key\x1fvalue" -> encoded count */
    char **keys;  /* distinct label keys seen, for node-side lookups */
    int nkeys;
} tp_counts_t;

void tpc_init(tp_counts_t *c, size_t hint);
void tpc_free(tp_counts_t *c);
/* Adds d to the pair (creating it at 0 first). drop_zero removes a pair
 * that reaches 0, as kube's maps delete such entries. */
void tpc_add(tp_counts_t *c, const char *key, const char *value, int64_t d, int drop_zero);
/* Count of the pair; *present (optional) says whether it exists. */
int64_t tpc_get(const tp_counts_t *c, const char *key, const char *value, int *present);
size_t tpc_len(const tp_counts_t *c);
/* Iteration: for (size_t it = 0; tpc_next(c, &it, &k, &klen, &v, &n);) ... k
 * points to the key (klen bytes, not NUL-terminated), v to the value. */
int tpc_next(const tp_counts_t *c, size_t *it, const char **k, size_t *klen, const char **v, int64_t *n);

#endif
