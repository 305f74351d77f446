/* pools_algo_bench.c -- per-pool scheduling threads, in process: the real
 * cache (one writer-preferring rwlock, node partition by pool) and the real
 * framework, without the API server. Each pool places its pods on its own
 * nodes as a pool thread does (filter + score under the read lock, reserve
 * with cache_assume: the read lock plus the node's stripe). Measures the pools one after another, then all at
 * once in their own threads, and prints both times and their ratio: what the
 * per-pool threads buy where the API server is not the limit.
 *
 *   pools_algo_bench [POOLS (4)] [NODES_PER_POOL (250)] [PODS_PER_POOL (1000)]
 *
 * Last line: pools=P sequential_s=S parallel_s=T ratio=T/S cpus=N */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "framework/framework.h"
#include "scheduler/capabilities.h"

typedef struct pool_job {
    cache_t *cache;
    framework_t *fw;
    int pool, npods, placed;
    pod_t **pods;
} pool_job_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int by_label(void *ud, const node_t *n)
{
    (void)ud;
    const char *v = labels_get(&n->labels, "pool");
    return v ? atoi(v) : -1;
}

static void *parse_or_die(json_t *obj, int is_pod)
{
    char err[256] = "";
    void *o = is_pod ? (void *)pod_from_json(obj, err, sizeof err) : (void *)node_from_json(obj, err, sizeof err);
    json_decref(obj);
    if (!o) {
        fprintf(stderr, "pools_algo_bench: %s\n", err);
        exit(2);
    }
    return o;
}

static node_t *make_node(int pool, int i)
{
    char name[64], pl[16];
    snprintf(name, sizeof name, "p%d-node-%d", pool, i);
    snprintf(pl, sizeof pl, "%d", pool);
    json_t *res =
        json_pack("{s:s, s:s, s:s, s:s}", "cpu", "32", "memory", "128Gi", "nvidia.com/gpu", "8", "pods", "110");
    json_t *obj = json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:O, s:O}}", "metadata", "name", name, "uid", name, "labels",
                            "pool", pl, "status", "capacity", res, "allocatable", res);
    json_decref(res);
    return parse_or_die(obj, 0);
}

static pod_t *make_pod(int pool, int i)
{
    char name[64];
    snprintf(name, sizeof name, "p%d-pod-%d", pool, i);
    json_t *req = i % 4 == 0 ? json_pack("{s:s, s:s, s:s}", "cpu", "500m", "memory", "512Mi", "nvidia.com/gpu", "1")
                             : json_pack("{s:s, s:s}", "cpu", "500m", "memory", "512Mi");
    json_t *obj = json_pack("{s:{s:s, s:s, s:s}, s:{s:s, s:[{s:s, s:{s:o}}]}}", "metadata", "name", name, "namespace",
                            "bench", "uid", name, "spec", "schedulerName", "ai-scheduler", "containers", "name", "c",
                            "resources", "requests", req);
    return parse_or_die(obj, 1);
}

static int refit(void *ud, node_info_t *ni)
{
    (void)ud;
    (void)ni;
    return 1; /* nothing else changes these nodes here */
}

/* One pool thread's work: as cycle.c's decide() and assume(). */
static void *run_pool(void *arg)
{
    pool_job_t *j = arg;
    node_info_t **feasible = calloc(4096, sizeof(*feasible));
    int64_t *scores = calloc(4096, sizeof(*scores));
    fw_status_t st;
    for (int p = 0; p < j->npods; p++) {
        pod_t *pod = j->pods[p];
        cycle_state_t *cs = cycle_state_new();
        framework_pre_filter(j->fw, cs, pod, &st);
        cache_rdlock(j->cache);
        int n = 0, pool_n = 0, nf = 0;
        node_info_t *const *nodes = cache_nodes_locked(j->cache, &n);
        for (int i = 0; i < n; i++)
            pool_n += nodes[i]->pool == j->pool;
        int want = framework_num_feasible_to_find(j->fw, pool_n);
        for (int i = 0; i < n && nf < want && nf < 4096; i++) {
            node_info_t *ni = nodes[(p + i) % n];
            if (ni->pool != j->pool)
                continue;
            fw_status_reset(&st);
            if (framework_filter(j->fw, cs, pod, ni, &st) == FW_SUCCESS)
                feasible[nf++] = ni;
        }
        char *best = NULL;
        uint64_t gen = 0;
        if (nf) {
            framework_score(j->fw, cs, pod, feasible, nf, scores);
            int b = 0;
            for (int k = 1; k < nf; k++)
                if (scores[k] > scores[b])
                    b = k;
            best = strdup(feasible[b]->name);
            gen = feasible[b]->generation;
        }
        cache_unlock(j->cache);
        if (best) {
            if (cache_assume(j->cache, pod, best, j->pool, gen, refit, j) == 0)
                j->placed++;
            free(best);
        }
        cycle_state_free(cs);
    }
    free(feasible);
    free(scores);
    return NULL;
}

static cache_t *fresh_cache(int pools, int nodes_per_pool, pod_t ***pods, int pods_per_pool)
{
    cache_t *c = cache_new(by_label, NULL);
    for (int p = 0; p < pools; p++) {
        for (int i = 0; i < nodes_per_pool; i++) {
            node_t *n = make_node(p, i);
            cache_upsert_node(c, n);
            node_unref(n);
        }
        for (int i = 0; i < pods_per_pool; i++) {
            cache_upsert_pod(c, pods[p][i], NULL);
        }
    }
    return c;
}

int main(int argc, char **argv)
{
    capabilities_init();
    int pools = argc > 1 ? atoi(argv[1]) : 4;
    int npp = argc > 2 ? atoi(argv[2]) : 250;
    int ppp = argc > 3 ? atoi(argv[3]) : 1000;
    if (pools < 1 || pools > 64 || npp < 1 || ppp < 1) {
        fprintf(stderr, "usage: pools_algo_bench [POOLS] [NODES_PER_POOL] [PODS_PER_POOL]\n");
        return 2;
    }
    fw_config_t cfg;
    fw_config_default(&cfg);
    framework_t *fw = framework_new(&cfg);
    pod_t ***pods = calloc((size_t)pools, sizeof(*pods));
    for (int p = 0; p < pools; p++) {
        pods[p] = calloc((size_t)ppp, sizeof(**pods));
        for (int i = 0; i < ppp; i++)
            pods[p][i] = make_pod(p, i);
    }
    pool_job_t *jobs = calloc((size_t)pools, sizeof(*jobs));
    int placed_seq = 0, placed_par = 0;

    /* Sequential: one pool after another, one thread. */
    cache_t *c = fresh_cache(pools, npp, pods, ppp);
    double t0 = now_s();
    for (int p = 0; p < pools; p++) {
        jobs[p] = (pool_job_t){ c, fw, p, ppp, 0, pods[p] };
        run_pool(&jobs[p]);
        placed_seq += jobs[p].placed;
    }
    double seq = now_s() - t0;
    cache_free(c);

    /* Parallel: every pool in its own thread, as the scheduler runs them. */
    c = fresh_cache(pools, npp, pods, ppp);
    pthread_t *th = calloc((size_t)pools, sizeof(*th));
    t0 = now_s();
    for (int p = 0; p < pools; p++) {
        jobs[p] = (pool_job_t){ c, fw, p, ppp, 0, pods[p] };
        pthread_create(&th[p], NULL, run_pool, &jobs[p]);
    }
    for (int p = 0; p < pools; p++) {
        pthread_join(th[p], NULL);
        placed_par += jobs[p].placed;
    }
    double par = now_s() - t0;
    cache_free(c);

    for (int p = 0; p < pools; p++) {
        for (int i = 0; i < ppp; i++)
            pod_unref(pods[p][i]);
        free(pods[p]);
    }
    free(pods);
    free(jobs);
    free(th);
    framework_free(fw);
    printf(
        "pools=%d nodes_per_pool=%d pods_per_pool=%d placed=%d/%d sequential_s=%.3f parallel_s=%.3f ratio=%.2f cpus=%ld\n",
        pools, npp, ppp, placed_seq, placed_par, seq, par, par / seq, sysconf(_SC_NPROCESSORS_ONLN));
    return placed_seq == pools * ppp && placed_par == pools * ppp ? 0 : 1;
}
