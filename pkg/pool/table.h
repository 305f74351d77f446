/* table.h -- `ai-scheduler pools` (also `kubectl pool`): the pool resource
 * table, read live from the API server. */
#ifndef AISCHED_POOL_TABLE_H
#define AISCHED_POOL_TABLE_H

#include <stdio.h>
#include <jansson.h>
#include "pool/pool.h"

/* argv as after the "pools" word: [--kubeconfig F] [-o table|json|yaml]
 * [--scheduler-name N] [-h]. Returns a process exit code. */
int pool_table_main(int argc, char **argv, FILE *out, FILE *errf);

typedef enum { POOL_OUT_TABLE, POOL_OUT_JSON, POOL_OUT_YAML } pool_out_t;

/* Renders n pools in the order given, then default (its flags from dflt),
 * then the cluster total. usage has n+1 entries, default last (as
 * pool_usage_compute fills it). -o json/yaml units: cpu_milli in millicores,
 * memory and storage in bytes, gpu and pods as counts. Returns 0, or -1 if
 * writing failed. */
int pool_table_render(FILE *out, pool_out_t fmt, const pool_spec_t *specs, int n, const pool_spec_t *dflt,
                      const pool_usage_t *usage);

/* The whole command minus the API server: items of the nodes, pods and pools
 * LISTs (arrays, pools may be NULL) are parsed, unparsable objects skipped
 * with a warning on errf, pools sorted by name, usage computed and rendered.
 * A Pool named "default" only sets the default pool's flags. */
int pool_table_from_json(FILE *out, FILE *errf, pool_out_t fmt, json_t *nodes, json_t *pods, json_t *pools,
                         const char *scheduler_name);

/* doc (a jansson value) as one YAML document, strings quoted only where
 * plain would read back as another type. Also `ai-scheduler queues -o yaml`.
 * Returns 0, or -1 if writing failed. */
int pool_table_emit_yaml(FILE *out, json_t *doc);

#endif
