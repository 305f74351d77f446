/* events.c -- an event that may let waiting pods fit fans out to the rows
 * (on_event, kube's QueueingHints); their answers, combined, say which
 * pools' waiting pods move. */
#include <stdlib.h>

#include "scheduler/internal.h"
#include "util/util.h"

/* The SOME answers for one pool: a pod moves when any of them admits it. */
typedef struct some_of {
    const sched_wake_t *a;
    int n, pool;
} some_of_t;

static int any_admits(const pod_t *pod, int tenant, void *ud)
{
    const some_of_t *o = ud;
    for (int i = 0; i < o->n; i++)
        if (o->a[i].pool == o->pool && o->a[i].in_pool == SCHED_WAKE_SOME && o->a[i].match(pod, tenant, o->a[i].ud))
            return 1;
    return 0;
}

/* What w says of pool: others is all or nothing (a match names its pool). */
static sched_wake_level_t level_for(const sched_wake_t *w, int pool)
{
    if (w->pool == pool)
        return w->in_pool;
    return w->others == SCHED_WAKE_ALL ? SCHED_WAKE_ALL : SCHED_WAKE_NONE;
}

/* The widest of the answers a[0..n) for pool. */
static sched_wake_level_t widest(const sched_wake_t *a, int n, int pool)
{
    sched_wake_level_t l = SCHED_WAKE_NONE;
    for (int i = 0; i < n; i++)
        if (level_for(&a[i], pool) > l)
            l = level_for(&a[i], pool);
    return l;
}

/* The combined wake, pool by pool (every pool's when no row answered). */
static void perform(const sched_wake_t *a, int n, const sched_event_t *ev, const sched_wake_sink_t *sink)
{
    for (int p = 0; p < sink->npools; p++) {
        sched_wake_level_t l = n ? widest(a, n, p) : SCHED_WAKE_ALL;
        if (l == SCHED_WAKE_ALL) {
            sink->all(sink->ud, p, ev->reason);
        } else if (l == SCHED_WAKE_SOME) {
            some_of_t o = { a, n, p };
            sink->some(sink->ud, p, any_admits, &o, ev->reason);
        }
    }
}

int sched_events_fan_out(const sched_ext_t *ext, const sched_row_t *rows, int n, const sched_event_t *ev,
                         const sched_wake_sink_t *sink)
{
    sched_wake_t *a = util_xcalloc((size_t)(n > 0 ? n : 1), sizeof(*a));
    int na = 0;
    for (int i = 0; i < n; i++) {
        if (!ext[i].on_event)
            continue;
        a[na] = (sched_wake_t){ .pool = -1 };
        if (ext[i].on_event(&rows[i], ev, &a[na]))
            na++;
    }
    perform(a, na, ev, sink);
    for (int i = 0; i < na; i++)
        if (a[i].release)
            a[i].release(a[i].ud);
    free(a);
    return na;
}

/* --- the scheduler's pools as the sink ------------------------------------ */

static void pool_all(void *ud, int pool, const char *reason)
{
    sched_pool_t *P = pools_get(ud, pool);
    if (P)
        queue_move_all_to_active(P->q, reason);
}

static void pool_some(void *ud, int pool, queue_pod_pred_fn match, void *match_ud, const char *reason)
{
    sched_pool_t *P = pools_get(ud, pool);
    if (P)
        queue_move_matching(P->q, match, match_ud, reason);
}

void sched_event(scheduler_t *s, sched_event_kind_t kind, const pod_t *pod, const char *node, const char *reason)
{
    sched_event_t ev = { kind, pod, node, reason };
    /* Pools created meanwhile are skipped, as by pools_each_live. */
    pools_lock(s);
    int np = s->npools;
    pools_unlock(s);
    sched_wake_sink_t sink = { np, pool_all, pool_some, s };
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    sched_events_fan_out(ext, s->rows, n < s->nrows ? n : s->nrows, &ev, &sink);
}
