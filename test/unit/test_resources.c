/* test_resources.c -- many extended resources: nodes with 20 or more
 * (MIG, hugepages, RDMA) are parsed whole, never dropped; interned names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "api/types.h"
#include "framework/nodeinfo.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

/* {"cpu":"8","example.com/r0":"1",...,"example.com/r<n-1>":"n"} */
static json_t *resource_list(int n, const char *prefix)
{
    json_t *l = json_pack("{s:s, s:s, s:s}", "cpu", "8", "memory", "16Gi", "pods", "110");
    for (int i = 0; i < n; i++) {
        char name[128], val[16];
        snprintf(name, sizeof name, "%s%d", prefix, i);
        snprintf(val, sizeof val, "%d", i + 1);
        json_object_set_new(l, name, json_string(val));
    }
    return l;
}

static node_t *node_with(int n, const char *prefix)
{
    json_t *j = json_pack("{s:s, s:{s:s}, s:{s:o}}", "kind", "Node", "metadata", "name", "big", "status", "allocatable",
                          resource_list(n, prefix));
    char err[256] = "";
    node_t *node = node_from_json(j, err, sizeof err);
    json_decref(j);
    if (!node)
        fail_msg("node rejected: %s", err);
    return node;
}

/* Twenty extended resources: the node is kept and every one is there. The
 * old vector held 8 and dropped such a node. */
static void test_node_20_extended(void **state)
{
    (void)state;
    node_t *n = node_with(20, "nvidia.com/mig-");
    assert_int_equal(n->allocatable.milli_cpu, 8000);
    assert_int_equal(n->allocatable.nscalar, 20);
    char name[64];
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "nvidia.com/mig-%d", i);
        assert_int_equal(res_get_scalar(&n->allocatable, name), i + 1);
    }
    /* A pod asking for the last one fits; arithmetic keeps every name. */
    node_info_t *ni = node_info_new("big");
    node_info_set_node(ni, n);
    resources_t want;
    res_zero(&want);
    assert_int_equal(res_add_scalar(&want, "nvidia.com/mig-19", 20), 0);
    resources_t sum = n->allocatable;
    res_add(&sum, &want);
    assert_int_equal(res_get_scalar(&sum, "nvidia.com/mig-19"), 40);
    assert_int_equal(sum.nscalar, 20);
    node_info_free(ni);
    node_unref(n);
}

/* Beyond the vector's room the node still parses; the extra names are left
 * out (pods asking for them do not fit there), never the node. */
static void test_node_too_many_kept(void **state)
{
    (void)state;
    node_t *n = node_with(RES_MAX_SCALAR + 8, "example.com/dev-");
    assert_int_equal(n->allocatable.nscalar, RES_MAX_SCALAR);
    assert_int_equal(n->allocatable.milli_cpu, 8000);
    node_unref(n);
}

/* A pod still fails loudly when it asks for more names than fit: ignoring a
 * request would overcommit. */
static void test_pod_too_many_rejected(void **state)
{
    (void)state;
    json_t *j =
        json_pack("{s:{s:s, s:s}, s:{s:[{s:s, s:{s:o}}]}}", "metadata", "name", "p", "uid", "u", "spec", "containers",
                  "name", "c", "resources", "requests", resource_list(RES_MAX_SCALAR + 1, "example.com/dev-"));
    char err[256] = "";
    pod_t *p = pod_from_json(j, err, sizeof err);
    json_decref(j);
    assert_null(p);
    assert_non_null(strstr(err, "too many"));
}

/* Too many names across containers (each container alone fits). */
static void test_pod_too_many_across_containers(void **state)
{
    (void)state;
    json_t *j =
        json_pack("{s:{s:s, s:s}, s:{s:[{s:s, s:{s:o}}, {s:s, s:{s:o}}]}}", "metadata", "name", "p", "uid", "u", "spec",
                  "containers", "name", "a", "resources", "requests", resource_list(RES_MAX_SCALAR / 2 + 1, "a/"),
                  "name", "b", "resources", "requests", resource_list(RES_MAX_SCALAR / 2, "b/"));
    char err[256] = "";
    pod_t *p = pod_from_json(j, err, sizeof err);
    json_decref(j);
    assert_null(p);
    assert_true(err[0] != '\0');
}

static void test_list_limits(void **state)
{
    (void)state;
    resources_t r;
    char err[128] = "";
    json_t *l = resource_list(RES_MAX_SCALAR + 1, "x/");
    assert_int_equal(res_from_json(&r, l, err, sizeof err), -1);
    assert_true(err[0] != '\0');
    int ignored = 0;
    assert_int_equal(res_from_json_node(&r, l, &ignored, err, sizeof err), 0);
    assert_int_equal(ignored, 1);
    json_decref(l);
    char name[RES_NAME_MAX + 2];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    l = json_pack("{s:s}", name, "1");
    assert_int_equal(res_from_json(&r, l, err, sizeof err), -1);
    json_decref(l);
    /* A bad quantity still fails a node's list. */
    l = json_pack("{s:s}", "cpu", "lots");
    assert_int_equal(res_from_json_node(&r, l, &ignored, err, sizeof err), -1);
    json_decref(l);
}

/* Qualified names longer than the old 64-byte slot are fine. */
static void test_long_names_and_intern(void **state)
{
    (void)state;
    char name[300];
    memset(name, 'a', 250);
    strcpy(name + 250, "/some-device");
    resources_t r;
    res_zero(&r);
    assert_int_equal(res_add_scalar(&r, name, 3), 0);
    assert_int_equal(res_get_scalar(&r, name), 3);
    /* Interned: the same pointer for the same name, whatever buffer. */
    char copy[300];
    strcpy(copy, name);
    assert_ptr_equal(res_intern(name), res_intern(copy));
    assert_ptr_equal(r.scalar[0].name, res_intern(copy));
    char toolong[RES_NAME_MAX + 8];
    memset(toolong, 'b', sizeof toolong - 1);
    toolong[sizeof toolong - 1] = '\0';
    assert_null(res_intern(toolong));
    assert_int_equal(res_add_scalar(&r, toolong, 1), -1);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_20_extended),      cmocka_unit_test(test_node_too_many_kept),
        cmocka_unit_test(test_pod_too_many_rejected), cmocka_unit_test(test_pod_too_many_across_containers),
        cmocka_unit_test(test_list_limits),           cmocka_unit_test(test_long_names_and_intern),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
