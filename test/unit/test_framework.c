/* test_framework.c -- the framework as a whole: node_info bookkeeping,
 * statuses, the filter chain, weighted scores, the diagnosis message and the
 * number of feasible nodes to look for. */
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
#include "scheduler/capabilities.h"

#include "fixtures.h"

/* ---- fixtures ----------------------------------------------------------- */

static pod_t *mkpod(const char *name, const char *spec, const char *phase)
{
    char buf[4096];
    char err[256] = "";
    snprintf(buf, sizeof(buf),
             "{'kind':'Pod','apiVersion':'v1','metadata':{'name':'%s','namespace':'default','uid':'uid-%s'},"
             "'spec':{%s},'status':{'phase':'%s'}}",
             name, name, spec, phase ? phase : "Pending");
    json_t *j = parse_sq(buf);
    pod_t *p = pod_from_json(j, err, sizeof(err));
    json_decref(j);
    if (p == NULL)
        fail_msg("pod_from_json(%s): %s", name, err);
    return p;
}

static pod_t *mkpod_req(const char *name, const char *requests, const char *phase)
{
    char spec[1024];
    snprintf(spec, sizeof(spec), "'containers':[{'name':'c','image':'x','resources':{'requests':{%s}}}]", requests);
    return mkpod(name, spec, phase);
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
#define GI         (1024LL * 1024 * 1024)

static node_info_t *mkni(node_t *n)
{
    node_info_t *ni = node_info_new(n->name);
    node_info_set_node(ni, n);
    node_unref(n);
    return ni;
}

static void place(node_info_t *ni, pod_t *p)
{
    node_info_add_pod(ni, p);
    pod_unref(p);
}

/* ---- config and status ---------------------------------------------------- */

static void test_config_default(void **state)
{
    fw_config_t c;
    fw_config_default(&c);
    assert_int_equal(c.strategy, SCORE_MOST_ALLOCATED);
    assert_int_equal(c.nres_weights, 3);
    assert_string_equal(c.res_weights[0].name, "cpu");
    assert_int_equal(c.res_weights[0].weight, 1);
    assert_string_equal(c.res_weights[1].name, "memory");
    assert_int_equal(c.res_weights[1].weight, 1);
    assert_string_equal(c.res_weights[2].name, "nvidia.com/gpu");
    assert_int_equal(c.res_weights[2].weight, 3);
    assert_int_equal(c.weight_resources, 1);
    assert_int_equal(c.weight_balanced, 1);
    assert_int_equal(c.weight_node_affinity, 1);
    assert_int_equal(c.weight_taint_toleration, 1);
    assert_int_equal(c.percentage_of_nodes_to_score, 0);

    framework_t *fw = framework_new(&c);
    assert_int_equal(framework_config(fw)->strategy, SCORE_MOST_ALLOCATED);
    framework_free(fw);
}

static void test_status(void **state)
{
    fw_status_t st;
    char longr[300];

    fw_status_reset(&st);
    assert_int_equal(st.code, FW_SUCCESS);
    fw_status_add(&st, FW_UNSCHEDULABLE_UNRESOLVABLE, "a");
    fw_status_add(&st, FW_UNSCHEDULABLE, "b");
    assert_int_equal(st.code, FW_UNSCHEDULABLE_UNRESOLVABLE); /* the worst one stays */
    assert_int_equal(st.nreasons, 2);
    assert_string_equal(st.reasons[1], "b");
    memset(longr, 'x', sizeof(longr) - 1);
    longr[sizeof(longr) - 1] = '\0';
    for (int i = 0; i < FW_MAX_REASONS + 3; i++)
        fw_status_add(&st, FW_UNSCHEDULABLE, longr);
    assert_int_equal(st.nreasons, FW_MAX_REASONS);
    assert_int_equal(strlen(st.reasons[2]), FW_REASON_LEN - 1);
    fw_status_reset(&st);
    assert_int_equal(st.nreasons, 0);
}

/* ---- node_info ------------------------------------------------------------ */

static void test_nodeinfo_accounting(void **state)
{
    node_info_t *ni = node_info_new("n1");
    uint64_t g0 = ni->generation;

    assert_string_equal(ni->name, "n1");
    assert_null(ni->node);
    node_info_set_node(ni, NULL);
    assert_true(ni->generation > g0);

    node_t *n = mknode("n1", NULL, ALLOC_4C8G, NULL);
    node_info_set_node(ni, n);
    node_unref(n); /* ni keeps its own ref */
    assert_string_equal(ni->node->name, "n1");

    place(ni, mkpod_req("a", "'cpu':'1','memory':'1Gi','nvidia.com/gpu':'2'", "Running"));
    place(ni, mkpod("b", "'containers':[{'name':'c','image':'x'}]", "Running")); /* no requests */
    place(ni, mkpod_req("done", "'cpu':'2','memory':'2Gi'", "Succeeded"));
    assert_int_equal(ni->npods, 3);
    assert_int_equal(ni->requested.milli_cpu, 1000);
    assert_int_equal(ni->requested.memory, 1 * GI);
    assert_int_equal(res_get_scalar(&ni->requested, RES_GPU), 2);
    assert_int_equal(ni->requested.pods, 2); /* terminal pods hold no slot */
    assert_int_equal(ni->nonzero_cpu, 1000 + 100);
    assert_int_equal(ni->nonzero_mem, 1 * GI + 200 * 1024 * 1024);

    uint64_t g1 = ni->generation;
    assert_int_equal(node_info_remove_pod(ni, "uid-nope"), 0);
    assert_int_equal(ni->generation, g1);
    assert_int_equal(node_info_remove_pod(ni, "uid-done"), 1);
    assert_true(ni->generation > g1);
    assert_int_equal(ni->requested.milli_cpu, 1000); /* terminal removal changes nothing */
    assert_int_equal(node_info_remove_pod(ni, "uid-a"), 1);
    assert_int_equal(ni->npods, 1);
    assert_string_equal(ni->pods[0]->name, "b");
    assert_int_equal(ni->requested.milli_cpu, 0);
    assert_int_equal(res_get_scalar(&ni->requested, RES_GPU), 0);
    assert_int_equal(ni->requested.pods, 1);
    assert_int_equal(ni->nonzero_cpu, 100);
    node_info_free(ni);
}

static void test_nodeinfo_clone(void **state)
{
    node_info_t *ni = mkni(mknode("n1", NULL, ALLOC_4C8G, NULL));
    for (int i = 0; i < 20; i++) { /* past the first growth */
        char name[16];
        snprintf(name, sizeof(name), "p%d", i);
        place(ni, mkpod_req(name, "'cpu':'100m'", "Running"));
    }
    ni->pool = 3;
    node_info_t *c = node_info_clone(ni);
    assert_int_equal(c->npods, 20);
    assert_int_equal(c->pool, 3);
    assert_int_equal(c->generation, ni->generation);
    assert_ptr_equal(c->node, ni->node);
    assert_ptr_not_equal(c->pods, ni->pods);
    assert_ptr_not_equal(c->name, ni->name);

    /* The copy moves on its own. */
    assert_int_equal(node_info_remove_pod(c, "uid-p0"), 1);
    place(c, mkpod_req("x", "'cpu':'1'", "Running"));
    assert_int_equal(ni->npods, 20);
    assert_int_equal(ni->requested.milli_cpu, 2000);
    assert_int_equal(c->requested.milli_cpu, 2900);
    node_info_free(ni); /* clone still holds node and pods */
    assert_string_equal(c->node->name, "n1");
    assert_string_equal(c->pods[0]->name, "p1");
    node_info_free(c);
}

/* ---- filter chain --------------------------------------------------------- */

static void test_filter_first_failure_wins(void **state)
{
    framework_t *fw = framework_new(NULL);
    cycle_state_t *cs = cycle_state_new();
    fw_status_t st;
    /* Cordoned and too small: NodeUnschedulable runs first. */
    node_info_t *cordoned = mkni(mknode("c", NULL, "'cpu':'1','memory':'8Gi','pods':'110'", "'unschedulable':true"));
    /* Too small and tainted: TaintToleration comes before NodeResourcesFit
     * (kube-scheduler v1.20's filter order). */
    node_info_t *tainted = mkni(mknode("t", NULL, "'cpu':'1','memory':'1Gi','pods':'110'",
                                       "'taints':[{'key':'k','value':'v','effect':'NoSchedule'}]"));
    node_info_t *ok = mkni(mknode("ok", NULL, ALLOC_4C8G, NULL));
    pod_t *p = mkpod_req("p", "'cpu':'2','memory':'2Gi'", NULL);

    assert_int_equal(framework_pre_filter(fw, cs, p, &st), FW_SUCCESS);
    assert_int_equal(framework_filter(fw, cs, p, cordoned, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(st.nreasons, 1);
    assert_string_equal(st.reasons[0], "node(s) were unschedulable");
    assert_int_equal(framework_filter(fw, cs, p, tainted, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(st.nreasons, 1);
    assert_string_equal(st.reasons[0], "node(s) had taint {k: v}, that the pod didn't tolerate");
    assert_int_equal(framework_filter(fw, cs, p, ok, &st), FW_SUCCESS);
    assert_int_equal(st.nreasons, 0);

    /* A node known only by its pods cannot be used. */
    node_info_t *ghost = node_info_new("ghost");
    assert_int_equal(framework_filter(fw, cs, p, ghost, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    node_info_free(ghost);

    pod_unref(p);
    node_info_free(cordoned);
    node_info_free(tainted);
    node_info_free(ok);
    cycle_state_free(cs);
    framework_free(fw);
}

/* Filter works without an explicit PreFilter, and a state made for one pod
 * is not reused for another. */
static void test_filter_state_follows_pod(void **state)
{
    framework_t *fw = framework_new(NULL);
    cycle_state_t *cs = cycle_state_new();
    fw_status_t st;
    node_info_t *cordoned = mkni(mknode("c", NULL, ALLOC_4C8G, "'unschedulable':true"));
    pod_t *tol = mkpod("tol", "'containers':[{'name':'c','image':'x'}],'tolerations':[{'operator':'Exists'}]", NULL);
    pod_t *plain = mkpod("plain", "'containers':[{'name':'c','image':'x'}]", NULL);

    assert_int_equal(framework_filter(fw, NULL, tol, cordoned, &st), FW_SUCCESS);
    assert_int_equal(framework_filter(fw, NULL, plain, cordoned, NULL), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_int_equal(framework_pre_filter(fw, cs, tol, &st), FW_SUCCESS);
    assert_int_equal(framework_filter(fw, cs, tol, cordoned, &st), FW_SUCCESS);
    assert_int_equal(framework_filter(fw, cs, plain, cordoned, &st), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(st.reasons[0], "node(s) were unschedulable");

    pod_unref(tol);
    pod_unref(plain);
    node_info_free(cordoned);
    cycle_state_free(cs);
    framework_free(fw);
}

/* ---- weighted scores ------------------------------------------------------ */

/* busy has 2 cpu / 4Gi used of 4 / 8Gi, idle nothing; the pod asks 1 / 2Gi.
 * Affinity 0, taints 100 (none anywhere), balanced 100 on both;
 * most-allocated 75 vs 25, least-allocated the reverse. */
static void score_two(score_strategy_t strategy, int weight_res, int64_t out[2])
{
    fw_config_t c;
    fw_config_default(&c);
    c.strategy = strategy;
    c.weight_resources = weight_res;
    framework_t *fw = framework_new(&c);
    cycle_state_t *cs = cycle_state_new();
    node_info_t *nodes[2];
    nodes[0] = mkni(mknode("busy", NULL, ALLOC_4C8G, NULL));
    nodes[1] = mkni(mknode("idle", NULL, ALLOC_4C8G, NULL));
    place(nodes[0], mkpod_req("u", "'cpu':'2','memory':'4Gi'", "Running"));
    pod_t *p = mkpod_req("p", "'cpu':'1','memory':'2Gi'", NULL);

    assert_int_equal(framework_pre_filter(fw, cs, p, NULL), FW_SUCCESS);
    framework_score(fw, cs, p, nodes, 2, out);

    pod_unref(p);
    node_info_free(nodes[0]);
    node_info_free(nodes[1]);
    cycle_state_free(cs);
    framework_free(fw);
}

/* What v1.20's default score plugins give every node alike for a pod with
 * no controller and no selecting object: NodePreferAvoidPods 100 x 10000,
 * PodTopologySpread 100 x 2 (no constraints: every node 100). */
#define UNIFORM (100 * 10000 + 100 * 2)

static void test_score_strategies(void **state)
{
    int64_t out[2];

    score_two(SCORE_MOST_ALLOCATED, 1, out);
    assert_int_equal(out[0], UNIFORM + 275);
    assert_int_equal(out[1], UNIFORM + 225);
    score_two(SCORE_LEAST_ALLOCATED, 1, out);
    assert_int_equal(out[0], UNIFORM + 225);
    assert_int_equal(out[1], UNIFORM + 275);
    score_two(SCORE_MOST_ALLOCATED, 2, out);
    assert_int_equal(out[0], UNIFORM + 350);
    assert_int_equal(out[1], UNIFORM + 250);
    score_two(SCORE_MOST_ALLOCATED, 0, out); /* weight 0 disables the plugin */
    assert_int_equal(out[0], UNIFORM + 200);
    assert_int_equal(out[1], UNIFORM + 200);
}

/* Overwrites the stack below the caller's frame, where framework_new's
 * helpers ran: a scorer that kept pointers into one of their temporaries
 * (it once kept the resource names of a copied config) reads garbage. */
static __attribute__((noinline)) void scribble_stack(void)
{
    volatile char junk[64 * 1024];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (char)0xA5;
}

/* The GPU weight (3) still applies after the stack frames that built the
 * framework are gone: a GPU pod prefers the node whose GPUs are in use. */
static void test_scorer_names_outlive_construction(void **state)
{
    framework_t *fw = framework_new(NULL);
    scribble_stack();
    cycle_state_t *cs = cycle_state_new();
    node_info_t *nodes[2];
    nodes[0] = mkni(mknode("gbusy", NULL, "'cpu':'8','memory':'8Gi','pods':'110','nvidia.com/gpu':'8'", NULL));
    nodes[1] = mkni(mknode("gidle", NULL, "'cpu':'8','memory':'8Gi','pods':'110','nvidia.com/gpu':'8'", NULL));
    place(nodes[0], mkpod_req("g", "'nvidia.com/gpu':'4'", "Running"));
    pod_t *p = mkpod_req("p", "'nvidia.com/gpu':'2'", NULL);
    int64_t out[2];
    assert_int_equal(framework_pre_filter(fw, cs, p, NULL), FW_SUCCESS);
    framework_score(fw, cs, p, nodes, 2, out);
    assert_true(out[0] > out[1]);
    pod_unref(p);
    node_info_free(nodes[0]);
    node_info_free(nodes[1]);
    cycle_state_free(cs);
    framework_free(fw);
}

/* Preferred affinity and PreferNoSchedule taints move the totals; with more
 * nodes than the stack buffer the scratch space comes from the heap. */
static void test_score_many_nodes(void **state)
{
    framework_t *fw = framework_new(NULL);
    enum { N = 300 };
    node_info_t *nodes[N];
    int64_t out[N];
    pod_t *p = mkpod_req("p", "'cpu':'1','memory':'2Gi'", NULL);
    pod_t *pref = mkpod("pref",
                        "'containers':[{'name':'c','image':'x','resources':{'requests':{'cpu':'1','memory':'2Gi'}}}],"
                        "'affinity':{'nodeAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':["
                        "{'weight':5,'preference':{'matchExpressions':[{'key':'fast','operator':'Exists'}]}}]}}",
                        NULL);

    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        nodes[i] = mkni(mknode(name, i == 7 ? "'fast':'yes'" : NULL, ALLOC_4C8G,
                               i == 9 ? "'taints':[{'key':'slow','effect':'PreferNoSchedule'}]" : NULL));
    }
    framework_score(fw, NULL, p, nodes, N, out);
    /* Identical nodes score the same, except the one with a soft taint. */
    assert_int_equal(out[0], out[7]);
    assert_int_equal(out[9], out[0] - 100);
    framework_score(fw, NULL, pref, nodes, N, out);
    assert_int_equal(out[7], out[0] + 100);

    pod_unref(p);
    pod_unref(pref);
    for (int i = 0; i < N; i++)
        node_info_free(nodes[i]);
    framework_free(fw);
}

/* ---- diagnosis ------------------------------------------------------------ */

static void test_diagnosis_message(void **state)
{
    framework_t *fw = framework_new(NULL);
    cycle_state_t *cs = cycle_state_new();
    fw_diagnosis_t *d = fw_diagnosis_new();
    fw_status_t st;
    node_info_t *nodes[5];
    pod_t *p = mkpod("p",
                     "'nodeSelector':{'pool':'a'},"
                     "'containers':[{'name':'c','image':'x','resources':{'requests':{'cpu':'3'}}}]",
                     NULL);

    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "n%d", i);
        /* n0..n2 carry the label but only 2 cpus; n3, n4 lack the label. */
        nodes[i] = mkni(mknode(name, i < 3 ? "'pool':'a'" : "'pool':'b'",
                               i < 3 ? "'cpu':'2','memory':'8Gi','pods':'110'" : ALLOC_4C8G, NULL));
    }
    assert_int_equal(framework_pre_filter(fw, cs, p, &st), FW_SUCCESS);
    for (int i = 0; i < 5; i++) {
        assert_int_not_equal(framework_filter(fw, cs, p, nodes[i], &st), FW_SUCCESS);
        fw_diagnosis_add(d, &st);
    }
    char *msg = fw_diagnosis_message(d, 5);
    assert_string_equal(msg, "0/5 nodes are available: 3 Insufficient cpu, "
                             "2 node(s) didn't match Pod's node affinity/selector.");
    free(msg);

    pod_unref(p);
    for (int i = 0; i < 5; i++)
        node_info_free(nodes[i]);
    fw_diagnosis_free(d);
    cycle_state_free(cs);
    framework_free(fw);
}

/* One node short of two resources counts in both; order is by reason. */
static void test_diagnosis_counts(void **state)
{
    fw_diagnosis_t *d = fw_diagnosis_new();
    fw_status_t st;
    char *msg;

    msg = fw_diagnosis_message(d, 0);
    assert_string_equal(msg, "no nodes available to schedule pods");
    free(msg);

    fw_status_reset(&st);
    fw_status_add(&st, FW_UNSCHEDULABLE, "Insufficient memory");
    fw_status_add(&st, FW_UNSCHEDULABLE, "Insufficient cpu");
    fw_diagnosis_add(d, &st);
    fw_status_reset(&st);
    fw_diagnosis_add(d, &st); /* a fitting node adds nothing */
    for (int i = 0; i < 10; i++) {
        fw_status_reset(&st);
        fw_status_add(&st, FW_UNSCHEDULABLE_UNRESOLVABLE, "node(s) had taint {a: b}, that the pod didn't tolerate");
        fw_diagnosis_add(d, &st);
    }
    fw_status_reset(&st);
    fw_status_add(&st, FW_UNSCHEDULABLE, "Insufficient cpu");
    fw_diagnosis_add(d, &st);
    msg = fw_diagnosis_message(d, 13);
    assert_string_equal(msg, "0/13 nodes are available: 2 Insufficient cpu, 1 Insufficient memory, "
                             "10 node(s) had taint {a: b}, that the pod didn't tolerate.");
    free(msg);
    fw_diagnosis_free(d);
}

/* ---- how many feasible nodes to find -------------------------------------- */

static void test_num_feasible(void **state)
{
    fw_config_t c;
    fw_config_default(&c);
    framework_t *fw = framework_new(&c);
    assert_int_equal(framework_num_feasible_to_find(fw, 0), 0);
    assert_int_equal(framework_num_feasible_to_find(fw, 50), 50);
    assert_int_equal(framework_num_feasible_to_find(fw, 99), 99);
    assert_int_equal(framework_num_feasible_to_find(fw, 100), 100);  /* 50% = 50, raised to 100 */
    assert_int_equal(framework_num_feasible_to_find(fw, 1000), 420); /* 50 - 8 = 42% */
    assert_int_equal(framework_num_feasible_to_find(fw, 5000), 500); /* 10% */
    assert_int_equal(framework_num_feasible_to_find(fw, 6000), 300); /* 2% clamped to 5% */
    assert_int_equal(framework_num_feasible_to_find(fw, 100000), 5000);
    framework_free(fw);

    c.percentage_of_nodes_to_score = 20;
    fw = framework_new(&c);
    assert_int_equal(framework_num_feasible_to_find(fw, 1000), 200);
    assert_int_equal(framework_num_feasible_to_find(fw, 300), 100);
    framework_free(fw);

    c.percentage_of_nodes_to_score = 100;
    fw = framework_new(&c);
    assert_int_equal(framework_num_feasible_to_find(fw, 5000), 5000);
    framework_free(fw);
}

/* The plugin set is the profile's: a disabled filter no longer rejects, and
 * kube's defaults (names, weights) are there unless changed. */
static void test_profile_plugin_set(void **state)
{
    fw_config_t c;
    fw_config_default(&c);
    framework_t *fw = framework_new(&c);
    assert_true(framework_filter_enabled(fw, "NodeUnschedulable"));
    assert_int_equal(framework_score_weight(fw, "NodePreferAvoidPods"), 10000);
    assert_int_equal(framework_score_weight(fw, "PodTopologySpread"), 2);
    assert_int_equal(framework_score_weight(fw, "ImageLocality"), 1);
    assert_int_equal(framework_score_weight(fw, "NodeResourcesMostAllocated"), 1);
    assert_int_equal(framework_score_weight(fw, "NodeResourcesLeastAllocated"), 0);
    assert_true(framework_preemption_enabled(fw));
    framework_free(fw);

    node_info_t *cordoned = mkni(mknode("c", NULL, ALLOC_4C8G, "'unschedulable':true"));
    pod_t *p = mkpod_req("p", "'cpu':'1'", NULL);
    fw_status_t st;
    c.plugin_ops[0] = (fw_plugin_op_t){ .point = FW_PT_FILTER, .enable = 0, .name = "NodeUnschedulable" };
    c.nplugin_ops = 1;
    fw = framework_new(&c);
    assert_false(framework_filter_enabled(fw, "NodeUnschedulable"));
    assert_int_equal(framework_filter(fw, NULL, p, cordoned, &st), FW_SUCCESS);
    framework_free(fw);

    /* Unknown names and a plugin enabled twice are refused. */
    int line = 0;
    char err[256];
    c.plugin_ops[0] = (fw_plugin_op_t){ .point = FW_PT_FILTER, .enable = 1, .line = 9, .name = "NodeName" };
    assert_int_equal(fw_config_check(&c, err, sizeof(err), &line), -1);
    assert_int_equal(line, 9);
    assert_null(framework_new(&c));
    c.plugin_ops[0] = (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 1, .name = "Nope" };
    assert_int_equal(fw_config_check(&c, err, sizeof(err), &line), -1);
    assert_string_equal(err, "score: unknown plugin \"Nope\"");
    assert_int_equal(fw_plugin_known("VolumeZone", FW_PT_FILTER) >= 0, 1);
    assert_int_equal(fw_plugin_known("ImageLocality", FW_PT_FILTER), -1);
    assert_int_equal(fw_point_from_name("preScore"), FW_PT_PRE_SCORE);
    pod_unref(p);
    node_info_free(cordoned);
}

/* A score weight changes the winner: balanced allocation prefers the node
 * the pod evens out, MostAllocated the busier one. */
static void test_weights_change_placement(void **state)
{
    node_info_t *nodes[2];
    nodes[0] = mkni(mknode("busy", NULL, ALLOC_4C8G, NULL));
    nodes[1] = mkni(mknode("idle", NULL, ALLOC_4C8G, NULL));
    place(nodes[0], mkpod_req("u", "'cpu':'3','memory':'1Gi'", "Running"));
    pod_t *p = mkpod_req("p", "'cpu':'100m','memory':'100Mi'", NULL);
    int64_t out[2];
    fw_config_t c;
    fw_config_default(&c);
    c.plugin_ops[0] = (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 0, .name = "NodeResourcesMostAllocated" };
    c.plugin_ops[1] =
        (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 1, .weight = 50, .name = "NodeResourcesMostAllocated" };
    c.nplugin_ops = 2;
    framework_t *fw = framework_new(&c);
    framework_score(fw, NULL, p, nodes, 2, out);
    assert_true(out[0] > out[1]);
    framework_free(fw);
    c.plugin_ops[1].weight = 1;
    c.plugin_ops[2] = (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 0, .name = "NodeResourcesBalancedAllocation" };
    c.plugin_ops[3] =
        (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 1, .weight = 50, .name = "NodeResourcesBalancedAllocation" };
    c.nplugin_ops = 4;
    fw = framework_new(&c);
    framework_score(fw, NULL, p, nodes, 2, out);
    assert_true(out[1] > out[0]);
    framework_free(fw);
    pod_unref(p);
    node_info_free(nodes[0]);
    node_info_free(nodes[1]);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_default),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_nodeinfo_accounting),
        cmocka_unit_test(test_nodeinfo_clone),
        cmocka_unit_test(test_filter_first_failure_wins),
        cmocka_unit_test(test_filter_state_follows_pod),
        cmocka_unit_test(test_score_strategies),
        cmocka_unit_test(test_scorer_names_outlive_construction),
        cmocka_unit_test(test_score_many_nodes),
        cmocka_unit_test(test_diagnosis_message),
        cmocka_unit_test(test_diagnosis_counts),
        cmocka_unit_test(test_num_feasible),
        cmocka_unit_test(test_profile_plugin_set),
        cmocka_unit_test(test_weights_change_placement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
