/* algo_bench.c -- the scheduling algorithm alone, in process: no API server,
 * no informers, no binding. Builds NODES node_info_t (32 cpu, 128Gi,
 * 8 nvidia.com/gpu, 110 pods) and places PODS pending pods (500m cpu, 512Mi;
 * every 4th also one GPU) one after the other, as kube-scheduler's
 * schedulePod does: PreFilter; Filter from a rotating start node until
 * framework_num_feasible_to_find() nodes fit; Score those; take the best;
 * node_info_add_pod() so the next pod sees the placement.
 *
 *   algo_bench [NODES (1000)] [PODS (5000)] [--gpu-every K (4)] [--repeat R (1)]
 *
 * Last line of output (parsed by bench.sh / report.py):
 *   nodes=N pods=M scheduled=S unschedulable=U seconds=T pods_per_s=R
 *   pods_per_cpu_s=P rss_kb=K cpu_s=C
 * (pods_per_s is wall clock, best of the repeats; pods_per_cpu_s divides by
 * the process's CPU time, which is steadier on a busy machine.)
 * Exit status 0 when every pod was placed. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "api/types.h"
#include "framework/framework.h"
#include "framework/nodeinfo.h"
#include "scheduler/capabilities.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static node_t *make_node(int i)
{
    char name[64], uid[64];
    snprintf(name, sizeof name, "bench-node-%d", i);
    snprintf(uid, sizeof uid, "00000000-0000-0000-0000-%012d", i);
    json_t *res = json_pack("{s:s, s:s, s:s, s:s, s:s}", "cpu", "32", "memory", "128Gi", "nvidia.com/gpu", "8", "pods",
                            "110", "ephemeral-storage", "500Gi");
    json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s, s:s, s:s}}, s:{}, s:{s:O, s:O}}", "apiVersion", "v1",
                            "kind", "Node", "metadata", "name", name, "uid", uid, "resourceVersion", "1", "labels",
                            "kubernetes.io/hostname", name, "kubernetes.io/os", "linux", "bench", "true", "spec",
                            "status", "capacity", res, "allocatable", res);
    json_decref(res);
    char err[256] = "";
    node_t *n = obj ? node_from_json(obj, err, sizeof err) : NULL;
    json_decref(obj);
    if (!n) {
        fprintf(stderr, "algo_bench: node_from_json: %s\n", err);
        exit(2);
    }
    return n;
}

static pod_t *make_pod(int i, int gpu_every)
{
    char name[64], uid[64];
    snprintf(name, sizeof name, "p-%d", i);
    snprintf(uid, sizeof uid, "10000000-0000-0000-0000-%012d", i);
    int gpu = gpu_every > 0 && i % gpu_every == 0;
    json_t *req = json_pack("{s:s, s:s}", "cpu", "500m", "memory", "512Mi");
    json_t *lim = json_object();
    if (gpu) {
        json_object_set_new(req, "nvidia.com/gpu", json_string("1"));
        json_object_set_new(lim, "nvidia.com/gpu", json_string("1"));
    }
    json_t *obj =
        json_pack("{s:s, s:s,"
                  " s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}},"
                  " s:{s:s, s:i, s:[{s:s, s:s, s:{s:o, s:o}}]},"
                  " s:{s:s}}",
                  "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", "bench", "uid", uid,
                  "resourceVersion", "1", "creationTimestamp", "2026-01-01T00:00:00Z", "labels", "app", "bench", "spec",
                  "schedulerName", "ai-scheduler", "terminationGracePeriodSeconds", 0, "containers", "name", "c",
                  "image", "pause", "resources", "requests", req, "limits", lim, "status", "phase", "Pending");
    char err[256] = "";
    pod_t *p = obj ? pod_from_json(obj, err, sizeof err) : NULL;
    json_decref(obj);
    if (!p) {
        fprintf(stderr, "algo_bench: pod_from_json: %s\n", err);
        exit(2);
    }
    return p;
}

int main(int argc, char **argv)
{
    capabilities_init();
    int nnodes = 1000, npods = 5000, gpu_every = 4, repeat = 1, pos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpu-every") && i + 1 < argc)
            gpu_every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (argv[i][0] != '-' && pos == 0) {
            nnodes = atoi(argv[i]);
            pos++;
        } else if (argv[i][0] != '-' && pos == 1) {
            npods = atoi(argv[i]);
            pos++;
        } else {
            fprintf(stderr, "usage: algo_bench [NODES] [PODS] [--gpu-every K] [--repeat R]\n");
            return 2;
        }
    }
    if (nnodes < 1 || npods < 1 || repeat < 1) {
        fprintf(stderr, "algo_bench: bad sizes\n");
        return 2;
    }

    fw_config_t cfg;
    fw_config_default(&cfg);
    framework_t *fw = framework_new(&cfg);
    if (!fw) {
        fprintf(stderr, "algo_bench: framework_new failed\n");
        return 2;
    }

    pod_t **pods = calloc((size_t)npods, sizeof *pods);
    for (int i = 0; i < npods; i++)
        pods[i] = make_pod(i, gpu_every);
    node_info_t **nodes = calloc((size_t)nnodes, sizeof *nodes);
    node_info_t **feasible = calloc((size_t)nnodes, sizeof *feasible);
    int64_t *scores = calloc((size_t)nnodes, sizeof *scores);
    if (!pods || !nodes || !feasible || !scores) {
        perror("calloc");
        return 2;
    }

    double best_rate = 0, best_cpu_rate = 0, total_secs = 0;
    int scheduled = 0, unsched = 0;
    for (int r = 0; r < repeat; r++) {
        for (int i = 0; i < nnodes; i++) {
            node_t *n = make_node(i);
            nodes[i] = node_info_new(n->name);
            node_info_set_node(nodes[i], n);
            node_unref(n);
        }
        scheduled = unsched = 0;
        int next_start = 0;
        int to_find = framework_num_feasible_to_find(fw, nnodes);
        if (to_find < 1 || to_find > nnodes)
            to_find = nnodes;
        fw_status_t st;
        double t0 = now_s(), c0 = cpu_s();
        for (int p = 0; p < npods; p++) {
            pod_t *pod = pods[p];
            cycle_state_t *cs = cycle_state_new();
            fw_status_reset(&st);
            int nf = 0;
            if (framework_pre_filter(fw, cs, pod, &st) == FW_SUCCESS) {
                int checked = 0;
                for (; checked < nnodes && nf < to_find; checked++) {
                    node_info_t *ni = nodes[(next_start + checked) % nnodes];
                    fw_status_reset(&st);
                    if (framework_filter(fw, cs, pod, ni, &st) == FW_SUCCESS)
                        feasible[nf++] = ni;
                }
                next_start = (next_start + checked) % nnodes;
            }
            if (nf == 0) {
                unsched++;
            } else {
                int best = 0;
                if (nf > 1) {
                    framework_score(fw, cs, pod, feasible, nf, scores);
                    for (int k = 1; k < nf; k++)
                        if (scores[k] > scores[best])
                            best = k;
                }
                node_info_add_pod(feasible[best], pod);
                scheduled++;
            }
            cycle_state_free(cs);
        }
        double secs = now_s() - t0, csecs = cpu_s() - c0;
        total_secs += secs;
        double rate = secs > 0 ? (double)scheduled / secs : 0;
        double crate = csecs > 0 ? (double)scheduled / csecs : 0;
        if (rate > best_rate)
            best_rate = rate;
        if (crate > best_cpu_rate)
            best_cpu_rate = crate;
        printf("run %d: %d pods on %d nodes in %.3f s wall, %.3f s CPU: %.0f pods/s wall, %.0f pods per CPU-second"
               " (%d unschedulable, %d feasible nodes sought per pod)\n",
               r + 1, scheduled, nnodes, secs, csecs, rate, crate, unsched, to_find);
        for (int i = 0; i < nnodes; i++)
            node_info_free(nodes[i]);
    }

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                 (double)ru.ru_stime.tv_usec / 1e6;
    printf(
        "nodes=%d pods=%d scheduled=%d unschedulable=%d seconds=%.3f pods_per_s=%.0f pods_per_cpu_s=%.0f rss_kb=%ld cpu_s=%.2f\n",
        nnodes, npods, scheduled, unsched, total_secs / repeat, best_rate, best_cpu_rate, ru.ru_maxrss, cpu);

    for (int i = 0; i < npods; i++)
        pod_unref(pods[i]);
    free(pods);
    free(nodes);
    free(feasible);
    free(scores);
    framework_free(fw);
    return unsched == 0 ? 0 : 1;
}
