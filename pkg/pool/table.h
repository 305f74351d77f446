/* table.h -- `ai-scheduler pools` (also `kubectl pool`): the pool resource
 * table, read live from the API server. */
#ifndef AISCHED_POOL_TABLE_H
#define AISCHED_POOL_TABLE_H

#include <stdio.h>

/* argv as after the "pools" word: [--kubeconfig F] [-o table|json|yaml]
 * [--scheduler-name N] [-h]. Returns a process exit code. */
int pool_table_main(int argc, char **argv, FILE *out, FILE *errf);

#endif
