/* table.h -- the rows of `ai-scheduler queues` (cmd/ai-scheduler/queues.c):
 * the Queue tree with each queue's quota, limit, weight and the status the
 * scheduler writes, as table cells and as a document. */
#ifndef AISCHED_FAIRSHARE_TABLE_H
#define AISCHED_FAIRSHARE_TABLE_H

#include <stdio.h>
#include <jansson.h>

#define QUEUE_TABLE_COLS 11

typedef struct queue_table queue_table_t;

/* `queues` is the items array of a Queue LIST (NULL or not an array: no
 * queues). Items without a name are skipped with a warning on errf; fields
 * of the wrong type read as absent. The queues form a tree (siblings by
 * name), with the implicit queue "default" when no Queue has that name. A
 * queue whose parent is missing or that is part of a parentQueue cycle is
 * at the top level, Invalid. pool NULL: spec.resources and the status
 * sums; else that pool's numbers (spec.pools.<pool>.resources where set,
 * status.pools[] of that name). pool is kept, not copied. */
queue_table_t *queue_table_load(FILE *errf, json_t *queues, const char *pool);
void queue_table_free(queue_table_t *t);

/* The table's cells in tree order (malloc'd strings, row-major,
 * QUEUE_TABLE_COLS a row, no header); *rows is set. */
char **queue_table_cells(const queue_table_t *t, int *rows);

/* Why each Invalid queue is so (ours first, else the scheduler's message),
 * "name: why\n" in tree order; NULL when none is. malloc'd. */
char *queue_table_notes(const queue_table_t *t);

/* The queues as a JSON array in tree order, in the API's units: gpu GPUs,
 * cpu millicores, memory MB, -1 for no quota or limit, null where the
 * status is not written. A new reference. */
json_t *queue_table_doc(const queue_table_t *t);

#endif
