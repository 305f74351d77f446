/* test_dispatch_cleanup.c -- deleting a MultiClusterJob whose kubeconfig
 * Secret is gone, through the whole controller against two fake API servers
 * (a hub and a member, libmicrohttpd): credentials already used still reach
 * the member, so the winner's objects are deleted and the finalizer comes
 * off; with none at all, the finalizer comes off after the grace, with a
 * Warning event naming the cluster and the objects left there. */
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

#include "dispatch/controller.h"
#include "util/log.h"
#include "util/util.h"

#define JOB_PATH "/apis/resource.aibee.cn/v1alpha1/namespaces/team/multiclusterjobs/train"
#define POD_PATH "/api/v1/namespaces/team/pods"

/* The hub: one MultiClusterJob, its Secret, and the events posted. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* rv moved */
    json_t *job;       /* NULL once deleted */
    json_t *last;      /* the job as it was deleted */
    int rv;
    int secret; /* the kubeconfig Secret exists */
    char kubeconfig[512];
    json_t *events; /* [type, reason, message] */
} hub = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0, "", NULL };

/* The member: the pods created there. */
static struct {
    pthread_mutex_t mu;
    json_t *pods; /* name -> pod */
    int deletes;
} mem = { PTHREAD_MUTEX_INITIALIZER, NULL, 0 };

typedef struct upload {
    sbuf_t body;
} upload_t;

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("bad JSON in test: %s: %s", text, e.text);
    return v;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned code, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : util_strdup("{\"kind\":\"Status\"}");
    json_decref(body);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

/* hub.mu held: a change to the job, seen by the watch. */
static void hub_bump(void)
{
    hub.rv++;
    if (hub.job) {
        char rv[16];
        snprintf(rv, sizeof rv, "%d", hub.rv);
        json_object_set_new(json_object_get(hub.job, "metadata"), "resourceVersion", json_string(rv));
    }
    pthread_cond_broadcast(&hub.cv);
}

static int finalizers_empty(json_t *job)
{
    return json_array_size(json_object_get(json_object_get(job, "metadata"), "finalizers")) == 0;
}

static enum MHD_Result hub_jobs(struct MHD_Connection *c, const char *url, const char *method, json_t *in)
{
    const char *watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
    pthread_mutex_lock(&hub.mu);
    if (strcmp(method, "GET") == 0 && watch) {
        /* Long-poll: up to 1.2 s for a change, then one event with the
         * job as it is now (the informer watches again from there). */
        const char *rvs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersion");
        int from = rvs ? atoi(rvs) : 0;
        struct timespec ts;
        util_deadline(CLOCK_REALTIME, 1200, &ts);
        while (hub.rv <= from)
            if (pthread_cond_timedwait(&hub.cv, &hub.mu, &ts) != 0)
                break;
        sbuf_t b = { 0 };
        if (hub.rv > from) {
            json_t *obj = hub.job ? hub.job : hub.last;
            json_t *ev = json_pack("{s:s, s:O}", "type", hub.job ? "MODIFIED" : "DELETED", "object", obj);
            if (!hub.job) {
                char rv[16];
                snprintf(rv, sizeof rv, "%d", hub.rv);
                json_object_set_new(json_object_get(json_object_get(ev, "object"), "metadata"), "resourceVersion",
                                    json_string(rv));
            }
            char *t = json_dumps(ev, JSON_COMPACT);
            sbuf_printf(&b, "%s\n", t);
            free(t);
            json_decref(ev);
        }
        pthread_mutex_unlock(&hub.mu);
        struct MHD_Response *r =
            MHD_create_response_from_buffer(b.len, b.data ? b.data : (void *)"", MHD_RESPMEM_MUST_COPY);
        sbuf_free(&b);
        enum MHD_Result rc = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return rc;
    }
    if (strcmp(method, "GET") == 0) {
        char rv[16];
        snprintf(rv, sizeof rv, "%d", hub.rv);
        json_t *items = json_array();
        if (hub.job)
            json_array_append(items, hub.job);
        json_t *list = json_pack("{s:s, s:{s:s}, s:o}", "kind", "MultiClusterJobList", "metadata", "resourceVersion",
                                 rv, "items", items);
        pthread_mutex_unlock(&hub.mu);
        return answer(c, 200, list);
    }
    if (strcmp(method, "PATCH") != 0 || !hub.job || !in) {
        pthread_mutex_unlock(&hub.mu);
        return answer(c, hub.job ? 400 : 404, NULL);
    }
    if (strcmp(url, JOB_PATH "/status") == 0) {
        json_object_set(hub.job, "status", json_object_get(in, "status"));
    } else {
        json_t *f = json_object_get(json_object_get(in, "metadata"), "finalizers");
        if (f)
            json_object_set(json_object_get(hub.job, "metadata"), "finalizers", f);
    }
    hub_bump();
    json_t *out = json_deep_copy(hub.job);
    if (json_object_get(json_object_get(hub.job, "metadata"), "deletionTimestamp") && finalizers_empty(hub.job)) {
        json_decref(hub.last);
        hub.last = hub.job;
        hub.job = NULL;
    }
    pthread_mutex_unlock(&hub.mu);
    return answer(c, 200, out);
}

static enum MHD_Result hub_handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                   const char *version, const char *data, size_t *size, void **con_cls)
{
    upload_t *u = *con_cls;
    if (!u) {
        *con_cls = util_xcalloc(1, sizeof *u);
        return MHD_YES;
    }
    if (*size) {
        sbuf_append(&u->body, data, *size);
        *size = 0;
        return MHD_YES;
    }
    json_t *in = u->body.data ? json_loads(u->body.data, 0, NULL) : NULL;
    enum MHD_Result rc;
    if (strncmp(url, "/apis/resource.aibee.cn/", 24) == 0) {
        rc = hub_jobs(c, url, method, in);
    } else if (strcmp(url, "/api/v1/namespaces/team/secrets/member-a") == 0) {
        pthread_mutex_lock(&hub.mu);
        json_t *s = hub.secret ? json_pack("{s:s, s:{s:s, s:s, s:s, s:s}, s:{s:s}}", "kind", "Secret", "metadata",
                                           "name", "member-a", "namespace", "team", "uid", "S1", "resourceVersion", "7",
                                           "data", "kubeconfig", hub.kubeconfig)
                               : NULL;
        pthread_mutex_unlock(&hub.mu);
        rc = answer(c, s ? 200 : 404, s);
    } else if (strcmp(url, "/api/v1/namespaces/team/events") == 0 && strcmp(method, "POST") == 0 && in) {
        pthread_mutex_lock(&hub.mu);
        json_array_append_new(hub.events, json_pack("[O,O,O]", json_object_get(in, "type"),
                                                    json_object_get(in, "reason"), json_object_get(in, "message")));
        pthread_mutex_unlock(&hub.mu);
        rc = answer(c, 201, json_incref(in));
    } else {
        rc = answer(c, 404, NULL);
    }
    json_decref(in);
    return rc;
}

/* The member serves Pods only; a created pod runs at once. */
static enum MHD_Result member_handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                      const char *version, const char *data, size_t *size, void **con_cls)
{
    upload_t *u = *con_cls;
    if (!u) {
        *con_cls = util_xcalloc(1, sizeof *u);
        return MHD_YES;
    }
    if (*size) {
        sbuf_append(&u->body, data, *size);
        *size = 0;
        return MHD_YES;
    }
    if (strcmp(url, "/api/v1") == 0)
        return answer(c, 200,
                      js("{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":"
                         "[{\"name\":\"pods\",\"kind\":\"Pod\",\"namespaced\":true}]}"));
    pthread_mutex_lock(&mem.mu);
    json_t *out = NULL;
    unsigned code = 404;
    if (strcmp(url, POD_PATH) == 0 && strcmp(method, "POST") == 0) {
        json_t *pod = u->body.data ? json_loads(u->body.data, 0, NULL) : NULL;
        const char *name = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
        if (name && !json_object_get(mem.pods, name)) {
            json_object_set_new(json_object_get(pod, "metadata"), "uid", json_string("P1"));
            json_object_set_new(pod, "status", json_pack("{s:s}", "phase", "Running"));
            json_object_set(mem.pods, name, pod);
            out = json_incref(pod);
            code = 201;
        } else {
            code = name ? 409 : 400;
        }
        json_decref(pod);
    } else if (strcmp(url, POD_PATH) == 0 && MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch")) {
        code = 200; /* a watch that ends at once: the LIST is what counts */
    } else if (strcmp(url, POD_PATH) == 0) {
        json_t *items = json_array();
        const char *k;
        json_t *v;
        json_object_foreach (mem.pods, k, v)
            json_array_append(items, v);
        out = json_pack("{s:s, s:{s:s}, s:o}", "kind", "PodList", "metadata", "resourceVersion", "5", "items", items);
        code = 200;
    } else if (strncmp(url, POD_PATH "/", strlen(POD_PATH) + 1) == 0) {
        const char *name = url + strlen(POD_PATH) + 1;
        json_t *pod = json_object_get(mem.pods, name);
        if (pod && strcmp(method, "GET") == 0) {
            out = json_incref(pod);
            code = 200;
        } else if (pod && strcmp(method, "DELETE") == 0) {
            json_object_del(mem.pods, name);
            mem.deletes++;
            code = 200;
        }
    }
    pthread_mutex_unlock(&mem.mu);
    if (code == 200 && !out) {
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        enum MHD_Result rc = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return rc;
    }
    return answer(c, code, out);
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    upload_t *u = *con_cls;
    if (u) {
        sbuf_free(&u->body);
        free(u);
    }
}

static char *b64(const char *in)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(in);
    char *out = util_xcalloc(1, (n + 2) / 3 * 4 + 1), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned char)in[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)in[i + 2];
        *o++ = tab[(v >> 18) & 63];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    return out;
}

static struct MHD_Daemon *hub_d, *mem_d;
static kube_client_t *hub_kc;

static int setup(void **st)
{
    int hport = 0, mport = 0;
    hub_d = fake_api_start(hub_handler, done, &hport);
    mem_d = fake_api_start(member_handler, done, &mport);
    hub_kc = hub_d ? fake_api_client(hport, 0, 0, "test_dispatch_cleanup") : NULL;
    char kcfg[512];
    snprintf(kcfg, sizeof kcfg,
             "apiVersion: v1\nkind: Config\ncurrent-context: m\n"
             "contexts:\n- name: m\n  context: {cluster: m, user: u}\n"
             "clusters:\n- name: m\n  cluster: {server: \"http://127.0.0.1:%d\"}\n"
             "users:\n- name: u\n  user: {token: t}\n",
             mport);
    char *e = b64(kcfg);
    snprintf(hub.kubeconfig, sizeof hub.kubeconfig, "%s", e);
    free(e);
    return hub_d && mem_d && hub_kc ? 0 : -1;
}

static int teardown(void **st)
{
    kube_client_free(hub_kc);
    if (hub_d)
        MHD_stop_daemon(hub_d);
    if (mem_d)
        MHD_stop_daemon(mem_d);
    json_decref(hub.job);
    json_decref(hub.last);
    json_decref(hub.events);
    json_decref(mem.pods);
    return 0;
}

static const char *JOB = "{\"apiVersion\":\"resource.aibee.cn/v1alpha1\",\"kind\":\"MultiClusterJob\","
                         "\"metadata\":{\"name\":\"train\",\"namespace\":\"team\",\"uid\":\"U1\",\"generation\":1},"
                         "\"spec\":{\"guardTimeRunningSeconds\":0,"
                         "\"clusters\":[{\"name\":\"a\",\"kubeconfigSecret\":\"member-a\",\"priority\":50}],"
                         "\"template\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"w\"},"
                         "\"spec\":{\"containers\":[]}}]}}";

/* A fresh hub (the job as given, the Secret there or not) and member. */
static void reset(json_t *job, int secret)
{
    pthread_mutex_lock(&hub.mu);
    json_decref(hub.job);
    json_decref(hub.last);
    json_decref(hub.events);
    hub.job = job;
    hub.last = NULL;
    hub.secret = secret;
    hub.events = json_array();
    hub_bump();
    pthread_mutex_unlock(&hub.mu);
    pthread_mutex_lock(&mem.mu);
    json_decref(mem.pods);
    mem.pods = json_object();
    mem.deletes = 0;
    pthread_mutex_unlock(&mem.mu);
}

static void set_deleted(int64_t wall_ms)
{
    char ts[48];
    util_rfc3339_ms(wall_ms, ts, sizeof ts);
    pthread_mutex_lock(&hub.mu);
    json_object_set_new(json_object_get(hub.job, "metadata"), "deletionTimestamp", json_string(ts));
    hub_bump();
    pthread_mutex_unlock(&hub.mu);
}

static dsp_controller_t *start(void)
{
    dsp_opts_t o = { .poll_s = 0.2, .workers = 2, .member_timeout_s = 5, .identity = "test" };
    char err[256];
    dsp_controller_t *ctl = dsp_controller_new(hub_kc, &o, err, sizeof err);
    assert_non_null(ctl);
    assert_int_equal(dsp_controller_start(ctl, err, sizeof err), 0);
    return ctl;
}

static int job_won(void)
{
    json_t *st = json_object_get(hub.job, "status");
    const char *w = json_string_value(json_object_get(st, "winner"));
    return w && strcmp(w, "a") == 0 && json_object_get(mem.pods, "w-a");
}

static int job_gone(void)
{
    return hub.job == NULL;
}

/* Waits up to ms for cond (hub.mu and mem.mu held while it is asked). */
static int wait_for(int (*cond)(void), int ms)
{
    int64_t end = util_now_ms() + ms;
    for (;;) {
        pthread_mutex_lock(&hub.mu);
        pthread_mutex_lock(&mem.mu);
        int ok = cond();
        pthread_mutex_unlock(&mem.mu);
        pthread_mutex_unlock(&hub.mu);
        if (ok)
            return 1;
        if (util_now_ms() > end)
            return 0;
        util_sleep_ms(50);
    }
}

/* On a failure, what the controller left in the job. */
static void show_job(void)
{
    pthread_mutex_lock(&hub.mu);
    char *t = hub.job ? json_dumps(json_object_get(hub.job, "status"), JSON_COMPACT) : NULL;
    pthread_mutex_unlock(&hub.mu);
    if (t)
        print_message("job status: %s\n", t);
    free(t);
}

/* The Warning events whose message has every one of the strings. */
static int warnings_with(const char *a, const char *b)
{
    int n = 0;
    pthread_mutex_lock(&hub.mu);
    size_t i;
    json_t *e;
    json_array_foreach (hub.events, i, e) {
        const char *type = json_string_value(json_array_get(e, 0));
        const char *msg = json_string_value(json_array_get(e, 2));
        if (type && msg && strcmp(type, "Warning") == 0 && strstr(msg, a) && (!b || strstr(msg, b)))
            n++;
    }
    pthread_mutex_unlock(&hub.mu);
    return n;
}

/* (a) The Secret goes after the job was dispatched and won (its namespace
 * is being deleted): deleting the job still deletes the winner's pod in
 * the member, with the credentials the controller used, and the finalizer
 * comes off. */
static void test_secret_gone_after_win(void **state)
{
    (void)state;
    reset(js(JOB), 1);
    int64_t t0 = util_now_ms();
    dsp_controller_t *ctl = start();
    assert_true(wait_for(job_won, 5000));
    pthread_mutex_lock(&hub.mu);
    hub.secret = 0;
    pthread_mutex_unlock(&hub.mu);
    /* past the controller's 10 s look at the Secret, so it has seen it go */
    util_sleep_ms(t0 + 11000 - util_now_ms());
    set_deleted(util_wall_ms());
    int gone = wait_for(job_gone, 8000);
    pthread_mutex_lock(&mem.mu);
    int deletes = mem.deletes, left = (int)json_object_size(mem.pods);
    pthread_mutex_unlock(&mem.mu);
    dsp_controller_free(ctl);
    if (!gone)
        show_job();
    assert_true(gone);
    assert_int_equal(deletes, 1);
    assert_int_equal(left, 0);
    assert_int_equal(warnings_with("may still be running", NULL), 0);
}

/* The dashboard's /api/v1/multicluster answer: the job, its phase, winner
 * and each member's state, as the controller last saw its .status. */
static void test_dashboard_jobs(void **state)
{
    (void)state;
    reset(js(JOB), 1);
    dsp_controller_t *ctl = start();
    assert_true(wait_for(job_won, 5000));
    char *t = NULL;
    int64_t end = util_now_ms() + 5000;
    for (;;) {
        json_t *doc = dsp_controller_dashboard(ctl);
        free(t);
        t = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        if (strstr(t, "\"winner\":\"a\"") || util_now_ms() > end)
            break;
        util_sleep_ms(50);
    }
    dsp_controller_free(ctl);
    assert_string_equal(t, "{\"served\":true,\"jobs\":[{\"namespace\":\"team\",\"name\":\"train\",\"phase\":"
                           "\"Won\",\"winner\":\"a\",\"members\":[{\"cluster\":\"a\",\"state\":\"Won\","
                           "\"message\":null}]}]}");
    free(t);
}

/* (b) The Secret is gone and nothing was kept (a restarted controller):
 * the finalizer stays through the grace, then comes off with a Warning
 * event naming the cluster and the pod that may be left there. The grace
 * runs from deletionTimestamp; moving it back stands for the time passing. */
static void test_no_credentials_gives_up_after_grace(void **state)
{
    (void)state;
    json_t *job = js(JOB);
    json_object_set_new(json_object_get(job, "metadata"), "finalizers",
                        json_pack("[s]", "resource.aibee.cn/multiclusterjob-cleanup"));
    json_object_set_new(job, "status",
                        js("{\"phase\":\"Won\",\"winner\":\"a\",\"decidedAt\":\"2026-01-01T00:00:10Z\","
                           "\"clusters\":[{\"name\":\"a\",\"priority\":50,\"state\":\"Won\",\"contacted\":true,"
                           "\"submittedAt\":\"2026-01-01T00:00:00Z\",\"wonAt\":\"2026-01-01T00:00:10Z\"}]}"));
    reset(job, 0);
    set_deleted(util_wall_ms());
    dsp_controller_t *ctl = start();
    util_sleep_ms(1500);
    int early = wait_for(job_gone, 0);
    set_deleted(util_wall_ms() - 600000);
    int gone = wait_for(job_gone, 5000);
    dsp_controller_free(ctl);
    if (!gone)
        show_job();
    assert_false(early);
    assert_true(gone);
    assert_int_equal(warnings_with("cluster a", "Pod team/w-a"), 1);
}

int main(void)
{
    log_set_verbosity(getenv("TEST_VERBOSE") ? 4 : 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_gone_after_win),
        cmocka_unit_test(test_no_credentials_gives_up_after_grace),
        cmocka_unit_test(test_dashboard_jobs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
