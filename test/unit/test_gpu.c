/* test_gpu.c -- GPU sharing: requests parsed from annotations, slot
 * accounting in node_info, best-fit choice, whole GPUs beside fractions. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu/gpu.h"
#include "scheduler/capabilities.h"

#include "fixtures.h"

static node_info_t *gpu_node(const char *name, int gpus, const char *mem)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','labels':{%s%s%s}},"
             "'status':{'allocatable':{'cpu':'64','memory':'256Gi','pods':'110','nvidia.com/gpu':'%d'}}}",
             name, mem ? "'nvidia.com/gpu.memory':'" : "", mem ? mem : "", mem ? "'" : "", gpus);
    return fx_node_info(buf);
}

/* A pending pod with annotations (JSON object body, parse_sq quoting). */
static pod_t *ann_pod(const char *name, const char *ann, const char *gpu)
{
    char buf[768];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'default','uid':'u-%s','annotations':{%s}},"
             "'spec':{'containers':[{'name':'c','resources':{'requests':{'cpu':'100m'%s%s%s}}}]}}",
             name, name, ann, gpu ? ",'nvidia.com/gpu':'" : "", gpu ? gpu : "", gpu ? "'" : "");
    return fx_pod(buf);
}

/* A pod labelled as a reservation of slot 2, bound to node (NULL: pending),
 * with managed-by `by` and the node annotation `ann_node` (NULL: none). */
static pod_t *reservation_pod(const char *ns, const char *name, const char *uid, const char *by, const char *node,
                              const char *ann_node)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'%s','uid':'%s',"
             "'labels':{'resource.aibee.cn/gpu-reservation':'true'%s%s%s},"
             "'annotations':{'resource.aibee.cn/gpu-index':'2'%s%s%s}},"
             "'spec':{%s%s%s'containers':[{'name':'c','resources':{'requests':{'nvidia.com/gpu':'1'}}}]}}",
             name, ns, uid, by ? ",'app.kubernetes.io/managed-by':'" : "", by ? by : "", by ? "'" : "",
             ann_node ? ",'resource.aibee.cn/gpu-reservation-node':'" : "", ann_node ? ann_node : "",
             ann_node ? "'" : "", node ? "'nodeName':'" : "", node ? node : "", node ? "'," : "");
    return fx_pod(buf);
}

static int64_t gpus_used(const node_info_t *ni)
{
    return res_get_scalar(&ni->requested, RES_GPU);
}

static int fits(const node_info_t *ni, const pod_t *p, uint64_t *mask)
{
    const char *reason = NULL;
    int unres = 0;
    return gpu_node_fit(gpu_node_of(ni), ni->node, gpus_used(ni), p, mask, &reason, &unres);
}

static void test_parse(void **state)
{
    struct {
        const char *ann, *gpu;
        int valid;
        int64_t ppm, mib;
        int ndev;
    } cases[] = {
        { "'gpu-fraction':'0.5'", NULL, 1, 500000, 0, 1 },
        { "'gpu-fraction':'.25'", NULL, 1, 250000, 0, 1 },
        { "'gpu-memory':'10240'", NULL, 1, 0, 10240, 1 },
        { "'gpu-fraction':'0.5','gpu-fraction-num-devices':'2'", NULL, 1, 500000, 0, 2 },
        { "'gpu-fraction':'0'", NULL, 0, 0, 0, 1 },
        { "'gpu-fraction':'1'", NULL, 0, 0, 0, 1 },
        { "'gpu-fraction':'1.5'", NULL, 0, 0, 0, 1 },
        { "'gpu-fraction':'abc'", NULL, 0, 0, 0, 1 },
        { "'gpu-fraction':'nan'", NULL, 0, 0, 0, 1 },
        { "'gpu-fraction':'0.0000001'", NULL, 0, 0, 0, 1 },
        { "'gpu-memory':'x'", NULL, 0, 0, 0, 1 },
        { "'gpu-memory':'-5'", NULL, 0, 0, 0, 1 },
        { "'gpu-memory':'99999999999999999999'", NULL, 0, 0, 0, 1 },
        { "'gpu-fraction':'0.5','gpu-memory':'100'", NULL, 0, 0, 0, 1 },
        { "'gpu-fraction':'0.5'", "1", 0, 0, 0, 1 },
        { "'gpu-fraction-num-devices':'2'", NULL, 0, 0, 0, 1 },
        { "'gpu-fraction':'0.5','gpu-fraction-num-devices':'65'", NULL, 0, 0, 0, 1 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pod_t *p = ann_pod("p", cases[i].ann, cases[i].gpu);
        assert_non_null(gpu_req_of(p));
        if (cases[i].valid) {
            assert_null(gpu_req_of(p)->err);
            assert_int_equal(gpu_req_of(p)->frac_ppm, cases[i].ppm);
            assert_int_equal(gpu_req_of(p)->mem_mib, cases[i].mib);
            assert_int_equal(gpu_req_of(p)->ndev, cases[i].ndev);
            assert_true(gpu_is_fraction(p));
        } else {
            if (!gpu_req_of(p)->err)
                fail_msg("case %zu (%s) should be invalid", i, cases[i].ann);
            assert_false(gpu_is_fraction(p));
        }
        pod_unref(p);
    }
    pod_t *plain = ann_pod("q", "'other':'1'", "2");
    assert_null(gpu_req_of(plain));
    pod_unref(plain);
    /* A non-string annotation is an error, not a crash. */
    pod_t *bad = fx_pod("{'metadata':{'name':'b','uid':'ub','annotations':{'gpu-fraction':0.5}},'spec':{}}");
    assert_non_null(gpu_req_of(bad));
    assert_non_null(gpu_req_of(bad)->err);
    pod_unref(bad);
}

static void test_mask_text(void **state)
{
    uint64_t m = 0;
    char buf[64];
    assert_int_equal(gpu_mask_parse("0,3", &m), 0);
    assert_int_equal(m, 9);
    gpu_mask_format(m, buf, sizeof(buf));
    assert_string_equal(buf, "0,3");
    assert_int_equal(gpu_mask_parse("64", &m), -1);
    assert_int_equal(gpu_mask_parse("1,,2", &m), -1);
    assert_int_equal(gpu_mask_parse("", &m), -1);
    assert_int_equal(gpu_mask_parse("a", &m), -1);
}

/* 16 quarters on a 4-GPU node fill exactly 4 slots, fullest first: pods
 * 4k..4k+3 share slot k, and the node counts 4 GPUs used. */
static void test_packing(void **state)
{
    node_info_t *ni = gpu_node("n", 4, "40960");
    pod_t *p[17];
    for (int i = 0; i < 16; i++) {
        char name[16];
        snprintf(name, sizeof(name), "f%d", i);
        p[i] = ann_pod(name, "'gpu-fraction':'0.25'", NULL);
        uint64_t mask = 0;
        assert_true(fits(ni, p[i], &mask));
        assert_int_equal(mask, 1ULL << (i / 4));
        node_info_add_pod(ni, p[i]);
        assert_int_equal(gpu_node_mask_of(gpu_node_of(ni), p[i]->uid), 1ULL << (i / 4));
        assert_int_equal(gpus_used(ni), i / 4 + 1);
    }
    assert_int_equal(gpu_node_shared(gpu_node_of(ni)), 4);
    p[16] = ann_pod("f16", "'gpu-fraction':'0.25'", NULL);
    assert_false(fits(ni, p[16], NULL));
    /* The 4th slot frees one quarter: the next quarter goes exactly there. */
    node_info_remove_pod(ni, p[13]->uid);
    uint64_t mask = 0;
    assert_true(fits(ni, p[16], &mask));
    assert_int_equal(mask, 1ULL << 3);
    /* Removing the rest of slot 3 gives its GPU back. */
    node_info_remove_pod(ni, p[12]->uid);
    node_info_remove_pod(ni, p[14]->uid);
    node_info_remove_pod(ni, p[15]->uid);
    assert_int_equal(gpus_used(ni), 3);
    assert_int_equal(gpu_node_shared(gpu_node_of(ni)), 3);
    for (int i = 0; i < 17; i++)
        pod_unref(p[i]);
    node_info_free(ni);
}

/* A fraction goes to the fullest slot it fits, not the first. */
static void test_best_fit(void **state)
{
    node_info_t *ni = gpu_node("n", 4, NULL);
    pod_t *a = ann_pod("a", "'gpu-fraction':'0.5'", NULL);
    pod_t *b = ann_pod("b", "'gpu-fraction':'0.7'", NULL);
    pod_t *c = ann_pod("c", "'gpu-fraction':'0.3'", NULL);
    node_info_add_pod(ni, a); /* slot 0: 0.5 */
    node_info_add_pod(ni, b); /* 0.7 does not fit slot 0: slot 1 */
    assert_int_equal(gpu_node_mask_of(gpu_node_of(ni), b->uid), 2);
    uint64_t mask = 0;
    assert_true(fits(ni, c, &mask)); /* fits both; slot 1 (0.7) is fuller */
    assert_int_equal(mask, 2);
    pod_unref(a);
    pod_unref(b);
    pod_unref(c);
    node_info_free(ni);
}

/* Whole GPUs and shared slots add up to at most the node's count. */
static void test_whole_beside_fractions(void **state)
{
    node_info_t *ni = gpu_node("n", 4, NULL);
    pod_t *w3 = ann_pod("w3", "'x':'y'", "3");
    pod_t *w2 = ann_pod("w2", "'x':'y'", "2");
    pod_t *f1 = ann_pod("f1", "'gpu-fraction':'0.5'", NULL);
    pod_t *f2 = ann_pod("f2", "'gpu-fraction':'0.6'", NULL);
    node_info_add_pod(ni, w3);
    assert_true(fits(ni, f1, NULL));
    node_info_add_pod(ni, f1);
    assert_int_equal(gpus_used(ni), 4);
    /* No GPU left for a new slot; 0.6 does not fit beside 0.5. */
    assert_false(fits(ni, f2, NULL));
    node_info_remove_pod(ni, w3->uid);
    node_info_add_pod(ni, w2);
    assert_int_equal(gpus_used(ni), 3);
    assert_true(fits(ni, f2, NULL));
    pod_unref(w3);
    pod_unref(w2);
    pod_unref(f1);
    pod_unref(f2);
    node_info_free(ni);
}

/* Memory on nodes of different sizes, exact to the MiB. */
static void test_memory(void **state)
{
    node_info_t *small = gpu_node("s", 1, "40960"), *big = gpu_node("b", 1, "81920"), *none = gpu_node("x", 1, NULL);
    pod_t *m20 = ann_pod("m20", "'gpu-memory':'20480'", NULL);
    pod_t *m40 = ann_pod("m40", "'gpu-memory':'40960'", NULL);
    pod_t *m41 = ann_pod("m41", "'gpu-memory':'40961'", NULL);
    pod_t *h = ann_pod("h", "'gpu-fraction':'0.5'", NULL);
    const char *reason;
    int unres = 0;
    assert_false(gpu_node_fit(gpu_node_of(none), none->node, 0, m20, NULL, &reason, &unres));
    assert_true(unres);
    assert_false(gpu_node_fit(gpu_node_of(small), small->node, 0, m41, NULL, &reason, &unres));
    assert_true(unres);
    assert_true(fits(big, m41, NULL));
    /* 0.5 of 40960 = 20480: with a 20480 request the small GPU is full. */
    node_info_add_pod(small, h);
    node_info_add_pod(small, m20);
    assert_false(fits(small, m20, NULL));
    assert_false(fits(small, h, NULL));
    /* 40960 + 0.5 of 81920 is exactly the big GPU. */
    node_info_add_pod(big, m40);
    assert_true(fits(big, h, NULL));
    node_info_add_pod(big, h);
    assert_false(fits(big, m20, NULL));
    assert_true(gpu_node_slot_use(gpu_node_of(big), big->node, 0) > 0.999);
    pod_unref(m20);
    pod_unref(m40);
    pod_unref(m41);
    pod_unref(h);
    node_info_free(small);
    node_info_free(big);
    node_info_free(none);
}

static void test_num_devices(void **state)
{
    node_info_t *ni = gpu_node("n", 2, NULL);
    pod_t *two = ann_pod("two", "'gpu-fraction':'0.5','gpu-fraction-num-devices':'2'", NULL);
    pod_t *three = ann_pod("three", "'gpu-fraction':'0.5','gpu-fraction-num-devices':'3'", NULL);
    uint64_t mask = 0;
    assert_true(fits(ni, two, &mask));
    assert_int_equal(mask, 3);
    node_info_add_pod(ni, two);
    assert_int_equal(gpus_used(ni), 2);
    assert_true(fits(ni, two, &mask)); /* the other halves */
    const char *reason;
    int unres = 0;
    assert_false(gpu_node_fit(gpu_node_of(ni), ni->node, 2, three, NULL, &reason, &unres));
    assert_true(unres);
    pod_unref(two);
    pod_unref(three);
    node_info_free(ni);
}

/* A reservation pod's own GPU is its slot's; alone it holds no GPU in the
 * count, and its slot is the one reused first. Bound pods keep the slots
 * their gpu-index names. */
static void test_reservations_and_restart(void **state)
{
    node_info_t *ni = gpu_node("n", 4, NULL);
    pod_t *res = reservation_pod("ai-scheduler-system", "gpu-res-n-2-00001", "ur", "ai-scheduler", "n", "n");
    pod_t *bound = fx_pod("{'metadata':{'name':'b','uid':'ub','annotations':{'gpu-fraction':'0.5',"
                          "'resource.aibee.cn/gpu-index':'2'}},"
                          "'spec':{'nodeName':'n','containers':[{'name':'c'}]}}");
    pod_t *lied = fx_pod("{'metadata':{'name':'l','uid':'ul','annotations':{'gpu-fraction':'0.5',"
                         "'resource.aibee.cn/gpu-index':'3'}},'spec':{'containers':[{'name':'c'}]}}");
    assert_true(gpu_is_reservation(res));
    node_info_add_pod(ni, res);
    assert_int_equal(gpus_used(ni), 0);
    assert_int_equal(gpu_node_idle_reserved(gpu_node_of(ni)), 4);
    node_info_add_pod(ni, bound);
    assert_int_equal(gpus_used(ni), 1);
    assert_int_equal(gpu_node_mask_of(gpu_node_of(ni), "ub"), 4);
    assert_int_equal(gpu_node_idle_reserved(gpu_node_of(ni)), 0);
    /* A pending pod's own gpu-index is ignored: it joins slot 2 (fullest). */
    node_info_add_pod(ni, lied);
    assert_int_equal(gpu_node_mask_of(gpu_node_of(ni), "ul"), 4);
    node_info_remove_pod(ni, "ul");
    node_info_remove_pod(ni, "ub");
    assert_int_equal(gpus_used(ni), 0);
    assert_int_equal(gpu_node_idle_reserved(gpu_node_of(ni)), 4);
    /* The idle reserved slot is reused before an untouched one. */
    uint64_t mask = 0;
    assert_true(fits(ni, lied, &mask));
    assert_int_equal(mask, 4);
    /* A clone accounts the same and is independent. */
    node_info_add_pod(ni, lied);
    node_info_t *c = node_info_clone(ni);
    node_info_remove_pod(c, "ul");
    assert_int_equal(gpu_node_mask_of(gpu_node_of(ni), "ul"), 4);
    assert_int_equal(gpu_node_mask_of(gpu_node_of(c), "ul"), 0);
    assert_int_equal(gpus_used(c), 0);
    node_info_remove_pod(ni, "ur");
    assert_int_equal(gpus_used(ni), 1);
    node_info_free(c);
    pod_unref(res);
    pod_unref(bound);
    pod_unref(lied);
    node_info_free(ni);
}

/* Issue 22 fault 5: the reservation label is trusted only on a pod that
 * ai-scheduler made: in the reservation namespace, with its name, its
 * managed-by label and the node annotation naming its node. */
static void test_reservation_trust(void **state)
{
    const char *ns = "ai-scheduler-system", *name = "gpu-res-n-2-00001";
    struct {
        const char *ns, *name, *by, *node, *ann_node;
        int trusted;
    } cases[] = {
        { ns, name, "ai-scheduler", "n", "n", 1 },
        { "team-a", name, "ai-scheduler", "n", "n", 0 }, /* a user's namespace */
        { "default", name, "ai-scheduler", "n", "n", 0 },
        { ns, name, NULL, "n", "n", 0 },               /* no managed-by */
        { ns, name, "someone", "n", "n", 0 },          /* another manager */
        { ns, "my-pod", "ai-scheduler", "n", "n", 0 }, /* not a reservation's name */
        { ns, name, "ai-scheduler", "n", NULL, 0 },    /* no node annotation */
        { ns, name, "ai-scheduler", "n", "m", 0 },     /* annotation names another node */
        { ns, name, "ai-scheduler", NULL, "n", 0 },    /* not created bound */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pod_t *p = reservation_pod(cases[i].ns, cases[i].name, "u", cases[i].by, cases[i].node, cases[i].ann_node);
        if (gpu_is_reservation(p) != cases[i].trusted)
            fail_msg("case %zu: reservation %d, want %d", i, gpu_is_reservation(p), cases[i].trusted);
        /* Untrusted, it asks nothing of sharing: an ordinary GPU pod. */
        if (!cases[i].trusted)
            assert_null(gpu_req_of(p));
        pod_unref(p);
    }
    /* The namespace is the configured one, not a fixed name. */
    gpu_set_reservation_namespace("gpu-res");
    pod_t *old = reservation_pod(ns, name, "u1", "ai-scheduler", "n", "n");
    pod_t *cfg = reservation_pod("gpu-res", name, "u2", "ai-scheduler", "n", "n");
    gpu_set_reservation_namespace(GPU_RESERVATION_NS);
    assert_false(gpu_is_reservation(old));
    assert_true(gpu_is_reservation(cfg));
    pod_unref(old);
    pod_unref(cfg);
}

/* A forged reservation is counted as what it is: a pod holding a whole
 * GPU. Its GPU stays in the node's count and no slot is reserved. */
static void test_forged_reservation_counts(void **state)
{
    node_info_t *ni = gpu_node("n", 2, NULL);
    pod_t *forged = reservation_pod("team-a", "gpu-res-n-2-00001", "uf", "ai-scheduler", "n", "n");
    node_info_add_pod(ni, forged);
    assert_int_equal(gpus_used(ni), 1);
    assert_int_equal(gpu_node_idle_reserved(gpu_node_of(ni)), 0);
    assert_int_equal(gpu_node_reserved(gpu_node_of(ni)), 0);
    /* One GPU is left: a whole-GPU pod fits beside it, a second does not. */
    pod_t *f = ann_pod("f", "'gpu-fraction':'0.5'", NULL);
    uint64_t mask = 0;
    assert_true(fits(ni, f, &mask));
    assert_int_equal(mask, 1); /* a fresh slot, not the forged one's slot 2 */
    node_info_remove_pod(ni, "uf");
    assert_int_equal(gpus_used(ni), 0);
    pod_unref(forged);
    pod_unref(f);
    node_info_free(ni);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_mask_text),
        cmocka_unit_test(test_packing),
        cmocka_unit_test(test_best_fit),
        cmocka_unit_test(test_whole_beside_fractions),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_num_devices),
        cmocka_unit_test(test_reservations_and_restart),
        cmocka_unit_test(test_reservation_trust),
        cmocka_unit_test(test_forged_reservation_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
