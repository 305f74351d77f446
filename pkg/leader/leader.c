/* leader.c -- Lease-based leader election: acquire, renew, lose, release. */
#include "leader/leader.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "util/log.h"
#include "util/util.h"

typedef enum { LE_IDLE, LE_FOLLOWER, LE_LEADER, LE_LOST, LE_STOPPED } le_state_t;

/* The lease record as last read (or written) by us. */
typedef struct record {
    char holder[256];
    char renew[64]; /* renewTime as sent by the server, for change detection */
    char rv[64];
    int duration_s;
    int64_t renew_wall_ms; /* parsed renewTime, -1 when absent */
} record_t;

struct leader {
    kube_client_t *kc;
    leader_opts_t o; /* strings below are our copies */
    char *item_path; /* .../leases/NAME */
    char *coll_path; /* .../leases */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* state changes and stop requests */
    pthread_t th;
    int started, stopping;
    le_state_t state;
    record_t seen;
    int64_t seen_at_ms;     /* monotonic time the record last changed */
    int64_t renewed_ms;     /* monotonic time of our last successful write */
    int64_t valid_until_ms; /* monotonic: we may act until then (guarded by mu) */
    unsigned seed;
};

#define LEASES "/apis/coordination.k8s.io/v1/namespaces/"

/* ---- helpers ------------------------------------------------------------- */

static void micro_time(char *buf, size_t n)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, n, "%s.%06ldZ", base, ts.tv_nsec / 1000);
}

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* Reads metadata.resourceVersion and spec into r. */
static void parse_record(json_t *lease, record_t *r)
{
    json_t *spec = json_object_get(lease, "spec");
    memset(r, 0, sizeof *r);
    snprintf(r->holder, sizeof r->holder, "%s", jstr(spec, "holderIdentity"));
    snprintf(r->renew, sizeof r->renew, "%s", jstr(spec, "renewTime"));
    snprintf(r->rv, sizeof r->rv, "%s", jstr(json_object_get(lease, "metadata"), "resourceVersion"));
    json_int_t d = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
    r->duration_s = d > 0 && d < 86400 * 365 ? (int)d : 0;
    r->renew_wall_ms = r->renew[0] ? util_parse_rfc3339(r->renew) : -1;
}

/* Records what we saw; the observation clock restarts when it changed. */
static void observe(leader_t *le, const record_t *r)
{
    pthread_mutex_lock(&le->mu);
    if (strcmp(r->holder, le->seen.holder) || strcmp(r->renew, le->seen.renew) || !le->seen_at_ms)
        le->seen_at_ms = util_now_ms();
    le->seen = *r;
    pthread_mutex_unlock(&le->mu);
}

static int expired(leader_t *le, const record_t *r)
{
    int dur = r->duration_s > 0 ? r->duration_s : le->o.lease_duration_s;
    if (r->renew_wall_ms >= 0 && r->renew_wall_ms + (int64_t)dur * 1000 < util_wall_ms())
        return 1;
    pthread_mutex_lock(&le->mu);
    int64_t at = le->seen_at_ms;
    pthread_mutex_unlock(&le->mu);
    return util_now_ms() - at >= (int64_t)dur * 1000;
}

static void fill_spec(leader_t *le, json_t *spec, const char *now, int keep_acquire, json_int_t transitions)
{
    json_object_set_new(spec, "holderIdentity", json_string(le->o.identity));
    json_object_set_new(spec, "leaseDurationSeconds", json_integer(le->o.lease_duration_s));
    json_object_set_new(spec, "renewTime", json_string(now));
    if (!keep_acquire || !json_is_string(json_object_get(spec, "acquireTime")))
        json_object_set_new(spec, "acquireTime", json_string(now));
    json_object_set_new(spec, "leaseTransitions", json_integer(transitions));
}

static int create_lease(leader_t *le)
{
    char now[64], err[256];
    micro_time(now, sizeof now);
    json_t *spec = json_object();
    fill_spec(le, spec, now, 0, 0);
    json_t *body = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "coordination.k8s.io/v1", "kind", "Lease",
                             "metadata", "name", le->o.lease_name, "namespace", le->o.lease_namespace, "spec", spec);
    json_t *out = NULL;
    long status = 0;
    int rc = kube_send_json(le->kc, "POST", le->coll_path, NULL, body, &out, &status, err, sizeof err);
    json_decref(body);
    if (rc == 0 && status >= 200 && status < 300 && out) {
        record_t r;
        parse_record(out, &r);
        observe(le, &r);
        json_decref(out);
        LOG_I("leader: created lease %s/%s, holder %s", le->o.lease_namespace, le->o.lease_name, le->o.identity);
        return 1;
    }
    json_decref(out);
    if (status == 409)
        LOG_D("leader: lease %s/%s was created by someone else", le->o.lease_namespace, le->o.lease_name);
    else
        LOG_W("leader: creating lease %s/%s: %s", le->o.lease_namespace, le->o.lease_name, err);
    return 0;
}

/* One attempt. Returns 1 when we hold the lease afterwards, 0 otherwise;
 * *other is set when a live lease belongs to someone else. */
static int try_acquire_or_renew(leader_t *le, int *other)
{
    json_t *lease = NULL;
    long status = 0;
    char err[256] = "";
    *other = 0;
    if (kube_get_json(le->kc, le->item_path, &lease, &status, err, sizeof err) < 0) {
        json_decref(lease);
        if (status == 404)
            return create_lease(le);
        LOG_W("leader: reading lease %s/%s: %s", le->o.lease_namespace, le->o.lease_name, err);
        return 0;
    }
    if (!json_is_object(lease)) {
        json_decref(lease);
        return 0;
    }
    record_t r;
    parse_record(lease, &r);
    observe(le, &r);
    int ours = !strcmp(r.holder, le->o.identity);
    if (r.holder[0] && !ours && !expired(le, &r)) {
        *other = 1;
        json_decref(lease);
        return 0;
    }
    json_t *spec = json_object_get(lease, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(lease, "spec", spec);
    }
    json_int_t trans = json_integer_value(json_object_get(spec, "leaseTransitions"));
    if (trans < 0)
        trans = 0;
    char now[64];
    micro_time(now, sizeof now);
    fill_spec(le, spec, now, ours, ours ? trans : trans + 1);
    json_t *out = NULL;
    int rc = kube_send_json(le->kc, "PUT", le->item_path, NULL, lease, &out, &status, err, sizeof err);
    json_decref(lease);
    if (rc == 0 && status >= 200 && status < 300 && out) {
        parse_record(out, &r);
        observe(le, &r);
        json_decref(out);
        if (!ours)
            LOG_I("leader: acquired lease %s/%s as %s", le->o.lease_namespace, le->o.lease_name, le->o.identity);
        return 1;
    }
    json_decref(out);
    if (status == 409)
        LOG_D("leader: lease %s/%s changed under us (409)", le->o.lease_namespace, le->o.lease_name);
    else
        LOG_W("leader: updating lease %s/%s: %s", le->o.lease_namespace, le->o.lease_name, err);
    return 0;
}

/* ---- the election thread --------------------------------------------------- */

/* Sleeps up to ms unless stopping; returns nonzero when stopping. */
static int nap(leader_t *le, int64_t ms)
{
    struct timespec ts;
    util_deadline(CLOCK_MONOTONIC, ms, &ts);
    pthread_mutex_lock(&le->mu);
    while (!le->stopping && pthread_cond_timedwait(&le->cv, &le->mu, &ts) != ETIMEDOUT)
        ;
    int s = le->stopping;
    pthread_mutex_unlock(&le->mu);
    return s;
}

static void set_state(leader_t *le, le_state_t st)
{
    pthread_mutex_lock(&le->mu);
    le->state = st;
    pthread_cond_broadcast(&le->cv);
    pthread_mutex_unlock(&le->mu);
}

static le_state_t get_state(leader_t *le)
{
    pthread_mutex_lock(&le->mu);
    le_state_t s = le->state;
    pthread_mutex_unlock(&le->mu);
    return s;
}

/* A successful write at attempt: we may act for the renew deadline from
 * then, well inside the lease duration the others wait out. */
static void extend(leader_t *le, int64_t attempt)
{
    pthread_mutex_lock(&le->mu);
    le->valid_until_ms = attempt + (int64_t)le->o.renew_deadline_s * 1000;
    pthread_mutex_unlock(&le->mu);
}

static void *run(void *arg)
{
    leader_t *le = arg;
    util_thread_name("leader");
    int64_t retry = (int64_t)le->o.retry_period_s * 1000;
    for (;;) {
        pthread_mutex_lock(&le->mu);
        int stop = le->stopping;
        pthread_mutex_unlock(&le->mu);
        if (stop)
            break;
        int other = 0;
        /* The lease we write says renewTime = about now: our tenure counts
         * from before the request, never from its answer. */
        int64_t attempt = util_now_ms();
        int ok = try_acquire_or_renew(le, &other);
        if (ok)
            extend(le, attempt);
        if (get_state(le) == LE_LEADER) {
            int64_t now = util_now_ms();
            const char *why = NULL;
            if (ok)
                le->renewed_ms = now;
            else if (other)
                why = "the lease has another holder";
            else if (now - le->renewed_ms >= (int64_t)le->o.renew_deadline_s * 1000)
                why = "failed to renew within the renew deadline";
            if (why) {
                LOG_E("leader: lost lease %s/%s: %s", le->o.lease_namespace, le->o.lease_name, why);
                pthread_mutex_lock(&le->mu);
                le->valid_until_ms = 0;
                pthread_mutex_unlock(&le->mu);
                set_state(le, LE_LOST);
                if (le->o.on_lost)
                    le->o.on_lost(le->o.ud);
                break;
            }
            if (nap(le, ok ? retry : retry / 2 > 0 ? retry / 2 : 1))
                break;
        } else {
            if (ok) {
                le->renewed_ms = util_now_ms();
                if (le->o.on_started) /* before waiters see us leading */
                    le->o.on_started(le->o.ud);
                set_state(le, LE_LEADER);
                if (nap(le, retry))
                    break;
                continue;
            }
            /* Followers jitter (x1.0 .. x1.2) so replicas do not retry in step. */
            int64_t j = retry + (int64_t)(rand_r(&le->seed) % (unsigned)(retry / 5 + 1));
            if (nap(le, j))
                break;
        }
    }
    return NULL;
}

/* ---- public API ------------------------------------------------------------- */

leader_t *leader_new(kube_client_t *kc, const leader_opts_t *o, char *err, size_t errlen)
{
    if (!kc || !o || !o->lease_name || !*o->lease_name || !o->lease_namespace || !*o->lease_namespace || !o->identity ||
        !*o->identity) {
        snprintf(err, errlen, "leader: a client, lease name, namespace and identity are required");
        return NULL;
    }
    if (strlen(o->identity) >= sizeof(((record_t *)0)->holder)) {
        snprintf(err, errlen, "leader: identity longer than %zu bytes", sizeof(((record_t *)0)->holder) - 1);
        return NULL;
    }
    if (o->retry_period_s < 1 || o->renew_deadline_s <= o->retry_period_s ||
        o->lease_duration_s <= o->renew_deadline_s) {
        snprintf(err, errlen, "leader: need lease duration (%ds) > renew deadline (%ds) > retry period (%ds) > 0",
                 o->lease_duration_s, o->renew_deadline_s, o->retry_period_s);
        return NULL;
    }
    leader_t *le = util_xcalloc(1, sizeof *le);
    le->kc = kc;
    le->o = *o;
    le->o.lease_name = util_strdup(o->lease_name);
    le->o.lease_namespace = util_strdup(o->lease_namespace);
    le->o.identity = util_strdup(o->identity);
    char *ns = util_urlencode(o->lease_namespace), *name = util_urlencode(o->lease_name);
    sbuf_t b = { 0 };
    sbuf_printf(&b, LEASES "%s/leases", ns);
    le->coll_path = b.data;
    memset(&b, 0, sizeof b);
    sbuf_printf(&b, LEASES "%s/leases/%s", ns, name);
    le->item_path = b.data;
    free(ns);
    free(name);
    pthread_mutex_init(&le->mu, NULL);
    util_cond_init_monotonic(&le->cv);
    le->seed = (unsigned)util_now_us() ^ (unsigned)(uintptr_t)le;
    le->state = LE_IDLE;
    return le;
}

int leader_start(leader_t *le, char *err, size_t errlen)
{
    pthread_mutex_lock(&le->mu);
    if (le->started) {
        pthread_mutex_unlock(&le->mu);
        snprintf(err, errlen, "leader: already started");
        return -1;
    }
    le->state = LE_FOLLOWER;
    int rc = pthread_create(&le->th, NULL, run, le);
    if (rc == 0)
        le->started = 1;
    else
        le->state = LE_IDLE;
    pthread_mutex_unlock(&le->mu);
    if (rc) {
        snprintf(err, errlen, "leader: pthread_create: %s", strerror(rc));
        return -1;
    }
    LOG_I("leader: %s campaigning for lease %s/%s", le->o.identity, le->o.lease_namespace, le->o.lease_name);
    return 0;
}

int leader_wait_until_leading(leader_t *le, int timeout_ms, const volatile int *stop)
{
    int64_t deadline = timeout_ms < 0 ? -1 : util_now_ms() + timeout_ms;
    pthread_mutex_lock(&le->mu);
    for (;;) {
        if (le->state == LE_LEADER) {
            pthread_mutex_unlock(&le->mu);
            return 1;
        }
        if (le->state == LE_LOST || le->state == LE_STOPPED || le->state == LE_IDLE) {
            pthread_mutex_unlock(&le->mu);
            return -1;
        }
        int64_t now = util_now_ms();
        if ((stop && *stop) || (deadline >= 0 && now >= deadline)) {
            pthread_mutex_unlock(&le->mu);
            return 0;
        }
        int64_t wait = 100;
        if (deadline >= 0 && deadline - now < wait)
            wait = deadline - now;
        struct timespec ts;
        util_deadline(CLOCK_MONOTONIC, wait, &ts);
        pthread_cond_timedwait(&le->cv, &le->mu, &ts);
    }
}

int leader_is_leader(leader_t *le)
{
    return le && get_state(le) == LE_LEADER;
}

int leader_holds_lease(leader_t *le)
{
    if (!le)
        return 0;
    pthread_mutex_lock(&le->mu);
    int ok = le->state == LE_LEADER && util_now_ms() < le->valid_until_ms;
    pthread_mutex_unlock(&le->mu);
    return ok;
}

int leader_lost(leader_t *le)
{
    return le && get_state(le) == LE_LOST;
}

void leader_holder(leader_t *le, char *buf, size_t n)
{
    if (!n)
        return;
    pthread_mutex_lock(&le->mu);
    snprintf(buf, n, "%s", le->seen.holder);
    pthread_mutex_unlock(&le->mu);
}

/* Writes an empty holder so a follower need not wait out the lease. */
static void release(leader_t *le)
{
    json_t *lease = NULL;
    long status = 0;
    char err[256] = "";
    if (kube_get_json(le->kc, le->item_path, &lease, &status, err, sizeof err) < 0) {
        LOG_W("leader: release: reading lease: %s", err);
        json_decref(lease);
        return;
    }
    json_t *spec = json_object_get(lease, "spec");
    if (!json_is_object(spec) || strcmp(jstr(spec, "holderIdentity"), le->o.identity)) {
        json_decref(lease);
        return; /* not ours any more: nothing to give back */
    }
    char now[64];
    micro_time(now, sizeof now);
    json_object_set_new(spec, "holderIdentity", json_string(""));
    json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
    json_object_set_new(spec, "renewTime", json_string(now));
    json_object_set_new(spec, "acquireTime", json_string(now));
    int rc = kube_send_json(le->kc, "PUT", le->item_path, NULL, lease, NULL, &status, err, sizeof err);
    json_decref(lease);
    if (rc == 0 && status >= 200 && status < 300)
        LOG_I("leader: released lease %s/%s", le->o.lease_namespace, le->o.lease_name);
    else
        LOG_W("leader: releasing lease %s/%s: %s", le->o.lease_namespace, le->o.lease_name, err);
}

void leader_stop(leader_t *le)
{
    if (!le)
        return;
    pthread_mutex_lock(&le->mu);
    int started = le->started;
    le->started = 0;
    le->stopping = 1;
    pthread_cond_broadcast(&le->cv);
    pthread_mutex_unlock(&le->mu);
    if (started)
        pthread_join(le->th, NULL);
    if (get_state(le) == LE_LEADER)
        release(le);
    pthread_mutex_lock(&le->mu);
    le->valid_until_ms = 0;
    pthread_mutex_unlock(&le->mu);
    if (get_state(le) != LE_LOST)
        set_state(le, LE_STOPPED);
}

void leader_free(leader_t *le)
{
    if (!le)
        return;
    leader_stop(le);
    pthread_cond_destroy(&le->cv);
    pthread_mutex_destroy(&le->mu);
    free((char *)le->o.lease_name);
    free((char *)le->o.lease_namespace);
    free((char *)le->o.identity);
    free(le->item_path);
    free(le->coll_path);
    free(le);
}
