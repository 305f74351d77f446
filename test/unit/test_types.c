/* test_types.c -- resource vectors, Node and Pod parsing, ref counting,
 * toleration matching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "api/types.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#define MI (1024LL * 1024)
#define GI (1024LL * MI)

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!j)
        fail_msg("bad test JSON: %s: %s", text, e.text);
    return j;
}

/* ---- resources ---- */

static void test_res_from_json(void **state)
{
    resources_t r;
    char err[128] = "";
    json_t *j = J("{\"cpu\":\"1500m\",\"memory\":\"1Gi\",\"ephemeral-storage\":\"10G\",\"pods\":\"110\","
                  "\"nvidia.com/gpu\":\"4\",\"hugepages-2Mi\":\"1Gi\"}");
    assert_int_equal(res_from_json(&r, j, err, sizeof err), 0);
    json_decref(j);
    assert_int_equal(r.milli_cpu, 1500);
    assert_int_equal(r.memory, GI);
    assert_int_equal(r.ephemeral, 10000000000LL);
    assert_int_equal(r.pods, 110);
    assert_int_equal(r.nscalar, 2);
    assert_int_equal(res_get_scalar(&r, RES_GPU), 4);
    assert_int_equal(res_get_scalar(&r, "hugepages-2Mi"), GI);
    assert_int_equal(res_get_scalar(&r, "example.com/foo"), 0);

    /* Bare JSON numbers are quantities too. */
    j = J("{\"cpu\":2,\"memory\":1048576,\"nvidia.com/gpu\":0.5}");
    assert_int_equal(res_from_json(&r, j, err, sizeof err), 0);
    json_decref(j);
    assert_int_equal(r.milli_cpu, 2000);
    assert_int_equal(r.memory, MI);
    assert_int_equal(res_get_scalar(&r, RES_GPU), 1); /* rounded up */
    j = J("{\"cpu\":0.1}");
    assert_int_equal(res_from_json(&r, j, err, sizeof err), 0);
    json_decref(j);
    assert_int_equal(r.milli_cpu, 100);

    /* A long but valid quantity string is not truncated. */
    char longq[400];
    strcpy(longq, "{\"memory\":\"0.");
    memset(longq + strlen(longq), '0', 300);
    strcpy(longq + 13 + 300, "1\"}");
    j = J(longq);
    assert_int_equal(res_from_json(&r, j, err, sizeof err), 0);
    json_decref(j);
    assert_int_equal(r.memory, 1);

    assert_int_equal(res_from_json(&r, NULL, err, sizeof err), 0);
    assert_int_equal(r.milli_cpu, 0);
    assert_int_equal(r.nscalar, 0);
}

static void test_res_from_json_bad(void **state)
{
    const char *bad[] = {
        "[]",
        "\"1\"",
        "{\"cpu\":\"abc\"}",
        "{\"cpu\":\"-1\"}",
        "{\"memory\":true}",
        "{\"memory\":null}",
        "{\"memory\":{}}",
        "{\"memory\":\"9999999999999999999\"}",
        "{\"cpu\":\"9223372036854775807\"}", /* overflows at milli scale */
        "{\"memory\":-5}",
        "{\"memory\":1e300}",
        "{\"memory\":\"1\\u0000x\"}",
        /* too many names, too long a name: test_resources.c */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        resources_t r;
        char err[128] = "";
        json_t *j = J(bad[i]);
        if (res_from_json(&r, j, err, sizeof err) != -1)
            fail_msg("accepted bad resource list %s", bad[i]);
        assert_true(err[0] != '\0');
        json_decref(j);
    }
}

static void test_res_arith(void **state)
{
    resources_t a, b;
    res_zero(&a);
    res_zero(&b);
    a.milli_cpu = 1000;
    a.memory = 100;
    res_add_scalar(&a, RES_GPU, 2);
    b.milli_cpu = 300;
    b.memory = 500;
    b.pods = 1;
    res_add_scalar(&b, RES_GPU, 1);
    res_add_scalar(&b, "example.com/fpga", 1);

    resources_t s = a;
    res_add(&s, &b);
    assert_int_equal(s.milli_cpu, 1300);
    assert_int_equal(s.memory, 600);
    assert_int_equal(s.pods, 1);
    assert_int_equal(res_get_scalar(&s, RES_GPU), 3);
    assert_int_equal(res_get_scalar(&s, "example.com/fpga"), 1);

    resources_t d = a;
    res_sub(&d, &b);
    assert_int_equal(d.milli_cpu, 700);
    assert_int_equal(d.memory, 0); /* floors at zero */
    assert_int_equal(res_get_scalar(&d, RES_GPU), 1);
    assert_int_equal(res_get_scalar(&d, "example.com/fpga"), 0);

    resources_t m = a;
    res_max(&m, &b);
    assert_int_equal(m.milli_cpu, 1000);
    assert_int_equal(m.memory, 500);
    assert_int_equal(res_get_scalar(&m, RES_GPU), 2);
    assert_int_equal(res_get_scalar(&m, "example.com/fpga"), 1);

    resources_t big;
    res_zero(&big);
    big.memory = INT64_MAX - 1;
    res_add(&big, &b);
    assert_int_equal(big.memory, INT64_MAX); /* saturates */

    resources_t full;
    res_zero(&full);
    char name[16];
    for (int i = 0; i < RES_MAX_SCALAR; i++) {
        snprintf(name, sizeof name, "x/r%d", i);
        assert_int_equal(res_add_scalar(&full, name, 1), 0);
    }
    assert_int_equal(res_add_scalar(&full, "x/one-more", 1), -1);
    assert_int_equal(res_add_scalar(&full, "x/r0", 1), 0); /* existing name still adds */
    assert_int_equal(res_get_scalar(&full, "x/r0"), 2);
}

/* ---- nodes ---- */

static void test_node_parse(void **state)
{
    char err[256] = "";
    json_t *j = J(
        "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"uid\":\"u-1\",\"resourceVersion\":\"42\","
        "\"labels\":{\"zone\":\"a\"},\"unknownField\":[1,2]},"
        "\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"gpu\",\"value\":\"true\",\"effect\":\"NoSchedule\"},"
        "{\"key\":\"soft\",\"effect\":\"PreferNoSchedule\"},{\"key\":\"evict\",\"effect\":\"NoExecute\",\"timeAdded\":\"2026-01-01T00:00:00Z\"}]},"
        "\"status\":{\"capacity\":{\"cpu\":\"8\",\"memory\":\"32Gi\",\"pods\":\"110\"},"
        "\"allocatable\":{\"cpu\":\"7500m\",\"memory\":\"31Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"}}}");
    node_t *n = node_from_json(j, err, sizeof err);
    json_decref(j);
    assert_non_null(n);
    assert_int_equal(n->refs, 1);
    assert_string_equal(n->name, "n1");
    assert_string_equal(n->uid, "u-1");
    assert_string_equal(n->resource_version, "42");
    assert_string_equal(labels_get(&n->labels, "zone"), "a");
    assert_int_equal(n->unschedulable, 1);
    assert_int_equal(n->ntaints, 3);
    assert_string_equal(n->taints[0].key, "gpu");
    assert_string_equal(n->taints[0].value, "true");
    assert_int_equal(n->taints[0].effect, EFFECT_NO_SCHEDULE);
    assert_string_equal(n->taints[1].value, "");
    assert_int_equal(n->taints[1].effect, EFFECT_PREFER_NO_SCHEDULE);
    assert_int_equal(n->taints[2].effect, EFFECT_NO_EXECUTE);
    assert_int_equal(n->capacity.milli_cpu, 8000);
    assert_int_equal(n->allocatable.milli_cpu, 7500);
    assert_int_equal(n->allocatable.memory, 31 * GI);
    assert_int_equal(res_get_scalar(&n->allocatable, RES_GPU), 8);
    assert_ptr_equal(node_ref(n), n);
    assert_int_equal(n->refs, 2);
    node_unref(n);
    node_unref(n);

    /* Allocatable falls back to capacity. */
    j = J("{\"metadata\":{\"name\":\"n2\"},\"status\":{\"capacity\":{\"cpu\":\"4\"}}}");
    n = node_from_json(j, err, sizeof err);
    json_decref(j);
    assert_non_null(n);
    assert_int_equal(n->allocatable.milli_cpu, 4000);
    assert_int_equal(n->unschedulable, 0);
    assert_int_equal(n->ntaints, 0);
    assert_string_equal(n->uid, "");
    node_unref(n);
    node_unref(NULL);
}

static void test_node_bad(void **state)
{
    const char *bad[] = {
        "[]",
        "null",
        "{}",
        "{\"metadata\":[]}",
        "{\"metadata\":{\"name\":5}}",
        "{\"metadata\":{\"name\":\"\"}}",
        "{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":1}}}",
        "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"unschedulable\":\"yes\"}}",
        "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":{}}}",
        "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":\"a\",\"effect\":\"Bogus\"}]}}",
        "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":\"a\",\"effect\":\"NoSchedule\"},{\"key\":\"b\"}]}}",
        "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":\"a\",\"value\":3,\"effect\":\"NoSchedule\"}]}}",
        "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[7]}}",
        "{\"metadata\":{\"name\":\"n\"},\"status\":{\"capacity\":{\"cpu\":\"x\"}}}",
        "{\"metadata\":{\"name\":\"n\"},\"status\":{\"capacity\":{\"cpu\":\"1\"},\"allocatable\":{\"cpu\":\"-1\"}}}",
        "{\"metadata\":{\"name\":\"n\"},\"status\":\"Ready\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        json_t *j = J(bad[i]);
        node_t *n = node_from_json(j, err, sizeof err);
        if (n)
            fail_msg("accepted bad node %s", bad[i]);
        assert_true(err[0] != '\0');
        json_decref(j);
    }
}

/* ---- pods ---- */

static pod_t *parse_pod(const char *text)
{
    char err[256] = "";
    json_t *j = J(text);
    pod_t *p = pod_from_json(j, err, sizeof err);
    json_decref(j);
    if (!p)
        fail_msg("pod rejected: %s", err);
    return p;
}

static void test_pod_minimal(void **state)
{
    pod_t *p = parse_pod("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    assert_string_equal(p->ns, "default");
    assert_string_equal(p->key, "default/p");
    assert_string_equal(p->scheduler_name, "default-scheduler");
    assert_string_equal(p->node_name, "");
    assert_string_equal(p->nominated_node, "");
    assert_string_equal(p->pool, "");
    assert_string_equal(p->borrowed_from, "");
    assert_string_equal(pod_home_pool(p), DEFAULT_POOL);
    assert_int_equal(p->phase, PHASE_PENDING);
    assert_int_equal(p->priority, 0);
    assert_int_equal(p->deleting, 0);
    assert_false(pod_is_bound(p));
    assert_false(pod_is_terminal(p));
    assert_int_equal(p->requests.milli_cpu, 0);
    assert_int_equal(p->requests.memory, 0);
    assert_int_equal(p->requests.pods, 1);
    assert_int_equal(p->nonzero_cpu, 100);
    assert_int_equal(p->nonzero_mem, 200 * MI);
    assert_int_equal(p->has_node_selector, 0);
    assert_int_equal(p->naffinity_terms, 0);
    assert_int_equal(p->npreferred, 0);
    assert_int_equal(p->ntolerations, 0);
    assert_int_equal(p->nports, 0);
    pod_unref(p);
}

static void test_pod_full(void **state)
{
    pod_t *p = parse_pod(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
        "\"metadata\":{\"namespace\":\"ml\",\"name\":\"train-0\",\"uid\":\"abc\",\"resourceVersion\":\"77\","
        "  \"labels\":{\"app\":\"train\"},"
        "  \"annotations\":{\"resource.aibee.cn/pool\":\"gpu-a\",\"resource.aibee.cn/borrowed-from\":\"gpu-b\",\"other\":\"x\"},"
        "  \"creationTimestamp\":\"2026-01-02T03:04:05Z\",\"deletionTimestamp\":\"2026-01-02T03:05:00Z\"},"
        "\"spec\":{\"schedulerName\":\"ai-scheduler\",\"nodeName\":\"n1\",\"priority\":1000,"
        "  \"nodeSelector\":{\"disk\":\"ssd\"},"
        "  \"affinity\":{\"nodeAffinity\":{"
        "    \"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
        "      {\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}]},"
        "      {\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n9\"]}]}]},"
        "    \"preferredDuringSchedulingIgnoredDuringExecution\":["
        "      {\"weight\":30,\"preference\":{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]}},"
        "      {\"weight\":5}]}},"
        "  \"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"},"
        "                  {\"key\":\"k\",\"value\":\"v\"},{\"operator\":\"Exists\"}],"
        "  \"containers\":[{\"name\":\"c\",\"ports\":[{\"containerPort\":80,\"hostPort\":8080},"
        "      {\"containerPort\":53,\"hostPort\":53,\"protocol\":\"UDP\",\"hostIP\":\"10.0.0.1\"},"
        "      {\"containerPort\":9090},{\"containerPort\":1,\"hostPort\":0}],"
        "    \"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"nvidia.com/gpu\":\"1\"},"
        "                 \"limits\":{\"cpu\":\"4\"}}}]},"
        "\"status\":{\"phase\":\"Running\",\"nominatedNodeName\":\"n2\",\"startTime\":\"2026-01-02T03:04:10Z\"}}");
    assert_string_equal(p->key, "ml/train-0");
    assert_string_equal(p->uid, "abc");
    assert_string_equal(p->resource_version, "77");
    assert_string_equal(labels_get(&p->labels, "app"), "train");
    assert_string_equal(p->pool, "gpu-a");
    assert_string_equal(pod_home_pool(p), "gpu-a");
    assert_string_equal(p->borrowed_from, "gpu-b");
    assert_int_equal(p->created_ms, util_parse_rfc3339("2026-01-02T03:04:05Z"));
    assert_int_equal(p->started_ms - p->created_ms, 5000);
    assert_int_equal(p->deleting, 1);
    assert_string_equal(p->scheduler_name, "ai-scheduler");
    assert_string_equal(p->node_name, "n1");
    assert_true(pod_is_bound(p));
    assert_int_equal(p->priority, 1000);
    assert_int_equal(p->phase, PHASE_RUNNING);
    assert_string_equal(p->nominated_node, "n2");

    assert_int_equal(p->has_node_selector, 1);
    labels_t l;
    json_t *lj = J("{\"disk\":\"ssd\",\"zone\":\"a\"}");
    labels_from_json(&l, lj, NULL, 0);
    json_decref(lj);
    assert_true(selector_matches(&p->node_selector, &l, "n1"));
    assert_int_equal(p->naffinity_terms, 2);
    assert_true(selector_matches(&p->affinity_terms[0], &l, "n1"));
    assert_false(selector_matches(&p->affinity_terms[1], &l, "n1"));
    assert_true(selector_matches(&p->affinity_terms[1], &l, "n9"));
    assert_int_equal(p->npreferred, 2);
    assert_int_equal(p->preferred[0].weight, 30);
    assert_false(selector_matches(&p->preferred[0].term, &l, "n1"));
    assert_true(selector_is_empty(&p->preferred[1].term)); /* absent preference */
    assert_int_equal(p->preferred[1].weight, 5);
    labels_free(&l);

    assert_int_equal(p->ntolerations, 3);
    assert_int_equal(p->tolerations[0].op_exists, 1);
    assert_int_equal(p->tolerations[0].effect, EFFECT_NO_SCHEDULE);
    assert_int_equal(p->tolerations[1].op_exists, 0);
    assert_int_equal(p->tolerations[1].effect, EFFECT_ALL);
    assert_string_equal(p->tolerations[1].value, "v");
    assert_string_equal(p->tolerations[2].key, "");

    assert_int_equal(p->nports, 2);
    assert_int_equal(p->ports[0].port, 8080);
    assert_string_equal(p->ports[0].protocol, "TCP");
    assert_string_equal(p->ports[0].host_ip, "");
    assert_int_equal(p->ports[1].port, 53);
    assert_string_equal(p->ports[1].protocol, "UDP");
    assert_string_equal(p->ports[1].host_ip, "10.0.0.1");

    assert_int_equal(p->requests.milli_cpu, 2000);
    assert_int_equal(p->requests.memory, 4 * GI);
    assert_int_equal(res_get_scalar(&p->requests, RES_GPU), 1);
    assert_int_equal(p->requests.pods, 1);
    assert_int_equal(p->nonzero_cpu, 2000);
    assert_int_equal(p->nonzero_mem, 4 * GI);
    pod_unref(p);
}

static void test_pod_init_and_overhead(void **state)
{
    pod_t *p = parse_pod("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{"
                         "\"containers\":["
                         "  {\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"1Gi\"}}},"
                         "  {\"resources\":{\"requests\":{\"cpu\":\"200m\"}}}],"
                         "\"initContainers\":["
                         "  {\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"512Mi\"}}},"
                         "  {\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\"}}}],"
                         "\"overhead\":{\"cpu\":\"250m\",\"memory\":\"100Mi\"}}}");
    /* cpu: max(100+200, 500, 0) + 250; memory: max(1Gi, 512Mi) + 100Mi. */
    assert_int_equal(p->requests.milli_cpu, 750);
    assert_int_equal(p->requests.memory, GI + 100 * MI);
    assert_int_equal(res_get_scalar(&p->requests, RES_GPU), 1);
    assert_int_equal(p->requests.pods, 1);
    /* non-zero: containers 100+200 and 1Gi+200Mi (second has no memory);
     * init max: 500m cpu; then overhead added. */
    assert_int_equal(p->nonzero_cpu, 750);
    assert_int_equal(p->nonzero_mem, GI + 200 * MI + 100 * MI);
    pod_unref(p);

    /* An explicit zero is kept (kube only defaults unset requests). */
    p = parse_pod("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":["
                  "{\"resources\":{\"requests\":{\"cpu\":\"0\"}}},{}]}}");
    assert_int_equal(p->requests.milli_cpu, 0);
    assert_int_equal(p->nonzero_cpu, 0 + 100);
    assert_int_equal(p->nonzero_mem, 2 * 200 * MI);
    pod_unref(p);

    /* A big init container dominates the sum. */
    p = parse_pod(
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{"
        "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\"}}},{\"resources\":{\"requests\":{\"cpu\":\"1\"}}}],"
        "\"initContainers\":[{\"resources\":{\"requests\":{\"cpu\":\"3\",\"memory\":\"8Gi\"}}}]}}");
    assert_int_equal(p->requests.milli_cpu, 3000);
    assert_int_equal(p->requests.memory, 8 * GI);
    assert_int_equal(p->nonzero_cpu, 3000);
    assert_int_equal(p->nonzero_mem, 8 * GI);
    pod_unref(p);
}

static void test_pod_phases_and_status(void **state)
{
    static const struct {
        const char *phase;
        pod_phase_t want;
        int terminal;
    } c[] = {
        { "Pending", PHASE_PENDING, 0 }, { "Running", PHASE_RUNNING, 0 }, { "Succeeded", PHASE_SUCCEEDED, 1 },
        { "Failed", PHASE_FAILED, 1 },   { "Weird", PHASE_UNKNOWN, 0 },
    };
    char buf[256];
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        snprintf(buf, sizeof buf,
                 "{\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
                 "\"status\":{\"phase\":\"%s\"}}",
                 c[i].phase);
        pod_t *p = parse_pod(buf);
        assert_int_equal(p->phase, c[i].want);
        assert_int_equal(pod_is_terminal(p), c[i].terminal);
        assert_int_equal(p->started_ms, p->created_ms); /* no startTime: created */
        assert_true(p->created_ms > 0);
        pod_unref(p);
    }
    /* Bound, its start not reported yet: it runs since its Binding at most
     * (PodScheduled=True), not since its creation; a reported start wins. */
    const char *bound = "{\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
                        "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Pending\",\"conditions\":["
                        "{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-01-01T00:09:00Z\"},"
                        "{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"2026-01-01T00:00:"
                        "07Z\"}]%s}}";
    char big[640];
    snprintf(big, sizeof big, bound, "");
    pod_t *p = parse_pod(big);
    assert_int_equal(p->started_ms - p->created_ms, 7000);
    pod_unref(p);
    snprintf(big, sizeof big, bound, ",\"startTime\":\"2026-01-01T00:00:09Z\"");
    p = parse_pod(big);
    assert_int_equal(p->started_ms - p->created_ms, 9000);
    pod_unref(p);
}

static void test_pod_bad(void **state)
{
    const char *bad[] = {
        "[]",
        "42",
        "{}",
        "{\"metadata\":\"x\"}",
        "{\"metadata\":{\"name\":[]}}",
        "{\"metadata\":{\"name\":\"p\",\"namespace\":1}}",
        "{\"metadata\":{\"name\":\"p\",\"labels\":[]}}",
        "{\"metadata\":{\"name\":\"p\",\"annotations\":[]}}",
        "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"resource.aibee.cn/pool\":5}}}",
        "{\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"yesterday\"}}",
        "{\"metadata\":{\"name\":\"p\",\"creationTimestamp\":12}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":[]}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"priority\":\"high\"}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"priority\":99999999999}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulerName\":false}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":{\"a\":1}}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"nodeSelector\":\"a\"}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":{}}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[1]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":[]}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"memory\":\"-1Gi\"}}}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"initContainers\":[{\"resources\":{\"requests\":{\"cpu\":\"1.2.3\"}}}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"overhead\":{\"cpu\":\"x\"}}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"overhead\":[]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"ports\":[{\"hostPort\":\"80\"}]}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"ports\":[{\"hostPort\":70000}]}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"ports\":[{\"hostPort\":80,\"protocol\":\"VERYLONGPROTO\"}]}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"ports\":[{\"hostPort\":80,\"hostIP\":7}]}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"ports\":5}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"tolerations\":{}}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"tolerations\":[{\"key\":\"a\",\"operator\":\"Like\"}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"tolerations\":[{\"key\":\"a\",\"effect\":\"Never\"}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"tolerations\":[{\"key\":\"a\",\"value\":1}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"tolerations\":[{\"key\":\"a\"},\"x\"]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"affinity\":[]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":{}}}}}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\"}]},{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Bad\"}]}]}}}}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":["
        "{\"weight\":\"ten\",\"preference\":{}}]}}}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":["
        "{\"weight\":10,\"preference\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\"}]}},{\"weight\":10,\"preference\":5}]}}}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":["
        "{\"weight\":1000,\"preference\":{}}]}}}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingGates\":{\"name\":\"g\"}}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingGates\":[\"g\"]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingGates\":[{\"name\":1}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"resourceClaims\":\"gpu\"}}",
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"resourceClaims\":[{\"resourceClaimName\":\"c\"}]}}",
        "{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":3}}",
        "{\"metadata\":{\"name\":\"p\"},\"status\":{\"startTime\":\"soon\"}}",
        /* more extended resources across containers than fit: test_resources.c */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        json_t *j = J(bad[i]);
        pod_t *p = pod_from_json(j, err, sizeof err);
        if (p)
            fail_msg("accepted bad pod #%zu %s", i, bad[i]);
        assert_true(err[0] != '\0');
        json_decref(j);
    }
    assert_null(pod_from_json(NULL, NULL, 0));
}

/* spec.schedulingGates, spec.resourceClaims and the PodScheduled condition
 * as a 1.35 API server serves a gated pod (the condition is the one
 * kube's applySchedulingGatedCondition sets at creation). */
static void test_pod_gates_and_claims(void **state)
{
    pod_t *p = parse_pod(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\","
        "\"uid\":\"u\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"schedulingGates\":"
        "[{\"name\":\"example.com/foo\"},{\"name\":\"example.com/bar\"}],\"resourceClaims\":[{\"name\":\"gpu\","
        "\"resourceClaimTemplateName\":\"gpu-template\"},{\"name\":\"nic\",\"resourceClaimName\":\"nic-0\"}],"
        "\"containers\":[{\"name\":\"c\",\"image\":\"pause\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]},"
        "\"status\":{\"phase\":\"Pending\",\"qosClass\":\"BestEffort\",\"conditions\":[{\"type\":\"PodScheduled\","
        "\"status\":\"False\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-01-01T00:00:00Z\","
        "\"reason\":\"SchedulingGated\",\"message\":\"Scheduling is blocked due to non-empty scheduling gates\"}]}}");
    assert_int_equal(p->ngates, 2);
    assert_string_equal(p->gates, "example.com/foo, example.com/bar");
    assert_int_equal(p->nclaims, 2);
    assert_string_equal(p->claims, "gpu, nic");
    assert_string_equal(p->scheduled_reason, "SchedulingGated");
    assert_string_equal(p->scheduled_message, "Scheduling is blocked due to non-empty scheduling gates");
    assert_null(p->unsupported); /* honoured, not warned about */
    pod_unref(p);
    /* Absent, null and empty lists: no gates, no claims; conditions of
     * other types: no PodScheduled one. */
    p = parse_pod("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingGates\":[],\"resourceClaims\":null},"
                  "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"x\"}]}}");
    assert_int_equal(p->ngates, 0);
    assert_null(p->gates);
    assert_int_equal(p->nclaims, 0);
    assert_null(p->claims);
    assert_null(p->scheduled_reason);
    pod_unref(p);
}

/* ---- tolerations ---- */

static void test_tolerations(void **state)
{
    taint_t t_gpu = { "gpu", "true", EFFECT_NO_SCHEDULE };
    taint_t t_gpu_exec = { "gpu", "true", EFFECT_NO_EXECUTE };
    taint_t t_soft = { "soft", "", EFFECT_PREFER_NO_SCHEDULE };

    toleration_t eq = { "gpu", "true", 0, EFFECT_NO_SCHEDULE };
    assert_true(toleration_tolerates(&eq, &t_gpu));
    assert_false(toleration_tolerates(&eq, &t_gpu_exec)); /* effect differs */
    toleration_t eq_wrong = { "gpu", "false", 0, EFFECT_ALL };
    assert_false(toleration_tolerates(&eq_wrong, &t_gpu));
    toleration_t eq_all = { "gpu", "true", 0, EFFECT_ALL };
    assert_true(toleration_tolerates(&eq_all, &t_gpu_exec));
    toleration_t ex = { "gpu", "", 1, EFFECT_ALL };
    assert_true(toleration_tolerates(&ex, &t_gpu));
    assert_false(toleration_tolerates(&ex, &t_soft));
    toleration_t ex_any = { "", "", 1, EFFECT_ALL };
    assert_true(toleration_tolerates(&ex_any, &t_soft));
    assert_true(toleration_tolerates(&ex_any, &t_gpu_exec));
    toleration_t ex_any_ns = { "", "", 1, EFFECT_NO_SCHEDULE };
    assert_true(toleration_tolerates(&ex_any_ns, &t_gpu));
    assert_false(toleration_tolerates(&ex_any_ns, &t_gpu_exec));

    pod_t *p = parse_pod("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"tolerations\":["
                         "{\"key\":\"gpu\",\"operator\":\"Equal\",\"value\":\"true\",\"effect\":\"NoSchedule\"}]}}");
    taint_t taints[] = { t_soft, t_gpu };
    const taint_t *first = NULL;
    assert_true(pod_tolerates_taints(p, taints, 2, 1, &first));
    assert_null(first);
    assert_false(pod_tolerates_taints(p, taints, 2, 0, &first)); /* soft counts now */
    assert_ptr_equal(first, &taints[0]);
    taint_t hard[] = { t_gpu, t_gpu_exec };
    assert_false(pod_tolerates_taints(p, hard, 2, 1, &first));
    assert_ptr_equal(first, &hard[1]);
    assert_true(pod_tolerates_taints(p, NULL, 0, 1, NULL));
    pod_unref(p);
}

/* ---- ref counting under threads ---- */

static void *ref_worker(void *arg)
{
    pod_t *p = arg;
    for (int i = 0; i < 20000; i++) {
        pod_ref(p);
        pod_unref(p);
    }
    return NULL;
}

static void test_refcount_threads(void **state)
{
    pod_t *p = parse_pod("{\"metadata\":{\"name\":\"p\"}}");
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, ref_worker, p), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(__atomic_load_n(&p->refs, __ATOMIC_RELAXED), 1);
    pod_unref(p);
    pod_unref(NULL);
}

/* ---- robustness: every field of a rich pod replaced by every JSON type ---- */

static int fuzz_try(json_t *root)
{
    char err[256];
    pod_t *p = pod_from_json(root, err, sizeof err);
    node_t *n = node_from_json(root, err, sizeof err);
    int ok = p != NULL;
    pod_unref(p);
    node_unref(n);
    return ok;
}

static void fuzz_walk(json_t *root, json_t *node, int *tried, int *rejected)
{
    json_t *subs[] = { json_null(),      json_integer(-1), json_integer(INT64_MAX),
                       json_real(1e300), json_string("x"), json_string(""),
                       json_true(),      json_array(),     json_object() };
    const size_t nsubs = sizeof subs / sizeof subs[0];
    if (json_is_object(node)) {
        const char *k;
        json_t *v;
        json_object_foreach (node, k, v) {
            json_t *orig = json_incref(v);
            for (size_t i = 0; i < nsubs; i++) {
                json_object_set(node, k, subs[i]);
                (*tried)++;
                *rejected += !fuzz_try(root);
            }
            json_object_set(node, k, orig);
            fuzz_walk(root, orig, tried, rejected);
            json_decref(orig);
        }
    } else if (json_is_array(node)) {
        for (size_t a = 0; a < json_array_size(node); a++) {
            json_t *orig = json_incref(json_array_get(node, a));
            for (size_t i = 0; i < nsubs; i++) {
                json_array_set(node, a, subs[i]);
                (*tried)++;
                *rejected += !fuzz_try(root);
            }
            json_array_set(node, a, orig);
            fuzz_walk(root, orig, tried, rejected);
            json_decref(orig);
        }
    }
    for (size_t i = 0; i < nsubs; i++)
        json_decref(subs[i]);
}

static void test_fuzz_shapes(void **state)
{
    json_t *pod =
        J("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"p\",\"labels\":{\"a\":\"b\"},"
          "  \"annotations\":{\"resource.aibee.cn/pool\":\"x\"},\"creationTimestamp\":\"2026-01-02T03:04:05Z\"},"
          "\"spec\":{\"priority\":5,\"nodeSelector\":{\"d\":\"s\"},"
          "  \"affinity\":{\"nodeAffinity\":{"
          "    \"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
          "      {\"matchExpressions\":[{\"key\":\"z\",\"operator\":\"In\",\"values\":[\"a\"]}],"
          "       \"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n\"]}]}]},"
          "    \"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":3,\"preference\":"
          "      {\"matchExpressions\":[{\"key\":\"c\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}}]}},"
          "  \"tolerations\":[{\"key\":\"g\",\"operator\":\"Equal\",\"value\":\"v\",\"effect\":\"NoSchedule\"}],"
          "  \"containers\":[{\"ports\":[{\"hostPort\":80,\"protocol\":\"TCP\",\"hostIP\":\"1.2.3.4\"}],"
          "    \"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"1\"}}}],"
          "  \"initContainers\":[{\"resources\":{\"requests\":{\"cpu\":\"2\"}}}],"
          "  \"overhead\":{\"cpu\":\"100m\"},\"schedulingGates\":[{\"name\":\"g\"}],"
          "  \"resourceClaims\":[{\"name\":\"c\",\"resourceClaimName\":\"rc\"}]},"
          "\"status\":{\"phase\":\"Running\",\"startTime\":\"2026-01-02T03:04:05Z\","
          "  \"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"r\"}],"
          "  \"capacity\":{\"cpu\":\"4\"},\"allocatable\":{\"cpu\":\"3\"}}}");
    int tried = 0, rejected = 0;
    assert_true(fuzz_try(pod));
    fuzz_walk(pod, pod, &tried, &rejected);
    assert_true(fuzz_try(pod)); /* walk restored the original */
    assert_true(tried > 500);
    assert_true(rejected > 100); /* wrong types are reported, not ignored */
    assert_true(rejected < tried);
    json_decref(pod);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_res_from_json),
        cmocka_unit_test(test_res_from_json_bad),
        cmocka_unit_test(test_res_arith),
        cmocka_unit_test(test_node_parse),
        cmocka_unit_test(test_node_bad),
        cmocka_unit_test(test_pod_minimal),
        cmocka_unit_test(test_pod_full),
        cmocka_unit_test(test_pod_init_and_overhead),
        cmocka_unit_test(test_pod_phases_and_status),
        cmocka_unit_test(test_pod_bad),
        cmocka_unit_test(test_pod_gates_and_claims),
        cmocka_unit_test(test_tolerations),
        cmocka_unit_test(test_refcount_threads),
        cmocka_unit_test(test_fuzz_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
