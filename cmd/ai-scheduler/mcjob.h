/* mcjob.h -- `ai-scheduler mcjob get`: MultiClusterJobs as a table (job,
 * phase, winner, how long it waited, each cluster's state). */
#ifndef AISCHED_CMD_MCJOB_H
#define AISCHED_CMD_MCJOB_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

/* argv after "mcjob": get [NAME] [-n NS | -A] [--kubeconfig F] [-o json].
 * Returns the exit code. */
int mcjob_main(int argc, char **argv, FILE *out, FILE *errf);

/* items: MultiClusterJob objects (dsp_table_cells). all_ns adds a NAMESPACE
 * column. now_ms: wall time, for the wait of jobs without a winner. */
void mcjob_print(FILE *out, json_t *items, int all_ns, int64_t now_ms);

#endif
