/* informer.c -- one resource kind kept in sync by a thread: paginated LIST,
 * then WATCH with bookmarks, relist on 410, deletes synthesized after a
 * relist, backoff on errors. Remembers key -> resourceVersion only. */
#include "kube/informer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/hashmap.h"
#include "util/log.h"
#include "util/util.h"

#define LIST_LIMIT      500
#define BACKOFF_MIN_MS  500
#define BACKOFF_MAX_MS  30000
#define WATCH_TIMEOUT_S 300
#define WATCH_JITTER_S  60
#define RV_MAX          128
#define KEY_MAX         512

/* What the informer remembers of an object: which list generation saw it
 * last, and its resourceVersion (to skip unchanged objects on relist). */
typedef struct known {
    unsigned gen;
    char rv[];
} known_t;

struct informer {
    kube_client_t *c;
    char *path;
    /* Its handlers, in the order added (informer_add_handler). */
    informer_handler_fn fn[INFORMER_MAX_HANDLERS];
    void *ud[INFORMER_MAX_HANDLERS];
    int nfn;
    pthread_t th;
    int started;
    volatile int stop; /* atomic accesses only */

    pthread_mutex_t mu; /* synced, healthy, and sleeping with wake-up on stop */
    pthread_cond_t cv;
    int synced;
    int healthy; /* the last LIST or WATCH did not fail */

    /* Touched by the informer thread only. */
    hashmap_t *known;
    unsigned gen;
    char rv[RV_MAX];
    long warned; /* 404 or 403 said once; 0 when none is standing */
    unsigned long events;
    unsigned seed;
    unsigned long delivered; /* handler calls returned (atomic: read by other threads) */
};

static int stopping(informer_t *inf)
{
    return __atomic_load_n(&inf->stop, __ATOMIC_RELAXED);
}

informer_t *informer_new(kube_client_t *c, const char *path, const char *field_selector, informer_handler_fn fn,
                         void *ud)
{
    informer_t *inf = util_xcalloc(1, sizeof *inf);
    inf->c = c;
    if (fn)
        informer_add_handler(inf, fn, ud);
    sbuf_t p = { 0 };
    sbuf_puts(&p, path);
    if (field_selector && *field_selector) {
        char *e = util_urlencode(field_selector);
        sbuf_printf(&p, "%cfieldSelector=%s", strchr(path, '?') ? '&' : '?', e);
        free(e);
    }
    inf->path = p.data;
    inf->known = hashmap_new(64);
    inf->seed = (unsigned)util_now_us() ^ (unsigned)(uintptr_t)inf;
    pthread_mutex_init(&inf->mu, NULL);
    util_cond_init_monotonic(&inf->cv);
    return inf;
}

/* ---- bookkeeping ------------------------------------------------------ */

static int obj_key(json_t *obj, char *key, size_t n)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    if (!name || !*name)
        return -1;
    int w = ns && *ns ? snprintf(key, n, "%s/%s", ns, name) : snprintf(key, n, "%s", name);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

static const char *obj_rv(json_t *obj)
{
    const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    return rv ? rv : "";
}

/* Records key at rv; returns -1 if it was already known at exactly rv,
 * else 1 when it was known (a modify) or 0 when new (an add). */
static int remember(informer_t *inf, const char *key, const char *rv)
{
    known_t *k = hashmap_get(inf->known, key);
    if (k) {
        k->gen = inf->gen;
        if (!strcmp(k->rv, rv))
            return -1;
    }
    size_t n = strlen(rv) + 1;
    known_t *nk = util_xmalloc(sizeof *nk + n);
    nk->gen = inf->gen;
    memcpy(nk->rv, rv, n);
    free(hashmap_put(inf->known, key, nk));
    return k ? 1 : 0;
}

int informer_add_handler(informer_t *inf, informer_handler_fn fn, void *ud)
{
    if (inf->started || inf->nfn == INFORMER_MAX_HANDLERS)
        return -1;
    inf->fn[inf->nfn] = fn;
    inf->ud[inf->nfn++] = ud;
    return 0;
}

const char *informer_path(const informer_t *inf)
{
    return inf->path;
}

static void deliver(informer_t *inf, kube_event_type_t t, const char *key, json_t *obj)
{
    for (int i = 0; i < inf->nfn; i++)
        inf->fn[i](inf->ud[i], t, key, obj);
    __atomic_add_fetch(&inf->delivered, 1, __ATOMIC_RELAXED);
}

unsigned long informer_delivered(const informer_t *inf)
{
    return inf ? __atomic_load_n(&inf->delivered, __ATOMIC_RELAXED) : 0;
}

static int on_item(informer_t *inf, json_t *obj, int deleted)
{
    char key[KEY_MAX];
    if (obj_key(obj, key, sizeof key) != 0) {
        LOG_W("informer %s: object without a usable name, skipped", inf->path);
        return 0;
    }
    if (deleted) {
        free(hashmap_remove(inf->known, key));
        deliver(inf, KUBE_DELETED, key, obj);
        return 0;
    }
    int r = remember(inf, key, obj_rv(obj));
    if (r >= 0)
        deliver(inf, r ? KUBE_MODIFIED : KUBE_ADDED, key, obj);
    return 0;
}

static int list_cb(json_t *item, void *ud)
{
    informer_t *inf = ud;
    if (stopping(inf))
        return 1;
    return on_item(inf, item, 0);
}

static void set_healthy(informer_t *inf, int h)
{
    pthread_mutex_lock(&inf->mu);
    inf->healthy = h;
    pthread_mutex_unlock(&inf->mu);
}

static int watch_cb(const char *type, json_t *obj, void *ud)
{
    informer_t *inf = ud;
    if (stopping(inf))
        return 1;
    inf->events++;
    /* Only this thread writes healthy: reading it here needs no lock. */
    if (!inf->healthy)
        set_healthy(inf, 1);
    if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED"))
        return on_item(inf, obj, 0);
    if (!strcmp(type, "DELETED"))
        return on_item(inf, obj, 1);
    return 0; /* BOOKMARK: the client already took its rv */
}

/* After a full LIST: whatever was not seen in it is gone. */
static void synthesize_deletes(informer_t *inf)
{
    size_t n = 0, cap = 0, it = 0;
    char **gone = NULL;
    const char *k;
    void *v;
    while (hashmap_next(inf->known, &it, &k, &v)) {
        if (((known_t *)v)->gen == inf->gen)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            gone = util_xrealloc(gone, cap * sizeof *gone);
        }
        gone[n++] = util_strdup(k);
    }
    for (size_t i = 0; i < n; i++) {
        free(hashmap_remove(inf->known, gone[i]));
        if (!stopping(inf))
            deliver(inf, KUBE_DELETED, gone[i], NULL);
        free(gone[i]);
    }
    free(gone);
}

/* ---- the thread ------------------------------------------------------- */

/* Sleeps ms unless stopped first; returns nonzero when stopping. */
static int nap(informer_t *inf, int ms)
{
    struct timespec ts;
    util_deadline(CLOCK_MONOTONIC, ms, &ts);
    pthread_mutex_lock(&inf->mu);
    while (!stopping(inf))
        if (pthread_cond_timedwait(&inf->cv, &inf->mu, &ts) != 0)
            break;
    pthread_mutex_unlock(&inf->mu);
    return stopping(inf);
}

static void backoff(informer_t *inf, int *ms)
{
    nap(inf, *ms);
    *ms = *ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : *ms * 2;
}

static void report(informer_t *inf, const char *what, long status, const char *err)
{
    /* A CRD not installed yet (404), a permission not granted (403): say so
     * once, then keep quiet while it stands. */
    if (status == 404 || status == 403) {
        if (inf->warned != status)
            LOG_W("informer %s: %s", inf->path,
                  status == 404 ? "not found (404), retrying until it exists"
                                : "forbidden (403), retrying until allowed");
        else
            LOG_D("informer %s: still %ld", inf->path, status);
        inf->warned = status;
        return;
    }
    LOG_W("informer %s: %s failed: %s", inf->path, what, err);
}

static int do_list(informer_t *inf)
{
    char err[512];
    long status = 0;
    char rv[RV_MAX];
    inf->gen++;
    if (kube_list(inf->c, inf->path, LIST_LIMIT, list_cb, inf, rv, sizeof rv, &status, err, sizeof err) != 0) {
        if (!stopping(inf))
            report(inf, "list", status, err);
        set_healthy(inf, 0);
        return -1;
    }
    synthesize_deletes(inf);
    memcpy(inf->rv, rv, sizeof rv);
    if (inf->warned)
        LOG_I("informer %s: available now", inf->path);
    inf->warned = 0;
    pthread_mutex_lock(&inf->mu);
    if (!inf->synced)
        LOG_D("informer %s: synced (%zu objects, rv %s)", inf->path, hashmap_len(inf->known), rv);
    inf->synced = 1;
    inf->healthy = 1;
    pthread_cond_broadcast(&inf->cv);
    pthread_mutex_unlock(&inf->mu);
    return 0;
}

static void *informer_main(void *arg)
{
    informer_t *inf = arg;
    /* "inf-" and the resource: the path's last segment before any query. */
    size_t q = strcspn(inf->path, "?");
    const char *kind = inf->path + q;
    while (kind > inf->path && kind[-1] != '/')
        kind--;
    util_thread_name("inf-%.*s", (int)(inf->path + q - kind), kind);
    int need_list = 1, wait_ms = BACKOFF_MIN_MS;
    while (!stopping(inf)) {
        if (need_list) {
            if (do_list(inf) != 0) {
                backoff(inf, &wait_ms);
                continue;
            }
            need_list = 0;
            wait_ms = BACKOFF_MIN_MS;
        }
        char err[512];
        long status = 0;
        int timeout = WATCH_TIMEOUT_S + (int)(rand_r(&inf->seed) % WATCH_JITTER_S);
        unsigned long before = inf->events;
        int64_t t0 = util_now_ms();
        int rc = kube_watch(inf->c, inf->path, inf->rv, sizeof inf->rv, timeout, watch_cb, inf, &inf->stop, &status,
                            err, sizeof err);
        if (stopping(inf))
            break;
        if (status == 410) {
            LOG_D("informer %s: resourceVersion %s gone (410), relisting", inf->path, inf->rv);
            need_list = 1;
            continue;
        }
        if (rc != 0) {
            set_healthy(inf, 0);
            report(inf, "watch", status, err);
            if (status == 404)
                need_list = 1;
            backoff(inf, &wait_ms);
            continue;
        }
        /* A stream that ends at once with nothing in it would spin. */
        if (inf->events == before && util_now_ms() - t0 < 1000)
            backoff(inf, &wait_ms);
        else
            wait_ms = BACKOFF_MIN_MS;
    }
    return NULL;
}

int informer_start(informer_t *inf)
{
    if (inf->started)
        return 0;
    if (pthread_create(&inf->th, NULL, informer_main, inf) != 0)
        return -1;
    inf->started = 1;
    return 0;
}

int informer_wait_synced(informer_t *inf, int timeout_ms)
{
    struct timespec ts;
    util_deadline(CLOCK_MONOTONIC, timeout_ms, &ts);
    pthread_mutex_lock(&inf->mu);
    while (!inf->synced)
        if (pthread_cond_timedwait(&inf->cv, &inf->mu, &ts) != 0)
            break;
    int s = inf->synced;
    pthread_mutex_unlock(&inf->mu);
    return s;
}

int informer_healthy(informer_t *inf)
{
    pthread_mutex_lock(&inf->mu);
    int h = inf->synced && inf->healthy;
    pthread_mutex_unlock(&inf->mu);
    return h;
}

int informer_has_synced(informer_t *inf)
{
    pthread_mutex_lock(&inf->mu);
    int s = inf->synced;
    pthread_mutex_unlock(&inf->mu);
    return s;
}

void informer_request_stop(informer_t *inf)
{
    if (!inf || !inf->started)
        return;
    pthread_mutex_lock(&inf->mu);
    __atomic_store_n(&inf->stop, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&inf->cv);
    pthread_mutex_unlock(&inf->mu);
}

void informer_stop(informer_t *inf)
{
    if (!inf || !inf->started)
        return;
    informer_request_stop(inf);
    pthread_join(inf->th, NULL);
    inf->started = 0;
}

void informer_free(informer_t *inf)
{
    if (!inf)
        return;
    informer_stop(inf);
    size_t it = 0;
    const char *k;
    void *v;
    while (hashmap_next(inf->known, &it, &k, &v))
        free(v);
    hashmap_free(inf->known);
    pthread_cond_destroy(&inf->cv);
    pthread_mutex_destroy(&inf->mu);
    free(inf->path);
    free(inf);
}
