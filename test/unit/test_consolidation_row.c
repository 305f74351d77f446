/* test_consolidation_row.c -- the consolidation row alone
 * (pkg/consolidation/row.c), on a fake services table: two 8-GPU nodes
 * each half used by a movable pod, and a pod asking 8 GPUs. No scheduler
 * is built: what the row asks of the core is exactly the table's calls,
 * and what it does is what those calls recorded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "consolidation/row.h"
#include "fairshare/fairshare.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fake_services.h"
#include "fixtures.h"

typedef struct fake {
    fake_core_t fc; /* first: the core the row's calls get */
    node_info_t *ni[2];
    pod_t *running[2];
    int nmoves;
    char victim[64], dest[64];
} fake_t;

static int f_min_runtime(void *core, const pod_t *pod, int kind, int64_t now)
{
    assert_int_equal(kind, FS_MINRT_PREEMPT); /* one queue (none): preemption's minimum */
    return fake_min_runtime(core, pod, kind, now);
}

static void f_evict_moves(void *core, const pod_t *pod, preempt_candidate_t *cand, char **dests, int pool,
                          const char *pool_name)
{
    fake_t *f = core;
    (void)pod;
    (void)pool;
    (void)pool_name;
    f->nmoves = cand->nvictims;
    snprintf(f->victim, 64, "%s", cand->victims[0]->key);
    snprintf(f->dest, 64, "%s", dests[0]);
    for (int i = 0; i < cand->nvictims; i++)
        free(dests[i]);
    free(dests);
    preempt_candidate_clear(cand);
    free(cand);
}

static node_info_t *gnode(const char *name)
{
    char buf[400];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','labels':{'kubernetes.io/hostname':'%s'}},"
             "'status':{'allocatable':{'cpu':'64','memory':'256Gi','pods':'110','nvidia.com/gpu':'8'}}}",
             name, name);
    return fx_node_info(buf);
}

/* A pod of gpus GPUs owned by ReplicaSet rs (bound to node, or pending). */
static pod_t *gpod(const char *name, const char *node, int gpus, const char *rs)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'ns','uid':'u-%s'%s%s%s},"
             "'spec':{'nodeName':'%s','containers':[{'name':'c','resources':{'requests':{'nvidia.com/gpu':'%d'}}}]}}",
             name, name,
             rs ? ",'ownerReferences':[{'apiVersion':'apps/v1','kind':'ReplicaSet','name':'rs','uid':'" : "",
             rs ? rs : "", rs ? "','controller':true}]" : "", node, gpus);
    return fx_pod(buf);
}

static void setup(fake_t *f, sched_row_t *row)
{
    memset(f, 0, sizeof(*f));
    fake_core_init(&f->fc);
    f->fc.svc.min_runtime = f_min_runtime;
    f->fc.svc.evict_moves = f_evict_moves;
    f->fc.opts.max_consolidation_moves = 8;
    f->fc.may_evict = 1;
    f->fc.fw = framework_new(NULL);
    f->fc.nodes = f->ni;
    f->fc.nnodes = 2;
    for (int i = 0; i < 2; i++) {
        f->ni[i] = gnode(i ? "n1" : "n0");
        f->running[i] = gpod(i ? "r1" : "r0", f->ni[i]->name, 4, i ? "rs-b" : "rs-a");
        node_info_add_pod(f->ni[i], f->running[i]);
    }
    *row = fake_row(&f->fc, consol_row_init(&f->fc.svc, &f->fc));
}

static void teardown(fake_t *f, sched_row_t *row)
{
    consol_row_fini(row->self);
    for (int i = 0; i < 2; i++) {
        node_info_free(f->ni[i]);
        pod_unref(f->running[i]);
    }
    framework_free(f->fc.fw);
    fake_core_free(&f->fc);
}

/* A set of one for pod (no pool thread: the row sees only the set). */
/* 8 GPUs free in the pool, 4 on each node: one pod moves from one node to
 * the other, the pod is nominated to the emptied node, and the mover's new
 * place is held for its own controller's replacement only. */
static void test_moves_one_and_holds_its_room(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    pod_t *big = gpod("big", "", 8, NULL);
    pod_set_t set;
    queue_item_t it = { 0 };
    fake_lone_set(&set, &it, big);
    assert_int_equal(consol_row_post_filter(&row, &set), EXT_DONE);
    assert_int_equal(f.nmoves, 1);
    /* The mover leaves the node the pod is nominated to, for the other one. */
    const char *from = strcmp(f.victim, "ns/r0") == 0 ? "n0" : "n1";
    const char *to = strcmp(from, "n0") == 0 ? "n1" : "n0";
    assert_string_equal(f.fc.nominated, from);
    assert_string_equal(f.dest, to);
    assert_non_null(strstr(f.fc.event, "ns/big Normal Consolidation moving 1 pod(s) so that node"));
    assert_int_equal((int)f.fc.st.consolidations, 1);

    /* Another pod sees the destination taken by the mover's hold... */
    node_info_t *dest = strcmp(to, "n0") == 0 ? f.ni[0] : f.ni[1];
    int cloned = 0;
    pod_t *other = gpod("other", "", 4, NULL);
    node_info_t *v = consol_row_node_view(&row, other, dest, &cloned);
    assert_int_equal(cloned, 1);
    assert_int_equal((int)res_get_scalar(&v->requested, RES_GPU), 8);
    node_info_free(v);
    /* ...the mover's replacement (same controller, same requests) does not,
     * and its pre_place sends it to that node by its hostname label. */
    const char *rs = strcmp(f.victim, "ns/r0") == 0 ? "rs-a" : "rs-b";
    pod_t *repl = gpod("repl", "", 4, rs);
    cloned = 0;
    v = consol_row_node_view(&row, repl, dest, &cloned);
    assert_int_equal(cloned, 0);
    assert_ptr_equal(v, dest);
    pod_set_t rset;
    queue_item_t rit = { 0 };
    fake_lone_set(&rset, &rit, repl);
    assert_int_equal(consol_row_pre_place(&row, &rset), EXT_NEXT);
    assert_int_equal(rset.has_match, 1);
    assert_int_equal(rset.match_soft, 1);
    assert_string_equal(rset.match.values[0], to);
    /* The hold was taken: a second replacement finds none. */
    pod_set_t again;
    queue_item_t ait = { 0 };
    fake_lone_set(&again, &ait, repl);
    assert_int_equal(consol_row_pre_place(&row, &again), EXT_NEXT);
    assert_int_equal(again.has_match, 0);
    fake_set_done(&again);
    fake_set_done(&rset);
    fake_set_done(&set);
    pod_unref(repl);
    pod_unref(other);
    pod_unref(big);
    teardown(&f, &row);
}

/* A pool or pod that may not evict moves nobody; a mover a minimum
 * runtime protects is no mover (no plan: counted as failed). */
static void test_no_moves_when_not_allowed(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    pod_t *big = gpod("big", "", 8, NULL);
    pod_set_t set;
    queue_item_t it = { 0 };
    fake_lone_set(&set, &it, big);
    f.fc.may_evict = 0;
    assert_int_equal(consol_row_post_filter(&row, &set), EXT_NEXT);
    assert_int_equal(f.nmoves, 0);
    f.fc.may_evict = 1;
    f.fc.min_runtime = 1;
    assert_int_equal(consol_row_post_filter(&row, &set), EXT_NEXT);
    assert_int_equal(f.nmoves, 0);
    assert_int_equal((int)f.fc.st.consolidations_failed, 1);
    assert_string_equal(f.fc.nominated, "");
    fake_set_done(&set);
    pod_unref(big);
    teardown(&f, &row);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moves_one_and_holds_its_room),
        cmocka_unit_test(test_no_moves_when_not_allowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
