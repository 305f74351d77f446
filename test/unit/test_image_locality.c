/* test_image_locality.c -- ImageLocality and NodePreferAvoidPods scores
 * (hand-computed from kube-scheduler v1.20), the pod and node fields they
 * read, and the list of fields ai-scheduler does not implement. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api/types.h"
#include "api/unsupported.h"
#include "framework/framework.h"
#include "framework/nodeinfo.h"
#include "scheduler/capabilities.h"

#include "fixtures.h"

static pod_t *mkpod(const char *meta, const char *spec)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "{'metadata':{'name':'p','namespace':'default','uid':'up'%s},'spec':{%s},'status':{}}",
             meta, spec);
    return fx_pod(buf);
}

static node_info_t *mknode(const char *name, const char *meta, const char *images)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s'%s},'spec':{},'status':{'allocatable':{'cpu':'4',"
             "'memory':'8Gi','pods':'110'},'images':[%s]}}",
             name, meta, images);
    return fx_node_info(buf);
}

/* A profile scoring with one plugin at weight 1. */
static framework_t *only(const char *plugin)
{
    fw_config_t c;
    fw_config_default(&c);
    c.plugin_ops[0] = (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 0, .name = "*" };
    c.plugin_ops[1] = (fw_plugin_op_t){ .point = FW_PT_SCORE, .enable = 1, .weight = 1 };
    snprintf(c.plugin_ops[1].name, sizeof(c.plugin_ops[1].name), "%s", plugin);
    c.nplugin_ops = 2;
    framework_t *fw = framework_new(&c);
    assert_non_null(fw);
    return fw;
}

#define MB "1048576"

/* nginx:1.19 (300MB) on n1 and n2 of 3 nodes, busybox:latest (10MB) on n1.
 * Pod: nginx:1.19 and "busybox" (normalised to busybox:latest).
 * n1: 300MB*2/3 + int(10MB/3) = 209715200 + 3495253 = 213210453;
 *     100*(213210453 - 23MB)/(2*1000MB - 23MB) = 9.
 * n2: 209715200 -> 8. n3: nothing -> 0. */
static void test_image_locality(void **st)
{
    node_info_t *n[3];
    n[0] = mknode("n1", "",
                  "{'names':['docker.io/library/nginx@sha256:aa','nginx:1.19'],'sizeBytes':314572800},"
                  "{'names':['busybox:latest'],'sizeBytes':10485760}");
    n[1] = mknode("n2", "", "{'names':['nginx:1.19'],'sizeBytes':314572800}");
    n[2] = mknode("n3", "", "");
    pod_t *p = mkpod("", "'containers':[{'name':'a','image':'nginx:1.19'},{'name':'b','image':'busybox'}]");
    assert_int_equal(p->ncontainers, 2);
    assert_string_equal(p->images[1], "busybox:latest");
    framework_t *fw = only("ImageLocality");
    cycle_state_t *cs = cycle_state_new();
    fw_cluster_t cl = { .nodes = n, .nnodes = 3 };
    cycle_state_set_cluster(cs, &cl);
    int64_t out[3];
    assert_int_equal(framework_pre_filter(fw, cs, p, NULL), FW_SUCCESS);
    framework_score(fw, cs, p, n, 3, out);
    assert_int_equal(out[0], 9);
    assert_int_equal(out[1], 8);
    assert_int_equal(out[2], 0);
    /* Scoring only n2 and n3 still counts n1 as holding nginx (the spread
     * is over the whole cluster, not the scored nodes). */
    framework_score(fw, cs, p, n + 1, 2, out);
    assert_int_equal(out[0], 8);
    cycle_state_free(cs);
    pod_unref(p);
    framework_free(fw);
    for (int i = 0; i < 3; i++)
        node_info_free(n[i]);
}

static void test_image_names(void **st)
{
    char *s;
    s = image_normalize("nginx");
    assert_string_equal(s, "nginx:latest");
    free(s);
    s = image_normalize("localhost:5000/app");
    assert_string_equal(s, "localhost:5000/app:latest");
    free(s);
    s = image_normalize("localhost:5000/app:v1");
    assert_string_equal(s, "localhost:5000/app:v1");
    free(s);
    s = image_normalize("repo/app@sha256:abcd");
    assert_string_equal(s, "repo/app@sha256:abcd");
    free(s);
    /* Bad shapes are errors, never crashes. */
    char err[256];
    json_t *j = parse_sq("{'metadata':{'name':'n'},'status':{'images':[{'names':['a'],'sizeBytes':'big'}]}}");
    assert_null(node_from_json(j, err, sizeof(err)));
    json_decref(j);
    j = parse_sq("{'metadata':{'name':'n'},'status':{'images':[{'names':[7]}]}}");
    assert_null(node_from_json(j, err, sizeof(err)));
    json_decref(j);
    j = parse_sq("{'metadata':{'name':'p'},'spec':{'containers':[{'image':5}]}}");
    assert_null(pod_from_json(j, err, sizeof(err)));
    json_decref(j);
    j = parse_sq("{'metadata':{'name':'p','ownerReferences':{}},'spec':{}}");
    assert_null(pod_from_json(j, err, sizeof(err)));
    json_decref(j);
    j = parse_sq("{'metadata':{'name':'p'},'spec':{'preemptionPolicy':1}}");
    assert_null(pod_from_json(j, err, sizeof(err)));
    json_decref(j);
}

/* kube: 0 on a node that avoids the pod's controlling RC/RS, else 100. */
static void test_prefer_avoid_pods(void **st)
{
    char ann[512];
    /* The annotation's value is JSON inside a JSON string. */
    snprintf(ann, sizeof(ann),
             ",'annotations':{'scheduler.alpha.kubernetes.io/preferAvoidPods':"
             "'{\\\"preferAvoidPods\\\":[{\\\"podSignature\\\":{\\\"podController\\\":{\\\"kind\\\":\\\"ReplicaSet\\\","
             "\\\"uid\\\":\\\"rs-1\\\"}}}]}'}");
    node_info_t *n[3];
    n[0] = mknode("avoid", ann, "");
    n[1] = mknode("plain", "", "");
    n[2] = mknode("broken", ",'annotations':{'scheduler.alpha.kubernetes.io/preferAvoidPods':'{not json'}", "");
    assert_int_equal(n[0]->node->navoid, 1);
    pod_t *owned = mkpod(",'ownerReferences':[{'kind':'Deployment','uid':'d-1'},"
                         "{'kind':'ReplicaSet','uid':'rs-1','controller':true}]",
                         "'containers':[{'image':'x'}]");
    pod_t *job =
        mkpod(",'ownerReferences':[{'kind':'Job','uid':'rs-1','controller':true}]", "'containers':[{'image':'x'}]");
    assert_string_equal(owned->controller_kind, "ReplicaSet");
    framework_t *fw = only("NodePreferAvoidPods");
    int64_t out[3];
    framework_score(fw, NULL, owned, n, 3, out);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 100);
    assert_int_equal(out[2], 100);
    framework_score(fw, NULL, job, n, 3, out);
    assert_int_equal(out[0], 100);
    pod_unref(owned);
    pod_unref(job);
    framework_free(fw);
    for (int i = 0; i < 3; i++)
        node_info_free(n[i]);
}

static void test_unsupported_fields(void **st)
{
    pod_t *p = mkpod("", "'containers':[{'image':'x'}],'preemptionPolicy':'Never'");
    assert_true(p->preempt_never);
    assert_null(p->controller_kind); /* no ownerReferences */
    assert_null(p->unsupported);
    pod_unref(p);
    p = mkpod("", "'containers':[{'image':'x'}],'schedulingGates':[{'name':'g'}],"
                  "'volumes':[{'name':'v','emptyDir':{}},{'name':'w','ephemeral':{'volumeClaimTemplate':{'spec':{}}}}],"
                  "'affinity':{'podAntiAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':1,"
                  "'podAffinityTerm':{'topologyKey':'k','namespaceSelector':{'matchLabels':{'a':'b'}}}}]}}");
    assert_non_null(p->unsupported);
    assert_string_equal(p->unsupported,
                        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[]."
                        "podAffinityTerm.namespaceSelector, spec.volumes[].ephemeral");
    /* Scheduling gates are honoured now (scheduler/gates.c), not warned about. */
    assert_int_equal(p->ngates, 1);
    assert_string_equal(p->gates, "g");
    pod_unref(p);
    /* Empty lists and nulls are not "set". */
    p = mkpod("", "'containers':[{'image':'x'}],'schedulingGates':[],'resourceClaims':null");
    assert_null(p->unsupported);
    pod_unref(p);
    assert_non_null(unsupported_path(0));
    int n = 0;
    while (unsupported_path(n))
        n++;
    assert_true(n >= 4); /* the four namespaceSelector paths stay until that field is honoured */
    assert_null(unsupported_path(-1));
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_locality),
        cmocka_unit_test(test_image_names),
        cmocka_unit_test(test_prefer_avoid_pods),
        cmocka_unit_test(test_unsupported_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
