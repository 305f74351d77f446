/* test_leader.c -- Lease leader election against a fake coordination.k8s.io
 * endpoint (libmicrohttpd) that enforces resourceVersion like the API server. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "fake_api.h"
#include "kube/client.h"
#include "leader/leader.h"
#include "util/util.h"

#define LEASES "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
#define LEASE  LEASES "/sched"

/* ---- fake API server ---------------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    json_t *lease; /* NULL: absent */
    long rv;
    int fail; /* answer 500 to everything */
    int puts, conflicts;
} api = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0 };
static int stall_ms; /* atomic: every answer waits this long (a stuck connection) */

typedef struct upload {
    sbuf_t body;
} upload_t;

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned code, json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result status(struct MHD_Connection *c, unsigned code, const char *msg)
{
    json_t *j = json_pack("{s:s,s:s,s:s,s:i}", "kind", "Status", "status", "Failure", "message", msg, "code", code);
    enum MHD_Result rc = send_json(c, code, j);
    json_decref(j);
    return rc;
}

static void store(json_t *obj)
{
    char rv[32];
    snprintf(rv, sizeof rv, "%ld", ++api.rv);
    json_t *md = json_object_get(obj, "metadata");
    json_object_set_new(md, "resourceVersion", json_string(rv));
    json_decref(api.lease);
    api.lease = json_incref(obj);
}

static enum MHD_Result serve(struct MHD_Connection *c, const char *url, const char *method, const char *body)
{
    if (api.fail)
        return status(c, 500, "etcd is on fire");
    if (!strcmp(method, "GET") && !strcmp(url, LEASE)) {
        if (!api.lease)
            return status(c, 404, "leases.coordination.k8s.io \"sched\" not found");
        return send_json(c, 200, api.lease);
    }
    json_error_t je;
    json_t *obj = json_loads(body, 0, &je);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return status(c, 400, "bad body");
    }
    enum MHD_Result rc;
    if (!strcmp(method, "POST") && !strcmp(url, LEASES)) {
        if (api.lease) {
            rc = status(c, 409, "already exists");
        } else {
            store(obj);
            rc = send_json(c, 201, api.lease);
        }
    } else if (!strcmp(method, "PUT") && !strcmp(url, LEASE)) {
        api.puts++;
        const char *want =
            json_string_value(json_object_get(json_object_get(api.lease, "metadata"), "resourceVersion"));
        const char *got = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
        if (!api.lease) {
            rc = status(c, 404, "not found");
        } else if (!got || !want || strcmp(got, want)) {
            api.conflicts++;
            rc = status(c, 409, "the object has been modified");
        } else {
            store(obj);
            rc = send_json(c, 200, api.lease);
        }
    } else {
        rc = status(c, 404, "no such path");
    }
    json_decref(obj);
    return rc;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
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
    int stall = __atomic_load_n(&stall_ms, __ATOMIC_SEQ_CST);
    if (stall)
        util_sleep_ms(stall);
    pthread_mutex_lock(&api.mu);
    enum MHD_Result rc = serve(c, url, method, u->body.data ? u->body.data : "");
    pthread_mutex_unlock(&api.mu);
    return rc;
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    upload_t *u = *con_cls;
    if (u) {
        sbuf_free(&u->body);
        free(u);
    }
}

static struct MHD_Daemon *daemon_;
static kube_client_t *kc;

static int setup(void **st)
{
    int port;
    daemon_ = fake_api_start(handler, done, &port);
    kc = daemon_ ? fake_api_client(port, 0, 0, "test_leader") : NULL;
    return kc ? 0 : -1;
}

static int teardown(void **st)
{
    kube_client_free(kc);
    MHD_stop_daemon(daemon_);
    json_decref(api.lease);
    return 0;
}

static int reset(void **st)
{
    pthread_mutex_lock(&api.mu);
    json_decref(api.lease);
    api.lease = NULL;
    api.fail = 0;
    api.puts = api.conflicts = 0;
    pthread_mutex_unlock(&api.mu);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------- */

typedef struct events {
    int started, lost;
} events_t;

static void on_started(void *ud)
{
    __atomic_add_fetch(&((events_t *)ud)->started, 1, __ATOMIC_SEQ_CST);
}
static void on_lost(void *ud)
{
    __atomic_add_fetch(&((events_t *)ud)->lost, 1, __ATOMIC_SEQ_CST);
}

static int ev_get(int *p)
{
    return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static leader_t *candidate(const char *id, events_t *ev)
{
    leader_opts_t o = { "sched", "kube-system", id, 3, 2, 1, on_started, on_lost, ev };
    char err[256];
    leader_t *le = leader_new(kc, &o, err, sizeof err);
    assert_non_null(le);
    assert_int_equal(leader_start(le, err, sizeof err), 0);
    return le;
}

static void lease_field(const char *field, char *buf, size_t n)
{
    pthread_mutex_lock(&api.mu);
    json_t *v = json_object_get(json_object_get(api.lease, "spec"), field);
    if (json_is_string(v))
        snprintf(buf, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else
        snprintf(buf, n, "<none>");
    pthread_mutex_unlock(&api.mu);
}

static void micro_ago(int seconds, char *buf, size_t n)
{
    time_t t = time(NULL) - seconds;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%S.000000Z", &tm);
}

static void put_lease(const char *holder, int ago_s, int duration, int transitions)
{
    char renew[64];
    micro_ago(ago_s, renew, sizeof renew);
    json_t *l = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:i,s:s,s:s,s:i}}", "apiVersion", "coordination.k8s.io/v1",
                          "kind", "Lease", "metadata", "name", "sched", "namespace", "kube-system", "spec",
                          "holderIdentity", holder, "leaseDurationSeconds", duration, "acquireTime", renew, "renewTime",
                          renew, "leaseTransitions", transitions);
    pthread_mutex_lock(&api.mu);
    store(l);
    pthread_mutex_unlock(&api.mu);
    json_decref(l);
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_options(void **st)
{
    char err[256];
    leader_opts_t o = { "sched", "kube-system", "a", 3, 2, 1, NULL, NULL, NULL };
    o.renew_deadline_s = 3;
    assert_null(leader_new(kc, &o, err, sizeof err));
    assert_non_null(strstr(err, "lease duration (3s) > renew deadline (3s)"));
    o.renew_deadline_s = 2;
    o.identity = "";
    assert_null(leader_new(kc, &o, err, sizeof err));
    assert_null(leader_new(NULL, &o, err, sizeof err));
    o.identity = "a";
    leader_t *le = leader_new(kc, &o, err, sizeof err);
    assert_non_null(le);
    assert_int_equal(leader_wait_until_leading(le, 10, NULL), -1); /* not started */
    assert_int_equal(leader_is_leader(le), 0);
    leader_free(le);
    leader_free(NULL);
}

static void test_create_renew_release_handover(void **st)
{
    events_t ea = { 0 }, eb = { 0 };
    char buf[128], renew1[64], renew2[64];
    leader_t *a = candidate("replica-a", &ea);
    assert_int_equal(leader_wait_until_leading(a, 5000, NULL), 1);
    assert_true(leader_is_leader(a));
    assert_int_equal(ev_get(&ea.started), 1);
    lease_field("holderIdentity", buf, sizeof buf);
    assert_string_equal(buf, "replica-a");
    lease_field("leaseTransitions", buf, sizeof buf);
    assert_string_equal(buf, "0");
    lease_field("leaseDurationSeconds", buf, sizeof buf);
    assert_string_equal(buf, "3");
    lease_field("renewTime", renew1, sizeof renew1);
    /* MicroTime: 2006-01-02T15:04:05.000000Z */
    assert_int_equal(strlen(renew1), 27);
    assert_int_equal(renew1[19], '.');
    assert_int_equal(renew1[26], 'Z');
    assert_true(util_parse_rfc3339(renew1) > 0);

    leader_t *b = candidate("replica-b", &eb);
    assert_int_equal(leader_wait_until_leading(b, 2500, NULL), 0); /* renewed by a meanwhile */
    assert_false(leader_is_leader(b));
    leader_holder(b, buf, sizeof buf);
    assert_string_equal(buf, "replica-a");
    lease_field("renewTime", renew2, sizeof renew2);
    assert_string_not_equal(renew1, renew2);
    assert_true(leader_is_leader(a));

    /* Clean shutdown hands over at b's next retry, well before the 3s lease. */
    int64_t t0 = util_now_ms();
    leader_stop(a);
    assert_false(leader_is_leader(a));
    assert_int_equal(ev_get(&ea.lost), 0);
    assert_int_equal(leader_wait_until_leading(b, 2500, NULL), 1);
    assert_true(util_now_ms() - t0 < 2500);
    assert_int_equal(ev_get(&eb.started), 1);
    lease_field("holderIdentity", buf, sizeof buf);
    assert_string_equal(buf, "replica-b");
    lease_field("leaseTransitions", buf, sizeof buf);
    assert_string_equal(buf, "1");
    leader_free(a);
    leader_free(b);
    lease_field("holderIdentity", buf, sizeof buf);
    assert_string_equal(buf, "");
}

static void test_stale_lease_taken(void **st)
{
    events_t e = { 0 };
    char buf[64];
    put_lease("crashed", 3600, 3, 5);
    leader_t *a = candidate("replica-a", &e);
    assert_int_equal(leader_wait_until_leading(a, 1000, NULL), 1);
    lease_field("leaseTransitions", buf, sizeof buf);
    assert_string_equal(buf, "6");
    leader_free(a);
}

static void test_live_lease_respected(void **st)
{
    events_t e = { 0 };
    put_lease("other", 0, 30, 0);
    leader_t *a = candidate("replica-a", &e);
    assert_int_equal(leader_wait_until_leading(a, 2500, NULL), 0);
    volatile int stop = 1;
    int64_t t0 = util_now_ms();
    assert_int_equal(leader_wait_until_leading(a, -1, &stop), 0);
    assert_true(util_now_ms() - t0 < 500);
    assert_int_equal(ev_get(&e.started), 0);
    leader_free(a);
    char buf[64];
    lease_field("holderIdentity", buf, sizeof buf);
    assert_string_equal(buf, "other"); /* a follower releases nothing */
}

static void test_lost_when_api_fails(void **st)
{
    events_t e = { 0 };
    leader_t *a = candidate("replica-a", &e);
    assert_int_equal(leader_wait_until_leading(a, 5000, NULL), 1);
    pthread_mutex_lock(&api.mu);
    api.fail = 1;
    pthread_mutex_unlock(&api.mu);
    int64_t t0 = util_now_ms();
    while (!leader_lost(a) && util_now_ms() - t0 < 6000)
        util_sleep_ms(50);
    assert_true(leader_lost(a));
    int64_t took = util_now_ms() - t0;
    assert_true(took >= 1000 && took < 4500); /* renew deadline 2s (+ a retry) */
    assert_int_equal(ev_get(&e.lost), 1);
    assert_false(leader_is_leader(a));
    assert_int_equal(leader_wait_until_leading(a, 100, NULL), -1);
    leader_free(a);
    assert_int_equal(ev_get(&e.lost), 1);
}

/* Fencing: the election thread is stuck in a renewal (the server does not
 * answer for 4 s); leader_holds_lease turns false by itself at the renew
 * deadline (2 s after the last renewal started), before the thread can say
 * the lease is lost. */
static void test_holds_lease_expires_while_stuck(void **st)
{
    events_t e = { 0 };
    leader_t *a = candidate("replica-a", &e);
    assert_int_equal(leader_wait_until_leading(a, 5000, NULL), 1);
    assert_true(leader_holds_lease(a));
    util_sleep_ms(1200); /* a renewal or two went through */
    assert_true(leader_holds_lease(a));
    __atomic_store_n(&stall_ms, 4000, __ATOMIC_SEQ_CST);
    int64_t t0 = util_now_ms();
    while (leader_holds_lease(a) && util_now_ms() - t0 < 6000)
        util_sleep_ms(20);
    int64_t took = util_now_ms() - t0;
    assert_false(leader_holds_lease(a));
    assert_true(took <= 2200);            /* the renew deadline, not the stall */
    assert_int_equal(ev_get(&e.lost), 0); /* the stuck thread has not noticed yet */
    assert_true(leader_is_leader(a));
    __atomic_store_n(&stall_ms, 0, __ATOMIC_SEQ_CST);
    leader_free(a);
    assert_false(leader_holds_lease(NULL));
}

static void test_lost_when_taken_over(void **st)
{
    events_t e = { 0 };
    leader_t *a = candidate("replica-a", &e);
    assert_int_equal(leader_wait_until_leading(a, 5000, NULL), 1);
    put_lease("usurper", 0, 30, 9);
    int64_t t0 = util_now_ms();
    while (!leader_lost(a) && util_now_ms() - t0 < 3000)
        util_sleep_ms(20);
    assert_true(leader_lost(a));
    assert_true(util_now_ms() - t0 < 1800); /* at the next renew, not after the deadline */
    assert_int_equal(ev_get(&e.lost), 1);
    leader_free(a);
    char buf[64];
    lease_field("holderIdentity", buf, sizeof buf);
    assert_string_equal(buf, "usurper");
}

/* Two candidates racing on an absent lease: exactly one wins. */
static void test_race(void **st)
{
    events_t e1 = { 0 }, e2 = { 0 };
    leader_t *a = candidate("replica-a", &e1), *b = candidate("replica-b", &e2);
    int64_t t0 = util_now_ms();
    while (!leader_is_leader(a) && !leader_is_leader(b) && util_now_ms() - t0 < 3000)
        util_sleep_ms(20);
    util_sleep_ms(2500);
    assert_int_equal(leader_is_leader(a) + leader_is_leader(b), 1);
    assert_int_equal(ev_get(&e1.started) + ev_get(&e2.started), 1);
    assert_int_equal(ev_get(&e1.lost) + ev_get(&e2.lost), 0);
    leader_free(a);
    leader_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_holds_lease_expires_while_stuck, reset),
        cmocka_unit_test_setup(test_options, reset),
        cmocka_unit_test_setup(test_create_renew_release_handover, reset),
        cmocka_unit_test_setup(test_stale_lease_taken, reset),
        cmocka_unit_test_setup(test_live_lease_respected, reset),
        cmocka_unit_test_setup(test_lost_when_api_fails, reset),
        cmocka_unit_test_setup(test_lost_when_taken_over, reset),
        cmocka_unit_test_setup(test_race, reset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
