/* test_sched_events.c -- how an event's wake is decided (events.c,
 * sched_events_fan_out): fake rows answer on_event, a fake sink records
 * which pools' waiting pods move. No scheduler is built. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/capabilities.h"
#include "scheduler/extension.h"

#include "fixtures.h"

#define NPOOLS 3

/* What the sink was asked, per pool: 'A' all, 'S' some (match kept to be
 * tried on pods), '-' nothing; a pool asked twice is a fault. */
typedef struct sink_rec {
    char did[NPOOLS];
    queue_pod_pred_fn match[NPOOLS];
    void *match_ud[NPOOLS];
    const char *reason;
} sink_rec_t;

static void rec_all(void *ud, int pool, const char *reason)
{
    sink_rec_t *r = ud;
    assert_true(pool >= 0 && pool < NPOOLS);
    assert_int_equal(r->did[pool], '-');
    r->did[pool] = 'A';
    r->reason = reason;
}

/* The sink keeps match: the fan-out's ud lives only during the call, so
 * the test tries it on pods inside, with the pods of the case. */
static const pod_t *const *try_pods;
static char tried[NPOOLS][8];

static void rec_some(void *ud, int pool, queue_pod_pred_fn match, void *match_ud, const char *reason)
{
    sink_rec_t *r = ud;
    assert_true(pool >= 0 && pool < NPOOLS);
    assert_int_equal(r->did[pool], '-');
    r->did[pool] = 'S';
    r->reason = reason;
    for (int i = 0; try_pods && try_pods[i]; i++)
        tried[pool][i] = match(try_pods[i], 0, match_ud) ? 'y' : 'n';
}

/* A fake row's answer, read from its room. */
typedef struct fake_row {
    int answers;        /* 0: no opinion */
    const char *letter; /* its match admits pods whose name starts so */
    sched_wake_t wake;
    int asked, released;
    sched_event_kind_t seen;
} fake_row_t;

static int fake_on_event(const sched_row_t *row, const sched_event_t *ev, sched_wake_t *wake)
{
    fake_row_t *f = row->self;
    f->asked++;
    f->seen = ev->kind;
    assert_int_equal(wake->pool, -1); /* zeroed, no pool named */
    assert_int_equal(wake->in_pool, SCHED_WAKE_NONE);
    assert_int_equal(wake->others, SCHED_WAKE_NONE);
    if (!f->answers)
        return 0;
    *wake = f->wake;
    return 1;
}

static void fake_release(void *ud)
{
    ((fake_row_t *)ud)->released++;
}

/* Admits pods whose name starts with the fake row's letter (ud). */
static int name_starts(const pod_t *pod, int tenant, void *ud)
{
    (void)tenant;
    return pod->name[0] == ((fake_row_t *)ud)->letter[0];
}

/* Runs the rows f[0..n) (a row without on_event between each two, which
 * is never asked) on a PodDeleted event; returns how many answered. */
static int fan_out(fake_row_t *f, int n, sink_rec_t *r)
{
    sched_ext_t ext[8] = { 0 };
    sched_row_t rows[8] = { 0 };
    int k = 0;
    for (int i = 0; i < n; i++) {
        ext[k] = (sched_ext_t){ .name = "silent" };
        rows[k++] = (sched_row_t){ 0 };
        ext[k] = (sched_ext_t){ .name = "fake", .on_event = fake_on_event };
        rows[k++] = (sched_row_t){ .self = &f[i] };
    }
    memset(r, 0, sizeof(*r));
    memset(r->did, '-', sizeof(r->did));
    memset(tried, 0, sizeof(tried));
    sched_event_t ev = { SCHED_EV_POD_DELETED, NULL, "n1", "PodDeleted" };
    sched_wake_sink_t sink = { NPOOLS, rec_all, rec_some, r };
    return sched_events_fan_out(ext, rows, k, &ev, &sink);
}

/* f's answer "the pods of pool whose name starts with letter", and others
 * for every other pool; released unless no_release. */
static void some_of(fake_row_t *f, int pool, const char *letter, sched_wake_level_t others, int no_release)
{
    f->answers = 1;
    f->letter = letter;
    f->wake = (sched_wake_t){ .pool = pool,
                              .in_pool = SCHED_WAKE_SOME,
                              .others = others,
                              .match = name_starts,
                              .ud = f,
                              .release = no_release ? NULL : fake_release };
}

/* No row has an opinion: every pool's waiting pods move (today's
 * behaviour for any event). */
static void test_no_opinion_wakes_every_pool(void **st)
{
    (void)st;
    fake_row_t f[2] = { 0 };
    sink_rec_t r;
    assert_int_equal(fan_out(f, 2, &r), 0);
    assert_memory_equal(r.did, "AAA", NPOOLS);
    assert_string_equal(r.reason, "PodDeleted");
    assert_int_equal(f[0].asked, 1);
    assert_int_equal(f[1].asked, 1);
    assert_int_equal(f[0].seen, SCHED_EV_POD_DELETED);
}

/* A row that answers "nothing" keeps the default from waking anyone. */
static void test_nothing_wakes_nothing(void **st)
{
    (void)st;
    fake_row_t f[2] = { { .answers = 1, .wake = { .pool = -1 } }, { 0 } };
    sink_rec_t r;
    assert_int_equal(fan_out(f, 2, &r), 1);
    assert_memory_equal(r.did, "---", NPOOLS);
}

/* "Only these pods of pool 1" with no row saying more is exactly that:
 * pool 1's pods the match admits, the other pools nothing. */
static void test_some_of_one_pool_is_exactly_that(void **st)
{
    (void)st;
    fake_row_t f[1] = { { 0 } };
    some_of(&f[0], 1, "a", SCHED_WAKE_NONE, 0);
    pod_t *a = fx_pod("{'metadata':{'name':'a1','namespace':'ns','uid':'u1'}}");
    pod_t *b = fx_pod("{'metadata':{'name':'b1','namespace':'ns','uid':'u2'}}");
    const pod_t *pods[] = { a, b, NULL };
    try_pods = pods;
    sink_rec_t r;
    assert_int_equal(fan_out(f, 1, &r), 1);
    try_pods = NULL;
    assert_memory_equal(r.did, "-S-", NPOOLS);
    assert_memory_equal(tried[1], "yn", 2);
    assert_int_equal(f[0].released, 1); /* once, after the wake */
    pod_unref(a);
    pod_unref(b);
}

/* The widest answer wins: a row's "every pool" beats another's "some of
 * pool 1"; the narrow answer's ud is still released. */
static void test_all_beats_some(void **st)
{
    (void)st;
    fake_row_t f[2] = { { 0 }, { .answers = 1, .wake = { .pool = -1, .others = SCHED_WAKE_ALL } } };
    some_of(&f[0], 1, "a", SCHED_WAKE_NONE, 0);
    sink_rec_t r;
    assert_int_equal(fan_out(f, 2, &r), 2);
    assert_memory_equal(r.did, "AAA", NPOOLS);
    assert_int_equal(f[0].released, 1);
    /* Whatever the rows' order. */
    fake_row_t g[2] = { f[1], { 0 } };
    some_of(&g[1], 1, "a", SCHED_WAKE_NONE, 0);
    assert_int_equal(fan_out(g, 2, &r), 2);
    assert_memory_equal(r.did, "AAA", NPOOLS);
    assert_int_equal(g[1].released, 1);
}

/* The reservation's answer: some of its pool, every other pool whole; a
 * second row's "all of pool 1" widens pool 1 only. */
static void test_some_here_all_elsewhere(void **st)
{
    (void)st;
    fake_row_t f[2] = { { 0 } };
    some_of(&f[0], 1, "a", SCHED_WAKE_ALL, 1);
    sink_rec_t r;
    fan_out(f, 2, &r);
    assert_memory_equal(r.did, "ASA", NPOOLS);
    f[1] = (fake_row_t){ .answers = 1, .wake = { .pool = 1, .in_pool = SCHED_WAKE_ALL } };
    fan_out(f, 2, &r);
    assert_memory_equal(r.did, "AAA", NPOOLS);
    /* A whole pool named alone wakes that pool only. */
    f[0] = (fake_row_t){ .answers = 1, .wake = { .pool = 2, .in_pool = SCHED_WAKE_ALL } };
    f[1] = (fake_row_t){ 0 };
    fan_out(f, 2, &r);
    assert_memory_equal(r.did, "--A", NPOOLS);
}

/* Two rows' "some of pool 0": one move, of the pods either admits. */
static void test_two_somes_admit_either(void **st)
{
    (void)st;
    fake_row_t f[2] = { { 0 } };
    some_of(&f[0], 0, "a", SCHED_WAKE_NONE, 0);
    some_of(&f[1], 0, "b", SCHED_WAKE_NONE, 0);
    pod_t *a = fx_pod("{'metadata':{'name':'a1','namespace':'ns','uid':'u1'}}");
    pod_t *b = fx_pod("{'metadata':{'name':'b1','namespace':'ns','uid':'u2'}}");
    pod_t *c = fx_pod("{'metadata':{'name':'c1','namespace':'ns','uid':'u3'}}");
    const pod_t *pods[] = { a, b, c, NULL };
    try_pods = pods;
    sink_rec_t r;
    assert_int_equal(fan_out(f, 2, &r), 2);
    try_pods = NULL;
    assert_memory_equal(r.did, "S--", NPOOLS);
    assert_memory_equal(tried[0], "yyn", 3);
    assert_int_equal(f[0].released, 1);
    assert_int_equal(f[1].released, 1);
    pod_unref(a);
    pod_unref(b);
    pod_unref(c);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_opinion_wakes_every_pool),      cmocka_unit_test(test_nothing_wakes_nothing),
        cmocka_unit_test(test_some_of_one_pool_is_exactly_that), cmocka_unit_test(test_all_beats_some),
        cmocka_unit_test(test_some_here_all_elsewhere),          cmocka_unit_test(test_two_somes_admit_either),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
