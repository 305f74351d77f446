/* test_pod_resources.c -- what a pod occupies (api/podres.h) as kube-scheduler
 * 1.33-1.35 counts it: native sidecars, pod-level requests, in-place resize;
 * then NodeResourcesFit and the cache with such pods. Every expected value
 * is worked out by hand from kube's formula in the comment above it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api/types.h"
#include "cache/cache.h"
#include "framework/framework.h"
#include "framework/nodeinfo.h"
#include "framework/plugins/plugins.h"
#include "scheduler/capabilities.h"

#include "fixtures.h"

#define MI (1024LL * 1024)
#define GI (1024LL * MI)

/* ---- pods shaped as a 1.33-1.35 API server serves them ----------------------- */

#define CTR_BODY(name)                                                                                                 \
    "'name':'" name "','image':'registry.k8s.io/pause:3.10','imagePullPolicy':'IfNotPresent',"                         \
    "'terminationMessagePath':'/dev/termination-log','terminationMessagePolicy':'File'"
/* An app container (or a regular init container) requesting req. */
#define CTR(name, req) "{" CTR_BODY(name) ",'resources':{'requests':{" req "}}}"
/* A native sidecar: an init container with restartPolicy Always. */
#define SIDECAR(name, req) "{" CTR_BODY(name) ",'restartPolicy':'Always','resources':{'requests':{" req "}}}"
/* A running container's status as the kubelet reports it since 1.33. */
#define CSTATUS(name, alloc, actual)                                                                                   \
    "{'name':'" name "','image':'registry.k8s.io/pause:3.10','imageID':'registry.k8s.io/pause@sha256:ee',"             \
    "'containerID':'containerd://0a','ready':true,'restartCount':0,'started':true,"                                    \
    "'state':{'running':{'startedAt':'2026-01-01T00:00:05Z'}},'allocatedResources':{" alloc "},"                       \
    "'resources':{'requests':{" actual "}}}"
#define COND(type, reason)                                                                                             \
    "{'type':'" type "','status':'True','lastProbeTime':null,"                                                         \
    "'lastTransitionTime':'2026-01-01T00:01:00Z'" reason "}"

/* spec_tail: the rest of pod.spec (containers and the like); status: the
 * body of pod.status, or NULL for a pending pod. */
static const char *pod_json(char *buf, size_t n, const char *node, const char *spec_tail, const char *status)
{
    snprintf(buf, n,
             "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'web','namespace':'default',"
             "'uid':'0b1c2d3e-0000-4000-8000-000000000001','resourceVersion':'4711',"
             "'creationTimestamp':'2026-01-01T00:00:00Z'},"
             "'spec':{'schedulerName':'default-scheduler','restartPolicy':'Always','dnsPolicy':'ClusterFirst',"
             "'terminationGracePeriodSeconds':30,'enableServiceLinks':true,'priority':0,"
             "'preemptionPolicy':'PreemptLowerPriority','nodeName':'%s',%s},"
             "'status':{%s}}",
             node, spec_tail, status ? status : "'phase':'Pending','qosClass':'Burstable'");
    return buf;
}

static pod_t *pod_of(const char *spec_tail, const char *status)
{
    char buf[8192];
    return fx_pod(pod_json(buf, sizeof buf, status ? "n1" : "", spec_tail, status));
}

/* The parser's error for the pod, "" when it is accepted. */
static const char *pod_error(const char *spec_tail, const char *status, char *err, size_t n)
{
    char buf[8192];
    err[0] = '\0';
    json_t *j = parse_sq(pod_json(buf, sizeof buf, status ? "n1" : "", spec_tail, status));
    pod_t *p = pod_from_json(j, err, n);
    json_decref(j);
    pod_unref(p);
    return err;
}

#define RUNNING(conds, cstatuses)                                                                                      \
    "'phase':'Running','qosClass':'Burstable','startTime':'2026-01-01T00:00:01Z',"                                     \
    "'conditions':[" COND("Ready", "") conds "],'containerStatuses':[" cstatuses "]"

/* One pod (status NULL: pending) and its expected requests and non-zero
 * cpu/memory. */
typedef struct want {
    const char *spec, *status;
    int64_t cpu, mem, nz_cpu, nz_mem;
} want_t;

static void check_all(const want_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        pod_t *p = pod_of(w[i].spec, w[i].status);
        if (p->requests.milli_cpu != w[i].cpu || p->requests.memory != w[i].mem || p->nonzero_cpu != w[i].nz_cpu ||
            p->nonzero_mem != w[i].nz_mem || p->requests.pods != 1)
            fail_msg("case %zu: cpu %lld mem %lld nonzero %lld/%lld, want %lld %lld %lld/%lld", i,
                     (long long)p->requests.milli_cpu, (long long)p->requests.memory, (long long)p->nonzero_cpu,
                     (long long)p->nonzero_mem, (long long)w[i].cpu, (long long)w[i].mem, (long long)w[i].nz_cpu,
                     (long long)w[i].nz_mem);
        pod_unref(p);
    }
}

/* ---- native sidecars (KEP-753) ----------------------------------------------- */

static void test_sidecars(void **state)
{
    (void)state;
    static const want_t w[] = {
        /* app + sidecars: cpu 1 + 0.5 = 1.5, memory 1Gi + 256Mi = 1280Mi.
         * init peaks: proxy = 0.5 / 256Mi; migrate = its own 2 / 512Mi plus
         * the sidecar started before it, 2.5 / 768Mi.
         * pod: cpu max(1.5, 2.5) = 2.5; memory max(1280Mi, 768Mi) = 1280Mi
         * (v1.20's max(1, 0.5, 2) would say 2 cpu and 1Gi). Every container
         * names cpu and memory: the non-zero values are the same. */
        { "'initContainers':[" SIDECAR("proxy", "'cpu':'500m','memory':'256Mi'") "," CTR(
              "migrate", "'cpu':'2','memory':'512Mi'") "],"
                                                       "'containers':[" CTR("app", "'cpu':'1','memory':'1Gi'") "]",
          NULL, 2500, 1280 * MI, 2500, 1280 * MI },
        /* Two sidecars, then a regular init container.
         * cpu: sum = app 1000 + a 200 + b 300 = 1500; init peaks: a 200,
         * b 200+300 = 500, setup 1200 + 500 = 1700; pod max(1500, 1700) = 1700m.
         * memory: sum = 0 + 100Mi + 0 = 100Mi; peaks a 100Mi, b 100Mi,
         * setup 0 + 100Mi; pod 100Mi.
         * non-zero memory: 200Mi for each container without memory (app, b,
         * setup). sum = 200 + 100 + 200 = 500Mi; peaks a 100, b 100+200 = 300,
         * setup 200 + 300 = 500; pod max(500, 500) = 500Mi (v1.20: 200Mi). */
        { "'initContainers':[" SIDECAR("a", "'cpu':'200m','memory':'100Mi'") "," SIDECAR("b", "'cpu':'300m'") "," CTR(
              "setup", "'cpu':'1200m'") "],'containers':[" CTR("app", "'cpu':'1'") "]",
          NULL, 1700, 100 * MI, 1700, 500 * MI },
        /* A sidecar after a big regular init container: fetch runs before
         * the sidecar starts, so its peak is 4 cpu / 1Gi alone.
         * sum = app + log = 3 cpu / 2Gi; log's peak 1 cpu / 1Gi.
         * pod: cpu max(3, 4, 1) = 4 (not 5: the sidecar is not running yet);
         * memory max(2Gi, 1Gi, 1Gi) = 2Gi (v1.20: 1Gi). */
        { "'initContainers':[" CTR("fetch", "'cpu':'4','memory':'1Gi'") "," SIDECAR(
              "log", "'cpu':'1','memory':'1Gi'") "],'containers':[" CTR("app", "'cpu':'2','memory':'1Gi'") "]",
          NULL, 4000, 2 * GI, 4000, 2 * GI },
    };
    check_all(w, sizeof w / sizeof w[0]);
}

/* kube counts the host ports of sidecars (kubernetes#132040, 1.33+), not
 * those of regular init containers, which have exited by then. */
static void test_sidecar_host_ports(void **state)
{
    (void)state;
    pod_t *p =
        pod_of("'initContainers':[{" CTR_BODY(
                   "init") ",'ports':[{'containerPort':80,'hostPort':8080,"
                           "'protocol':'TCP'}]},{" CTR_BODY(
                               "proxy") ",'restartPolicy':'Always',"
                                        "'ports':[{'containerPort':15001,'hostPort':15001,'protocol':'TCP'}]}],"
                                        "'containers':[{" CTR_BODY("app") ",'ports':[{'containerPort':80,'hostPort':80,"
                                                                          "'protocol':'TCP'}]}]",
               NULL);
    assert_int_equal(p->nports, 2);
    assert_int_equal(p->ports[0].port, 80);
    assert_int_equal(p->ports[1].port, 15001);
    pod_unref(p);
}

/* ---- pod-level resources (KEP-2837) -------------------------------------------- */

static void test_pod_level_requests(void **state)
{
    (void)state;
    static const want_t w[] = {
        /* cpu: the pod-level 2 replaces the containers' 800m, plus overhead
         * 100m = 2100m. memory: no pod-level value, containers 1Gi + 512Mi,
         * plus 64Mi = 1600Mi. Both names are in the pod's requests, so no
         * non-zero default applies. */
        { "'resources':{'requests':{'cpu':'2'},'limits':{'cpu':'4'}},'overhead':{'cpu':'100m','memory':'64Mi'},"
          "'containers':[" CTR("a", "'cpu':'500m','memory':'1Gi'") "," CTR("b", "'cpu':'300m','memory':'512Mi'") "]",
          NULL, 2100, 1600 * MI, 2100, 1600 * MI },
        /* requests: cpu 1 from the pod, memory 0 (named nowhere).
         * non-zero (getNonMissingContainerRequests): only memory is missing
         * from the pod's requests, so each container counts 200Mi: 400Mi;
         * cpu stays the pod-level 1000m (v1.20 would say 2 x 100m). */
        { "'resources':{'requests':{'cpu':'1'}},'containers':[" CTR("a", "") "," CTR("b", "") "]", NULL, 1000, 0, 1000,
          400 * MI },
        /* memory is named by container a, so it is not missing from the
         * pod's requests and b gets no 200Mi default: non-zero memory 1Gi. */
        { "'resources':{'requests':{'cpu':'1'}},'containers':[" CTR("a", "'memory':'1Gi'") "," CTR("b", "") "]", NULL,
          1000, GI, 1000, GI },
    };
    check_all(w, sizeof w / sizeof w[0]);
}

static void test_pod_level_memory_and_hugepages(void **state)
{
    (void)state;
    pod_t *p = pod_of("'resources':{'requests':{'memory':'3Gi','hugepages-2Mi':'1Gi'},"
                      "'limits':{'memory':'3Gi','hugepages-2Mi':'1Gi'}},"
                      "'containers':[" CTR("a", "'cpu':'250m','memory':'1Gi','hugepages-2Mi':'512Mi'") "," CTR(
                          "b", "'cpu':'250m'") "]",
                      NULL);
    /* cpu from the containers: 500m. memory and hugepages-2Mi from the pod:
     * 3Gi and 1Gi (the containers' 1Gi and 512Mi are replaced, not added). */
    assert_int_equal(p->requests.milli_cpu, 500);
    assert_int_equal(p->requests.memory, 3 * GI);
    assert_int_equal(res_get_scalar(&p->requests, "hugepages-2Mi"), GI);
    assert_int_equal(p->nonzero_cpu, 500);
    assert_int_equal(p->nonzero_mem, 3 * GI);
    pod_unref(p);
}

/* ---- in-place resize (KEP-1287) --------------------------------------------- */

static void test_in_place_resize(void **state)
{
    (void)state;
    static const want_t w[] = {
        /* Scaled down from 2 cpu to 1, not applied yet:
         * max(spec 1, actual 2, allocated 2) = 2 cpu; memory 1Gi everywhere. */
        { "'containers':[" CTR("app", "'cpu':'1','memory':'1Gi'") "]",
          RUNNING("," COND("PodResizeInProgress", ""),
                  CSTATUS("app", "'cpu':'2','memory':'1Gi'", "'cpu':'2','memory':'1Gi'")),
          2000, GI, 2000, GI },
        /* Scaled up from 1 cpu to 3, deferred (no room on the node yet):
         * the spec still counts, max(3, 1, 1) = 3 cpu. */
        { "'containers':[" CTR("app", "'cpu':'3','memory':'1Gi'") "]",
          RUNNING("," COND("PodResizePending", ",'reason':'Deferred','message':'Node does not have enough resource'"),
                  CSTATUS("app", "'cpu':'1','memory':'1Gi'", "'cpu':'1','memory':'1Gi'")),
          3000, GI, 3000, GI },
        /* Infeasible: the kubelet will never grant the spec, so kube leaves
         * it out: max(actual 1, allocated 1) = 1 cpu. */
        { "'containers':[" CTR("app", "'cpu':'64','memory':'1Gi'") "]",
          RUNNING("," COND("PodResizePending", ",'reason':'Infeasible'"),
                  CSTATUS("app", "'cpu':'1','memory':'1Gi'", "'cpu':'1','memory':'1Gi'")),
          1000, GI, 1000, GI },
        /* proxy (a sidecar) counts max(500m, 2, 2) = 2; init (a regular init
         * container) keeps its spec 500m: kube reads status for sidecars only
         * (its status of 5 cpu would make the pod 5).
         * cpu: sum = 1 + 2 = 3; peaks init 500m, proxy 2; pod 3.
         * non-zero memory: nobody names memory, 200Mi each: sum app + proxy
         * = 400Mi; peaks init 200Mi, proxy 200Mi; pod 400Mi. */
        { "'initContainers':[" CTR("init", "'cpu':'500m'") "," SIDECAR(
              "proxy", "'cpu':'500m'") "],"
                                       "'containers':[" CTR("app", "'cpu':'1'") "]",
          "'phase':'Running','conditions':[],'containerStatuses':[" CSTATUS(
              "app", "'cpu':'1'", "'cpu':'1'") "],"
                                               "'initContainerStatuses':[" CSTATUS(
                                                   "init", "'cpu':'5'", "'cpu':'5'") "," CSTATUS("proxy", "'cpu':'2'",
                                                                                                 "'cpu':'2'") "]",
          3000, 0, 3000, 400 * MI },
        /* kube 1.33-1.35 reads a container's status only when it has
         * resources: allocatedResources alone is not looked at. */
        { "'containers':[" CTR("app", "'cpu':'1'") "]",
          "'phase':'Running','containerStatuses':[{'name':'app','ready':true,'restartCount':0,"
          "'allocatedResources':{'cpu':'4'}}]",
          1000, 0, 1000, 200 * MI },
    };
    check_all(w, sizeof w / sizeof w[0]);
}

/* ---- v1.20's answer for pods without the new fields --------------------------- */

static void test_plain_pod_keeps_v120_rule(void **state)
{
    (void)state;
    /* cpu max(1 + 0, 1.5) + 50m = 1550m; memory max(0 + 1Gi, 2Gi) = 2Gi.
     * non-zero: a 1000m/200Mi, b 100m/1Gi: cpu max(1100, 1500) + 50 =
     * 1550m; memory max(1224Mi, 2Gi) = 2Gi. A running pod whose status
     * matches its spec counts the same. */
    static const want_t w[] = {
        { "'initContainers':[" CTR("init",
                                   "'cpu':'1500m','memory':'2Gi'") "],'overhead':{'cpu':'50m'},"
                                                                   "'containers':[" CTR("a", "'cpu':'1'") "," CTR(
                                                                       "b", "'memory':'1Gi'") "]",
          NULL, 1550, 2 * GI, 1550, 2 * GI },
        { "'initContainers':[" CTR("init",
                                   "'cpu':'1500m','memory':'2Gi'") "],'overhead':{'cpu':'50m'},"
                                                                   "'containers':[" CTR("a", "'cpu':'1'") "," CTR(
                                                                       "b", "'memory':'1Gi'") "]",
          RUNNING("", CSTATUS("a", "'cpu':'1'", "'cpu':'1'") "," CSTATUS("b", "'memory':'1Gi'", "'memory':'1Gi'")),
          1550, 2 * GI, 1550, 2 * GI },
    };
    check_all(w, sizeof w / sizeof w[0]);
}

/* ---- untrusted input ------------------------------------------------------------ */

static void test_bad_fields(void **state)
{
    (void)state;
    char err[256];
    static const struct {
        const char *spec, *status, *want;
    } c[] = {
        { "'resources':'lots','containers':[]", NULL, "spec.resources: not an object" },
        { "'resources':{'requests':['cpu']},'containers':[]", NULL, "spec.resources.requests: not an object" },
        { "'resources':{'requests':{'cpu':'two'}},'containers':[]", NULL, "spec.resources.requests: resource cpu" },
        { "'initContainers':[{'name':'i','restartPolicy':1}]", NULL, "spec.initContainers[0].restartPolicy: not a" },
        { "'initContainers':[" SIDECAR("s", "'memory':'1Qi'") "]", NULL,
          "spec.initContainers[0].resources.requests: resource memory" },
        { "'containers':[" CTR("app", "'cpu':'1'") "]", "'containerStatuses':[{'name':'app','resources':7}]",
          "status of spec.containers[0].resources: not an object" },
        { "'containers':[" CTR("app", "'cpu':'1'") "]",
          "'containerStatuses':[{'name':'app','resources':{},'allocatedResources':{'cpu':'-1'}}]",
          "status of spec.containers[0].allocatedResources: resource cpu: negative" },
        { "'containers':[" CTR("app", "'cpu':'1'") "]", "'containerStatuses':['app']",
          "status.containerStatuses[0]: not an object" },
        { "'initContainers':[" SIDECAR("s", "'cpu':'1'") "]", "'initContainerStatuses':[{'name':3}]",
          "status.initContainerStatuses[0].name: not a string" },
        { "'containers':[" CTR("app", "'cpu':'1'") "]", "'conditions':{}", "status.conditions: not an array" },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        const char *got = pod_error(c[i].spec, c[i].status, err, sizeof err);
        if (strncmp(got, c[i].want, strlen(c[i].want)) != 0)
            fail_msg("case %zu: error '%s', want prefix '%s'", i, got, c[i].want);
    }
}

/* ---- NodeResourcesFit and the cache ----------------------------------------------- */

static int run_fit(const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    fw_plugin_t pl;
    cycle_state_t cs;
    plugin_node_resources_fit(&pl);
    memset(&cs, 0, sizeof(cs));
    cs.pod = pod;
    fw_status_reset(st);
    if (pl.pre_filter)
        assert_int_equal(pl.pre_filter(&pl, &cs, pod, st), FW_SUCCESS);
    cs.prefiltered = 1;
    return pl.filter(&pl, &cs, pod, ni, st);
}

static void test_fit_refuses_sidecar_overflow(void **state)
{
    (void)state;
    fw_status_t st;
    node_info_t *ni = fx_node_info("{'apiVersion':'v1','kind':'Node','metadata':{'name':'n1','uid':'n-1'},"
                                   "'status':{'capacity':{'cpu':'2','memory':'8Gi','pods':'110'},"
                                   "'allocatable':{'cpu':'2','memory':'8Gi','pods':'110'}}}");
    /* As a sidecar: app 1500m + proxy 1 = 2500m > 2 cpu. */
    pod_t *with =
        pod_of("'initContainers':[" SIDECAR("proxy", "'cpu':'1'") "],"
                                                                  "'containers':[" CTR("app", "'cpu':'1500m'") "]",
               NULL);
    /* The same container as a regular init container: max(1500m, 1) fits. */
    pod_t *without =
        pod_of("'initContainers':[" CTR("proxy", "'cpu':'1'") "],"
                                                              "'containers':[" CTR("app", "'cpu':'1500m'") "]",
               NULL);
    assert_int_equal(run_fit(with, ni, &st), FW_UNSCHEDULABLE);
    assert_int_equal(st.nreasons, 1);
    assert_string_equal(st.reasons[0], "Insufficient cpu");
    assert_int_equal(run_fit(without, ni, &st), FW_SUCCESS);
    pod_unref(with);
    pod_unref(without);
    node_info_free(ni);
}

static int64_t cache_cpu(cache_t *c)
{
    cache_rdlock(c);
    node_info_t *ni = cache_node_locked(c, "n1");
    int64_t v = ni ? ni->requested.milli_cpu : -1;
    cache_unlock(c);
    return v;
}

/* A MODIFIED event carrying a new resize status moves the node's usage. */
static void test_cache_follows_resize(void **state)
{
    (void)state;
    cache_t *c = cache_new(NULL, NULL);
    const char *spec1 = "'containers':[" CTR("app", "'cpu':'1'") "]";
    const char *spec2 = "'containers':[" CTR("app", "'cpu':'2'") "]";
    static const struct {
        int spec2;
        const char *status;
        int64_t want;
    } steps[] = {
        /* running at 1 cpu */
        { 0, RUNNING("", CSTATUS("app", "'cpu':'1'", "'cpu':'1'")), 1000 },
        /* resized up to 2, not yet allocated: spec counts, max(2, 1, 1) */
        { 1, RUNNING("", CSTATUS("app", "'cpu':'1'", "'cpu':'1'")), 2000 },
        /* resized back down to 1 while 2 was allocated: max(1, 1, 2) */
        { 0, RUNNING("," COND("PodResizeInProgress", ""), CSTATUS("app", "'cpu':'2'", "'cpu':'1'")), 2000 },
        /* the kubelet finished: 1 everywhere */
        { 0, RUNNING("", CSTATUS("app", "'cpu':'1'", "'cpu':'1'")), 1000 },
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        pod_t *p = pod_of(steps[i].spec2 ? spec2 : spec1, steps[i].status);
        cache_pod_state_t now;
        cache_upsert_pod(c, p, &now);
        assert_int_equal(now, CPOD_BOUND);
        if (cache_cpu(c) != steps[i].want)
            fail_msg("step %zu: node requests %lld m cpu, want %lld", i, (long long)cache_cpu(c),
                     (long long)steps[i].want);
        pod_unref(p);
    }
    cache_free(c);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sidecars),
        cmocka_unit_test(test_sidecar_host_ports),
        cmocka_unit_test(test_pod_level_requests),
        cmocka_unit_test(test_pod_level_memory_and_hugepages),
        cmocka_unit_test(test_in_place_resize),
        cmocka_unit_test(test_plain_pod_keeps_v120_rule),
        cmocka_unit_test(test_bad_fields),
        cmocka_unit_test(test_fit_refuses_sidecar_overflow),
        cmocka_unit_test(test_cache_follows_resize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
