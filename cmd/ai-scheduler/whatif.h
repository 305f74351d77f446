/* whatif.h -- `ai-scheduler whatif -f FILE`: would these pods fit, and
 * how (placements, victims, borrowing), answered by the scheduler's own
 * cycle on a copy of the cluster (pkg/whatif). Writes nothing. */
#ifndef AISCHED_CMD_WHATIF_H
#define AISCHED_CMD_WHATIF_H

#include <stdint.h>
#include <stdio.h>

#include "whatif/whatif.h"
#include "cli.h"

/* --server URL and the way to the leader are the common CLI_SERVER flags
 * (cli_t.server). */
typedef struct whatif_args {
    const char *file;          /* -f: what would be submitted */
    const char *node_template; /* --node-template */
    int add_nodes;             /* --add-nodes N (0: none) */
    const char **remove;       /* --remove-node NAME, repeated */
    int nremove;
    whatif_quota_t *quotas; /* --set-quota, repeated */
    int nquotas;
    const char *snapshot;   /* --snapshot FILE: the state instead of the live cluster */
    const char *config;     /* --config FILE: the scheduler's config */
    const char *member;     /* --member NAME: a MultiClusterJob's cluster */
    int64_t horizon_ms;     /* --horizon DURATION: virtual time allowed (2m) */
    int verbosity, verbose; /* -v N given: the copy's log at N (else quiet) */
    int no_leader;          /* --no-leader: a LIST even when a leader answers */
    uint64_t seed;          /* --seed N: tie-breaks' seed (0: the config's seed, else 1) */
} whatif_args_t;

/* Parses argv (after the "whatif" word) into a and c. Returns CLI_CONTINUE,
 * or the exit code: 0 after the usage on -h, 2 after one error line. */
int whatif_parse_args(whatif_args_t *a, cli_t *c, int argc, char **argv, FILE *out, FILE *errf);
void whatif_args_free(whatif_args_t *a);

int whatif_main(int argc, char **argv, FILE *out, FILE *errf);

#endif
