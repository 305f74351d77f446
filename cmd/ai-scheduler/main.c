/* main.c -- the ai-scheduler command: `ai-scheduler [flags]` runs the
 * scheduler; `ai-scheduler pools` (or `kubectl pool`) prints the pool table,
 * `ai-scheduler queues` (or `kubectl queue`) the queue tree; `ai-scheduler
 * dispatch` runs the MultiClusterJob controller and `ai-scheduler mcjob get`
 * lists those jobs; `ai-scheduler debug PATH` GETs a /debug endpoint;
 * `ai-scheduler snapshot` writes the cluster to a file and `ai-scheduler
 * whatif` asks whether pods would fit, on a copy. */
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "scheduler/capabilities.h"
#include "scheduler/scheduler.h"
#include "server/http.h"
#include "server/metrics.h"
#include "util/log.h"
#include "util/util.h"
#include "daemon.h"
#include "debugclient.h"
#include "dispatch.h"
#include "explain.h"
#include "mcjob.h"
#include "pools.h"
#include "queues.h"
#include "snapshot.h"
#include "whatif.h"
#include "simulate.h"
#include "version.h"

static volatile sig_atomic_t g_stop, g_dump;

static void on_signal(int sig)
{
    if (sig == SIGUSR2)
        g_dump = 1; /* the daemon writes its cache to the log */
    else
        g_stop = 1;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
    const char *prog = basename(argv[0]);
    capabilities_init(); /* before any pod is parsed, by any subcommand */
    if (strcmp(prog, "kubectl-pool") == 0)
        return pools_main(argc - 1, argv + 1, stdout, stderr);
    if (argc > 1 && strcmp(argv[1], "pools") == 0)
        return pools_main(argc - 2, argv + 2, stdout, stderr);
    if (strcmp(prog, "kubectl-queue") == 0)
        return queues_main(argc - 1, argv + 1, stdout, stderr);
    if (argc > 1 && strcmp(argv[1], "queues") == 0)
        return queues_main(argc - 2, argv + 2, stdout, stderr);

    if (argc > 1 && strcmp(argv[1], "debug") == 0)
        return debug_main(argc - 2, argv + 2, stdout, stderr);
    if (argc > 1 && strcmp(argv[1], "explain") == 0)
        return explain_main(argc - 2, argv + 2, stdout, stderr);
    if (argc > 1 && strcmp(argv[1], "snapshot") == 0)
        return snapshot_main(argc - 2, argv + 2, stdout, stderr);
    if (argc > 1 && strcmp(argv[1], "whatif") == 0)
        return whatif_main(argc - 2, argv + 2, stdout, stderr);
    if (argc > 1 && strcmp(argv[1], "mcjob") == 0)
        return mcjob_main(argc - 2, argv + 2, stdout, stderr);
    if (argc > 1 && strcmp(argv[1], "simulate") == 0)
        return simulate_main(argc - 2, argv + 2, stdout, stderr);
    if (argc > 1 && strcmp(argv[1], "dispatch") == 0) {
        install_signals();
        return dispatch_main(argc - 2, argv + 2, (const volatile int *)&g_stop);
    }
    if (argc > 1 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)) {
        printf("ai-scheduler %s (git %s)\n", AISCHED_VERSION, AISCHED_GIT);
        return 0;
    }
    sched_config_t cfg;
    char err[512];
    config_default(&cfg);
    int rc = config_parse_args(&cfg, argc, argv, err, sizeof(err));
    if (rc == CONFIG_HELP) {
        config_free(&cfg);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "ai-scheduler: %s\n", err);
        config_free(&cfg);
        return 2;
    }
    log_set_verbosity(cfg.verbosity);
    install_signals();
    rc = daemon_run(&cfg, (const volatile int *)&g_stop, (volatile int *)&g_dump);
    config_free(&cfg);
    return rc;
}
