/* dra_bench.c -- DRA allocation's speed against the extended resource it
 * replaces (issue 36's bar: at least half the pods/s), in process on the
 * sandbox (pkg/sandbox), on a virtual clock.
 *
 *   dra_bench [NODES (1000)] [PODS (5000)] [--devices D (8)] [--batch B (1000)]
 *             [--repeat R (3)] [--only ext|dra]
 *
 * Each run R times, A and B alternating (odd rounds B first), each
 * sandbox fresh; the best pods/s of each counts (the machine is shared).
 * --only: that run alone, e.g. under a profiler; no ratio then.
 * Run A: NODES nodes (32 cpu, 128Gi, 110 pods, D nvidia.com/gpu) and PODS
 * pending pods of 500m cpu, 512Mi and one nvidia.com/gpu.
 * Run B, a fresh sandbox: the same nodes without nvidia.com/gpu; a
 * DeviceClass gpu.example.com (selector device.driver == "gpu.example.com");
 * per node one node-local ResourceSlice (its own pool) of D GPUs with the
 * attributes a GPU driver publishes (model, uuid, numa, driverVersion) and
 * a memory capacity; PODS ResourceClaims of one device with the claim
 * selector device.attributes["gpu.example.com"].model == "A100"; the same
 * pods, each with one claim instead of the GPU.
 * Pods (and their claims) arrive in batches of B, sandbox_run after each;
 * only the runs are timed. Run B is then checked: every claim allocated,
 * no device in two claims (exit 1 if not, or if a pod is left unbound).
 *
 * CEL: the evaluations run B made (dra_cel_evals), the cost of one
 * (a tight loop of both selectors on a device), and their share of run B's
 * CPU time.
 * Last line: nodes=N pods=M devices=D repeat=R ext_bound= ext_run_s= ext_pods_per_s=
 * ext_cpu_s= dra_bound= dra_run_s= dra_pods_per_s= dra_cpu_s=
 * dra_claims_bad= ratio= cpu_ratio= cel_evals= cel_ns_per_eval= cel_share_of_cpu=
 * (the best run of each; ratio: B's pods/s over A's; cpu_ratio: the least
 * CPU seconds of an A run over a B run's, steadier on a busy machine; claims_bad: the most
 * claims of a run not allocated one device of their pod's node, or sharing
 * one; share in percent). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dra/cel.h"
#include "sandbox/sandbox.h"
#include "util/hashmap.h"
#include "util/util.h"

#include "bench_sandbox.h"

#define T0        1800000000000LL
#define CLASS_SEL "device.driver == \"gpu.example.com\""
#define CLAIM_SEL "device.attributes[\"gpu.example.com\"].model == \"A100\""
#define CEL_LOOPS 2000000

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

static void on_action(void *ud, const sb_action_t *a)
{
    if (a->kind == SB_BIND)
        ++*(long *)ud;
}

typedef struct run {
    long bound;
    double run_s, cpu_s;
} run_t;

static json_t *node_obj(int i, int devices, int ext)
{
    char name[32];
    snprintf(name, sizeof name, "node-%05d", i);
    json_t *res = json_pack("{s:s, s:s, s:s}", "cpu", "32", "memory", "128Gi", "pods", "110");
    if (ext)
        json_object_set_new(res, "nvidia.com/gpu", json_integer(devices));
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:O, s:o, s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind", "Node",
                     "metadata", "name", name, "labels", "kubernetes.io/hostname", name, "status", "capacity", res,
                     "allocatable", res, "conditions", "type", "Ready", "status", "True");
}

/* Node i's slice: pool node-i, devices gpu-0.. as a GPU driver publishes them. */
static json_t *slice_obj(int i, int devices)
{
    char node[32], name[48];
    snprintf(node, sizeof node, "node-%05d", i);
    snprintf(name, sizeof name, "%s-gpu.example.com", node);
    json_t *devs = json_array();
    for (int d = 0; d < devices; d++) {
        char dn[16], uuid[48];
        snprintf(dn, sizeof dn, "gpu-%d", d);
        snprintf(uuid, sizeof uuid, "GPU-%08x-%04x-0000-0000-%012d", i, d, i * devices + d);
        json_array_append_new(devs, json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:i}, s:{s:s}}, s:{s:{s:s}}}", "name", dn,
                                              "attributes", "model", "string", "A100", "uuid", "string", uuid, "numa",
                                              "int", d * 2 / (devices > 1 ? devices : 1), "driverVersion", "version",
                                              "550.54.15", "capacity", "memory", "value", "80Gi"));
    }
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:{s:s, s:i, s:i}, s:o}}", "apiVersion", "resource.k8s.io/v1",
                     "kind", "ResourceSlice", "metadata", "name", name, "spec", "driver", "gpu.example.com", "nodeName",
                     node, "pool", "name", node, "generation", 1, "resourceSliceCount", 1, "devices", devs);
}

static json_t *claim_obj(int i)
{
    char name[32];
    snprintf(name, sizeof name, "claim-%06d", i);
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{s:[{s:s, s:{s:s, s:i, s:[{s:{s:s}}]}}]}}}", "apiVersion",
                     "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata", "name", name, "namespace", "bench",
                     "spec", "devices", "requests", "name", "gpu", "exactly", "deviceClassName", "gpu.example.com",
                     "count", 1, "selectors", "cel", "expression", CLAIM_SEL);
}

/* Pod i: 500m and 512Mi, and one GPU (ext) or the claim claim-i. */
static json_t *pod_obj(int i, int ext)
{
    char name[32], claim[32];
    snprintf(name, sizeof name, "pod-%06d", i);
    snprintf(claim, sizeof claim, "claim-%06d", i);
    json_t *req = json_pack("{s:s, s:s}", "cpu", "500m", "memory", "512Mi");
    if (ext)
        json_object_set_new(req, "nvidia.com/gpu", json_string("1"));
    json_t *p = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:[{s:s, s:s, s:{s:O, s:o}}]}, s:{s:s}}", "apiVersion",
                          "v1", "kind", "Pod", "metadata", "name", name, "namespace", "bench", "spec", "schedulerName",
                          "ai-scheduler", "containers", "name", "c", "image", "x", "resources", "requests", req,
                          "limits", req, "status", "phase", "Pending");
    if (!ext)
        json_object_set_new(json_object_get(p, "spec"), "resourceClaims",
                            json_pack("[{s:s, s:s}]", "name", "gpu", "resourceClaimName", claim));
    return p;
}

static sandbox_t *sb_make(long *bound)
{
    char err[256];
    sandbox_opts_t o = { NULL, 1, T0, on_action, bound };
    sandbox_t *sb = sandbox_new(&o, err, sizeof err);
    if (!sb) {
        fprintf(stderr, "sandbox: %s\n", err);
        exit(2);
    }
    return sb;
}

/* One run: the cluster loaded, then the pods in batches; ext: A, else B.
 * The sandbox is returned for B's check. */
static sandbox_t *run(int ext, int nodes, int pods, int devices, int batch, run_t *r)
{
    memset(r, 0, sizeof(*r));
    sandbox_t *sb = sb_make(&r->bound);
    if (!ext)
        bench_apply(sb, json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:{s:s}}]}}", "apiVersion", "resource.k8s.io/v1", "kind",
                                  "DeviceClass", "metadata", "name", "gpu.example.com", "spec", "selectors", "cel",
                                  "expression", CLASS_SEL));
    for (int i = 0; i < nodes; i++) {
        bench_apply(sb, node_obj(i, devices, ext));
        if (!ext)
            bench_apply(sb, slice_obj(i, devices));
    }
    for (int i = 0; i < pods;) {
        for (int k = 0; k < batch && i < pods; k++, i++) {
            if (!ext)
                bench_apply(sb, claim_obj(i));
            bench_apply(sb, pod_obj(i, ext));
        }
        double w = now_s(), c = cpu_s();
        sandbox_run(sb);
        r->run_s += now_s() - w;
        r->cpu_s += cpu_s() - c;
    }
    /* A pod put back (a conflict, a backoff) comes again on the clock. */
    for (int s = 1; s <= 60 && r->bound < pods && sandbox_next_due(sb) > 0; s++) {
        double w = now_s(), c = cpu_s();
        sandbox_advance(sb, T0 + s * 1000LL);
        r->run_s += now_s() - w;
        r->cpu_s += cpu_s() - c;
    }
    return sb;
}

/* Every claim allocated to one device, on its pod's node, none twice: the
 * count of claims that are not (0: all good). */
static int check_claims(sandbox_t *sb, int pods)
{
    hashmap_t *seen = hashmap_new((size_t)pods * 2);
    int bad = 0;
    for (int i = 0; i < pods; i++) {
        char name[32], pname[32];
        snprintf(name, sizeof name, "claim-%06d", i);
        snprintf(pname, sizeof pname, "pod-%06d", i);
        json_t *c = sandbox_get(sb, "ResourceClaim", "bench", name);
        json_t *res = json_object_get(
            json_object_get(json_object_get(json_object_get(c, "status"), "allocation"), "devices"), "results");
        json_t *p = sandbox_get(sb, "Pod", "bench", pname);
        const char *node = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        if (json_array_size(res) != 1) {
            if (bad++ < 5)
                fprintf(stderr, "claim %s: %zu devices allocated, want 1\n", name, json_array_size(res));
            continue;
        }
        json_t *r0 = json_array_get(res, 0);
        const char *pool = json_string_value(json_object_get(r0, "pool")),
                   *dev = json_string_value(json_object_get(r0, "device"));
        char key[128];
        snprintf(key, sizeof key, "%s/%s", pool ? pool : "?", dev ? dev : "?");
        if (!node || !pool || strcmp(node, pool) != 0) {
            if (bad++ < 5)
                fprintf(stderr, "claim %s: device %s, pod on %s\n", name, key, node ? node : "no node");
            continue;
        }
        if (hashmap_get(seen, key)) {
            if (bad++ < 5)
                fprintf(stderr, "claim %s: device %s also in %s\n", name, key, (const char *)hashmap_get(seen, key));
            continue;
        }
        hashmap_put(seen, key, util_strdup(name));
    }
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(seen, &it, &k, &v);)
        free(v);
    hashmap_free(seen);
    return bad;
}

/* ns per evaluation: both selectors on a device like the slices' (the
 * claim's matches, so neither returns early). */
static double cel_ns_per_eval(void)
{
    char err[256];
    dra_cel_t *cls = dra_cel_compile(CLASS_SEL, err, sizeof err), *clm = dra_cel_compile(CLAIM_SEL, err, sizeof err);
    if (!cls || !clm) {
        fprintf(stderr, "cel: %s\n", err);
        exit(2);
    }
    dra_attr_t attrs[] = {
        { "gpu.example.com/model", DRA_ATTR_STRING, "A100", 0, 0 },
        { "gpu.example.com/uuid", DRA_ATTR_STRING, "GPU-00000000-0000-0000-0000-000000000000", 0, 0 },
        { "gpu.example.com/numa", DRA_ATTR_INT, NULL, 0, 0 },
        { "gpu.example.com/driverVersion", DRA_ATTR_VERSION, "550.54.15", 0, 0 },
    };
    dra_capacity_t caps[] = { { "gpu.example.com/memory", "80Gi", 80LL * 1024 * 1024 * 1024 * 1000 } };
    dra_device_t dev = { "gpu.example.com", "node-00000", "gpu-0", attrs, 4, caps, 1, 0 };
    int ok = 0;
    double c = cpu_s();
    for (int i = 0; i < CEL_LOOPS; i++)
        ok += dra_cel_eval((i & 1) ? clm : cls, &dev, err, sizeof err);
    double ns = (cpu_s() - c) * 1e9 / CEL_LOOPS;
    dra_cel_free(cls);
    dra_cel_free(clm);
    if (ok != CEL_LOOPS) {
        fprintf(stderr, "cel: the device matched %d of %d evaluations\n", ok, CEL_LOOPS);
        exit(2);
    }
    return ns;
}

static double rate(const run_t *r)
{
    return r->run_s > 0 ? (double)r->bound / r->run_s : 0;
}

/* One run of A (ext) or B, printed; for B the claims are checked (the
 * count of wrong ones returned) and the CEL evaluations counted. */
static int one(int ext, int nodes, int pods, int devices, int batch, run_t *r, uint64_t *evals)
{
    uint64_t e0 = dra_cel_evals();
    sandbox_t *sb = run(ext, nodes, pods, devices, batch, r);
    *evals = dra_cel_evals() - e0;
    int bad = ext ? 0 : check_claims(sb, pods);
    sandbox_free(sb);
    printf("%s: %ld/%d bound in %.2f s: %.0f pods/s, %.2f CPU s", ext ? "A extended resource" : "B DRA claims",
           r->bound, pods, r->run_s, rate(r), r->cpu_s);
    if (!ext)
        printf("; %d claims not allocated right", bad);
    printf("\n");
    fflush(stdout);
    return bad;
}

int main(int argc, char **argv)
{
    int nodes = 1000, pods = 5000, devices = 8, batch = 1000, repeat = 3, pos = 0;
    const char *only = "";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--devices") && i + 1 < argc)
            devices = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (argv[i][0] != '-' && pos < 2)
            *(pos++ == 0 ? &nodes : &pods) = atoi(argv[i]);
        else {
            fprintf(stderr,
                    "usage: dra_bench [NODES] [PODS] [--devices D] [--batch B] [--repeat R] [--only ext|dra]\n");
            return 2;
        }
    }
    if (nodes < 1 || pods < 1 || devices < 1 || batch < 1 || repeat < 1 || (long)nodes * devices < pods) {
        fprintf(stderr, "dra_bench: bad sizes (NODES x D must hold PODS)\n");
        return 2;
    }
    int want_a = strcmp(only, "dra") != 0, want_b = strcmp(only, "ext") != 0, bad = 0, short_run = 0;
    run_t a = { 0 }, b = { 0 };
    double cpu_a = 0, cpu_b = 0; /* the least CPU a run of each took */
    uint64_t evals = 0;
    /* Odd rounds B first: a drift in the machine's load hits both alike. */
    for (int round = 0; round < repeat; round++) {
        for (int k = 0; k < 2; k++) {
            int ext = (k == 0) == (round % 2 == 0);
            if (!(ext ? want_a : want_b))
                continue;
            run_t r;
            uint64_t e;
            int wrong = one(ext, nodes, pods, devices, batch, &r, &e);
            bad = wrong > bad ? wrong : bad;
            short_run |= r.bound != pods;
            run_t *best = ext ? &a : &b;
            if (rate(&r) > rate(best))
                *best = r;
            double *least = ext ? &cpu_a : &cpu_b;
            if (*least == 0 || r.cpu_s < *least)
                *least = r.cpu_s;
            if (!ext)
                evals = e;
        }
    }
    if (!want_b)
        return short_run ? 1 : 0;
    double ns = cel_ns_per_eval(), ratio = want_a && rate(&a) > 0 ? rate(&b) / rate(&a) : 0;
    double cpu_ratio = want_a && cpu_b > 0 ? cpu_a / cpu_b : 0;
    double share = b.cpu_s > 0 ? 100.0 * (double)evals * ns / 1e9 / b.cpu_s : 0;
    printf("CEL: %llu evaluations in a run of B (%.1f per pod), %.0f ns each: %.1f%% of its CPU\n",
           (unsigned long long)evals, (double)evals / pods, ns, share);
    if (want_a)
        printf("DRA/extended resource: %.2f in pods/s (best of %d each), %.2f in pods per CPU-second (least CPU of "
               "each)%s\n",
               ratio, repeat, cpu_ratio, ratio < 0.5 ? ": DRA throughput is below the bar of 0.5" : "");
    printf("nodes=%d pods=%d devices=%d repeat=%d ext_bound=%ld ext_run_s=%.2f ext_pods_per_s=%.0f ext_cpu_s=%.2f "
           "dra_bound=%ld dra_run_s=%.2f dra_pods_per_s=%.0f dra_cpu_s=%.2f dra_claims_bad=%d ratio=%.2f "
           "cpu_ratio=%.2f cel_evals=%llu cel_ns_per_eval=%.0f cel_share_of_cpu=%.1f%%\n",
           nodes, pods, devices, repeat, a.bound, a.run_s, rate(&a), a.cpu_s, b.bound, b.run_s, rate(&b), b.cpu_s, bad,
           ratio, cpu_ratio, (unsigned long long)evals, ns, share);
    return !short_run && bad == 0 ? 0 : 1;
}
