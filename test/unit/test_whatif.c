/* test_whatif.c -- `whatif` without a sandbox: its options, the edits of
 * the copy (quotas, nodes from a template, a node removed, the leader's
 * state over a LIST), the submissions, and the answer built from sandbox
 * actions. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ai-scheduler/whatif.h"
#include "scheduler/capabilities.h"
#include "whatif/whatif.h"

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        fail_msg("bad test JSON at %d: %s", e.position, e.text);
    return j;
}

static char *dump(const json_t *j)
{
    return json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
}

static void assert_json(const json_t *got, const char *want)
{
    json_t *w = J(want);
    if (!json_equal((json_t *)got, w)) {
        char *g = dump(got), *ws = dump(w);
        fail_msg("got  %s\nwant %s", g, ws);
    }
    json_decref(w);
}

/* ------------------------------------------------------------ options */

static int parse(whatif_args_t *a, cli_t *c, char **err, int argc, char **argv)
{
    size_t ol = 0, el = 0;
    char *o = NULL;
    FILE *out = open_memstream(&o, &ol), *errf = open_memstream(err, &el);
    int rc = whatif_parse_args(a, c, argc, argv, out, errf);
    fclose(out);
    fclose(errf);
    free(o);
    return rc;
}

static void test_args(void **st)
{
    (void)st;
    whatif_args_t a;
    cli_t c;
    char *e = NULL;
    char *ok[] = { "-f",
                   "pods.yaml",
                   "--add-nodes",
                   "2",
                   "--node-template",
                   "n.yaml",
                   "--remove-node",
                   "a",
                   "--remove-node=b",
                   "--set-quota",
                   "team=gpu:12,cpu:8",
                   "--server",
                   "http://x:1",
                   "-o",
                   "json",
                   "--member",
                   "big",
                   "--horizon",
                   "90s",
                   "--config",
                   "c.yaml",
                   "--seed",
                   "7" };
    assert_int_equal(parse(&a, &c, &e, (int)(sizeof ok / sizeof ok[0]), ok), CLI_CONTINUE);
    assert_string_equal(e, "");
    assert_string_equal(a.file, "pods.yaml");
    assert_int_equal(a.add_nodes, 2);
    assert_string_equal(a.node_template, "n.yaml");
    assert_int_equal(a.nremove, 2);
    assert_string_equal(a.remove[1], "b");
    assert_int_equal(a.nquotas, 1);
    assert_string_equal(a.quotas[0].queue, "team");
    assert_string_equal(c.server, "http://x:1");
    assert_string_equal(a.member, "big");
    assert_string_equal(a.config, "c.yaml");
    assert_int_equal(a.horizon_ms, 90000);
    assert_int_equal(a.seed, 7);
    assert_int_equal(c.fmt, CLI_OUT_JSON);
    whatif_args_free(&a);
    free(e);

    char *text[] = { "-f", "p", "-o", "text" };
    assert_int_equal(parse(&a, &c, &e, 4, text), CLI_CONTINUE);
    assert_int_equal(c.fmt, CLI_OUT_TABLE);
    assert_int_equal(a.horizon_ms, 120000);
    whatif_args_free(&a);
    free(e);

    static const struct {
        int argc;
        char *argv[6];
        const char *err;
    } bad[] = {
        { 0, { NULL }, "error: -f FILE is required (the pods that would be submitted)\n" },
        { 3, { "-f", "p", "--add-nodes" }, "error: --add-nodes needs a value\n" },
        { 4, { "-f", "p", "--add-nodes", "0" }, "error: --add-nodes 0: a number of nodes from 1 to 1000\n" },
        { 4, { "-f", "p", "--add-nodes", "2" }, "error: --add-nodes and --node-template go together\n" },
        { 4, { "-f", "p", "--set-quota", "q" }, "error: --set-quota q: want QUEUE=gpu:N[,cpu:Q][,memory:Q]\n" },
        { 4,
          { "-f", "p", "--horizon", "soon" },
          "error: --horizon soon: a duration from 1ms to 24h (\"90s\", \"5m\")\n" },
        { 6,
          { "-f", "p", "--snapshot", "s", "--server", "http://u" },
          "error: --snapshot and --server: the state is one or the other\n" },
        { 3, { "-f", "p", "--bogus" }, "error: unknown argument \"--bogus\"\n" },
        { 4, { "-f", "p", "-o", "wide-ish" }, "error: unknown output format \"wide-ish\" (table, json, yaml)\n" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = parse(&a, &c, &e, bad[i].argc, (char **)bad[i].argv);
        if (rc != 2 || strncmp(e, bad[i].err, strlen(bad[i].err)) != 0)
            fail_msg("case %zu: rc %d, stderr %s", i, rc, e);
        whatif_args_free(&a);
        free(e);
    }
    char *help[] = { "-h" };
    assert_int_equal(parse(&a, &c, &e, 1, help), 0);
    whatif_args_free(&a);
    free(e);
}

/* ------------------------------------------------------------ quota */

static void test_parse_quota(void **st)
{
    (void)st;
    whatif_quota_t q;
    char err[300];
    assert_int_equal(whatif_parse_quota("team-a=gpu:12,cpu:8,memory:64Gi", &q, err, sizeof err), 0);
    assert_string_equal(q.queue, "team-a");
    assert_int_equal(json_integer_value(q.val[0]), 12);
    assert_int_equal(json_integer_value(q.val[1]), 8000);
    assert_true(json_is_real(q.val[2]));
    assert_true(json_real_value(q.val[2]) > 68719.47 && json_real_value(q.val[2]) < 68719.48);
    whatif_quota_free(&q);
    assert_int_equal(whatif_parse_quota("t=cpu:500m", &q, err, sizeof err), 0);
    assert_null(q.val[0]);
    assert_int_equal(json_integer_value(q.val[1]), 500);
    whatif_quota_free(&q);
    assert_int_equal(whatif_parse_quota("t=gpu:-1", &q, err, sizeof err), 0);
    assert_int_equal(json_integer_value(q.val[0]), -1);
    whatif_quota_free(&q);

    static const struct {
        const char *arg, *err;
    } bad[] = {
        { "=gpu:1", "--set-quota =gpu:1: want QUEUE=gpu:N[,cpu:Q][,memory:Q]" },
        { "t=", "--set-quota t=: want QUEUE=gpu:N[,cpu:Q][,memory:Q]" },
        { "t=disk:1", "--set-quota t=disk:1: \"disk\" is not gpu:N, cpu:Q or memory:Q" },
        { "t=gpu", "--set-quota t=gpu: \"gpu\" is not gpu:N, cpu:Q or memory:Q" },
        { "t=gpu:1,gpu:2", "--set-quota t=gpu:1,gpu:2: gpu given twice" },
        { "t=gpu:1.5", "--set-quota t=gpu:1.5: gpu must be a whole number" },
        { "t=cpu:lots", NULL },
        { "t=,", "--set-quota t=,: no resource given" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (whatif_parse_quota(bad[i].arg, &q, err, sizeof err) != -1)
            fail_msg("%s: accepted", bad[i].arg);
        if (bad[i].err)
            assert_string_equal(err, bad[i].err);
        else
            assert_non_null(strstr(err, "--set-quota t=cpu:lots: cpu: "));
        assert_null(q.queue);
    }
}

static void test_set_quota(void **st)
{
    (void)st;
    json_t *items = J("[{\"kind\":\"Queue\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"resources\":{\"gpu\":{"
                      "\"quota\":2,\"limit\":10}},\"pools\":{\"p\":{\"resources\":{\"gpu\":{\"quota\":1}}},\"r\":{"
                      "\"resources\":{\"cpu\":{\"quota\":1}}}}}},{\"kind\":\"Queue\",\"metadata\":{\"name\":\"b\"}}]");
    whatif_quota_t q;
    char err[300];
    assert_int_equal(whatif_parse_quota("a=gpu:8,cpu:4", &q, err, sizeof err), 0);
    assert_int_equal(whatif_set_quota(items, &q, err, sizeof err), 0);
    whatif_quota_free(&q);
    assert_json(json_object_get(json_array_get(items, 0), "spec"),
                "{\"resources\":{\"gpu\":{\"quota\":8,\"limit\":10},\"cpu\":{\"quota\":4000}},\"pools\":{\"p\":{"
                "\"resources\":{\"gpu\":{\"quota\":8}}},\"r\":{\"resources\":{\"cpu\":{\"quota\":4000}}}}}");
    /* a queue without a spec gets one */
    assert_int_equal(whatif_parse_quota("b=memory:2G", &q, err, sizeof err), 0);
    assert_int_equal(whatif_set_quota(items, &q, err, sizeof err), 0);
    whatif_quota_free(&q);
    assert_json(json_object_get(json_array_get(items, 1), "spec"), "{\"resources\":{\"memory\":{\"quota\":2000}}}");
    assert_int_equal(whatif_parse_quota("a=gpu:11", &q, err, sizeof err), 0);
    assert_int_equal(whatif_set_quota(items, &q, err, sizeof err), -1);
    assert_string_equal(err, "--set-quota: queue a: gpu limit 10 is below the new quota 11");
    whatif_quota_free(&q);
    assert_int_equal(whatif_parse_quota("nobody=gpu:1", &q, err, sizeof err), 0);
    assert_int_equal(whatif_set_quota(items, &q, err, sizeof err), -1);
    assert_string_equal(err, "--set-quota: no Queue named nobody");
    whatif_quota_free(&q);
    json_decref(items);
}

/* ------------------------------------------------------------ nodes */

static void test_add_nodes(void **st)
{
    (void)st;
    char err[300];
    json_t *items = J("[{\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-whatif-2\"}}]");
    json_t *tmpl = J("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu\",\"uid\":\"u\","
                     "\"resourceVersion\":\"9\",\"labels\":{\"kubernetes.io/hostname\":\"gpu\",\"pool\":\"p\"}},"
                     "\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/not-ready\",\"effect\":\"NoSchedule\"},{"
                     "\"key\":\"gpu\",\"effect\":\"NoSchedule\"}]},\"status\":{\"allocatable\":{\"cpu\":\"8\"},"
                     "\"images\":[{\"names\":[\"x\"]}]}}");
    assert_int_equal(whatif_add_nodes(items, tmpl, 2, err, sizeof err), -1);
    assert_string_equal(err, "--add-nodes: a node named gpu-whatif-2 exists already");
    json_array_clear(items);
    assert_int_equal(whatif_add_nodes(items, tmpl, 2, err, sizeof err), 0);
    assert_int_equal(json_array_size(items), 2);
    json_t *n = json_array_get(items, 1);
    json_t *meta = json_object_get(n, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "name")), "gpu-whatif-2");
    assert_string_equal(json_string_value(json_object_get(meta, "uid")), "whatif-node-gpu-whatif-2");
    assert_null(json_object_get(meta, "resourceVersion"));
    assert_json(json_object_get(meta, "labels"), "{\"kubernetes.io/hostname\":\"gpu-whatif-2\",\"pool\":\"p\"}");
    assert_json(json_object_get(n, "spec"), "{\"taints\":[{\"key\":\"gpu\",\"effect\":\"NoSchedule\"}]}");
    assert_json(json_object_get(n, "status"), "{\"allocatable\":{\"cpu\":\"8\"}}");
    /* the template is not changed */
    assert_string_equal(json_string_value(json_object_get(json_object_get(tmpl, "metadata"), "uid")), "u");
    json_decref(tmpl);

    tmpl = J("{\"kind\":\"Node\",\"metadata\":{}}");
    assert_int_equal(whatif_add_nodes(items, tmpl, 1, err, sizeof err), -1);
    assert_string_equal(err, "--node-template: the Node has no status.allocatable (what it offers)");
    json_decref(tmpl);
    tmpl = J("{\"kind\":\"Pod\"}");
    assert_int_equal(whatif_add_nodes(items, tmpl, 1, err, sizeof err), -1);
    assert_string_equal(err, "--node-template: not a Node (kind Pod)");
    json_decref(tmpl);
    tmpl = J("{\"kind\":\"Node\",\"status\":{\"allocatable\":{\"cpu\":\"1\"}}}");
    assert_int_equal(whatif_add_nodes(items, tmpl, 1, err, sizeof err), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_array_get(items, 2), "metadata"), "name")),
        "whatif-node-1");
    json_decref(tmpl);
    json_decref(items);
}

static void test_remove_node(void **st)
{
    (void)st;
    char err[300];
    int req = -1, drop = -1;
    json_t *items =
        J("[{\"kind\":\"Node\",\"metadata\":{\"name\":\"a\"}},{\"kind\":\"CSINode\",\"metadata\":{\"name\":\"a\"}},"
          "{\"kind\":\"Node\",\"metadata\":{\"name\":\"b\"}},"
          "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"rs-pod\",\"uid\":\"u1\",\"ownerReferences\":[{\"kind\":"
          "\"ReplicaSet\",\"name\":\"rs\",\"controller\":true}]},\"spec\":{\"nodeName\":\"a\"},\"status\":{\"phase\":"
          "\"Running\",\"startTime\":\"x\"}},"
          "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"ds-pod\",\"ownerReferences\":[{\"kind\":\"DaemonSet\","
          "\"controller\":true}]},\"spec\":{\"nodeName\":\"a\"}},"
          "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"bare\"},\"spec\":{\"nodeName\":\"a\"}},"
          "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"elsewhere\"},\"spec\":{\"nodeName\":\"b\"}}]");
    assert_int_equal(whatif_remove_node(items, "a", &req, &drop, err, sizeof err), 0);
    assert_int_equal(req, 1);
    assert_int_equal(drop, 2);
    assert_json(items, "[{\"kind\":\"Node\",\"metadata\":{\"name\":\"b\"}},"
                       "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"rs-pod\",\"uid\":\"u1-whatif\",\"ownerReferences\":"
                       "[{\"kind\":\"ReplicaSet\",\"name\":\"rs\",\"controller\":true}]},\"spec\":{},\"status\":{"
                       "\"phase\":\"Pending\"}},"
                       "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"elsewhere\"},\"spec\":{\"nodeName\":\"b\"}}]");
    assert_int_equal(whatif_remove_node(items, "a", &req, &drop, err, sizeof err), -1);
    assert_string_equal(err, "--remove-node: no node named a");
    json_decref(items);
}

static void test_overlay(void **st)
{
    (void)st;
    char err[300];
    json_t *items = J("[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"uid\":\"u1\"},\"spec\":{}},"
                      "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"q\",\"uid\":\"u2\"},\"spec\":{}}]");
    json_t *state = J("{\"assumed\":[{\"uid\":\"u1\",\"node\":\"n1\"},{\"uid\":\"gone\",\"node\":\"n1\"}],"
                      "\"nominated\":[{\"uid\":\"u2\",\"node\":\"n2\"}]}");
    assert_int_equal(whatif_overlay(items, state, err, sizeof err), 2);
    assert_json(items,
                "[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"uid\":\"u1\"},\"spec\":{\"nodeName\":"
                "\"n1\"}},{\"kind\":\"Pod\",\"metadata\":{\"name\":\"q\",\"uid\":\"u2\"},\"spec\":{},\"status\":{"
                "\"nominatedNodeName\":\"n2\"}}]");
    json_decref(state);
    state = J("{\"assumed\":{}}");
    assert_int_equal(whatif_overlay(items, state, err, sizeof err), -1);
    assert_string_equal(err, "the leader's state has no assumed and nominated lists");
    json_decref(state);
    json_decref(items);
}

/* ------------------------------------------------------------ submissions */

static void test_submissions(void **st)
{
    (void)st;
    char err[400];
    json_t *items = J("[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"taken\",\"namespace\":\"default\"}}]");
    json_t *objs = J("[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"w-\",\"labels\":{"
                     "\"scheduling.x-k8s.io/pod-group\":\"g\"}},\"spec\":{\"containers\":[]}},"
                     "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":"
                     "\"g\",\"namespace\":\"ml\"},\"spec\":{\"minMember\":2},\"status\":{\"phase\":\"Running\"}}]");
    json_t *subs = whatif_submissions(objs, items, NULL, "ai-scheduler", 1700000000000LL, err, sizeof err);
    assert_non_null(subs);
    assert_json(
        subs,
        "[{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"g\","
        "\"namespace\":\"ml\",\"uid\":\"whatif-1-g\",\"creationTimestamp\":\"2023-11-14T22:13:20Z\","
        "\"resourceVersion\":\"1\"},\"spec\":{\"minMember\":2}},"
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"w-\",\"name\":\"w-whatif2\","
        "\"namespace\":\"default\",\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"g\"},\"uid\":"
        "\"whatif-2-w-whatif2\",\"creationTimestamp\":\"2023-11-14T22:13:20Z\",\"resourceVersion\":\"1\"},"
        "\"spec\":{\"containers\":[],\"schedulerName\":\"ai-scheduler\",\"priority\":0},\"status\":{\"phase\":\"Pending\"}}]");
    json_decref(subs);
    json_decref(objs);

    static const struct {
        const char *objs, *err;
    } bad[] = {
        { "[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"taken\"},\"spec\":{}}]",
          "Pod default/taken already exists (the API server would refuse it)" },
        { "[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"},\"spec\":{}},{\"kind\":\"Pod\",\"metadata\":{\"name\":"
          "\"x\"},\"spec\":{}}]",
          "Pod default/x already exists (the API server would refuse it)" },
        { "[{\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"}}]",
          "Deployment: whatif takes Pods, PodGroups and MultiClusterJobs rendering to them (a controller's pods: "
          "submit the pods it would create)" },
        { "[{\"kind\":\"Pod\",\"metadata\":{}}]", "a Pod without metadata.name or generateName" },
        { "[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"n\"}}]", "Pod default/n has no spec" },
        { "[{\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"g\"}}]", "no Pod to place" },
        { "[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"n\"},\"spec\":{\"priorityClassName\":\"vip\"}}]",
          "no PriorityClass named vip (the API server would refuse the pod)" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        objs = J(bad[i].objs);
        err[0] = '\0';
        subs = whatif_submissions(objs, items, NULL, "ai-scheduler", 0, err, sizeof err);
        if (subs)
            fail_msg("case %zu accepted", i);
        assert_string_equal(err, bad[i].err);
        json_decref(objs);
    }
    json_decref(items);
}

/* spec.priority as the Priority admission plugin sets it */
static void test_submissions_priority(void **st)
{
    (void)st;
    char err[300];
    json_t *items = J("[{\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"hi\"},\"value\":50,"
                      "\"preemptionPolicy\":\"Never\"},{\"kind\":\"PriorityClass\",\"metadata\":{\"name\":"
                      "\"dflt\"},\"value\":7,\"globalDefault\":true}]");
    json_t *objs = J("[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"priorityClassName\":\"hi\"}},"
                     "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\"},\"spec\":{}}]");
    json_t *subs = whatif_submissions(objs, items, NULL, "s", 0, err, sizeof err);
    assert_non_null(subs);
    assert_json(
        json_object_get(json_array_get(subs, 0), "spec"),
        "{\"priorityClassName\":\"hi\",\"schedulerName\":\"s\",\"priority\":50,\"preemptionPolicy\":\"Never\"}");
    assert_json(json_object_get(json_array_get(subs, 1), "spec"),
                "{\"priorityClassName\":\"dflt\",\"schedulerName\":\"s\",\"priority\":7}");
    json_decref(subs);
    json_decref(objs);
    json_decref(items);
}

static void test_submissions_mcjob(void **st)
{
    (void)st;
    char err[400];
    json_t *items = json_array();
    json_t *objs = J("[{\"apiVersion\":\"resource.aibee.cn/v1alpha1\",\"kind\":\"MultiClusterJob\",\"metadata\":{"
                     "\"name\":\"ft\",\"namespace\":\"ml\"},\"spec\":{\"clusters\":[{\"name\":\"big\"},{\"name\":"
                     "\"here\",\"namespace\":\"edge\"}],\"params\":{\"cpu\":{\"big\":\"16\",\"here\":\"500m\"}},"
                     "\"template\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":\"m\","
                     "\"resources\":{\"requests\":{\"cpu\":\"<% $mcc.cpu %>\"}}}]}}]}}]");
    json_t *subs = whatif_submissions(objs, items, NULL, "ai-scheduler", 0, err, sizeof err);
    assert_non_null(subs);
    assert_int_equal(json_array_size(subs), 1);
    json_t *pod = json_array_get(subs, 0);
    json_t *meta = json_object_get(pod, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "name")), "ft-big");
    assert_string_equal(json_string_value(json_object_get(meta, "namespace")), "ml");
    char *txt = dump(pod);
    assert_non_null(strstr(txt, "\"cpu\":\"16\""));
    free(txt);
    json_decref(subs);
    subs = whatif_submissions(objs, items, "here", "ai-scheduler", 0, err, sizeof err);
    assert_non_null(subs);
    meta = json_object_get(json_array_get(subs, 0), "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "name")), "ft-here");
    assert_string_equal(json_string_value(json_object_get(meta, "namespace")), "edge");
    txt = dump(json_array_get(subs, 0));
    assert_non_null(strstr(txt, "\"cpu\":\"500m\""));
    free(txt);
    json_decref(subs);
    assert_null(whatif_submissions(objs, items, "nope", "ai-scheduler", 0, err, sizeof err));
    assert_string_equal(err, "MultiClusterJob ft: no member cluster nope");
    json_decref(objs);
    json_decref(items);
}

/* ------------------------------------------------------------ the answer */

static sb_action_t act(sb_action_kind_t k, const char *ns, const char *name, const char *uid, const char *node)
{
    sb_action_t a;
    memset(&a, 0, sizeof a);
    a.kind = k;
    a.ns = ns;
    a.name = name;
    a.uid = uid;
    a.node = node;
    return a;
}

static void test_result_single(void **st)
{
    (void)st;
    json_t *subs = J("[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"namespace\":\"d\",\"uid\":\"ua\"}},"
                     "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\",\"namespace\":\"d\",\"uid\":\"ub\"}}]");
    whatif_result_t *r = whatif_result_new(subs);
    sb_action_t a = act(SB_UNSCHEDULABLE, "d", "b", "ub", NULL);
    a.reason = "Unschedulable";
    a.message = "0/3 nodes are available: 3 Insufficient cpu.";
    whatif_result_action(r, &a);
    a = act(SB_BIND, "d", "a", "ua", "n2");
    a.lender = "cpu";
    whatif_result_action(r, &a);
    a = act(SB_BIND, "x", "other", "uo", "n1"); /* a pod of the cluster */
    whatif_result_action(r, &a);
    a = act(SB_EVICT, "x", "low", "ul", "n2");
    a.reason = "preemption";
    a.by = "d/a";
    whatif_result_action(r, &a);
    a = act(SB_EVICT, "x", "unrelated", "uu", "n3");
    a.reason = "preemption";
    a.by = "x/someone-else";
    whatif_result_action(r, &a);
    assert_false(whatif_result_done(r));
    json_t *notes = J("[\"n\"]");
    json_t *ans = whatif_result_json(r, "list", 31.5, notes);
    assert_json(ans, "{\"state\":\"list\",\"fits\":false,\"placements\":[{\"pod\":\"d/a\",\"node\":\"n2\","
                     "\"borrowedFrom\":\"cpu\"}],\"pending\":[{\"pod\":\"d/b\",\"reason\":\"Unschedulable\","
                     "\"message\":\"0/3 nodes are available: 3 Insufficient cpu.\",\"nominatedNode\":null}],"
                     "\"victims\":[{\"pod\":\"x/low\",\"node\":\"n2\",\"why\":\"preemption\",\"by\":\"d/a\"}],"
                     "\"borrowedFrom\":[\"cpu\"],\"waitingBehind\":null,\"reason\":\"0/3 nodes are available: 3 "
                     "Insufficient cpu.\",\"virtualSeconds\":31.5,\"otherPodsPlaced\":1,\"notes\":[\"n\"]}");
    /* the text form says the same */
    char *txt = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&txt, &len);
    assert_int_equal(whatif_print_text(f, ans), 0);
    fclose(f);
    assert_string_equal(txt, "State:       a LIST of the API server (the leader was not asked or not reachable)\n"
                             "Fits:        no\n"
                             "Placements:\n"
                             "  d/a -> n2 (borrowed from pool cpu)\n"
                             "Not placed:\n"
                             "  d/b: 0/3 nodes are available: 3 Insufficient cpu.\n"
                             "Victims:\n"
                             "  x/low on n2: preemption (for d/a)\n"
                             "Reason:      0/3 nodes are available: 3 Insufficient cpu.\n"
                             "Note:        n\n");
    free(txt);
    json_decref(ans);
    json_decref(notes);

    a = act(SB_BIND, "d", "b", "ub", "n1");
    whatif_result_action(r, &a);
    assert_true(whatif_result_done(r));
    ans = whatif_result_json(r, "leader", 0, NULL);
    assert_true(json_is_true(json_object_get(ans, "fits")));
    assert_true(json_is_null(json_object_get(ans, "reason")));
    assert_int_equal(json_array_size(json_object_get(ans, "placements")), 2);
    json_decref(ans);
    whatif_result_free(r);
    json_decref(subs);
}

static void test_result_gang(void **st)
{
    (void)st;
    json_t *subs = J("[{\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"g\",\"namespace\":\"d\"},\"spec\":{"
                     "\"minMember\":2}},"
                     "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"w0\",\"namespace\":\"d\",\"uid\":\"u0\",\"labels\":{"
                     "\"scheduling.x-k8s.io/pod-group\":\"g\"}}},"
                     "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"w1\",\"namespace\":\"d\",\"uid\":\"u1\",\"labels\":{"
                     "\"scheduling.x-k8s.io/pod-group\":\"g\"}}},"
                     "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"w2\",\"namespace\":\"d\",\"uid\":\"u2\",\"labels\":{"
                     "\"scheduling.x-k8s.io/pod-group\":\"g\"}}}]");
    whatif_result_t *r = whatif_result_new(subs);
    sb_action_t a = act(SB_UNSCHEDULABLE, "d", "w0", "u0", NULL);
    a.reason = "Unschedulable";
    a.message = "pod group d/g: waiting behind pod group ml/big, which goes first in this pool and does not fit yet";
    whatif_result_action(r, &a);
    a = act(SB_BIND, "d", "w1", "u1", "n1");
    whatif_result_action(r, &a);
    json_t *ans = whatif_result_json(r, "snapshot", 1, NULL);
    assert_true(json_is_false(json_object_get(ans, "fits")));
    assert_string_equal(json_string_value(json_object_get(ans, "waitingBehind")), "ml/big");
    json_decref(ans);
    /* the minimum bound: it fits, a third member still pending */
    a = act(SB_BIND, "d", "w0", "u0", "n2");
    whatif_result_action(r, &a);
    ans = whatif_result_json(r, "snapshot", 1, NULL);
    assert_true(json_is_true(json_object_get(ans, "fits")));
    assert_true(json_is_null(json_object_get(ans, "waitingBehind")));
    assert_int_equal(json_array_size(json_object_get(ans, "pending")), 1);
    json_decref(ans);
    whatif_result_free(r);
    /* a decision record's word wins over the message */
    r = whatif_result_new(subs);
    a = act(SB_UNSCHEDULABLE, "d", "w0", "u0", NULL);
    a.message = "pod group d/g: waiting behind pod group ml/big, which goes first in this pool and does not fit yet";
    whatif_result_action(r, &a);
    whatif_result_explain(r, "d", "w0", J("{\"gang\":{\"waitingBehind\":\"ml/other\"}}"));
    whatif_result_explain(r, "d", "nobody", J("{}"));
    ans = whatif_result_json(r, "snapshot", 1, NULL);
    assert_string_equal(json_string_value(json_object_get(ans, "waitingBehind")), "ml/other");
    json_t *dec = json_object_get(json_array_get(json_object_get(ans, "pending"), 0), "decision");
    assert_json(dec, "{\"gang\":{\"waitingBehind\":\"ml/other\"}}");
    json_decref(ans);
    whatif_result_free(r);
    json_decref(subs);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_parse_quota),
        cmocka_unit_test(test_set_quota),
        cmocka_unit_test(test_add_nodes),
        cmocka_unit_test(test_remove_node),
        cmocka_unit_test(test_overlay),
        cmocka_unit_test(test_submissions),
        cmocka_unit_test(test_submissions_priority),
        cmocka_unit_test(test_submissions_mcjob),
        cmocka_unit_test(test_result_single),
        cmocka_unit_test(test_result_gang),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
