/* sandbox_bench.c -- the sandbox's speed (pkg/sandbox): NODES nodes (32 cpu,
 * 128Gi, 8 nvidia.com/gpu) and PODS pending pods (500m cpu, 512Mi; every
 * 4th also one GPU) applied, then sandbox_run until all are placed, on a
 * virtual clock. Every write goes through the in-process API and back
 * through the informers' handlers, as simulate's do.
 *
 *   sandbox_bench [NODES (1000)] [PODS (10000)] [--batch B (1000)]
 *
 * Pods arrive in batches of B, a run after each (as a workload's arrivals).
 * Then ten virtual seconds pass (one housekeeping each).
 * Last line: nodes=N pods=M bound=B load_s=L run_s=R pods_per_s=P
 * housekeep_ms=H cpu_s=C */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sandbox/sandbox.h"

#include "bench_sandbox.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static void on_action(void *ud, const sb_action_t *a)
{
    if (a->kind == SB_BIND)
        ++*(long *)ud;
}

int main(int argc, char **argv)
{
    int nodes = 1000, pods = 10000, batch = 1000, pos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (pos++ == 0)
            nodes = atoi(argv[i]);
        else
            pods = atoi(argv[i]);
    }
    if (nodes < 1 || pods < 0 || batch < 1) {
        fprintf(stderr, "usage: sandbox_bench [NODES] [PODS] [--batch B]\n");
        return 2;
    }
    long bound = 0;
    char err[256];
    sandbox_opts_t o = { NULL, 1, 1800000000000LL, on_action, &bound };
    sandbox_t *sb = sandbox_new(&o, err, sizeof err);
    if (!sb) {
        fprintf(stderr, "sandbox: %s\n", err);
        return 2;
    }
    double t0 = now_s();
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof name, "node-%05d", i);
        bench_apply(sb, json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s, s:s}}}",
                                  "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels",
                                  "kubernetes.io/hostname", name, "status", "capacity", "cpu", "32", "memory", "128Gi",
                                  "pods", "110", "nvidia.com/gpu", "8", "allocatable", "cpu", "32", "memory", "128Gi",
                                  "pods", "110", "nvidia.com/gpu", "8"));
    }
    double load = now_s() - t0, run = 0;
    for (int i = 0; i < pods;) {
        double a = now_s();
        for (int k = 0; k < batch && i < pods; k++, i++) {
            char name[32];
            snprintf(name, sizeof name, "pod-%06d", i);
            json_t *req = json_pack("{s:s, s:s}", "cpu", "500m", "memory", "512Mi");
            if (i % 4 == 0)
                json_object_set_new(req, "nvidia.com/gpu", json_string("1"));
            bench_apply(sb, json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:[{s:s, s:s, s:{s:o, s:O}}]}}", "apiVersion",
                                      "v1", "kind", "Pod", "metadata", "name", name, "namespace", "bench", "spec",
                                      "schedulerName", "ai-scheduler", "containers", "name", "c", "image", "x",
                                      "resources", "requests", req, "limits", req));
        }
        double b = now_s();
        load += b - a;
        sandbox_run(sb);
        run += now_s() - b;
    }
    /* The once-a-second housekeeping on the placed cluster. */
    double h = now_s();
    for (int i = 1; i <= 10; i++)
        sandbox_advance(sb, 1800000000000LL + i * 1000);
    double hk = (now_s() - h) / 10;
    printf("nodes=%d pods=%d bound=%ld load_s=%.2f run_s=%.2f pods_per_s=%.0f housekeep_ms=%.1f cpu_s=%.2f\n", nodes,
           pods, bound, load, run, run > 0 ? (double)bound / run : 0.0, hk * 1000, cpu_s());
    sandbox_free(sb);
    return bound == pods ? 0 : 1;
}
