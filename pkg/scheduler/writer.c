/* writer.c -- asynchronous API writes that must not slow scheduling:
 * events, PodScheduled conditions, nominatedNodeName and Pool status
 * patches. One thread, a bounded FIFO; when it is full new writes are
 * dropped and counted (an event storm must not grow memory). Patches go
 * one at a time, in order; events, which need no order, go out through
 * kube_async, EVENTS_INFLIGHT at once (one while Bindings wait). */
#include <stdlib.h>
#include <string.h>

#include "kube/async.h"
#include "kube/event.h"
#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"
#include "util/lockorder.h"

#define EVENTS_INFLIGHT 16

typedef struct write_req {
    struct write_req *next;
    api_writer_t *w;
    char *method, *path, *content_type, *body;
    int deferrable;        /* an event: may wait for a burst of binds to pass */
    int failed;            /* tries that failed */
    int64_t not_before_ms; /* a retry waits this long */
} write_req_t;

struct api_writer {
    scheduler_t *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* Two FIFOs: patches (state: statuses, nominations, conditions) go
     * before events (reports), so a burst of events never delays a
     * PodGroup's or Pool's status by more than one request. */
    write_req_t *head, *tail;   /* events (deferrable) */
    write_req_t *phead, *ptail; /* patches */
    int len, max;
    int closing;
    int closing_seen; /* writer thread's copy of closing */
    pthread_t thread;
    unsigned long seq;
    kube_async_t *async; /* the events on the wire; NULL: sent like patches */
    int offline;         /* no thread: writer_drain sends (writer_new_offline) */
};

static void req_free(write_req_t *r)
{
    free(r->method);
    free(r->path);
    free(r->content_type);
    free(r->body);
    free(r);
}

/* Puts r at the tail of its FIFO (events or patches); -1 when the writer is
 * closing or full, and r stays the caller's. */
static int append(api_writer_t *w, write_req_t *r)
{
    lo_mutex_lock(&w->mu, LO_WRITER);
    if (w->closing || w->len >= w->max) {
        lo_mutex_unlock(&w->mu, LO_WRITER);
        return -1;
    }
    r->next = NULL;
    write_req_t **head = r->deferrable ? &w->head : &w->phead, **tail = r->deferrable ? &w->tail : &w->ptail;
    if (*tail)
        (*tail)->next = r;
    else
        *head = r;
    *tail = r;
    w->len++;
    pthread_cond_signal(&w->cv);
    lo_mutex_unlock(&w->mu, LO_WRITER);
    return 0;
}

static void enqueue(api_writer_t *w, const char *method, const char *path, const char *ct, char *body, int deferrable)
{
    write_req_t *r = util_xcalloc(1, sizeof(*r));
    r->w = w;
    r->method = util_strdup(method);
    r->path = util_strdup(path);
    r->content_type = ct ? util_strdup(ct) : NULL;
    r->body = body;
    r->deferrable = deferrable;
    if (append(w, r) != 0) {
        req_free(r);
        stats_add(w->s, &w->s->stats.events_dropped, 1);
    }
}

/* Tries of one write, and the wait before the next after `failed` tries
 * failed (200 ms, then 1 s): one policy for patches and events. */
#define WRITE_TRIES 3
static int64_t retry_delay_ms(int failed)
{
    return failed == 1 ? 200 : 1000;
}

/* Whether a write that got this answer may succeed if tried again. */
static int retryable(int failed, long status)
{
    return failed || status == 429 || status >= 500;
}

/* Says (debug) why a write did not take; err is set when no answer came. */
static void log_answer(const write_req_t *r, const char *err, long status, const char *body)
{
    if (err)
        LOG_D("write %s %s failed: %s", r->method, r->path, err);
    else if (status >= 300 && status != 404)
        LOG_D("write %s %s: HTTP %ld %.200s", r->method, r->path, status, body ? body : "");
}

/* A loaded API server may time out or shed load (429, 5xx): try again a
 * couple of times, so an overloaded moment does not lose the one
 * FailedScheduling event a pod gets for a new reason. */
static void send_with_retry(api_writer_t *w, const write_req_t *r)
{
    for (int failed = 0;;) {
        char err[256];
        kube_response_t resp = { 0 };
        int rc = kube_request(w->s->kc, r->method, r->path, r->content_type, r->body, &resp, err, sizeof(err));
        long status = rc == 0 ? resp.status : 0;
        int retry = retryable(rc != 0, status);
        log_answer(r, rc != 0 ? err : NULL, status, resp.body);
        kube_response_free(&resp);
        if (!retry || ++failed >= WRITE_TRIES || scheduler_fenced(w->s))
            return;
        lo_mutex_lock(&w->mu, LO_WRITER);
        int closing = w->closing;
        lo_mutex_unlock(&w->mu, LO_WRITER);
        if (closing)
            return;
        util_sleep_ms(retry_delay_ms(failed));
    }
}

/* An event's answer, on the async thread: a retry goes back to the FIFO's
 * tail with its delay, unless the writer is closing. */
static void event_done(void *ud, const kube_response_t *resp, const char *err)
{
    write_req_t *r = ud;
    api_writer_t *w = r->w;
    log_answer(r, err, resp->status, resp->body);
    if (!retryable(err != NULL, resp->status) || ++r->failed >= WRITE_TRIES || scheduler_fenced(w->s)) {
        req_free(r);
        return;
    }
    r->not_before_ms = util_now_ms() + retry_delay_ms(r->failed);
    if (append(w, r) != 0)
        req_free(r);
}

/* Hands an event to kube_async once fewer than EVENTS_INFLIGHT are out,
 * or fewer than one while Bindings wait: in a burst the events that no
 * longer fit the deferral trickle out instead of taking the API server's
 * writes from the Bindings. */
static void send_event(api_writer_t *w, write_req_t *r)
{
    for (;;) {
        int limit = __atomic_load_n(&w->s->bind_backlog, __ATOMIC_RELAXED) > 0 ? 1 : EVENTS_INFLIGHT;
        /* woken by an answer; the 50 ms bound notices the Bindings' backlog clearing */
        if (kube_async_wait_below(w->async, limit, 50) < limit)
            break;
    }
    int64_t wait = r->not_before_ms - util_now_ms();
    if (wait > 0)
        util_sleep_ms(wait);
    kube_async_submit(w->async, r->method, r->path, r->content_type, util_strdup(r->body), event_done, r);
}

/* The next write: patches first, then events; NULL when both are empty. */
static write_req_t *take_next_locked(api_writer_t *w)
{
    write_req_t *r = w->phead ? w->phead : w->head;
    if (r == w->phead && r) {
        w->phead = r->next;
        if (!w->phead)
            w->ptail = NULL;
        w->len--;
    } else if (r) {
        w->head = r->next;
        if (!w->head)
            w->tail = NULL;
        w->len--;
    }
    return r;
}

static void *writer_main(void *arg)
{
    api_writer_t *w = arg;
    util_thread_name("writer");
    for (;;) {
        lo_mutex_lock(&w->mu, LO_WRITER);
        while (!w->head && !w->phead && !w->closing)
            pthread_cond_wait(&w->cv, &w->mu);
        write_req_t *r = take_next_locked(w);
        int backlog_room = w->len < w->max / 2;
        lo_mutex_unlock(&w->mu, LO_WRITER);
        if (!r)
            break;
        /* Bindings first, reports second: during a burst an event waits
         * while binds are queued, unless our own queue is filling up. */
        while (r->deferrable && backlog_room && !w->closing_seen &&
               __atomic_load_n(&w->s->bind_backlog, __ATOMIC_RELAXED) > 0) {
            util_sleep_ms(5);
            lo_mutex_lock(&w->mu, LO_WRITER);
            backlog_room = w->len < w->max / 2;
            w->closing_seen = w->closing;
            lo_mutex_unlock(&w->mu, LO_WRITER);
        }
        if (scheduler_fenced(w->s)) {
            req_free(r); /* fenced: written by nobody */
        } else if (r->deferrable && w->async) {
            send_event(w, r); /* event_done frees it */
        } else {
            send_with_retry(w, r);
            req_free(r);
        }
    }
    return NULL;
}

api_writer_t *writer_new(scheduler_t *s, int max_pending)
{
    api_writer_t *w = util_xcalloc(1, sizeof(*w));
    w->s = s;
    w->max = max_pending;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    char err[256];
    w->async = kube_async_new(s->kc, EVENTS_INFLIGHT, NULL, err, sizeof(err));
    if (!w->async)
        LOG_W("events are sent one at a time: %s", err);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        LOG_E("cannot start the API writer thread");
        w->closing = 1;
    }
    return w;
}

api_writer_t *writer_new_offline(scheduler_t *s, int max_pending)
{
    api_writer_t *w = util_xcalloc(1, sizeof(*w));
    w->s = s;
    w->max = max_pending;
    w->offline = 1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    return w;
}

int writer_drain(api_writer_t *w)
{
    int n = 0;
    for (;;) {
        lo_mutex_lock(&w->mu, LO_WRITER);
        write_req_t *r = take_next_locked(w);
        lo_mutex_unlock(&w->mu, LO_WRITER);
        if (!r)
            return n;
        if (!scheduler_fenced(w->s))
            send_with_retry(w, r);
        req_free(r);
        n++;
    }
}

/* Sends what is queued, then stops. */
void writer_free(api_writer_t *w)
{
    if (!w)
        return;
    if (w->offline)
        writer_drain(w);
    lo_mutex_lock(&w->mu, LO_WRITER);
    int had_thread = !w->closing && !w->offline;
    w->closing = 1;
    pthread_cond_broadcast(&w->cv);
    lo_mutex_unlock(&w->mu, LO_WRITER);
    if (had_thread)
        pthread_join(w->thread, NULL);
    kube_async_free(w->async); /* the events already handed over are sent */
    for (write_req_t *r = w->head, *n; r; r = n) {
        n = r->next;
        req_free(r);
    }
    for (write_req_t *r = w->phead, *n; r; r = n) {
        n = r->next;
        req_free(r);
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

static void post_event(api_writer_t *w, const char *ns, json_t *involved, const char *type, const char *reason,
                       const char *message, const char *base_name)
{
    lo_mutex_lock(&w->mu, LO_WRITER);
    unsigned long seq = ++w->seq;
    lo_mutex_unlock(&w->mu, LO_WRITER);
    json_t *ev = kube_event_new(ns, involved, type, reason, message, w->s->name, w->s->identity, base_name, seq);
    if (!ev)
        return;
    char *ens = util_urlencode(ns);
    sbuf_t path = { 0 };
    sbuf_printf(&path, "/api/v1/namespaces/%s/events", ens);
    enqueue(w, "POST", path.data, NULL, json_dumps(ev, JSON_COMPACT), 1);
    sbuf_free(&path);
    free(ens);
    json_decref(ev);
}

void writer_object_event(api_writer_t *w, const char *ns, json_t *involved, const char *type, const char *reason,
                         const char *message, const char *base_name)
{
    post_event(w, ns, involved, type, reason, message, base_name);
}

void writer_pod_event(api_writer_t *w, const pod_t *p, const char *type, const char *reason, const char *message)
{
    json_t *inv =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kind", "Pod", "apiVersion", "v1", "namespace", p->ns, "name",
                  p->name, "uid", p->uid, "resourceVersion", p->resource_version ? p->resource_version : "");
    post_event(w, p->ns, inv, type, reason, message, p->name);
}

void writer_pod_event_by_name(api_writer_t *w, const char *ns, const char *name, const char *uid, const char *type,
                              const char *reason, const char *message)
{
    pod_t p;
    memset(&p, 0, sizeof(p));
    p.ns = (char *)ns;
    p.name = (char *)name;
    p.uid = (char *)uid;
    writer_pod_event(w, &p, type, reason, message);
}

void writer_pool_event(api_writer_t *w, const char *pool, const char *uid, const char *type, const char *reason,
                       const char *message)
{
    json_t *inv = json_pack("{s:s, s:s, s:s, s:s}", "kind", "Pool", "apiVersion", "resource.aibee.cn/v1alpha1", "name",
                            pool, "uid", uid);
    /* Cluster-scoped objects' events live in "default", as kubectl expects. */
    post_event(w, "default", inv, type, reason, message, pool);
}

static void pod_status_patch(api_writer_t *w, const pod_t *p, json_t *status)
{
    json_t *patch = json_pack("{s:o}", "status", status);
    char *path = kube_pod_path(p->ns, p->name, "status");
    enqueue(w, "PATCH", path, "application/strategic-merge-patch+json", json_dumps(patch, JSON_COMPACT), 0);
    free(path);
    json_decref(patch);
}

void writer_unscheduled_condition(api_writer_t *w, const pod_t *p, const char *reason, const char *message)
{
    char now[64];
    util_rfc3339(util_wall_ms(), now, sizeof(now));
    json_t *st = json_pack("{s:[{s:s, s:s, s:s, s:s, s:s, s:n}]}", "conditions", "type", "PodScheduled", "status",
                           "False", "reason", reason, "message", message, "lastTransitionTime", now, "lastProbeTime");
    pod_status_patch(w, p, st);
}

void writer_unschedulable_condition(api_writer_t *w, const pod_t *p, const char *message)
{
    writer_unscheduled_condition(w, p, "Unschedulable", message);
}

void writer_nominate(api_writer_t *w, const pod_t *p, const char *node)
{
    /* NULL clears it (a JSON null in a merge patch deletes the field). */
    pod_status_patch(w, p,
                     node ? json_pack("{s:s}", "nominatedNodeName", node) : json_pack("{s:n}", "nominatedNodeName"));
}

void writer_patch(api_writer_t *w, const char *path, const char *content_type, char *body)
{
    enqueue(w, "PATCH", path, content_type, body, 0);
}
