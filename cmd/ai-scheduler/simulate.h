/* simulate.h -- `ai-scheduler simulate`: a workload run through the
 * scheduler on a snapshot, in virtual time (pkg/simulate). */
#ifndef AISCHED_CMD_SIMULATE_H
#define AISCHED_CMD_SIMULATE_H

#include <stdio.h>

/* argv[0] is the first argument after "simulate". Returns the exit code:
 * 0 done, 1 the run failed, 2 bad usage or input. */
int simulate_main(int argc, char **argv, FILE *out, FILE *errf);

#endif
