/* test_plugins.c -- each framework plugin against pods and nodes parsed from
 * API-shaped JSON: filter pass/fail with reasons, raw and normalized scores. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api/types.h"
#include "framework/framework.h"
#include "framework/nodeinfo.h"
#include "framework/plugins/plugins.h"
#include "scheduler/capabilities.h"

#include "fixtures.h"

/* ---- fixtures ----------------------------------------------------------- */

/* spec is the body of pod.spec without containers' wrapper; status optional. */
static pod_t *mkpod(const char *name, const char *spec, const char *status)
{
    char buf[4096];
    char err[256] = "";
    snprintf(buf, sizeof(buf),
             "{'kind':'Pod','apiVersion':'v1','metadata':{'name':'%s','namespace':'default','uid':'uid-%s',"
             "'creationTimestamp':'2024-01-01T00:00:00Z'},'spec':{%s},'status':{%s}}",
             name, name, spec, status ? status : "'phase':'Pending'");
    json_t *j = parse_sq(buf);
    pod_t *p = pod_from_json(j, err, sizeof(err));
    json_decref(j);
    if (p == NULL)
        fail_msg("pod_from_json(%s): %s", name, err);
    return p;
}

/* Pod with one container requesting the given ResourceList body. */
static pod_t *mkpod_req(const char *name, const char *requests)
{
    char spec[1024];
    snprintf(spec, sizeof(spec), "'containers':[{'name':'c','image':'x','resources':{'requests':{%s}}}]", requests);
    return mkpod(name, spec, NULL);
}

static node_t *mknode(const char *name, const char *labels, const char *alloc, const char *spec)
{
    char buf[4096];
    char err[256] = "";
    snprintf(buf, sizeof(buf),
             "{'kind':'Node','apiVersion':'v1','metadata':{'name':'%s','uid':'nuid-%s','labels':{%s}},"
             "'spec':{%s},'status':{'capacity':{%s},'allocatable':{%s}}}",
             name, name, labels ? labels : "", spec ? spec : "", alloc, alloc);
    json_t *j = parse_sq(buf);
    node_t *n = node_from_json(j, err, sizeof(err));
    json_decref(j);
    if (n == NULL)
        fail_msg("node_from_json(%s): %s", name, err);
    return n;
}

#define ALLOC_4C8G "'cpu':'4','memory':'8Gi','pods':'110'"

static node_info_t *mkni(node_t *n)
{
    node_info_t *ni = node_info_new(n->name);
    node_info_set_node(ni, n);
    node_unref(n);
    return ni;
}

/* Adds a pod to the node and drops the caller's reference. */
static void place(node_info_t *ni, pod_t *p)
{
    node_info_add_pod(ni, p);
    pod_unref(p);
}

/* Runs one plugin's PreFilter then Filter. */
static int run_filter(const fw_plugin_t *pl, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    cycle_state_t cs;
    memset(&cs, 0, sizeof(cs));
    cs.pod = pod;
    fw_status_reset(st);
    if (pl->pre_filter)
        assert_int_equal(pl->pre_filter(pl, &cs, pod, st), FW_SUCCESS);
    cs.prefiltered = 1;
    return pl->filter(pl, &cs, pod, ni, st);
}

/* ---- NodeUnschedulable ---------------------------------------------------- */

static void test_unschedulable(void **state)
{
    fw_plugin_t pl;
    fw_status_t st;
    plugin_node_unschedulable(&pl);
    node_info_t *cordoned = mkni(mknode("n1", NULL, ALLOC_4C8G, "'unschedulable':true"));
    node_info_t *open = mkni(mknode("n2", NULL, ALLOC_4C8G, NULL));
    pod_t *plain = mkpod_req("p", "'cpu':'1'");
    pod_t *tol = mkpod("t",
                       "'containers':[{'name':'c','image':'x'}],'tolerations':[{'key':"
                       "'node.kubernetes.io/unschedulable','operator':'Exists','effect':'NoSchedule'}]",
                       NULL);
    pod_t *wrong = mkpod("w",
                         "'containers':[{'name':'c','image':'x'}],'tolerations':[{'key':"
                         "'node.kubernetes.io/unschedulable','operator':'Exists','effect':'NoExecute'}]",
                         NULL);

    assert_int_equal(run_filter(&pl, plain, cordoned, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(st.nreasons, 1);
    assert_string_equal(st.reasons[0], "node(s) were unschedulable");
    assert_int_equal(run_filter(&pl, plain, open, &st), FW_SUCCESS);
    assert_int_equal(st.nreasons, 0);
    assert_int_equal(run_filter(&pl, tol, cordoned, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, wrong, cordoned, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);

    pod_unref(plain);
    pod_unref(tol);
    pod_unref(wrong);
    node_info_free(cordoned);
    node_info_free(open);
}

/* ---- NodeName ------------------------------------------------------------- */

static void test_node_name(void **state)
{
    fw_plugin_t pl;
    fw_status_t st;
    plugin_node_name(&pl);
    node_info_t *n1 = mkni(mknode("n1", NULL, ALLOC_4C8G, NULL));
    node_info_t *n2 = mkni(mknode("n2", NULL, ALLOC_4C8G, NULL));
    pod_t *pinned = mkpod("p", "'nodeName':'n2','containers':[{'name':'c','image':'x'}]", NULL);
    pod_t *free_pod = mkpod_req("f", "'cpu':'1'");

    assert_int_equal(run_filter(&pl, pinned, n1, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(st.reasons[0], "node(s) didn't match the requested hostname");
    assert_int_equal(run_filter(&pl, pinned, n2, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, free_pod, n1, &st), FW_SUCCESS);

    pod_unref(pinned);
    pod_unref(free_pod);
    node_info_free(n1);
    node_info_free(n2);
}

/* ---- NodeResourcesFit ----------------------------------------------------- */

static void test_fit_cpu_memory_all_reasons(void **state)
{
    fw_plugin_t pl;
    fw_status_t st;
    plugin_node_resources_fit(&pl);
    node_info_t *ni = mkni(mknode("n1", NULL, ALLOC_4C8G, NULL));
    place(ni, mkpod_req("used", "'cpu':'3','memory':'6Gi'"));
    pod_t *small = mkpod_req("small", "'cpu':'1','memory':'2Gi'");
    pod_t *big = mkpod_req("big", "'cpu':'1500m','memory':'3Gi'");
    pod_t *cpu_only = mkpod_req("cpu", "'cpu':'2'");

    assert_int_equal(run_filter(&pl, small, ni, &st), FW_SUCCESS); /* exactly full */
    assert_int_equal(run_filter(&pl, big, ni, &st), FW_UNSCHEDULABLE);
    assert_int_equal(st.nreasons, 2);
    assert_string_equal(st.reasons[0], "Insufficient cpu");
    assert_string_equal(st.reasons[1], "Insufficient memory");
    assert_int_equal(run_filter(&pl, cpu_only, ni, &st), FW_UNSCHEDULABLE);
    assert_int_equal(st.nreasons, 1);
    assert_string_equal(st.reasons[0], "Insufficient cpu");

    pod_unref(small);
    pod_unref(big);
    pod_unref(cpu_only);
    node_info_free(ni);
}

/* Effective request = max(sum of containers, largest init container). */
static void test_fit_init_container_rule(void **state)
{
    fw_plugin_t pl;
    fw_status_t st;
    plugin_node_resources_fit(&pl);
    node_info_t *n25 = mkni(mknode("n25", NULL, "'cpu':'2500m','memory':'8Gi','pods':'110'", NULL));
    node_info_t *n3 = mkni(mknode("n3", NULL, "'cpu':'3','memory':'8Gi','pods':'110'", NULL));
    pod_t *p = mkpod("init",
                     "'initContainers':[{'name':'i','image':'x','resources':{'requests':{'cpu':'3'}}}],"
                     "'containers':[{'name':'a','image':'x','resources':{'requests':{'cpu':'1'}}},"
                     "{'name':'b','image':'x','resources':{'requests':{'cpu':'1','memory':'1Gi'}}}]",
                     NULL);

    assert_int_equal(p->requests.milli_cpu, 3000);
    assert_int_equal(run_filter(&pl, p, n25, &st), FW_UNSCHEDULABLE);
    assert_string_equal(st.reasons[0], "Insufficient cpu");
    assert_int_equal(run_filter(&pl, p, n3, &st), FW_SUCCESS);

    pod_unref(p);
    node_info_free(n25);
    node_info_free(n3);
}

static void test_fit_too_many_pods(void **state)
{
    fw_plugin_t pl;
    fw_status_t st;
    plugin_node_resources_fit(&pl);
    node_info_t *ni = mkni(mknode("n1", NULL, "'cpu':'4','memory':'8Gi','pods':'2'", NULL));
    pod_t *empty = mkpod("e", "'containers':[{'name':'c','image':'x'}]", NULL);
    pod_t *big = mkpod_req("big", "'cpu':'5'");

    place(ni, mkpod_req("a", "'cpu':'100m'"));
    assert_int_equal(run_filter(&pl, empty, ni, &st), FW_SUCCESS);
    /* A finished pod holds neither resources nor a pod slot. */
    place(ni, mkpod("done", "'containers':[{'name':'c','image':'x','resources':{'requests':{'cpu':'4'}}}]",
                    "'phase':'Succeeded'"));
    assert_int_equal(run_filter(&pl, empty, ni, &st), FW_SUCCESS);
    place(ni, mkpod_req("b", "'cpu':'100m'"));
    assert_int_equal(run_filter(&pl, empty, ni, &st), FW_UNSCHEDULABLE);
    assert_int_equal(st.nreasons, 1);
    assert_string_equal(st.reasons[0], "Too many pods");
    /* Every insufficient resource is reported together. */
    assert_int_equal(run_filter(&pl, big, ni, &st), FW_UNSCHEDULABLE);
    assert_int_equal(st.nreasons, 2);
    assert_string_equal(st.reasons[0], "Too many pods");
    assert_string_equal(st.reasons[1], "Insufficient cpu");

    pod_unref(empty);
    pod_unref(big);
    node_info_free(ni);
}

static void test_fit_gpu(void **state)
{
    fw_plugin_t pl;
    fw_status_t st;
    plugin_node_resources_fit(&pl);
    node_info_t *cpu_node = mkni(mknode("cpu", NULL, ALLOC_4C8G, NULL));
    node_info_t *gpu_node =
        mkni(mknode("gpu", NULL, "'cpu':'32','memory':'128Gi','pods':'110','nvidia.com/gpu':'4'", NULL));
    pod_t *two = mkpod("two",
                       "'containers':[{'name':'c','image':'x','resources':{'requests':{'cpu':'1',"
                       "'nvidia.com/gpu':'2'},'limits':{'nvidia.com/gpu':'2'}}}]",
                       NULL);

    assert_int_equal(run_filter(&pl, two, cpu_node, &st), FW_UNSCHEDULABLE);
    assert_int_equal(st.nreasons, 1);
    assert_string_equal(st.reasons[0], "Insufficient nvidia.com/gpu");
    assert_int_equal(run_filter(&pl, two, gpu_node, &st), FW_SUCCESS);
    place(gpu_node, mkpod("held",
                          "'containers':[{'name':'c','image':'x','resources':{'requests':{"
                          "'nvidia.com/gpu':'2'},'limits':{'nvidia.com/gpu':'2'}}}]",
                          NULL));
    assert_int_equal(run_filter(&pl, two, gpu_node, &st), FW_SUCCESS);
    place(gpu_node, mkpod("one",
                          "'containers':[{'name':'c','image':'x','resources':{'requests':{"
                          "'nvidia.com/gpu':'1'},'limits':{'nvidia.com/gpu':'1'}}}]",
                          NULL));
    assert_int_equal(run_filter(&pl, two, gpu_node, &st), FW_UNSCHEDULABLE);
    assert_string_equal(st.reasons[0], "Insufficient nvidia.com/gpu");

    /* Preemption's view: the same check with a victim's request taken out. */
    resources_t req = gpu_node->requested;
    assert_int_equal(res_get_scalar(&req, RES_GPU), 3);
    fw_status_reset(&st);
    assert_false(fw_fits_resources(two, gpu_node->node, &req, gpu_node->npods, &st));
    res_sub(&req, &gpu_node->pods[1]->requests);
    fw_status_reset(&st);
    assert_true(fw_fits_resources(two, gpu_node->node, &req, gpu_node->npods - 1, &st));
    assert_int_equal(st.nreasons, 0);

    pod_unref(two);
    node_info_free(cpu_node);
    node_info_free(gpu_node);
}

/* ---- NodeAffinity --------------------------------------------------------- */

/* Pod with required node affinity terms (a JSON list body), plus optional
 * extra spec fields. */
static pod_t *mkpod_affinity(const char *name, const char *extra, const char *terms)
{
    char spec[2048];
    snprintf(
        spec, sizeof(spec),
        "'containers':[{'name':'c','image':'x'}],%s%s"
        "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':[%s]}}}",
        extra ? extra : "", extra ? "," : "", terms);
    return mkpod(name, spec, NULL);
}

static void test_affinity_node_selector(void **state)
{
    fw_plugin_t pl;
    fw_status_t st;
    plugin_node_affinity(&pl, 1);
    node_info_t *ssd = mkni(mknode("n1", "'disk':'ssd','zone':'a'", ALLOC_4C8G, NULL));
    node_info_t *hdd = mkni(mknode("n2", "'disk':'hdd','zone':'a'", ALLOC_4C8G, NULL));
    pod_t *sel = mkpod("s", "'nodeSelector':{'disk':'ssd'},'containers':[{'name':'c','image':'x'}]", NULL);
    pod_t *none = mkpod("n", "'containers':[{'name':'c','image':'x'}]", NULL);
    /* nodeSelector AND required terms: ssd is right but zone b is not. */
    pod_t *both = mkpod_affinity("b", "'nodeSelector':{'disk':'ssd'}",
                                 "{'matchExpressions':[{'key':'zone','operator':'In','values':['b']}]}");

    assert_int_equal(run_filter(&pl, sel, ssd, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, sel, hdd, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(st.reasons[0], "node(s) didn't match Pod's node affinity/selector");
    assert_int_equal(run_filter(&pl, none, hdd, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, both, ssd, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);

    pod_unref(sel);
    pod_unref(none);
    pod_unref(both);
    node_info_free(ssd);
    node_info_free(hdd);
}

static void test_affinity_terms_ops(void **state)
{
    fw_plugin_t pl;
    fw_status_t st;
    plugin_node_affinity(&pl, 1);
    node_info_t *big = mkni(mknode("big", "'gpu-mem':'80','zone':'a'", ALLOC_4C8G, NULL));
    node_info_t *small = mkni(mknode("small", "'gpu-mem':'16','zone':'b'", ALLOC_4C8G, NULL));
    node_info_t *bare = mkni(mknode("bare", NULL, ALLOC_4C8G, NULL));
    pod_t *gt = mkpod_affinity("gt", NULL, "{'matchExpressions':[{'key':'gpu-mem','operator':'Gt','values':['40']}]}");
    pod_t *lt = mkpod_affinity("lt", NULL, "{'matchExpressions':[{'key':'gpu-mem','operator':'Lt','values':['40']}]}");
    /* OR of terms: zone b, or named big. */
    pod_t *orp = mkpod_affinity("or", NULL,
                                "{'matchExpressions':[{'key':'zone','operator':'In','values':['b']}]},"
                                "{'matchFields':[{'key':'metadata.name','operator':'In','values':['big']}]}");
    pod_t *notin = mkpod_affinity("ni", NULL,
                                  "{'matchExpressions':[{'key':'zone','operator':'NotIn','values':['a']},"
                                  "{'key':'gpu-mem','operator':'DoesNotExist'}]}");

    assert_int_equal(run_filter(&pl, gt, big, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, gt, small, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(run_filter(&pl, gt, bare, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(run_filter(&pl, lt, big, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(run_filter(&pl, lt, small, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, orp, big, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, orp, small, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, orp, bare, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(run_filter(&pl, notin, bare, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, notin, small, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);

    pod_unref(gt);
    pod_unref(lt);
    pod_unref(orp);
    pod_unref(notin);
    node_info_free(big);
    node_info_free(small);
    node_info_free(bare);
}

/* A term without requirements selects no node; other terms still count. */
static void test_affinity_empty_term(void **state)
{
    fw_plugin_t pl;
    fw_status_t st;
    plugin_node_affinity(&pl, 1);
    node_info_t *a = mkni(mknode("a", "'zone':'a'", ALLOC_4C8G, NULL));
    node_info_t *b = mkni(mknode("b", "'zone':'b'", ALLOC_4C8G, NULL));
    pod_t *empty = mkpod_affinity("e", NULL, "{'matchExpressions':[]}");
    pod_t *mixed = mkpod_affinity("m", NULL, "{},{'matchExpressions':[{'key':'zone','operator':'In','values':['a']}]}");

    assert_int_equal(run_filter(&pl, empty, a, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(run_filter(&pl, mixed, a, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, mixed, b, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);

    pod_unref(empty);
    pod_unref(mixed);
    node_info_free(a);
    node_info_free(b);
}

/* ---- TaintToleration ------------------------------------------------------ */

static void test_taint_filter(void **state)
{
    fw_plugin_t pl;
    fw_status_t st;
    plugin_taint_toleration(&pl, 1);
    node_info_t *ded =
        mkni(mknode("n1", NULL, ALLOC_4C8G, "'taints':[{'key':'dedicated','value':'gpu','effect':'NoSchedule'}]"));
    node_info_t *soft = mkni(
        mknode("n2", NULL, ALLOC_4C8G, "'taints':[{'key':'dedicated','value':'gpu','effect':'PreferNoSchedule'}]"));
    node_info_t *exec = mkni(mknode("n3", NULL, ALLOC_4C8G, "'taints':[{'key':'bad','effect':'NoExecute'}]"));
    pod_t *plain = mkpod("p", "'containers':[{'name':'c','image':'x'}]", NULL);
    pod_t *equal = mkpod("eq",
                         "'containers':[{'name':'c','image':'x'}],'tolerations':[{'key':'dedicated',"
                         "'operator':'Equal','value':'gpu','effect':'NoSchedule'}]",
                         NULL);
    pod_t *other = mkpod("ot",
                         "'containers':[{'name':'c','image':'x'}],'tolerations':[{'key':'dedicated',"
                         "'operator':'Equal','value':'cpu','effect':'NoSchedule'}]",
                         NULL);
    pod_t *exists = mkpod("ex",
                          "'containers':[{'name':'c','image':'x'}],'tolerations':[{'key':'dedicated',"
                          "'operator':'Exists'}]",
                          NULL);
    pod_t *all = mkpod("all", "'containers':[{'name':'c','image':'x'}],'tolerations':[{'operator':'Exists'}]", NULL);
    pod_t *wrong_effect = mkpod("we",
                                "'containers':[{'name':'c','image':'x'}],'tolerations':[{'key':'dedicated',"
                                "'operator':'Exists','effect':'NoExecute'}]",
                                NULL);

    assert_int_equal(run_filter(&pl, plain, ded, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(st.nreasons, 1);
    assert_string_equal(st.reasons[0], "node(s) had taint {dedicated: gpu}, that the pod didn't tolerate");
    assert_int_equal(run_filter(&pl, plain, soft, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, plain, exec, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(st.reasons[0], "node(s) had taint {bad: }, that the pod didn't tolerate");
    assert_int_equal(run_filter(&pl, equal, ded, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, other, ded, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(run_filter(&pl, exists, ded, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, exists, exec, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(run_filter(&pl, all, ded, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, all, exec, &st), FW_SUCCESS);
    assert_int_equal(run_filter(&pl, wrong_effect, ded, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);

    pod_unref(plain);
    pod_unref(equal);
    pod_unref(other);
    pod_unref(exists);
    pod_unref(all);
    pod_unref(wrong_effect);
    node_info_free(ded);
    node_info_free(soft);
    node_info_free(exec);
}

/* Raw score counts intolerable PreferNoSchedule taints; normalization
 * reverses it so the cleanest node scores 100. */
static void test_taint_score(void **state)
{
    fw_plugin_t pl;
    plugin_taint_toleration(&pl, 1);
    node_info_t *n[3];
    n[0] = mkni(mknode("n0", NULL, ALLOC_4C8G, "'taints':[{'key':'a','effect':'NoSchedule'}]"));
    n[1] = mkni(mknode("n1", NULL, ALLOC_4C8G, "'taints':[{'key':'a','effect':'PreferNoSchedule'}]"));
    n[2] = mkni(mknode("n2", NULL, ALLOC_4C8G,
                       "'taints':[{'key':'a','effect':'PreferNoSchedule'},"
                       "{'key':'b','effect':'PreferNoSchedule'}]"));
    pod_t *plain = mkpod("p", "'containers':[{'name':'c','image':'x'}]", NULL);
    pod_t *tol_b = mkpod("t",
                         "'containers':[{'name':'c','image':'x'}],'tolerations':[{'key':'b',"
                         "'operator':'Exists','effect':'PreferNoSchedule'}]",
                         NULL);
    int64_t s[3];

    for (int i = 0; i < 3; i++)
        s[i] = pl.score(&pl, NULL, plain, n[i]);
    assert_int_equal(s[0], 0);
    assert_int_equal(s[1], 1);
    assert_int_equal(s[2], 2);
    pl.normalize(&pl, NULL, plain, s, 3);
    assert_int_equal(s[0], 100);
    assert_int_equal(s[1], 50);
    assert_int_equal(s[2], 0);

    for (int i = 0; i < 3; i++)
        s[i] = pl.score(&pl, NULL, tol_b, n[i]);
    assert_int_equal(s[2], 1);
    /* Nothing intolerable anywhere: everyone gets the maximum. */
    s[0] = s[1] = s[2] = 0;
    pl.normalize(&pl, NULL, plain, s, 3);
    assert_int_equal(s[0], 100);
    assert_int_equal(s[2], 100);

    pod_unref(plain);
    pod_unref(tol_b);
    for (int i = 0; i < 3; i++)
        node_info_free(n[i]);
}

/* ---- NodePorts ------------------------------------------------------------ */

static pod_t *mkpod_port(const char *name, int port, const char *proto, const char *ip, const char *phase)
{
    char spec[512], status[64];
    snprintf(spec, sizeof(spec),
             "'containers':[{'name':'c','image':'x','ports':[{'containerPort':%d,"
             "'hostPort':%d,'protocol':'%s'%s%s%s}]}]",
             port, port, proto, ip ? ",'hostIP':'" : "", ip ? ip : "", ip ? "'" : "");
    snprintf(status, sizeof(status), "'phase':'%s'", phase ? phase : "Running");
    return mkpod(name, spec, status);
}

static void test_node_ports(void **state)
{
    fw_plugin_t pl;
    fw_status_t st;
    plugin_node_ports(&pl);
    node_info_t *ni = mkni(mknode("n1", NULL, ALLOC_4C8G, NULL));
    place(ni, mkpod_port("any8080", 8080, "TCP", NULL, NULL));
    place(ni, mkpod_port("ip9090", 9090, "TCP", "10.0.0.1", NULL));
    place(ni, mkpod_port("done7070", 7070, "TCP", NULL, "Failed"));

    struct {
        int port;
        const char *proto, *ip;
        int conflict;
    } cases[] = {
        { 8080, "TCP", "10.0.0.5", 1 },                                /* existing 0.0.0.0 covers every IP */
        { 8080, "TCP", NULL, 1 },       { 8080, "UDP", NULL, 0 },      /* other protocol */
        { 9090, "TCP", "10.0.0.2", 0 },                                /* other specific IP */
        { 9090, "TCP", "10.0.0.1", 1 }, { 9090, "TCP", "0.0.0.0", 1 }, /* wildcard hits the specific one */
        { 9091, "TCP", NULL, 0 },       { 7070, "TCP", NULL, 0 },      /* terminal pod released it */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pod_t *p = mkpod_port("new", cases[i].port, cases[i].proto, cases[i].ip, "Pending");
        int rc = run_filter(&pl, p, ni, &st);
        if (cases[i].conflict) {
            assert_int_equal(rc, FW_UNSCHEDULABLE);
            assert_string_equal(st.reasons[0], "node(s) didn't have free ports for the requested pod ports");
        } else if (rc != FW_SUCCESS) {
            fail_msg("case %zu (%d/%s/%s) conflicted", i, cases[i].port, cases[i].proto,
                     cases[i].ip ? cases[i].ip : "");
        }
        pod_unref(p);
    }
    node_info_free(ni);
}

/* ---- (Least|Most)Allocated ------------------------------------------------ */

static void test_least_vs_most(void **state)
{
    fw_config_t c;
    fw_plugin_t least, most;
    res_scorer_ctx_t lctx, mctx;
    fw_config_default(&c);
    c.strategy = SCORE_LEAST_ALLOCATED;
    plugin_resource_allocation(&least, &lctx, &c);
    c.strategy = SCORE_MOST_ALLOCATED;
    plugin_resource_allocation(&most, &mctx, &c);
    assert_string_equal(least.name, "NodeResourcesLeastAllocated");
    assert_string_equal(most.name, "NodeResourcesMostAllocated");

    node_info_t *busy = mkni(mknode("busy", NULL, ALLOC_4C8G, NULL));
    node_info_t *idle = mkni(mknode("idle", NULL, ALLOC_4C8G, NULL));
    place(busy, mkpod_req("u", "'cpu':'2','memory':'4Gi'"));
    pod_t *p = mkpod_req("p", "'cpu':'1','memory':'2Gi'");

    /* busy: 3/4 cpu, 6/8 mem with the pod; idle: 1/4, 2/8. */
    assert_int_equal(least.score(&least, NULL, p, busy), 25);
    assert_int_equal(least.score(&least, NULL, p, idle), 75);
    assert_int_equal(most.score(&most, NULL, p, busy), 75);
    assert_int_equal(most.score(&most, NULL, p, idle), 25);

    pod_unref(p);
    node_info_free(busy);
    node_info_free(idle);
}

/* GPUs weigh 3; a node without GPUs is scored on cpu and memory alone. */
static void test_most_allocated_gpu_weight(void **state)
{
    fw_config_t c;
    fw_plugin_t most;
    res_scorer_ctx_t ctx;
    fw_config_default(&c);
    plugin_resource_allocation(&most, &ctx, &c);

    node_info_t *gpu = mkni(mknode("g", NULL, "'cpu':'10','memory':'10Gi','pods':'110','nvidia.com/gpu':'8'", NULL));
    node_info_t *cpu = mkni(mknode("c", NULL, "'cpu':'10','memory':'10Gi','pods':'110'", NULL));
    place(gpu, mkpod("g6",
                     "'containers':[{'name':'c','image':'x','resources':{'requests':{'cpu':'1','memory':'1Gi',"
                     "'nvidia.com/gpu':'6'},'limits':{'nvidia.com/gpu':'6'}}}]",
                     NULL));
    pod_t *p = mkpod("p",
                     "'containers':[{'name':'c','image':'x','resources':{'requests':{'cpu':'4','memory':'4Gi',"
                     "'nvidia.com/gpu':'2'},'limits':{'nvidia.com/gpu':'2'}}}]",
                     NULL);
    pod_t *cpu_pod = mkpod_req("cp", "'cpu':'5','memory':'5Gi'");

    /* gpu: cpu 50, mem 50, gpu 100 -> (50+50+300)/5 = 80. */
    assert_int_equal(most.score(&most, NULL, p, gpu), 80);
    /* cpu node: (50+50)/2, the missing GPU is not held against it. */
    assert_int_equal(most.score(&most, NULL, cpu_pod, cpu), 50);

    pod_unref(p);
    pod_unref(cpu_pod);
    node_info_free(gpu);
    node_info_free(cpu);
}

/* Pods without requests count 100m/200Mi when scoring. */
static void test_nonzero_requests_in_scores(void **state)
{
    fw_config_t c;
    fw_plugin_t least;
    res_scorer_ctx_t ctx;
    fw_config_default(&c);
    c.strategy = SCORE_LEAST_ALLOCATED;
    plugin_resource_allocation(&least, &ctx, &c);
    node_info_t *ni = mkni(mknode("n", NULL, "'cpu':'1','memory':'2000Mi','pods':'110'", NULL));
    pod_t *p = mkpod("empty", "'containers':[{'name':'c','image':'x'}]", NULL);

    assert_int_equal(p->nonzero_cpu, 100);
    /* cpu (1000-100)*100/1000 = 90, memory (2000-200)*100/2000 = 90. */
    assert_int_equal(least.score(&least, NULL, p, ni), 90);

    pod_unref(p);
    node_info_free(ni);
}

/* ---- BalancedAllocation --------------------------------------------------- */

static void test_balanced(void **state)
{
    fw_plugin_t pl;
    plugin_balanced_allocation(&pl, 1);
    node_info_t *ni = mkni(mknode("n", NULL, ALLOC_4C8G, NULL));
    pod_t *even = mkpod_req("even", "'cpu':'2','memory':'4Gi'");
    pod_t *skew = mkpod_req("skew", "'cpu':'3','memory':'2Gi'");
    pod_t *over = mkpod_req("over", "'cpu':'4','memory':'1Gi'");

    assert_int_equal(pl.score(&pl, NULL, even, ni), 100);
    assert_int_equal(pl.score(&pl, NULL, skew, ni), 50); /* |0.75-0.25| */
    assert_int_equal(pl.score(&pl, NULL, over, ni), 0);  /* cpu fraction 1 */

    pod_unref(even);
    pod_unref(skew);
    pod_unref(over);
    node_info_free(ni);
}

/* kube 1.23+ (v1 profiles): std of the actual request fractions.
 * even 2c/4Gi on 4c/8Gi: 0.5, 0.5 -> std 0 -> 100.
 * skew 3c/2Gi: 0.75, 0.25 -> std 0.25 -> 75 (v1.20: 50).
 * over 4c/1Gi: 1, 0.125 -> std 0.4375 -> 56 (v1.20: 0 for a full cpu).
 * A best-effort pod scores 0 (kube skips the plugin for it); a pod with
 * cpu only counts memory as 0 requested, not v1.20's 200Mi default:
 * 1c on the node holding 1c/2Gi -> 0.5 and 0.25 -> std 0.125 -> 87. */
static void test_balanced_v1(void **state)
{
    fw_plugin_t pl;
    plugin_balanced_allocation_v1(&pl, 1);
    assert_string_equal(pl.name, "NodeResourcesBalancedAllocation");
    node_info_t *ni = mkni(mknode("n", NULL, ALLOC_4C8G, NULL));
    pod_t *even = mkpod_req("even", "'cpu':'2','memory':'4Gi'");
    pod_t *skew = mkpod_req("skew", "'cpu':'3','memory':'2Gi'");
    pod_t *over = mkpod_req("over", "'cpu':'4','memory':'1Gi'");
    pod_t *be = mkpod("be", "'containers':[{'name':'c','image':'x'}]", NULL);
    pod_t *cpu_only = mkpod_req("co", "'cpu':'1'");

    assert_int_equal(pl.score(&pl, NULL, even, ni), 100);
    assert_int_equal(pl.score(&pl, NULL, skew, ni), 75);
    assert_int_equal(pl.score(&pl, NULL, over, ni), 56);
    assert_int_equal(pl.score(&pl, NULL, be, ni), 0);
    place(ni, mkpod_req("u", "'cpu':'1','memory':'2Gi'"));
    assert_int_equal(pl.score(&pl, NULL, cpu_only, ni), 87);

    pod_unref(even);
    pod_unref(skew);
    pod_unref(over);
    pod_unref(be);
    pod_unref(cpu_only);
    node_info_free(ni);
}

/* kube 1.23+ leaves an extended resource the pod does not request out of
 * its NodeResourcesFit score: on the GPU node of the test above (6 of 8
 * GPUs used) a cpu pod 5c/5Gi scores (50+50)/2 = 50 MostAllocated, not
 * v1.20's (50 + 50 + 3*75)/5 = 65 with the GPUs counted. */
static void test_most_allocated_v1_skips_unrequested(void **state)
{
    fw_config_t c;
    fw_plugin_t most, most_v1;
    res_scorer_ctx_t ctx, ctx_v1;
    fw_config_default(&c);
    plugin_resource_allocation(&most, &ctx, &c);
    c.v1_resource_scores = 1;
    plugin_resource_allocation(&most_v1, &ctx_v1, &c);
    node_info_t *gpu = mkni(mknode("g", NULL, "'cpu':'10','memory':'10Gi','pods':'110','nvidia.com/gpu':'8'", NULL));
    place(gpu, mkpod("g6",
                     "'containers':[{'name':'c','image':'x','resources':{'requests':{'cpu':'0','memory':'0',"
                     "'nvidia.com/gpu':'6'},'limits':{'nvidia.com/gpu':'6'}}}]",
                     NULL));
    pod_t *cpu_pod = mkpod_req("cp", "'cpu':'5','memory':'5Gi'");
    assert_int_equal(most.score(&most, NULL, cpu_pod, gpu), 65);
    assert_int_equal(most_v1.score(&most_v1, NULL, cpu_pod, gpu), 50);
    pod_unref(cpu_pod);
    node_info_free(gpu);
}

/* ---- preferred NodeAffinity ----------------------------------------------- */

static void test_preferred_affinity(void **state)
{
    fw_plugin_t pl;
    plugin_node_affinity(&pl, 1);
    node_info_t *n[4];
    n[0] = mkni(mknode("n0", "'zone':'a','disk':'ssd'", ALLOC_4C8G, NULL));
    n[1] = mkni(mknode("n1", "'disk':'ssd'", ALLOC_4C8G, NULL));
    n[2] = mkni(mknode("n2", "'zone':'a'", ALLOC_4C8G, NULL));
    n[3] = mkni(mknode("n3", NULL, ALLOC_4C8G, NULL));
    pod_t *p = mkpod("p",
                     "'containers':[{'name':'c','image':'x'}],'affinity':{'nodeAffinity':{"
                     "'preferredDuringSchedulingIgnoredDuringExecution':["
                     "{'weight':10,'preference':{'matchExpressions':[{'key':'zone','operator':'In','values':['a']}]}},"
                     "{'weight':30,'preference':{'matchExpressions':[{'key':'disk','operator':'Exists'}]}}]}}",
                     NULL);
    pod_t *none = mkpod("none", "'containers':[{'name':'c','image':'x'}]", NULL);
    int64_t s[4];
    const int64_t raw[4] = { 40, 30, 10, 0 }, norm[4] = { 100, 75, 25, 0 };

    for (int i = 0; i < 4; i++)
        s[i] = pl.score(&pl, NULL, p, n[i]);
    for (int i = 0; i < 4; i++)
        assert_int_equal(s[i], raw[i]);
    pl.normalize(&pl, NULL, p, s, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(s[i], norm[i]);

    for (int i = 0; i < 4; i++)
        s[i] = pl.score(&pl, NULL, none, n[i]);
    pl.normalize(&pl, NULL, none, s, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(s[i], 0);

    pod_unref(p);
    pod_unref(none);
    for (int i = 0; i < 4; i++)
        node_info_free(n[i]);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unschedulable),
        cmocka_unit_test(test_node_name),
        cmocka_unit_test(test_fit_cpu_memory_all_reasons),
        cmocka_unit_test(test_fit_init_container_rule),
        cmocka_unit_test(test_fit_too_many_pods),
        cmocka_unit_test(test_fit_gpu),
        cmocka_unit_test(test_affinity_node_selector),
        cmocka_unit_test(test_affinity_terms_ops),
        cmocka_unit_test(test_affinity_empty_term),
        cmocka_unit_test(test_taint_filter),
        cmocka_unit_test(test_taint_score),
        cmocka_unit_test(test_node_ports),
        cmocka_unit_test(test_least_vs_most),
        cmocka_unit_test(test_most_allocated_gpu_weight),
        cmocka_unit_test(test_nonzero_requests_in_scores),
        cmocka_unit_test(test_balanced),
        cmocka_unit_test(test_balanced_v1),
        cmocka_unit_test(test_most_allocated_v1_skips_unrequested),
        cmocka_unit_test(test_preferred_affinity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
