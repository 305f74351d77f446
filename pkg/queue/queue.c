/* queue.c -- one pool's scheduling queue: activeQ/backoffQ heaps, the
 * unschedulable set, in-flight marks (kube-scheduler's PriorityQueue). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "queue/queue.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/util.h"
#include "util/lockorder.h"

enum { Q_ACTIVE, Q_BACKOFF, Q_UNSCHED };

/* A queued item and where it sits; pos is its index in the heap or array. */
typedef struct qent {
    queue_item_t *it;
    int where;
    int pos;
} qent_t;

typedef int (*heap_less_fn)(const sched_queue_t *q, const qent_t *a, const qent_t *b);

typedef struct heap {
    qent_t **a;
    int n, cap;
    heap_less_fn less;
    int live_pos; /* an active heap's slot in live[] while non-empty */
} heap_t;

/* What one tenant's pods in this queue ask for. */
typedef struct tsum {
    resources_t req;
    int pods;
} tsum_t;

/* What happened to a popped pod while the caller had it. */
typedef struct inflight {
    int deleted;
    int tenant;     /* counted in tsums with orig's requests */
    pod_t *orig;    /* the object when popped, one ref: the baseline */
    pod_t *updated; /* newest object seen while out, one ref, or NULL */
    int changed;    /* some update changed what scheduling looks at */
    int moved;      /* a move event for this pod came while it was out (queue_move_matching) */
} inflight_t;

struct sched_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    queue_opts_t o;
    heap_t *act; /* activeQ: one heap per tenant id, by id */
    int nact;
    int *live; /* tenant ids whose heap is non-empty */
    int nlive;
    int nactive; /* items in every activeQ heap */
    tsum_t *tsums;
    int ntsums;
    heap_t backoff;
    qent_t **unsched; /* unordered; qent.pos is the slot */
    int nunsched, capunsched;
    int64_t unsched_due; /* earliest time a flush may be due (may be stale-early) */
    hashmap_t *index;    /* uid -> qent_t*, every queued item */
    hashmap_t *inflight; /* uid -> inflight_t*, every popped item */
    uint64_t cycle;      /* bumped at each pop; items carry theirs */
    uint64_t move_cycle; /* cycle at the last move event, 0 = none */
    int closed;
};

/* ---------------------------------------------------------------- items */

void queue_item_free(queue_item_t *it)
{
    if (!it)
        return;
    pod_unref(it->pod);
    free(it->last_message);
    free(it);
}

int queue_default_less(const queue_item_t *a, const queue_item_t *b, void *ud)
{
    (void)ud;
    if (a->borrower != b->borrower)
        return !a->borrower;
    if (a->pod->priority != b->pod->priority)
        return a->pod->priority > b->pod->priority;
    return a->first_ms < b->first_ms;
}

static int64_t backoff_duration(const sched_queue_t *q, int attempts)
{
    int64_t d = q->o.initial_backoff_ms;
    for (int i = 1; i < attempts && d < q->o.max_backoff_ms; i++)
        d *= 2;
    return d > q->o.max_backoff_ms ? q->o.max_backoff_ms : d;
}

/* --------------------------------------------------------------- heaps */

static int active_less(const sched_queue_t *q, const qent_t *a, const qent_t *b)
{
    return q->o.less(a->it, b->it, q->o.less_ud);
}

static int backoff_less(const sched_queue_t *q, const qent_t *a, const qent_t *b)
{
    (void)q;
    if (a->it->backoff_until != b->it->backoff_until)
        return a->it->backoff_until < b->it->backoff_until;
    return a->it->first_ms < b->it->first_ms;
}

static void heap_swap(heap_t *h, int i, int j)
{
    qent_t *t = h->a[i];
    h->a[i] = h->a[j];
    h->a[j] = t;
    h->a[i]->pos = i;
    h->a[j]->pos = j;
}

static void heap_up(const sched_queue_t *q, heap_t *h, int i)
{
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!h->less(q, h->a[i], h->a[p]))
            break;
        heap_swap(h, i, p);
        i = p;
    }
}

static void heap_down(const sched_queue_t *q, heap_t *h, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->less(q, h->a[l], h->a[m]))
            m = l;
        if (r < h->n && h->less(q, h->a[r], h->a[m]))
            m = r;
        if (m == i)
            break;
        heap_swap(h, i, m);
        i = m;
    }
}

static void heap_push(const sched_queue_t *q, heap_t *h, qent_t *e)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->a = util_xrealloc(h->a, (size_t)h->cap * sizeof(*h->a));
    }
    e->pos = h->n;
    h->a[h->n++] = e;
    heap_up(q, h, e->pos);
}

static void heap_remove(const sched_queue_t *q, heap_t *h, int i)
{
    int last = --h->n;
    if (i != last) {
        h->a[i] = h->a[last];
        h->a[i]->pos = i;
        heap_down(q, h, i);
        heap_up(q, h, i);
    }
}

/* ------------------------------------------------ placement (lock held) */

/* When an unschedulable item is retried anyway: the flush, or its wake. */
static int64_t unsched_due_of(const sched_queue_t *q, const queue_item_t *it)
{
    int64_t due = it->queued_ms + q->o.unschedulable_max_ms;
    return it->wake_ms > 0 && it->wake_ms < due ? it->wake_ms : due;
}

static void unsched_push(sched_queue_t *q, qent_t *e)
{
    if (q->nunsched == q->capunsched) {
        q->capunsched = q->capunsched ? q->capunsched * 2 : 16;
        q->unsched = util_xrealloc(q->unsched, (size_t)q->capunsched * sizeof(*q->unsched));
    }
    e->pos = q->nunsched;
    q->unsched[q->nunsched++] = e;
    int64_t due = unsched_due_of(q, e->it);
    if (due < q->unsched_due)
        q->unsched_due = due;
}

static heap_t *act_heap(sched_queue_t *q, int tenant)
{
    if (tenant >= q->nact) {
        int n = tenant + 1;
        q->act = util_xrealloc(q->act, (size_t)n * sizeof(*q->act));
        q->live = util_xrealloc(q->live, (size_t)n * sizeof(*q->live));
        for (int i = q->nact; i < n; i++)
            q->act[i] = (heap_t){ .less = active_less, .live_pos = -1 };
        q->nact = n;
    }
    return &q->act[tenant];
}

static void active_push(sched_queue_t *q, qent_t *e)
{
    heap_t *h = act_heap(q, e->it->tenant);
    heap_push(q, h, e);
    q->nactive++;
    if (h->n == 1) {
        h->live_pos = q->nlive;
        q->live[q->nlive++] = e->it->tenant;
    }
}

static void active_remove(sched_queue_t *q, int tenant, int pos)
{
    heap_t *h = &q->act[tenant];
    heap_remove(q, h, pos);
    q->nactive--;
    if (h->n == 0) {
        int last = q->live[--q->nlive];
        q->live[h->live_pos] = last;
        q->act[last].live_pos = h->live_pos;
        h->live_pos = -1;
    }
}

static int tenant_of(sched_queue_t *q, const pod_t *pod)
{
    int t = q->o.tenant_of ? q->o.tenant_of(pod, q->o.tenant_ud) : 0;
    return t >= 0 && t < 1 << 20 ? t : 0;
}

/* Counts (sign +1) or uncounts a tenant's pod in tsums. */
static void tsum_adj(sched_queue_t *q, int tenant, const pod_t *pod, int sign)
{
    if (tenant >= q->ntsums) {
        int n = tenant + 1;
        q->tsums = util_xrealloc(q->tsums, (size_t)n * sizeof(*q->tsums));
        for (int i = q->ntsums; i < n; i++) {
            res_zero(&q->tsums[i].req);
            q->tsums[i].pods = 0;
        }
        q->ntsums = n;
    }
    tsum_t *t = &q->tsums[tenant];
    if (sign > 0) {
        res_add(&t->req, &pod->requests);
        t->pods++;
    } else {
        res_sub(&t->req, &pod->requests);
        if (--t->pods <= 0) {
            t->pods = 0;
            res_zero(&t->req); /* no drift once a tenant empties */
        }
    }
}

static void place(sched_queue_t *q, qent_t *e, int where)
{
    e->where = where;
    switch (where) {
    case Q_ACTIVE: active_push(q, e); break;
    case Q_BACKOFF: heap_push(q, &q->backoff, e); break;
    default: unsched_push(q, e); break;
    }
}

/* Takes e out of whichever structure holds it (it stays in the index). */
static void unplace(sched_queue_t *q, qent_t *e)
{
    switch (e->where) {
    case Q_ACTIVE: active_remove(q, e->it->tenant, e->pos); break;
    case Q_BACKOFF: heap_remove(q, &q->backoff, e->pos); break;
    default: {
        int last = --q->nunsched;
        if (e->pos != last) {
            q->unsched[e->pos] = q->unsched[last];
            q->unsched[e->pos]->pos = e->pos;
        }
        break;
    }
    }
}

/* New entry for an item; an existing entry for the same uid is dropped
 * (the newer item wins). */
static void enqueue(sched_queue_t *q, queue_item_t *it, int where)
{
    qent_t *e = util_xcalloc(1, sizeof(*e));
    e->it = it;
    it->tenant = tenant_of(q, it->pod);
    qent_t *old = hashmap_put(q->index, it->pod->uid, e);
    if (old) {
        unplace(q, old);
        tsum_adj(q, old->it->tenant, old->it->pod, -1);
        queue_item_free(old->it);
        free(old);
    }
    tsum_adj(q, it->tenant, it->pod, +1);
    place(q, e, where);
}

/* Removes uid from the queue; returns its item (caller owns) or NULL. */
static queue_item_t *dequeue(sched_queue_t *q, const char *uid)
{
    qent_t *e = hashmap_remove(q->index, uid);
    if (!e)
        return NULL;
    unplace(q, e);
    tsum_adj(q, e->it->tenant, e->it->pod, -1);
    queue_item_t *it = e->it;
    free(e);
    return it;
}

/* Where a reactivated pod goes: backoff while its backoff runs, else active. */
static int active_or_backoff(const queue_item_t *it, int64_t now)
{
    return it->backoff_until > now ? Q_BACKOFF : Q_ACTIVE;
}

static void flush_backoff(sched_queue_t *q, int64_t now)
{
    while (q->backoff.n > 0 && q->backoff.a[0]->it->backoff_until <= now) {
        qent_t *e = q->backoff.a[0];
        heap_remove(q, &q->backoff, 0);
        place(q, e, Q_ACTIVE);
    }
}

/* Unschedulable pods waiting longer than unschedulable_max_ms get retried. */
static void flush_unsched(sched_queue_t *q, int64_t now)
{
    if (now < q->unsched_due)
        return;
    q->unsched_due = INT64_MAX;
    for (int i = 0; i < q->nunsched;) {
        qent_t *e = q->unsched[i];
        int64_t due = unsched_due_of(q, e->it);
        if (due <= now) {
            unplace(q, e); /* swaps the last slot into i: do not advance */
            /* A wake is the time it was told to come back: no backoff on top. */
            int woke = e->it->wake_ms > 0 && e->it->wake_ms <= now;
            place(q, e, woke ? Q_ACTIVE : active_or_backoff(e->it, now));
        } else {
            if (due < q->unsched_due)
                q->unsched_due = due;
            i++;
        }
    }
}

static void inflight_free(inflight_t *f)
{
    if (!f)
        return;
    pod_unref(f->orig);
    pod_unref(f->updated);
    free(f);
}

/* ----------------------------------------------------- spec comparison */

static int str_eq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static int labels_eq(const labels_t *a, const labels_t *b)
{
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++)
        if (!str_eq(a->items[i].key, b->items[i].key) || !str_eq(a->items[i].value, b->items[i].value))
            return 0;
    return 1;
}

static int selector_eq(const selector_t *a, const selector_t *b)
{
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++) {
        const sel_req_t *x = &a->reqs[i], *y = &b->reqs[i];
        if (!str_eq(x->key, y->key) || x->op != y->op || x->on_field != y->on_field || x->nvalues != y->nvalues)
            return 0;
        for (int j = 0; j < x->nvalues; j++)
            if (!str_eq(x->values[j], y->values[j]))
                return 0;
    }
    return 1;
}

/* Did anything the filters look at change? Status-only updates (conditions
 * the scheduler itself writes after a failure) must not requeue the pod, or
 * every failure would retrigger itself, like kube's isPodUpdated. */
static int pod_spec_changed(const pod_t *a, const pod_t *b)
{
    if (a == b)
        return 0;
    if (a->priority != b->priority || !res_equal(&a->requests, &b->requests) || !labels_eq(&a->labels, &b->labels) ||
        !str_eq(a->pool, b->pool) || a->has_node_selector != b->has_node_selector ||
        !selector_eq(&a->node_selector, &b->node_selector) || a->naffinity_terms != b->naffinity_terms ||
        a->ntolerations != b->ntolerations || a->nports != b->nports || a->npreferred != b->npreferred)
        return 1;
    for (int i = 0; i < a->naffinity_terms; i++)
        if (!selector_eq(&a->affinity_terms[i], &b->affinity_terms[i]))
            return 1;
    for (int i = 0; i < a->ntolerations; i++) {
        const toleration_t *x = &a->tolerations[i], *y = &b->tolerations[i];
        if (!str_eq(x->key, y->key) || !str_eq(x->value, y->value) || x->op_exists != y->op_exists ||
            x->effect != y->effect)
            return 1;
    }
    for (int i = 0; i < a->nports; i++) {
        const host_port_t *x = &a->ports[i], *y = &b->ports[i];
        if (x->port != y->port || strcmp(x->protocol, y->protocol) || strcmp(x->host_ip, y->host_ip))
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ lifecycle */

void queue_opts_default(queue_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->less = queue_default_less;
    o->initial_backoff_ms = 1000;
    o->max_backoff_ms = 10000;
    o->unschedulable_max_ms = 60000;
}

sched_queue_t *queue_new(const queue_opts_t *o)
{
    sched_queue_t *q = util_xcalloc(1, sizeof(*q));
    if (o)
        q->o = *o;
    else
        queue_opts_default(&q->o);
    if (!q->o.less)
        q->o.less = queue_default_less;
    if (q->o.initial_backoff_ms < 0)
        q->o.initial_backoff_ms = 0;
    if (q->o.max_backoff_ms < q->o.initial_backoff_ms)
        q->o.max_backoff_ms = q->o.initial_backoff_ms;
    q->backoff.less = backoff_less;
    q->unsched_due = INT64_MAX;
    q->index = hashmap_new(64);
    q->inflight = hashmap_new(16);

    /* Timed waits use the monotonic clock, like every deadline here. */
    util_cond_init_monotonic(&q->cv);
    pthread_mutex_init(&q->mu, NULL);
    return q;
}

void queue_free(sched_queue_t *q)
{
    if (!q)
        return;
    const char *k;
    void *v;
    for (size_t i = 0; hashmap_next(q->index, &i, &k, &v);) {
        qent_t *e = v;
        queue_item_free(e->it);
        free(e);
    }
    for (size_t i = 0; hashmap_next(q->inflight, &i, &k, &v);)
        inflight_free(v);
    hashmap_free(q->index);
    hashmap_free(q->inflight);
    for (int i = 0; i < q->nact; i++)
        free(q->act[i].a);
    free(q->act);
    free(q->live);
    free(q->tsums);
    free(q->backoff.a);
    free(q->unsched);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

void queue_close(sched_queue_t *q)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    q->closed = 1;
    pthread_cond_broadcast(&q->cv);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
}

/* ------------------------------------------------------------ producers */

/* A queued entry's pod object is replaced: its tenant (a label) and its
 * counted requests may change; it is placed again at where. */
static void replace_pod(sched_queue_t *q, qent_t *e, pod_t *pod, int where)
{
    unplace(q, e);
    tsum_adj(q, e->it->tenant, e->it->pod, -1);
    pod_unref(e->it->pod);
    e->it->pod = pod_ref(pod);
    e->it->tenant = tenant_of(q, pod);
    tsum_adj(q, e->it->tenant, e->it->pod, +1);
    place(q, e, where);
}

/* An item goes out with a caller: remembered, and still counted. */
static void go_out(sched_queue_t *q, queue_item_t *it)
{
    it->cycle = ++q->cycle;
    it->wake_ms = 0; /* a wake is for one wait only */
    inflight_t *f = util_xcalloc(1, sizeof(*f));
    f->orig = pod_ref(it->pod);
    f->tenant = it->tenant;
    tsum_adj(q, f->tenant, f->orig, +1);
    inflight_t *old = hashmap_put(q->inflight, it->pod->uid, f);
    if (old)
        tsum_adj(q, old->tenant, old->orig, -1);
    inflight_free(old);
}

/* The out item's mark is dropped (it came back, or left for good). */
static void inflight_drop(sched_queue_t *q, inflight_t *f)
{
    if (f)
        tsum_adj(q, f->tenant, f->orig, -1);
    inflight_free(f);
}

/* Remembers an update for a pod that is out with a caller. */
static void mark_update(inflight_t *f, pod_t *pod)
{
    if (pod_spec_changed(f->updated ? f->updated : f->orig, pod))
        f->changed = 1;
    pod_unref(f->updated);
    f->updated = pod_ref(pod);
}

void queue_add(sched_queue_t *q, pod_t *pod, int borrower)
{
    int64_t now = util_now_ms();
    lo_mutex_lock(&q->mu, LO_QUEUE);
    inflight_t *f = hashmap_get(q->inflight, pod->uid);
    qent_t *e = hashmap_get(q->index, pod->uid);
    if (f) {
        /* Out with a caller: the add is an update, applied at requeue. */
        f->changed = 1;
        pod_unref(f->updated);
        f->updated = pod_ref(pod);
    } else if (e) {
        /* Known: replace the object and make it active now (kube's Add). */
        e->it->borrower = borrower;
        replace_pod(q, e, pod, Q_ACTIVE);
    } else {
        queue_item_t *it = util_xcalloc(1, sizeof(*it));
        it->pod = pod_ref(pod);
        it->borrower = borrower;
        it->first_ms = it->queued_ms = now;
        enqueue(q, it, Q_ACTIVE);
    }
    pthread_cond_signal(&q->cv);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
}

void queue_push_item(sched_queue_t *q, queue_item_t *it)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    it->queued_ms = util_now_ms();
    enqueue(q, it, Q_ACTIVE);
    pthread_cond_signal(&q->cv);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
}

void queue_update(sched_queue_t *q, pod_t *pod)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    inflight_t *f = hashmap_get(q->inflight, pod->uid);
    qent_t *e = hashmap_get(q->index, pod->uid);
    if (f) {
        mark_update(f, pod);
    } else if (e) {
        int changed = pod_spec_changed(e->it->pod, pod);
        /* Priority or the tenant may have moved: placed again. */
        int where = e->where == Q_UNSCHED && changed ? Q_ACTIVE : e->where;
        replace_pod(q, e, pod, where);
        if (where == Q_ACTIVE)
            pthread_cond_signal(&q->cv);
    }
    /* Unknown pods are left to queue_add: an update for a pod this queue
     * never had (bound, or queued in another pool) must not enqueue it. */
    lo_mutex_unlock(&q->mu, LO_QUEUE);
}

void queue_delete(sched_queue_t *q, const char *uid)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    inflight_t *f = hashmap_get(q->inflight, uid);
    if (f)
        f->deleted = 1;
    queue_item_t *it = dequeue(q, uid);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    queue_item_free(it);
}

queue_item_t *queue_take(sched_queue_t *q, const char *uid)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    queue_item_t *it = dequeue(q, uid);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    return it;
}

queue_item_t *queue_take_out(sched_queue_t *q, const char *uid)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    queue_item_t *it = dequeue(q, uid);
    /* Out with the caller as if popped: deletes and updates meanwhile
     * are remembered, queue_requeue and queue_done apply. */
    if (it)
        go_out(q, it);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    return it;
}

queue_item_t **queue_take_all(sched_queue_t *q, int *n)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    int total = q->nactive + q->backoff.n + q->nunsched, k = 0;
    queue_item_t **out = util_xcalloc((size_t)total + 1, sizeof(*out));
    /* Active first, each tenant in pop order, so the receiver sees the
     * best ones first. */
    while (q->nlive > 0) {
        int t = q->live[0];
        out[k++] = q->act[t].a[0]->it;
        active_remove(q, t, 0);
    }
    for (int i = 0; i < q->backoff.n; i++)
        out[k++] = q->backoff.a[i]->it;
    for (int i = 0; i < q->nunsched; i++)
        out[k++] = q->unsched[i]->it;
    q->backoff.n = q->nunsched = 0;
    const char *key;
    void *v;
    for (size_t i = 0; hashmap_next(q->index, &i, &key, &v);) {
        tsum_adj(q, ((qent_t *)v)->it->tenant, ((qent_t *)v)->it->pod, -1);
        free(v);
    }
    hashmap_free(q->index);
    q->index = hashmap_new(64);
    q->unsched_due = INT64_MAX;
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    *n = k;
    return out;
}

void queue_move_all_to_active(sched_queue_t *q, const char *event)
{
    int64_t now = util_now_ms();
    lo_mutex_lock(&q->mu, LO_QUEUE);
    int moved = q->nunsched;
    q->move_cycle = q->cycle;
    while (q->nunsched > 0) {
        qent_t *e = q->unsched[q->nunsched - 1];
        q->nunsched--;
        place(q, e, active_or_backoff(e->it, now));
    }
    q->unsched_due = INT64_MAX;
    if (moved)
        pthread_cond_broadcast(&q->cv);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    if (moved)
        LOG_D("queue: moved %d unschedulable pods on %s", moved, event ? event : "event");
}

int queue_move_matching(sched_queue_t *q, queue_pod_pred_fn pred, void *ud, const char *event)
{
    int64_t now = util_now_ms();
    lo_mutex_lock(&q->mu, LO_QUEUE);
    int moved = 0;
    for (int i = 0; i < q->nunsched;) {
        qent_t *e = q->unsched[i];
        if (!pred(e->it->pod, e->it->tenant, ud)) {
            i++;
            continue;
        }
        unplace(q, e); /* swaps the last slot into i: do not advance */
        place(q, e, active_or_backoff(e->it, now));
        moved++;
    }
    /* A pod being tried now failed against the room as it was. */
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(q->inflight, &it, &k, &v);) {
        inflight_t *f = v;
        if (!f->deleted && pred(f->updated ? f->updated : f->orig, f->tenant, ud))
            f->moved = 1;
    }
    if (moved)
        pthread_cond_broadcast(&q->cv);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    if (moved)
        LOG_D("queue: moved %d unschedulable pods on %s", moved, event ? event : "event");
    return moved;
}

/* ------------------------------------------------------------ consumers */

/* Without a pick function: the tenant with the best head by QueueSort. */
static int best_head_tenant(sched_queue_t *q)
{
    int best = q->live[0];
    for (int i = 1; i < q->nlive; i++)
        if (active_less(q, q->act[q->live[i]].a[0], q->act[best].a[0]))
            best = q->live[i];
    return best;
}

/* The tenant whose head goes next: pick decides among the tenants with
 * ready pods, offered best head first. */
static int pick_tenant(sched_queue_t *q)
{
    if (q->nlive == 1 || !q->o.pick)
        return best_head_tenant(q);
    int n = q->nlive;
    int *ts = util_xcalloc((size_t)n, sizeof(int));
    int64_t *first = util_xcalloc((size_t)n, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        /* insertion by head order: ties in pick go to the better head */
        int t = q->live[i], j = i;
        while (j > 0 && active_less(q, q->act[t].a[0], q->act[ts[j - 1]].a[0])) {
            ts[j] = ts[j - 1];
            j--;
        }
        ts[j] = t;
    }
    for (int i = 0; i < n; i++)
        first[i] = q->act[ts[i]].a[0]->it->first_ms;
    int k = q->o.pick(ts, first, n, q->o.tenant_ud);
    int t = ts[k >= 0 && k < n ? k : 0];
    free(ts);
    free(first);
    return t;
}

static void abs_deadline(struct timespec *ts, int64_t at_ms)
{
    ts->tv_sec = at_ms / 1000;
    ts->tv_nsec = (at_ms % 1000) * 1000000L;
}

queue_item_t *queue_pop_timeout(sched_queue_t *q, int64_t timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : util_now_ms() + timeout_ms;
    queue_item_t *it = NULL;
    lo_mutex_lock(&q->mu, LO_QUEUE);
    while (!q->closed) {
        int64_t now = util_now_ms();
        flush_backoff(q, now);
        flush_unsched(q, now);
        if (q->nactive > 0) {
            int t = pick_tenant(q);
            qent_t *e = q->act[t].a[0];
            active_remove(q, t, 0);
            hashmap_remove(q->index, e->it->pod->uid);
            it = e->it;
            free(e);
            tsum_adj(q, it->tenant, it->pod, -1);
            go_out(q, it);
            break;
        }
        if (now >= deadline)
            break;
        /* Sleep until the caller's deadline or the next item falls due. */
        int64_t wake = deadline;
        if (q->backoff.n > 0 && q->backoff.a[0]->it->backoff_until < wake)
            wake = q->backoff.a[0]->it->backoff_until;
        if (q->nunsched > 0 && q->unsched_due < wake)
            wake = q->unsched_due;
        if (wake == INT64_MAX) {
            pthread_cond_wait(&q->cv, &q->mu);
        } else {
            struct timespec ts;
            abs_deadline(&ts, wake);
            pthread_cond_timedwait(&q->cv, &q->mu, &ts);
        }
    }
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    return it;
}

queue_item_t *queue_pop(sched_queue_t *q)
{
    return queue_pop_timeout(q, -1);
}

/* Common give-back path. to_backoff forces the backoff queue. Returns the
 * item to free outside the lock, if the pod went away while out. */
static queue_item_t *give_back(sched_queue_t *q, queue_item_t *it, int to_backoff)
{
    int64_t now = util_now_ms();
    inflight_t *f = hashmap_remove(q->inflight, it->pod->uid);
    int changed = 0, moved = f && f->moved;
    if (f && f->deleted) {
        inflight_drop(q, f);
        return it;
    }
    if (f && f->updated) {
        pod_unref(it->pod);
        it->pod = f->updated;
        f->updated = NULL;
        changed = f->changed;
    }
    inflight_drop(q, f);
    if (hashmap_get(q->index, it->pod->uid))
        return it; /* re-queued by someone else meanwhile: that one wins */

    it->attempts++;
    it->queued_ms = now;
    it->backoff_until = now + backoff_duration(q, it->attempts);
    int where;
    if (changed)
        where = Q_ACTIVE; /* the object changed: worth a fresh try */
    else if (to_backoff || moved || (q->move_cycle && q->move_cycle >= it->cycle))
        where = active_or_backoff(it, now);
    else
        where = Q_UNSCHED;
    enqueue(q, it, where);
    pthread_cond_signal(&q->cv);
    return NULL;
}

void queue_requeue(sched_queue_t *q, queue_item_t *it)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    queue_item_t *dead = give_back(q, it, 0);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    queue_item_free(dead);
}

void queue_requeue_at(sched_queue_t *q, queue_item_t *it, int64_t when_ms)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    it->wake_ms = when_ms > 0 ? when_ms : 0;
    queue_item_t *dead = give_back(q, it, 0);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    queue_item_free(dead);
}

void queue_requeue_backoff(sched_queue_t *q, queue_item_t *it)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    queue_item_t *dead = give_back(q, it, 1);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    queue_item_free(dead);
}

void queue_push_backoff(sched_queue_t *q, queue_item_t *it)
{
    int64_t now = util_now_ms();
    lo_mutex_lock(&q->mu, LO_QUEUE);
    if (hashmap_get(q->index, it->pod->uid) || hashmap_get(q->inflight, it->pod->uid)) {
        lo_mutex_unlock(&q->mu, LO_QUEUE);
        queue_item_free(it);
        return;
    }
    it->attempts++;
    it->queued_ms = now;
    it->backoff_until = now + backoff_duration(q, it->attempts);
    enqueue(q, it, Q_BACKOFF);
    pthread_cond_signal(&q->cv);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
}

void queue_done(sched_queue_t *q, queue_item_t *it)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    inflight_t *f = hashmap_remove(q->inflight, it->pod->uid);
    inflight_drop(q, f);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
}

/* ---------------------------------------------------------------- stats */

int64_t queue_next_due(sched_queue_t *q)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    int64_t due = INT64_MAX;
    if (q->nactive > 0)
        due = util_now_ms();
    if (q->backoff.n > 0 && q->backoff.a[0]->it->backoff_until < due)
        due = q->backoff.a[0]->it->backoff_until;
    if (q->nunsched > 0 && q->unsched_due < due)
        due = q->unsched_due;
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    return due == INT64_MAX ? 0 : due;
}

void queue_get_stats(sched_queue_t *q, queue_stats_t *s)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    s->active = q->nactive;
    s->backoff = q->backoff.n;
    s->unschedulable = q->nunsched;
    s->inflight = (int)hashmap_len(q->inflight);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
}

void queue_pending_requests(sched_queue_t *q, resources_t *sum, int *npods)
{
    res_zero(sum);
    int n = 0;
    lo_mutex_lock(&q->mu, LO_QUEUE);
    const char *k;
    void *v;
    for (size_t i = 0; hashmap_next(q->index, &i, &k, &v); n++)
        res_add(sum, &((qent_t *)v)->it->pod->requests);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    if (npods)
        *npods = n;
}

void queue_tenant_pending(sched_queue_t *q, queue_tenant_sum_fn fn, void *ud)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    for (int t = 0; t < q->ntsums; t++)
        if (q->tsums[t].pods > 0)
            fn(t, &q->tsums[t].req, q->tsums[t].pods, ud);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
}

static void oldest_per_tenant(qent_t **best, int n, qent_t *e)
{
    int t = e->it->tenant;
    if (t < n && (!best[t] || e->it->first_ms < best[t]->it->first_ms))
        best[t] = e;
}

int queue_activate_uid(sched_queue_t *q, const char *uid)
{
    lo_mutex_lock(&q->mu, LO_QUEUE);
    qent_t *e = hashmap_get(q->index, uid);
    int moved = e && e->where != Q_ACTIVE;
    if (moved) {
        unplace(q, e);
        e->it->backoff_until = 0;
        place(q, e, Q_ACTIVE);
        pthread_cond_broadcast(&q->cv);
    }
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    return moved;
}

int queue_activate_oldest(sched_queue_t *q, queue_tenant_pred_fn pred, void *ud)
{
    int moved = 0;
    lo_mutex_lock(&q->mu, LO_QUEUE);
    int n = q->ntsums;
    qent_t **best = util_xcalloc((size_t)n + 1, sizeof(*best));
    for (int i = 0; i < q->backoff.n; i++)
        oldest_per_tenant(best, n, q->backoff.a[i]);
    for (int t = 0; t < n; t++) {
        if (!best[t] || !pred(t, best[t]->it->first_ms, ud))
            continue;
        unplace(q, best[t]);
        best[t]->it->backoff_until = 0;
        place(q, best[t], Q_ACTIVE);
        moved++;
    }
    free(best);
    if (moved)
        pthread_cond_broadcast(&q->cv);
    lo_mutex_unlock(&q->mu, LO_QUEUE);
    return moved;
}
