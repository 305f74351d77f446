/* table.h -- `ai-scheduler mcjob get`: MultiClusterJobs as a table (job,
 * phase, winner, how long it waited, each cluster's state). */
#ifndef AISCHED_DISPATCH_TABLE_H
#define AISCHED_DISPATCH_TABLE_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

/* items: MultiClusterJob objects. all_ns adds a NAMESPACE column. now_ms:
 * wall time, for the wait of jobs without a winner. */
void dsp_table_render(FILE *out, json_t *items, int all_ns, int64_t now_ms);

/* argv after "mcjob": get [NAME] [-n NS | -A] [--kubeconfig F] [-o json].
 * Returns the exit code. */
int dsp_table_main(int argc, char **argv, FILE *out, FILE *errf);

#endif
