/* test_dispatch_podwatch.c -- a member namespace's dispatched pods through
 * the watch, against a fake API server (libmicrohttpd): the counts follow
 * the LIST and then the watch's events with the LIST path's rule (a pod
 * being deleted is not counted, a bare pod Failed is, one with a controller
 * is not), each change kicks its job, and a watch that is not allowed (403)
 * never claims to be current, so the caller asks the member instead. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_api.h"

#include "dispatch/podwatch.h"
#include "util/util.h"

#define LABEL "\"labels\":{\"resource.aibee.cn/multiclusterjob-uid\":"

static struct {
    pthread_mutex_t mu;
    int forbidden; /* answer every request 403 */
    int watches;   /* WATCH requests answered */
    int bad_query; /* a request without the label selector or in another namespace */
    char kicks[256];
} srv = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, "" };

static const char *LIST =
    "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
    "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns1\"," LABEL "\"U1\"}},\"status\":{\"phase\":\"Running\"}},"
    "{\"metadata\":{\"name\":\"p2\",\"namespace\":\"ns1\"," LABEL "\"U1\"}},\"status\":{\"phase\":\"Pending\"}},"
    "{\"metadata\":{\"name\":\"p3\",\"namespace\":\"ns1\"," LABEL "\"U2\"}},\"status\":{\"phase\":\"Failed\"}},"
    "{\"metadata\":{\"name\":\"p4\",\"namespace\":\"ns1\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"," LABEL
    "\"U1\"}},\"status\":{\"phase\":\"Running\"}},"
    "{\"metadata\":{\"name\":\"p5\",\"namespace\":\"ns1\",\"ownerReferences\":[{\"controller\":true}]," LABEL
    "\"U2\"}},\"status\":{\"phase\":\"Failed\"}}]}";

/* The first WATCH: p2 starts running, p1 goes, p6 joins U2. Later ones end
 * at once with nothing (the informer backs off). */
static const char *EVENTS =
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"p2\",\"namespace\":\"ns1\",\"resourceVersion\":\"11\"," LABEL
    "\"U1\"}},\"status\":{\"phase\":\"Running\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns1\",\"resourceVersion\":\"12\"," LABEL
    "\"U1\"}},\"status\":{\"phase\":\"Running\"}}}\n"
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p6\",\"namespace\":\"ns1\",\"resourceVersion\":\"13\"," LABEL
    "\"U2\"}},\"status\":{\"phase\":\"Succeeded\"}}}\n";

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *data, size_t *size, void **con_cls)
{
    const char *sel = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "labelSelector");
    const char *watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
    int is_watch = watch && (strcmp(watch, "1") == 0 || strcmp(watch, "true") == 0);
    pthread_mutex_lock(&srv.mu);
    if (!sel || strcmp(sel, "resource.aibee.cn/multiclusterjob-uid") != 0 ||
        strcmp(url, "/api/v1/namespaces/ns1/pods") != 0)
        srv.bad_query++;
    int forbidden = srv.forbidden, nth = is_watch ? ++srv.watches : 0;
    pthread_mutex_unlock(&srv.mu);
    const char *body = forbidden  ? "{\"kind\":\"Status\",\"code\":403,\"message\":\"pods is forbidden\"}"
                       : is_watch ? (nth == 1 ? EVENTS : "")
                                  : LIST;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result rc = MHD_queue_response(c, forbidden ? 403 : 200, r);
    MHD_destroy_response(r);
    return rc;
}

static struct MHD_Daemon *daemon_;
static kube_client_t *kc;

static int setup(void **st)
{
    int port;
    daemon_ = fake_api_start(handler, NULL, &port);
    kc = daemon_ ? fake_api_client(port, 0, 0, "test_dispatch_podwatch") : NULL;
    return kc ? 0 : -1;
}

static int teardown(void **st)
{
    kube_client_free(kc);
    MHD_stop_daemon(daemon_);
    return 0;
}

static void reset(int forbidden)
{
    pthread_mutex_lock(&srv.mu);
    srv.forbidden = forbidden;
    srv.watches = 0;
    srv.bad_query = 0;
    srv.kicks[0] = '\0';
    pthread_mutex_unlock(&srv.mu);
}

static void kick(void *ud, const char *uid)
{
    int *n = ud;
    pthread_mutex_lock(&srv.mu);
    (*n)++;
    if (!strstr(srv.kicks, uid) && strlen(srv.kicks) + strlen(uid) + 2 < sizeof srv.kicks) {
        strcat(srv.kicks, uid);
        strcat(srv.kicks, " ");
    }
    pthread_mutex_unlock(&srv.mu);
}

static int watches_done(void)
{
    pthread_mutex_lock(&srv.mu);
    int n = srv.watches;
    pthread_mutex_unlock(&srv.mu);
    return n;
}

static void test_counts_follow_list_and_watch(void **st)
{
    reset(0);
    int kicks = 0;
    dsp_podwatch_t *w = dsp_podwatch_new(kc, "ns1", kick, &kicks);
    /* the first WATCH's events are in once a second WATCH was asked for */
    for (int i = 0; i < 500 && watches_done() < 2; i++)
        util_sleep_ms(10);
    assert_true(watches_done() >= 2);
    dsp_pods_t u1 = { 0 }, u2 = { 0 }, none = { 0 };
    assert_int_equal(dsp_podwatch_count(w, "U1", &u1), 0);
    assert_int_equal(dsp_podwatch_count(w, "U2", &u2), 0);
    assert_int_equal(dsp_podwatch_count(w, "U9", &none), 0);
    /* U1: p2 (now Running); p1 deleted, p4 being deleted */
    assert_int_equal(u1.total, 1);
    assert_int_equal(u1.running, 1);
    assert_int_equal(u1.failed, 0);
    assert_true(u1.watched);
    /* U2: p3 Failed (bare), p5 Failed under a controller, p6 Succeeded */
    assert_int_equal(u2.total, 3);
    assert_int_equal(u2.failed, 1);
    assert_int_equal(u2.succeeded, 1);
    assert_int_equal(u2.running, 0);
    assert_int_equal(none.total, 0);
    assert_true(none.watched);
    dsp_podwatch_free(w);
    pthread_mutex_lock(&srv.mu);
    /* LIST: 5 pods, WATCH: 3 events, each a kick for its job */
    assert_int_equal(kicks, 8);
    assert_non_null(strstr(srv.kicks, "U1 "));
    assert_non_null(strstr(srv.kicks, "U2 "));
    assert_int_equal(srv.bad_query, 0);
    pthread_mutex_unlock(&srv.mu);
}

/* The LIST path's rule on the same objects gives the same counts. */
static void test_list_rule(void **st)
{
    json_error_t je;
    json_t *list = json_loads(LIST, 0, &je);
    assert_non_null(list);
    dsp_pods_t u2 = { 0 };
    size_t i;
    json_t *pod;
    json_array_foreach (json_object_get(list, "items"), i, pod) {
        const char *uid = json_string_value(json_object_get(json_object_get(json_object_get(pod, "metadata"), "labels"),
                                                            "resource.aibee.cn/multiclusterjob-uid"));
        if (strcmp(uid, "U2") == 0)
            dsp_pods_add(&u2, pod);
    }
    assert_int_equal(u2.total, 2);
    assert_int_equal(u2.failed, 1);
    assert_false(u2.watched);
    json_decref(list);
}

static void test_forbidden_is_never_current(void **st)
{
    reset(1);
    dsp_podwatch_t *w = dsp_podwatch_new(kc, "ns1", NULL, NULL);
    for (int i = 0; i < 20; i++) {
        dsp_pods_t p = { 0 };
        assert_int_equal(dsp_podwatch_count(w, "U1", &p), -1);
        assert_int_equal(p.total, 0);
        util_sleep_ms(50);
    }
    dsp_podwatch_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_follow_list_and_watch),
        cmocka_unit_test(test_list_rule),
        cmocka_unit_test(test_forbidden_is_never_current),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
