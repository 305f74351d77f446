/* daemon.h -- the scheduler process once flags are parsed. */
#ifndef AISCHED_DAEMON_H
#define AISCHED_DAEMON_H

#include "config/config.h"

/* Runs until *stop; returns the process exit code. */
int daemon_run(const sched_config_t *cfg, const volatile int *stop);

#endif
