/* test_pool_table.c -- `ai-scheduler pools`: the table, JSON and YAML
 * renderers on synthetic LIST items, and the command's argument handling. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "ai-scheduler/pools.h"
#include "scheduler/capabilities.h"
#include "util/util.h"
#include "tmpdir.h"

#define GI (1024LL * 1024 * 1024)

static json_t *load(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        fail_msg("bad fixture: %s (line %d): %s", e.text, e.line, s);
    return j;
}

/* A node JSON as the API server returns it (only what we read). */
static json_t *node_json(const char *name, const char *labels, const char *cpu, const char *alloc_cpu, const char *mem,
                         const char *gpu)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{%s}},\"spec\":{},"
             "\"status\":{\"capacity\":{\"cpu\":\"%s\",\"memory\":\"%s\",\"ephemeral-storage\":\"100Gi\","
             "\"pods\":\"110\"%s%s%s},"
             "\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"%s\",\"ephemeral-storage\":\"90Gi\","
             "\"pods\":\"110\"%s%s%s}}}",
             name, labels, cpu, mem, gpu ? ",\"nvidia.com/gpu\":\"" : "", gpu ? gpu : "", gpu ? "\"" : "", alloc_cpu,
             mem, gpu ? ",\"nvidia.com/gpu\":\"" : "", gpu ? gpu : "", gpu ? "\"" : "");
    return load(buf);
}

static json_t *pod_json(const char *name, const char *pool, const char *node, const char *sched, const char *phase,
                        const char *cpu, const char *mem, const char *gpu)
{
    char buf[1024], ann[128] = "", gpures[64] = "";
    if (pool)
        snprintf(ann, sizeof(ann), ",\"annotations\":{\"resource.aibee.cn/pool\":\"%s\"}", pool);
    if (gpu)
        snprintf(gpures, sizeof(gpures), ",\"nvidia.com/gpu\":\"%s\"", gpu);
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"%s\",\"uid\":\"u-%s\"%s},"
             "\"spec\":{\"schedulerName\":\"%s\",\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"%s\"%s}}}]},"
             "\"status\":{\"phase\":\"%s\"}}",
             name, name, ann, sched, node, cpu, mem, gpures, phase);
    return load(buf);
}

typedef struct fixture {
    json_t *nodes, *pods, *pools;
} fixture_t;

static int setup(void **st)
{
    fixture_t *f = util_xcalloc(1, sizeof(*f));
    f->nodes = json_array();
    json_array_append_new(f->nodes, node_json("g1", "\"gpu\":\"true\"", "16", "15500m", "64Gi", "8"));
    json_array_append_new(f->nodes, node_json("g2", "\"gpu\":\"true\"", "16", "15500m", "64Gi", "8"));
    json_array_append_new(f->nodes, node_json("c1", "\"cpu\":\"true\"", "8", "7500m", "32Gi", NULL));
    json_array_append_new(f->nodes, node_json("m1", "\"kubernetes.io/role\":\"master\"", "4", "4", "8Gi", NULL));
    json_array_append_new(f->nodes, node_json("both", "\"cpu\":\"true\",\"gpu\":\"true\"", "2", "2", "4Gi", NULL));
    json_array_append_new(f->nodes,
                          load("{\"metadata\":{\"name\":\"broken\"},\"status\":{\"capacity\":{\"cpu\":\"lots\"}}}"));

    f->pods = json_array();
    json_array_append_new(f->pods, pod_json("train", "gpu-pool", "g1", "ai-scheduler", "Running", "4", "16Gi", "4"));
    json_array_append_new(f->pods, pod_json("etl", "cpu-pool", "g2", "ai-scheduler", "Running", "1500m", "2Gi", NULL));
    json_array_append_new(f->pods, pod_json("web", NULL, "c1", "default-scheduler", "Running", "500m", "1Gi", NULL));
    json_array_append_new(f->pods, pod_json("done", "gpu-pool", "g1", "ai-scheduler", "Succeeded", "8", "8Gi", "4"));
    json_array_append_new(f->pods, pod_json("wait1", "gpu-pool", "", "ai-scheduler", "Pending", "2", "4Gi", "2"));
    json_array_append_new(f->pods, pod_json("wait2", "gpu-pool", "", "ai-scheduler", "Pending", "250m", "512Mi", "1"));
    json_array_append_new(f->pods,
                          pod_json("notours", "gpu-pool", "", "default-scheduler", "Pending", "1", "1Gi", NULL));
    json_array_append_new(f->pods, pod_json("lost", "nosuch", "", "ai-scheduler", "Pending", "100m", "100Mi", NULL));

    f->pools = json_array();
    json_array_append_new(
        f->pools,
        load(
            "{\"metadata\":{\"name\":\"masters\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":"
            "{\"kubernetes.io/role\":\"master\"}},\"disablePreemption\":true,\"disableBorrowing\":true,\"disableSharing\":true}}"));
    json_array_append_new(
        f->pools,
        load("{\"metadata\":{\"name\":\"gpu-pool\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":"
             "{\"gpu\":\"true\"}},\"disablePreemption\":false,\"disableBorrowing\":false,\"disableSharing\":false}}"));
    json_array_append_new(f->pools,
                          load("{\"metadata\":{\"name\":\"cpu-pool\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":"
                               "{\"cpu\":\"true\"}},\"disableSharing\":true}}"));
    json_array_append_new(f->pools, load("{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"disableSharing\":\"yes\"}}"));
    json_array_append_new(f->pools, load("{\"metadata\":{\"name\":\"default\"},\"spec\":{\"disableBorrowing\":true}}"));
    *st = f;
    return 0;
}

static int teardown(void **st)
{
    fixture_t *f = *st;
    json_decref(f->nodes);
    json_decref(f->pods);
    json_decref(f->pools);
    free(f);
    return 0;
}

/* Runs the renderer into memory; *errs gets what went to errf. */
static char *run(fixture_t *f, cli_out_t fmt, char **errs)
{
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(&obuf, &olen), *errf = open_memstream(&ebuf, &elen);
    assert_int_equal(pools_render(out, errf, fmt, f->nodes, f->pods, f->pools, "ai-scheduler"), 0);
    fclose(out);
    fclose(errf);
    if (errs)
        *errs = ebuf;
    else
        free(ebuf);
    return obuf;
}

static const char *expected_table =
    "Pools     p b s  Resource  Capacity  Allocatable  Used  Shared  Pending\n"
    "cpu-pool  \u2713 \u2713 x  cpu       8         7.5          0.5   0.5     0\n"
    "                 gpu       0         0            0     0       0\n"
    "                 mem       32Gi      32Gi         1Gi   1Gi     0\n"
    "                 storage   100Gi     90Gi         0     0       0\n"
    "                 nodes     1         1            -     -       -\n"
    "                 pods      110       110          1     1       0\n"
    "gpu-pool  \u2713 \u2713 \u2713  cpu       32        31           5.5   1.5     2.25\n"
    "                 gpu       16        16           4     0       3\n"
    "                 mem       128Gi     128Gi        18Gi  2Gi     4.5Gi\n"
    "                 storage   200Gi     180Gi        0     0       0\n"
    "                 nodes     2         2            -     -       -\n"
    "                 pods      220       220          2     1       2\n"
    "masters   x x x  cpu       4         4            0     0       0\n"
    "                 gpu       0         0            0     0       0\n"
    "                 mem       8Gi       8Gi          0     0       0\n"
    "                 storage   100Gi     90Gi         0     0       0\n"
    "                 nodes     1         1            -     -       -\n"
    "                 pods      110       110          0     0       0\n"
    "Default   \u2713 x \u2713  cpu       2         2            0     0       0.1\n"
    "                 gpu       0         0            0     0       0\n"
    "                 mem       4Gi       4Gi          0     0       100Mi\n"
    "                 storage   100Gi     90Gi         0     0       0\n"
    "                 nodes     1         1            -     -       -\n"
    "                 pods      110       110          0     0       1\n"
    "Total            cpu       46        44.5         6     2       2.35\n"
    "                 gpu       16        16           4     0       3\n"
    "                 mem       172Gi     172Gi        19Gi  3Gi     4.6Gi\n"
    "                 storage   500Gi     450Gi        0     0       0\n"
    "                 nodes     5         5            -     -       -\n"
    "                 pods      550       550          3     2       3\n";

/* Pools sorted, default (flags from the "default" Pool) then Total last;
 * "both" matches two pools and lands in default; the terminal pod, the other
 * scheduler's pending pod and the invalid objects count nothing. */
static void test_table(void **st)
{
    char *errs;
    char *got = run(*st, CLI_OUT_TABLE, &errs);
    assert_string_equal(got, expected_table);
    assert_string_equal(errs, "warning: skipping invalid Pool: pool bad: spec.disableSharing: must be a boolean\n"
                              "warning: skipping node broken: resource cpu: quantity lots: no digits\n");
    free(got);
    free(errs);
}

static json_t *entry(json_t *arr, size_t i, const char *name)
{
    json_t *e = json_array_get(arr, i);
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "name")), name);
    return e;
}

static json_int_t num(json_t *e, const char *list, const char *key)
{
    json_t *v = json_object_get(json_object_get(e, list), key);
    if (!json_is_integer(v))
        fail_msg("%s.%s not an integer", list, key);
    return json_integer_value(v);
}

static void test_json(void **st)
{
    char *got = run(*st, CLI_OUT_JSON, NULL);
    json_t *doc = load(got);
    assert_true(json_is_array(doc));
    assert_int_equal(json_array_size(doc), 5);
    json_t *cpu = entry(doc, 0, "cpu-pool");
    assert_true(json_is_true(json_object_get(cpu, "preemption")));
    assert_true(json_is_false(json_object_get(cpu, "sharing")));
    json_t *gpu = entry(doc, 1, "gpu-pool");
    assert_int_equal(json_integer_value(json_object_get(gpu, "nodes")), 2);
    assert_int_equal(num(gpu, "capacity", "cpu_milli"), 32000);
    assert_int_equal(num(gpu, "allocatable", "cpu_milli"), 31000);
    assert_int_equal(num(gpu, "capacity", "gpu"), 16);
    assert_int_equal(num(gpu, "capacity", "memory"), 128 * GI);
    assert_int_equal(num(gpu, "allocatable", "storage"), 180 * GI);
    assert_int_equal(num(gpu, "capacity", "pods"), 220);
    assert_int_equal(num(gpu, "used", "cpu_milli"), 5500);
    assert_int_equal(num(gpu, "used", "gpu"), 4);
    assert_int_equal(num(gpu, "used", "pods"), 2);
    assert_int_equal(num(gpu, "shared", "cpu_milli"), 1500);
    assert_int_equal(num(gpu, "shared", "pods"), 1);
    assert_int_equal(num(gpu, "pending", "cpu_milli"), 2250);
    assert_int_equal(num(gpu, "pending", "gpu"), 3);
    assert_int_equal(num(gpu, "pending", "memory"), 4 * GI + 512LL * 1024 * 1024);
    assert_int_equal(num(gpu, "pending", "pods"), 2);
    json_t *cp = entry(doc, 0, "cpu-pool");
    assert_int_equal(num(cp, "borrowed", "cpu_milli"), 1500);
    entry(doc, 2, "masters");
    json_t *def = entry(doc, 3, "default");
    assert_true(json_is_false(json_object_get(def, "borrowing")));
    assert_true(json_is_true(json_object_get(def, "preemption")));
    json_t *tot = entry(doc, 4, "total");
    assert_null(json_object_get(tot, "preemption"));
    assert_int_equal(json_integer_value(json_object_get(tot, "nodes")), 5);
    assert_int_equal(num(tot, "capacity", "cpu_milli"), 46000);
    assert_int_equal(num(tot, "pending", "pods"), 3);
    json_decref(doc);
    free(got);
}

static void test_yaml(void **st)
{
    char *got = run(*st, CLI_OUT_YAML, NULL);
    assert_non_null(strstr(got, "- name: cpu-pool\n"
                                "  preemption: true\n"
                                "  borrowing: true\n"
                                "  sharing: false\n"
                                "  nodes: 1\n"
                                "  capacity:\n"
                                "    cpu_milli: 8000\n"
                                "    gpu: 0\n"
                                "    memory: 34359738368\n"));
    assert_non_null(strstr(got, "- name: total\n  nodes: 5\n"));
    assert_non_null(strstr(got, "  pending:\n    cpu_milli: 2250\n    gpu: 3\n"));
    free(got);
}

/* Rendering straight from specs and usage: cpu rounding, a name that YAML
 * would read as a number, column widths set by the longest name. */
static void test_render_direct(void **st)
{
    pool_spec_t specs[2], def;
    pool_usage_t u[3];
    memset(specs, 0, sizeof(specs));
    memset(u, 0, sizeof(u));
    specs[0].name = (char *)"a-rather-long-pool-name";
    specs[0].disable_sharing = 1;
    specs[1].name = (char *)"123";
    pool_spec_default(&def);
    u[0].capacity.milli_cpu = 3333;
    u[0].allocatable.milli_cpu = 250;
    u[0].used.milli_cpu = 1;
    u[0].shared.milli_cpu = 995;
    u[0].pending_req.milli_cpu = 1050;
    u[1].capacity.memory = 1536LL * 1024 * 1024;
    u[1].nodes = 3;

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(pools_print(f, CLI_OUT_TABLE, specs, 2, &def, u), 0);
    fclose(f);
    const char *want_head =
        "Pools                    p b s  Resource  Capacity  Allocatable  Used  Shared  Pending\n"
        "a-rather-long-pool-name  \u2713 \u2713 x  cpu       3.33      0.25         0     1       1.05\n";
    assert_memory_equal(buf, want_head, strlen(want_head));
    assert_non_null(strstr(buf, "\n123                      \u2713 \u2713 \u2713  cpu       0"));
    assert_non_null(strstr(buf, "\n                                mem       1.5Gi     0"));
    assert_non_null(
        strstr(buf, "\n                                nodes     3         3            -     -       -\n"));
    assert_non_null(strstr(buf, "\nDefault                  \u2713 \u2713 \u2713  cpu"));
    assert_non_null(strstr(buf, "\nTotal                           cpu       3.33"));
    assert_null(strstr(buf, "gangs")); /* no gang pending: the original six rows */
    free(buf);

    /* Two gangs pending in "123": a gangs row in every block, the count
     * under Pending. */
    u[1].pending_gangs = 2;
    buf = NULL;
    f = open_memstream(&buf, &len);
    assert_int_equal(pools_print(f, CLI_OUT_TABLE, specs, 2, &def, u), 0);
    fclose(f);
    assert_non_null(
        strstr(buf, "\n                                gangs     -         -            -     -       2\n"));
    assert_non_null(
        strstr(buf, "\n                                gangs     -         -            -     -       0\n"));
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    assert_int_equal(pools_print(f, CLI_OUT_JSON, specs, 2, &def, u), 0);
    fclose(f);
    assert_non_null(strstr(buf, "\"pending_gangs\": 2"));
    assert_null(strstr(buf, "gated")); /* no pod gated: the document as it was */
    free(buf);
    u[1].pending_gangs = 0;

    /* Three gated pods in "123": its entry and the total say so. */
    u[1].gated = 3;
    buf = NULL;
    f = open_memstream(&buf, &len);
    assert_int_equal(pools_print(f, CLI_OUT_JSON, specs, 2, &def, u), 0);
    fclose(f);
    json_t *doc = json_loads(buf, 0, NULL);
    assert_non_null(doc);
    size_t i;
    json_t *e;
    int seen = 0;
    json_array_foreach (doc, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *g = json_object_get(e, "gated");
        if (!strcmp(name, "123") || !strcmp(name, "total")) {
            assert_int_equal(json_integer_value(g), 3);
            seen++;
        } else {
            assert_null(g);
        }
    }
    assert_int_equal(seen, 2);
    json_decref(doc);
    free(buf);
    u[1].gated = 0;

    buf = NULL;
    f = open_memstream(&buf, &len);
    assert_int_equal(pools_print(f, CLI_OUT_YAML, specs, 2, &def, u), 0);
    fclose(f);
    assert_non_null(strstr(buf, "- name: \"123\"\n"));
    assert_non_null(strstr(buf, "- name: a-rather-long-pool-name\n"));
    free(buf);
    pool_spec_free(&def);
}

/* No pools at all (CRD missing): only default and total. */
static void test_no_pools(void **st)
{
    fixture_t *f = *st;
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(&obuf, &olen), *errf = open_memstream(&ebuf, &elen);
    assert_int_equal(pools_render(out, errf, CLI_OUT_JSON, f->nodes, f->pods, NULL, "ai-scheduler"), 0);
    fclose(out);
    fclose(errf);
    json_t *doc = load(obuf);
    assert_int_equal(json_array_size(doc), 2);
    json_t *def = entry(doc, 0, "default");
    assert_int_equal(json_integer_value(json_object_get(def, "nodes")), 5);
    /* every annotation now names an unknown pool: all pending pods are default's */
    assert_int_equal(num(def, "pending", "pods"), 3);
    assert_int_equal(num(def, "shared", "pods"), 0);
    entry(doc, 1, "total");
    json_decref(doc);
    free(obuf);
    free(ebuf);
}

static int run_main(char **argv, int argc, char **out_s, char **err_s)
{
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(&obuf, &olen), *errf = open_memstream(&ebuf, &elen);
    int rc = pools_main(argc, argv, out, errf);
    fclose(out);
    fclose(errf);
    *out_s = obuf;
    *err_s = ebuf;
    return rc;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_main_args(void **st)
{
    char *o, *e;
    char *help[] = { (char *)"--help" };
    assert_int_equal(run_main(help, 1, &o, &e), 0);
    assert_non_null(strstr(o, "Usage: ai-scheduler pools"));
    free(o);
    free(e);

    char *badfmt[] = { (char *)"-o", (char *)"xml" };
    assert_int_equal(run_main(badfmt, 2, &o, &e), 2);
    assert_non_null(strstr(e, "unknown output format \"xml\""));
    free(o);
    free(e);

    char *bogus[] = { (char *)"--bogus" };
    assert_int_equal(run_main(bogus, 1, &o, &e), 2);
    assert_non_null(strstr(e, "unknown argument \"--bogus\""));
    free(o);
    free(e);

    char *noval[] = { (char *)"--kubeconfig" };
    assert_int_equal(run_main(noval, 1, &o, &e), 2);
    assert_non_null(strstr(e, "--kubeconfig needs a value"));
    free(o);
    free(e);

    char *missing[] = { (char *)"--kubeconfig=/nonexistent/kubeconfig", (char *)"-ojson" };
    assert_int_equal(run_main(missing, 2, &o, &e), 1);
    assert_string_equal(o, "");
    assert_int_equal(count_lines(e), 1);
    assert_memory_equal(e, "error: ", 7);
    free(o);
    free(e);
}

/* A server nobody listens on: one error line, exit 1. */
static void test_main_unreachable(void **st)
{
    char path[256];
    tmp_template(path, sizeof path, "test_pool_table_kc");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
          "clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\n"
          "users:\n- name: u\n  user:\n    token: abc\n"
          "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n",
          f);
    fclose(f);
    char *o, *e;
    char *argv[] = { (char *)"--kubeconfig", path, (char *)"--scheduler-name", (char *)"x" };
    assert_int_equal(run_main(argv, 4, &o, &e), 1);
    unlink(path);
    assert_string_equal(o, "");
    assert_int_equal(count_lines(e), 1);
    assert_memory_equal(e, "error: ", 7);
    free(o);
    free(e);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_yaml, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_pools, setup, teardown),
        cmocka_unit_test(test_render_direct),
        cmocka_unit_test(test_main_args),
        cmocka_unit_test(test_main_unreachable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
