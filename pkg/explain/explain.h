/* explain.h -- decision records: why a pending pod or gang was not placed,
 * kept per pod and per PodGroup in bounded memory, and the plain hint
 * derived from a record. No scheduler internals: the scheduler fills the
 * records (scheduler/trace.c), this module keeps and renders them.
 *
 * A record is a JSON object (explain_record_new gives every key of the
 * contract, empty): pod, pool, queue, admission, attempts, nodesEvaluated,
 * filters (reason -> node count), filterDetails ({plugin, reason, count,
 * examples}), topNodes ({node, score, scores per plugin}), postFilter
 * ({step, result, detail}), gang, message, outcome, hint, time. Records
 * hold names, reasons and numbers only: never an env value or a Secret. */
#ifndef AISCHED_EXPLAIN_H
#define AISCHED_EXPLAIN_H

#include <jansson.h>
#include <stdint.h>

/* Records kept at most (the oldest dropped first). */
#define EXPLAIN_DEFAULT_CAP 20000
/* Example nodes kept per filter reason. */
#define EXPLAIN_EXAMPLES 3
/* Best nodes kept in topNodes. */
#define EXPLAIN_TOP_NODES 3

typedef struct explain_store explain_store_t;

explain_store_t *explain_store_new(int cap);
void explain_store_free(explain_store_t *st);
/* Keeps rec (taken) as the record of kind ("pod" or "podgroup") ns/name,
 * replacing the one before; past the cap the least recently written goes. */
void explain_put(explain_store_t *st, const char *kind, const char *ns, const char *name, json_t *rec);
/* A copy of the record (the caller's), or NULL when none is kept. Any thread. */
json_t *explain_get(explain_store_t *st, const char *kind, const char *ns, const char *name);
/* Forgets the record; 1 if there was one. */
int explain_drop(explain_store_t *st, const char *kind, const char *ns, const char *name);
int explain_count(explain_store_t *st);

/* ---- building a record (pure) */

/* Every key of the contract, empty; time is now (wall ms). */
json_t *explain_record_new(const char *kind, const char *pod, const char *pool, int64_t now_wall_ms);
/* One filter reason: counted in filters and detailed in filterDetails
 * (plugin may be NULL; at most EXPLAIN_EXAMPLES examples are kept). */
void explain_record_filter(json_t *rec, const char *plugin, const char *reason, int count, const char *const *examples,
                           int nexamples);
/* One of the best nodes; scores (plugin -> weighted score) is taken. */
void explain_record_top_node(json_t *rec, const char *node, int64_t score, json_t *scores);
/* One post-filter step ({step, result, detail}). */
void explain_record_step(json_t *rec, const char *step, const char *result, const char *detail);

/* The plain hint a record supports, or NULL when none can be derived
 * (caller frees). Reads pod's request, the pool's free GPUs, the filters,
 * admission, gang and post-filter steps: never a test's names. */
char *explain_hint(const json_t *rec);

#endif
