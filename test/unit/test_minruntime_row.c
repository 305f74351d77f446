/* test_minruntime_row.c -- the minimum-runtime row alone
 * (pkg/minruntime/row.c), on a fake services table: a victim the rules
 * allow is kept while young or while its elastic gang is frozen (protect),
 * what it kept is said on the set with the time to retry (kept), and a
 * gang whose surplus is taken starts a new freezing window (victims_taken). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fairshare/fairshare.h"
#include "gang/gang.h"
#include "minruntime/row.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fixtures.h"

typedef struct fake {
    int64_t pool_preempt, pool_reclaim; /* the home pool's defaults */
    int any_pool, any_queue;
    int pool_asked;       /* pool_min_runtime calls */
    int member_class;     /* gang_member_class's answer */
    int64_t resize_start; /* gang_resize_start's answer, and its window */
    int64_t window;
    int64_t last_start; /* gang_last_start's answer */
    char resized[64];   /* the gang gang_resized was told of */
    int nresized;
} fake_t;

static int64_t f_pool_min_runtime(void *core, int pool, int kind, char *name, size_t len)
{
    fake_t *f = core;
    f->pool_asked++;
    assert_int_equal(pool, 0);
    snprintf(name, len, "default");
    return kind == FS_MINRT_RECLAIM ? f->pool_reclaim : f->pool_preempt;
}

static int f_any_pool(void *core)
{
    return ((fake_t *)core)->any_pool;
}

static int64_t f_queue_min_runtime(void *core, int tenant, int kind, int64_t pool_default, char **from)
{
    (void)core;
    (void)tenant;
    (void)kind;
    *from = NULL; /* no queue sets one: the pool's */
    return pool_default;
}

static int f_any_queue(void *core)
{
    return ((fake_t *)core)->any_queue;
}

static int f_home_pool(void *core, const pod_t *pod)
{
    (void)core;
    (void)pod;
    return 0;
}

static int f_tenant_of(void *core, const pod_t *pod)
{
    (void)core;
    (void)pod;
    return -1;
}

static int f_gang_member_class(void *core, const pod_t *pod)
{
    (void)pod;
    return ((fake_t *)core)->member_class;
}

static int64_t f_gang_resize_start(void *core, const char *ns, const char *group, int64_t *win)
{
    fake_t *f = core;
    (void)ns;
    (void)group;
    *win = f->window;
    return f->resize_start;
}

static int64_t f_gang_last_start(void *core, const pod_t *pod)
{
    fake_t *f = core;
    return f->last_start ? f->last_start : pod->started_ms;
}

static void f_gang_resized(void *core, const char *ns, const char *group, int64_t now_wall)
{
    fake_t *f = core;
    (void)now_wall;
    snprintf(f->resized, sizeof(f->resized), "%s/%s", ns, group);
    f->nresized++;
}

static const sched_services_t fake_services = {
    .pool_min_runtime = f_pool_min_runtime,
    .any_pool_min_runtime = f_any_pool,
    .queue_min_runtime = f_queue_min_runtime,
    .any_queue_min_runtime = f_any_queue,
    .home_pool = f_home_pool,
    .tenant_of = f_tenant_of,
    .gang_member_class = f_gang_member_class,
    .gang_resize_start = f_gang_resize_start,
    .gang_last_start = f_gang_last_start,
    .gang_resized = f_gang_resized,
};

/* A running pod started ago_s seconds before now (labels: extra metadata). */
static pod_t *running(const char *name, const char *labels, int64_t now, int ago_s)
{
    char buf[400];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'ns','uid':'u-%s'%s},'spec':{'nodeName':'n1','containers':[]},"
             "'status':{'phase':'Running'}}",
             name, name, labels);
    pod_t *p = fx_pod(buf);
    p->started_ms = now - (int64_t)ago_s * 1000;
    return p;
}

static void set_done(pod_set_t *set)
{
    free(set->wait_note);
    set->wait_note = NULL;
}

/* A pod younger than its pool's preemptMinRuntime is never a victim of
 * priority preemption; an older one, or one judged for reclaim (no
 * reclaimMinRuntime), is. What was kept goes on the set that waits, with
 * the time it may go as the set's retry time. */
static void test_young_pod_never_a_victim(void **state)
{
    (void)state;
    int64_t now = util_wall_ms();
    fake_t f = { .pool_preempt = 600000, .any_pool = 1 };
    sched_row_t row = { .svc = &fake_services, .core = &f, .index = 3 };
    pod_t *young = running("young", "", now, 60), *old = running("old", "", now, 3600);
    pod_t *pre = running("pre", "", now, 0);
    pod_set_t set = { 0 };
    sched_victim_q_t q = { .victim = young, .preemptor = pre, .now_wall = now, .set = &set };
    assert_int_equal(minrt_row_protect(&row, &q, FS_MINRT_PREEMPT), 1);
    assert_non_null(set.slot[3]);
    assert_int_equal(minrt_row_protect(&row, &q, FS_MINRT_RECLAIM), 0);
    q.victim = old;
    assert_int_equal(minrt_row_protect(&row, &q, FS_MINRT_PREEMPT), 0);

    char *text = NULL;
    minrt_row_kept(&row, &set, 0, &text);
    char t[40], want[300];
    util_rfc3339(young->started_ms + 600000, t, sizeof(t));
    snprintf(want, sizeof(want),
             "preemption: 1 pod that could make room is protected by a minimum runtime until %s "
             "(pool \"default\": preemptMinRuntime 10m)",
             t);
    assert_non_null(text);
    assert_string_equal(text, want);
    assert_string_equal(set.wait_note, want);
    assert_int_equal(set.wake_wall_ms, young->started_ms + 600000);
    assert_null(set.slot[3]); /* said once, then forgotten */
    free(text);
    text = NULL;
    set_done(&set);

    /* Room was made: the set waits for nothing, the step still says it. */
    q.victim = young;
    assert_int_equal(minrt_row_protect(&row, &q, FS_MINRT_PREEMPT), 1);
    set.wake_wall_ms = 0;
    minrt_row_kept(&row, &set, 1, &text);
    assert_non_null(text);
    assert_null(set.wait_note);
    assert_int_equal(set.wake_wall_ms, 0);
    free(text);

    /* A pod's annotation lowers the minimum: 30 s, it is old enough. */
    young->preempt_min_runtime_ms = 30000;
    assert_int_equal(minrt_row_protect(&row, &q, FS_MINRT_PREEMPT), 0);
    /* "-1" is never: no time to retry at. */
    young->preempt_min_runtime_ms = DURATION_UNSET;
    f.pool_preempt = -1;
    q.victim = old;
    assert_int_equal(minrt_row_protect(&row, &q, FS_MINRT_PREEMPT), 1);
    minrt_row_kept(&row, &set, 0, NULL);
    assert_non_null(strstr(set.wait_note, "1 pod that could make room is never preempted"));
    assert_int_equal(set.wake_wall_ms, 0);
    set_done(&set);
    pod_unref(young);
    pod_unref(old);
    pod_unref(pre);
}

/* Nothing configured: no pool or queue is asked per victim, nothing is
 * kept, and no set is noted; past its lifetime a young pod goes too. */
static void test_nothing_configured(void **state)
{
    (void)state;
    int64_t now = util_wall_ms();
    fake_t f = { .pool_preempt = 600000 };
    sched_row_t row = { .svc = &fake_services, .core = &f, .index = 0 };
    pod_t *young = running("young", "", now, 60);
    pod_set_t set = { 0 };
    sched_victim_q_t q = { .victim = young, .now_wall = now, .set = &set };
    assert_int_equal(minrt_row_protect(&row, &q, FS_MINRT_PREEMPT), 0);
    assert_int_equal(f.pool_asked, 0);
    assert_null(set.slot[0]);
    f.any_pool = 1;
    young->lifetime_s = 10;
    assert_int_equal(minrt_row_protect(&row, &q, FS_MINRT_PREEMPT), 0);
    minrt_row_end(&row, &set);
    pod_unref(young);
}

/* An elastic gang's surplus inside the PodGroup's freezing window is kept
 * whatever its age; the window ends at the gang's last resize plus it.
 * Taking a surplus member resizes its gang, a minimum member does not. */
static void test_frozen_surplus(void **state)
{
    (void)state;
    int64_t now = util_wall_ms();
    fake_t f = { .member_class = GANG_MEMBER_SURPLUS, .resize_start = now - 1000, .window = 300000 };
    sched_row_t row = { .svc = &fake_services, .core = &f, .index = 1 };
    pod_t *m = running("m", ",'labels':{'" GANG_LABEL "':'g'}", now, 3600);
    pod_set_t set = { 0 };
    sched_victim_q_t q = { .victim = m, .now_wall = now, .set = &set };
    char src[300];
    assert_int_equal(minrt_protected_until(&row, m, FS_MINRT_RECLAIM, now, src, sizeof(src)), now - 1000 + 300000);
    assert_string_equal(src, "pod group ns/g: " GANG_FREEZING_WINDOW_ANNOTATION " 5m");
    assert_int_equal(minrt_row_protect(&row, &q, FS_MINRT_RECLAIM), 1);
    minrt_row_kept(&row, &set, 0, NULL);
    assert_int_equal(set.wake_wall_ms, now - 1000 + 300000);
    set_done(&set);
    /* The window is over: an old surplus member goes. */
    f.resize_start = now - 600000;
    assert_int_equal(minrt_row_protect(&row, &q, FS_MINRT_RECLAIM), 0);

    pod_t *victims[1] = { m };
    minrt_row_victims_taken(&row, victims, 1);
    assert_int_equal(f.nresized, 1);
    assert_string_equal(f.resized, "ns/g");
    f.member_class = GANG_MEMBER_MINIMUM;
    minrt_row_victims_taken(&row, victims, 1);
    assert_int_equal(f.nresized, 1);
    minrt_row_end(&row, &set);
    pod_unref(m);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_young_pod_never_a_victim),
        cmocka_unit_test(test_nothing_configured),
        cmocka_unit_test(test_frozen_surplus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
