/* offline.c -- the scheduler driven by its caller, on one thread, for the
 * sandbox: the informers' handlers, the pool threads' loop, the binder's,
 * evictor's, volume waiter's and writer's work and the housekeeper's, each
 * run when the caller says, with the same code the threads run. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"

/* The writer never drops in a sandbox: the caller drains it after each
 * step, so its length stays that of one step's writes. */
#define OFFLINE_MAX_PENDING (1 << 30)

int scheduler_start_offline(scheduler_t *s, char *err, size_t errlen)
{
    if (s->writer || s->binder) {
        util_errf(err, errlen, "scheduler already started");
        return -1;
    }
    /* The sandbox's copy answers policy/v1 Evictions. */
    s->use_policy_v1 = 1;
    s->writer = writer_new_offline(s, OFFLINE_MAX_PENDING);
    s->evictor = evictor_new_offline(s);
    s->binder = binder_new_offline(s);
    if (!s->binder) {
        util_errf(err, errlen, "cannot create the binder");
        return -1;
    }
    __atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
    return 0;
}

typedef struct feed_row {
    const char *kind;
    informer_handler_fn fn;
    int owner; /* >= 0: sched_owner_event's kind */
    int shown; /* the dashboard shows it: moves its change counter (scheduler_generation) */
} feed_row_t;

/* The core's own kinds; the rows' are their watches (sched_watch_t). */
static const feed_row_t feed_rows[] = {
    { "Node", on_node_event, -1, 1 },      { "Pod", on_pod_event, -1, 1 },
    { "Pool", pools_on_event, -1, 1 },     { "PodDisruptionBudget", on_pdb_event, -1, 0 },
    { "Service", NULL, OWNER_SERVICE, 0 }, { "ReplicationController", NULL, OWNER_RC, 0 },
    { "ReplicaSet", NULL, OWNER_RS, 0 },   { "StatefulSet", NULL, OWNER_STS, 0 },
};

typedef struct row_feed {
    const char *kind;
    kube_event_type_t type;
    const char *key;
    json_t *obj;
    int shown, fed;
} row_feed_t;

/* Hands a fed object to every row that watches its kind, in table order
 * (as a shared informer calls their handlers). */
static int feed_row(void *ud, void *self, const sched_watch_t *w, informer_t *inf)
{
    (void)inf;
    row_feed_t *f = ud;
    if (strcmp(w->kind, f->kind) != 0)
        return 0;
    w->on_event(self, f->type, f->key, f->obj);
    f->shown |= w->shown;
    f->fed = 1;
    return 0;
}

int scheduler_feed(scheduler_t *s, const char *kind, const char *type, const char *key, json_t *obj)
{
    kube_event_type_t t;
    if (!type || !key)
        return -1;
    if (!strcmp(type, "ADDED"))
        t = KUBE_ADDED;
    else if (!strcmp(type, "MODIFIED"))
        t = KUBE_MODIFIED;
    else if (!strcmp(type, "DELETED"))
        t = KUBE_DELETED;
    else
        return -1;
    for (size_t i = 0; kind && i < sizeof(feed_rows) / sizeof(feed_rows[0]); i++) {
        if (strcmp(feed_rows[i].kind, kind) != 0)
            continue;
        if (feed_rows[i].fn)
            feed_rows[i].fn(s, t, key, obj);
        else
            sched_owner_event(s, feed_rows[i].owner, t, key, obj);
        if (feed_rows[i].shown)
            sched_dash_changed(s); /* after: a poll that sees it sees the change */
        return 1;
    }
    row_feed_t f = { kind, t, key, obj, 0, 0 };
    if (kind)
        sched_rows_each_watch(s, feed_row, &f);
    if (!f.fed)
        return 0;
    if (f.shown)
        sched_dash_changed(s);
    return 1;
}

static void step_pool(sched_pool_t *P, void *ud)
{
    *(int *)ud += sched_pool_step(P);
}

int scheduler_run_pools(scheduler_t *s)
{
    int n = 0;
    pools_each_live(s, step_pool, &n);
    return n;
}

int scheduler_drain(scheduler_t *s)
{
    int n = 0;
    /* Once: a pod whose claims are still unbound waits on. */
    sched_rows_drain(s);
    for (;;) {
        /* Binds before evictions, writes last: a bind's Scheduled event
         * follows it, as with the threads. */
        int k = binder_drain(s->binder);
        k += evictor_drain(s->evictor);
        k += writer_drain(s->writer);
        if (!k)
            return n;
        n += k;
    }
}

void scheduler_housekeep(scheduler_t *s)
{
    sched_housekeep_rows(s);
}

typedef struct due_ctx {
    int64_t due;
    int pending;
} due_ctx_t;

static void pool_due(sched_pool_t *P, void *ud)
{
    due_ctx_t *c = ud;
    int64_t d = queue_next_due(P->q);
    if (d) {
        c->pending = 1;
        if (!c->due || d < c->due)
            c->due = d;
    }
}

int64_t scheduler_next_due(scheduler_t *s, int64_t *ckpt_wall_ms)
{
    due_ctx_t c = { 0, 0 };
    pools_each_live(s, pool_due, &c);
    if (ckpt_wall_ms)
        *ckpt_wall_ms = s->evictor ? evictor_next_due(s->evictor) : 0;
    return c.due;
}

int scheduler_has_pending(scheduler_t *s)
{
    due_ctx_t c = { 0, 0 };
    pools_each_live(s, pool_due, &c);
    return c.pending;
}

int scheduler_housekeep_wanted(scheduler_t *s)
{
    if (scheduler_has_pending(s) || evictor_next_due(s->evictor))
        return 1;
    return sched_rows_timed(s);
}

uint64_t scheduler_seed(const scheduler_t *s)
{
    return s->opts.seed;
}
