/* queue.h -- one pool's scheduling queue: an activeQ heap (pluggable order),
 * a backoffQ heap by expiry, and an unschedulable set.
 *
 * As kube-scheduler's PriorityQueue: a pod that failed goes to
 * unschedulable, unless a cluster event arrived while it was being tried
 * (then to backoff). Cluster events move unschedulable pods back; so does a
 * 60 s flush. Backoff is 1 s doubling to 10 s per attempt. No extra thread:
 * queue_pop flushes what is due. Thread-safe; one mutex, held for one call
 * out only: the QueueSort less function, which must not call the queue.
 *
 * Ownership: queue_add takes a new reference on the pod. queue_pop hands the
 * caller an item; the caller gives it back with queue_requeue (failure) or,
 * when it is not coming back, calls queue_done and then queue_item_free.
 * While an item is out, deletes and updates for its pod are remembered and
 * applied when it is given back. */
#ifndef AISCHED_QUEUE_H
#define AISCHED_QUEUE_H

#include <stdint.h>
#include "api/types.h"

typedef struct queue_item {
    pod_t *pod;            /* one reference, owned by the item */
    int borrower;          /* queued in a pool that is not its home: the queue's default order puts home pods first */
    int attempts;          /* failed attempts so far */
    int64_t first_ms;      /* first time queued (monotonic): age order, latency */
    int64_t queued_ms;     /* last time queued */
    int64_t backoff_until; /* monotonic ms */
    uint64_t cycle;        /* scheduling cycle at pop */
    char *last_message;    /* last failure summary, owned, may be NULL */
    int tenant;            /* tenant_of(pod) when it entered this queue (its tenant heap) */
    /* Rows' marks on the item, one bit per row at its place in the rows'
     * table (sched_row_t.index; services.h's sched_mark_*); the queue
     * neither reads nor clears them. marks last as long as the item (a
     * note said once); round_marks until the item is given back to a queue
     * after its cycle (or a failed bind sends it home), and a failed item
     * that carries one waits out a backoff before its next try. */
    uint32_t marks, round_marks;
    int64_t wake_ms; /* queue_requeue_at's time (monotonic ms), 0 none; cleared at pop */
} queue_item_t;

/* QueueSort: nonzero if a should be popped before b. */
typedef int (*queue_less_fn)(const queue_item_t *a, const queue_item_t *b, void *ud);
/* Default order: home pods before borrowers, then higher priority, then older. */
int queue_default_less(const queue_item_t *a, const queue_item_t *b, void *ud);

/* Tenants (the queues of a fair-share policy): activeQ keeps one heap per
 * tenant, each in QueueSort order, and pop asks pick which tenant goes
 * next. tenant_of gives a pod's tenant, a small non-negative id; pick gets
 * the tenants with ready pods (best head first by QueueSort) and the
 * first_ms of each one's head, and returns an index into them. Both are
 * called with the queue mutex held and must not call the queue. */
typedef int (*queue_tenant_fn)(const pod_t *pod, void *ud);
typedef int (*queue_pick_fn)(const int *tenants, const int64_t *head_first_ms, int n, void *ud);

typedef struct queue_opts {
    queue_less_fn less; /* NULL: queue_default_less */
    void *less_ud;
    queue_tenant_fn tenant_of; /* NULL: one tenant (0) */
    queue_pick_fn pick;        /* NULL: the best head */
    void *tenant_ud;
    int64_t initial_backoff_ms;   /* 1000 */
    int64_t max_backoff_ms;       /* 10000 */
    int64_t unschedulable_max_ms; /* 60000 */
} queue_opts_t;

typedef struct sched_queue sched_queue_t;

void queue_opts_default(queue_opts_t *o);
sched_queue_t *queue_new(const queue_opts_t *o);
/* Frees every queued item; items still out with callers stay theirs. */
void queue_free(sched_queue_t *q);

/* New pending pod (or an update if its uid is known): into activeQ. */
void queue_add(sched_queue_t *q, pod_t *pod, int borrower);
/* Puts an item popped from another queue into this one's activeQ (takes it). */
void queue_push_item(sched_queue_t *q, queue_item_t *it);
/* Pod object changed (labels, resources...): replace; an unschedulable pod
 * goes back to activeQ if something the filters read changed. */
void queue_update(sched_queue_t *q, pod_t *pod);
/* Pod deleted or bound elsewhere: drop it (or mark it, if out). */
void queue_delete(sched_queue_t *q, const char *uid);
/* Removes and returns the item for uid, if queued (not out); caller owns. */
queue_item_t *queue_take(sched_queue_t *q, const char *uid);
/* As queue_take, but the item is then out with the caller exactly as a
 * popped one (give it back with queue_requeue or queue_done). */
queue_item_t *queue_take_out(sched_queue_t *q, const char *uid);
/* Removes and returns every queued item, for moving them elsewhere. The
 * caller frees the array and owns the items. */
queue_item_t **queue_take_all(sched_queue_t *q, int *n);

/* Blocks until an item is ready or the queue closes (NULL). */
queue_item_t *queue_pop(sched_queue_t *q);
/* Like queue_pop with a timeout in ms; NULL on timeout or close. */
queue_item_t *queue_pop_timeout(sched_queue_t *q, int64_t timeout_ms);
/* Gives back an item that failed: to activeQ if its pod changed while out,
 * else to backoff (activeQ once the backoff ran out) if a move event came
 * after it was popped, else to unschedulable. Bumps attempts. Frees it if the
 * pod was deleted while out or its uid was queued again meanwhile. */
void queue_requeue(sched_queue_t *q, queue_item_t *it);
/* As queue_requeue, and an item that goes to unschedulable is retried at
 * when_ms (monotonic) at the latest, without polling: the wait has a known
 * end (a victim's minimum runtime runs out). Move events still move it
 * earlier; the 60 s flush still applies when it is sooner. */
void queue_requeue_at(sched_queue_t *q, queue_item_t *it, int64_t when_ms);
/* As queue_requeue, but to backoff even without a move event (transient errors). */
void queue_requeue_backoff(sched_queue_t *q, queue_item_t *it);
/* Takes back an item that left the queue for good (queue_done) and then
 * failed where the queue could not see it, such as a refused bind: counts
 * the attempt and waits out its backoff, keeping the item's age (first_ms)
 * and attempts. An item already queued for the same uid wins; this one is
 * then freed. */
void queue_push_backoff(sched_queue_t *q, queue_item_t *it);
/* Done with an item that is not coming back (bound, or moved away). Also
 * forgets any marks kept for its uid while it was out. */
void queue_done(sched_queue_t *q, queue_item_t *it);
void queue_item_free(queue_item_t *it);

/* A cluster event that may make pods schedulable: unschedulable pods move
 * to activeQ (or backoffQ if still backing off). */
void queue_move_all_to_active(sched_queue_t *q, const char *event);

/* A cluster event that may help some pods only (room that only some may
 * use): the unschedulable pods for which pred(pod, tenant, ud) holds move
 * as in queue_move_all_to_active, and a pod out with a caller for which it
 * holds goes to activeQ (or backoffQ) when given back, not to
 * unschedulable. pred is called with the queue mutex held and must not
 * call the queue. Returns how many moved now. */
typedef int (*queue_pod_pred_fn)(const pod_t *pod, int tenant, void *ud);
int queue_move_matching(sched_queue_t *q, queue_pod_pred_fn pred, void *ud, const char *event);

/* The oldest backing-off item of each tenant for which pred(tenant,
 * first_ms, ud) holds goes to activeQ at once, its backoff forgotten (a
 * queue under its share, or a starving pod, must not wait out a 10 s
 * backoff). Unschedulable items stay: nothing changed since they failed,
 * and a pod that can never fit would be retried at every call (a cluster
 * event moves them, queue_move_all_to_active). pred is called with the
 * queue mutex held. Returns how many moved. */
typedef int (*queue_tenant_pred_fn)(int tenant, int64_t first_ms, void *ud);
int queue_activate_oldest(sched_queue_t *q, queue_tenant_pred_fn pred, void *ud);

/* The item of this uid, if queued (backing off or unschedulable), goes to
 * activeQ at once, its backoff forgotten: the room a reservation held for
 * its gang is free now, and waiting out a 10 s backoff would leave it idle.
 * Returns 1 if it moved. */
int queue_activate_uid(sched_queue_t *q, const char *uid);

/* Wakes queue_pop callers with NULL from now on. */
void queue_close(sched_queue_t *q);

/* The earliest monotonic ms at which queue_pop may find an item: now when
 * one is ready, a backoff's end, an unschedulable item's wake or flush
 * (possibly early: then nothing moves). 0 when the queue is empty. */
int64_t queue_next_due(sched_queue_t *q);

typedef struct queue_stats {
    int active, backoff, unschedulable, inflight;
} queue_stats_t;
void queue_get_stats(sched_queue_t *q, queue_stats_t *s);
/* Per tenant, the requests of its pods held by this queue (queued, or out
 * with a caller); fn is called for tenants with pods, under the queue
 * mutex (it must not call the queue). */
typedef void (*queue_tenant_sum_fn)(int tenant, const resources_t *req, int pods, void *ud);
void queue_tenant_pending(sched_queue_t *q, queue_tenant_sum_fn fn, void *ud);
/* Sum of requests of the queued pods (for the pool table's Pending). */
void queue_pending_requests(sched_queue_t *q, resources_t *sum, int *npods);

#endif
