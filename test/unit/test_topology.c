/* test_topology.c -- topology levels, domains, and the least-lost-opportunity
 * choice (topology/topology.h) with exact expected domains. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/capabilities.h"
#include "topology/topology.h"

#include "fixtures.h"

#define SPINE "network.aibee.cn/spine"
#define BLOCK "network.aibee.cn/block"

/* A node with 8 GPUs in spine/block ("" leaves the label out) and `used` taken. */
static node_info_t *tnode(const char *name, const char *spine, const char *block, int used)
{
    char buf[512], labels[200] = "";
    int off = 0;
    if (spine[0])
        off += snprintf(labels + off, sizeof(labels) - (size_t)off, "'" SPINE "':'%s'", spine);
    if (block[0])
        snprintf(labels + off, sizeof(labels) - (size_t)off, "%s'" BLOCK "':'%s'", off ? "," : "", block);
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','labels':{%s}},"
             "'status':{'allocatable':{'cpu':'64','memory':'256Gi','pods':'110','nvidia.com/gpu':'8'}}}",
             name, labels);
    node_info_t *ni = fx_node_info(buf);
    res_add_scalar(&ni->requested, RES_GPU, used);
    return ni;
}

/* fit: members of `per` GPUs each, first fit by free GPUs. */
typedef struct fitctx {
    int members, per;
    int calls;
} fitctx_t;

static int fit(void *ud, node_info_t **nodes, int n)
{
    fitctx_t *f = ud;
    f->calls++;
    int64_t free_[64];
    for (int i = 0; i < n; i++)
        free_[i] = 8 - res_get_scalar(&nodes[i]->requested, RES_GPU);
    for (int m = 0; m < f->members; m++) {
        int k;
        for (k = 0; k < n && free_[k] < f->per; k++)
            ;
        if (k == n)
            return 0;
        free_[k] -= f->per;
    }
    return 1;
}

static void test_levels(void **state)
{
    topo_levels_t l;
    char err[128];
    assert_int_equal(topo_levels_parse(" a, b ,c", &l, err, sizeof(err)), 0);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.keys[1], "b");
    assert_int_equal(topo_level_index(&l, "c"), 2);
    topo_levels_free(&l);
    assert_int_equal(topo_levels_parse("a,a", &l, err, sizeof(err)), -1);
    assert_int_equal(topo_levels_parse("", &l, err, sizeof(err)), 0);
    assert_int_equal(l.n, 0);
    assert_int_equal(topo_levels_parse("1,2,3,4,5,6,7,8,9", &l, err, sizeof(err)), -1);
}

/* Blocks with 16, 10 and 8 GPUs free; a gang of 2 x 4 fits all three; the
 * least stranded is the 8-free block (0 left). A gang of 2 x 5 does not fit
 * the 8-free one (5 + 5 on 4 + 4 free nodes) and goes to the 10-free. */
static void test_least_lost_opportunity(void **state)
{
    topo_levels_t l;
    char err[128], name[256];
    assert_int_equal(topo_levels_parse(SPINE "," BLOCK, &l, err, sizeof(err)), 0);
    node_info_t *n[6] = {
        tnode("a1", "s1", "b1", 0), tnode("a2", "s1", "b1", 0), /* 16 free */
        tnode("b1", "s1", "b2", 3), tnode("b2", "s1", "b2", 3), /* 10 free: 5 + 5 */
        tnode("c1", "s2", "b1", 4), tnode("c2", "s2", "b1", 4), /* 8 free: 4 + 4 (s2's b1 is another block) */
    };
    resources_t need;
    res_zero(&need);
    res_add_scalar(&need, RES_GPU, 8);
    fitctx_t f = { 2, 4, 0 };
    topo_choice_t c;
    assert_int_equal(topo_choose(&l, BLOCK, 1, n, 6, &need, fit, &f, &c), 1);
    topo_domain_format(&c.dom, name, sizeof(name));
    assert_string_equal(name, SPINE "=s2," BLOCK "=b1");
    assert_int_equal(c.stranded_gpu, 0);
    assert_int_equal(c.candidates, 3);
    assert_true(strstr(c.next, BLOCK "=b2 would strand 2 GPUs") != NULL);
    assert_true(topo_node_in(&c.dom, n[4]->node));
    assert_false(topo_node_in(&c.dom, n[0]->node));
    topo_choice_clear(&c);

    res_zero(&need);
    res_add_scalar(&need, RES_GPU, 10);
    fitctx_t f5 = { 2, 5, 0 };
    assert_int_equal(topo_choose(&l, BLOCK, 1, n, 6, &need, fit, &f5, &c), 1);
    topo_domain_format(&c.dom, name, sizeof(name));
    assert_string_equal(name, SPINE "=s1," BLOCK "=b2");
    assert_int_equal(c.stranded_gpu, 0);
    topo_choice_clear(&c);
    for (int i = 0; i < 6; i++)
        node_info_free(n[i]);
    topo_levels_free(&l);
}

/* Preferred falls back to the spine when no block fits; required fails;
 * nodes without the label belong to no domain. */
static void test_fallback_and_required(void **state)
{
    topo_levels_t l;
    char err[128], name[256];
    assert_int_equal(topo_levels_parse(SPINE "," BLOCK, &l, err, sizeof(err)), 0);
    node_info_t *n[5] = {
        tnode("a1", "s1", "b1", 0), tnode("a2", "s1", "b2", 0), tnode("b1", "s2", "b3", 0),
        tnode("x1", "", "", 0),     tnode("x2", "", "", 0), /* unlabelled: 16 GPUs in no domain */
    };
    resources_t need;
    res_zero(&need);
    res_add_scalar(&need, RES_GPU, 16);
    fitctx_t f = { 2, 8, 0 };
    topo_choice_t c;
    assert_int_equal(topo_choose(&l, BLOCK, 1, n, 5, &need, fit, &f, &c), 0);
    topo_choice_clear(&c);
    assert_int_equal(topo_choose(&l, BLOCK, 0, n, 5, &need, fit, &f, &c), 1);
    topo_domain_format(&c.dom, name, sizeof(name));
    assert_string_equal(name, SPINE "=s1");
    topo_choice_clear(&c);
    /* Three members of 8 fit no spine either: preferred gives no domain. */
    res_add_scalar(&need, RES_GPU, 8);
    fitctx_t f3 = { 3, 8, 0 };
    assert_int_equal(topo_choose(&l, BLOCK, 0, n, 5, &need, fit, &f3, &c), 0);
    topo_choice_clear(&c);
    /* A level that is not configured is a plain label, no fallback. */
    assert_int_equal(topo_choose(&l, "rack", 0, n, 5, &need, fit, &f3, &c), 0);
    topo_choice_clear(&c);
    for (int i = 0; i < 5; i++)
        node_info_free(n[i]);
    topo_levels_free(&l);
}

/* A pool's domains at block level, node by node: block b1 of spine s0 and
 * block b1 of spine s1 are two domains, a node without the label is in
 * none, and each domain sums its nodes' allocatable. */
static void test_domains_add(void **state)
{
    (void)state;
    topo_levels_t l;
    char err[128];
    assert_int_equal(topo_levels_parse("topology.kubernetes.io/zone," SPINE "," BLOCK, &l, err, sizeof(err)), 0);
    node_info_t *ni[4] = { tnode("a", "s0", "b1", 0), tnode("b", "s1", "b1", 0), tnode("c", "s0", "b1", 0),
                           tnode("d", "s0", "", 0) };
    topo_domain_t *doms = NULL;
    resources_t *alloc = NULL;
    int nd = 0;
    assert_int_equal(topo_domains_add(&l, BLOCK, ni[0]->node, &doms, &alloc, &nd), 0);
    assert_int_equal(topo_domains_add(&l, BLOCK, ni[1]->node, &doms, &alloc, &nd), 1);
    assert_int_equal(topo_domains_add(&l, BLOCK, ni[2]->node, &doms, &alloc, &nd), 0);
    assert_int_equal(topo_domains_add(&l, BLOCK, ni[3]->node, &doms, &alloc, &nd), -1);
    assert_int_equal(topo_domains_add(&l, BLOCK, NULL, &doms, &alloc, &nd), -1);
    assert_int_equal(nd, 2);
    char name[256];
    topo_domain_format(&doms[0], name, sizeof(name));
    assert_string_equal(name, SPINE "=s0," BLOCK "=b1");
    topo_domain_format(&doms[1], name, sizeof(name));
    assert_string_equal(name, SPINE "=s1," BLOCK "=b1");
    assert_int_equal((int)res_get_scalar(&alloc[0], RES_GPU), 16);
    assert_int_equal((int)res_get_scalar(&alloc[1], RES_GPU), 8);
    assert_int_equal((int)alloc[0].milli_cpu, 128000);
    /* Without sums: the same domains. */
    topo_domain_t *d2 = NULL;
    int n2 = 0;
    for (int i = 0; i < 4; i++)
        topo_domains_add(&l, BLOCK, ni[i]->node, &d2, NULL, &n2);
    assert_int_equal(n2, 2);
    for (int j = 0; j < nd; j++)
        topo_domain_free(&doms[j]);
    for (int j = 0; j < n2; j++)
        topo_domain_free(&d2[j]);
    free(doms);
    free(d2);
    free(alloc);
    for (int i = 0; i < 4; i++)
        node_info_free(ni[i]);
    topo_levels_free(&l);
}

/* A device level: "device:" needs a qualified attribute; a node's domain
 * is its value in the level's by[] (a node without one is in none, and an
 * unfilled device level puts no node in a domain); the domain matches by
 * those values, copied matches too, after the levels are gone. */
static void test_device_level(void **state)
{
    (void)state;
    topo_levels_t l;
    char err[160];
    assert_int_equal(topo_levels_parse("device:", &l, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "device:gpu.nvidia.com/cliqueID"));
    assert_int_equal(topo_levels_parse("device:clique", &l, err, sizeof(err)), -1);
    assert_int_equal(topo_levels_parse(SPINE ",device:gpu.example.com/clique", &l, err, sizeof(err)), 0);
    assert_string_equal(topo_level_device(l.keys[1]), "gpu.example.com/clique");
    assert_null(topo_level_device(l.keys[0]));
    const char *lv = "device:gpu.example.com/clique";
    node_info_t *ni[3] = { tnode("a", "s0", "b1", 0), tnode("b", "s0", "b2", 0), tnode("c", "s0", "b1", 0) };
    topo_domain_t d;
    assert_int_equal(topo_domain_of(&l, lv, ni[0]->node, &d), -1);
    l.by[1] = fw_node_values_new();
    fw_node_values_add(l.by[1], "b", "x");
    fw_node_values_add(l.by[1], "a", "x");
    fw_node_values_seal(l.by[1]);
    assert_int_equal(topo_domain_of(&l, lv, ni[0]->node, &d), 0);
    char name[256];
    topo_domain_format(&d, name, sizeof(name));
    assert_string_equal(name, SPINE "=s0,device:gpu.example.com/clique=x");
    topo_domain_t none;
    assert_int_equal(topo_domain_of(&l, lv, ni[2]->node, &none), -1);
    /* a and b are one domain; c (no value) is in none. */
    topo_domain_t *doms = NULL;
    int nd = 0;
    assert_int_equal(topo_domains_add(&l, lv, ni[1]->node, &doms, NULL, &nd), 0);
    assert_int_equal(topo_domains_add(&l, lv, ni[0]->node, &doms, NULL, &nd), 0);
    assert_int_equal(topo_domains_add(&l, lv, ni[2]->node, &doms, NULL, &nd), -1);
    assert_int_equal(nd, 1);
    topo_domain_free(&doms[0]);
    free(doms);
    fw_node_match_t copy = { 0 };
    fw_node_match_copy(&copy, &d);
    topo_domain_free(&d);
    topo_levels_free(&l);
    assert_true(fw_node_match(&copy, ni[0]->node));
    assert_true(fw_node_match(&copy, ni[1]->node));
    assert_false(fw_node_match(&copy, ni[2]->node));
    fw_node_match_free(&copy);
    for (int i = 0; i < 3; i++)
        node_info_free(ni[i]);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_least_lost_opportunity),
        cmocka_unit_test(test_fallback_and_required),
        cmocka_unit_test(test_domains_add),
        cmocka_unit_test(test_device_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
