/* test_fairshare_row.c -- the tenants row alone (pkg/fairshare/row.c), on
 * a fake services table: a Queue fed to the row's watch, pods charged
 * through the queues interface it publishes, and its admit, watch and
 * housekeep points. No scheduler is built: what the row asks of the core
 * is exactly the table's calls, and what it does is what they recorded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fairshare/fairshare.h"
#include "fairshare/row.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fake_services.h"
#include "fixtures.h"

typedef struct fake {
    fake_core_t fc; /* first: the core the row's calls get (no node: the pool's capacity is zero) */
    int nevict;     /* evict_for_limit calls */
} fake_t;

static char *f_gang_queue(void *core, const char *ns, const char *name)
{
    (void)core;
    (void)ns;
    (void)name;
    return NULL;
}

static void f_accounting_read(void *core, void (*fn)(void *ud), void *ud)
{
    (void)core;
    fn(ud);
}

static void f_pools_each(void *core, void (*fn)(void *ud, struct sched_pool *P), void *ud)
{
    (void)core;
    (void)fn;
    (void)ud; /* no pool thread in this test */
}

static int f_bind_backlog(void *core)
{
    (void)core;
    return 0;
}

static int f_limit_room_pending(void *core, const char *uid)
{
    (void)core;
    (void)uid;
    return 0;
}

static int f_evict_for_limit(void *core, struct pod_set *set, int pool, char **uids, int n)
{
    fake_t *f = core;
    (void)set;
    (void)pool;
    f->nevict++;
    for (int i = 0; i < n; i++)
        free(uids[i]);
    free(uids);
    return 0;
}

/* A pod of queue train asking cpu millicores, bound to node (or pending). */
static pod_t *tpod(const char *name, const char *node, int cpu)
{
    char buf[600];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'ns','uid':'u-%s','labels':{'" FS_QUEUE_LABEL "':'train'}},"
             "'spec':{'nodeName':'%s','containers':[{'name':'c','resources':{'requests':{'cpu':'%dm'}}}]}}",
             name, name, node, cpu);
    return fx_pod(buf);
}

/* Queue train: a CPU limit of 2 cores. */
static void add_train(const sched_row_t *row)
{
    json_t *q = parse_sq("{'apiVersion':'resource.aibee.cn/v1alpha1','kind':'Queue','metadata':{'name':'train',"
                         "'uid':'q-train'},'spec':{'resources':{'cpu':{'limit':2000}}}}");
    tenants_row_watches[0].on_event(row->self, KUBE_ADDED, "train", q);
    json_decref(q);
}

static void setup(fake_t *f, sched_row_t *row, sched_queues_t *q)
{
    memset(f, 0, sizeof(*f));
    fake_core_init(&f->fc);
    f->fc.svc.gang_queue = f_gang_queue;
    f->fc.svc.accounting_read = f_accounting_read;
    f->fc.svc.pools_each = f_pools_each;
    f->fc.svc.bind_backlog = f_bind_backlog;
    f->fc.svc.limit_room_pending = f_limit_room_pending;
    f->fc.svc.evict_for_limit = f_evict_for_limit;
    *row = fake_row(&f->fc, tenants_row_init(&f->fc.svc, &f->fc));
    tenants_row_queues(row, q);
}

/* A set of one for pod (no pool thread: the row sees only the set). */
static void set_of(const sched_queues_t *q, pod_set_t *set, queue_item_t *it, pod_t *pod)
{
    memset(it, 0, sizeof(*it));
    fake_lone_set(set, it, pod);
    it->tenant = q->ops->tenant_of(q->self, pod);
}
/* Queue train may use 2 cores and runs a pod of 1.5: a pod of 1 core is
 * held with the limit's message (preemption off: nothing is evicted, no
 * reclaim is said); a pod of 0.4 core fits under the limit. */
static void test_admit_holds_over_limit(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    sched_queues_t q;
    setup(&f, &row, &q);
    assert_false(q.ops->active(q.self));
    add_train(&row);
    assert_true(q.ops->active(q.self));
    assert_int_equal(f.fc.nwakes, 1);
    assert_int_equal(f.fc.wake_pool, -1); /* every pool's */
    assert_string_equal(f.fc.wake, "QueueChanged");

    pod_t *run = tpod("run", "n0", 1500);
    q.ops->account(q.self, run, NULL, +1); /* the cache's hook: running in pool 0 */
    assert_true(q.ops->is_charged(q.self, "u-run"));

    pod_t *big = tpod("big", "", 1000);
    pod_set_t set;
    queue_item_t it;
    set_of(&q, &set, &it, big);
    assert_int_equal(tenants_row_admit(&row, &set), EXT_HOLD);
    assert_string_equal(set.why, "queue \"train\" limit: cpu 1500m + 1000m > 2000m");
    assert_int_equal(f.nevict, 0);
    fake_set_done(&set);
    /* The same pod borrowing: the lender's numbers refuse it, so it fails
     * (the lender row sends it home) instead of waiting in the lender. */
    set_of(&q, &set, &it, big);
    it.borrower = 1;
    assert_int_equal(tenants_row_admit(&row, &set), EXT_FAIL);
    assert_string_equal(set.why, "queue \"train\" limit: cpu 1500m + 1000m > 2000m");
    fake_set_done(&set);

    pod_t *small = tpod("small", "", 400);
    set_of(&q, &set, &it, small);
    assert_int_equal(tenants_row_admit(&row, &set), EXT_NEXT);
    assert_null(set.why);
    fake_set_done(&set);

    /* The running pod gone, the big one fits too. */
    q.ops->account(q.self, run, NULL, -1);
    assert_false(q.ops->is_charged(q.self, "u-run"));
    set_of(&q, &set, &it, big);
    assert_int_equal(tenants_row_admit(&row, &set), EXT_NEXT);
    fake_set_done(&set);

    pod_unref(run);
    pod_unref(big);
    pod_unref(small);
    tenants_row_fini(row.self);
    fake_core_free(&f.fc);
}

/* A pod naming a queue that does not exist is told once, at its first
 * admission, that it counts in the default queue. */
static void test_admit_notes_unknown_queue_once(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    sched_queues_t q;
    setup(&f, &row, &q);
    add_train(&row);
    pod_t *p = fx_pod("{'metadata':{'name':'lost','namespace':'ns','uid':'u-lost','labels':{'" FS_QUEUE_LABEL
                      "':'nosuch'}},'spec':{'containers':[{'name':'c'}]}}");
    pod_set_t set;
    queue_item_t it;
    set_of(&q, &set, &it, p);
    assert_int_equal(tenants_row_admit(&row, &set), EXT_NEXT);
    assert_int_equal(f.fc.nevents, 1);
    assert_non_null(strstr(f.fc.event, "ns/lost Warning UnknownQueue "));
    assert_non_null(strstr(f.fc.event, "nosuch"));
    assert_int_equal(tenants_row_admit(&row, &set), EXT_NEXT);
    assert_int_equal(f.fc.nevents, 1);
    fake_set_done(&set);
    pod_unref(p);
    tenants_row_fini(row.self);
    fake_core_free(&f.fc);
}

/* Housekeeping writes the new Queue's status through the services' patch
 * (and nothing while the scheduler has no Queue). */
static void test_housekeep_writes_queue_status(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    sched_queues_t q;
    setup(&f, &row, &q);
    tenants_row_housekeep(&row);
    assert_int_equal(f.fc.nreqs, 0);
    add_train(&row);
    tenants_row_housekeep(&row);
    assert_int_equal(f.fc.nreqs, 1);
    assert_string_equal(f.fc.req[0].method, "PATCH");
    assert_string_equal(f.fc.req[0].path, FS_QUEUE_API "/queues/train/status");
    tenants_row_fini(row.self);
    fake_core_free(&f.fc);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admit_holds_over_limit),
        cmocka_unit_test(test_admit_notes_unknown_queue_once),
        cmocka_unit_test(test_housekeep_writes_queue_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
