/* test_volumes.c -- storage parsing, the volume store and binder logic, and
 * the four volume plugins through the framework, with kube's reasons. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api/storage.h"
#include "api/types.h"
#include "config/config.h"
#include "framework/framework.h"
#include "framework/nodeinfo.h"
#include "scheduler/capabilities.h"
#include "volume/volume.h"

#include "fixtures.h"

/* ---- fixtures ------------------------------------------------------------ */

static pod_t *mkpod(const char *name, const char *volumes)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'default','uid':'uid-%s'},"
             "'spec':{'containers':[{'name':'c'}],'volumes':[%s]},'status':{'phase':'Pending'}}",
             name, name, volumes);
    return fx_pod(buf);
}

static node_info_t *mknode_alloc(const char *name, const char *labels, const char *extra)
{
    char buf[2048];
    snprintf(
        buf, sizeof(buf),
        "{'metadata':{'name':'%s','labels':{%s}},'spec':{},"
        "'status':{'allocatable':{'cpu':'4','memory':'8Gi','pods':'110'%s},'capacity':{'cpu':'4','memory':'8Gi','pods':'110'%s}}}",
        name, labels, extra, extra);
    return fx_node_info(buf);
}

static node_info_t *mknode(const char *name, const char *labels)
{
    return mknode_alloc(name, labels, "");
}

static void put_pv(volume_store_t *vs, const char *sq)
{
    char err[256] = "";
    json_t *j = parse_sq(sq);
    pv_t *v = pv_from_json(j, err, sizeof(err));
    json_decref(j);
    if (!v)
        fail_msg("pv: %s", err);
    volume_store_put_pv(vs, v);
    pv_unref(v);
}

static void put_pvc(volume_store_t *vs, const char *sq)
{
    char err[256] = "";
    json_t *j = parse_sq(sq);
    pvc_t *c = pvc_from_json(j, err, sizeof(err));
    json_decref(j);
    if (!c)
        fail_msg("pvc: %s", err);
    volume_store_put_pvc(vs, c);
    pvc_unref(c);
}

static void put_class(volume_store_t *vs, const char *sq)
{
    char err[256] = "";
    json_t *j = parse_sq(sq);
    storage_class_t *c = storage_class_from_json(j, err, sizeof(err));
    json_decref(j);
    if (!c)
        fail_msg("class: %s", err);
    volume_store_put_class(vs, c);
    storage_class_unref(c);
}

/* A PV of class cls with size and optional zone affinity (NULL: none). */
static void put_simple_pv(volume_store_t *vs, const char *name, const char *cls, const char *size, const char *zone)
{
    char buf[2048];
    char aff[512] = "";
    if (zone)
        snprintf(aff, sizeof(aff),
                 ",'nodeAffinity':{'required':{'nodeSelectorTerms':[{'matchExpressions':"
                 "[{'key':'zone','operator':'In','values':['%s']}]}]}}",
                 zone);
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','resourceVersion':'10'},'spec':{'capacity':{'storage':'%s'},"
             "'accessModes':['ReadWriteOnce'],'storageClassName':'%s'%s},'status':{'phase':'Available'}}",
             name, size, cls, aff);
    put_pv(vs, buf);
}

static void put_simple_pvc(volume_store_t *vs, const char *name, const char *cls, const char *size)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'default','uid':'c-%s','resourceVersion':'5'},"
             "'spec':{'storageClassName':'%s','accessModes':['ReadWriteOnce'],"
             "'resources':{'requests':{'storage':'%s'}}}}",
             name, name, cls, size);
    put_pvc(vs, buf);
}

typedef struct env {
    volume_store_t *vs;
    framework_t *fw;
    cycle_state_t *cs;
    fw_cluster_t cl;
} env_t;

static void env_init(env_t *e)
{
    e->vs = volume_store_new();
    e->fw = framework_new(NULL);
    e->cs = cycle_state_new();
    memset(&e->cl, 0, sizeof(e->cl));
    e->cl.volumes = e->vs;
    cycle_state_set_cluster(e->cs, &e->cl);
    put_class(e->vs, "{'metadata':{'name':'wait'},'provisioner':'kubernetes.io/no-provisioner',"
                     "'volumeBindingMode':'WaitForFirstConsumer'}");
    put_class(e->vs, "{'metadata':{'name':'now'},'provisioner':'x.csi.io','volumeBindingMode':'Immediate'}");
    put_class(e->vs, "{'metadata':{'name':'dyn'},'provisioner':'x.csi.io','volumeBindingMode':'WaitForFirstConsumer',"
                     "'allowedTopologies':[{'matchLabelExpressions':[{'key':'zone','values':['a']}]}]}");
}

static void env_free(env_t *e)
{
    cycle_state_free(e->cs);
    framework_free(e->fw);
    volume_store_free(e->vs);
}

/* Filter result: FW code, and the first reason in reason (may be NULL). */
static int run_filter(env_t *e, pod_t *pod, node_info_t *ni, char *reason)
{
    fw_status_t st;
    fw_status_reset(&st);
    if (framework_pre_filter(e->fw, e->cs, pod, &st) != FW_SUCCESS) {
        if (reason)
            snprintf(reason, FW_REASON_LEN, "%s", st.nreasons ? st.reasons[0] : "");
        return -st.code; /* negative: PreFilter failed */
    }
    int rc = framework_filter(e->fw, e->cs, pod, ni, &st);
    if (reason)
        snprintf(reason, FW_REASON_LEN, "%s", st.nreasons ? st.reasons[0] : "");
    return rc;
}

/* ---- parsing ---------------------------------------------------------------- */

static void test_parse_pod_volumes(void **state)
{
    (void)state;
    pod_t *p = mkpod("p", "{'name':'a','persistentVolumeClaim':{'claimName':'data','readOnly':true}},"
                          "{'name':'b','gcePersistentDisk':{'pdName':'pd1'}},"
                          "{'name':'c','rbd':{'monitors':['m1','m2'],'image':'img'}},"
                          "{'name':'d','emptyDir':{}},{'name':'e','csi':{'driver':'x.csi.io'}}");
    assert_int_equal(p->nvolumes, 5);
    assert_int_equal(p->volumes[0].kind, PVOL_PVC);
    assert_string_equal(p->volumes[0].id, "data");
    assert_true(p->volumes[0].read_only);
    assert_int_equal(p->volumes[1].kind, PVOL_GCE_PD);
    assert_string_equal(p->volumes[1].id, "pd1");
    assert_int_equal(p->volumes[2].kind, PVOL_RBD);
    assert_int_equal(p->volumes[2].nmonitors, 2);
    assert_string_equal(p->volumes[2].pool, "rbd");
    assert_int_equal(p->volumes[3].kind, PVOL_OTHER);
    assert_int_equal(p->volumes[4].kind, PVOL_CSI);
    pod_unref(p);
}

static void expect_bad(const char *what, const char *sq)
{
    char err[256] = "";
    json_t *j = parse_sq(sq);
    void *o = NULL;
    if (!strcmp(what, "pod"))
        o = pod_from_json(j, err, sizeof(err));
    else if (!strcmp(what, "pv"))
        o = pv_from_json(j, err, sizeof(err));
    else if (!strcmp(what, "pvc"))
        o = pvc_from_json(j, err, sizeof(err));
    else if (!strcmp(what, "sc"))
        o = storage_class_from_json(j, err, sizeof(err));
    else
        o = csinode_from_json(j, err, sizeof(err));
    json_decref(j);
    if (o)
        fail_msg("%s accepted: %s", what, sq);
    assert_true(err[0] != '\0');
}

static void test_parse_untrusted(void **state)
{
    (void)state;
    expect_bad("pod", "{'metadata':{'name':'p','uid':'u'},'spec':{'volumes':{}},'status':{}}");
    expect_bad(
        "pod",
        "{'metadata':{'name':'p','uid':'u'},'spec':{'volumes':[{'name':'a','persistentVolumeClaim':{}}]},'status':{}}");
    expect_bad(
        "pod",
        "{'metadata':{'name':'p','uid':'u'},'spec':{'volumes':[{'name':'a','rbd':{'monitors':'m'}}]},'status':{}}");
    expect_bad("pod", "{'metadata':{'name':'p','uid':'u'},'spec':{'volumes':[7]},'status':{}}");
    expect_bad("pv", "[]");
    expect_bad("pv", "{'metadata':{}}");
    expect_bad("pv", "{'metadata':{'name':'v'},'spec':{'capacity':{'storage':'lots'}}}");
    expect_bad("pv", "{'metadata':{'name':'v'},'spec':{'capacity':{'storage':'99999999999999999999999Ei'}}}");
    expect_bad("pv", "{'metadata':{'name':'v'},'spec':{'accessModes':['Sometimes']}}");
    expect_bad("pv", "{'metadata':{'name':'v'},'spec':{'nodeAffinity':{'required':{'nodeSelectorTerms':3}}}}");
    expect_bad("pvc", "{'metadata':{'name':'c','namespace':'d','annotations':[]}}");
    expect_bad("pvc", "{'metadata':{'name':'c'},'spec':{'resources':{'requests':{'storage':-1}}}}");
    expect_bad("pvc",
               "{'metadata':{'name':'c'},'spec':{'selector':{'matchExpressions':[{'key':'a','operator':'Gt'}]}}}");
    expect_bad("sc", "{'metadata':{'name':'s'},'allowedTopologies':[{'matchLabelExpressions':[{'key':'z'}]}]}");
    expect_bad("sc", "{'metadata':{'name':'s'},'provisioner':5}");
    expect_bad("csinode", "{'metadata':{'name':'n'},'spec':{'drivers':[{'name':'d','allocatable':{'count':-3}}]}}");
    expect_bad("csinode", "{'metadata':{'name':'n'},'spec':{'drivers':[{'name':'d','allocatable':{'count':1e30}}]}}");
}

static void test_parse_objects(void **state)
{
    (void)state;
    char err[256];
    json_t *j = parse_sq("{'metadata':{'name':'v','annotations':{'volume.beta.kubernetes.io/storage-class':'beta'}},"
                         "'spec':{'capacity':{'storage':'10Gi'},'accessModes':['ReadWriteOnce','ReadOnlyMany'],"
                         "'storageClassName':'ignored','volumeMode':'Block','claimRef':{'namespace':'d','name':'c'},"
                         "'csi':{'driver':'x.csi.io','volumeHandle':'h1'}},'status':{'phase':'Bound'}}");
    pv_t *v = pv_from_json(j, err, sizeof(err));
    json_decref(j);
    assert_non_null(v);
    assert_int_equal(v->capacity, 10LL << 30);
    assert_int_equal(v->access_modes, AM_RWO | AM_ROX);
    assert_string_equal(v->class_name, "beta");
    assert_true(v->block);
    assert_true(v->has_claim_ref);
    assert_string_equal(v->claim_name, "c");
    assert_false(v->available);
    assert_string_equal(v->csi_handle, "h1");
    pv_unref(v);

    j = parse_sq("{'metadata':{'name':'n'},'spec':{'drivers':[{'name':'a','allocatable':{'count':3}},{'name':'b'}]}}");
    csinode_t *cn = csinode_from_json(j, err, sizeof(err));
    json_decref(j);
    assert_non_null(cn);
    assert_int_equal(cn->ndrivers, 2);
    assert_true(cn->drivers[0].has_count);
    assert_int_equal(cn->drivers[0].count, 3);
    assert_false(cn->drivers[1].has_count);
    csinode_unref(cn);

    char key[RES_NAME_MAX];
    volume_csi_limit_key("x.csi.io", key, sizeof(key));
    assert_string_equal(key, "attachable-volumes-csi-x.csi.io");
    volume_csi_limit_key("a-very-long-driver-name.example.storage.vendor.io", key, sizeof(key));
    assert_int_equal(strlen(key), strlen("attachable-volumes-csi-") + 23 + 16);
}

/* ---- VolumeBinding ------------------------------------------------------------- */

static void test_binding_prefilter_errors(void **state)
{
    (void)state;
    env_t e;
    char reason[FW_REASON_LEN];
    env_init(&e);
    node_info_t *a = mknode("a", "'zone':'a'");
    pod_t *p = mkpod("p", "{'name':'v','persistentVolumeClaim':{'claimName':'missing'}}");
    assert_int_equal(run_filter(&e, p, a, reason), -FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(reason, "persistentvolumeclaim \"missing\" not found");
    /* The default profile runs VolumeBinding at Reserve and PreBind too. */
    assert_true(framework_runs(e.fw, FW_PT_RESERVE, "VolumeBinding"));
    assert_true(framework_runs(e.fw, FW_PT_PRE_BIND, "VolumeBinding"));
    assert_false(framework_runs(e.fw, FW_PT_RESERVE, "VolumeZone"));
    pod_unref(p);

    put_simple_pvc(e.vs, "imm", "now", "1Gi");
    p = mkpod("p", "{'name':'v','persistentVolumeClaim':{'claimName':'imm'}}");
    assert_int_equal(run_filter(&e, p, a, reason), -FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(reason, "pod has unbound immediate PersistentVolumeClaims");

    /* A view without a store: no storage known, the claim is missing; no
     * view at all (preemption's one-node simulation): not checked. */
    e.cl.volumes = NULL;
    assert_int_equal(run_filter(&e, p, a, reason), -FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(reason, "persistentvolumeclaim \"imm\" not found");
    cycle_state_set_cluster(e.cs, NULL);
    assert_int_equal(run_filter(&e, p, a, NULL), FW_SUCCESS);
    cycle_state_set_cluster(e.cs, &e.cl);
    e.cl.volumes = e.vs;
    pod_unref(p);

    /* A pod without claims is not touched. */
    p = mkpod("p", "{'name':'v','emptyDir':{}}");
    assert_int_equal(run_filter(&e, p, a, NULL), FW_SUCCESS);
    pod_unref(p);
    node_info_free(a);
    env_free(&e);
}

static void test_binding_bound_affinity(void **state)
{
    (void)state;
    env_t e;
    char reason[FW_REASON_LEN];
    env_init(&e);
    node_info_t *a = mknode("a", "'zone':'a'"), *b = mknode("b", "'zone':'b'");
    put_simple_pv(e.vs, "pv1", "now", "1Gi", "a");
    put_pvc(e.vs, "{'metadata':{'name':'c','namespace':'default','uid':'c1','annotations':"
                  "{'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'pv1','storageClassName':'now'}}");
    pod_t *p = mkpod("p", "{'name':'v','persistentVolumeClaim':{'claimName':'c'}}");
    assert_int_equal(run_filter(&e, p, a, reason), FW_SUCCESS);
    assert_int_equal(run_filter(&e, p, b, reason), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(reason, "node(s) had volume node affinity conflict");
    /* The PV is gone: kube's "pvc(s) bound to non-existent pv(s)". */
    volume_store_del_pv(e.vs, "pv1");
    assert_int_equal(run_filter(&e, p, a, reason), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(reason, "pvc(s) bound to non-existent pv(s)");
    pod_unref(p);
    node_info_free(a);
    node_info_free(b);
    env_free(&e);
}

static void test_binding_smallest_pv_and_reserve(void **state)
{
    (void)state;
    env_t e;
    char reason[FW_REASON_LEN], err[256];
    env_init(&e);
    node_info_t *a = mknode("a", "'zone':'a'"), *b = mknode("b", "'zone':'b'");
    put_simple_pv(e.vs, "pv5", "wait", "5Gi", NULL);
    put_simple_pv(e.vs, "pv20", "wait", "20Gi", NULL);
    put_simple_pv(e.vs, "pv10", "wait", "10Gi", "a");
    put_simple_pv(e.vs, "pv12", "wait", "12Gi", NULL);
    put_simple_pv(e.vs, "other", "dyn", "8Gi", NULL); /* wrong class */
    put_simple_pvc(e.vs, "c", "wait", "8Gi");
    pod_t *p = mkpod("p", "{'name':'v','persistentVolumeClaim':{'claimName':'c'}}");
    assert_int_equal(run_filter(&e, p, a, reason), FW_SUCCESS);
    assert_int_equal(run_filter(&e, p, b, reason), FW_SUCCESS);
    /* On a, the smallest fit is pv10 (zone a); on b it is pv12. */
    assert_int_equal(volume_assume(e.vs, p, a->node, err, sizeof(err)), 0);
    vb_plan_t *plan = volume_plan_copy(e.vs, p->uid);
    assert_non_null(plan);
    assert_int_equal(plan->nw, 1);
    assert_true(plan->w[0].is_pv);
    assert_string_equal(plan->w[0].name, "pv10");
    assert_string_equal(plan->w[0].claim_uid, "c-c");
    assert_true(plan->w[0].bound_by_ctrl);
    volume_plan_free(plan);

    /* A second pod with a claim of its own cannot take pv10 any more. */
    put_simple_pvc(e.vs, "c2", "wait", "9Gi");
    pod_t *q = mkpod("q", "{'name':'v','persistentVolumeClaim':{'claimName':'c2'}}");
    assert_int_equal(volume_assume(e.vs, q, a->node, err, sizeof(err)), 0);
    plan = volume_plan_copy(e.vs, q->uid);
    assert_string_equal(plan->w[0].name, "pv12");
    volume_plan_free(plan);
    /* A third finds nothing left that fits 15Gi but pv20... */
    put_simple_pvc(e.vs, "c3", "wait", "15Gi");
    pod_t *r = mkpod("r", "{'name':'v','persistentVolumeClaim':{'claimName':'c3'}}");
    assert_int_equal(run_filter(&e, r, a, NULL), FW_SUCCESS);
    assert_int_equal(volume_assume(e.vs, r, a->node, err, sizeof(err)), 0);
    /* ...and a fourth finds nothing at all: no-provisioner class. */
    put_simple_pvc(e.vs, "c4", "wait", "1Gi");
    pod_t *t = mkpod("t", "{'name':'v','persistentVolumeClaim':{'claimName':'c4'}}");
    assert_int_equal(run_filter(&e, t, a, reason), FW_SUCCESS); /* pv5 left */
    put_simple_pvc(e.vs, "c5", "wait", "6Gi");
    pod_t *u = mkpod("u", "{'name':'v','persistentVolumeClaim':{'claimName':'c5'}}");
    assert_int_equal(run_filter(&e, u, a, reason), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(reason, "node(s) didn't find available persistent volumes to bind");
    assert_int_equal(volume_assume(e.vs, u, a->node, err, sizeof(err)), -1);
    assert_string_equal(err, "node(s) didn't find available persistent volumes to bind");
    /* Unreserve gives pv10 back. */
    volume_forget(e.vs, p->uid);
    assert_int_equal(run_filter(&e, u, a, reason), FW_SUCCESS);
    assert_int_equal(run_filter(&e, u, b, reason), FW_UNSCHEDULABLE_UNRESOLVABLE); /* pv10 is zone a */
    pod_unref(p);
    pod_unref(q);
    pod_unref(r);
    pod_unref(t);
    pod_unref(u);
    node_info_free(a);
    node_info_free(b);
    env_free(&e);
}

/* Local PVs (one hostname): the shortcut agrees with the selector. */
static void test_binding_local_pv(void **state)
{
    (void)state;
    env_t e;
    char reason[FW_REASON_LEN];
    env_init(&e);
    node_info_t *a = mknode("a", "'kubernetes.io/hostname':'a'"), *b = mknode("b", "'kubernetes.io/hostname':'b'");
    node_info_t *nolabel = mknode("x", "");
    put_pv(e.vs,
           "{'metadata':{'name':'local-a'},'spec':{'capacity':{'storage':'1Gi'},'storageClassName':'wait',"
           "'accessModes':['ReadWriteOnce'],'nodeAffinity':{'required':{'nodeSelectorTerms':[{'matchExpressions':"
           "[{'key':'kubernetes.io/hostname','operator':'In','values':['a']}]}]}}},'status':{'phase':'Available'}}");
    put_simple_pvc(e.vs, "lc", "wait", "1Gi");
    pod_t *p = mkpod("p", "{'name':'v','persistentVolumeClaim':{'claimName':'lc'}}");
    assert_int_equal(run_filter(&e, p, a, reason), FW_SUCCESS);
    assert_int_equal(run_filter(&e, p, b, reason), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(reason, "node(s) didn't find available persistent volumes to bind");
    assert_int_equal(run_filter(&e, p, nolabel, reason), FW_UNSCHEDULABLE_UNRESOLVABLE);
    pod_unref(p);
    node_info_free(a);
    node_info_free(b);
    node_info_free(nolabel);
    env_free(&e);
}

static void test_binding_dynamic_and_check(void **state)
{
    (void)state;
    env_t e;
    char reason[FW_REASON_LEN], err[256];
    env_init(&e);
    node_info_t *a = mknode("a", "'zone':'a'"), *b = mknode("b", "'zone':'b'");
    put_simple_pvc(e.vs, "d", "dyn", "1Gi");
    pod_t *p = mkpod("p", "{'name':'v','persistentVolumeClaim':{'claimName':'d'}}");
    assert_int_equal(run_filter(&e, p, a, reason), FW_SUCCESS);
    assert_int_equal(run_filter(&e, p, b, reason), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(reason, "node(s) didn't find available persistent volumes to bind");
    assert_int_equal(volume_assume(e.vs, p, a->node, err, sizeof(err)), 0);
    vb_plan_t *plan = volume_plan_copy(e.vs, p->uid);
    assert_int_equal(plan->nw, 1);
    assert_false(plan->w[0].is_pv);
    assert_string_equal(plan->w[0].name, "d");
    assert_string_equal(plan->node, "a");
    volume_plan_free(plan);
    /* Another pod sharing the claim now sees it selected for a only. */
    pod_t *q = mkpod("q", "{'name':'v','persistentVolumeClaim':{'claimName':'d'}}");
    assert_int_equal(run_filter(&e, q, a, reason), FW_SUCCESS);
    pod_unref(q);

    /* PreBind's wait: written, not bound yet, then provisioned and bound. */
    volume_plan_written(e.vs, p->uid, 0, "7");
    assert_int_equal(volume_plan_check(e.vs, p->uid, a->node, err, sizeof(err)), 0); /* our write not seen */
    put_pvc(e.vs, "{'metadata':{'name':'d','namespace':'default','uid':'c-d','resourceVersion':'7',"
                  "'annotations':{'volume.kubernetes.io/selected-node':'a'}},'spec':{'storageClassName':'dyn'}}");
    assert_int_equal(volume_plan_check(e.vs, p->uid, a->node, err, sizeof(err)), 0);
    put_simple_pv(e.vs, "pvd", "dyn", "1Gi", "a");
    put_pvc(e.vs, "{'metadata':{'name':'d','namespace':'default','uid':'c-d','resourceVersion':'9',"
                  "'annotations':{'volume.kubernetes.io/selected-node':'a','pv.kubernetes.io/bind-completed':'yes'}},"
                  "'spec':{'storageClassName':'dyn','volumeName':'pvd'}}");
    assert_int_equal(volume_plan_check(e.vs, p->uid, a->node, err, sizeof(err)), 1);
    /* The provisioner gave up (annotation removed): retry, kube's words. */
    put_pvc(e.vs, "{'metadata':{'name':'d','namespace':'default','uid':'c-d','resourceVersion':'11'},"
                  "'spec':{'storageClassName':'dyn'}}");
    assert_int_equal(volume_plan_check(e.vs, p->uid, a->node, err, sizeof(err)), -1);
    assert_string_equal(err, "provisioning failed for PVC \"d\"");
    volume_plan_fail(e.vs, p->uid, err);
    plan = volume_plan_copy(e.vs, p->uid);
    assert_string_equal(plan->failed, "provisioning failed for PVC \"d\"");
    volume_plan_free(plan);
    volume_forget(e.vs, p->uid);
    assert_false(volume_has_plan(e.vs, p->uid));
    pod_unref(p);
    node_info_free(a);
    node_info_free(b);
    env_free(&e);
}

static void test_binding_static_check(void **state)
{
    (void)state;
    env_t e;
    char err[256];
    env_init(&e);
    node_info_t *a = mknode("a", "'zone':'a'");
    put_simple_pv(e.vs, "pv1", "wait", "1Gi", NULL);
    put_simple_pvc(e.vs, "c", "wait", "1Gi");
    pod_t *p = mkpod("p", "{'name':'v','persistentVolumeClaim':{'claimName':'c'}}");
    assert_int_equal(volume_assume(e.vs, p, a->node, err, sizeof(err)), 0);
    volume_plan_written(e.vs, p->uid, 0, "20");
    assert_int_equal(volume_plan_check(e.vs, p->uid, a->node, err, sizeof(err)), 0); /* rv 10 < 20 */
    put_pv(e.vs, "{'metadata':{'name':'pv1','resourceVersion':'20'},'spec':{'capacity':{'storage':'1Gi'},"
                 "'storageClassName':'wait','claimRef':{'namespace':'default','name':'c','uid':'c-c'}},"
                 "'status':{'phase':'Available'}}");
    assert_int_equal(volume_plan_check(e.vs, p->uid, a->node, err, sizeof(err)), 0); /* claim not bound */
    put_pvc(e.vs, "{'metadata':{'name':'c','namespace':'default','uid':'c-c','resourceVersion':'21',"
                  "'annotations':{'pv.kubernetes.io/bind-completed':'yes'}},"
                  "'spec':{'storageClassName':'wait','volumeName':'pv1'}}");
    assert_int_equal(volume_plan_check(e.vs, p->uid, a->node, err, sizeof(err)), 1);
    /* Someone reset the claimRef. */
    put_pv(e.vs, "{'metadata':{'name':'pv1','resourceVersion':'22'},'spec':{'capacity':{'storage':'1Gi'},"
                 "'storageClassName':'wait'},'status':{'phase':'Available'}}");
    assert_int_equal(volume_plan_check(e.vs, p->uid, a->node, err, sizeof(err)), -1);
    assert_string_equal(err, "ClaimRef got reset for pv \"pv1\"");
    volume_forget(e.vs, p->uid);
    pod_unref(p);
    node_info_free(a);
    env_free(&e);
}

/* ---- VolumeZone, VolumeRestrictions, NodeVolumeLimits ---------------------------- */

static void test_volume_zone(void **state)
{
    (void)state;
    env_t e;
    char reason[FW_REASON_LEN];
    env_init(&e);
    node_info_t *a = mknode("a", "'topology.kubernetes.io/zone':'z1'");
    node_info_t *b = mknode("b", "'topology.kubernetes.io/zone':'z2'");
    node_info_t *c = mknode("c", "'topology.kubernetes.io/zone':'z3'");
    put_pv(e.vs, "{'metadata':{'name':'pv1','labels':{'topology.kubernetes.io/zone':'z1__z2'}},"
                 "'spec':{'capacity':{'storage':'1Gi'},'storageClassName':'now'},'status':{'phase':'Bound'}}");
    put_pvc(e.vs, "{'metadata':{'name':'c','namespace':'default','uid':'c1','annotations':"
                  "{'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'pv1','storageClassName':'now'}}");
    pod_t *p = mkpod("p", "{'name':'v','persistentVolumeClaim':{'claimName':'c'}}");
    assert_int_equal(run_filter(&e, p, a, reason), FW_SUCCESS);
    assert_int_equal(run_filter(&e, p, b, reason), FW_SUCCESS);
    assert_int_equal(run_filter(&e, p, c, reason), FW_UNSCHEDULABLE_UNRESOLVABLE);
    assert_string_equal(reason, "node(s) had no available volume zone");
    pod_unref(p);
    node_info_free(a);
    node_info_free(b);
    node_info_free(c);
    env_free(&e);
}

static void test_volume_restrictions(void **state)
{
    (void)state;
    env_t e;
    char reason[FW_REASON_LEN];
    env_init(&e);
    node_info_t *a = mknode("a", "");
    pod_t *gce_ro = mkpod("g1", "{'name':'v','gcePersistentDisk':{'pdName':'pd','readOnly':true}}");
    pod_t *gce_ro2 = mkpod("g2", "{'name':'v','gcePersistentDisk':{'pdName':'pd','readOnly':true}}");
    pod_t *gce_rw = mkpod("g3", "{'name':'v','gcePersistentDisk':{'pdName':'pd'}}");
    pod_t *ebs_ro = mkpod("e1", "{'name':'v','awsElasticBlockStore':{'volumeID':'vol','readOnly':true}}");
    pod_t *ebs_ro2 = mkpod("e2", "{'name':'v','awsElasticBlockStore':{'volumeID':'vol','readOnly':true}}");
    pod_t *rbd1 = mkpod("r1", "{'name':'v','rbd':{'monitors':['m1','m2'],'image':'i'}}");
    pod_t *rbd2 = mkpod("r2", "{'name':'v','rbd':{'monitors':['m2'],'image':'i'}}");
    pod_t *rbd3 = mkpod("r3", "{'name':'v','rbd':{'monitors':['m3'],'image':'i'}}");
    node_info_add_pod(a, gce_ro);
    node_info_add_pod(a, ebs_ro);
    node_info_add_pod(a, rbd1);
    assert_int_equal(run_filter(&e, gce_ro2, a, reason), FW_SUCCESS);
    assert_int_equal(run_filter(&e, gce_rw, a, reason), FW_UNSCHEDULABLE);
    assert_string_equal(reason, "node(s) had no available disk");
    assert_int_equal(run_filter(&e, ebs_ro2, a, reason), FW_UNSCHEDULABLE); /* EBS: never shared */
    assert_int_equal(run_filter(&e, rbd2, a, reason), FW_UNSCHEDULABLE);
    assert_int_equal(run_filter(&e, rbd3, a, reason), FW_SUCCESS);
    pod_unref(gce_ro);
    pod_unref(gce_ro2);
    pod_unref(gce_rw);
    pod_unref(ebs_ro);
    pod_unref(ebs_ro2);
    pod_unref(rbd1);
    pod_unref(rbd2);
    pod_unref(rbd3);
    node_info_free(a);
    env_free(&e);
}

static void put_csi_pv_pvc(volume_store_t *vs, const char *name, const char *handle)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'pv-%s'},'spec':{'capacity':{'storage':'1Gi'},"
             "'storageClassName':'now','csi':{'driver':'x.csi.io','volumeHandle':'%s'}},"
             "'status':{'phase':'Bound'}}",
             name, handle);
    put_pv(vs, buf);
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'default','uid':'c-%s','annotations':"
             "{'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'pv-%s',"
             "'storageClassName':'now'}}",
             name, name, name);
    put_pvc(vs, buf);
}

static void test_node_volume_limits(void **state)
{
    (void)state;
    env_t e;
    char reason[FW_REASON_LEN], err[256];
    env_init(&e);
    node_info_t *a = mknode("a", "");
    put_csi_pv_pvc(e.vs, "c1", "h1");
    put_csi_pv_pvc(e.vs, "c2", "h2");
    put_csi_pv_pvc(e.vs, "c1b", "h1"); /* same volume as c1 */
    json_t *j =
        parse_sq("{'metadata':{'name':'a'},'spec':{'drivers':[{'name':'x.csi.io','allocatable':{'count':1}}]}}");
    csinode_t *cn = csinode_from_json(j, err, sizeof(err));
    json_decref(j);
    volume_store_put_csinode(e.vs, cn);
    csinode_unref(cn);
    pod_t *old = mkpod("old", "{'name':'v','persistentVolumeClaim':{'claimName':'c1'}}");
    pod_t *p2 = mkpod("p2", "{'name':'v','persistentVolumeClaim':{'claimName':'c2'}}");
    pod_t *p1b = mkpod("p1b", "{'name':'v','persistentVolumeClaim':{'claimName':'c1b'}}");
    assert_int_equal(run_filter(&e, p2, a, reason), FW_SUCCESS); /* 1 of 1 */
    node_info_add_pod(a, old);
    assert_int_equal(run_filter(&e, p2, a, reason), FW_UNSCHEDULABLE);
    assert_string_equal(reason, "node(s) exceed max volume count");
    assert_int_equal(run_filter(&e, p1b, a, reason), FW_SUCCESS); /* already attached */
    /* No CSINode: no limit. */
    volume_store_del_csinode(e.vs, "a");
    assert_int_equal(run_filter(&e, p2, a, reason), FW_SUCCESS);
    pod_unref(old);
    pod_unref(p2);
    pod_unref(p1b);
    node_info_free(a);
    env_free(&e);
}

static void test_in_tree_limits(void **state)
{
    (void)state;
    env_t e;
    char reason[FW_REASON_LEN];
    env_init(&e);
    node_info_t *a = mknode_alloc("a", "", ",'attachable-volumes-aws-ebs':'2'");
    pod_t *e1 = mkpod("e1", "{'name':'v','awsElasticBlockStore':{'volumeID':'vol-1'}}");
    pod_t *e2 = mkpod("e2", "{'name':'v','awsElasticBlockStore':{'volumeID':'vol-2'}}");
    pod_t *e3 = mkpod("e3", "{'name':'v','awsElasticBlockStore':{'volumeID':'vol-3'}}");
    /* A claim bound to an EBS PV counts as that volume. */
    put_pv(e.vs, "{'metadata':{'name':'ebs1'},'spec':{'capacity':{'storage':'1Gi'},'storageClassName':'now',"
                 "'awsElasticBlockStore':{'volumeID':'vol-1'}},'status':{'phase':'Bound'}}");
    put_pvc(e.vs, "{'metadata':{'name':'cebs','namespace':'default','uid':'u-cebs','annotations':"
                  "{'pv.kubernetes.io/bind-completed':'yes'}},'spec':{'volumeName':'ebs1','storageClassName':'now'}}");
    pod_t *viaclaim = mkpod("vc", "{'name':'v','persistentVolumeClaim':{'claimName':'cebs'}}");
    node_info_add_pod(a, e1);
    node_info_add_pod(a, e2);
    assert_int_equal(run_filter(&e, e3, a, reason), FW_UNSCHEDULABLE);
    assert_string_equal(reason, "node(s) exceed max volume count");
    assert_int_equal(run_filter(&e, viaclaim, a, reason), FW_SUCCESS); /* vol-1 is attached already */
    /* GCE PD: the default of 16, or $KUBE_MAX_PD_VOLS. */
    node_info_t *b = mknode("b", "");
    pod_t *g1 = mkpod("g1", "{'name':'v','gcePersistentDisk':{'pdName':'pd-1'}}");
    pod_t *g2 = mkpod("g2", "{'name':'v','gcePersistentDisk':{'pdName':'pd-2'}}");
    node_info_add_pod(b, g1);
    assert_int_equal(run_filter(&e, g2, b, reason), FW_SUCCESS);
    setenv("KUBE_MAX_PD_VOLS", "1", 1);
    assert_int_equal(run_filter(&e, g2, b, reason), FW_UNSCHEDULABLE);
    unsetenv("KUBE_MAX_PD_VOLS");
    /* EBS on a Nitro instance type: 25. */
    node_info_t *c = mknode("c", "'node.kubernetes.io/instance-type':'m5.large'");
    char vols[8192] = "";
    for (int i = 0; i < 26; i++) {
        size_t len = strlen(vols);
        snprintf(vols + len, sizeof(vols) - len, "%s{'name':'v%d','awsElasticBlockStore':{'volumeID':'n-%d'}}",
                 i ? "," : "", i, i);
    }
    pod_t *many = mkpod("many", vols);
    assert_int_equal(run_filter(&e, many, c, reason), FW_UNSCHEDULABLE);
    node_info_t *d = mknode("d", "'node.kubernetes.io/instance-type':'m4.large'");
    assert_int_equal(run_filter(&e, many, d, reason), FW_SUCCESS); /* 26 <= 39 */
    pod_unref(e1);
    pod_unref(e2);
    pod_unref(e3);
    pod_unref(viaclaim);
    pod_unref(g1);
    pod_unref(g2);
    pod_unref(many);
    node_info_free(a);
    node_info_free(b);
    node_info_free(c);
    node_info_free(d);
    env_free(&e);
}

/* Every value of valid objects replaced, one at a time, by values of every
 * other type: each parse gives an object or an error message, never a
 * crash (run under ASan in make unit-asan). */
typedef void *(*parse_fn)(json_t *, char *, size_t);
static void *p_pod(json_t *j, char *e, size_t n)
{
    return pod_from_json(j, e, n);
}
static void *p_pv(json_t *j, char *e, size_t n)
{
    return pv_from_json(j, e, n);
}
static void *p_pvc(json_t *j, char *e, size_t n)
{
    return pvc_from_json(j, e, n);
}
static void *p_sc(json_t *j, char *e, size_t n)
{
    return storage_class_from_json(j, e, n);
}
static void *p_cn(json_t *j, char *e, size_t n)
{
    return csinode_from_json(j, e, n);
}

static int fuzz_count;

static void fuzz_one(json_t *root, parse_fn parse, void (*unref)(void *))
{
    char err[256] = "";
    void *o = parse(root, err, sizeof(err));
    if (o)
        unref(o);
    else
        assert_true(err[0] != '\0');
    fuzz_count++;
}

static void fuzz_walk(json_t *root, json_t *node, parse_fn parse, void (*unref)(void *))
{
    json_t *bad[] = { json_null(), json_integer(-1), json_real(1e300), json_string("x"),
                      json_true(), json_array(),     json_object() };
    const char *key;
    json_t *v;
    void *tmp;
    size_t i;
    if (json_is_object(node)) {
        json_object_foreach_safe (node, tmp, key, v) {
            json_t *keep = json_incref(v);
            for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
                json_object_set(node, key, bad[b]);
                fuzz_one(root, parse, unref);
            }
            json_object_set(node, key, keep);
            fuzz_walk(root, keep, parse, unref);
            json_decref(keep);
        }
    } else if (json_is_array(node)) {
        json_array_foreach (node, i, v) {
            json_t *keep = json_incref(v);
            for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
                json_array_set(node, i, bad[b]);
                fuzz_one(root, parse, unref);
            }
            json_array_set(node, i, keep);
            fuzz_walk(root, keep, parse, unref);
            json_decref(keep);
        }
    }
    for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++)
        json_decref(bad[b]);
}

static void u_pod(void *o)
{
    pod_unref(o);
}
static void u_pv(void *o)
{
    pv_unref(o);
}
static void u_pvc(void *o)
{
    pvc_unref(o);
}
static void u_sc(void *o)
{
    storage_class_unref(o);
}
static void u_cn(void *o)
{
    csinode_unref(o);
}

static void test_parse_fuzz(void **state)
{
    (void)state;
    struct {
        const char *sq;
        parse_fn parse;
        void (*unref)(void *);
    } docs[] = {
        { "{'metadata':{'name':'p','namespace':'d','uid':'u'},'spec':{'containers':[{'name':'c'}],'volumes':["
          "{'name':'a','persistentVolumeClaim':{'claimName':'c','readOnly':true}},"
          "{'name':'b','rbd':{'monitors':['m'],'image':'i','pool':'p'}},{'name':'c','iscsi':{'iqn':'q'}}]},"
          "'status':{}}",
          p_pod, u_pod },
        { "{'metadata':{'name':'v','labels':{'a':'b'},'annotations':{'x':'y'}},'spec':{'capacity':{'storage':'1Gi'},"
          "'accessModes':['ReadWriteOnce'],'claimRef':{'namespace':'d','name':'c','uid':'u'},"
          "'csi':{'driver':'d','volumeHandle':'h'},'awsElasticBlockStore':{'volumeID':'v'},"
          "'nodeAffinity':{'required':{'nodeSelectorTerms':[{'matchExpressions':[{'key':'k','operator':'In',"
          "'values':['v']}]}]}}},'status':{'phase':'Available'}}",
          p_pv, u_pv },
        { "{'metadata':{'name':'c','namespace':'d','annotations':{'volume.kubernetes.io/selected-node':'n'}},"
          "'spec':{'storageClassName':'s','volumeName':'v','accessModes':['ReadWriteOnce'],"
          "'resources':{'requests':{'storage':'1Gi'}},'selector':{'matchLabels':{'a':'b'}}}}",
          p_pvc, u_pvc },
        { "{'metadata':{'name':'s'},'provisioner':'p','volumeBindingMode':'WaitForFirstConsumer',"
          "'allowedTopologies':[{'matchLabelExpressions':[{'key':'z','values':['a']}]}]}",
          p_sc, u_sc },
        { "{'metadata':{'name':'n'},'spec':{'drivers':[{'name':'d','allocatable':{'count':3}}]}}", p_cn, u_cn },
    };
    for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++) {
        json_t *root = parse_sq(docs[d].sq);
        fuzz_one(root, docs[d].parse, docs[d].unref);
        fuzz_walk(root, root, docs[d].parse, docs[d].unref);
        json_decref(root);
    }
    assert_true(fuzz_count > 300);
}

/* --volume-bind-timeout and volumeBindTimeoutSeconds: 600 by default, bounded. */
static void test_bind_timeout_config(void **state)
{
    (void)state;
    sched_config_t c;
    char err[256] = "";
    config_default(&c);
    assert_int_equal(c.sched.volume_bind_timeout_s, 600);
    const char *y = "apiVersion: ai-scheduler.aibee.cn/v1alpha1\nkind: AiSchedulerConfiguration\n"
                    "volumeBindTimeoutSeconds: 30\n";
    assert_int_equal(config_load_string(&c, y, strlen(y), "cfg.yaml", err, sizeof(err)), 0);
    assert_int_equal(c.sched.volume_bind_timeout_s, 30);
    char *argv[] = { "ai-scheduler", "--volume-bind-timeout", "5", NULL };
    assert_int_equal(config_parse_args(&c, 3, argv, err, sizeof(err)), 0);
    assert_int_equal(c.sched.volume_bind_timeout_s, 5);
    char *bad[] = { "ai-scheduler", "--volume-bind-timeout", "0", NULL };
    assert_int_not_equal(config_parse_args(&c, 3, bad, err, sizeof(err)), 0);
    config_free(&c);
}

/* Pool threads reserve and filter while informers replace objects: each
 * thread's pods race for a few PVs; no PV is ever given to two pods. */
typedef struct race_arg {
    volume_store_t *vs;
    node_t *node;
    int id;
    int won;
} race_arg_t;

static void *race_main(void *p)
{
    race_arg_t *r = p;
    char err[256], name[32], vol[128];
    snprintf(name, sizeof(name), "t%d", r->id);
    snprintf(vol, sizeof(vol), "{'name':'v','persistentVolumeClaim':{'claimName':'c%d'}}", r->id);
    pod_t *pod = mkpod(name, vol);
    for (int i = 0; i < 200; i++) {
        vb_claims_t c;
        unsigned reasons;
        if (volume_claims_get(r->vs, pod, &c, err, sizeof(err)) == VB_OK) {
            volume_store_rdlock(r->vs);
            volume_find_locked(r->vs, &c, r->node, &reasons, err, sizeof(err));
            volume_store_unlock(r->vs);
            volume_claims_free(&c);
        }
        if (volume_assume(r->vs, pod, r->node, err, sizeof(err)) == 0) {
            r->won++;
            if (i % 2 == 0)
                volume_forget(r->vs, pod->uid);
            else
                break; /* keep it */
        }
    }
    pod_unref(pod);
    return NULL;
}

static void test_concurrent_reserve(void **state)
{
    (void)state;
    env_t e;
    env_init(&e);
    node_info_t *a = mknode("a", "'zone':'a'");
    put_simple_pv(e.vs, "only1", "wait", "1Gi", NULL);
    put_simple_pv(e.vs, "only2", "wait", "1Gi", NULL);
    enum { N = 4 };
    pthread_t th[N];
    race_arg_t args[N];
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof(name), "c%d", i);
        put_simple_pvc(e.vs, name, "wait", "1Gi");
        args[i] = (race_arg_t){ e.vs, a->node, i, 0 };
        pthread_create(&th[i], NULL, race_main, &args[i]);
    }
    for (int k = 0; k < 50; k++)
        put_simple_pv(e.vs, "spare", "other", "1Gi", NULL); /* informer churn */
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    /* The pods that kept a PV hold distinct ones, at most two. */
    int kept = 0;
    char seen[N][64];
    for (int i = 0; i < N; i++) {
        char uid[32];
        snprintf(uid, sizeof(uid), "uid-t%d", i);
        vb_plan_t *p = volume_plan_copy(e.vs, uid);
        if (!p)
            continue;
        for (int j = 0; j < kept; j++)
            assert_string_not_equal(seen[j], p->w[0].name);
        snprintf(seen[kept++], sizeof(seen[0]), "%s", p->w[0].name);
        volume_plan_free(p);
    }
    assert_int_equal(kept, 2);
    node_info_free(a);
    env_free(&e);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_pod_volumes),
        cmocka_unit_test(test_parse_untrusted),
        cmocka_unit_test(test_parse_objects),
        cmocka_unit_test(test_parse_fuzz),
        cmocka_unit_test(test_binding_prefilter_errors),
        cmocka_unit_test(test_binding_bound_affinity),
        cmocka_unit_test(test_binding_smallest_pv_and_reserve),
        cmocka_unit_test(test_binding_local_pv),
        cmocka_unit_test(test_binding_dynamic_and_check),
        cmocka_unit_test(test_binding_static_check),
        cmocka_unit_test(test_volume_zone),
        cmocka_unit_test(test_volume_restrictions),
        cmocka_unit_test(test_node_volume_limits),
        cmocka_unit_test(test_in_tree_limits),
        cmocka_unit_test(test_bind_timeout_config),
        cmocka_unit_test(test_concurrent_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
