/* pools.h -- `ai-scheduler pools` (also `kubectl pool`): the pool resource
 * table, read live from the API server. */
#ifndef AISCHED_CMD_POOLS_H
#define AISCHED_CMD_POOLS_H

#include <stdio.h>
#include <jansson.h>

#include "pool/pool.h"
#include "cli.h"

/* argv as after the "pools" word: [--kubeconfig F] [-o table|json|yaml]
 * [--scheduler-name N] [--gpu-reservation-namespace NS] [-h]. Returns a
 * process exit code. */
int pools_main(int argc, char **argv, FILE *out, FILE *errf);

/* Prints n pools in the order given, then default (its flags from dflt),
 * then the cluster total (pool_table_cells, pool_table_doc). Returns 0, or
 * -1 if writing failed. */
int pools_print(FILE *out, cli_out_t fmt, const pool_spec_t *specs, int n, const pool_spec_t *dflt,
                const pool_usage_t *usage);

/* The whole command minus the API server: the items of the nodes, pods and
 * pools LISTs (pool_table_load) printed. Returns 0, or -1 if writing failed. */
int pools_render(FILE *out, FILE *errf, cli_out_t fmt, json_t *nodes, json_t *pods, json_t *pools,
                 const char *scheduler_name);

#endif
