/* async.c -- many requests in flight from one thread: a libcurl multi handle
 * whose transfers multiplex as HTTP/2 streams over the client's connection.
 * A burst of Bindings then costs a few wake-ups per batch of answers instead
 * of a thread blocked in poll() per request (docs/benchmarks.md, "Where the
 * time goes"). */
#include "kube/async.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kube/client_internal.h"
#include "util/log.h"
#include "util/util.h"

#define MAX_ASYNC_RESPONSE (1u << 20) /* answers to writes are one object */
#define IDLE_POLL_MS       1000

typedef struct areq {
    struct areq *next;
    char *method, *path, *ctype, *body; /* owned */
    kube_async_done_fn done;
    void *ud;
    /* on the wire (thread only) */
    CURL *h;
    struct curl_slist *hs;
    char *url;
    char ebuf[CURL_ERROR_SIZE];
    sbuf_t resp;
    int overflow;
    int reserved;          /* took its rate-limiter token */
    int64_t not_before_us; /* when the token allows sending */
    int64_t start_us;
} areq_t;

struct kube_async {
    kube_client_t *c;
    CURLM *m;
    pthread_t th;
    int max_inflight;

    pthread_mutex_t mu; /* the submitted list, closing, pending */
    areq_t *head, *tail;
    int closing;
    int pending;             /* submitted, done not yet run */
    pthread_cond_t answered; /* pending went down */
    int *waiting;            /* the owner's count of requests not on the wire (atomic) */

    /* The async thread's own. */
    areq_t *wait_head, *wait_tail; /* taken, waiting for a token or a slot */
    int inflight;
    CURL **idle; /* reusable easy handles */
    int nidle;
    int inline_only; /* an in-process client's: no thread, no curl */
};

static void req_free(areq_t *r)
{
    free(r->method);
    free(r->path);
    free(r->ctype);
    free(r->body);
    free(r->url);
    curl_slist_free_all(r->hs);
    sbuf_free(&r->resp);
    free(r);
}

static size_t resp_write(char *p, size_t sz, size_t n, void *ud)
{
    areq_t *r = ud;
    size_t len = sz * n;
    if (r->resp.len + len > MAX_ASYNC_RESPONSE) {
        r->overflow = 1;
        return 0;
    }
    sbuf_append(&r->resp, p, len);
    return len;
}

/* Runs done and frees r; its handle goes back to the idle set. */
static void finish(kube_async_t *a, areq_t *r, long status, const char *err)
{
    if (r->h) {
        curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, NULL);
        a->idle[a->nidle++] = r->h;
        r->h = NULL;
    }
    kube_response_t resp = { .status = err ? 0 : status, .body = r->resp.data ? r->resp.data : "", .len = r->resp.len };
    r->done(r->ud, &resp, err);
    req_free(r);
    pthread_mutex_lock(&a->mu);
    a->pending--;
    pthread_cond_broadcast(&a->answered);
    pthread_mutex_unlock(&a->mu);
}

static void start(kube_async_t *a, areq_t *r)
{
    char err[300];
    if (a->waiting)
        __atomic_sub_fetch(a->waiting, 1, __ATOMIC_RELAXED);
    CURL *h = a->nidle ? a->idle[--a->nidle] : curl_easy_init();
    if (!h) {
        snprintf(err, sizeof err, "%s %s: cannot create a curl handle", r->method, r->path);
        finish(a, r, 0, err);
        return;
    }
    r->h = h;
    if (kube_client_prepare(a->c, h, r->method, r->path, r->ctype, r->body, &r->hs, &r->url, r->ebuf) != 0) {
        snprintf(err, sizeof err, "%s %s: unsupported method", r->method, r->path);
        finish(a, r, 0, err);
        return;
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, resp_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_PRIVATE, r);
    /* Wait for the connection's protocol rather than opening another: an
     * HTTP/2 connection takes this request as one more stream. */
    curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
    r->start_us = util_now_us();
    if (curl_multi_add_handle(a->m, h) != CURLM_OK) {
        snprintf(err, sizeof err, "%s %s: cannot start the request", r->method, r->path);
        finish(a, r, 0, err);
        return;
    }
    a->inflight++;
}

static void collect(kube_async_t *a)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(a->m, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *h = msg->easy_handle;
        CURLcode rc = msg->data.result;
        areq_t *r = NULL;
        curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&r);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_multi_remove_handle(a->m, h);
        a->inflight--;
        kube_client_count(a->c, r->start_us, rc, status);
        char err[CURL_ERROR_SIZE + 300];
        if (rc != CURLE_OK)
            kube_client_transport_error(err, sizeof err, r->method, r->path, rc, r->ebuf,
                                        r->overflow ? MAX_ASYNC_RESPONSE : 0);
        finish(a, r, status, rc == CURLE_OK ? NULL : err);
    }
}

/* Moves what was submitted to the wait list; returns closing. */
static int take_submitted(kube_async_t *a)
{
    pthread_mutex_lock(&a->mu);
    if (a->head) {
        if (a->wait_tail)
            a->wait_tail->next = a->head;
        else
            a->wait_head = a->head;
        a->wait_tail = a->tail;
        a->head = a->tail = NULL;
    }
    int closing = a->closing;
    pthread_mutex_unlock(&a->mu);
    return closing;
}

/* Starts waiting requests while slots and tokens allow; returns the poll
 * timeout until the next token, in ms. */
static int start_ready(kube_async_t *a)
{
    while (a->wait_head && a->inflight < a->max_inflight) {
        areq_t *r = a->wait_head;
        int64_t now = util_now_us();
        if (!r->reserved) {
            r->not_before_us = now + kube_client_reserve(a->c);
            r->reserved = 1;
        }
        if (r->not_before_us > now)
            return (int)((r->not_before_us - now + 999) / 1000);
        a->wait_head = r->next;
        if (!a->wait_head)
            a->wait_tail = NULL;
        r->next = NULL;
        start(a, r);
    }
    return IDLE_POLL_MS;
}

static void *async_main(void *arg)
{
    kube_async_t *a = arg;
    util_thread_name("kube-async");
    for (;;) {
        int closing = take_submitted(a);
        int timeout = start_ready(a);
        int running = 0;
        curl_multi_perform(a->m, &running);
        collect(a);
        if (closing && !a->wait_head && a->inflight == 0) {
            pthread_mutex_lock(&a->mu);
            int more = a->head != NULL;
            pthread_mutex_unlock(&a->mu);
            if (!more)
                break;
            continue;
        }
        /* Answers collected free slots: fill them before sleeping. */
        if (a->wait_head && a->inflight < a->max_inflight &&
            (!a->wait_head->reserved || a->wait_head->not_before_us <= util_now_us()))
            continue;
        if (!a->wait_head || a->inflight >= a->max_inflight)
            timeout = IDLE_POLL_MS;
        curl_multi_poll(a->m, NULL, 0, timeout, NULL);
    }
    return NULL;
}

kube_async_t *kube_async_new(kube_client_t *c, int max_inflight, int *waiting, char *err, size_t errlen)
{
    kube_async_t *a = util_xcalloc(1, sizeof *a);
    a->c = c;
    a->waiting = waiting;
    a->max_inflight = max_inflight > 0 ? max_inflight : 1;
    a->idle = util_xcalloc((size_t)a->max_inflight, sizeof *a->idle);
    if (kube_client_is_inproc(c)) {
        /* Nothing goes on a wire: submit runs each request inline. */
        a->inline_only = 1;
        pthread_mutex_init(&a->mu, NULL);
        pthread_cond_init(&a->answered, NULL);
        return a;
    }
    a->m = curl_multi_init();
    if (!a->m) {
        util_errf(err, errlen, "kube async: curl_multi_init failed");
        free(a->idle);
        free(a);
        return NULL;
    }
    curl_multi_setopt(a->m, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(a->m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)a->max_inflight);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->answered, NULL);
    if (pthread_create(&a->th, NULL, async_main, a) != 0) {
        util_errf(err, errlen, "kube async: cannot start its thread");
        pthread_cond_destroy(&a->answered);
        pthread_mutex_destroy(&a->mu);
        curl_multi_cleanup(a->m);
        free(a->idle);
        free(a);
        return NULL;
    }
    return a;
}

/* An in-process client's request: answered and done on the caller's
 * thread, before kube_async_submit returns. */
static void submit_inline(kube_async_t *a, areq_t *r)
{
    char err[300];
    kube_response_t resp;
    int rc = kube_request(a->c, r->method, r->path, r->ctype, r->body, &resp, err, sizeof err);
    if (rc != 0)
        resp.status = 0;
    r->done(r->ud, &resp, rc != 0 ? err : NULL);
    kube_response_free(&resp);
    req_free(r);
}

void kube_async_submit(kube_async_t *a, const char *method, const char *path, const char *content_type, char *body,
                       kube_async_done_fn done, void *ud)
{
    areq_t *r = util_xcalloc(1, sizeof *r);
    r->method = util_strdup(method);
    r->path = util_strdup(path);
    r->ctype = content_type ? util_strdup(content_type) : NULL;
    r->body = body;
    r->done = done;
    r->ud = ud;
    if (a->inline_only) {
        submit_inline(a, r);
        return;
    }
    pthread_mutex_lock(&a->mu);
    /* A list that was not empty has a wake-up on its way already. */
    int wake = a->head == NULL;
    if (a->tail)
        a->tail->next = r;
    else
        a->head = r;
    a->tail = r;
    a->pending++;
    pthread_mutex_unlock(&a->mu);
    if (a->waiting)
        __atomic_add_fetch(a->waiting, 1, __ATOMIC_RELAXED);
    if (wake)
        curl_multi_wakeup(a->m);
}

int kube_async_wait_below(kube_async_t *a, int n, int timeout_ms)
{
    struct timespec ts;
    util_deadline(CLOCK_REALTIME, timeout_ms, &ts);
    pthread_mutex_lock(&a->mu);
    while (a->pending >= n)
        if (pthread_cond_timedwait(&a->answered, &a->mu, &ts) != 0)
            break;
    int p = a->pending;
    pthread_mutex_unlock(&a->mu);
    return p;
}

void kube_async_free(kube_async_t *a)
{
    if (!a)
        return;
    if (a->inline_only) {
        free(a->idle);
        pthread_cond_destroy(&a->answered);
        pthread_mutex_destroy(&a->mu);
        free(a);
        return;
    }
    pthread_mutex_lock(&a->mu);
    a->closing = 1;
    pthread_mutex_unlock(&a->mu);
    curl_multi_wakeup(a->m);
    pthread_join(a->th, NULL);
    for (int i = 0; i < a->nidle; i++)
        curl_easy_cleanup(a->idle[i]);
    free(a->idle);
    curl_multi_cleanup(a->m);
    pthread_cond_destroy(&a->answered);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
