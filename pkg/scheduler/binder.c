/* binder.c -- binding off the pool threads: a few workers run PreBind (the
 * volume writes, a GPU fraction's reservation pods), then hand the POST
 * pods/<name>/binding to kube_async, which keeps up to bind_workers of them
 * in flight as HTTP/2 streams, so the pool threads never wait on the API
 * server. A failed bind forgets the assumption and gives the pod's queue
 * item back to its home pool's backoff queue: the attempt counts and the pod
 * keeps its age. */
#include <stdlib.h>
#include <string.h>

#include "kube/async.h"
#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"

/* PreBind usually costs nothing; when it writes (claims, reservation pods)
 * a few workers keep other pods' bindings moving. */
#define PREBIND_WORKERS 4

typedef struct bind_job {
    struct bind_job *next;
    binder_t *b;
    queue_item_t *it; /* owned; it->pod is the pod being bound */
    char *node;
    char *lender;
} bind_job_t;

struct binder {
    scheduler_t *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bind_job_t *head, *tail;
    int closing;
    pthread_t *threads;
    int nthreads;
    kube_async_t *async; /* the Bindings in flight */
};

static void job_free(bind_job_t *j)
{
    queue_item_free(j->it);
    free(j->node);
    free(j->lender);
    free(j);
}

static void observe_latency(scheduler_t *s, double secs)
{
    stats_lock(s);
    s->stats.e2e_latency_sum_s += secs;
    stats_unlock(s);
    if (s->opts.on_bound)
        s->opts.on_bound(s->opts.on_bound_ud, secs);
}

/* gpu: the slots and reservation pods of a GPU fraction (taken), or NULL. */
static char *binding_body(const bind_job_t *j, json_t *gpu)
{
    const pod_t *pod = j->it->pod;
    /* metadata.uid is a precondition (as kube-scheduler sends it): a pod
     * deleted and recreated under the same name while this Binding waited
     * was never filtered for the node, and the API server refuses it (409)
     * instead of binding the new pod there. */
    json_t *b = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind", "Binding",
                          "metadata", "name", pod->name, "namespace", pod->ns, "uid", pod->uid, "target", "apiVersion",
                          "v1", "kind", "Node", "name", j->node);
    /* The API server copies a Binding's annotations onto the pod: the
     * borrow mark and a fraction's GPU slots cost no extra request, and the
     * pod is never seen bound without them. */
    json_t *ann = gpu ? gpu : json_object();
    if (j->lender)
        json_object_set_new(ann, BORROWED_ANNOTATION, json_string(j->lender));
    if (json_object_size(ann) > 0)
        json_object_set(json_object_get(b, "metadata"), "annotations", ann);
    json_decref(ann);
    char *txt = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return txt;
}

/* The item goes back to its home pool to wait out a backoff. */
static void retry_later(scheduler_t *s, bind_job_t *j)
{
    queue_item_t *it = j->it;
    j->it = NULL;
    sched_pool_t *H = pools_get(s, pools_home_id(s, it->pod));
    if (!H)
        H = pools_get(s, DEFAULT_POOL_ID);
    it->borrower = 0;
    it->round_marks = 0;
    if (H)
        queue_push_backoff(H->q, it);
    else
        queue_item_free(it);
}

/* The API server refused the Binding because the pod has scheduling gates
 * (kube's "pod x has non-empty .spec.schedulingGates", a 409). It is held,
 * not retried: its gates' removal, an update, enqueues it. Unless the pod
 * we know changed since we decided and shows no gate: that update came
 * already, so it waits out a backoff and is tried once more. */
static void refused_as_gated(scheduler_t *s, bind_job_t *j)
{
    const pod_t *pod = j->it->pod;
    cache_pod_state_t st;
    pod_t *cur = cache_get_pod(s->cache, pod->uid, &st);
    int newer = cur && st == CPOD_PENDING && !sched_kept_out(s, cur) &&
                strcmp(cur->resource_version ? cur->resource_version : "",
                       pod->resource_version ? pod->resource_version : "") != 0;
    pod_unref(cur);
    if (newer) {
        LOG_I("bind pod=%s: refused as gated, but its gates went since; retrying after a backoff", pod->key);
        retry_later(s, j);
        return;
    }
    LOG_I("bind pod=%s: the API server says it has scheduling gates; held until they go", pod->key);
    gates_hold_uid(s, pod->uid);
}

/* A Binding that did not take (status 0: no answer or PreBind failed). */
static void bind_failed(scheduler_t *s, bind_job_t *j, long status, const char *err)
{
    const pod_t *pod = j->it->pod;
    stats_add(s, &s->stats.bind_errors, 1);
    int freed = cache_forget(s->cache, pod->uid);
    sched_rows_unreserve(s, pod);
    /* The room it was assumed on is free again: the pods that failed
     * against it may fit now (this item is in no queue; a retry below
     * waits out its own backoff). */
    if (freed)
        sched_event(s, SCHED_EV_POD_FORGOTTEN, pod, j->node, "AssumedPodForgotten");
    if (status == 404) {
        LOG_D("bind pod=%s: pod is gone", pod->key);
    } else if (status == 409 && err && strstr(err, "schedulingGates")) {
        refused_as_gated(s, j);
    } else if (status == 409) {
        /* Already bound (by us before a restart, or by someone else), or
         * replaced: the UID precondition failed because the pod was deleted
         * and recreated under its name. Either way this item is done, never
         * retried: the watch brings the truth, and a new pod arrives as a
         * new pending pod to be filtered on its own. */
        LOG_I("bind pod=%s node=%s: conflict, pod %s", pod->key, j->node,
              err && strstr(err, "UID") ? "replaced by a new one of the same name" : "already bound");
    } else {
        /* 403, 422, 5xx, a timeout: retry after the pod's backoff, not
         * at once, and count the attempt (kube's handleSchedulingFailure). */
        LOG_W("bind pod=%s node=%s failed: %s; retrying after a backoff", pod->key, j->node, err);
        retry_later(s, j);
    }
}

/* The Binding's answer, on the async thread: j is ours to free. */
static void bind_done(void *ud, const kube_response_t *resp, const char *transport_err)
{
    bind_job_t *j = ud;
    scheduler_t *s = j->b->s;
    const pod_t *pod = j->it->pod;
    long status = resp->status;
    if (status >= 200 && status < 300) {
        stats_add(s, &s->stats.binds_ok, 1);
        observe_latency(s, (double)(util_now_ms() - j->it->first_ms) / 1000.0);
        LOG_D("bound pod=%s node=%s%s%s", pod->key, j->node, j->lender ? " lender=" : "", j->lender ? j->lender : "");
        char msg[512];
        snprintf(msg, sizeof(msg), "Successfully assigned %s to %s", pod->key, j->node);
        writer_pod_event(s->writer, pod, "Normal", "Scheduled", msg);
        sched_rows_post_bind(s, pod, j->node, j->lender);
    } else {
        char err[512];
        if (transport_err)
            snprintf(err, sizeof(err), "%s", transport_err);
        else
            snprintf(err, sizeof(err), "HTTP %ld: %.200s", status, resp->body);
        bind_failed(s, j, status, err);
    }
    job_free(j);
}

/* A pod a pre_enqueue row keeps out is never bound, even one placed before
 * an update showed why (the API forbids adding gates, but a stand-in may
 * serve anything; the informer marks it held, as the cache keeps the
 * object being bound): its assumption is undone and it waits, held.
 * Takes j when it returns 1. */
static int held_back(scheduler_t *s, bind_job_t *j)
{
    const pod_t *pod = j->it->pod;
    if (!gates_is_held(s, pod->uid) && !gates_keep_out(s, pod))
        return 0;
    LOG_I("bind pod=%s node=%s: not bound, it is kept out of scheduling", pod->key, j->node);
    int freed = cache_forget(s->cache, pod->uid);
    sched_rows_unreserve(s, pod);
    if (freed)
        sched_event(s, SCHED_EV_POD_FORGOTTEN, pod, j->node, "AssumedPodForgotten");
    job_free(j);
    return 1;
}

/* Runs on a worker: PreBind, then the Binding goes out without waiting. */
static void bind_one(scheduler_t *s, bind_job_t *j)
{
    const pod_t *pod = j->it->pod;
    if (scheduler_fenced(s)) {
        /* Decided while leading, but the lease is gone: the new leader
         * decides again from the API's truth. Never drained. */
        LOG_D("fenced: bind pod=%s node=%s dropped", pod->key, j->node);
        job_free(j);
        return;
    }
    char err[256] = "";
    if (held_back(s, j))
        return;
    /* PreBind, row by row (the claims' writes, whose wait the volume
     * waiter does off this worker, taking the item and resubmitting; a GPU
     * fraction's reservation pods). */
    json_t *ann = NULL;
    int n = 0, rc = PREBIND_READY;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < n && rc == PREBIND_READY; i++)
        if (ext[i].pre_bind)
            rc = ext[i].pre_bind(&s->rows[i], &j->it, j->node, j->lender, &ann, err, sizeof(err));
    if (rc == PREBIND_WAITING) {
        json_decref(ann);
        job_free(j);
        return;
    }
    if (rc != PREBIND_READY) {
        json_decref(ann);
        bind_failed(s, j, 0, err);
        job_free(j);
        return;
    }
    char *path = kube_pod_path(pod->ns, pod->name, "binding");
    kube_async_submit(j->b->async, "POST", path, NULL, binding_body(j, ann), bind_done, j);
    free(path);
}

/* The next queued job, or NULL (binder's mutex held). */
static bind_job_t *pop_job(binder_t *b)
{
    bind_job_t *j = b->head;
    if (j) {
        b->head = j->next;
        if (!b->head)
            b->tail = NULL;
        __atomic_sub_fetch(&b->s->bind_backlog, 1, __ATOMIC_RELAXED);
    }
    return j;
}

static void *binder_main(void *arg)
{
    binder_t *b = arg;
    util_thread_name("binder");
    for (;;) {
        lo_mutex_lock(&b->mu, LO_BINDER);
        while (!b->head && !b->closing)
            pthread_cond_wait(&b->cv, &b->mu);
        bind_job_t *j = pop_job(b);
        lo_mutex_unlock(&b->mu, LO_BINDER);
        if (!j)
            break;         /* closing and drained */
        bind_one(b->s, j); /* takes j */
    }
    return NULL;
}

binder_t *binder_new(scheduler_t *s, int workers)
{
    binder_t *b = util_xcalloc(1, sizeof(*b));
    b->s = s;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    if (workers < 1)
        workers = 1;
    char err[256];
    /* bind_backlog counts the Bindings waiting for a slot too. */
    b->async = kube_async_new(s->kc, workers, &s->bind_backlog, err, sizeof(err));
    if (!b->async) {
        LOG_E("binder: %s", err);
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        free(b);
        return NULL;
    }
    int nworkers = workers < PREBIND_WORKERS ? workers : PREBIND_WORKERS;
    b->threads = util_xcalloc((size_t)nworkers, sizeof(*b->threads));
    for (int i = 0; i < nworkers; i++) {
        if (pthread_create(&b->threads[i], NULL, binder_main, b) != 0)
            break;
        b->nthreads++;
    }
    return b;
}

binder_t *binder_new_offline(scheduler_t *s)
{
    binder_t *b = util_xcalloc(1, sizeof(*b));
    b->s = s;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    char err[256];
    b->async = kube_async_new(s->kc, 1, &s->bind_backlog, err, sizeof(err));
    if (!b->async) {
        LOG_E("binder: %s", err);
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        free(b);
        return NULL;
    }
    return b;
}

int binder_drain(binder_t *b)
{
    int n = 0;
    for (;;) {
        lo_mutex_lock(&b->mu, LO_BINDER);
        bind_job_t *j = pop_job(b);
        lo_mutex_unlock(&b->mu, LO_BINDER);
        if (!j)
            return n;
        bind_one(b->s, j); /* takes j */
        n++;
    }
}

void binder_submit(binder_t *b, queue_item_t *it, const char *node, const char *lender)
{
    bind_job_t *j = util_xcalloc(1, sizeof(*j));
    j->b = b;
    j->it = it;
    j->node = util_strdup(node);
    j->lender = lender ? util_strdup(lender) : NULL;
    lo_mutex_lock(&b->mu, LO_BINDER);
    if (b->tail)
        b->tail->next = j;
    else
        b->head = j;
    b->tail = j;
    __atomic_add_fetch(&b->s->bind_backlog, 1, __ATOMIC_RELAXED);
    pthread_cond_signal(&b->cv);
    lo_mutex_unlock(&b->mu, LO_BINDER);
    sched_dash_changed(b->s);
}

/* Drains what is queued (binds already decided must not be lost on a clean
 * shutdown; a fenced scheduler drops them in bind_one), then joins. */
void binder_free(binder_t *b)
{
    if (!b)
        return;
    lo_mutex_lock(&b->mu, LO_BINDER);
    b->closing = 1;
    pthread_cond_broadcast(&b->cv);
    lo_mutex_unlock(&b->mu, LO_BINDER);
    for (int i = 0; i < b->nthreads; i++)
        pthread_join(b->threads[i], NULL);
    for (bind_job_t *j = b->head, *n; j; j = n) {
        n = j->next;
        __atomic_sub_fetch(&b->s->bind_backlog, 1, __ATOMIC_RELAXED);
        job_free(j);
    }
    kube_async_free(b->async); /* the Bindings already sent get their answers */
    free(b->threads);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
}
