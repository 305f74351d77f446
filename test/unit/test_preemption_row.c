/* test_preemption_row.c -- the preemption row alone (pkg/preemption/row.c),
 * on a fake services table: the evaluator is the core's (services.h's
 * preempt), so the row's part is whether it asks, what it does with the
 * answer, and the nominations it lets go of when no room is made. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gang/gang.h"
#include "preemption/row.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fake_services.h"
#include "fixtures.h"

typedef struct fake {
    fake_core_t fc; /* first: the core the row's calls get */
    int made, kept;
    int asked;     /* preempt calls */
    int asked_set; /* the set's need as the evaluator got it */
    char dropped[4][64];
    int ndropped;
    int32_t victim_prio; /* pod_priority's answer (the gang class's included) */
    int member_class;    /* gang_member_class's answer */
} fake_t;

static int32_t f_pod_priority(void *core, const pod_t *pod)
{
    (void)pod;
    return ((fake_t *)core)->victim_prio;
}

static int f_gang_member_class(void *core, const pod_t *pod)
{
    (void)pod;
    return ((fake_t *)core)->member_class;
}

static int f_preempt(void *core, struct pod_set *set, preempt_outcome_t *seen, char **kept)
{
    fake_t *f = core;
    f->asked++;
    f->asked_set = set->need;
    memset(seen, 0, sizeof(*seen));
    seen->nodes = 3;
    *kept = f->kept ? util_strdup("preemption: 1 pod that could make room is never preempted (test)") : NULL;
    return f->made;
}

static void f_drop_nomination(void *core, const pod_t *pod)
{
    fake_t *f = core;
    assert_true(f->ndropped < 4);
    snprintf(f->dropped[f->ndropped++], 64, "%s", pod->key);
}

static sched_row_t setup(fake_t *f)
{
    memset(f, 0, sizeof(*f));
    fake_core_init(&f->fc);
    f->fc.svc.preempt = f_preempt;
    f->fc.svc.drop_nomination = f_drop_nomination;
    f->fc.svc.pod_priority = f_pod_priority;
    f->fc.svc.gang_member_class = f_gang_member_class;
    return fake_row(&f->fc, NULL);
}

static pod_t *pod_named(const char *name)
{
    char buf[300];
    snprintf(buf, sizeof(buf), "{'metadata':{'name':'%s','namespace':'ns','uid':'u-%s'},'spec':{'containers':[]}}",
             name, name);
    return fx_pod(buf);
}

/* A gang's minimum of two and one elastic member beyond it. */
static void set_of(pod_set_t *set, queue_item_t *its, pod_t **pods)
{
    memset(set, 0, sizeof(*set));
    set->items = util_xcalloc(4, sizeof(*set->items));
    for (int i = 0; i < 3; i++) {
        memset(&its[i], 0, sizeof(its[i]));
        its[i].pod = pods[i];
        set->items[i] = &its[i];
    }
    set->kind = SET_MINIMUM;
    set->n = 3;
    set->need = 2;
    set->pool_name = "default";
}

/* Room made: the row is done and keeps every nomination. No room (a
 * minimum runtime kept victims, or none): every member, the elastic one
 * too, gives its nominated room up and the next row runs. Preemption off:
 * the evaluator is not asked, and the nominations go. */
static void test_room_or_nominations_dropped(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row = setup(&f);
    f.fc.may_evict = 1;
    f.made = 1;
    pod_t *pods[3] = { pod_named("m0"), pod_named("m1"), pod_named("m2") };
    pod_set_t set;
    queue_item_t its[3];
    set_of(&set, its, pods);
    assert_int_equal(preemption_row_post_filter(&row, &set), EXT_DONE);
    assert_int_equal(f.asked, 1);
    assert_int_equal(f.asked_set, 2);
    assert_int_equal(f.ndropped, 0);

    f.made = 0;
    f.kept = 1;
    assert_int_equal(preemption_row_post_filter(&row, &set), EXT_NEXT);
    assert_int_equal(f.asked, 2);
    assert_int_equal(f.ndropped, 3);
    assert_string_equal(f.dropped[0], "ns/m0");
    assert_string_equal(f.dropped[2], "ns/m2");

    f.fc.may_evict = 0;
    f.ndropped = 0;
    assert_int_equal(preemption_row_post_filter(&row, &set), EXT_NEXT);
    assert_int_equal(f.asked, 2);
    assert_int_equal(f.ndropped, 3);
    fake_set_done(&set);
    for (int i = 0; i < 3; i++)
        pod_unref(pods[i]);
}

/* The victims point: a pod below the preemptor's priority, or below its
 * gang class's when that is higher, may go (as preemption); ranks are
 * 4 x priority, one more for a gang member that keeps its minimum, and
 * elastic surplus far below. */
static void test_victims_by_priority(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row = setup(&f);
    f.victim_prio = 5;
    f.member_class = GANG_MEMBER_NONE;
    pod_t *v = pod_named("v");
    pod_t *pre = pod_named("pre");
    pre->priority = 10;
    sched_victim_q_t q = { .victim = v, .preemptor = pre };
    sched_victim_answer_t a = { 0 };
    preemption_row_victims(&row, &q, &a);
    assert_int_equal(a.rule, VICTIM_BY_PRIORITY);
    assert_int_equal(a.may, 1);
    assert_int_equal(a.kind, FS_MINRT_PREEMPT);
    assert_int_equal(a.rank, 20);

    pre->priority = 5; /* equal: not a victim */
    memset(&a, 0, sizeof(a));
    preemption_row_victims(&row, &q, &a);
    assert_int_equal(a.rule, VICTIM_BY_PRIORITY);
    assert_int_equal(a.may, 0);
    q.has_group_prio = 1; /* the preemptor's group class is higher */
    q.group_prio = 6;
    memset(&a, 0, sizeof(a));
    preemption_row_victims(&row, &q, &a);
    assert_int_equal(a.may, 1);
    pod_unref(v);

    /* A gang member: the class moves its rank. */
    v = fx_pod("{'metadata':{'name':'g','namespace':'ns','uid':'u-g','labels':{'" GANG_LABEL
               "':'pg'}},'spec':{'containers':[]}}");
    q.victim = v;
    f.member_class = GANG_MEMBER_MINIMUM;
    memset(&a, 0, sizeof(a));
    preemption_row_victims(&row, &q, &a);
    assert_int_equal(a.rank, 21);
    f.member_class = GANG_MEMBER_SURPLUS;
    memset(&a, 0, sizeof(a));
    preemption_row_victims(&row, &q, &a);
    assert_true(a.rank == 20 - (((int64_t)1) << 36));
    pod_unref(v);
    pod_unref(pre);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_room_or_nominations_dropped),
        cmocka_unit_test(test_victims_by_priority),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
