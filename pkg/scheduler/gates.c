/* gates.c -- PreEnqueue: the pre_enqueue rows asked in table order
 * (scheduling gates: pkg/gates; DRA claims: pkg/dra; workload groups), and
 * the set of pods they keep out of the scheduling queues, so that a pod
 * whose last gate goes enters its queue at once, not after a backoff.
 *
 * A pod kept out is in no cycle: it is never tried, bound, nominated or a
 * preemptor, and no queue counts it as pending demand (tenants, borrowing,
 * gangs read the queues). As kube-scheduler's PreEnqueue plugins: the
 * SchedulingGates plugin rejects a pod while spec.schedulingGates is
 * non-empty, and the API server, which set PodScheduled=False reason
 * SchedulingGated when it created the pod, refuses its Binding. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gates/row.h"
#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"

struct held_set {
    pthread_mutex_t mu;
    hashmap_t *uids; /* uid -> the row that keeps it out (1-based), as a pointer */
};

/* The first row that keeps pod out fills hold (caller frees message);
 * returns that row's index + 1, or 0 when every row lets it in. */
static int pre_enqueue(scheduler_t *s, const pod_t *pod, enqueue_hold_t *hold)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    memset(hold, 0, sizeof(*hold));
    for (int i = 0; i < n; i++)
        if (ext[i].pre_enqueue && ext[i].pre_enqueue(&s->rows[i], pod, hold))
            return i + 1;
    return 0;
}

int sched_kept_out(scheduler_t *s, const pod_t *pod)
{
    enqueue_hold_t h;
    int out = pre_enqueue(s, pod, &h);
    free(h.message);
    return out;
}

held_set_t *held_new(void)
{
    held_set_t *h = util_xcalloc(1, sizeof(*h));
    pthread_mutex_init(&h->mu, NULL);
    h->uids = hashmap_new(16);
    return h;
}

void held_free(held_set_t *h)
{
    if (!h)
        return;
    hashmap_free(h->uids);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

/* Marks uid held by row (1-based), h->mu held; 1 if it was not, or by
 * another row (a pod whose gates went but that has DRA claims is told
 * again, anew). */
static int held_mark_locked(held_set_t *h, const char *uid, int row)
{
    void *v = (void *)(uintptr_t)row;
    int fresh = hashmap_get(h->uids, uid) != v;
    if (fresh)
        hashmap_put(h->uids, uid, v);
    return fresh;
}

static int held_mark(held_set_t *h, const char *uid, int row)
{
    lo_mutex_lock(&h->mu, LO_HELD);
    int fresh = held_mark_locked(h, uid, row);
    lo_mutex_unlock(&h->mu, LO_HELD);
    return fresh;
}

/* The condition (and the event, if the row asks) once per pod: not when
 * the API shows the condition already (set at creation, or written by us
 * before a restart), so a restart sends no second event either. */
static void tell(scheduler_t *s, const pod_t *pod, const enqueue_hold_t *h)
{
    if (!h->reason) {
        LOG_D("pod=%s kept out of the scheduling queue for a moment", pod->key);
        return;
    }
    int shown = pod->scheduled_reason && strcmp(pod->scheduled_reason, h->reason) == 0 &&
                (!h->event || (pod->scheduled_message && strcmp(pod->scheduled_message, h->message) == 0));
    /* A gated pod is routine (its condition says it); a claim is a pod we fail. */
    if (h->event)
        LOG_I("pod=%s kept out of the scheduling queue: %s", pod->key, h->message);
    else
        LOG_D("pod=%s kept out of the scheduling queue: %s", pod->key, h->message);
    if (shown || !s->writer || scheduler_fenced(s))
        return;
    if (h->event)
        writer_pod_event(s->writer, pod, "Warning", "FailedScheduling", h->message);
    writer_unscheduled_condition(s->writer, pod, h->reason, h->message);
}

/* The rows are asked and the pod marked under the held set's mutex, so
 * that a row's own release (sched_pod_released, from another thread) comes
 * after the mark it undoes, never before it. */
int gates_keep_out(scheduler_t *s, const pod_t *pod)
{
    enqueue_hold_t h;
    lo_mutex_lock(&s->held->mu, LO_HELD);
    int row = pre_enqueue(s, pod, &h);
    int fresh = row && held_mark_locked(s->held, pod->uid, row);
    lo_mutex_unlock(&s->held->mu, LO_HELD);
    if (fresh)
        tell(s, pod, &h);
    free(h.message);
    return row != 0;
}

void gates_hold_uid(scheduler_t *s, const char *uid)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < n; i++)
        if (ext[i].pre_enqueue == gates_row_pre_enqueue)
            held_mark(s->held, uid, i + 1);
}

int gates_release(scheduler_t *s, const char *uid)
{
    held_set_t *h = s->held;
    lo_mutex_lock(&h->mu, LO_HELD);
    int was = hashmap_remove(h->uids, uid) != NULL;
    lo_mutex_unlock(&h->mu, LO_HELD);
    return was;
}

/* Whether uid is held; with uid NULL, how many pods are. */
static int held_query(held_set_t *h, const char *uid)
{
    lo_mutex_lock(&h->mu, LO_HELD);
    int n = uid ? hashmap_get(h->uids, uid) != NULL : (int)hashmap_len(h->uids);
    lo_mutex_unlock(&h->mu, LO_HELD);
    return n;
}

int gates_is_held(scheduler_t *s, const char *uid)
{
    return held_query(s->held, uid);
}

int gates_held_count(scheduler_t *s)
{
    return held_query(s->held, NULL);
}
