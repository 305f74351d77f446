/* dashboard_bench.c -- the dashboard's routes at the size: NODES
 * nodes (4 pools; 32 cpu, 128Gi, 8 GPUs; each runs two 1-GPU pods and
 * every 4th a 0.5-GPU fraction on a shared slot) and PENDING pending pods
 * (50 queues, every 10th a member of a 10-pod gang) in a sandbox; then
 * each route answered RUNS times (dashboard_serve, what the HTTP route
 * calls) and its best and median time and body size printed. Pending pods
 * are applied without a cycle (none tried yet): the routes read them as
 * they would any pending pod.
 *
 *   dashboard_bench [NODES (10000)] [PENDING (100000)] [RUNS (5)]
 *
 * One line per route: route=R ms_median=M ms_best=B bytes=N */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dashboard/dashboard.h"
#include "gpu/gpu.h"
#include "sandbox/sandbox.h"

#include "bench_sandbox.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static json_t *pod(const char *name, const char *cpu, const char *gpus, const char *pool, const char *queue,
                   const char *node, int age_s)
{
    char ts[32];
    time_t t = 1800000000 - age_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *p =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}, s:{s:s}}, s:{s:s, s:[{s:s, s:s, s:{s:{s:s, s:s}}}]},"
                  " s:{s:s}}",
                  "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "bench",
                  "creationTimestamp", ts, "labels", "resource.aibee.cn/queue", queue, "annotations",
                  "resource.aibee.cn/pool", pool, "spec", "schedulerName", "ai-scheduler", "containers", "name", "c",
                  "image", "x", "resources", "requests", "cpu", cpu, "memory", "1Gi", "status", "phase", "Pending");
    if (gpus) {
        json_t *res =
            json_object_get(json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0), "resources");
        json_object_set_new(json_object_get(res, "requests"), "nvidia.com/gpu", json_string(gpus));
        json_object_set_new(res, "limits", json_pack("{s:s}", "nvidia.com/gpu", gpus));
    }
    if (node) {
        json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node));
        json_object_set_new(json_object_get(p, "status"), "phase", json_string("Running"));
    }
    return p;
}

static scheduler_t *leading(void *ud)
{
    return sandbox_scheduler(ud);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void measure(dashboard_t *d, const char *path, const char *query, int runs)
{
    double *t = calloc((size_t)runs, sizeof *t);
    size_t bytes = 0;
    int code = 0;
    for (int i = 0; i < runs; i++) {
        char *body = NULL;
        const char *ctype;
        double t0 = now_ms();
        code = dashboard_serve(d, path, query, &body, &ctype);
        t[i] = now_ms() - t0;
        bytes = body ? strlen(body) : 0;
        free(body);
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_d);
    printf("route=%s%s%s status=%d ms_median=%.1f ms_best=%.1f bytes=%zu\n", path, query[0] ? "?" : "", query, code,
           t[runs / 2], t[0], bytes);
    free(t);
}

int main(int argc, char **argv)
{
    int nodes = argc > 1 ? atoi(argv[1]) : 10000, pending = argc > 2 ? atoi(argv[2]) : 100000;
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    if (nodes < 1 || pending < 0 || runs < 1) {
        fprintf(stderr, "usage: dashboard_bench [NODES] [PENDING] [RUNS]\n");
        return 2;
    }
    char err[256] = "";
    scheduler_opts_t so;
    scheduler_opts_default(&so);
    sandbox_opts_t o = { &so, 7, 1800000000000LL, NULL, NULL };
    sandbox_t *sb = sandbox_new(&o, err, sizeof err);
    if (!sb) {
        fprintf(stderr, "sandbox: %s\n", err);
        return 1;
    }
    static const char *const pools[4] = { "p0", "p1", "p2", "p3" };
    double t0 = now_ms();
    for (int i = 0; i < 4; i++)
        bench_apply(sb, json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:{s:s}}}}", "apiVersion", "resource.aibee.cn/v1alpha1",
                                  "kind", "Pool", "metadata", "name", pools[i], "spec", "nodeSelector", "matchLabels",
                                  "pool", pools[i]));
    char name[64], q[32];
    for (int i = 0; i < 50; i++) {
        snprintf(q, sizeof q, "q%d", i);
        bench_apply(sb, json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:{s:i}}}}", "apiVersion", "resource.aibee.cn/v1alpha1",
                                  "kind", "Queue", "metadata", "name", q, "spec", "resources", "gpu", "quota", 100));
    }
    for (int i = 0; i < nodes; i++) {
        snprintf(name, sizeof name, "node-%05d", i);
        bench_apply(sb, json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s, s:s}}}",
                                  "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels", "pool",
                                  pools[i % 4], "status", "capacity", "cpu", "32", "memory", "128Gi", "pods", "110",
                                  "nvidia.com/gpu", "8", "allocatable", "cpu", "32", "memory", "128Gi", "pods", "110",
                                  "nvidia.com/gpu", "8"));
        for (int k = 0; k < 2; k++) {
            char pn[64];
            snprintf(pn, sizeof pn, "run-%05d-%d", i, k);
            snprintf(q, sizeof q, "q%d", (i + k) % 50);
            bench_apply(sb, pod(pn, "2", "1", pools[i % 4], q, name, 3600));
        }
        if (i % 4 == 0) {
            char pn[64];
            snprintf(pn, sizeof pn, "frac-%05d", i);
            json_t *p = pod(pn, "1", NULL, pools[i % 4], "q0", name, 3600);
            json_t *ann = json_object_get(json_object_get(p, "metadata"), "annotations");
            json_object_set_new(ann, GPU_ANN_FRACTION, json_string("0.5"));
            json_object_set_new(ann, GPU_ANN_INDEX, json_string("2"));
            bench_apply(sb, p);
        }
    }
    for (int i = 0; i < pending / 100; i++) {
        snprintf(name, sizeof name, "gang-%05d", i);
        bench_apply(sb,
                    json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i}}", "apiVersion", "scheduling.x-k8s.io/v1alpha1", "kind",
                              "PodGroup", "metadata", "name", name, "namespace", "bench", "spec", "minMember", 10));
    }
    for (int i = 0; i < pending; i++) {
        snprintf(name, sizeof name, "pend-%06d", i);
        snprintf(q, sizeof q, "q%d", i % 50);
        json_t *p = pod(name, "1", (i % 3) ? NULL : "1", pools[i % 4], q, NULL, i % 7200);
        if (i % 10 == 0) {
            char g[64];
            snprintf(g, sizeof g, "gang-%05d", (i / 10) % (pending / 100 > 0 ? pending / 100 : 1));
            json_object_set_new(json_object_get(json_object_get(p, "metadata"), "labels"),
                                "scheduling.x-k8s.io/pod-group", json_string(g));
        }
        bench_apply(sb, p);
    }
    printf("loaded nodes=%d pending=%d in %.0f ms\n", nodes, pending, now_ms() - t0);
    dashboard_opts_t dopts = { .leading = leading, .ud = sb, .version = "bench", .identity = "bench" };
    dashboard_t *d = dashboard_new(&dopts);
    /* One housekeeping: every pool's fair shares refreshed, as the
     * scheduler's second timer does, so the history has numbers. */
    scheduler_housekeep(sandbox_scheduler(sb));
    dashboard_history_tick(d, 1800000000000LL);
    measure(d, "/api/v1/info", "", runs);
    measure(d, "/api/v1/pending", "sort=wait&limit=100", runs);
    measure(d, "/api/v1/pending", "sort=name&limit=500&q=pend-0999", runs);
    measure(d, "/api/v1/gangs", "limit=100", runs);
    measure(d, "/api/v1/nodes/map", "", runs);
    measure(d, "/api/v1/nodes", "limit=100", runs);
    measure(d, "/api/v1/overview", "", runs);
    measure(d, "/api/v1/queues", "", runs);
    measure(d, "/api/v1/queues/history", "queue=q1&resource=gpu", runs);
    dashboard_free(d);
    sandbox_free(sb);
    return 0;
}
