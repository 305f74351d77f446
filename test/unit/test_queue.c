/* test_queue.c -- the scheduling queue: order, backoff, moves, in-flight
 * marks, take, close, and a multi-threaded stress run (TSan). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "queue/queue.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

/* A pending pod; extra is spliced into metadata (labels...). */
static pod_t *mkpod_full(const char *uid, int prio, const char *cpu, const char *labels)
{
    char buf[1024], err[256];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
             "\"metadata\":{\"name\":\"p-%s\",\"namespace\":\"default\",\"uid\":\"%s\","
             "\"resourceVersion\":\"1\",\"labels\":{%s}},"
             "\"spec\":{\"priority\":%d,\"schedulerName\":\"ai-scheduler\","
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},"
             "\"status\":{\"phase\":\"Pending\"}}",
             uid, uid, labels ? labels : "", prio, cpu ? cpu : "1");
    json_error_t je;
    json_t *j = json_loads(buf, 0, &je);
    assert_non_null(j);
    pod_t *p = pod_from_json(j, err, sizeof(err));
    json_decref(j);
    if (!p)
        fail_msg("pod_from_json: %s", err);
    return p;
}

static pod_t *mkpod(const char *uid, int prio)
{
    return mkpod_full(uid, prio, "1", NULL);
}

/* Adds a pod and drops the test's reference: the queue keeps its own. */
static void add(sched_queue_t *q, const char *uid, int prio, int borrower)
{
    pod_t *p = mkpod(uid, prio);
    queue_add(q, p, borrower);
    pod_unref(p);
}

static sched_queue_t *newq(int64_t init_ms, int64_t max_ms, int64_t unsched_ms)
{
    queue_opts_t o;
    queue_opts_default(&o);
    o.initial_backoff_ms = init_ms;
    o.max_backoff_ms = max_ms;
    o.unschedulable_max_ms = unsched_ms;
    return queue_new(&o);
}

static void pop_expect(sched_queue_t *q, const char *uid)
{
    queue_item_t *it = queue_pop_timeout(q, 0);
    assert_non_null(it);
    assert_string_equal(it->pod->uid, uid);
    queue_done(q, it);
    queue_item_free(it);
}

static void stats_expect(sched_queue_t *q, int a, int b, int u, int f)
{
    queue_stats_t s;
    queue_get_stats(q, &s);
    assert_int_equal(s.active, a);
    assert_int_equal(s.backoff, b);
    assert_int_equal(s.unschedulable, u);
    assert_int_equal(s.inflight, f);
}

static void test_defaults(void **st)
{
    queue_opts_t o;
    queue_opts_default(&o);
    assert_ptr_equal(o.less, queue_default_less);
    assert_int_equal(o.initial_backoff_ms, 1000);
    assert_int_equal(o.max_backoff_ms, 10000);
    assert_int_equal(o.unschedulable_max_ms, 60000);
}

static void test_priority_order(void **st)
{
    sched_queue_t *q = newq(1000, 10000, 60000);
    add(q, "a", 1, 0);
    add(q, "b", 5, 0);
    add(q, "c", 3, 0);
    util_sleep_ms(2);
    add(q, "d", 5, 0); /* same priority as b, younger */
    stats_expect(q, 4, 0, 0, 0);
    pop_expect(q, "b");
    pop_expect(q, "d");
    pop_expect(q, "c");
    pop_expect(q, "a");
    assert_null(queue_pop_timeout(q, 0));
    queue_free(q);
}

static void test_borrower_rank(void **st)
{
    sched_queue_t *q = newq(1000, 10000, 60000);
    add(q, "borrow-hi", 1000, 1);
    add(q, "home-lo", -5, 0);
    add(q, "borrow-lo", 0, 1);
    pop_expect(q, "home-lo");
    pop_expect(q, "borrow-hi");
    pop_expect(q, "borrow-lo");
    queue_free(q);
}

static void test_default_less_direct(void **st)
{
    pod_t *p1 = mkpod("x", 1), *p2 = mkpod("y", 1);
    queue_item_t a = { .pod = p1, .first_ms = 10 }, b = { .pod = p2, .first_ms = 20 };
    assert_true(queue_default_less(&a, &b, NULL));
    assert_false(queue_default_less(&b, &a, NULL));
    a.borrower = 1;
    assert_false(queue_default_less(&a, &b, NULL));
    assert_true(queue_default_less(&b, &a, NULL));
    pod_unref(p1);
    pod_unref(p2);
}

/* Custom order: lowest priority first; proves the less fn is used. */
static int reverse_less(const queue_item_t *a, const queue_item_t *b, void *ud)
{
    (*(int *)ud)++;
    return a->pod->priority < b->pod->priority;
}

static void test_custom_less(void **st)
{
    int calls = 0;
    queue_opts_t o;
    queue_opts_default(&o);
    o.less = reverse_less;
    o.less_ud = &calls;
    sched_queue_t *q = queue_new(&o);
    add(q, "a", 3, 0);
    add(q, "b", 1, 0);
    add(q, "c", 2, 0);
    pop_expect(q, "b");
    pop_expect(q, "c");
    pop_expect(q, "a");
    assert_true(calls > 0);
    queue_free(q);
}

static void test_backoff_exponential(void **st)
{
    sched_queue_t *q = newq(20, 70, 60000);
    add(q, "a", 0, 0);
    int64_t want[] = { 20, 40, 70, 70 };
    for (int i = 0; i < 4; i++) {
        queue_item_t *it = queue_pop_timeout(q, 1000);
        assert_non_null(it);
        assert_int_equal(it->attempts, i);
        int64_t t0 = util_now_ms();
        queue_requeue_backoff(q, it);
        stats_expect(q, 0, 1, 0, 0);
        /* Not handed out before its backoff ends (a loaded machine may
         * oversleep the short wait, so check the clock, not the result). */
        it = queue_pop_timeout(q, 5);
        if (!it)
            it = queue_pop_timeout(q, 1000);
        int64_t waited = util_now_ms() - t0;
        assert_non_null(it);
        assert_true(util_now_ms() >= it->backoff_until);
        assert_int_equal(it->attempts, i + 1);
        assert_int_equal(it->backoff_until - it->queued_ms, want[i]);
        assert_true(waited >= want[i]);
        assert_true(waited < want[i] + 500);
        /* Give it back for the next round without a fresh backoff. */
        queue_push_item(q, it);
    }
    queue_free(q);
}

static void test_failure_goes_unschedulable(void **st)
{
    sched_queue_t *q = newq(5, 10, 60000);
    add(q, "a", 0, 0);
    queue_item_t *it = queue_pop(q);
    assert_non_null(it);
    stats_expect(q, 0, 0, 0, 1);
    queue_requeue(q, it);
    stats_expect(q, 0, 0, 1, 0);
    /* No event: stays parked well past its backoff. */
    assert_null(queue_pop_timeout(q, 30));
    queue_move_all_to_active(q, "NodeAdd");
    stats_expect(q, 1, 0, 0, 0);
    pop_expect(q, "a");
    queue_free(q);
}

static void test_move_during_cycle_goes_to_backoff(void **st)
{
    sched_queue_t *q = newq(30, 60, 60000);
    add(q, "a", 0, 0);
    add(q, "b", 0, 0);
    queue_item_t *a = queue_pop(q);
    queue_move_all_to_active(q, "PodDelete"); /* while a is being tried */
    queue_item_t *b = queue_pop(q);           /* popped after the event */
    queue_requeue(q, a);
    queue_requeue(q, b);
    stats_expect(q, 0, 1, 1, 0);
    /* a comes back after its backoff without further events. */
    queue_item_t *it = queue_pop_timeout(q, 1000);
    assert_non_null(it);
    assert_string_equal(it->pod->uid, "a");
    queue_done(q, it);
    queue_item_free(it);
    stats_expect(q, 0, 0, 1, 0);
    queue_free(q);
}

static void test_move_all_respects_backoff(void **st)
{
    sched_queue_t *q = newq(200, 200, 60000);
    add(q, "a", 0, 0);
    queue_requeue(q, queue_pop(q));
    stats_expect(q, 0, 0, 1, 0);
    queue_move_all_to_active(q, "NodeUpdate");
    stats_expect(q, 0, 1, 0, 0); /* still within its 200 ms */
    queue_free(q);

    q = newq(1, 1, 60000);
    add(q, "a", 0, 0);
    add(q, "b", 0, 0);
    queue_requeue(q, queue_pop(q));
    queue_requeue(q, queue_pop(q));
    util_sleep_ms(5);
    queue_move_all_to_active(q, "NodeUpdate");
    stats_expect(q, 2, 0, 0, 0);
    queue_free(q);
}

/* Pods whose uid starts with the letter ud points to. */
static int uid_starts(const pod_t *pod, int tenant, void *ud)
{
    (void)tenant;
    return pod->uid[0] == *(const char *)ud;
}

/* A move for some pods only: the matching unschedulable pods move (within
 * their backoff to backoffQ), the others stay; a matching pod being tried
 * comes back to backoffQ, one that does not match to unschedulableQ. */
static void test_move_matching(void **st)
{
    sched_queue_t *q = newq(30, 60, 60000);
    add(q, "a1", 0, 0);
    add(q, "b1", 0, 0);
    queue_requeue(q, queue_pop(q));
    queue_requeue(q, queue_pop(q));
    stats_expect(q, 0, 0, 2, 0);
    char a = 'a';
    assert_int_equal(queue_move_matching(q, uid_starts, &a, "test"), 1);
    stats_expect(q, 0, 1, 1, 0);
    queue_item_t *it = queue_pop_timeout(q, 1000);
    assert_non_null(it);
    assert_string_equal(it->pod->uid, "a1");
    queue_done(q, it);
    queue_item_free(it);
    stats_expect(q, 0, 0, 1, 0);

    add(q, "a2", 0, 0);
    add(q, "c2", 0, 0);
    queue_item_t *x = queue_pop(q), *y = queue_pop(q); /* both being tried */
    assert_int_equal(queue_move_matching(q, uid_starts, &a, "test"), 0);
    queue_requeue(q, x);
    queue_requeue(q, y);
    stats_expect(q, 0, 1, 2, 0); /* a2 backs off; c2 and b1 wait */
    queue_free(q);
}

static int any_tenant(int tenant, int64_t first_ms, void *ud)
{
    (void)tenant;
    (void)first_ms;
    (void)ud;
    return 1;
}

/* Issue 22, fault 12: the oldest pod of a queue under its share skips its
 * backoff, but one that failed with no event since stays parked: it would
 * be retried at every refresh although nothing can have changed. */
static void test_activate_oldest_skips_unschedulable(void **st)
{
    sched_queue_t *q = newq(10000, 10000, 60000);
    add(q, "a", 0, 0);
    queue_requeue(q, queue_pop(q)); /* failed: unschedulable */
    stats_expect(q, 0, 0, 1, 0);
    assert_int_equal(queue_activate_oldest(q, any_tenant, NULL), 0);
    stats_expect(q, 0, 0, 1, 0);
    queue_item_t *it = queue_take(q, "a");
    queue_requeue_backoff(q, it); /* an event came while it was tried */
    stats_expect(q, 0, 1, 0, 0);
    assert_int_equal(queue_activate_oldest(q, any_tenant, NULL), 1);
    stats_expect(q, 1, 0, 0, 0);
    queue_free(q);
}

static void test_unschedulable_flush(void **st)
{
    sched_queue_t *q = newq(1, 1, 40);
    add(q, "a", 0, 0);
    queue_item_t *popped = queue_pop(q);
    int64_t t0 = util_now_ms();
    queue_requeue(q, popped);
    stats_expect(q, 0, 0, 1, 0);
    queue_item_t *it = queue_pop_timeout(q, 2000);
    int64_t waited = util_now_ms() - t0;
    assert_non_null(it);
    assert_true(waited >= 40);
    assert_true(waited < 1500);
    queue_done(q, it);
    queue_item_free(it);
    queue_free(q);
}

/* Issue 26: a pod told when its wait ends (a victim's minimum runtime)
 * is retried then, not at the 60 s flush, and with no backoff on top; a
 * move event still moves it sooner; the wake is for one wait only. */
static void test_requeue_at_wakes(void **st)
{
    (void)st;
    sched_queue_t *q = newq(5000, 5000, 60000);
    add(q, "a", 0, 0);
    queue_item_t *it = queue_pop(q);
    int64_t t0 = util_now_ms();
    queue_requeue_at(q, it, t0 + 300);
    stats_expect(q, 0, 0, 1, 0);
    assert_null(queue_pop_timeout(q, 100)); /* not before its time */
    it = queue_pop_timeout(q, 2000);
    int64_t waited = util_now_ms() - t0;
    assert_non_null(it);
    assert_true(waited >= 300);
    assert_true(waited < 1000); /* neither the flush nor the 5 s backoff */
    assert_int_equal(it->wake_ms, 0);
    /* Given back plainly now: no wake left, it waits for an event. */
    queue_requeue(q, it);
    assert_null(queue_pop_timeout(q, 500));
    /* A far wake does not hold back a move event. */
    it = NULL;
    queue_move_all_to_active(q, "test");
    queue_free(q);
    q = newq(1, 1, 60000);
    add(q, "b", 0, 0);
    it = queue_pop(q);
    queue_requeue_at(q, it, util_now_ms() + 3600 * 1000);
    queue_move_all_to_active(q, "NodeAdd");
    it = queue_pop_timeout(q, 1000);
    assert_non_null(it);
    assert_string_equal(it->pod->uid, "b");
    queue_done(q, it);
    queue_item_free(it);
    queue_free(q);
}

static void test_delete_queued_and_inflight(void **st)
{
    sched_queue_t *q = newq(1, 1, 60000);
    pod_t *p = mkpod("a", 0);
    queue_add(q, p, 0);
    add(q, "b", 0, 0);
    assert_int_equal(p->refs, 2);
    queue_delete(q, "b");
    stats_expect(q, 1, 0, 0, 0);

    queue_item_t *it = queue_pop(q);
    queue_delete(q, "a");
    stats_expect(q, 0, 0, 0, 1);
    queue_requeue(q, it); /* deleted while out: freed, not queued */
    stats_expect(q, 0, 0, 0, 0);
    assert_int_equal(p->refs, 1);
    queue_delete(q, "nope");
    pod_unref(p);
    queue_free(q);
}

static void test_done_forgets_marks(void **st)
{
    sched_queue_t *q = newq(1, 1, 60000);
    add(q, "a", 0, 0);
    queue_item_t *it = queue_pop(q);
    queue_delete(q, "a");
    queue_done(q, it);
    stats_expect(q, 0, 0, 0, 0);
    /* Handed to another queue, it lives on there. */
    sched_queue_t *q2 = newq(1, 1, 60000);
    queue_push_item(q2, it);
    stats_expect(q2, 1, 0, 0, 0);
    pop_expect(q2, "a");
    queue_free(q2);
    queue_free(q);
}

static void test_update_unschedulable(void **st)
{
    sched_queue_t *q = newq(1, 1, 60000);
    add(q, "a", 0, 0);
    queue_requeue(q, queue_pop(q));
    stats_expect(q, 0, 0, 1, 0);

    /* Same spec (e.g. a status condition): stays parked. */
    pod_t *same = mkpod("a", 0);
    queue_update(q, same);
    stats_expect(q, 0, 0, 1, 0);
    assert_int_equal(same->refs, 2);

    pod_t *relabeled = mkpod_full("a", 0, "1", "\"gpu\":\"yes\"");
    queue_update(q, relabeled);
    stats_expect(q, 1, 0, 0, 0);
    assert_int_equal(same->refs, 1);
    queue_item_t *it = queue_pop_timeout(q, 0);
    assert_non_null(it);
    assert_ptr_equal(it->pod, relabeled);
    assert_int_equal(it->attempts, 1);
    queue_done(q, it);
    queue_item_free(it);

    /* Unknown pods are not enqueued by an update. */
    pod_t *other = mkpod("zzz", 0);
    queue_update(q, other);
    stats_expect(q, 0, 0, 0, 0);
    pod_unref(other);
    pod_unref(same);
    pod_unref(relabeled);
    queue_free(q);
}

static void test_update_active_reorders(void **st)
{
    sched_queue_t *q = newq(1, 1, 60000);
    add(q, "a", 1, 0);
    add(q, "b", 2, 0);
    pod_t *up = mkpod("a", 10);
    queue_update(q, up);
    pod_unref(up);
    pop_expect(q, "a");
    pop_expect(q, "b");
    queue_free(q);
}

static void test_update_while_inflight(void **st)
{
    sched_queue_t *q = newq(1000, 1000, 60000);
    add(q, "a", 0, 0);
    queue_item_t *it = queue_pop(q);
    pod_t *bigger = mkpod_full("a", 0, "2", NULL);
    queue_update(q, bigger);
    queue_requeue(q, it);
    /* Changed while out: back to active with the new object. */
    stats_expect(q, 1, 0, 0, 0);
    it = queue_pop_timeout(q, 0);
    assert_non_null(it);
    assert_ptr_equal(it->pod, bigger);

    /* A status-only update while out does not spare the unschedulable set. */
    pod_t *same = mkpod_full("a", 0, "2", NULL);
    queue_update(q, same);
    queue_requeue(q, it);
    stats_expect(q, 0, 0, 1, 0);
    it = queue_take(q, "a");
    assert_non_null(it);
    assert_ptr_equal(it->pod, same);
    queue_item_free(it);
    pod_unref(same);
    pod_unref(bigger);
    queue_free(q);
}

static void test_add_known_reactivates(void **st)
{
    sched_queue_t *q = newq(1, 1, 60000);
    add(q, "a", 0, 0);
    queue_requeue(q, queue_pop(q));
    stats_expect(q, 0, 0, 1, 0);
    add(q, "a", 0, 0);
    stats_expect(q, 1, 0, 0, 0);
    pop_expect(q, "a");
    queue_free(q);
}

static void test_take_and_take_all(void **st)
{
    sched_queue_t *q = newq(5000, 5000, 60000);
    add(q, "a", 1, 0);
    add(q, "b", 3, 0);
    add(q, "c", 2, 0);
    add(q, "d", 0, 0);
    add(q, "e", 0, 0);
    queue_item_t *it = queue_take(q, "c");
    assert_non_null(it);
    assert_string_equal(it->pod->uid, "c");
    queue_item_free(it);
    assert_null(queue_take(q, "c"));

    /* Park one in backoff, one unschedulable, one out with a caller. */
    queue_item_t *b = queue_pop(q);
    queue_requeue_backoff(q, b);
    queue_item_t *a = queue_pop(q);
    queue_requeue(q, a);
    queue_item_t *out = queue_pop(q);
    assert_true(!strcmp(out->pod->uid, "d") || !strcmp(out->pod->uid, "e"));
    assert_null(queue_take(q, out->pod->uid)); /* out: not queued */
    stats_expect(q, 1, 1, 1, 1);

    int n = -1;
    queue_item_t **all = queue_take_all(q, &n);
    assert_int_equal(n, 3);
    int seen = 0;
    for (int i = 0; i < n; i++) {
        const char *u = all[i]->pod->uid;
        /* d and e tie (same priority, same ms): either may be the one out. */
        int other = !strcmp(u, "d") || !strcmp(u, "e");
        assert_string_not_equal(u, out->pod->uid);
        seen |= !strcmp(u, "a") ? 1 : !strcmp(u, "b") ? 2 : other ? 4 : 8;
        queue_item_free(all[i]);
    }
    free(all);
    assert_int_equal(seen, 7);
    stats_expect(q, 0, 0, 0, 1);
    assert_null(queue_pop_timeout(q, 0));

    /* The queue keeps working after take_all. */
    add(q, "f", 0, 0);
    pop_expect(q, "f");
    queue_done(q, out);
    queue_item_free(out);
    queue_free(q);
}

static void test_pending_requests(void **st)
{
    sched_queue_t *q = newq(1, 1, 60000);
    pod_t *p = mkpod_full("a", 0, "500m", NULL);
    queue_add(q, p, 0);
    pod_unref(p);
    p = mkpod_full("b", 0, "2", NULL);
    queue_add(q, p, 0);
    pod_unref(p);
    resources_t sum;
    int n = 0;
    queue_pending_requests(q, &sum, &n);
    assert_int_equal(n, 2);
    assert_int_equal(sum.milli_cpu, 2500);
    queue_free(q);
}

struct popper {
    sched_queue_t *q;
    queue_item_t *got;
    int returned;
};

static void *pop_thread(void *arg)
{
    struct popper *p = arg;
    p->got = queue_pop(p->q);
    __atomic_store_n(&p->returned, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void test_close_wakes_pop(void **st)
{
    sched_queue_t *q = newq(1, 1, 60000);
    struct popper p = { .q = q };
    pthread_t th;
    pthread_create(&th, NULL, pop_thread, &p);
    util_sleep_ms(50);
    assert_int_equal(__atomic_load_n(&p.returned, __ATOMIC_SEQ_CST), 0);
    queue_close(q);
    pthread_join(th, NULL);
    assert_null(p.got);
    /* Closed: even a queued pod is not handed out. */
    add(q, "a", 0, 0);
    assert_null(queue_pop(q));
    queue_free(q);
}

static void test_add_wakes_pop(void **st)
{
    sched_queue_t *q = newq(1, 1, 60000);
    struct popper p = { .q = q };
    pthread_t th;
    pthread_create(&th, NULL, pop_thread, &p);
    util_sleep_ms(20);
    add(q, "a", 0, 0);
    pthread_join(th, NULL);
    assert_non_null(p.got);
    assert_string_equal(p.got->pod->uid, "a");
    queue_done(q, p.got);
    queue_item_free(p.got);
    queue_free(q);
}

/* ------------------------------------------------------------- stress */

#define NPROD   4
#define NCONS   4
#define PERPROD 300

struct stress {
    sched_queue_t *q;
    int id;
    int *done; /* atomic: pods finished */
    int *stop; /* atomic */
    int bad;   /* stats reader: inconsistent snapshots seen */
};

static void *producer(void *arg)
{
    struct stress *s = arg;
    char uid[32];
    for (int i = 0; i < PERPROD; i++) {
        snprintf(uid, sizeof(uid), "p%d-%d", s->id, i);
        add(s->q, uid, i % 7, i % 5 == 0);
        if (i % 50 == 0)
            queue_move_all_to_active(s->q, "stress");
        if (i % 97 == 0) {
            pod_t *up = mkpod_full(uid, 3, "2", NULL);
            queue_update(s->q, up);
            pod_unref(up);
        }
    }
    return NULL;
}

static void *consumer(void *arg)
{
    struct stress *s = arg;
    while (!__atomic_load_n(s->stop, __ATOMIC_SEQ_CST)) {
        queue_item_t *it = queue_pop_timeout(s->q, 20);
        if (!it) {
            queue_move_all_to_active(s->q, "idle");
            continue;
        }
        /* Fail each pod a couple of times, through both give-back paths. */
        if (it->attempts < 2) {
            if ((it->attempts + s->id) % 2)
                queue_requeue(s->q, it);
            else
                queue_requeue_backoff(s->q, it);
            continue;
        }
        queue_done(s->q, it);
        queue_item_free(it);
        __atomic_add_fetch(s->done, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static void *stats_reader(void *arg)
{
    struct stress *s = arg;
    while (!__atomic_load_n(s->stop, __ATOMIC_SEQ_CST)) {
        queue_stats_t st;
        resources_t r;
        int n;
        queue_get_stats(s->q, &st);
        queue_pending_requests(s->q, &r, &n);
        if (st.active < 0 || st.backoff < 0 || st.unschedulable < 0 || st.inflight > NCONS || n < 0 ||
            n > NPROD * PERPROD || r.milli_cpu < n * 1000)
            s->bad++;
        util_sleep_ms(1);
    }
    return NULL;
}

static void test_stress(void **st)
{
    sched_queue_t *q = newq(1, 4, 30);
    int done = 0, stop = 0;
    pthread_t prod[NPROD], cons[NCONS], rd;
    struct stress ps[NPROD], cs[NCONS], rs = { .q = q, .done = &done, .stop = &stop };
    for (int i = 0; i < NCONS; i++) {
        cs[i] = (struct stress){ .q = q, .id = i, .done = &done, .stop = &stop };
        pthread_create(&cons[i], NULL, consumer, &cs[i]);
    }
    pthread_create(&rd, NULL, stats_reader, &rs);
    for (int i = 0; i < NPROD; i++) {
        ps[i] = (struct stress){ .q = q, .id = i, .done = &done, .stop = &stop };
        pthread_create(&prod[i], NULL, producer, &ps[i]);
    }
    for (int i = 0; i < NPROD; i++)
        pthread_join(prod[i], NULL);
    int64_t deadline = util_now_ms() + 60000;
    while (__atomic_load_n(&done, __ATOMIC_SEQ_CST) < NPROD * PERPROD && util_now_ms() < deadline)
        util_sleep_ms(5);
    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
    queue_close(q);
    for (int i = 0; i < NCONS; i++)
        pthread_join(cons[i], NULL);
    pthread_join(rd, NULL);
    assert_int_equal(done, NPROD * PERPROD);
    assert_int_equal(rs.bad, 0);
    stats_expect(q, 0, 0, 0, 0);
    queue_free(q);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_priority_order),
        cmocka_unit_test(test_borrower_rank),
        cmocka_unit_test(test_default_less_direct),
        cmocka_unit_test(test_custom_less),
        cmocka_unit_test(test_backoff_exponential),
        cmocka_unit_test(test_failure_goes_unschedulable),
        cmocka_unit_test(test_move_during_cycle_goes_to_backoff),
        cmocka_unit_test(test_move_all_respects_backoff),
        cmocka_unit_test(test_move_matching),
        cmocka_unit_test(test_unschedulable_flush),
        cmocka_unit_test(test_requeue_at_wakes),
        cmocka_unit_test(test_activate_oldest_skips_unschedulable),
        cmocka_unit_test(test_delete_queued_and_inflight),
        cmocka_unit_test(test_done_forgets_marks),
        cmocka_unit_test(test_update_unschedulable),
        cmocka_unit_test(test_update_active_reorders),
        cmocka_unit_test(test_update_while_inflight),
        cmocka_unit_test(test_add_known_reactivates),
        cmocka_unit_test(test_take_and_take_all),
        cmocka_unit_test(test_pending_requests),
        cmocka_unit_test(test_close_wakes_pop),
        cmocka_unit_test(test_add_wakes_pop),
        cmocka_unit_test(test_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
