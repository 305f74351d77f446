/* snapshot.h -- `ai-scheduler snapshot`: the objects the scheduler reads,
 * LISTed into one ClusterSnapshot file (pkg/snapshot). */
#ifndef AISCHED_CMD_SNAPSHOT_H
#define AISCHED_CMD_SNAPSHOT_H

#include <stdio.h>
#include <jansson.h>

/* argv as after the "snapshot" word. Returns a process exit code. */
int snapshot_main(int argc, char **argv, FILE *out, FILE *errf);

/* The config file at path, validated by the config loader, as the JSON
 * object the snapshot carries; NULL after one error line on errf. */
json_t *snapshot_config_json(const char *path, FILE *errf);

/* doc written to path ("-": out) as JSON, through a temporary file renamed
 * into place (mode 0600: it describes the cluster). 0, or -1 after one
 * error line on errf. */
int snapshot_write(const char *path, json_t *doc, FILE *out, FILE *errf);

#endif
