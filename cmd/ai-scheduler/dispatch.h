/* dispatch.h -- `ai-scheduler dispatch`: the MultiClusterJob controller as a
 * process (flags, hub client, leader election, /metrics and health). */
#ifndef AISCHED_CMD_DISPATCH_H
#define AISCHED_CMD_DISPATCH_H

/* argv after "dispatch". Returns the exit code. */
int dispatch_main(int argc, char **argv, const volatile int *stop);

#endif
