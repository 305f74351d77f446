/* table.h -- `ai-scheduler queues` (also `kubectl queue`): the Queue tree and
 * each queue's share, read live from the API server. */
#ifndef AISCHED_FAIRSHARE_TABLE_H
#define AISCHED_FAIRSHARE_TABLE_H

#include <stdio.h>
#include <jansson.h>

typedef enum { QUEUE_OUT_TABLE, QUEUE_OUT_JSON, QUEUE_OUT_YAML } queue_out_t;

/* argv as after the "queues" word: [--kubeconfig F] [-o table|json|yaml]
 * [--pool NAME] [-h]. Returns a process exit code. */
int queue_table_main(int argc, char **argv, FILE *out, FILE *errf);

/* The whole command minus the API server: `queues` is the items array of a
 * Queue LIST (NULL or not an array: no queues). Items without a name are
 * skipped with a warning on errf; fields of the wrong type read as absent.
 * Prints the queues as a tree (siblings by name), with the implicit queue
 * "default" when no Queue has that name. A queue whose parent is missing or
 * that is part of a parentQueue cycle is shown at the top level, Invalid.
 * pool NULL: spec.resources and the status sums; else that pool's numbers
 * (spec.pools.<pool>.resources where set, status.pools[] of that name).
 * -o json/yaml units are the API's: gpu GPUs, cpu millicores, memory MB,
 * -1 for no quota or limit, null where the status is not written.
 * Returns 0, or -1 if writing failed. */
int queue_table_from_json(FILE *out, FILE *errf, queue_out_t fmt, json_t *queues, const char *pool);

#endif
