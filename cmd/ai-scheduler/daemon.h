/* daemon.h -- the scheduler process once flags are parsed. */
#ifndef AISCHED_DAEMON_H
#define AISCHED_DAEMON_H

#include "config/config.h"
#include "kube/client.h"

/* Runs until *stop; returns the process exit code. When *dump is set (SIGUSR2)
 * it is cleared and the cache is written to the log (scheduler_dump_cache). */
int daemon_run(const sched_config_t *cfg, const volatile int *stop, volatile int *dump);

/* Waits for the API server at server (GET probe_path answering): an outage
 * is waited out, bad credentials or certificates are not (-1 with one
 * line on stderr). Also -1 once *stop. Shared with `dispatch`. */
int daemon_preflight(kube_client_t *kc, const char *server, const char *probe_path, const volatile int *stop);

#endif
