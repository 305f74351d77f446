/* table.h -- the rows of `ai-scheduler pools` (cmd/ai-scheduler/pools.c):
 * each pool's capacity, allocatable, used, shared and pending resources
 * from the nodes, pods and pools LISTs, as table cells and as a document. */
#ifndef AISCHED_POOL_TABLE_H
#define AISCHED_POOL_TABLE_H

#include <stdio.h>
#include <jansson.h>
#include "pool/pool.h"

#define POOL_TABLE_COLS 8 /* Pools, p b s, Resource, Capacity, Allocatable, Used, Shared, Pending */

/* The pools of the LIST items (arrays; pools may be NULL): unparsable
 * objects skipped with a warning on errf, pools sorted by name, usage
 * computed. A Pool named "default" only sets the default pool's flags. */
typedef struct pool_table {
    pool_spec_t *specs; /* n, by name */
    int n;
    pool_spec_t dflt;
    pool_usage_t *usage; /* n+1, default last */
} pool_table_t;

void pool_table_load(pool_table_t *t, FILE *errf, json_t *nodes, json_t *pods, json_t *pools,
                     const char *scheduler_name);
void pool_table_free(pool_table_t *t);

/* The table's cells (malloc'd strings, row-major, POOL_TABLE_COLS a row,
 * no header): a block of rows (cpu gpu mem storage nodes pods, and gangs
 * while some gang is pending) for each of the n pools in the order given,
 * then default (its flags from dflt), then the cluster total. usage has
 * n+1 entries, default last (as pool_usage_compute fills it). *rows is
 * set; the array has *rows * POOL_TABLE_COLS cells. */
char **pool_table_cells(const pool_spec_t *specs, int n, const pool_spec_t *dflt, const pool_usage_t *usage, int *rows);

/* The same pools as a JSON array (-o json/yaml), the total last. Units:
 * cpu_milli in millicores, memory and storage in bytes, gpu and pods as
 * counts. A new reference. */
json_t *pool_table_doc(const pool_spec_t *specs, int n, const pool_spec_t *dflt, const pool_usage_t *usage);

#endif
