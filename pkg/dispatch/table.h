/* table.h -- the rows of `ai-scheduler mcjob get` (cmd/ai-scheduler/mcjob.c):
 * each MultiClusterJob's namespace, name, phase, winner, how long it waited
 * and each cluster's state. */
#ifndef AISCHED_DISPATCH_TABLE_H
#define AISCHED_DISPATCH_TABLE_H

#include <stdint.h>
#include <jansson.h>

#define DSP_TABLE_COLS 6 /* NAMESPACE NAME PHASE WINNER WAITED CLUSTERS */

/* items: MultiClusterJob objects. now_ms: wall time, for the wait of jobs
 * without a winner. The cells (malloc'd strings, never empty, row-major,
 * DSP_TABLE_COLS a row, no header), one row per item. */
char **dsp_table_cells(json_t *items, int64_t now_ms);

#endif
