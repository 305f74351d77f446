/* test_pool_row.c -- the lender and borrowing rows alone (pkg/pool/row.c),
 * on a fake services table: a home pool and five others, each other pool
 * one 8-GPU node with a known load. No scheduler is built: what the rows
 * ask of the core is exactly the table's calls, and what they do is what
 * those calls recorded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pool/pool.h"
#include "pool/row.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fake_services.h"
#include "fixtures.h"

enum { HOME = 0, P1, P2, P3, NOSHARE, DEAD, NPOOLS };

typedef struct fake {
    fake_core_t fc; /* first: the core the rows' calls get */
    pool_spec_t spec[NPOOLS];
    int dead[NPOOLS];
    int queued[NPOOLS];
    int gang_fits[NPOOLS];
    int room_asked[NPOOLS];  /* pool_room_for's n, per pool */
    node_info_t *ni[NPOOLS]; /* by pool; those with a node are fc.nodes too */
    node_info_t *nodes[NPOOLS];
    pod_t *load[16];
    int nload;
    int nmoves, move_from[4], move_to[4];
    queue_item_t *moved[4];
} fake_t;

static void f_pools_visit(void *core, sched_pools_fn fn, void *ud)
{
    fake_t *f = core;
    sched_pool_info_t info[NPOOLS];
    for (int i = 0; i < NPOOLS; i++)
        info[i] = (sched_pool_info_t){ .id = i, .name = f->spec[i].name, .spec = &f->spec[i], .dead = f->dead[i] };
    fn(ud, info, NPOOLS);
}

static int f_pool_queued(void *core, int pool)
{
    fake_t *f = core;
    return f->dead[pool] ? -1 : f->queued[pool];
}

/* A gang's room: the pool's node sums, and the fit the case sets. */
static int f_pool_room_for(void *core, int pool, pod_t *const *pods, int n, resources_t *alloc, resources_t *used,
                           int *tasks)
{
    fake_t *f = core;
    (void)pods;
    f->room_asked[pool] = n;
    *alloc = f->ni[pool]->node->allocatable;
    *used = f->ni[pool]->requested;
    *tasks = f->ni[pool]->npods;
    return f->gang_fits[pool];
}

static void f_move_item(void *core, int from, int to, queue_item_t *it)
{
    fake_t *f = core;
    assert_true(f->nmoves < 4);
    f->move_from[f->nmoves] = from;
    f->move_to[f->nmoves] = to;
    f->moved[f->nmoves++] = it;
}

/* The lender row's place in the table (its round mark's bit); the tests
 * run both rows on one sched_row_t at that place. */
#define LENDER_ROW 3

static int f_row_index(void *core, const char *name)
{
    (void)core;
    return strcmp(name, "lender") == 0 ? LENDER_ROW : -1;
}

/* A pod of gpus GPUs, bound to node or pending (""). */
static pod_t *gpod(const char *name, const char *node, int gpus)
{
    char buf[600];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'ns','uid':'u-%s'},"
             "'spec':{'nodeName':'%s','containers':[{'name':'c','resources':{'requests':"
             "{'cpu':'1','nvidia.com/gpu':'%d'}}}]}}",
             name, name, node, gpus);
    return fx_pod(buf);
}

/* Pool id's node, loaded with pods of the given GPUs (-1 ends the list). */
static void pool_node(fake_t *f, int id, const int *gpus)
{
    char buf[400], name[32];
    snprintf(name, sizeof(name), "n%d", id);
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s'},"
             "'status':{'allocatable':{'cpu':'64','memory':'256Gi','pods':'110','nvidia.com/gpu':'8'}}}",
             name);
    f->ni[id] = fx_node_info(buf);
    f->ni[id]->pool = id;
    for (int i = 0; gpus[i] >= 0; i++) {
        char pn[32];
        snprintf(pn, sizeof(pn), "load-%d-%d", id, i);
        pod_t *p = gpod(pn, name, gpus[i]);
        node_info_add_pod(f->ni[id], p);
        f->load[f->nload++] = p;
    }
}

/* Idle GPUs and pods per pool: p1 2 idle, 1 pod; p2 4 idle, 3 pods; p3 4
 * idle, 2 pods; the pool that does not share and the deleted one 8 idle.
 * The home pool has no node (nothing fits at home). */
static void setup(fake_t *f, sched_row_t *row)
{
    memset(f, 0, sizeof(*f));
    fake_core_init(&f->fc);
    f->fc.svc.pools_visit = f_pools_visit;
    f->fc.svc.pool_queued = f_pool_queued;
    f->fc.svc.pool_room_for = f_pool_room_for;
    f->fc.svc.move_item = f_move_item;
    f->fc.home_pool = HOME;
    static const char *names[NPOOLS] = { "home", "p1", "p2", "p3", "noshare", "dead" };
    for (int i = 0; i < NPOOLS; i++) {
        f->spec[i].name = (char *)names[i];
        f->gang_fits[i] = 1;
    }
    f->spec[NOSHARE].disable_sharing = 1;
    f->dead[DEAD] = 1;
    pool_node(f, P1, (const int[]){ 6, -1 });
    pool_node(f, P2, (const int[]){ 4, 0, 0, -1 });
    pool_node(f, P3, (const int[]){ 2, 2, -1 });
    pool_node(f, NOSHARE, (const int[]){ -1 });
    pool_node(f, DEAD, (const int[]){ -1 });
    for (int i = 0; i < NPOOLS; i++)
        if (f->ni[i])
            f->nodes[f->fc.nnodes++] = f->ni[i];
    f->fc.nodes = f->nodes;
    f->fc.fw = framework_new(NULL);
    f->fc.svc.row_index = f_row_index;
    *row = fake_row(&f->fc, NULL);
    row->index = LENDER_ROW;
}

static void teardown(fake_t *f)
{
    for (int i = 0; i < NPOOLS; i++)
        if (f->ni[i])
            node_info_free(f->ni[i]);
    for (int i = 0; i < f->nload; i++)
        pod_unref(f->load[i]);
    framework_free(f->fc.fw);
    fake_core_free(&f->fc);
}

/* A set of n pods in pool (no pool thread: the rows see only the set);
 * need members place together (a gang's minimum when need > 1). */
static void set_of(pod_set_t *set, queue_item_t *its, pod_t **pods, int n, int need, int pool)
{
    memset(set, 0, sizeof(*set));
    set->items = util_xcalloc((size_t)n + 1, sizeof(*set->items));
    for (int i = 0; i < n; i++) {
        memset(&its[i], 0, sizeof(its[i]));
        its[i].pod = pods[i];
        set->items[i] = &its[i];
    }
    set->kind = need > 1 ? SET_MINIMUM : SET_LONE;
    set->n = n;
    set->need = need;
    set->pool_id = pool;
    set->pool_name = pool == HOME ? "home" : "p";
}

/* A pod of one GPU borrows from p3: p3 and p2 have the most idle GPUs (4;
 * p1 has fewer pods but 2), p3 the fewer tasks (2 pods against 3); the
 * pools that do not share or are gone (8 idle each) are never asked. Once
 * two pods wait in p3's queue (4 tasks), p2 is the lender. */
static void test_borrows_most_idle_then_fewest_tasks(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    pod_t *pod = gpod("one", "", 1);
    pod_set_t set;
    queue_item_t it;
    set_of(&set, &it, &pod, 1, 1, HOME);
    assert_int_equal(pool_borrowing_row_post_filter(&row, &set), EXT_DONE);
    assert_int_equal(set.outcome, SET_MOVED);
    assert_null(set.items[0]);
    assert_int_equal(f.nmoves, 1);
    assert_int_equal(f.move_from[0], HOME);
    assert_int_equal(f.move_to[0], P3);
    assert_ptr_equal(f.moved[0], &it);
    assert_int_equal(it.borrower, 1);
    assert_int_equal((int)f.fc.st.borrowings, 1);
    fake_set_done(&set);

    f.queued[P3] = 2;
    memset(&it, 0, sizeof(it));
    set_of(&set, &it, &pod, 1, 1, HOME);
    assert_int_equal(pool_borrowing_row_post_filter(&row, &set), EXT_DONE);
    assert_int_equal(f.nmoves, 2);
    assert_int_equal(f.move_to[1], P2);
    assert_int_equal((int)f.fc.st.borrowings, 2);
    fake_set_done(&set);
    pod_unref(pod);
    teardown(&f);
}

/* A pod that fits no sharing pool's node (5 GPUs: 4 idle at most where
 * it may borrow) stays; so does one whose pool does not borrow, and one
 * back from a lender. */
static void test_no_lender(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    pod_t *big = gpod("big", "", 5);
    pod_set_t set;
    queue_item_t it;
    set_of(&set, &it, &big, 1, 1, HOME);
    assert_int_equal(pool_borrowing_row_post_filter(&row, &set), EXT_NEXT);
    assert_int_equal(set.outcome, SET_OPEN);
    assert_ptr_equal(set.items[0], &it);
    fake_set_done(&set);

    pod_t *one = gpod("one", "", 1);
    set_of(&set, &it, &one, 1, 1, HOME);
    f.spec[HOME].disable_borrowing = 1;
    assert_int_equal(pool_borrowing_row_post_filter(&row, &set), EXT_NEXT);
    f.spec[HOME].disable_borrowing = 0;
    it.round_marks = 1u << LENDER_ROW;
    assert_int_equal(pool_borrowing_row_post_filter(&row, &set), EXT_NEXT);
    assert_int_equal(f.nmoves, 0);
    assert_int_equal((int)f.fc.st.borrowings, 0);
    fake_set_done(&set);
    pod_unref(one);
    pod_unref(big);
    teardown(&f);
}

/* A gang's minimum (two pods of 2 GPUs, one elastic member beyond it) is
 * scored on the lenders' copies (pool_room_for, asked for the minimum's
 * two): p3 does not fit it, so p2 lends, and the whole set goes there. */
static void test_gang_borrows_where_minimum_fits(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    pod_t *pods[3] = { gpod("g0", "", 2), gpod("g1", "", 2), gpod("g2", "", 2) };
    pod_set_t set;
    queue_item_t its[3];
    set_of(&set, its, pods, 3, 2, HOME);
    f.gang_fits[P3] = 0;
    assert_int_equal(pool_borrowing_row_post_filter(&row, &set), EXT_DONE);
    assert_int_equal(f.room_asked[P1], 2);
    assert_int_equal(f.room_asked[P3], 2);
    assert_int_equal(f.room_asked[NOSHARE], 0);
    assert_int_equal(f.room_asked[DEAD], 0);
    assert_int_equal(f.nmoves, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(f.move_to[i], P2);
        assert_int_equal(its[i].borrower, 1);
    }
    assert_int_equal((int)f.fc.st.borrowings, 3);
    fake_set_done(&set);
    for (int i = 0; i < 3; i++)
        pod_unref(pods[i]);
    teardown(&f);
}

/* The lender row: a home pod goes on; a borrower that no longer fits its
 * lender (p2) goes home whole, marked to wait there, and says nothing of
 * room; the borrowing row then leaves it at home. */
static void test_lender_sends_borrower_home(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    pod_t *pods[2] = { gpod("b0", "", 1), gpod("b1", "", 1) };
    pod_set_t set;
    queue_item_t its[2];
    set_of(&set, its, pods, 2, 2, P2);
    assert_int_equal(pool_lender_row_post_filter(&row, &set), EXT_NEXT);
    assert_int_equal(f.nmoves, 0);
    its[0].borrower = its[1].borrower = 1;
    assert_int_equal(pool_lender_row_post_filter(&row, &set), EXT_DONE);
    assert_int_equal(set.outcome, SET_MOVED);
    assert_int_equal(f.nmoves, 2);
    for (int i = 0; i < 2; i++) {
        assert_null(set.items[i]);
        assert_int_equal(f.move_from[i], P2);
        assert_int_equal(f.move_to[i], HOME);
        assert_ptr_equal(f.moved[i], &its[i]);
        assert_int_equal(its[i].borrower, 0);
        assert_int_equal(its[i].round_marks, 1u << LENDER_ROW);
    }
    fake_set_done(&set);

    set_of(&set, its, pods, 1, 1, HOME);
    its[0].round_marks = 1u << LENDER_ROW;
    assert_int_equal(pool_borrowing_row_post_filter(&row, &set), EXT_NEXT);
    assert_int_equal(f.nmoves, 2);
    fake_set_done(&set);
    for (int i = 0; i < 2; i++)
        pod_unref(pods[i]);
    teardown(&f);
}

/* post_bind: a pod bound on a lender's node is told so; a home bind says
 * nothing. */
static void test_post_bind_says_borrowed(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    pod_t *pod = gpod("one", "", 1);
    pool_borrowing_row_post_bind(&row, pod, "n3", NULL);
    assert_int_equal(f.fc.nevents, 0);
    pool_borrowing_row_post_bind(&row, pod, "n3", "p3");
    assert_int_equal(f.fc.nevents, 1);
    assert_string_equal(f.fc.event,
                        "ns/one Normal Borrowed Borrowed node n3 of pool p3 (may be reclaimed by that pool)");
    pod_unref(pod);
    teardown(&f);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_borrows_most_idle_then_fewest_tasks),
        cmocka_unit_test(test_no_lender),
        cmocka_unit_test(test_gang_borrows_where_minimum_fits),
        cmocka_unit_test(test_lender_sends_borrower_home),
        cmocka_unit_test(test_post_bind_says_borrowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
