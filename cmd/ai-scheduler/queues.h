/* queues.h -- `ai-scheduler queues` (also `kubectl queue`): the Queue tree
 * and each queue's share, read live from the API server. */
#ifndef AISCHED_CMD_QUEUES_H
#define AISCHED_CMD_QUEUES_H

#include <stdio.h>
#include <jansson.h>

#include "cli.h"

/* argv as after the "queues" word: [--kubeconfig F] [-o table|json|yaml]
 * [--pool NAME] [-h]. Returns a process exit code. */
int queues_main(int argc, char **argv, FILE *out, FILE *errf);

/* The whole command minus the API server: the items of a Queue LIST
 * (queue_table_load) printed as a tree, each Invalid queue's reason after
 * the table; -o json/yaml in the API's units (queue_table_doc). Returns 0,
 * or -1 if writing failed. */
int queues_render(FILE *out, FILE *errf, cli_out_t fmt, json_t *queues, const char *pool);

#endif
