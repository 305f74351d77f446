/* test_gpu_row.c -- the gpu-sharing row alone (pkg/gpu/row.c), on a fake
 * services table: one node view, an API that records each request and
 * answers as the case says, counters. No scheduler is built: what the row
 * asks of the core is exactly the table's calls. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "api/resources.h"
#include "gpu/dash.h"
#include "gpu/row.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fake_services.h"
#include "fixtures.h"

typedef struct fake {
    fake_core_t fc; /* first: the core the row's calls get */
    node_info_t *ni;
} fake_t;

/* A 4-GPU node g; row is the gpu-sharing row's room and table on it. */
static void setup(fake_t *f, sched_row_t *row)
{
    memset(f, 0, sizeof(*f));
    fake_core_init(&f->fc);
    f->fc.opts.gpu_namespace = "gpu-ns";
    f->fc.opts.gpu_image = "pause:test";
    gpu_set_reservation_namespace("gpu-ns");
    f->ni = fx_node_info("{'metadata':{'name':'g'},"
                         "'status':{'allocatable':{'cpu':'64','memory':'256Gi','pods':'110','nvidia.com/gpu':'4'}}}");
    f->fc.nodes = &f->ni;
    f->fc.nnodes = 1;
    *row = fake_row(&f->fc, gpu_row_init(&f->fc.svc, &f->fc));
}

static void teardown(fake_t *f, sched_row_t *row)
{
    gpu_row_fini(row->self);
    node_info_free(f->ni);
    fake_core_free(&f->fc);
}

/* A half-GPU fraction, added to the node (which gives it slot 0). */
static pod_t *fraction_on(fake_t *f, const char *name)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'team','uid':'u-%s','annotations':{'gpu-fraction':'0.5'}},"
             "'spec':{'nodeName':'g','containers':[{'name':'c','resources':{'requests':{'cpu':'100m'}}}]}}",
             name, name);
    pod_t *p = fx_pod(buf);
    node_info_add_pod(f->ni, p);
    return p;
}

/* PreBind of a fraction: one reservation pod POSTed in the configured
 * namespace, bound to the node by the scheduler's name, counted; the
 * Binding carries the slot and the reservation's name. */
static void test_prebind_creates_reservation(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    pod_t *p = fraction_on(&f, "nb");
    json_t *ann = NULL;
    char err[256] = "";
    assert_int_equal(gpu_row_prebind(row.self, p, "g", &ann, err, sizeof(err)), 0);
    assert_int_equal(f.fc.nreqs, 1);
    assert_string_equal(f.fc.req[0].method, "POST");
    assert_string_equal(f.fc.req[0].path, "/api/v1/namespaces/gpu-ns/pods");
    json_t *body = json_loads(f.fc.req[0].body, 0, NULL);
    assert_non_null(body);
    assert_string_equal(json_string_value(json_object_get(json_object_get(body, "spec"), "nodeName")), "g");
    assert_string_equal(json_string_value(json_object_get(json_object_get(body, "spec"), "schedulerName")),
                        "ai-scheduler");
    const char *made = json_string_value(json_object_get(json_object_get(body, "metadata"), "name"));
    assert_non_null(ann);
    assert_string_equal(json_string_value(json_object_get(ann, GPU_ANN_INDEX)), "0");
    assert_string_equal(json_string_value(json_object_get(ann, GPU_ANN_RESERVATION_POD)), made);
    assert_int_equal(f.fc.st.gpu_reservations_created, 1);
    /* A second fraction on the same slot, before the watch shows the pod:
     * the creation is trusted, nothing is POSTed again. */
    json_t *ann2 = NULL;
    pod_t *q = fraction_on(&f, "nb2");
    assert_int_equal(gpu_row_prebind(row.self, q, "g", &ann2, err, sizeof(err)), 0);
    assert_int_equal(f.fc.nreqs, 1);
    assert_string_equal(json_string_value(json_object_get(ann2, GPU_ANN_RESERVATION_POD)), made);
    json_decref(body);
    json_decref(ann);
    json_decref(ann2);
    pod_unref(p);
    pod_unref(q);
    teardown(&f, &row);
}

/* The namespace is missing (404): it is created, then the pod again. */
static void test_prebind_creates_namespace(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    f.fc.status[0] = 404;
    pod_t *p = fraction_on(&f, "nb");
    json_t *ann = NULL;
    char err[256] = "";
    assert_int_equal(gpu_row_prebind(row.self, p, "g", &ann, err, sizeof(err)), 0);
    assert_int_equal(f.fc.nreqs, 3);
    assert_string_equal(f.fc.req[1].path, "/api/v1/namespaces");
    assert_non_null(strstr(f.fc.req[1].body, "\"gpu-ns\""));
    assert_string_equal(f.fc.req[2].path, "/api/v1/namespaces/gpu-ns/pods");
    json_decref(ann);
    pod_unref(p);
    teardown(&f, &row);
}

/* A refused creation fails the PreBind with the API's status in the error. */
static void test_prebind_refused(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    f.fc.status[0] = 403;
    pod_t *p = fraction_on(&f, "nb");
    json_t *ann = NULL;
    char err[256] = "";
    assert_int_equal(gpu_row_prebind(row.self, p, "g", &ann, err, sizeof(err)), -1);
    assert_null(ann);
    assert_non_null(strstr(err, "HTTP 403"));
    assert_int_equal(f.fc.st.gpu_reservations_created, 0);
    pod_unref(p);
    teardown(&f, &row);
}

/* The housekeeper gives a used slot without a reservation pod a new one
 * and publishes the shared gauge; fenced, it writes nothing. */
static void test_housekeep_restores_unless_fenced(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    pod_t *p = fraction_on(&f, "nb");
    f.fc.fenced = 1;
    gpu_row_housekeep(&row);
    assert_int_equal(f.fc.nreqs, 0);
    assert_int_equal(f.fc.st.gpu_shared_devices, 1);
    f.fc.fenced = 0;
    gpu_row_housekeep(&row);
    assert_int_equal(f.fc.nreqs, 1);
    assert_string_equal(f.fc.req[0].method, "POST");
    assert_int_equal(f.fc.st.gpu_reservations_created, 1);
    pod_unref(p);
    teardown(&f, &row);
}

/* What the row shows on the dashboard: a half-GPU fraction on slot 0
 * counts 0.5 GPU used and one shared slot (node_use), its slot with the
 * fraction and no reservation pod yet (node_doc; a node gone: no slots),
 * its share and no holder (pod_use). */
static void test_dash_points(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    pod_t *p = fraction_on(&f, "d");
    sched_node_use_t u = { .gpu_used = (double)res_get_scalar(&f.ni->requested, RES_GPU) };
    gpu_row_node_use(&row, f.ni, &u);
    assert_true(u.gpu_used == 0.5);
    assert_int_equal(u.gpu_shared, 1);
    json_t *item = json_object();
    gpu_row_node_doc(&row, f.ni, item);
    char *t = json_dumps(item, JSON_COMPACT);
    assert_string_equal(t, "{\"slots\":[{\"index\":0,\"used\":0.5,\"fractions\":[{\"pod\":\"team/d\","
                           "\"fraction\":0.5}],\"reservation\":null}]}");
    free(t);
    gpu_row_node_doc(&row, NULL, item);
    t = json_dumps(item, JSON_COMPACT);
    assert_string_equal(t, "{\"slots\":[]}");
    free(t);
    json_decref(item);
    sched_pod_use_t pu = { .gpus = 0 };
    gpu_row_pod_use(&row, p, &pu);
    assert_true(pu.gpus == 0.5);
    assert_int_equal(pu.holder, 0);
    pod_unref(p);
    teardown(&f, &row);
}

/* The row's init trusts reservation pods in the options' namespace
 * (gpu_namespace), and only there: a pod parsed after a scheduler is made
 * is judged by its namespace. */
static void test_init_sets_reservation_namespace(void **state)
{
    (void)state;
    gpu_set_reservation_namespace(GPU_RESERVATION_NS);
    fake_core_t fc;
    memset(&fc, 0, sizeof(fc));
    fake_core_init(&fc);
    fc.opts.gpu_namespace = "gpu-init";
    void *self = gpu_row_init(&fc.svc, &fc);
    const char *fmt = "{'metadata':{'name':'gpu-res-n-0-00001','namespace':'%s','uid':'u-%s',"
                      "'labels':{'resource.aibee.cn/gpu-reservation':'true','app.kubernetes.io/managed-by':'ai-"
                      "scheduler'},'annotations':{'resource.aibee.cn/gpu-index':'0',"
                      "'resource.aibee.cn/gpu-reservation-node':'n'}},"
                      "'spec':{'nodeName':'n','containers':[{'name':'c','resources':{'requests':"
                      "{'nvidia.com/gpu':'1'}}}]}}";
    char buf[1024];
    snprintf(buf, sizeof(buf), fmt, "gpu-init", "a");
    pod_t *mine = fx_pod(buf);
    snprintf(buf, sizeof(buf), fmt, GPU_RESERVATION_NS, "b");
    pod_t *dflt = fx_pod(buf);
    gpu_row_fini(self);
    fake_core_free(&fc);
    gpu_set_reservation_namespace(GPU_RESERVATION_NS);
    assert_true(gpu_is_reservation(mine));
    assert_false(gpu_is_reservation(dflt));
    pod_unref(mine);
    pod_unref(dflt);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prebind_creates_reservation),
        cmocka_unit_test(test_prebind_creates_namespace),
        cmocka_unit_test(test_prebind_refused),
        cmocka_unit_test(test_housekeep_restores_unless_fenced),
        cmocka_unit_test(test_init_sets_reservation_namespace),
        cmocka_unit_test(test_dash_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
