/* test_queue_table.c -- `ai-scheduler queues`: the tree, the table, JSON and
 * YAML rendered from Queue LIST items, cycles, bad input and the arguments. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "ai-scheduler/queues.h"
#include "scheduler/capabilities.h"
#include "tmpdir.h"

/* research (quota 8) -> team-a (6), team-b (2, weight 0.5, limit 4) with
 * statuses; inference (quota 4, limit 4; per pool 1/2) without; a cycle
 * loop-a <-> loop-b with under-loop below it; orphan (parent missing); a
 * Queue without a name and an item that is not an object. */
static const char *FIXTURE =
    "[\n"
    " {\"metadata\": {\"name\": \"team-b\"}, \"spec\": {\"parentQueue\": \"research\", \"resources\": {\"gpu\": {\"quota\": 2, \"overQuotaWeight\": 0.5, \"limit\": 4}}},\n"
    "  \"status\": {\"allocated\": {\"gpu\": 3, \"cpu\": 6000, \"memory\": 24000}, \"fairShare\": {\"gpu\": 2, \"cpu\": 4500, \"memory\": 16000},\n"
    "             \"requested\": {\"gpu\": 4}, \"pending\": 1, \"state\": \"Active\",\n"
    "             \"pools\": [{\"name\": \"gpu-pool\", \"allocated\": {\"gpu\": 3, \"cpu\": 6000, \"memory\": 24000}, \"fairShare\": {\"gpu\": 2}, \"pending\": 1}]}},\n"
    " {\"metadata\": {\"name\": \"research\"}, \"spec\": {\"priority\": 1, \"resources\": {\"gpu\": {\"quota\": 8}, \"cpu\": {\"quota\": 16000}}},\n"
    "  \"status\": {\"allocated\": {\"gpu\": 7, \"cpu\": 14000, \"memory\": 56000}, \"fairShare\": {\"gpu\": 8, \"cpu\": 16000, \"memory\": 64000},\n"
    "             \"pending\": 1, \"state\": \"Active\"}},\n"
    " {\"metadata\": {\"name\": \"team-a\"}, \"spec\": {\"parentQueue\": \"research\", \"resources\": {\"gpu\": {\"quota\": 6}}},\n"
    "  \"status\": {\"allocated\": {\"gpu\": 4, \"cpu\": 8000, \"memory\": 32000}, \"fairShare\": {\"gpu\": 5.333333, \"cpu\": 11500, \"memory\": 48000},\n"
    "             \"pending\": 0, \"state\": \"Active\"}},\n"
    " {\"metadata\": {\"name\": \"inference\"}, \"spec\": {\"resources\": {\"gpu\": {\"quota\": 4, \"limit\": 4}},\n"
    "   \"pools\": {\"gpu-pool\": {\"resources\": {\"gpu\": {\"quota\": 1, \"limit\": 2}}}}}},\n"
    " {\"metadata\": {\"name\": \"loop-a\"}, \"spec\": {\"parentQueue\": \"loop-b\"}},\n"
    " {\"metadata\": {\"name\": \"loop-b\"}, \"spec\": {\"parentQueue\": \"loop-a\", \"priority\": \"high\", \"resources\": {\"gpu\": {\"quota\": \"8\"}}}},\n"
    " {\"metadata\": {\"name\": \"under-loop\"}, \"spec\": {\"parentQueue\": \"loop-a\"}},\n"
    " {\"metadata\": {\"name\": \"orphan\"}, \"spec\": {\"parentQueue\": \"nope\"}, \"status\": {\"state\": \"Invalid\", \"message\": \"parent queue nope is missing\"}},\n"
    " {\"metadata\": {}, \"spec\": {}},\n"
    " \"not an object\"\n"
    "]\n";

static json_t *load(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        fail_msg("bad fixture: %s (line %d)", e.text, e.line);
    return j;
}

/* Renders into *out_s and *err_s (both malloc'd); returns the return code. */
static int render(const char *json, cli_out_t fmt, const char *pool, char **out_s, char **err_s)
{
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(&obuf, &olen), *errf = open_memstream(&ebuf, &elen);
    json_t *q = json ? load(json) : NULL;
    int rc = queues_render(out, errf, fmt, q, pool);
    json_decref(q);
    fclose(out);
    fclose(errf);
    *out_s = obuf;
    *err_s = ebuf;
    return rc;
}

static const char *HEADER = "QUEUE          PRIORITY   GPU QUOTA   GPU LIMIT   GPU WEIGHT   GPU ALLOCATED   "
                            "GPU FAIRSHARE   CPU ALLOCATED/FAIRSHARE   MEMORY ALLOCATED   PENDING   STATE\n";

/* The same when no queue name is longer than "default". */
static const char *NARROW_HEADER = "QUEUE     PRIORITY   GPU QUOTA   GPU LIMIT   GPU WEIGHT   GPU ALLOCATED   "
                                   "GPU FAIRSHARE   CPU ALLOCATED/FAIRSHARE   MEMORY ALLOCATED   PENDING   STATE\n";

static void test_table_tree(void **st)
{
    char *o, *e, want[4096];
    assert_int_equal(render(FIXTURE, CLI_OUT_TABLE, NULL, &o, &e), 0);
    snprintf(
        want, sizeof(want), "%s%s", HEADER,
        "default        0          -           -           1            -               -               -/-                       -                  -         Implicit\n"
        "inference      0          4           4           4            -               -               -/-                       -                  -         -\n"
        "loop-a         0          -           -           1            -               -               -/-                       -                  -         Invalid\n"
        "  under-loop   0          -           -           1            -               -               -/-                       -                  -         -\n"
        "loop-b         0          -           -           1            -               -               -/-                       -                  -         Invalid\n"
        "orphan         0          -           -           1            -               -               -/-                       -                  -         Invalid\n"
        "research       1          8           -           8            7               8               14/16                     52.15Gi            1         Active\n"
        "  team-a       0          6           -           6            4               5.33            8/11.5                    29.8Gi             0         Active\n"
        "  team-b       0          2           4           0.5          3               2               6/4.5                     22.35Gi            1         Active\n"
        "\n"
        "loop-a: spec.parentQueue cycle: loop-a -> loop-b -> loop-a\n"
        "loop-b: spec.parentQueue cycle: loop-a -> loop-b -> loop-a\n"
        "orphan: parent queue \"nope\" not found\n");
    assert_string_equal(o, want);
    /* the nameless Queue and the non-object item */
    assert_string_equal(e, "warning: skipping a Queue without a valid metadata.name\n"
                           "warning: skipping a Queue without a valid metadata.name\n");
    free(o);
    free(e);
}

/* --pool: spec.pools overrides the quota and limit; the numbers come from
 * status.pools[]; a written status without that pool reads as zero. */
static void test_table_pool(void **st)
{
    char *o, *e;
    assert_int_equal(render(FIXTURE, CLI_OUT_TABLE, "gpu-pool", &o, &e), 0);
    assert_non_null(
        strstr(o, "\ninference      0          1           2           1            -               -       "));
    assert_non_null(strstr(o,
                           "\n  team-b       0          2           4           0.5          3               2       "
                           "        6/-                       22.35Gi            1         Active\n"));
    assert_non_null(strstr(o,
                           "\n  team-a       0          6           -           6            0               0       "
                           "        0/0                       0Gi                0         Active\n"));
    assert_non_null(strstr(o, "\ndefault        0          -           -           1            -               -"));
    free(o);
    free(e);
}

/* A 3-cycle, a queue that is its own parent, and a chain 20000 deep: no
 * loop, no deep recursion; the cycle's queues at the top level, Invalid. */
static void test_cycles_and_depth(void **st)
{
    const char *cyc = "[{\"metadata\":{\"name\":\"c\"},\"spec\":{\"parentQueue\":\"a\"}},"
                      "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"parentQueue\":\"b\"}},"
                      "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"parentQueue\":\"c\"}},"
                      "{\"metadata\":{\"name\":\"self\"},\"spec\":{\"parentQueue\":\"self\"}},"
                      "{\"metadata\":{\"name\":\"default\"},\"spec\":{\"resources\":{\"gpu\":{\"quota\":2}}}}]";
    char *o, *e, want[4096];
    assert_int_equal(render(cyc, CLI_OUT_TABLE, NULL, &o, &e), 0);
    snprintf(
        want, sizeof(want), "%s%s", NARROW_HEADER,
        "a         0          -           -           1            -               -               -/-                       -                  -         Invalid\n"
        "b         0          -           -           1            -               -               -/-                       -                  -         Invalid\n"
        "c         0          -           -           1            -               -               -/-                       -                  -         Invalid\n"
        "default   0          2           -           2            -               -               -/-                       -                  -         -\n"
        "self      0          -           -           1            -               -               -/-                       -                  -         Invalid\n"
        "\n"
        "a: spec.parentQueue cycle: a -> b -> c -> a\n"
        "b: spec.parentQueue cycle: a -> b -> c -> a\n"
        "c: spec.parentQueue cycle: a -> b -> c -> a\n"
        "self: spec.parentQueue cycle: self -> self\n");
    assert_string_equal(o, want);
    assert_string_equal(e, "");
    free(o);
    free(e);

    /* q00000 <- q00001 <- ... ; every queue printed once, indent capped */
    enum { DEEP = 20000 };
    json_t *arr = json_array();
    for (int i = 0; i < DEEP; i++) {
        char name[16], parent[16];
        snprintf(name, sizeof(name), "q%05d", i);
        snprintf(parent, sizeof(parent), "q%05d", i - 1);
        json_array_append_new(
            arr, json_pack("{s:{s:s}, s:{s:s?}}", "metadata", "name", name, "spec", "parentQueue", i ? parent : NULL));
    }
    char *deep = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    assert_int_equal(render(deep, CLI_OUT_JSON, NULL, &o, &e), 0);
    json_t *doc = load(o);
    assert_int_equal(json_array_size(doc), DEEP + 1); /* and the implicit default */
    assert_string_equal(json_string_value(json_object_get(json_array_get(doc, 1), "name")), "q00000");
    json_t *last = json_array_get(doc, DEEP);
    assert_string_equal(json_string_value(json_object_get(last, "name")), "q19999");
    assert_int_equal(json_integer_value(json_object_get(last, "depth")), DEEP - 1);
    json_decref(doc);
    free(o);
    free(e);
    assert_int_equal(render(deep, CLI_OUT_TABLE, NULL, &o, &e), 0);
    /* 64 spaces at most before a name */
    assert_non_null(strstr(o, "\n                                                                q19999 "));
    assert_null(strstr(o, "\n                                                                 "));
    free(o);
    free(e);
    free(deep);
}

static void test_json(void **st)
{
    char *o, *e;
    assert_int_equal(render(FIXTURE, CLI_OUT_JSON, NULL, &o, &e), 0);
    json_t *doc = load(o);
    assert_true(json_is_array(doc));
    static const char *names[] = { "default", "inference", "loop-a", "under-loop", "loop-b",
                                   "orphan",  "research",  "team-a", "team-b" };
    static const int depths[] = { 0, 0, 0, 1, 0, 0, 0, 1, 1 };
    assert_int_equal(json_array_size(doc), 9);
    for (int i = 0; i < 9; i++) {
        json_t *q = json_array_get(doc, (size_t)i);
        assert_string_equal(json_string_value(json_object_get(q, "name")), names[i]);
        assert_int_equal(json_integer_value(json_object_get(q, "depth")), depths[i]);
    }
    json_t *dflt = json_array_get(doc, 0);
    assert_true(json_is_true(json_object_get(dflt, "implicit")));
    assert_true(json_is_null(json_object_get(dflt, "allocated")));
    assert_true(json_is_null(json_object_get(dflt, "state")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(dflt, "quota"), "gpu")), -1);

    json_t *a = json_array_get(doc, 7); /* team-a: the API's units, floats kept */
    assert_string_equal(json_string_value(json_object_get(a, "parent")), "research");
    assert_true(json_is_integer(json_object_get(json_object_get(a, "allocated"), "gpu")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(a, "allocated"), "cpu")), 8000);
    assert_float_equal(json_real_value(json_object_get(json_object_get(a, "fairShare"), "gpu")), 5.333333, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(a, "overQuotaWeight"), "gpu")), 6);
    assert_int_equal(json_integer_value(json_object_get(a, "pending")), 0);
    assert_string_equal(json_string_value(json_object_get(a, "state")), "Active");
    assert_true(json_is_null(json_object_get(a, "requested")));
    json_t *b = json_array_get(doc, 8);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "requested"), "gpu")), 4);
    assert_true(json_is_null(json_object_get(json_object_get(b, "requested"), "cpu")));
    assert_float_equal(json_real_value(json_object_get(json_object_get(b, "overQuotaWeight"), "gpu")), 0.5, 0);

    json_t *loop = json_array_get(doc, 2);
    assert_string_equal(json_string_value(json_object_get(loop, "parent")), "loop-b");
    assert_string_equal(json_string_value(json_object_get(loop, "state")), "Invalid");
    assert_string_equal(json_string_value(json_object_get(loop, "message")),
                        "spec.parentQueue cycle: loop-a -> loop-b -> loop-a");
    assert_null(json_object_get(loop, "pool"));
    json_decref(doc);
    free(o);
    free(e);

    assert_int_equal(render(FIXTURE, CLI_OUT_JSON, "gpu-pool", &o, &e), 0);
    doc = load(o);
    json_t *inf = json_array_get(doc, 1);
    assert_string_equal(json_string_value(json_object_get(inf, "pool")), "gpu-pool");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(inf, "quota"), "gpu")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(inf, "limit"), "gpu")), 2);
    json_decref(doc);
    free(o);
    free(e);
}

static void test_yaml(void **st)
{
    char *o, *e;
    assert_int_equal(render(FIXTURE, CLI_OUT_YAML, NULL, &o, &e), 0);
    assert_memory_equal(o, "- name: default\n  parent: null\n  depth: 0\n", 40);
    assert_non_null(strstr(o, "- name: team-b\n  parent: research\n  depth: 1\n"));
    assert_non_null(strstr(o, "  overQuotaWeight:\n    gpu: 0.5\n"));
    assert_non_null(strstr(o, "  message: 'spec.parentQueue cycle: loop-a -> loop-b -> loop-a'\n") ||
                    strstr(o, "  message: \"spec.parentQueue cycle: loop-a -> loop-b -> loop-a\"\n"));
    free(o);
    free(e);
}

/* Untrusted input: no list, a list of junk, wrong types, huge numbers. */
static void test_bad_input(void **st)
{
    char *o, *e, want[1024];
    snprintf(
        want, sizeof(want), "%s%s", NARROW_HEADER,
        "default   0          -           -           1            -               -               -/-                       -                  -         Implicit\n");
    assert_int_equal(render(NULL, CLI_OUT_TABLE, NULL, &o, &e), 0);
    assert_string_equal(o, want);
    free(o);
    free(e);
    assert_int_equal(render("{\"items\": 3}", CLI_OUT_TABLE, NULL, &o, &e), 0);
    assert_string_equal(o, want);
    free(o);
    free(e);

    const char *junk =
        "[1, null, [], {\"metadata\": {\"name\": 7}},"
        "{\"metadata\": {\"name\": \"x\"}, \"spec\": {\"parentQueue\": 5, \"priority\": 1e300,"
        " \"resources\": {\"gpu\": {\"quota\": 1e300, \"limit\": [1], \"overQuotaWeight\": null}, \"cpu\": 3}},"
        " \"status\": {\"allocated\": {\"gpu\": \"7\", \"cpu\": -2500}, \"fairShare\": [],"
        " \"pending\": -4, \"state\": 3, \"pools\": 9}},"
        "{\"metadata\": {\"name\": \"x\"}}]";
    assert_int_equal(render(junk, CLI_OUT_TABLE, NULL, &o, &e), 0);
    assert_non_null(strstr(
        o,
        "\nx         0          1e+300      -           1e+300       -               -               -2.5/-                    -                  -         -\n"));
    assert_non_null(strstr(e, "warning: skipping a second Queue named \"x\"\n"));
    free(o);
    free(e);
    assert_int_equal(render(junk, CLI_OUT_YAML, "p", &o, &e), 0);
    assert_non_null(strstr(o, "- name: x\n"));
    free(o);
    free(e);
}

static int run_main(char **argv, int argc, char **out_s, char **err_s)
{
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(&obuf, &olen), *errf = open_memstream(&ebuf, &elen);
    int rc = queues_main(argc, argv, out, errf);
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
    char *help[] = { (char *)"-h" };
    assert_int_equal(run_main(help, 1, &o, &e), 0);
    assert_non_null(strstr(o, "Usage: ai-scheduler queues"));
    assert_non_null(strstr(o, "--pool NAME"));
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

    char *nopool[] = { (char *)"--pool" };
    assert_int_equal(run_main(nopool, 1, &o, &e), 2);
    assert_non_null(strstr(e, "--pool needs a value"));
    free(o);
    free(e);

    char *emptypool[] = { (char *)"--pool=" };
    assert_int_equal(run_main(emptypool, 1, &o, &e), 2);
    assert_non_null(strstr(e, "--pool= needs a value"));
    free(o);
    free(e);

    char *missing[] = { (char *)"--kubeconfig=/nonexistent/kubeconfig", (char *)"-ojson", (char *)"--pool",
                        (char *)"p" };
    assert_int_equal(run_main(missing, 4, &o, &e), 1);
    assert_string_equal(o, "");
    assert_memory_equal(e, "error: ", 7);
    assert_int_equal(count_lines(e), 1);
    free(o);
    free(e);
}

/* A server nobody listens on: one error line naming it, exit 1. */
static void test_main_unreachable(void **st)
{
    char path[256];
    tmp_template(path, sizeof path, "test_queue_table_kc");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
          "clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\n"
          "users:\n- name: u\n  user:\n    token: t\n"
          "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n",
          f);
    fclose(f);
    char *o, *e;
    char *argv[] = { (char *)"--kubeconfig", path };
    assert_int_equal(run_main(argv, 2, &o, &e), 1);
    assert_string_equal(o, "");
    assert_int_equal(count_lines(e), 1);
    assert_non_null(strstr(e, "error: https://127.0.0.1:1"));
    free(o);
    free(e);
    unlink(path);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_tree),
        cmocka_unit_test(test_table_pool),
        cmocka_unit_test(test_cycles_and_depth),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_yaml),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_main_args),
        cmocka_unit_test(test_main_unreachable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
