/* test_consolidation.c -- the consolidation planner (consolidation/
 * consolidation.h) with exact expected plans: fewest moves, movers that
 * must fit elsewhere, the move limit. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "consolidation/consolidation.h"
#include "scheduler/capabilities.h"

#include "fixtures.h"

static node_info_t *gnode(const char *name)
{
    char buf[400];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s'},"
             "'status':{'allocatable':{'cpu':'64','memory':'256Gi','pods':'110','nvidia.com/gpu':'8'}}}",
             name);
    return fx_node_info(buf);
}

/* A bound pod of gpus GPUs; movable ones are owned by a ReplicaSet. */
static pod_t *gpod(const char *name, const char *node, int gpus, int movable)
{
    char buf[700];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','uid':'u-%s'%s},"
             "'spec':{'nodeName':'%s','containers':[{'name':'c','resources':{'requests':{'nvidia.com/gpu':'%d'}}}]}}",
             name, name,
             movable ? ",'ownerReferences':[{'apiVersion':'apps/v1','kind':'ReplicaSet','name':'rs','uid':'rs1',"
                       "'controller':true}]"
                     : "",
             node, gpus);
    return fx_pod(buf);
}

static int fit(void *ud, const pod_t *pod, node_info_t *ni)
{
    return res_get_scalar(&ni->requested, RES_GPU) + res_get_scalar(&pod->requests, RES_GPU) <=
           res_get_scalar(&ni->node->allocatable, RES_GPU);
}

static int movable(void *ud, const pod_t *p)
{
    return p->controller_kind && strcmp(p->controller_kind, "ReplicaSet") == 0;
}

typedef struct cluster {
    node_info_t *n[8];
    pod_t *p[32];
    int np;
} cluster_t;

static void add(cluster_t *c, int node, const char *name, int gpus, int mov)
{
    pod_t *p = gpod(name, c->n[node]->name, gpus, mov);
    node_info_add_pod(c->n[node], p);
    c->p[c->np++] = p;
}

static void cluster_init(cluster_t *c, int nodes)
{
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < nodes; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        c->n[i] = gnode(name);
    }
}

static void cluster_free(cluster_t *c)
{
    for (int i = 0; i < 8; i++)
        node_info_free(c->n[i]);
    for (int i = 0; i < c->np; i++)
        pod_unref(c->p[i]);
}

/* 8 nodes, 2 of 8 GPUs each used by two 1-GPU movable pods; an 8-GPU pod:
 * 48 GPUs free, at most 6 on one node; the minimum is 2 moves, off the
 * first node by name, to the next nodes that have room. */
static void test_two_moves(void **state)
{
    cluster_t c;
    cluster_init(&c, 8);
    for (int i = 0; i < 8; i++) {
        char a[16], b[16];
        snprintf(a, sizeof(a), "a%d", i);
        snprintf(b, sizeof(b), "b%d", i);
        add(&c, i, a, 1, 1);
        add(&c, i, b, 1, 1);
    }
    int64_t total, best;
    consol_free_gpus(c.n, 8, &total, &best);
    assert_int_equal(total, 48);
    assert_int_equal(best, 6);
    pod_t *big = gpod("big", "", 8, 0);
    consol_plan_t plan;
    assert_int_equal(consol_plan(c.n, 8, big, 8, fit, movable, NULL, &plan), 1);
    assert_int_equal(plan.target, 0);
    assert_int_equal(plan.nmoves, 2);
    assert_int_equal(plan.gpus_moved, 2);
    for (int i = 0; i < plan.nmoves; i++)
        assert_int_not_equal(plan.moves[i].to, 0);
    /* The copies are as they were. */
    for (int i = 0; i < 8; i++)
        assert_int_equal(res_get_scalar(&c.n[i]->requested, RES_GPU), 2);
    consol_plan_clear(&plan);
    /* At most one move: no plan. */
    assert_int_equal(consol_plan(c.n, 8, big, 1, fit, movable, NULL, &plan), 0);
    consol_plan_clear(&plan);
    pod_unref(big);
    cluster_free(&c);
}

/* One move beats two: n1 holds one 2-GPU mover. Unmovable pods stay. */
static void test_fewest_moves(void **state)
{
    cluster_t c;
    cluster_init(&c, 3);
    add(&c, 0, "a", 1, 1);
    add(&c, 0, "b", 1, 1);
    add(&c, 1, "c", 2, 1);
    add(&c, 2, "d", 2, 0); /* not movable */
    pod_t *big = gpod("big", "", 8, 0);
    consol_plan_t plan;
    assert_int_equal(consol_plan(c.n, 3, big, 8, fit, movable, NULL, &plan), 1);
    assert_int_equal(plan.target, 1);
    assert_int_equal(plan.nmoves, 1);
    assert_string_equal(plan.moves[0].pod->name, "c");
    consol_plan_clear(&plan);
    pod_unref(big);
    cluster_free(&c);
}

/* The movers must fit elsewhere: with the other node full, no plan. */
static void test_movers_must_fit(void **state)
{
    cluster_t c;
    cluster_init(&c, 2);
    add(&c, 0, "a", 2, 1);
    add(&c, 1, "w", 7, 0);
    pod_t *big = gpod("big", "", 8, 0);
    consol_plan_t plan;
    assert_int_equal(consol_plan(c.n, 2, big, 8, fit, movable, NULL, &plan), 0);
    consol_plan_clear(&plan);
    pod_unref(big);
    cluster_free(&c);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_moves),
        cmocka_unit_test(test_fewest_moves),
        cmocka_unit_test(test_movers_must_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
