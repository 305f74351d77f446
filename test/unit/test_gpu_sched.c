/* test_gpu_sched.c -- GpuSharing's PreBind and collection against a fake API
 * server: reservation pods made, reused and deleted (scheduler/gpu.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "fake_api.h"
#include "gpu/gpu.h"
#include "gpu/row.h"
#include "scheduler/capabilities.h"
#include "scheduler/internal.h"
#include "util/util.h"

/* ---- fake API server ---------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    int delete_status;   /* answer to DELETE of a pod */
    int delete_delay_ms; /* each DELETE answers this late */
    int deletes;         /* pod DELETEs seen */
    int creates;         /* pod POSTs seen */
} api = { PTHREAD_MUTEX_INITIALIZER, 200, 0, 0, 0 };

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *data, size_t *size, void **con_cls)
{
    if (!*con_cls) {
        *con_cls = (void *)1; /* bodies are not looked at */
        return MHD_YES;
    }
    if (*size) {
        *size = 0;
        return MHD_YES;
    }
    int pods = strncmp(url, "/api/v1/namespaces/", 19) == 0 && strstr(url, "/pods");
    if (!strcmp(method, "DELETE") && pods) {
        pthread_mutex_lock(&api.mu);
        api.deletes++;
        int st = api.delete_status, delay = api.delete_delay_ms;
        pthread_mutex_unlock(&api.mu);
        util_sleep_ms(delay);
        return fake_api_status(c, (unsigned)st, st < 300 ? "ok" : "etcd is sulking");
    }
    if (!strcmp(method, "POST") && pods) {
        pthread_mutex_lock(&api.mu);
        api.creates++;
        pthread_mutex_unlock(&api.mu);
        return fake_api_status(c, 201, "created");
    }
    return fake_api_status(c, 404, "not found");
}

static struct MHD_Daemon *daemon_;
static kube_client_t *kc;

static int setup(void **st)
{
    int port;
    daemon_ = fake_api_start(handler, NULL, &port);
    kc = daemon_ ? fake_api_client(port, 0, 0, "test_gpu_sched") : NULL;
    return kc ? 0 : -1;
}

static int teardown(void **st)
{
    kube_client_free(kc);
    MHD_stop_daemon(daemon_);
    return 0;
}

static void api_reset(int delete_status, int delete_delay_ms)
{
    pthread_mutex_lock(&api.mu);
    api.delete_status = delete_status;
    api.delete_delay_ms = delete_delay_ms;
    api.deletes = api.creates = 0;
    pthread_mutex_unlock(&api.mu);
}

static int api_count(const int *field)
{
    pthread_mutex_lock(&api.mu);
    int n = *field;
    pthread_mutex_unlock(&api.mu);
    return n;
}

/* ---- helpers ------------------------------------------------------------- */

static int always_fits(void *ud, node_info_t *ni)
{
    return 1;
}

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        fail_msg("bad test JSON: %s: %s", text, e.text);
    return j;
}

static scheduler_t *new_sched(void)
{
    scheduler_opts_t o;
    scheduler_opts_default(&o);
    o.identity = "test";
    char err[256];
    scheduler_t *s = scheduler_new(&o, kc, err, sizeof err);
    assert_non_null(s);
    return s;
}

/* Node g0 with `gpus` GPUs. */
static void add_gpu_node(scheduler_t *s, int gpus)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"g0\"},\"status\":{\"allocatable\":{\"cpu\":\"32\",\"memory\":\"64Gi\","
             "\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"}}}",
             gpus);
    json_t *j = J(text);
    char err[256];
    node_t *n = node_from_json(j, err, sizeof err);
    json_decref(j);
    assert_non_null(n);
    cache_upsert_node(s->cache, n);
    node_unref(n);
}

static pod_t *parse_pod(const char *text)
{
    json_t *j = J(text);
    char err[256];
    pod_t *p = pod_from_json(j, err, sizeof err);
    json_decref(j);
    if (!p)
        fail_msg("pod_from_json: %s", err);
    return p;
}

/* A pod labelled as a reservation on g0 holding slot 0, as reservation_body
 * writes it, in namespace ns (the real ones: ai-scheduler-system), into
 * text. */
static void labelled_json(char *text, size_t len, const char *ns, const char *name)
{
    snprintf(text, len,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"uid-%s\","
             "\"labels\":{\"resource.aibee.cn/gpu-reservation\":\"true\","
             "\"app.kubernetes.io/managed-by\":\"ai-scheduler\"},"
             "\"annotations\":{\"resource.aibee.cn/gpu-index\":\"0\","
             "\"resource.aibee.cn/gpu-reservation-node\":\"g0\"}},"
             "\"spec\":{\"nodeName\":\"g0\",\"schedulerName\":\"ai-scheduler\",\"containers\":[{\"name\":\"reserve\","
             "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
             "\"status\":{\"phase\":\"Running\"}}",
             name, ns, name);
}

/* That pod, in the cache. */
static pod_t *add_labelled(scheduler_t *s, const char *ns, const char *name)
{
    char text[1024];
    labelled_json(text, sizeof text, ns, name);
    pod_t *p = parse_pod(text);
    cache_upsert_pod(s->cache, p, NULL);
    return p;
}

static pod_t *add_reservation(scheduler_t *s, const char *name)
{
    return add_labelled(s, "ai-scheduler-system", name);
}

/* A pending pod of ours: ann is its annotations' members, gpu its
 * nvidia.com/gpu request (NULL: none). Assumed on g0. */
static pod_t *assume_pod(scheduler_t *s, const char *name, const char *ann, const char *gpu)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\",\"annotations\":{%s}},"
             "\"spec\":{\"schedulerName\":\"ai-scheduler\",\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"1\"%s%s%s}}}]}}",
             name, name, ann, gpu ? ",\"nvidia.com/gpu\":\"" : "", gpu ? gpu : "", gpu ? "\"" : "");
    pod_t *p = parse_pod(text);
    cache_upsert_pod(s->cache, p, NULL);
    assert_int_equal(cache_assume(s->cache, p, "g0", DEFAULT_POOL_ID, 0, always_fits, NULL), 0);
    return p;
}

/* The reservation pods gpu_row_prebind names for a fraction (caller frees). */
static char *prebind_fraction(scheduler_t *s, const pod_t *f)
{
    json_t *ann = NULL;
    char err[256] = "";
    if (gpu_row_prebind(sched_row(s, "gpu-sharing")->self, f, "g0", &ann, err, sizeof err) != 0)
        fail_msg("gpu_row_prebind: %s", err);
    assert_non_null(ann);
    char *names = util_strdup(json_string_value(json_object_get(ann, GPU_ANN_RESERVATION_POD)));
    json_decref(ann);
    return names;
}

/* PreBind of a whole-GPU pod: deletes the idle reservation in its way. */
static void prebind_whole(scheduler_t *s, const pod_t *w)
{
    json_t *ann = NULL;
    char err[256] = "";
    assert_int_equal(gpu_row_prebind(sched_row(s, "gpu-sharing")->self, w, "g0", &ann, err, sizeof err), 0);
    assert_null(ann);
}

/* ---- issue 22 fault 13: a failed DELETE makes no second reservation ------ */

/* One GPU, held idle by reservation R; a whole-GPU pod's PreBind deletes R,
 * the DELETE answers as api_reset said. The whole pod's bind then fails, and a
 * fraction lands on the slot R still holds: returns the reservation its
 * PreBind names. */
static char *fraction_after_delete(scheduler_t *s)
{
    add_gpu_node(s, 1);
    pod_unref(add_reservation(s, "gpu-res-g0-0-00001"));
    pod_t *w = assume_pod(s, "whole", "", "1");
    prebind_whole(s, w);
    assert_int_equal(api_count(&api.deletes), 1);
    cache_forget(s->cache, w->uid);
    pod_t *f = assume_pod(s, "frac", "\"gpu-fraction\":\"0.5\"", NULL);
    char *names = prebind_fraction(s, f);
    pod_unref(w);
    pod_unref(f);
    return names;
}

static void test_failed_delete_reuses_reservation(void **st)
{
    api_reset(500, 0);
    scheduler_t *s = new_sched();
    char *names = fraction_after_delete(s);
    /* R still exists and holds the GPU: it is named, and no second pod. */
    assert_string_equal(names, "gpu-res-g0-0-00001");
    assert_int_equal(api_count(&api.creates), 0);
    free(names);
    scheduler_free(s);
}

static void test_refused_delete_reuses_reservation(void **st)
{
    api_reset(403, 0);
    scheduler_t *s = new_sched();
    char *names = fraction_after_delete(s);
    assert_string_equal(names, "gpu-res-g0-0-00001");
    assert_int_equal(api_count(&api.creates), 0);
    free(names);
    scheduler_free(s);
}

/* An accepted DELETE: R is going away, the fraction gets a new one. */
static void test_accepted_delete_makes_new_reservation(void **st)
{
    api_reset(200, 0);
    scheduler_t *s = new_sched();
    char *names = fraction_after_delete(s);
    assert_string_not_equal(names, "gpu-res-g0-0-00001");
    assert_int_equal(api_count(&api.creates), 1);
    free(names);
    scheduler_free(s);
}

/* Composition seed 4: a reservation this scheduler created is deleted by
 * someone else (a namespace cleanup, its node removed) before the next
 * fraction binds on its slot, inside the 30 s the store trusts a creation
 * the watch has not shown yet. The watch's DELETE ends that trust: the
 * fraction gets a new reservation, not the name of a pod that is gone. */
static void test_deleted_reservation_not_named(void **st)
{
    api_reset(200, 0);
    scheduler_t *s = new_sched();
    add_gpu_node(s, 1);
    pod_t *f1 = assume_pod(s, "f1", "\"gpu-fraction\":\"0.5\"", NULL);
    char *first = prebind_fraction(s, f1);
    assert_int_equal(api_count(&api.creates), 1);
    char text[1024], key[300];
    labelled_json(text, sizeof text, "ai-scheduler-system", first);
    snprintf(key, sizeof key, "ai-scheduler-system/%s", first);
    json_t *j = J(text);
    on_pod_event(s, KUBE_ADDED, key, j);
    on_pod_event(s, KUBE_DELETED, key, j);
    json_decref(j);
    pod_t *f2 = assume_pod(s, "f2", "\"gpu-fraction\":\"0.25\"", NULL);
    char *second = prebind_fraction(s, f2);
    assert_string_not_equal(second, first);
    assert_int_equal(api_count(&api.creates), 2);
    free(first);
    free(second);
    pod_unref(f1);
    pod_unref(f2);
    scheduler_free(s);
}

typedef struct whole_arg {
    scheduler_t *s;
    pod_t *w;
} whole_arg_t;

static void *prebind_whole_thread(void *arg)
{
    whole_arg_t *a = arg;
    prebind_whole(a->s, a->w);
    return NULL;
}

/* A fraction's PreBind during a DELETE in flight waits for its answer: a
 * failed DELETE leaves R, which is reused. */
static void test_bind_waits_for_delete_in_flight(void **st)
{
    api_reset(500, 400);
    scheduler_t *s = new_sched();
    add_gpu_node(s, 1);
    pod_unref(add_reservation(s, "gpu-res-g0-0-00001"));
    pod_t *w = assume_pod(s, "whole", "", "1");
    whole_arg_t a = { s, w };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, prebind_whole_thread, &a), 0);
    while (api_count(&api.deletes) == 0)
        util_sleep_ms(5);
    cache_forget(s->cache, w->uid); /* the whole pod's bind went elsewhere */
    pod_t *f = assume_pod(s, "frac", "\"gpu-fraction\":\"0.5\"", NULL);
    char *names = prebind_fraction(s, f);
    pthread_join(t, NULL);
    assert_string_equal(names, "gpu-res-g0-0-00001");
    assert_int_equal(api_count(&api.creates), 0);
    free(names);
    pod_unref(w);
    pod_unref(f);
    scheduler_free(s);
}

/* ---- issue 22 fault 5: a forged reservation is an ordinary pod ---------- */

static void node_gpus_used(void *ud, const node_info_t *ni)
{
    *(int64_t *)ud = res_get_scalar(&ni->requested, RES_GPU);
}

/* A user's pod in its own namespace with every mark of a reservation pod:
 * its GPU counts on the node, preemption may take it, and a whole-GPU
 * pod's PreBind does not delete it. */
static void test_forged_reservation_is_ordinary(void **st)
{
    api_reset(200, 0);
    scheduler_t *s = new_sched();
    add_gpu_node(s, 2);
    pod_t *forged = add_labelled(s, "team-a", "gpu-res-g0-0-00001");
    assert_false(gpu_is_reservation(forged));
    int64_t used = -1;
    cache_node_visit(s->cache, "g0", node_gpus_used, &used);
    assert_int_equal(used, 1);

    pod_t *pre = parse_pod("{\"metadata\":{\"name\":\"pre\",\"namespace\":\"ns\",\"uid\":\"uid-pre\"},"
                           "\"spec\":{\"schedulerName\":\"ai-scheduler\",\"priority\":100,"
                           "\"containers\":[{\"name\":\"c\"}]}}");
    victim_ctx_t vc = { .s = s, .pool_id = DEFAULT_POOL_ID };
    int64_t rank = 0;
    assert_true(postfilter_is_victim(forged, pre, &vc, &rank));

    pod_t *w = assume_pod(s, "whole", "", "2");
    prebind_whole(s, w);
    assert_int_equal(api_count(&api.deletes), 0);
    pod_unref(w);
    pod_unref(pre);
    pod_unref(forged);
    scheduler_free(s);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_delete_reuses_reservation),
        cmocka_unit_test(test_refused_delete_reuses_reservation),
        cmocka_unit_test(test_accepted_delete_makes_new_reservation),
        cmocka_unit_test(test_bind_waits_for_delete_in_flight),
        cmocka_unit_test(test_forged_reservation_is_ordinary),
        cmocka_unit_test(test_deleted_reservation_not_named),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
