/* test_affinity.c -- pod affinity / anti-affinity / topology spread: parsing,
 * each InterPodAffinity and PodTopologySpread filter rule, their scores
 * against hand-computed kube-scheduler v1.20 answers, PreFilterExtensions in
 * preemption, and two pool threads racing to reserve (inter-pod rule). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "api/types.h"
#include "cache/cache.h"
#include "framework/framework.h"
#include "framework/nodeinfo.h"
#include "framework/topo_index.h"
#include "preemption/preemption.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fixtures.h"

/* ---- fixtures ----------------------------------------------------------- */

static pod_t *mkpod_ns(const char *name, const char *ns, const char *labels, const char *spec)
{
    char buf[8192];
    char err[256] = "";
    snprintf(buf, sizeof(buf),
             "{'kind':'Pod','apiVersion':'v1','metadata':{'name':'%s','namespace':'%s','uid':'uid-%s-%s',"
             "'labels':{%s}},'spec':{'containers':[{'name':'c','image':'x'}]%s%s},'status':{'phase':'Running'}}",
             name, ns, ns, name, labels ? labels : "", spec && *spec ? "," : "", spec ? spec : "");
    json_t *j = parse_sq(buf);
    pod_t *p = pod_from_json(j, err, sizeof(err));
    json_decref(j);
    if (p == NULL)
        fail_msg("pod_from_json(%s): %s", name, err);
    return p;
}

static pod_t *mkpod(const char *name, const char *labels, const char *spec)
{
    return mkpod_ns(name, "default", labels, spec);
}

/* Parses and expects an error containing want. */
static void parse_fails(const char *spec, const char *want)
{
    char buf[4096], err[256] = "";
    snprintf(buf, sizeof(buf), "{'metadata':{'name':'bad','namespace':'default','uid':'u'},'spec':{%s}}", spec);
    json_t *j = parse_sq(buf);
    pod_t *p = pod_from_json(j, err, sizeof(err));
    json_decref(j);
    if (p)
        fail_msg("parsed, want error '%s': %s", want, spec);
    if (!strstr(err, want))
        fail_msg("error '%s' lacks '%s'", err, want);
}

typedef struct cluster {
    node_info_t *ni[16];
    int n;
    fw_cluster_t cl;
} cluster_t;

/* A node with labels and spec (the inside of 'spec':{...}, "" for none). */
static node_info_t *add_node_spec(cluster_t *c, const char *name, const char *labels, const char *spec)
{
    char buf[2048], err[256] = "";
    snprintf(buf, sizeof(buf),
             "{'kind':'Node','metadata':{'name':'%s','uid':'n-%s','labels':{%s}},'spec':{%s},"
             "'status':{'capacity':{'cpu':'4','memory':'8Gi','pods':'110'},"
             "'allocatable':{'cpu':'4','memory':'8Gi','pods':'110'}}}",
             name, name, labels ? labels : "", spec);
    json_t *j = parse_sq(buf);
    node_t *n = node_from_json(j, err, sizeof(err));
    json_decref(j);
    if (!n)
        fail_msg("node_from_json: %s", err);
    node_info_t *ni = node_info_new(name);
    node_info_set_node(ni, n);
    node_unref(n);
    c->ni[c->n++] = ni;
    c->cl.nodes = c->ni;
    c->cl.nnodes = c->n;
    return ni;
}

static node_info_t *add_node(cluster_t *c, const char *name, const char *labels)
{
    return add_node_spec(c, name, labels, "");
}

/* p runs on ni: bound there, as a victim search requires (preempt_removable). */
static void place(node_info_t *ni, pod_t *p)
{
    free(p->node_name);
    p->node_name = util_strdup(ni->name);
    node_info_add_pod(ni, p);
    pod_unref(p);
}

static void cluster_free(cluster_t *c)
{
    for (int i = 0; i < c->n; i++)
        node_info_free(c->ni[i]);
}

/* n1,n2 zone a; n3 zone b; n4 no zone; n5 zone c. */
static void five(cluster_t *c)
{
    memset(c, 0, sizeof(*c));
    add_node(c, "n1", "'zone':'a','kubernetes.io/hostname':'n1'");
    add_node(c, "n2", "'zone':'a','kubernetes.io/hostname':'n2'");
    add_node(c, "n3", "'zone':'b','kubernetes.io/hostname':'n3'");
    add_node(c, "n4", "'kubernetes.io/hostname':'n4'");
    add_node(c, "n5", "'zone':'c','kubernetes.io/hostname':'n5'");
}

/* Filter result on each node as a string of '+' (fits) and '-'. */
static void filter_all(framework_t *fw, cluster_t *c, const pod_t *p, char *out, fw_status_t *sts)
{
    cycle_state_t *cs = cycle_state_new();
    cycle_state_set_cluster(cs, &c->cl);
    fw_status_t st;
    assert_int_equal(framework_pre_filter(fw, cs, p, &st), FW_SUCCESS);
    for (int i = 0; i < c->n; i++) {
        fw_status_reset(&st);
        out[i] = framework_filter(fw, cs, p, c->ni[i], &st) == FW_SUCCESS ? '+' : '-';
        if (sts)
            sts[i] = st;
    }
    out[c->n] = '\0';
    cycle_state_free(cs);
}

static void score_all(framework_t *fw, cluster_t *c, const pod_t *p, int64_t *out)
{
    cycle_state_t *cs = cycle_state_new();
    cycle_state_set_cluster(cs, &c->cl);
    assert_int_equal(framework_pre_filter(fw, cs, p, NULL), FW_SUCCESS);
    framework_score(fw, cs, p, c->ni, c->n, out);
    cycle_state_free(cs);
}

/* Only the inter-pod plugins score: weights of all others at 0. */
/* Only the inter-pod scores, with v1.20's weights (InterPodAffinity 1,
 * PodTopologySpread 2); with_spread 0 leaves PodTopologySpread's score out
 * (its default spreading would add the same 200 to every node). */
static framework_t *fw_scores_only(int with_spread)
{
    fw_config_t cfg;
    fw_config_default(&cfg);
    int k = 0;
    cfg.plugin_ops[k++] = (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 0, .name = "*" };
    cfg.plugin_ops[k++] =
        (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 1, .weight = 1, .name = "InterPodAffinity" };
    if (with_spread)
        cfg.plugin_ops[k++] =
            (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 1, .weight = 2, .name = "PodTopologySpread" };
    cfg.nplugin_ops = k;
    return framework_new(&cfg);
}

static framework_t *fw_interpod_only(void)
{
    return fw_scores_only(1);
}

#define ANTI(sel, key)                                                                                                 \
    "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"                                 \
    "[{'labelSelector':{'matchLabels':{" sel "}},'topologyKey':'" key "'}]}}"
#define AFF(sel, key)                                                                                                  \
    "'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"                                     \
    "[{'labelSelector':{'matchLabels':{" sel "}},'topologyKey':'" key "'}]}}"
#define SPREAD(skew, key, when, sel)                                                                                   \
    "'topologySpreadConstraints':[{'maxSkew':" skew ",'topologyKey':'" key "','whenUnsatisfiable':'" when              \
    "','labelSelector':{'matchLabels':{" sel "}}}]"

/* ---- parsing ------------------------------------------------------------- */

static void test_parse_full(void **state)
{
    pod_t *p =
        mkpod_ns("p", "team", "'app':'web'",
                 "'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':["
                 "{'labelSelector':{'matchLabels':{'app':'db'}},'topologyKey':'zone'}],"
                 "'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':7,'podAffinityTerm':"
                 "{'labelSelector':{},'namespaces':['b','a','b'],'topologyKey':'rack'}}]},"
                 "'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':["
                 "{'topologyKey':'kubernetes.io/hostname'}]}},"
                 "'topologySpreadConstraints':[{'maxSkew':2,'topologyKey':'zone','whenUnsatisfiable':'DoNotSchedule',"
                 "'labelSelector':{'matchLabels':{'app':'web'}}},{'maxSkew':1,'topologyKey':'rack',"
                 "'whenUnsatisfiable':'ScheduleAnyway'}]");
    const pod_affinity_t *a = p->interpod;
    assert_non_null(a);
    assert_int_equal(a->naff_req, 1);
    assert_int_equal(a->naff_pref, 1);
    assert_int_equal(a->nanti_req, 1);
    assert_int_equal(a->nanti_pref, 0);
    assert_int_equal(a->nspread, 2);
    assert_int_equal(a->nspread_hard, 1);
    /* namespaces default to the pod's own; listed ones are sorted, unique */
    assert_int_equal(a->aff_req[0].nnamespaces, 1);
    assert_string_equal(a->aff_req[0].namespaces[0], "team");
    assert_int_equal(a->aff_pref[0].nnamespaces, 2);
    assert_string_equal(a->aff_pref[0].namespaces[0], "a");
    assert_int_equal(a->aff_pref[0].weight, 7);
    /* nil selector matches nothing, {} everything (in its namespaces) */
    assert_int_equal(a->anti_req[0].match_nothing, 1);
    assert_int_equal(a->aff_pref[0].match_nothing, 0);
    pod_t *q = mkpod_ns("q", "a", "'x':'y'", NULL), *r = mkpod_ns("r", "team", "'app':'db'", NULL);
    assert_true(aff_term_matches(&a->aff_pref[0], q));
    assert_false(aff_term_matches(&a->aff_pref[0], r)); /* namespace team not listed */
    assert_true(aff_term_matches(&a->aff_req[0], r));
    assert_false(aff_term_matches(&a->anti_req[0], r));
    assert_int_equal(a->spread[0].max_skew, 2);
    assert_true(a->spread[0].hard);
    assert_true(a->spread[1].match_nothing);
    assert_null(a->warning);
    pod_unref(q);
    pod_unref(r);
    pod_unref(p);

    p = mkpod("plain", NULL, NULL);
    assert_null(p->interpod);
    pod_unref(p);
}

static void test_parse_namespace_selector(void **state)
{
    pod_t *p = mkpod("p", NULL,
                     "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':["
                     "{'labelSelector':{},'namespaceSelector':{},'topologyKey':'zone'}]}}");
    assert_true(p->interpod->anti_req[0].all_namespaces);
    pod_t *q = mkpod_ns("q", "elsewhere", NULL, NULL);
    assert_true(aff_term_matches(&p->interpod->anti_req[0], q));
    assert_null(p->interpod->warning);
    pod_unref(p);
    pod_unref(q);
    /* A namespaceSelector with labels is approximated, and said so. */
    p = mkpod("p", NULL,
              "'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':["
              "{'labelSelector':{},'namespaceSelector':{'matchLabels':{'t':'x'}},'topologyKey':'zone'}]}}");
    assert_non_null(p->interpod->warning);
    assert_non_null(strstr(p->interpod->warning, "namespaceSelector"));
    pod_unref(p);
}

static void test_parse_errors(void **state)
{
    parse_fails(SPREAD("0", "zone", "DoNotSchedule", ""), "maxSkew");
    parse_fails(SPREAD("-3", "zone", "DoNotSchedule", ""), "maxSkew");
    parse_fails(SPREAD("'1'", "zone", "DoNotSchedule", ""), "maxSkew");
    parse_fails(SPREAD("1", "", "DoNotSchedule", ""), "topologyKey");
    parse_fails(SPREAD("1", "zone", "Sometimes", ""), "whenUnsatisfiable");
    parse_fails("'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'z','whenUnsatisfiable':'DoNotSchedule'},"
                "{'maxSkew':2,'topologyKey':'z','whenUnsatisfiable':'DoNotSchedule'}]",
                "duplicate");
    parse_fails("'topologySpreadConstraints':{}", "not an array");
    parse_fails("'topologySpreadConstraints':[7]", "not an object");
    parse_fails(ANTI("'app':'x'", ""), "topologyKey");
    parse_fails("'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':7}]}}",
                "topologyKey");
    parse_fails("'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{}}}", "not an array");
    parse_fails("'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':["
                "{'labelSelector':'app=x','topologyKey':'z'}]}}",
                "labelSelector");
    parse_fails("'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':["
                "{'labelSelector':{'matchExpressions':[{'key':'a','operator':'Gt','values':['1']}]},"
                "'topologyKey':'z'}]}}",
                "labelSelector");
    parse_fails("'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':["
                "{'namespaces':'x','topologyKey':'z'}]}}",
                "namespaces");
    parse_fails("'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':["
                "{'namespaces':[1],'topologyKey':'z'}]}}",
                "namespaces");
    parse_fails("'affinity':{'podAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':["
                "{'weight':0,'podAffinityTerm':{'topologyKey':'z'}}]}}",
                "weight");
    parse_fails("'affinity':{'podAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':["
                "{'weight':101,'podAffinityTerm':{'topologyKey':'z'}}]}}",
                "weight");
    parse_fails("'affinity':{'podAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':["
                "{'weight':5}]}}",
                "not an object");
    parse_fails("'affinity':{'podAntiAffinity':[]}", "not an object");
    parse_fails("'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':["
                "{'namespaceSelector':[],'topologyKey':'z'}]}}",
                "namespaceSelector");
}

/* ---- InterPodAffinity filter ------------------------------------------- */

static void test_required_anti_affinity(void **state)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    char got[16];
    fw_status_t sts[16];
    five(&c);
    place(c.ni[0], mkpod("web1", "'app':'web'", NULL));
    place(c.ni[2], mkpod_ns("web-other-ns", "other", "'app':'web'", NULL)); /* other namespace */

    pod_t *p = mkpod("p", "'app':'web'", ANTI("'app':'web'", "kubernetes.io/hostname"));
    filter_all(fw, &c, p, got, sts);
    assert_string_equal(got, "-++++");
    assert_int_equal(sts[0].code, FW_UNSCHEDULABLE);
    assert_int_equal(sts[0].nreasons, 2);
    assert_string_equal(sts[0].reasons[0], "node(s) didn't match pod affinity/anti-affinity");
    assert_string_equal(sts[0].reasons[1], "node(s) didn't match pod anti-affinity rules");
    pod_unref(p);

    /* Zone: both zone-a nodes; a node without the key passes (v1.20). */
    p = mkpod("p", "'app':'web'", ANTI("'app':'web'", "zone"));
    filter_all(fw, &c, p, got, NULL);
    assert_string_equal(got, "--+++");
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

static void test_required_affinity(void **state)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    char got[16];
    fw_status_t sts[16];
    five(&c);
    place(c.ni[2], mkpod("db", "'app':'db'", NULL)); /* zone b */

    pod_t *p = mkpod("p", "'app':'web'", AFF("'app':'db'", "zone"));
    filter_all(fw, &c, p, got, sts);
    assert_string_equal(got, "--+--");
    assert_int_equal(sts[0].code, FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(sts[0].reasons[1], "node(s) didn't match pod affinity rules");
    assert_int_equal(sts[3].code, FW_UNSCHEDULABLE_UNRESOLVABLE); /* no zone label */
    pod_unref(p);

    /* Nothing matches and the pod does not match itself: nowhere. */
    p = mkpod("p", "'app':'web'", AFF("'app':'cache'", "zone"));
    filter_all(fw, &c, p, got, NULL);
    assert_string_equal(got, "-----");
    pod_unref(p);

    /* The first pod of a self-affine group: any node with the key. */
    p = mkpod("p", "'app':'cache'", AFF("'app':'cache'", "zone"));
    filter_all(fw, &c, p, got, NULL);
    assert_string_equal(got, "+++-+");
    pod_unref(p);

    /* Once one exists, the rule no longer applies: only its zone. */
    place(c.ni[4], mkpod("cache1", "'app':'cache'", NULL));
    p = mkpod("p", "'app':'cache'", AFF("'app':'cache'", "zone"));
    filter_all(fw, &c, p, got, NULL);
    assert_string_equal(got, "----+");
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* An existing pod's required anti-affinity rejects the incoming pod. */
static void test_existing_anti_affinity(void **state)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    char got[16];
    fw_status_t sts[16];
    five(&c);
    place(c.ni[0], mkpod("guard", "'app':'guard'", ANTI("'app':'web'", "zone")));

    pod_t *p = mkpod("p", "'app':'web'", NULL);
    filter_all(fw, &c, p, got, sts);
    assert_string_equal(got, "--+++");
    assert_int_equal(sts[1].code, FW_UNSCHEDULABLE);
    assert_string_equal(sts[1].reasons[1], "node(s) didn't satisfy existing pods anti-affinity rules");
    pod_unref(p);

    p = mkpod("p", "'app':'other'", NULL); /* not selected: anywhere */
    filter_all(fw, &c, p, got, NULL);
    assert_string_equal(got, "+++++");
    pod_unref(p);
    p = mkpod_ns("p", "other", "'app':'web'", NULL); /* term's namespace is default */
    filter_all(fw, &c, p, got, NULL);
    assert_string_equal(got, "+++++");
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* The diagnosis counts both reasons, as kube's FitError does. */
static void test_anti_affinity_message(void **state)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    memset(&c, 0, sizeof(c));
    add_node(&c, "a", "'kubernetes.io/hostname':'a'");
    add_node(&c, "b", "'kubernetes.io/hostname':'b'");
    place(c.ni[0], mkpod("w1", "'app':'w'", ANTI("'app':'w'", "kubernetes.io/hostname")));
    place(c.ni[1], mkpod("w2", "'app':'w'", ANTI("'app':'w'", "kubernetes.io/hostname")));
    pod_t *p = mkpod("w3", "'app':'w'", ANTI("'app':'w'", "kubernetes.io/hostname"));
    fw_status_t sts[16];
    char got[16];
    filter_all(fw, &c, p, got, sts);
    assert_string_equal(got, "--");
    fw_diagnosis_t *d = fw_diagnosis_new();
    fw_diagnosis_add(d, &sts[0]);
    fw_diagnosis_add(d, &sts[1]);
    char *msg = fw_diagnosis_message(d, 2);
    assert_string_equal(msg, "0/2 nodes are available: 2 node(s) didn't match pod affinity/anti-affinity, "
                             "2 node(s) didn't match pod anti-affinity rules.");
    free(msg);
    fw_diagnosis_free(d);
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* ---- PodTopologySpread filter ------------------------------------------- */

static void test_spread_filter(void **state)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    char got[16];
    fw_status_t sts[16];
    five(&c);
    /* zone a: 2, zone b: 1, zone c: 0 */
    place(c.ni[0], mkpod("x1", "'app':'x'", NULL));
    place(c.ni[1], mkpod("x2", "'app':'x'", NULL));
    place(c.ni[2], mkpod("x3", "'app':'x'", NULL));
    place(c.ni[4], mkpod_ns("x-other", "other", "'app':'x'", NULL)); /* other namespace: not counted */

    pod_t *p = mkpod("p", "'app':'x'", SPREAD("1", "zone", "DoNotSchedule", "'app':'x'"));
    filter_all(fw, &c, p, got, sts);
    assert_string_equal(got, "----+");
    assert_int_equal(sts[0].code, FW_UNSCHEDULABLE);
    assert_string_equal(sts[0].reasons[0], "node(s) didn't match pod topology spread constraints");
    assert_int_equal(sts[3].code, FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(sts[3].reasons[0],
                        "node(s) didn't match pod topology spread constraints (missing required label)");
    pod_unref(p);

    /* maxSkew 2: zone b (1+1-0) fits too. */
    p = mkpod("p", "'app':'x'", SPREAD("2", "zone", "DoNotSchedule", "'app':'x'"));
    filter_all(fw, &c, p, got, NULL);
    assert_string_equal(got, "--+-+");
    pod_unref(p);

    /* The pod does not match its own selector: no +1 for itself. */
    p = mkpod("p", "'app':'y'", SPREAD("1", "zone", "DoNotSchedule", "'app':'x'"));
    filter_all(fw, &c, p, got, NULL);
    assert_string_equal(got, "--+-+");
    pod_unref(p);

    /* Only nodes passing the nodeSelector make domains: zone c is out,
     * the minimum is zone b's 1. */
    p = mkpod("p", "'app':'x'", "'nodeSelector':{'zone':'a'}," SPREAD("1", "zone", "DoNotSchedule", "'app':'x'"));
    filter_all(fw, &c, p, got, NULL);
    assert_string_equal(got, "++---"); /* only zone a counts: min 2, skew 2+1-2 = 1 */
    pod_unref(p);

    /* ScheduleAnyway never filters. */
    p = mkpod("p", "'app':'x'", SPREAD("1", "zone", "ScheduleAnyway", "'app':'x'"));
    filter_all(fw, &c, p, got, NULL);
    assert_string_equal(got, "+++++");
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* With only zone a eligible, the minimum is zone a's own count: 2+1-2 = 1
 * fits; without the selector the global minimum is 0 (zone c). */
static void test_spread_node_affinity_domains(void **state)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    char got[16];
    five(&c);
    place(c.ni[0], mkpod("x1", "'app':'x'", NULL));
    place(c.ni[1], mkpod("x2", "'app':'x'", NULL));
    place(c.ni[2], mkpod("x3", "'app':'x'", NULL));
    pod_t *p =
        mkpod("p", "'app':'x'",
              "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':"
              "[{'matchExpressions':[{'key':'zone','operator':'In','values':['a','b']}]}]}}}," SPREAD(
                  "1", "zone", "DoNotSchedule", "'app':'x'"));
    filter_all(fw, &c, p, got, NULL);
    /* domains a (2) and b (1): min 1; zone a 2+1-1 = 2 > 1; zone b 1+1-1 = 1 */
    assert_string_equal(got, "--+--");
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* Pods being deleted do not count in the spread. */
static void test_spread_ignores_deleting(void **state)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    char got[16];
    memset(&c, 0, sizeof(c));
    add_node(&c, "a", "'zone':'a'");
    add_node(&c, "b", "'zone':'b'");
    char buf[1024], err[256];
    snprintf(buf, sizeof buf,
             "{'metadata':{'name':'gone','namespace':'default','uid':'g','labels':{'app':'x'},"
             "'deletionTimestamp':'2024-01-01T00:00:00Z'},'spec':{},'status':{'phase':'Running'}}");
    json_t *j = parse_sq(buf);
    pod_t *gone = pod_from_json(j, err, sizeof err);
    json_decref(j);
    assert_non_null(gone);
    assert_true(gone->deleting);
    place(c.ni[0], gone);
    pod_t *p = mkpod("p", "'app':'x'", SPREAD("1", "zone", "DoNotSchedule", "'app':'x'"));
    filter_all(fw, &c, p, got, NULL);
    assert_string_equal(got, "++");
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* ---- scores ---------------------------------------------------------------- */

/* Incoming preferred affinity (weight 10, zone, app=db) and preferred
 * anti-affinity (weight 5, hostname, app=web); db on n3, web on n1.
 * Raw: n1 -5, n2 0, n3 +10, n4 0, n5 0; min -5, max 10:
 * n1 0, n2 100*5/15 = 33, n3 100, n4 33, n5 33. */
static void test_interpod_score_preferred(void **state)
{
    framework_t *fw = fw_scores_only(0);
    cluster_t c;
    int64_t out[16];
    five(&c);
    place(c.ni[2], mkpod("db", "'app':'db'", NULL));
    place(c.ni[0], mkpod("web", "'app':'web'", NULL));
    pod_t *p = mkpod(
        "p", NULL,
        "'affinity':{'podAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':10,"
        "'podAffinityTerm':{'labelSelector':{'matchLabels':{'app':'db'}},'topologyKey':'zone'}}]},"
        "'podAntiAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':5,"
        "'podAffinityTerm':{'labelSelector':{'matchLabels':{'app':'web'}},'topologyKey':'kubernetes.io/hostname'}}]}}");
    score_all(fw, &c, p, out);
    /* InterPodAffinity alone, weight 1. */
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 33);
    assert_int_equal(out[2], 100);
    assert_int_equal(out[3], 33);
    assert_int_equal(out[4], 33);
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* Symmetry: an existing pod's required affinity (hardPodAffinityWeight 1)
 * and preferred anti-affinity (weight 4) toward the incoming pod's labels.
 * aff on n3 (zone b): zone b +1; anti on n1 (hostname n1): -4.
 * Raw: n1 -4, n2 0, n3 1, n4 0, n5 0; min -4 max 1: n1 0, others 80, n3 100. */
static void test_interpod_score_symmetric(void **state)
{
    framework_t *fw = fw_scores_only(0);
    cluster_t c;
    int64_t out[16];
    five(&c);
    place(c.ni[2], mkpod("fan", "'app':'fan'", AFF("'app':'star'", "zone")));
    place(
        c.ni[0],
        mkpod(
            "hater", "'app':'hater'",
            "'affinity':{'podAntiAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':4,"
            "'podAffinityTerm':{'labelSelector':{'matchLabels':{'app':'star'}},'topologyKey':'kubernetes.io/hostname'}}]}}"));
    pod_t *p = mkpod("p", "'app':'star'", NULL);
    score_all(fw, &c, p, out);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 80);
    assert_int_equal(out[2], 100);
    assert_int_equal(out[3], 80);
    assert_int_equal(out[4], 80);
    pod_unref(p);
    /* A pod nobody cares about: no score at all. */
    p = mkpod("q", "'app':'nobody'", NULL);
    score_all(fw, &c, p, out);
    for (int i = 0; i < 5; i++)
        assert_int_equal(out[i], 0);
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* ScheduleAnyway on zone, maxSkew 1; app=x: zone a 2, zone b 1, zone c 0.
 * 3 zones among scored nodes: weight ln(5) = 1.609.
 * Raw: n1,n2 int(2*1.609) = 3, n3 1, n5 0; n4 ignored (no zone).
 * Normalized 100*(max+min-s)/max with max 3, min 0: n1,n2 0, n3 66, n5 100;
 * times weight 2. */
static void test_spread_score(void **state)
{
    framework_t *fw = fw_interpod_only();
    cluster_t c;
    int64_t out[16];
    five(&c);
    place(c.ni[0], mkpod("x1", "'app':'x'", NULL));
    place(c.ni[1], mkpod("x2", "'app':'x'", NULL));
    place(c.ni[2], mkpod("x3", "'app':'x'", NULL));
    pod_t *p = mkpod("p", "'app':'x'", SPREAD("1", "zone", "ScheduleAnyway", "'app':'x'"));
    score_all(fw, &c, p, out);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 0);
    assert_int_equal(out[2], 132);
    assert_int_equal(out[3], 0);
    assert_int_equal(out[4], 200);
    pod_unref(p);

    /* Hostname, maxSkew 2: weight ln(5 + 2) = 1.946 over 5 scored nodes;
     * raw n1..n3: int(1.946 + 1) = 2, n4, n5: 1; max 2, min 1:
     * 100*(3-2)/2 = 50 and 100*(3-1)/2 = 100. */
    p = mkpod("p", "'app':'x'", SPREAD("2", "kubernetes.io/hostname", "ScheduleAnyway", "'app':'x'"));
    score_all(fw, &c, p, out);
    assert_int_equal(out[0], 100);
    assert_int_equal(out[1], 100);
    assert_int_equal(out[2], 100);
    assert_int_equal(out[3], 200);
    assert_int_equal(out[4], 200);
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* ---- PreFilterExtensions and preemption --------------------------------- */

static void test_add_remove_pod(void **state)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    five(&c);
    pod_t *web = mkpod("web", "'app':'web'", NULL);
    node_info_add_pod(c.ni[0], web);
    pod_t *p =
        mkpod("p", "'app':'x'", ANTI("'app':'web'", "zone") "," SPREAD("1", "zone", "DoNotSchedule", "'app':'web'"));
    cycle_state_t *cs = cycle_state_new();
    cycle_state_set_cluster(cs, &c.cl);
    fw_status_t st;
    assert_int_equal(framework_pre_filter(fw, cs, p, &st), FW_SUCCESS);
    assert_int_not_equal(framework_filter(fw, cs, p, c.ni[1], &st), FW_SUCCESS);
    node_info_remove_pod(c.ni[0], web->uid);
    framework_remove_pod(fw, cs, p, web, c.ni[0]);
    assert_int_equal(framework_filter(fw, cs, p, c.ni[1], &st), FW_SUCCESS);
    node_info_add_pod(c.ni[0], web);
    framework_add_pod(fw, cs, p, web, c.ni[0]);
    assert_int_not_equal(framework_filter(fw, cs, p, c.ni[1], &st), FW_SUCCESS);
    cycle_state_free(cs);
    pod_unref(web);
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

static int lower_priority(const pod_t *victim, const pod_t *preemptor, void *ud, int64_t *rank)
{
    *rank = victim->priority;
    return victim->priority < preemptor->priority;
}

/* The preemptor's anti-affinity forbids n1 because of a low-priority pod:
 * evicting it (and only it) makes room, and the caller's state is intact. */
static void test_preemption_anti_affinity(void **state)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    five(&c);
    place(c.ni[0], mkpod("web", "'app':'web'", "'priority':1"));
    place(c.ni[0], mkpod("keep", "'app':'keep'", "'priority':1"));
    pod_t *p = mkpod("p", "'app':'x'", "'priority':100," ANTI("'app':'web'", "kubernetes.io/hostname"));
    cycle_state_t *cs = cycle_state_new();
    cycle_state_set_cluster(cs, &c.cl);
    fw_status_t st;
    assert_int_equal(framework_pre_filter(fw, cs, p, &st), FW_SUCCESS);
    assert_int_equal(framework_filter(fw, cs, p, c.ni[0], &st), FW_UNSCHEDULABLE);
    preempt_candidate_t cand;
    assert_int_equal(preempt_select_on_node_cs(fw, cs, p, c.ni[0], lower_priority, NULL, NULL, 0, &cand), 1);
    assert_int_equal(cand.nvictims, 1);
    assert_string_equal(cand.victims[0]->name, "web");
    preempt_candidate_clear(&cand);
    /* State restored: n1 still fails, n2 still fits. */
    assert_int_equal(framework_filter(fw, cs, p, c.ni[0], &st), FW_UNSCHEDULABLE);
    assert_int_equal(framework_filter(fw, cs, p, c.ni[1], &st), FW_SUCCESS);
    cycle_state_free(cs);
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* ---- the incremental index answers as the scan does ------------------------ */

static void cache_node(cache_t *c, const char *name, const char *labels)
{
    char buf[1024], err[256];
    snprintf(buf, sizeof buf,
             "{'metadata':{'name':'%s','uid':'u%s','labels':{%s}},'spec':{},"
             "'status':{'allocatable':{'cpu':'64','memory':'64Gi','pods':'110'}}}",
             name, name, labels);
    json_t *j = parse_sq(buf);
    node_t *n = node_from_json(j, err, sizeof err);
    json_decref(j);
    assert_non_null(n);
    cache_upsert_node(c, n);
    node_unref(n);
}

static void cache_pod(cache_t *c, const char *name, const char *ns, const char *labels, const char *spec,
                      const char *node)
{
    char s2[4096];
    snprintf(s2, sizeof s2, "'nodeName':'%s'%s%s", node, spec ? "," : "", spec ? spec : "");
    pod_t *p = mkpod_ns(name, ns, labels, s2);
    cache_upsert_pod(c, p, NULL);
    pod_unref(p);
}

/* Filter codes and scores over every node, with and without the index. */
static void check_same(framework_t *fw, cache_t *c, const pod_t *p)
{
    cache_interpod_prepare(c, p);
    cache_rdlock(c);
    int n = 0;
    node_info_t *const *all = cache_nodes_locked(c, &n);
    node_info_t *live[32];
    int nl = 0;
    for (int i = 0; i < n && nl < 32; i++)
        if (all[i]->node)
            live[nl++] = all[i];
    fw_cluster_t with = { .nodes = all, .nnodes = n, .index = cache_topo_index(c) };
    fw_cluster_t without = { .nodes = all, .nnodes = n };
    int codes[2][32];
    int64_t scores[2][32];
    for (int v = 0; v < 2; v++) {
        cycle_state_t *cs = cycle_state_new();
        cycle_state_set_cluster(cs, v ? &with : &without);
        fw_status_t st;
        assert_int_equal(framework_pre_filter(fw, cs, p, &st), FW_SUCCESS);
        for (int i = 0; i < nl; i++)
            codes[v][i] = framework_filter(fw, cs, p, live[i], &st);
        framework_score(fw, cs, p, live, nl, scores[v]);
        cycle_state_free(cs);
    }
    cache_unlock(c);
    for (int i = 0; i < nl; i++) {
        if (codes[0][i] != codes[1][i] || scores[0][i] != scores[1][i])
            fail_msg("pod %s node %s: scan %d/%lld, index %d/%lld", p->name, live[i]->name, codes[0][i],
                     (long long)scores[0][i], codes[1][i], (long long)scores[1][i]);
    }
}

static void test_index_matches_scan(void **state)
{
    framework_t *fw = fw_interpod_only();
    cache_t *c = cache_new(NULL, NULL);
    const char *zones[3] = { "a", "b", "c" };
    for (int i = 0; i < 9; i++) {
        char name[8], labels[128];
        snprintf(name, sizeof name, "n%d", i);
        snprintf(labels, sizeof labels, "'zone':'%s','kubernetes.io/hostname':'%s'%s", zones[i % 3], name,
                 i == 8 ? ",'rack':'r1'" : "");
        cache_node(c, name, i == 7 ? "'kubernetes.io/hostname':'n7'" : labels);
    }
    cache_pod(c, "w1", "default", "'app':'web'", ANTI("'app':'web'", "kubernetes.io/hostname"), "n0");
    cache_pod(c, "w2", "default", "'app':'web'", ANTI("'app':'web'", "kubernetes.io/hostname"), "n1");
    cache_pod(c, "d1", "default", "'app':'db'", NULL, "n2");
    cache_pod(c, "d2", "other", "'app':'db'", NULL, "n5");
    cache_pod(c, "g1", "default", "'app':'guard'", ANTI("'app':'x'", "zone"), "n4");
    cache_pod(c, "f1", "default", "'app':'fan'", AFF("'app':'x'", "zone"), "n8");
    cache_pod(
        c, "h1", "default", "'app':'hater'",
        "'affinity':{'podAntiAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':4,"
        "'podAffinityTerm':{'labelSelector':{'matchLabels':{'app':'x'}},'topologyKey':'kubernetes.io/hostname'}}]},"
        "'podAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':9,"
        "'podAffinityTerm':{'labelSelector':{'matchLabels':{'app':'x'}},'topologyKey':'zone'}}]}}",
        "n6");
    for (int i = 0; i < 5; i++) {
        char name[8], node[8];
        snprintf(name, sizeof name, "x%d", i);
        snprintf(node, sizeof node, "n%d", (i * 2) % 9);
        cache_pod(c, name, "default", "'app':'x'", NULL, node);
    }
    pod_t *probes[] = {
        mkpod("p1", "'app':'web'", ANTI("'app':'web'", "kubernetes.io/hostname")),
        mkpod("p2", "'app':'x'", ANTI("'app':'db'", "zone")),
        mkpod("p3", "'app':'q'", AFF("'app':'db'", "zone")),
        mkpod("p4", "'app':'self'", AFF("'app':'self'", "zone")),
        mkpod("p5", "'app':'x'", NULL),
        mkpod("p6", "'app':'x'", SPREAD("1", "zone", "DoNotSchedule", "'app':'x'")),
        mkpod("p7", "'app':'x'", SPREAD("1", "zone", "ScheduleAnyway", "'app':'x'")),
        mkpod("p8", "'app':'x'", SPREAD("1", "kubernetes.io/hostname", "DoNotSchedule", "'app':'x'")),
        mkpod(
            "p9", "'app':'x'",
            "'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':["
            "{'labelSelector':{'matchLabels':{'app':'x'}},'topologyKey':'zone'},"
            "{'labelSelector':{'matchExpressions':[{'key':'app','operator':'Exists'}]},'topologyKey':'kubernetes.io/hostname'}],"
            "'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':3,'podAffinityTerm':"
            "{'labelSelector':{'matchLabels':{'app':'db'}},'namespaces':['other'],'topologyKey':'zone'}}]}}"),
        mkpod("p10", "'app':'x'", "'nodeSelector':{'zone':'a'}," SPREAD("1", "zone", "DoNotSchedule", "'app':'x'")),
    };
    int np = (int)(sizeof(probes) / sizeof(probes[0]));
    for (int i = 0; i < np; i++)
        check_same(fw, c, probes[i]);
    /* p3 waits for app=db pods: binding one should wake it, app=web not. */
    pod_t *db = mkpod("db9", "'app':'db'", NULL), *web = mkpod("web9", "'app':'web'", NULL);
    assert_true(fw_topo_index_affinity_wanted(cache_topo_index(c), db));
    assert_false(fw_topo_index_affinity_wanted(cache_topo_index(c), web));
    pod_unref(db);
    pod_unref(web);
    /* Changes the index must follow: a pod goes, a node changes zone, a
     * node goes, a new pod arrives. */
    cache_delete_pod(c, "uid-default-x0", NULL, NULL);
    cache_delete_pod(c, "uid-default-w1", NULL, NULL);
    cache_node(c, "n2", "'zone':'c','kubernetes.io/hostname':'n2'");
    cache_delete_node(c, "n6");
    cache_pod(c, "x9", "default", "'app':'x'", NULL, "n7");
    cache_pod(c, "g2", "default", "'app':'guard'", ANTI("'app':'x'", "zone"), "n1");
    for (int i = 0; i < np; i++)
        check_same(fw, c, probes[i]);
    for (int i = 0; i < np; i++)
        pod_unref(probes[i]);
    cache_free(c);
    framework_free(fw);
}

/* The epoch moves exactly when a decision made earlier could now break an
 * existing pod's anti-affinity: such a pod accounted, or node labels. */
static void test_interpod_epoch(void **state)
{
    cache_t *c = cache_new(NULL, NULL);
    cache_node(c, "e1", "'zone':'a'");
    uint64_t e0 = cache_interpod_epoch(c);
    cache_pod(c, "plain", "default", "'app':'x'", NULL, "e1");
    cache_pod(c, "soft", "default", "'app':'y'",
              "'affinity':{'podAntiAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':1,"
              "'podAffinityTerm':{'labelSelector':{},'topologyKey':'zone'}}]}}",
              "e1");
    assert_int_equal(cache_interpod_epoch(c), e0);
    cache_node(c, "e1", "'zone':'a'"); /* same labels */
    assert_int_equal(cache_interpod_epoch(c), e0);
    cache_pod(c, "hard", "default", "'app':'z'", ANTI("'app':'x'", "zone"), "e1");
    uint64_t e1 = cache_interpod_epoch(c);
    assert_true(e1 > e0);
    cache_node(c, "e1", "'zone':'b'"); /* relabelled */
    assert_true(cache_interpod_epoch(c) > e1);
    cache_free(c);
}

/* ---- two pool threads racing ------------------------------------------- */

/* Pool 0 owns node p0, pool 1 node p1, both in zone z. Thread A places a pod
 * with zone anti-affinity against app=b; thread B a plain app=b pod. Each
 * decides under the read lock, then reserves with the inter-pod rule. They
 * must never both land. */
typedef struct racer {
    cache_t *cache;
    framework_t *fw;
    pod_t *pod;
    const char *node;
    int pool;
    int exclusive;
    pthread_barrier_t *bar;
    int placed;
} racer_t;

static int refit_gen(void *ud, node_info_t *ni)
{
    return 1;
}

static void lock_node(void *ud, const char *node, int lock)
{
    if (lock)
        cache_node_lock(ud, node);
    else
        cache_node_unlock(ud, node);
}

static int refit_full(void *ud, node_info_t *ni)
{
    racer_t *r = ud;
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(r->cache, &n);
    fw_cluster_t cl = { .nodes = nodes, .nnodes = n, .index = cache_topo_index(r->cache) };
    cycle_state_t *cs = cycle_state_new();
    cycle_state_set_cluster(cs, &cl);
    fw_status_t st;
    int ok = framework_pre_filter(r->fw, cs, r->pod, &st) == FW_SUCCESS &&
             framework_filter(r->fw, cs, r->pod, ni, &st) == FW_SUCCESS;
    cycle_state_free(cs);
    return ok;
}

static void *race_main(void *arg)
{
    racer_t *r = arg;
    pthread_barrier_wait(r->bar);
    cache_interpod_prepare(r->cache, r->pod);
    cache_rdlock(r->cache);
    uint64_t epoch = cache_interpod_epoch(r->cache);
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(r->cache, &n);
    fw_cluster_t cl = {
        .nodes = nodes, .nnodes = n, .index = cache_topo_index(r->cache), .node_lock = lock_node, .lock_ud = r->cache
    };
    node_info_t *ni = cache_node_locked(r->cache, r->node);
    cycle_state_t *cs = cycle_state_new();
    cycle_state_set_cluster(cs, &cl);
    fw_status_t st;
    int ok = framework_pre_filter(r->fw, cs, r->pod, &st) == FW_SUCCESS &&
             framework_filter(r->fw, cs, r->pod, ni, &st) == FW_SUCCESS;
    uint64_t gen = ni->generation; /* own pool's node: only this thread changes it */
    cycle_state_set_cluster(cs, NULL);
    cache_unlock(r->cache);
    /* Both decide before either reserves, as two pool threads can. */
    pthread_barrier_wait(r->bar);
    if (ok) {
        cache_interpod_t ip = { epoch, r->exclusive, refit_full };
        r->placed = cache_assume_ex(r->cache, r->pod, r->node, r->pool, gen, &ip, refit_gen, r) == 0;
    }
    cycle_state_free(cs);
    return NULL;
}

static int part_by_name(void *ud, const node_t *n)
{
    return n->name[1] - '0';
}

static void race_round(framework_t *fw, int b_first_exists, int *both)
{
    cache_t *c = cache_new(part_by_name, NULL);
    char err[256];
    const char *nodes[2] = { "p0", "p1" };
    for (int i = 0; i < 2; i++) {
        char buf[1024];
        snprintf(buf, sizeof buf,
                 "{'metadata':{'name':'%s','uid':'%s','labels':{'zone':'z'}},'spec':{},"
                 "'status':{'allocatable':{'cpu':'4','memory':'8Gi','pods':'110'}}}",
                 nodes[i], nodes[i]);
        json_t *j = parse_sq(buf);
        node_t *n = node_from_json(j, err, sizeof err);
        json_decref(j);
        cache_upsert_node(c, n);
        node_unref(n);
    }
    pod_t *a = mkpod("a", "'app':'a'", ANTI("'app':'b'", "zone"));
    pod_t *b = mkpod("b", "'app':'b'", NULL);
    /* mkpod says Running; pending copies for the cache. */
    a->phase = PHASE_PENDING;
    b->phase = PHASE_PENDING;
    cache_upsert_pod(c, a, NULL);
    cache_upsert_pod(c, b, NULL);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    racer_t ra = { c, fw, a, "p0", 0, 1, &bar, 0 }, rb = { c, fw, b, "p1", 1, 0, &bar, 0 };
    pthread_t ta, tb;
    if (b_first_exists) {
        pthread_create(&tb, NULL, race_main, &rb);
        pthread_create(&ta, NULL, race_main, &ra);
    } else {
        pthread_create(&ta, NULL, race_main, &ra);
        pthread_create(&tb, NULL, race_main, &rb);
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&bar);
    assert_true(ra.placed || rb.placed); /* one of them always lands */
    if (ra.placed && rb.placed)
        (*both)++;
    pod_unref(a);
    pod_unref(b);
    cache_free(c);
}

static void test_race_anti_affinity(void **state)
{
    framework_t *fw = framework_new(NULL);
    int both = 0;
    for (int i = 0; i < 200; i++)
        race_round(fw, i & 1, &both);
    assert_int_equal(both, 0);
    framework_free(fw);
}

/* ---- fields of 1.29-1.35: matchLabelKeys, mismatchLabelKeys, minDomains,
 * nodeAffinityPolicy, nodeTaintsPolicy (current kube's answers) ---------- */

#define WEB_H1 "'app':'web','pod-template-hash':'h1'"
#define WEB_H2 "'app':'web','pod-template-hash':'h2'"
/* Required anti-affinity on key for app=web pods of the same rollout, as a
 * 1.30 API server serves it (selector not merged). */
#define ANTI_ROLLOUT(key)                                                                                              \
    "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'labelSelector':"               \
    "{'matchLabels':{'app':'web'}},'matchLabelKeys':['pod-template-hash'],'topologyKey':'" key "'}]}}"
/* The same for a pod of rollout h2 as a 1.31+ API server serves it: the
 * selector already holds the merged requirement. */
#define ANTI_ROLLOUT_H2_MERGED(key)                                                                                    \
    "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'labelSelector':"               \
    "{'matchLabels':{'app':'web'},'matchExpressions':[{'key':'pod-template-hash','operator':'In','values':['h2']}]},"  \
    "'matchLabelKeys':['pod-template-hash'],'topologyKey':'" key "'}]}}"
/* One DoNotSchedule zone constraint on app=x with extra fields. */
#define SPREAD_X(extra)                                                                                                \
    "'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'zone','whenUnsatisfiable':'DoNotSchedule',"              \
    "'labelSelector':{'matchLabels':{'app':'x'}}" extra "}]"
#define TAINT_GPU "'taints':[{'key':'dedicated','value':'gpu','effect':'NoSchedule'}]"

/* Filters pod p (labels, spec) on every node of c: want is the '+'/'-'
 * string of filter_all. */
static void expect_fit(framework_t *fw, cluster_t *c, const char *labels, const char *spec, const char *want)
{
    char got[16];
    pod_t *p = mkpod("p", labels, spec);
    filter_all(fw, c, p, got, NULL);
    if (strcmp(got, want) != 0)
        fail_msg("%s: got %s, want %s", spec ? spec : "(no spec)", got, want);
    pod_unref(p);
}

/* A node of a test cluster: labels, spec ("" for none), and nx pods on it
 * with pod_labels (app=x when NULL). */
typedef struct node_def {
    const char *name, *labels, *spec;
    int nx;
    const char *pod_labels;
} node_def_t;

static void build(cluster_t *c, const node_def_t *d, int n)
{
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < n; i++) {
        node_info_t *ni = add_node_spec(c, d[i].name, d[i].labels, d[i].spec);
        for (int k = 0; k < d[i].nx; k++) {
            char name[32];
            snprintf(name, sizeof name, "x-%s-%d", d[i].name, k);
            place(ni, mkpod(name, d[i].pod_labels ? d[i].pod_labels : "'app':'x'", NULL));
        }
    }
}

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A pod (labels, spec) and the '+'/'-' string filter_all should give. */
typedef struct fit_case {
    const char *labels, *spec, *want;
} fit_case_t;

/* Builds the cluster of nodes and checks every case on it. */
static void expect_fits(const node_def_t *nodes, int nn, const fit_case_t *cases, int nc)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    build(&c, nodes, nn);
    for (int i = 0; i < nc; i++)
        expect_fit(fw, &c, cases[i].labels, cases[i].spec, cases[i].want);
    cluster_free(&c);
    framework_free(fw);
}

static void assert_req(const sel_req_t *r, const char *key, sel_op_t op, const char *value)
{
    assert_string_equal(r->key, key);
    assert_int_equal(r->op, op);
    assert_int_equal(r->nvalues, 1);
    assert_string_equal(r->values[0], value);
}

static void test_parse_label_keys(void **state)
{
    /* matchLabelKeys adds pod-template-hash In (h2), mismatchLabelKeys
     * tenant NotIn (t1), both with the pod's own values; 'absent' (a label
     * the pod lacks) adds nothing. */
    pod_t *p =
        mkpod("p", WEB_H2 ",'tenant':'t1'",
              "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'labelSelector':"
              "{'matchLabels':{'app':'web'}},'matchLabelKeys':['pod-template-hash','absent'],"
              "'mismatchLabelKeys':['tenant'],'topologyKey':'kubernetes.io/hostname'}]}}," SPREAD_X(
                  ",'matchLabelKeys':['pod-template-hash'],'minDomains':null"));
    const pod_aff_term_t *t = &p->interpod->anti_req[0];
    const spread_constraint_t *c = &p->interpod->spread[0];
    assert_int_equal(t->selector.n, 3);
    assert_req(&t->selector.reqs[1], "pod-template-hash", SEL_IN, "h2");
    assert_req(&t->selector.reqs[2], "tenant", SEL_NOT_IN, "t1");
    assert_int_equal(c->selector.n, 2);
    assert_req(&c->selector.reqs[1], "pod-template-hash", SEL_IN, "h2");
    /* Defaults: minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy
     * Ignore, and v1.20's counting (no policy set). */
    assert_int_equal(c->min_domains, 1);
    assert_true(c->affinity_honor);
    assert_false(c->taints_honor);
    assert_false(p->interpod->spread_policies);
    assert_null(p->unsupported); /* honoured now: no UnsupportedConstraint */
    pod_t *old = mkpod("old", WEB_H1 ",'tenant':'t2'", NULL), *same = mkpod("same", WEB_H2 ",'tenant':'t2'", NULL);
    pod_t *own = mkpod("own", WEB_H2 ",'tenant':'t1'", NULL);
    assert_false(aff_term_matches(t, old)); /* other rollout */
    assert_true(aff_term_matches(t, same)); /* same rollout, other tenant */
    assert_false(aff_term_matches(t, own)); /* own tenant: NotIn */
    pod_t *xold = mkpod("xold", "'app':'x','pod-template-hash':'h1'", NULL);
    pod_t *xsame = mkpod("xsame", "'app':'x','pod-template-hash':'h2'", NULL);
    assert_false(spread_matches(c, "default", xold));
    assert_true(spread_matches(c, "default", xsame));
    pod_unref(xold);
    pod_unref(xsame);

    /* A 1.34+ API server merged both already: nothing is added twice, and
     * the terms are the ones above (same key: one topology index entry). */
    pod_t *m =
        mkpod("m", WEB_H2 ",'tenant':'t1'",
              "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'labelSelector':"
              "{'matchLabels':{'app':'web'},'matchExpressions':["
              "{'key':'pod-template-hash','operator':'In','values':['h2']},"
              "{'key':'tenant','operator':'NotIn','values':['t1']}]},"
              "'matchLabelKeys':['pod-template-hash','absent'],'mismatchLabelKeys':['tenant'],"
              "'topologyKey':'kubernetes.io/hostname'}]}},"
              "'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'zone','whenUnsatisfiable':"
              "'DoNotSchedule','labelSelector':{'matchLabels':{'app':'x'},'matchExpressions':["
              "{'key':'pod-template-hash','operator':'In','values':['h2']}]},"
              "'matchLabelKeys':['pod-template-hash']}]");
    assert_int_equal(m->interpod->anti_req[0].selector.n, 3);
    assert_string_equal(m->interpod->anti_req[0].key, t->key);
    assert_int_equal(m->interpod->spread[0].selector.n, 2);
    assert_string_equal(m->interpod->spread[0].key, c->key);
    pod_unref(m);

    /* The policies and minDomains as set. */
    pod_t *q =
        mkpod("q", "'app':'x'", SPREAD_X(",'minDomains':3,'nodeAffinityPolicy':'Ignore','nodeTaintsPolicy':'Honor'"));
    c = &q->interpod->spread[0];
    assert_int_equal(c->min_domains, 3);
    assert_false(c->affinity_honor);
    assert_true(c->taints_honor);
    assert_true(q->interpod->spread_policies);
    assert_null(q->unsupported);
    pod_unref(q);
    pod_unref(old);
    pod_unref(same);
    pod_unref(own);
    pod_unref(p);
}

#define ANTI_TERM(extra)                                                                                               \
    "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'z'" extra "}]}}"

/* What kube's API validation refuses gives a parse error naming the field. */
static void test_parse_errors_new_fields(void **state)
{
    parse_fails(ANTI_TERM(",'labelSelector':{},'matchLabelKeys':'h'"), "matchLabelKeys: not an array");
    parse_fails(ANTI_TERM(",'labelSelector':{},'mismatchLabelKeys':[7]"),
                "mismatchLabelKeys[0]: not a valid label key");
    parse_fails(ANTI_TERM(",'labelSelector':{},'matchLabelKeys':['ok','bad key']"),
                "matchLabelKeys[1]: not a valid label key");
    parse_fails(ANTI_TERM(",'labelSelector':{},'matchLabelKeys':['Example.com/x']"), "not a valid label key");
    parse_fails(ANTI_TERM(",'matchLabelKeys':['h']"), "must not be set when labelSelector is not");
    parse_fails(ANTI_TERM(",'labelSelector':{},'matchLabelKeys':['h'],'mismatchLabelKeys':['h']"),
                "exists in both matchLabelKeys and mismatchLabelKeys");
    /* The user's own requirement on h plus the merged one: refused, as
     * kube's validation after its merge does. */
    parse_fails(ANTI_TERM(",'labelSelector':{'matchLabels':{'h':'1'},'matchExpressions':"
                          "[{'key':'h','operator':'In','values':['1']}]},'matchLabelKeys':['h']"),
                "exists in both matchLabelKeys and labelSelector");
    parse_fails("'affinity':{'podAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':1,"
                "'podAffinityTerm':{'topologyKey':'z','labelSelector':{},'mismatchLabelKeys':{}}}]}}",
                "podAffinity.preferred[0].mismatchLabelKeys: not an array");
    parse_fails(SPREAD_X(",'matchLabelKeys':{}"), "matchLabelKeys: not an array");
    parse_fails("'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'z','whenUnsatisfiable':'DoNotSchedule',"
                "'matchLabelKeys':['h']}]",
                "must not be set when labelSelector is not");
    parse_fails(SPREAD_X(",'minDomains':0"), "minDomains: must be greater than zero");
    parse_fails(SPREAD_X(",'minDomains':'3'"), "minDomains: must be greater than zero");
    parse_fails(SPREAD_X(",'minDomains':2147483648"), "minDomains: must be greater than zero");
    parse_fails("'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'z','whenUnsatisfiable':'ScheduleAnyway',"
                "'minDomains':2}]",
                "minDomains: can only be used with whenUnsatisfiable DoNotSchedule");
    parse_fails(SPREAD_X(",'nodeAffinityPolicy':'Maybe'"), "nodeAffinityPolicy: must be Honor or Ignore");
    parse_fails(SPREAD_X(",'nodeTaintsPolicy':true"), "nodeTaintsPolicy: must be Honor or Ignore");
}

/* A rollout: old pods (h1) on n1, new (h2) on n2, each with anti-affinity
 * against app=web of its own rollout. */
static void rollout(cluster_t *c)
{
    five(c);
    place(c->ni[0], mkpod("old1", WEB_H1, ANTI_ROLLOUT("kubernetes.io/hostname")));
    place(c->ni[1], mkpod("new1", WEB_H2, ANTI_ROLLOUT("kubernetes.io/hostname")));
    /* zone b: an old pod whose term spreads the old rollout over zones */
    place(c->ni[2], mkpod("oldz", WEB_H1, ANTI_ROLLOUT("zone")));
}

static void test_anti_affinity_match_label_keys(void **state)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    rollout(&c);
    /* New pod (h2): its term is app=web, hash=h2: only new1 (n2) matches,
     * and of the existing terms only new1's matches it (old1's and oldz's
     * were merged with h1). n1, n3, n4, n5 fit. Ignoring matchLabelKeys,
     * its term would match old1, new1 and oldz, and oldz's zone term would
     * match it: "---++". */
    expect_fit(fw, &c, WEB_H2, ANTI_ROLLOUT("kubernetes.io/hostname"), "+-+++");
    /* The same pod served with the selector merged: the same answer. */
    expect_fit(fw, &c, WEB_H2, ANTI_ROLLOUT_H2_MERGED("kubernetes.io/hostname"), "+-+++");
    /* An existing pod's term is evaluated with that pod's labels: an old
     * pod (h1) without terms of its own is kept off n1 (old1's hostname
     * term) and off zone b (oldz's zone term), not off n2. */
    expect_fit(fw, &c, WEB_H1, NULL, "-+-++");
    cluster_free(&c);
    framework_free(fw);
}

/* Tenant isolation: keep off nodes running another tenant's pods. The term
 * is tenant Exists + tenant NotIn (a); ignoring mismatchLabelKeys it would
 * also refuse n1 (tenant a's own pod): "--+". */
static void test_anti_affinity_mismatch_label_keys(void **state)
{
    const node_def_t nodes[] = {
        { "n1", "'kubernetes.io/hostname':'n1'", "", 1, "'tenant':'a'" },
        { "n2", "'kubernetes.io/hostname':'n2'", "", 1, "'tenant':'b'" },
        { "n3", "'kubernetes.io/hostname':'n3'", "", 0, NULL },
    };
    const fit_case_t cases[] = {
        { "'tenant':'a'",
          "'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'labelSelector':"
          "{'matchExpressions':[{'key':'tenant','operator':'Exists'}]},'mismatchLabelKeys':['tenant'],"
          "'topologyKey':'kubernetes.io/hostname'}]}}",
          "+-+" },
    };
    expect_fits(nodes, NELEM(nodes), cases, NELEM(cases));
}

/* Preferred affinity (weight 10, zone, app=web, matchLabelKeys hash): web h1
 * on n1 (zone a), web h2 on n3 (zone b); the incoming pod is h2. Only zone b
 * scores +10: n3 100, others 0 (ignoring the keys n1 and n2 would score 100
 * too). */
static void test_interpod_score_match_label_keys(void **state)
{
    framework_t *fw = fw_scores_only(0);
    cluster_t c;
    int64_t out[16];
    five(&c);
    place(c.ni[0], mkpod("w1", WEB_H1, NULL));
    place(c.ni[2], mkpod("w2", WEB_H2, NULL));
    pod_t *p = mkpod("p", WEB_H2,
                     "'affinity':{'podAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':10,"
                     "'podAffinityTerm':{'labelSelector':{'matchLabels':{'app':'web'}},"
                     "'matchLabelKeys':['pod-template-hash'],'topologyKey':'zone'}}]}}");
    score_all(fw, &c, p, out);
    int64_t want[5] = { 0, 0, 100, 0, 0 };
    for (int i = 0; i < 5; i++)
        assert_int_equal(out[i], want[i]);
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* Spread per rollout: x1, x2 (h1) in zone a, x3 (h2) in zone b. For a h2 pod
 * only h2 pods count: a 0, b 1, c 0, min 0: zone a 0+1-0 = 1 fits, zone b
 * 1+1-0 = 2 does not, zone c fits, n4 lacks the key. Counting all app=x
 * pods (a 2, b 1, c 0) only zone c would fit: "----+". */
static void test_spread_match_label_keys(void **state)
{
    const node_def_t nodes[] = {
        { "n1", "'zone':'a'", "", 1, "'app':'x','pod-template-hash':'h1'" },
        { "n2", "'zone':'a'", "", 1, "'app':'x','pod-template-hash':'h1'" },
        { "n3", "'zone':'b'", "", 1, "'app':'x','pod-template-hash':'h2'" },
        { "n4", "", "", 0, NULL },
        { "n5", "'zone':'c'", "", 0, NULL },
    };
    const fit_case_t cases[] = {
        { "'app':'x','pod-template-hash':'h2'", SPREAD_X(",'matchLabelKeys':['pod-template-hash']"), "++--+" },
        /* Served merged (1.34+ API server): the same. */
        { "'app':'x','pod-template-hash':'h2'",
          "'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'zone','whenUnsatisfiable':'DoNotSchedule',"
          "'labelSelector':{'matchLabels':{'app':'x'},'matchExpressions':[{'key':'pod-template-hash',"
          "'operator':'In','values':['h2']}]},'matchLabelKeys':['pod-template-hash']}]",
          "++--+" },
    };
    expect_fits(nodes, NELEM(nodes), cases, NELEM(cases));
}

/* Two zones with one app=x pod each. Global minimum 1: both fit (1+1-1).
 * minDomains 2: 2 domains, not fewer, the same. minDomains 3: fewer
 * domains than that, the minimum is 0 and 1+1-0 = 2 > 1: the second pod of
 * a zone is refused everywhere. */
static void test_spread_min_domains(void **state)
{
    const node_def_t nodes[] = { { "a", "'zone':'a'", "", 1, NULL }, { "b", "'zone':'b'", "", 1, NULL } };
    const fit_case_t cases[] = {
        { "'app':'x'", SPREAD_X(""), "++" },
        { "'app':'x'", SPREAD_X(",'minDomains':2"), "++" },
        { "'app':'x'", SPREAD_X(",'minDomains':3"), "--" },
    };
    expect_fits(nodes, NELEM(nodes), cases, NELEM(cases));
}

/* n1 zone a, n2 zone b tainted, n3 zone c, n4 zone a tainted; one app=x pod
 * on n1, n3 and n4. Taints ignored (the default): a 2, b 0, c 1, minimum 0:
 * n1 3 and n3 2 exceed maxSkew 1; n2, n4 fail TaintToleration: "----".
 * nodeTaintsPolicy Honor: n2 and n4 are no domain and n4's pod does not
 * count: a 1, c 1, minimum 1: n1 and n3 fit: "+-+-". A pod tolerating the
 * taint includes them again: a 2, b 0, c 1: only n2 (0+1-0) fits: "-+--". */
static void test_spread_node_taints_policy(void **state)
{
    const node_def_t nodes[] = {
        { "n1", "'zone':'a'", "", 1, NULL },
        { "n2", "'zone':'b'", TAINT_GPU, 0, NULL },
        { "n3", "'zone':'c'", "", 1, NULL },
        { "n4", "'zone':'a'", TAINT_GPU, 1, NULL },
    };
    const fit_case_t cases[] = {
        { "'app':'x'", SPREAD_X(""), "----" },
        { "'app':'x'", SPREAD_X(",'nodeTaintsPolicy':'Honor'"), "+-+-" },
        { "'app':'x'",
          "'tolerations':[{'key':'dedicated','operator':'Equal','value':'gpu','effect':'NoSchedule'}]," SPREAD_X(
              ",'nodeTaintsPolicy':'Honor'"),
          "-+--" },
    };
    expect_fits(nodes, NELEM(nodes), cases, NELEM(cases));
}

/* nodeSelector disk=ssd; n1 zone a ssd, n2 zone a (no ssd) with two app=x
 * pods, n3 zone b ssd with one. Without a policy (v1.20, kept): domains a
 * and b, pods of every node of them count: a 2, b 1, minimum 1: n1 2+1-1 =
 * 2 > 1, n3 fits: "--+". nodeAffinityPolicy Honor set (current kube): only
 * n1 counts in zone a: a 0, b 1, minimum 0: n1 fits, n3 1+1-0 = 2 does not:
 * "+--". Ignore: every node: a 2, b 1 as in v1.20: "--+". n2 fails the
 * nodeSelector in all three. */
static void test_spread_node_affinity_policy(void **state)
{
    const node_def_t nodes[] = {
        { "n1", "'zone':'a','disk':'ssd'", "", 0, NULL },
        { "n2", "'zone':'a'", "", 2, NULL },
        { "n3", "'zone':'b','disk':'ssd'", "", 1, NULL },
    };
    const fit_case_t cases[] = {
        { "'app':'x'", "'nodeSelector':{'disk':'ssd'}," SPREAD_X(""), "--+" },
        { "'app':'x'", "'nodeSelector':{'disk':'ssd'}," SPREAD_X(",'nodeAffinityPolicy':'Honor'"), "+--" },
        { "'app':'x'", "'nodeSelector':{'disk':'ssd'}," SPREAD_X(",'nodeAffinityPolicy':'Ignore'"), "--+" },
    };
    expect_fits(nodes, NELEM(nodes), cases, NELEM(cases));
}

/* ScheduleAnyway zone, maxSkew 1: n1 zone a, n2 zone a tainted with two
 * app=x pods, n3 zone b with one. Domains a, b: weight ln(2 + 2) = 1.386.
 * Taints ignored: a 2, b 1: raw n1, n2 int(2.77) = 2, n3 int(1.39) = 1;
 * normalized 100*(2+1-s)/2: 50, 50, 100; PodTopologySpread weight 2: 100,
 * 100, 200. nodeTaintsPolicy Honor: n2's pods do not count: a 0, b 1: raw
 * 0, 0, 1: 100*(1+0-s)/1: 100, 100, 0; weighted 200, 200, 0. */
static void test_spread_score_taints_policy(void **state)
{
    framework_t *fw = fw_interpod_only();
    cluster_t c;
    int64_t out[16];
    const node_def_t nodes[] = {
        { "n1", "'zone':'a'", "", 0, NULL },
        { "n2", "'zone':'a'", TAINT_GPU, 2, NULL },
        { "n3", "'zone':'b'", "", 1, NULL },
    };
    build(&c, nodes, NELEM(nodes));
    const char *soft = "'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'zone','whenUnsatisfiable':"
                       "'ScheduleAnyway','labelSelector':{'matchLabels':{'app':'x'}}%s}]";
    char spec[512];
    int64_t want[2][3] = { { 100, 100, 200 }, { 200, 200, 0 } };
    for (int v = 0; v < 2; v++) {
        snprintf(spec, sizeof spec, soft, v ? ",'nodeTaintsPolicy':'Honor'" : "");
        pod_t *p = mkpod("p", "'app':'x'", spec);
        score_all(fw, &c, p, out);
        for (int i = 0; i < 3; i++)
            assert_int_equal(out[i], want[v][i]);
        pod_unref(p);
    }
    cluster_free(&c);
    framework_free(fw);
}

/* AddPod/RemovePod (preemption) count only on nodes the policies include:
 * zones a, c with one pod each, b's node tainted (Honor: no domain). A pod
 * added on b changes nothing (n_a still 1+1-1); one added on a does (2+1-1
 * > 1), and removing it restores the fit. */
static void test_spread_add_pod_policies(void **state)
{
    framework_t *fw = framework_new(NULL);
    cluster_t c;
    const node_def_t nodes[] = {
        { "a", "'zone':'a'", "", 1, NULL },
        { "b", "'zone':'b'", TAINT_GPU, 0, NULL },
        { "c", "'zone':'c'", "", 1, NULL },
    };
    build(&c, nodes, NELEM(nodes));
    pod_t *p = mkpod("p", "'app':'x'", SPREAD_X(",'nodeTaintsPolicy':'Honor'"));
    pod_t *on_b = mkpod("xb", "'app':'x'", NULL), *on_a = mkpod("xa", "'app':'x'", NULL);
    cycle_state_t *cs = cycle_state_new();
    cycle_state_set_cluster(cs, &c.cl);
    fw_status_t st;
    assert_int_equal(framework_pre_filter(fw, cs, p, &st), FW_SUCCESS);
    assert_int_equal(framework_filter(fw, cs, p, c.ni[0], &st), FW_SUCCESS);
    framework_add_pod(fw, cs, p, on_b, c.ni[1]);
    assert_int_equal(framework_filter(fw, cs, p, c.ni[0], &st), FW_SUCCESS);
    framework_add_pod(fw, cs, p, on_a, c.ni[0]);
    fw_status_reset(&st);
    assert_int_equal(framework_filter(fw, cs, p, c.ni[0], &st), FW_UNSCHEDULABLE);
    framework_remove_pod(fw, cs, p, on_a, c.ni[0]);
    fw_status_reset(&st);
    assert_int_equal(framework_filter(fw, cs, p, c.ni[0], &st), FW_SUCCESS);
    cycle_state_free(cs);
    pod_unref(on_a);
    pod_unref(on_b);
    pod_unref(p);
    cluster_free(&c);
    framework_free(fw);
}

/* The topology index answers as the scan for the new fields (merged
 * selectors of existing and incoming pods, policies, minDomains). */
static void test_index_new_fields(void **state)
{
    framework_t *fw = fw_interpod_only();
    cache_t *c = cache_new(NULL, NULL);
    const char *zones[3] = { "a", "b", "c" };
    for (int i = 0; i < 6; i++) {
        char name[8], labels[128];
        snprintf(name, sizeof name, "n%d", i);
        snprintf(labels, sizeof labels, "'zone':'%s','kubernetes.io/hostname':'%s'%s", zones[i % 3], name,
                 i < 3 ? ",'disk':'ssd'" : "");
        cache_node(c, name, labels);
    }
    cache_pod(c, "o1", "default", WEB_H1, ANTI_ROLLOUT("kubernetes.io/hostname"), "n0");
    cache_pod(c, "o2", "default", WEB_H1, ANTI_ROLLOUT("zone"), "n4");
    cache_pod(c, "w1", "default", WEB_H2, ANTI_ROLLOUT_H2_MERGED("kubernetes.io/hostname"), "n1");
    cache_pod(c, "w2", "default", WEB_H2, NULL, "n5");
    pod_t *probes[] = {
        mkpod("p1", WEB_H2, ANTI_ROLLOUT("kubernetes.io/hostname")),
        mkpod("p2", WEB_H1, NULL),
        mkpod("p3", WEB_H2,
              "'affinity':{'podAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':10,"
              "'podAffinityTerm':{'labelSelector':{'matchLabels':{'app':'web'}},"
              "'matchLabelKeys':['pod-template-hash'],'topologyKey':'zone'}}]}}"),
        mkpod("p4", WEB_H2,
              "'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'zone','whenUnsatisfiable':'DoNotSchedule',"
              "'labelSelector':{'matchLabels':{'app':'web'}},'matchLabelKeys':['pod-template-hash'],'minDomains':4}]"),
        mkpod("p5", WEB_H2,
              "'nodeSelector':{'disk':'ssd'},'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'zone',"
              "'whenUnsatisfiable':'DoNotSchedule','labelSelector':{'matchLabels':{'app':'web'}},"
              "'nodeAffinityPolicy':'Ignore'}]"),
        mkpod("p6", WEB_H2,
              "'nodeSelector':{'disk':'ssd'},'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'zone',"
              "'whenUnsatisfiable':'DoNotSchedule','labelSelector':{'matchLabels':{'app':'web'}},"
              "'nodeAffinityPolicy':'Honor'}]"),
    };
    int np = (int)(sizeof(probes) / sizeof(probes[0]));
    for (int i = 0; i < np; i++)
        check_same(fw, c, probes[i]);
    for (int i = 0; i < np; i++)
        pod_unref(probes[i]);
    cache_free(c);
    framework_free(fw);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_full),
        cmocka_unit_test(test_parse_namespace_selector),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_required_anti_affinity),
        cmocka_unit_test(test_required_affinity),
        cmocka_unit_test(test_existing_anti_affinity),
        cmocka_unit_test(test_anti_affinity_message),
        cmocka_unit_test(test_spread_filter),
        cmocka_unit_test(test_spread_node_affinity_domains),
        cmocka_unit_test(test_spread_ignores_deleting),
        cmocka_unit_test(test_interpod_score_preferred),
        cmocka_unit_test(test_interpod_score_symmetric),
        cmocka_unit_test(test_spread_score),
        cmocka_unit_test(test_add_remove_pod),
        cmocka_unit_test(test_preemption_anti_affinity),
        cmocka_unit_test(test_index_matches_scan),
        cmocka_unit_test(test_interpod_epoch),
        cmocka_unit_test(test_race_anti_affinity),
        cmocka_unit_test(test_parse_label_keys),
        cmocka_unit_test(test_parse_errors_new_fields),
        cmocka_unit_test(test_anti_affinity_match_label_keys),
        cmocka_unit_test(test_anti_affinity_mismatch_label_keys),
        cmocka_unit_test(test_interpod_score_match_label_keys),
        cmocka_unit_test(test_spread_match_label_keys),
        cmocka_unit_test(test_spread_min_domains),
        cmocka_unit_test(test_spread_node_taints_policy),
        cmocka_unit_test(test_spread_node_affinity_policy),
        cmocka_unit_test(test_spread_score_taints_policy),
        cmocka_unit_test(test_spread_add_pod_policies),
        cmocka_unit_test(test_index_new_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
