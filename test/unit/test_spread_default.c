/* test_spread_default.c -- default topology spreading (PodTopologySpread's
 * system defaults over the selectors of the objects selecting a pod) and the
 * owners store behind it, against answers worked out by hand from
 * kube-scheduler v1.20's podtopologyspread/scoring.go. */
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
#include "owners/owners.h"
#include "scheduler/capabilities.h"

#include "fixtures.h"

static pod_t *mkpod(const char *name, const char *ns, const char *labels, const char *extra_meta,
                    const char *extra_spec)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'%s','uid':'u-%s-%s','labels':{%s}%s},"
             "'spec':{'containers':[{'name':'c','image':'x'}]%s},'status':{'phase':'Running'}}",
             name, ns, ns, name, labels, extra_meta ? extra_meta : "", extra_spec ? extra_spec : "");
    return fx_pod(buf);
}

static node_info_t *mknode(const char *name, const char *zone)
{
    char buf[1024];
    char zl[128] = "";
    if (zone)
        snprintf(zl, sizeof(zl), ",'topology.kubernetes.io/zone':'%s'", zone);
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','labels':{'kubernetes.io/hostname':'%s'%s}},'spec':{},"
             "'status':{'allocatable':{'cpu':'4','memory':'8Gi','pods':'110'}}}",
             name, name, zl);
    return fx_node_info(buf);
}

static void place(node_info_t *ni, pod_t *p)
{
    node_info_add_pod(ni, p);
    pod_unref(p);
}

static void owner(owners_t *o, owner_kind_t kind, const char *key, const char *sq)
{
    char err[256] = "";
    json_t *j = parse_sq(sq);
    assert_int_equal(owners_update(o, kind, key, j, err, sizeof(err)), 0);
    json_decref(j);
}

/* A framework that scores with PodTopologySpread alone, weight 1. */
static framework_t *spread_only(owners_t *o)
{
    fw_config_t c;
    fw_config_default(&c);
    c.plugin_ops[0] = (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 0, .name = "*" };
    c.plugin_ops[1] = (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 1, .weight = 1, .name = "PodTopologySpread" };
    c.nplugin_ops = 2;
    framework_t *fw = framework_new(&c);
    assert_non_null(fw);
    framework_set_owners(fw, o);
    return fw;
}

typedef struct cluster {
    node_info_t *n[4];
} cluster_t;

/* n1, n2 in zone a; n3 in zone b; n4 has no zone label. Pods with app=web
 * in "default": 2 on n1, 1 on n3; plus ones that must not count: another
 * namespace, a terminating pod, another app. */
static void build(cluster_t *c)
{
    c->n[0] = mknode("n1", "a");
    c->n[1] = mknode("n2", "a");
    c->n[2] = mknode("n3", "b");
    c->n[3] = mknode("n4", NULL);
    place(c->n[0], mkpod("w1", "default", "'app':'web'", NULL, NULL));
    place(c->n[0], mkpod("w2", "default", "'app':'web'", NULL, NULL));
    place(c->n[2], mkpod("w3", "default", "'app':'web'", NULL, NULL));
    place(c->n[2], mkpod("o1", "other", "'app':'web'", NULL, NULL));
    place(c->n[1], mkpod("d1", "default", "'app':'web'", ",'deletionTimestamp':'2026-01-01T00:00:00Z'", NULL));
    place(c->n[1], mkpod("x1", "default", "'app':'db'", NULL, NULL));
}

static void destroy(cluster_t *c)
{
    for (int i = 0; i < 4; i++)
        node_info_free(c->n[i]);
}

static void score(framework_t *fw, cluster_t *c, pod_t *p, int64_t out[4])
{
    cycle_state_t *cs = cycle_state_new();
    fw_cluster_t cl = { .nodes = c->n, .nnodes = 4 };
    cycle_state_set_cluster(cs, &cl);
    assert_int_equal(framework_pre_filter(fw, cs, p, NULL), FW_SUCCESS);
    framework_score(fw, cs, p, c->n, 4, out);
    cycle_state_free(cs);
}

/* Hand-computed from scoring.go: hostname weight ln(3+2) (3 nodes with all
 * keys), zone weight ln(2+2) (2 zones). Raw: n1 = 2*1.609+2 + 2*1.386+4 =
 * 11.99 -> 11; n2 = 0+2 + 6.77 -> 8; n3 = 1.609+2 + 1.386+4 = 8.99 -> 8;
 * n4 lacks the zone key: ignored, 0. Normalised 100*(max+min-s)/max with
 * max 11, min 8: n1 72, n2 100, n3 100. */
static void test_service_selector_spreads(void **st)
{
    owners_t *o = owners_new();
    owner(o, OWNER_SERVICE, "default/web",
          "{'metadata':{'namespace':'default','name':'web'},'spec':{'selector':{'app':'web'}}}");
    framework_t *fw = spread_only(o);
    cluster_t c;
    build(&c);
    pod_t *p = mkpod("new", "default", "'app':'web'", NULL, NULL);
    int64_t out[4];
    score(fw, &c, p, out);
    assert_int_equal(out[0], 72);
    assert_int_equal(out[1], 100);
    assert_int_equal(out[2], 100);
    assert_int_equal(out[3], 0);
    pod_unref(p);

    /* The same pod in a namespace without the Service: no constraints, so
     * kube's NormalizeScore gives every node 100 (max score 0). */
    p = mkpod("new", "other", "'app':'web'", NULL, NULL);
    score(fw, &c, p, out);
    for (int i = 0; i < 4; i++)
        assert_int_equal(out[i], 100);
    pod_unref(p);

    /* A pod with its own topologySpreadConstraints is not default-spread. */
    p = mkpod("own", "default", "'app':'web'", NULL,
              ",'topologySpreadConstraints':[{'maxSkew':1,'topologyKey':'zone','whenUnsatisfiable':'DoNotSchedule'}]");
    score(fw, &c, p, out);
    for (int i = 0; i < 4; i++)
        assert_int_equal(out[i], 0);
    pod_unref(p);
    destroy(&c);
    framework_free(fw);
    owners_free(o);
}

/* A ReplicaSet's label selector (with an expression) spreads the same way;
 * an RS in another namespace or one that does not match adds nothing. */
static void test_replicaset_selector(void **st)
{
    owners_t *o = owners_new();
    owner(o, OWNER_RS, "default/web-1",
          "{'metadata':{'namespace':'default','name':'web-1'},'spec':{'selector':"
          "{'matchLabels':{'app':'web'},'matchExpressions':[{'key':'tier','operator':'Exists'}]}}}");
    owner(o, OWNER_RS, "other/web-1",
          "{'metadata':{'namespace':'other','name':'web-1'},'spec':{'selector':"
          "{'matchLabels':{'app':'db'}}}}");
    framework_t *fw = spread_only(o);
    cluster_t c;
    build(&c);
    int64_t out[4];
    /* Without tier the RS does not select the pod: every node 100. */
    pod_t *p = mkpod("new", "default", "'app':'web'", NULL, NULL);
    score(fw, &c, p, out);
    assert_int_equal(out[0], 100);
    pod_unref(p);
    /* With tier it does; the existing pods lack tier so they do not count:
     * every raw score is the same (2 + 4 = 6): max+min-s = max -> 100. */
    p = mkpod("new", "default", "'app':'web','tier':'fe'", NULL, NULL);
    score(fw, &c, p, out);
    assert_int_equal(out[0], 100);
    assert_int_equal(out[2], 100);
    assert_int_equal(out[3], 0); /* still ignored: no zone */
    pod_unref(p);
    destroy(&c);
    framework_free(fw);
    owners_free(o);
}

static void test_owners_store(void **st)
{
    owners_t *o = owners_new();
    char err[256];
    selector_t sel;
    labels_t l = { 0 };
    json_t *lj = parse_sq("{'app':'web','tier':'fe'}");
    assert_int_equal(labels_from_json(&l, lj, err, sizeof(err)), 0);
    json_decref(lj);

    owner(o, OWNER_SERVICE, "default/web", "{'metadata':{'namespace':'default'},'spec':{'selector':{'app':'web'}}}");
    owner(o, OWNER_STS, "default/db",
          "{'metadata':{'namespace':'default'},'spec':{'selector':{'matchLabels':{'tier':'fe'}}}}");
    /* Empty selectors match nothing and are not kept. */
    owner(o, OWNER_SERVICE, "default/all", "{'metadata':{'namespace':'default'},'spec':{}}");
    owner(o, OWNER_RC, "default/rc", "{'metadata':{'namespace':'default'},'spec':{'selector':{}}}");
    assert_int_equal(owners_count(o), 2);
    assert_int_equal(owners_default_selector(o, "default", &l, &sel), 2);
    assert_int_equal(sel.n, 2); /* app=web AND tier=fe */
    selector_free(&sel);
    assert_int_equal(owners_default_selector(o, "other", &l, &sel), 0);
    assert_int_equal(sel.n, 0);

    /* A bad selector is an error and drops the object. */
    json_t *bad = parse_sq(
        "{'metadata':{'namespace':'default'},'spec':{'selector':{'matchExpressions':[{'key':'a','operator':'Gt','values':['1']}]}}}");
    assert_int_equal(owners_update(o, OWNER_RS, "default/bad", bad, err, sizeof(err)), -1);
    json_decref(bad);
    bad = parse_sq("{'metadata':{},'spec':{'selector':{'a':'b'}}}");
    assert_int_equal(owners_update(o, OWNER_SERVICE, "x/nons", bad, err, sizeof(err)), -1);
    json_decref(bad);
    owners_delete(o, OWNER_SERVICE, "default/web");
    assert_int_equal(owners_count(o), 1);
    /* A pod without labels is selected by nothing. */
    labels_t none = { 0 };
    assert_int_equal(owners_default_selector(o, "default", &none, &sel), 0);
    labels_free(&l);
    owners_free(o);
}

/* Disabling the profile's PodTopologySpread through defaultingType List with
 * no constraints leaves every node 100, however skewed the pods are. */
static void test_list_defaulting(void **st)
{
    owners_t *o = owners_new();
    owner(o, OWNER_SERVICE, "default/web", "{'metadata':{'namespace':'default'},'spec':{'selector':{'app':'web'}}}");
    fw_config_t c;
    fw_config_default(&c);
    c.plugin_ops[0] = (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 0, .name = "*" };
    c.plugin_ops[1] = (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 1, .weight = 1, .name = "PodTopologySpread" };
    c.nplugin_ops = 2;
    c.spread_list_defaulting = 1;
    framework_t *fw = framework_new(&c);
    framework_set_owners(fw, o);
    cluster_t cl;
    build(&cl);
    pod_t *p = mkpod("new", "default", "'app':'web'", NULL, NULL);
    int64_t out[4];
    score(fw, &cl, p, out);
    for (int i = 0; i < 4; i++)
        assert_int_equal(out[i], 100);
    /* A zone-only list constraint, maxSkew 1: zone a has 2, b 1; weight
     * ln(4): a = 2*1.386 = 2.77 -> 2, b = 1.386 -> 1; n4 ignored.
     * 100*(2+1-2)/2 = 50 for zone a, 100*(2+1-1)/2 = 100 for b. */
    framework_free(fw);
    c.spread_defaults[0] = (fw_spread_default_t){ .max_skew = 1, .topology_key = "topology.kubernetes.io/zone" };
    c.nspread_defaults = 1;
    fw = framework_new(&c);
    framework_set_owners(fw, o);
    score(fw, &cl, p, out);
    assert_int_equal(out[0], 50);
    assert_int_equal(out[1], 50);
    assert_int_equal(out[2], 100);
    assert_int_equal(out[3], 0);
    pod_unref(p);
    destroy(&cl);
    framework_free(fw);
    owners_free(o);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_service_selector_spreads),
        cmocka_unit_test(test_replicaset_selector),
        cmocka_unit_test(test_owners_store),
        cmocka_unit_test(test_list_defaulting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
