/* test_volume_row.c -- the volumes row alone (pkg/volume/row.c), on a fake
 * services table: two nodes, an API that records each PATCH, a binder that
 * records what it is handed, the wake-ups counted. No scheduler is built:
 * what the row asks of the core is exactly the table's calls. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "scheduler/capabilities.h"
#include "util/util.h"
#include "volume/row.h"
#include "volume/volume.h"

#include "fake_services.h"
#include "fixtures.h"

typedef struct fake {
    fake_core_t fc;     /* first: the core the row's calls get */
    node_info_t *ni[2]; /* a (zone a), b (zone b) */
    int known;          /* pod_known's answer */
    int forgotten;
    queue_item_t *bound; /* what the binder was handed (owned) */
    char bound_node[64];
} fake_t;

static int f_plugin_runs(void *core, const pod_t *pod, int point, const char *name)
{
    (void)core;
    (void)pod;
    return point == FW_PT_RESERVE && strcmp(name, "VolumeBinding") == 0;
}

static int f_pod_known(void *core, const char *uid)
{
    (void)uid;
    return ((fake_t *)core)->known;
}

static void f_forget_assumed(void *core, const char *uid)
{
    (void)uid;
    ((fake_t *)core)->forgotten++;
}

static void f_bind(void *core, queue_item_t *it, const char *node, const char *lender)
{
    fake_t *f = core;
    (void)lender;
    assert_null(f->bound);
    f->bound = it;
    snprintf(f->bound_node, sizeof(f->bound_node), "%s", node);
}

static void setup(fake_t *f, sched_row_t *row)
{
    memset(f, 0, sizeof(*f));
    fake_core_init(&f->fc);
    f->fc.svc.plugin_runs = f_plugin_runs;
    f->fc.svc.pod_known = f_pod_known;
    f->fc.svc.forget_assumed = f_forget_assumed;
    f->fc.svc.bind = f_bind;
    f->known = 1;
    f->ni[0] = fx_node_info("{'metadata':{'name':'a','labels':{'zone':'a','kubernetes.io/hostname':'a'}},"
                            "'status':{'allocatable':{'cpu':'4','memory':'8Gi','pods':'110'}}}");
    f->ni[1] = fx_node_info("{'metadata':{'name':'b','labels':{'zone':'b','kubernetes.io/hostname':'b'}},"
                            "'status':{'allocatable':{'cpu':'4','memory':'8Gi','pods':'110'}}}");
    f->fc.nodes = f->ni;
    f->fc.nnodes = 2;
    *row = fake_row(&f->fc, volume_row_init(&f->fc.svc, &f->fc));
}

static void teardown(fake_t *f, sched_row_t *row)
{
    volume_row_fini(row->self);
    node_info_free(f->ni[0]);
    node_info_free(f->ni[1]);
    queue_item_free(f->bound);
    fake_core_free(&f->fc);
}

/* Feeds an object to the row's watch of kind, as an informer would. */
static void feed(sched_row_t *row, const char *kind, kube_event_type_t type, const char *key, const char *sq)
{
    for (const sched_watch_t *w = volume_row_watches; w->kind; w++) {
        if (strcmp(w->kind, kind) != 0)
            continue;
        json_t *j = parse_sq(sq);
        w->on_event(row->self, type, key, j);
        json_decref(j);
        return;
    }
    fail_msg("no watch of kind %s", kind);
}

/* A pending pod of namespace default with one claim. */
static pod_t *claim_pod(const char *name, const char *claim)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'default','uid':'uid-%s'},"
             "'spec':{'containers':[{'name':'c'}],'volumes':[{'name':'v','persistentVolumeClaim':{'claimName':'%s'}}]},"
             "'status':{'phase':'Pending'}}",
             name, name, claim);
    return fx_pod(buf);
}

static void feed_claim(sched_row_t *row, const char *name, const char *cls, const char *rv, const char *extra)
{
    char key[64], buf[1024];
    snprintf(key, sizeof(key), "default/%s", name);
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'default','uid':'c-%s','resourceVersion':'%s'%s},"
             "'spec':{'storageClassName':'%s','accessModes':['ReadWriteOnce'],"
             "'resources':{'requests':{'storage':'1Gi'}}%s}}",
             name, name, rv, extra ? extra : "", cls, extra ? ",'volumeName':'pv-d'" : "");
    feed(row, "PersistentVolumeClaim", KUBE_MODIFIED, key, buf);
}

static queue_item_t *item_of(pod_t *p)
{
    queue_item_t *it = util_xcalloc(1, sizeof(*it));
    it->pod = pod_ref(p);
    return it;
}

/* A claim provisioned on the pod's node: Reserve picks node a (the class
 * allows zone a only), PreBind writes the selected-node annotation and
 * waits; the waiter hands the pod to the binder only once the claim is
 * bound, and the choice is forgotten then. */
static void test_prebind_waits_then_binds(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    feed(&row, "StorageClass", KUBE_ADDED, "dyn",
         "{'metadata':{'name':'dyn'},'provisioner':'x.csi.io','volumeBindingMode':'WaitForFirstConsumer',"
         "'allowedTopologies':[{'matchLabelExpressions':[{'key':'zone','values':['a']}]}]}");
    assert_int_equal(f.fc.nwakes, 1);
    assert_int_equal(f.fc.wake_pool, -1); /* every pool's */
    assert_string_equal(f.fc.wake, "StorageClassChange");
    feed_claim(&row, "d", "dyn", "5", NULL);
    assert_string_equal(f.fc.wake, "PvcChange");
    /* The Filter plugins read the store the watches fill. */
    fw_cluster_t cl = { 0 };
    volume_row_cluster(&row, &cl);
    assert_non_null(cl.volumes);
    pod_t *p = claim_pod("p", "d");
    char err[256] = "";
    assert_int_equal(volume_row_reserve(&row, p, "b", err, sizeof(err)), -1);
    assert_int_equal(volume_row_reserve(&row, p, "a", err, sizeof(err)), 0);
    assert_true(volume_has_plan(cl.volumes, p->uid));

    queue_item_t *it = item_of(p);
    json_t *ann = NULL;
    assert_int_equal(volume_row_pre_bind(&row, &it, "a", NULL, &ann, err, sizeof(err)), PREBIND_WAITING);
    assert_null(it); /* the waiter took it */
    assert_int_equal(f.fc.nreqs, 1);
    assert_string_equal(f.fc.req[0].method, "PATCH");
    assert_string_equal(f.fc.req[0].path, "/api/v1/namespaces/default/persistentvolumeclaims/d");
    assert_string_equal(f.fc.req[0].content_type, "application/merge-patch+json");
    json_t *anns = json_object_get(json_object_get(f.fc.req[0].json, "metadata"), "annotations");
    assert_string_equal(json_string_value(json_object_get(anns, ANN_SELECTED_NODE)), "a");

    /* Not bound yet (the informer has not even seen the write): it waits. */
    assert_int_equal(volume_row_drain(&row), 1);
    assert_null(f.bound);
    /* The provisioner bound it. */
    feed(&row, "PersistentVolume", KUBE_ADDED, "pv-d",
         "{'metadata':{'name':'pv-d','resourceVersion':'8'},'spec':{'capacity':{'storage':'1Gi'},"
         "'accessModes':['ReadWriteOnce'],'storageClassName':'dyn','claimRef':{'namespace':'default','name':'d',"
         "'uid':'c-d'}},'status':{'phase':'Bound'}}");
    feed_claim(&row, "d", "dyn", "9",
               ",'annotations':{'volume.kubernetes.io/selected-node':'a','pv.kubernetes.io/bind-completed':'yes'}");
    assert_int_equal(volume_row_drain(&row), 1);
    assert_non_null(f.bound);
    assert_ptr_equal(f.bound->pod, p);
    assert_string_equal(f.bound_node, "a");
    assert_false(volume_has_plan(cl.volumes, p->uid));
    assert_int_equal(f.forgotten, 0);
    /* Nothing waits any more. */
    assert_int_equal(volume_row_drain(&row), 0);
    pod_unref(p);
    teardown(&f, &row);
}

/* Reserve re-checks on the live store: the only local PV of node a, taken
 * by one pod's choice, refuses the next pod until the first is unreserved. */
static void test_reserve_refuses_taken_pv(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    feed(&row, "StorageClass", KUBE_ADDED, "wait",
         "{'metadata':{'name':'wait'},'provisioner':'kubernetes.io/no-provisioner',"
         "'volumeBindingMode':'WaitForFirstConsumer'}");
    feed(&row, "PersistentVolume", KUBE_ADDED, "local-a",
         "{'metadata':{'name':'local-a','resourceVersion':'3'},'spec':{'capacity':{'storage':'1Gi'},"
         "'storageClassName':'wait','accessModes':['ReadWriteOnce'],'nodeAffinity':{'required':{'nodeSelectorTerms':"
         "[{'matchExpressions':[{'key':'kubernetes.io/hostname','operator':'In','values':['a']}]}]}}},"
         "'status':{'phase':'Available'}}");
    feed_claim(&row, "c1", "wait", "5", NULL);
    feed_claim(&row, "c2", "wait", "5", NULL);
    pod_t *p1 = claim_pod("p1", "c1"), *p2 = claim_pod("p2", "c2");
    char err[256] = "";
    assert_int_equal(volume_row_reserve(&row, p1, "a", err, sizeof(err)), 0);
    err[0] = '\0';
    assert_int_equal(volume_row_reserve(&row, p2, "a", err, sizeof(err)), -1);
    assert_non_null(strstr(err, VB_REASON_BIND_CONFLICT));
    volume_row_unreserve(&row, p1);
    assert_int_equal(volume_row_reserve(&row, p2, "a", err, sizeof(err)), 0);
    /* A refused write fails PreBind with an event; the item stays the caller's. */
    f.fc.status[0] = 409;
    queue_item_t *it = item_of(p2);
    json_t *ann = NULL;
    assert_int_equal(volume_row_pre_bind(&row, &it, "a", NULL, &ann, err, sizeof(err)), PREBIND_FAILED);
    assert_non_null(it);
    assert_non_null(strstr(err, "running PreBind plugin \"VolumeBinding\""));
    assert_int_equal(f.fc.nevents, 1);
    assert_string_equal(f.fc.req[0].path, "/api/v1/persistentvolumes/local-a");
    queue_item_free(it);
    pod_unref(p1);
    pod_unref(p2);
    teardown(&f, &row);
}

/* A pod deleted while it waits: its choice and assumption are forgotten,
 * nothing is bound. A stopped waiter drops what waits (no leak). */
static void test_gone_while_waiting(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    feed(&row, "StorageClass", KUBE_ADDED, "dyn",
         "{'metadata':{'name':'dyn'},'provisioner':'x.csi.io','volumeBindingMode':'WaitForFirstConsumer'}");
    feed_claim(&row, "d", "dyn", "5", NULL);
    feed_claim(&row, "e", "dyn", "5", NULL);
    pod_t *p = claim_pod("p", "d"), *q = claim_pod("q", "e");
    char err[256] = "";
    json_t *ann = NULL;
    assert_int_equal(volume_row_reserve(&row, p, "a", err, sizeof(err)), 0);
    queue_item_t *it = item_of(p);
    assert_int_equal(volume_row_pre_bind(&row, &it, "a", NULL, &ann, err, sizeof(err)), PREBIND_WAITING);
    f.known = 0;
    assert_int_equal(volume_row_drain(&row), 1);
    assert_null(f.bound);
    assert_int_equal(f.forgotten, 1);
    fw_cluster_t cl = { 0 };
    volume_row_cluster(&row, &cl);
    assert_false(volume_has_plan(cl.volumes, p->uid));
    f.known = 1;
    assert_int_equal(volume_row_reserve(&row, q, "a", err, sizeof(err)), 0);
    it = item_of(q);
    assert_int_equal(volume_row_pre_bind(&row, &it, "a", NULL, &ann, err, sizeof(err)), PREBIND_WAITING);
    volume_row_stop(&row);
    assert_int_equal(volume_row_drain(&row), 0);
    pod_unref(p);
    pod_unref(q);
    teardown(&f, &row);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prebind_waits_then_binds),
        cmocka_unit_test(test_reserve_refuses_taken_pv),
        cmocka_unit_test(test_gone_while_waiting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
