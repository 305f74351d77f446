/* test_dra.c -- DRA allocation (issue 36) through the whole scheduler in a
 * sandbox: DeviceClasses, ResourceSlices and ResourceClaims fed as the
 * informers would, the claim writes PreBind makes read back from the
 * sandbox's copy. Each case's devices are worked out by hand from the
 * allocator's rule (first fit in the slices' order, nodes by score). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "dra/store.h"
#include "sandbox/sandbox.h"
#include "scheduler/capabilities.h"
#include "scheduler/scheduler.h"
#include "util/log.h"
#include "util/util.h"

#define T0 1800000000000LL

/* JSON from text with ' for " (test objects stay readable). */
static json_t *J(const char *text)
{
    char *t = util_strdup(text);
    for (char *c = t; *c; c++)
        if (*c == '\'')
            *c = '"';
    json_error_t e;
    json_t *o = json_loads(t, 0, &e);
    if (!o)
        fail_msg("bad test JSON at %d: %s\n%s", e.position, e.text, t);
    free(t);
    return o;
}

typedef struct log {
    sbuf_t text;
    int binds, evicts, unsch;
} log_t;

static void on_action(void *ud, const sb_action_t *a)
{
    log_t *l = ud;
    static const char *const names[] = { "", "BIND", "EVICT", "UNSCHEDULABLE", "NOMINATE", "CREATE", "DELETE" };
    sbuf_printf(&l->text, "%s %s/%s", names[a->kind], a->ns, a->name);
    if (a->node)
        sbuf_printf(&l->text, " node=%s", a->node);
    if (a->kind == SB_UNSCHEDULABLE)
        sbuf_printf(&l->text, " %s: %s", a->reason, a->message);
    sbuf_puts(&l->text, "\n");
    l->binds += a->kind == SB_BIND;
    l->evicts += a->kind == SB_EVICT;
    l->unsch += a->kind == SB_UNSCHEDULABLE;
}

static const char *logged(log_t *l)
{
    return l->text.data ? l->text.data : "";
}

static sandbox_t *sb_new(log_t *l)
{
    memset(l, 0, sizeof(*l));
    char err[256] = "";
    sandbox_opts_t o = { NULL, 7, T0, on_action, l };
    sandbox_t *sb = sandbox_new(&o, err, sizeof err);
    if (!sb)
        fail_msg("sandbox_new: %s", err);
    return sb;
}

static void apply(sandbox_t *sb, const char *type, json_t *obj)
{
    char err[256] = "";
    if (sandbox_apply(sb, type, obj, err, sizeof err) != 0)
        fail_msg("apply: %s", err);
    json_decref(obj);
}

static void add(sandbox_t *sb, json_t *obj)
{
    apply(sb, "ADDED", obj);
}

static void sb_done(sandbox_t *sb, log_t *l)
{
    sandbox_free(sb);
    sbuf_free(&l->text);
}

static json_t *node(const char *name)
{
    char b[512];
    snprintf(
        b, sizeof b,
        "{'apiVersion':'v1','kind':'Node','metadata':{'name':'%s','labels':{'kubernetes.io/hostname':'%s'}},"
        "'status':{'capacity':{'cpu':'16','memory':'64Gi','pods':'110'},"
        "'allocatable':{'cpu':'16','memory':'64Gi','pods':'110'},'conditions':[{'type':'Ready','status':'True'}]}}",
        name, name);
    return J(b);
}

/* The class every case uses: its own selector keeps the driver's devices. */
static json_t *gpu_class(void)
{
    return J("{'apiVersion':'resource.k8s.io/v1','kind':'DeviceClass','metadata':{'name':'gpu.example.com'},"
             "'spec':{'selectors':[{'cel':{'expression':'device.driver == \\'gpu.example.com\\''}}],"
             "'config':[{'opaque':{'driver':'gpu.example.com','parameters':{'sharing':'none'}}}]}}");
}

/* A node-local slice of n GPUs gpu-0.. on node (pool node), model and numa
 * alternating as given (models: one letter per device, 'A' A100 else H100). */
static json_t *slice(const char *node_name, const char *models)
{
    json_t *s = J("{'apiVersion':'resource.k8s.io/v1','kind':'ResourceSlice','metadata':{},"
                  "'spec':{'driver':'gpu.example.com','pool':{'generation':1,'resourceSliceCount':1},'devices':[]}}");
    char name[64];
    snprintf(name, sizeof name, "%s-gpus", node_name);
    json_object_set_new(json_object_get(s, "metadata"), "name", json_string(name));
    json_t *spec = json_object_get(s, "spec");
    json_object_set_new(spec, "nodeName", json_string(node_name));
    json_object_set_new(json_object_get(spec, "pool"), "name", json_string(node_name));
    for (int i = 0; models[i]; i++) {
        char dn[16];
        snprintf(dn, sizeof dn, "gpu-%d", i);
        json_array_append_new(json_object_get(spec, "devices"),
                              json_pack("{s:s, s:{s:{s:s}, s:{s:i}, s:{s:s}}, s:{s:{s:s}}}", "name", dn, "attributes",
                                        "model", "string", models[i] == 'A' ? "A100" : "H100", "numa", "int", i / 2,
                                        "driverVersion", "version", "1.2.3", "capacity", "memory", "value",
                                        models[i] == 'A' ? "40Gi" : "80Gi"));
    }
    return s;
}

/* Claim ns/name of one request "gpus": count GPUs of the class, with
 * selector sel (NULL: none). */
static json_t *claim(const char *name, int count, const char *sel)
{
    json_t *c = J("{'apiVersion':'resource.k8s.io/v1','kind':'ResourceClaim','metadata':{'namespace':'ns'},"
                  "'spec':{'devices':{'requests':[{'name':'gpus','exactly':{'deviceClassName':'gpu.example.com'}}]}}}");
    json_object_set_new(json_object_get(c, "metadata"), "name", json_string(name));
    json_t *ex = json_object_get(
        json_array_get(json_object_get(json_object_get(json_object_get(c, "spec"), "devices"), "requests"), 0),
        "exactly");
    json_object_set_new(ex, "count", json_integer(count));
    if (sel)
        json_object_set_new(ex, "selectors", json_pack("[{s:{s:s}}]", "cel", "expression", sel));
    return c;
}

/* Pod ns/name (priority prio) using claims c (NULL-ended); node: bound. */
static json_t *pod(const char *name, int prio, const char *node_name, const char *const *claims)
{
    json_t *p = J("{'apiVersion':'v1','kind':'Pod','metadata':{'namespace':'ns','labels':{},'annotations':{}},"
                  "'spec':{'schedulerName':'ai-scheduler','containers':[{'name':'c','image':'x',"
                  "'resources':{'requests':{'cpu':'1','memory':'1Gi'}}}],'resourceClaims':[]},"
                  "'status':{'phase':'Pending'}}");
    json_object_set_new(json_object_get(p, "metadata"), "name", json_string(name));
    json_t *spec = json_object_get(p, "spec");
    json_object_set_new(spec, "priority", json_integer(prio));
    for (int i = 0; claims && claims[i]; i++) {
        char n[16];
        snprintf(n, sizeof n, "c%d", i);
        json_array_append_new(json_object_get(spec, "resourceClaims"),
                              json_pack("{s:s, s:s}", "name", n, "resourceClaimName", claims[i]));
    }
    if (node_name) {
        json_object_set_new(spec, "nodeName", json_string(node_name));
        json_object_set_new(json_object_get(p, "status"), "phase", json_string("Running"));
    }
    return p;
}

static const char *node_of(sandbox_t *sb, const char *name)
{
    json_t *p = sandbox_get(sb, "Pod", "ns", name);
    return p ? json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName")) : NULL;
}

static const char *uid_of(sandbox_t *sb, const char *name)
{
    json_t *p = sandbox_get(sb, "Pod", "ns", name);
    return p ? json_string_value(json_object_get(json_object_get(p, "metadata"), "uid")) : NULL;
}

static json_t *status_of(sandbox_t *sb, const char *claim_name)
{
    json_t *c = sandbox_get(sb, "ResourceClaim", "ns", claim_name);
    assert_non_null(c);
    return json_object_get(c, "status");
}

/* The claim's allocated devices "pool/device,..." ("" when none). */
static char *devices_of(sandbox_t *sb, const char *claim_name)
{
    sbuf_t b = { 0 };
    sbuf_puts(&b, "");
    json_t *res = json_object_get(json_object_get(json_object_get(status_of(sb, claim_name), "allocation"), "devices"),
                                  "results"),
           *r;
    size_t i;
    json_array_foreach (res, i, r)
        sbuf_printf(&b, "%s%s/%s", i ? "," : "", json_string_value(json_object_get(r, "pool")),
                    json_string_value(json_object_get(r, "device")));
    return b.data;
}

static void assert_devices(sandbox_t *sb, const char *claim_name, const char *want)
{
    char *got = devices_of(sb, claim_name);
    if (strcmp(got, want) != 0)
        fail_msg("claim %s: devices %s, want %s", claim_name, got, want);
    free(got);
}

/* The claim's reservedFor uids, "a,b". */
static char *reserved_of(sandbox_t *sb, const char *claim_name)
{
    sbuf_t b = { 0 };
    sbuf_puts(&b, "");
    json_t *rf = json_object_get(status_of(sb, claim_name), "reservedFor"), *e;
    size_t i;
    json_array_foreach (rf, i, e)
        sbuf_printf(&b, "%s%s", i ? "," : "", json_string_value(json_object_get(e, "uid")));
    return b.data;
}

static sandbox_t *cluster(log_t *l, const char *n1_models, const char *n2_models)
{
    sandbox_t *sb = sb_new(l);
    add(sb, gpu_class());
    add(sb, node("n1"));
    add(sb, slice("n1", n1_models));
    if (n2_models) {
        add(sb, node("n2"));
        add(sb, slice("n2", n2_models));
    }
    return sb;
}

/* ---- cases ----------------------------------------------------------------- */

/* One claim of one A100 (the claim's CEL selector): n1 has an H100 then an
 * A100, so gpu-1 is chosen; PreBind wrote the finalizer, the allocation
 * with the class's config and n1's node selector, and reservedFor. */
static void test_allocates_and_writes(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "HA", NULL);
    add(sb, claim("c1", 1, "device.attributes['gpu.example.com'].model == 'A100'"));
    static const char *const cl[] = { "c1", NULL };
    add(sb, pod("p1", 0, NULL, cl));
    sandbox_run(sb);
    assert_string_equal(logged(&l), "BIND ns/p1 node=n1\n");
    assert_devices(sb, "c1", "n1/gpu-1");
    json_t *c = sandbox_get(sb, "ResourceClaim", "ns", "c1");
    json_t *fin = json_object_get(json_object_get(c, "metadata"), "finalizers");
    assert_int_equal(json_array_size(fin), 1);
    assert_string_equal(json_string_value(json_array_get(fin, 0)), "resource.kubernetes.io/delete-protection");
    json_t *alloc = json_object_get(status_of(sb, "c1"), "allocation");
    json_t *want =
        J("{'devices':{'results':[{'request':'gpus','driver':'gpu.example.com','pool':'n1','device':'gpu-1'}],"
          "'config':[{'opaque':{'driver':'gpu.example.com','parameters':{'sharing':'none'}},"
          "'source':'FromClass','requests':['gpus']}]},"
          "'nodeSelector':{'nodeSelectorTerms':[{'matchFields':[{'key':'metadata.name','operator':'In',"
          "'values':['n1']}]}]}}");
    assert_true(json_equal(alloc, want));
    json_decref(want);
    json_t *rf = json_object_get(status_of(sb, "c1"), "reservedFor");
    assert_int_equal(json_array_size(rf), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(rf, 0), "name")), "p1");
    assert_string_equal(json_string_value(json_object_get(json_array_get(rf, 0), "resource")), "pods");
    assert_string_equal(json_string_value(json_object_get(json_array_get(rf, 0), "uid")), uid_of(sb, "p1"));
    sb_done(sb, &l);
}

/* Two claims of 2 GPUs each, two nodes of 2: they cannot share a node, and
 * no device is in two claims. */
static void test_two_claims_cannot_share(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "AA", "AA");
    add(sb, claim("c1", 2, NULL));
    add(sb, claim("c2", 2, NULL));
    static const char *const c1[] = { "c1", NULL }, *const c2[] = { "c2", NULL };
    add(sb, pod("p1", 0, NULL, c1));
    sandbox_run(sb);
    add(sb, pod("p2", 0, NULL, c2));
    sandbox_run(sb);
    assert_int_equal(l.binds, 2);
    assert_string_not_equal(node_of(sb, "p1"), node_of(sb, "p2"));
    char w1[64], w2[64];
    snprintf(w1, sizeof w1, "%s/gpu-0,%s/gpu-1", node_of(sb, "p1"), node_of(sb, "p1"));
    snprintf(w2, sizeof w2, "%s/gpu-0,%s/gpu-1", node_of(sb, "p2"), node_of(sb, "p2"));
    assert_devices(sb, "c1", w1);
    assert_devices(sb, "c2", w2);
    /* A third claim of 1 fits nowhere now. */
    add(sb, claim("c3", 1, NULL));
    static const char *const c3[] = { "c3", NULL };
    add(sb, pod("p3", 0, NULL, c3));
    sandbox_run(sb);
    assert_null(node_of(sb, "p3"));
    assert_devices(sb, "c3", "");
    sb_done(sb, &l);
}

/* Five GPUs on a node of two: pending, and the reason names the claim,
 * the request and what the node has. */
static void test_unsatisfiable_says_why(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "AA", NULL);
    add(sb, claim("big", 5, NULL));
    static const char *const cl[] = { "big", NULL };
    add(sb, pod("p", 0, NULL, cl));
    sandbox_run(sb);
    assert_int_equal(l.binds, 0);
    assert_int_equal(l.unsch, 1);
    assert_non_null(strstr(logged(&l), "ns/big"));
    assert_non_null(strstr(logged(&l), "gpus"));
    assert_devices(sb, "big", "");
    sb_done(sb, &l);
}

/* A selector outside the CEL subset: one event naming the expression and
 * what is not supported; never bound, never allocated. */
static void test_unsupported_cel(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "AA", NULL);
    add(sb, claim("odd", 1, "device.attributes['gpu.example.com'].model.matches('A.*')"));
    static const char *const cl[] = { "odd", NULL };
    add(sb, pod("p", 0, NULL, cl));
    sandbox_run(sb);
    sandbox_advance(sb, T0 + 60000);
    assert_int_equal(l.binds, 0);
    assert_int_equal(l.unsch, 1);
    assert_non_null(strstr(logged(&l), "model.matches('A.*')"));
    assert_non_null(strstr(logged(&l), "not supported"));
    assert_devices(sb, "odd", "");
    sb_done(sb, &l);
}

/* A gang of 4, each member with a claim of one GPU, on 3 GPUs: no member
 * bound and no claim allocated. */
static void test_gang_all_or_nothing(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "AA", "A");
    add(sb, J("{'apiVersion':'scheduling.x-k8s.io/v1alpha1','kind':'PodGroup','metadata':{'name':'g','namespace':'ns'},"
              "'spec':{'minMember':4}}"));
    for (int i = 0; i < 4; i++) {
        char cn[8], pn[8];
        snprintf(cn, sizeof cn, "g%d", i);
        snprintf(pn, sizeof pn, "w%d", i);
        add(sb, claim(cn, 1, NULL));
        const char *cl[] = { cn, NULL };
        json_t *p = pod(pn, 0, NULL, cl);
        json_object_set_new(json_object_get(json_object_get(p, "metadata"), "labels"), "scheduling.x-k8s.io/pod-group",
                            json_string("g"));
        add(sb, p);
    }
    sandbox_run(sb);
    sandbox_advance(sb, T0 + 30000);
    assert_int_equal(l.binds, 0);
    for (int i = 0; i < 4; i++) {
        char cn[8];
        snprintf(cn, sizeof cn, "g%d", i);
        assert_devices(sb, cn, "");
    }
    /* A third GPU on n2: all four go. */
    apply(sb, "MODIFIED", slice("n2", "AA"));
    sandbox_advance(sb, T0 + 90000);
    assert_int_equal(l.binds, 4);
    sb_done(sb, &l);
}

/* n1's only GPU is held by a running priority-0 pod's claim; a
 * priority-100 pod's claim needs it: the low pod is evicted, its claim
 * released (the sandbox plays the resourceclaim controller), the high pod
 * bound with gpu-0. */
static void test_preemption_frees_devices(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "A", NULL);
    add(sb, claim("c-low", 1, NULL));
    static const char *const low[] = { "c-low", NULL }, *const high[] = { "c-high", NULL };
    add(sb, pod("low", 0, NULL, low));
    sandbox_run(sb);
    assert_string_equal(node_of(sb, "low"), "n1");
    assert_devices(sb, "c-low", "n1/gpu-0");
    add(sb, claim("c-high", 1, NULL));
    add(sb, pod("high", 100, NULL, high));
    sandbox_run(sb);
    sandbox_advance(sb, T0 + 30000);
    if (getenv("DRA_DEBUG")) {
        json_t *rec = scheduler_explain(sandbox_scheduler(sb), "pod", "ns", "high");
        char *t = json_dumps(rec, JSON_INDENT(1));
        fprintf(stderr, "%s\n", t);
        free(t);
        json_decref(rec);
    }
    assert_int_equal(l.evicts, 1);
    assert_null(sandbox_get(sb, "Pod", "ns", "low"));
    assert_devices(sb, "c-low", "");
    assert_string_equal(node_of(sb, "high"), "n1");
    assert_devices(sb, "c-high", "n1/gpu-0");
    sb_done(sb, &l);
}

/* Composition seed 4: room a preemption made for a pod's claim was taken by
 * another pod's claim before the preemptor came back (a borrower
 * recreated by its controller), and the preemptor evicted again and again.
 * The nominated pod's claim takes the freed device in every other pod's
 * view: a priority-0 pod arriving after the eviction stays pending, the
 * preemptor binds with gpu-0. */
static void test_nominated_claim_keeps_its_device(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "A", NULL);
    add(sb, claim("c-low", 1, NULL));
    static const char *const low[] = { "c-low", NULL }, *const high[] = { "c-high", NULL },
                             *const thief[] = { "c-thief", NULL };
    add(sb, pod("low", 0, NULL, low));
    sandbox_run(sb);
    assert_string_equal(node_of(sb, "low"), "n1");
    add(sb, claim("c-high", 1, NULL));
    add(sb, pod("high", 100, NULL, high));
    sandbox_run(sb);
    assert_int_equal(l.evicts, 1);
    assert_null(sandbox_get(sb, "Pod", "ns", "low"));
    /* The device is free and high waits out its backoff: thief comes now. */
    add(sb, claim("c-thief", 1, NULL));
    add(sb, pod("thief", 0, NULL, thief));
    sandbox_run(sb);
    assert_null(node_of(sb, "thief"));
    sandbox_advance(sb, T0 + 30000);
    assert_string_equal(node_of(sb, "high"), "n1");
    assert_devices(sb, "c-high", "n1/gpu-0");
    assert_null(node_of(sb, "thief"));
    assert_int_equal(l.evicts, 1);
    sb_done(sb, &l);
}

/* A claim allocated on n2 for a running pod is shared: the second pod
 * goes to n2 (not n1, which has free GPUs), both reserved. */
static void test_shared_claim(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "AA", "A");
    add(sb, claim("shared", 1, NULL));
    static const char *const cl[] = { "shared", NULL };
    add(sb, pod("first", 0, NULL, cl));
    sandbox_run(sb);
    const char *n = node_of(sb, "first");
    assert_non_null(n);
    char *want = util_strdup(n);
    add(sb, pod("second", 0, NULL, cl));
    sandbox_run(sb);
    assert_string_equal(node_of(sb, "second"), want);
    char *rf = reserved_of(sb, "shared");
    char both[256];
    snprintf(both, sizeof both, "%s,%s", uid_of(sb, "first"), uid_of(sb, "second"));
    assert_string_equal(rf, both);
    free(rf);
    free(want);
    sb_done(sb, &l);
}

/* A pod whose claim comes from a template waits, saying so, until the
 * status names its claim (the resourceclaim controller's work, played
 * here); a claim not owned by the pod is refused. */
static void test_template_claim_waits(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "A", NULL);
    json_t *p = pod("p", 0, NULL, NULL);
    json_array_append_new(json_object_get(json_object_get(p, "spec"), "resourceClaims"),
                          J("{'name':'gpu','resourceClaimTemplateName':'one-gpu'}"));
    add(sb, json_incref(p));
    sandbox_run(sb);
    assert_int_equal(l.binds, 0);
    assert_non_null(strstr(logged(&l), "waiting for the ResourceClaim of pod claim gpu"));
    /* The controller makes p-gpu-x owned by the pod and says so in its status. */
    json_t *c = claim("p-gpu-x", 1, NULL);
    json_object_set_new(json_object_get(c, "metadata"), "ownerReferences",
                        json_pack("[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion", "v1", "kind", "Pod", "name", "p", "uid",
                                  uid_of(sb, "p"), "controller", 1));
    add(sb, c);
    json_t *cur = json_deep_copy(sandbox_get(sb, "Pod", "ns", "p"));
    json_object_set_new(json_object_get(cur, "status"), "resourceClaimStatuses",
                        J("[{'name':'gpu','resourceClaimName':'p-gpu-x'}]"));
    apply(sb, "MODIFIED", cur);
    sandbox_run(sb);
    assert_string_equal(node_of(sb, "p"), "n1");
    assert_devices(sb, "p-gpu-x", "n1/gpu-0");
    json_decref(p);
    sb_done(sb, &l);
}

/* firstAvailable: two H100s are asked first, one A100 second; n1 has one
 * H100 and one A100, so the second alternative is allocated, named
 * "gpus/small". */
static void test_first_available(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "HA", NULL);
    add(sb,
        J("{'apiVersion':'resource.k8s.io/v1','kind':'ResourceClaim','metadata':{'namespace':'ns','name':'fa'},"
          "'spec':{'devices':{'requests':[{'name':'gpus','firstAvailable':["
          "{'name':'big','deviceClassName':'gpu.example.com','count':2,"
          "'selectors':[{'cel':{'expression':'device.attributes[\\'gpu.example.com\\'].model == \\'H100\\''}}]},"
          "{'name':'small','deviceClassName':'gpu.example.com',"
          "'selectors':[{'cel':{'expression':'device.capacity[\\'gpu.example.com\\'].memory.compareTo(quantity(\\'40Gi\\')) == 0'}}]}"
          "]}]}}}"));
    static const char *const cl[] = { "fa", NULL };
    add(sb, pod("p", 0, NULL, cl));
    sandbox_run(sb);
    assert_string_equal(node_of(sb, "p"), "n1");
    assert_devices(sb, "fa", "n1/gpu-1");
    json_t *r = json_array_get(
        json_object_get(json_object_get(json_object_get(status_of(sb, "fa"), "allocation"), "devices"), "results"), 0);
    assert_string_equal(json_string_value(json_object_get(r, "request")), "gpus/small");
    sb_done(sb, &l);
}

/* allocationMode All takes every device of the class on the node, and
 * matchAttribute keeps two requests' devices on one NUMA node. */
static void test_all_and_match_attribute(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "AAAA", NULL);
    add(sb, J("{'apiVersion':'resource.k8s.io/v1','kind':'ResourceClaim','metadata':{'namespace':'ns','name':'pair'},"
              "'spec':{'devices':{'requests':["
              "{'name':'a','exactly':{'deviceClassName':'gpu.example.com',"
              "'selectors':[{'cel':{'expression':'device.attributes[\\'gpu.example.com\\'].numa == 1 || "
              "device.attributes[\\'gpu.example.com\\'].numa == 0'}}]}},"
              "{'name':'b','exactly':{'deviceClassName':'gpu.example.com',"
              "'selectors':[{'cel':{'expression':'device.attributes[\\'gpu.example.com\\'].numa == 1'}}]}}],"
              "'constraints':[{'matchAttribute':'gpu.example.com/numa'}]}}}"));
    static const char *const cl[] = { "pair", NULL };
    add(sb, pod("p", 0, NULL, cl));
    sandbox_run(sb);
    /* a's first fit gpu-0 (numa 0) leaves b no numa-0 device: a takes gpu-2. */
    assert_devices(sb, "pair", "n1/gpu-2,n1/gpu-3");
    add(sb,
        J("{'apiVersion':'resource.k8s.io/v1','kind':'ResourceClaim','metadata':{'namespace':'ns','name':'rest'},"
          "'spec':{'devices':{'requests':[{'name':'all','exactly':{'deviceClassName':'gpu.example.com',"
          "'allocationMode':'All','selectors':[{'cel':{'expression':'device.attributes[\\'gpu.example.com\\'].numa == 0'}}]}}]}}}"));
    static const char *const c2[] = { "rest", NULL };
    add(sb, pod("q", 0, NULL, c2));
    sandbox_run(sb);
    assert_devices(sb, "rest", "n1/gpu-0,n1/gpu-1");
    sb_done(sb, &l);
}

/* A pool of two slices counts only once both are known. */
static void test_pool_complete_only(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l);
    add(sb, gpu_class());
    add(sb, node("n1"));
    json_t *s1 = slice("n1", "A");
    json_object_set_new(json_object_get(json_object_get(s1, "spec"), "pool"), "resourceSliceCount", json_integer(2));
    add(sb, s1);
    add(sb, claim("c", 1, NULL));
    static const char *const cl[] = { "c", NULL };
    add(sb, pod("p", 0, NULL, cl));
    sandbox_run(sb);
    assert_int_equal(l.binds, 0);
    json_t *s2 = slice("n1", "H");
    json_object_set_new(json_object_get(s2, "metadata"), "name", json_string("n1-gpus-2"));
    json_object_set_new(json_object_get(json_object_get(s2, "spec"), "pool"), "resourceSliceCount", json_integer(2));
    json_object_set_new(json_array_get(json_object_get(json_object_get(s2, "spec"), "devices"), 0), "name",
                        json_string("gpu-9"));
    add(sb, s2);
    sandbox_advance(sb, T0 + 20000);
    assert_string_equal(node_of(sb, "p"), "n1");
    sb_done(sb, &l);
}

/* A device's use is known whatever came first: c0's allocation of n1's
 * only GPU is seen before the slice, then the slice is replaced (a new
 * generation), and p's claim still finds the GPU taken; once c0's
 * allocation goes, p gets it. (Filter reads each device's counts from the
 * slice's copy of them: a slice arriving or replaced must take the counts
 * of claims seen earlier.) */
static void test_device_use_survives_slice_changes(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l);
    add(sb, gpu_class());
    add(sb, node("n1"));
    json_t *c0 = claim("c0", 1, NULL);
    json_object_set_new(c0, "status",
                        J("{'allocation':{'devices':{'results':[{'request':'gpus','driver':'gpu.example.com',"
                          "'pool':'n1','device':'gpu-0'}]}},'reservedFor':[{'resource':'pods','name':'gone',"
                          "'uid':'u-gone'}]}"));
    json_t *c0_free = json_deep_copy(c0);
    json_object_del(c0_free, "status");
    add(sb, c0);
    add(sb, slice("n1", "A"));
    add(sb, claim("c", 1, NULL));
    static const char *const cl[] = { "c", NULL };
    add(sb, pod("p", 0, NULL, cl));
    sandbox_run(sb);
    assert_int_equal(l.binds, 0);
    json_t *s2 = slice("n1", "A");
    json_object_set_new(json_object_get(json_object_get(s2, "spec"), "pool"), "generation", json_integer(2));
    apply(sb, "MODIFIED", s2);
    sandbox_advance(sb, T0 + 20000);
    assert_int_equal(l.binds, 0);
    apply(sb, "MODIFIED", c0_free);
    sandbox_advance(sb, T0 + 40000);
    assert_string_equal(node_of(sb, "p"), "n1");
    assert_devices(sb, "c", "n1/gpu-0");
    sb_done(sb, &l);
}

/* Filter remembers its verdict on a device per selector set: p1 (an A100)
 * has n1's and n2's A100s judged a match and takes one; p2 asks an H100
 * with the same class, and the other A100 is no match for it, so Filter
 * (not a failed Reserve) turns p2 away, naming its claim. */
static void test_verdicts_per_selector(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = cluster(&l, "A", "A");
    add(sb, claim("c1", 1, "device.attributes['gpu.example.com'].model == 'A100'"));
    static const char *const cl1[] = { "c1", NULL };
    add(sb, pod("p1", 0, NULL, cl1));
    sandbox_run(sb);
    assert_int_equal(l.binds, 1);
    add(sb, claim("c2", 1, "device.attributes['gpu.example.com'].model == 'H100'"));
    static const char *const cl2[] = { "c2", NULL };
    add(sb, pod("p2", 0, NULL, cl2));
    sandbox_run(sb);
    assert_int_equal(l.binds, 1);
    assert_int_equal(l.unsch, 1);
    const char *why = strstr(logged(&l), "UNSCHEDULABLE ns/p2");
    assert_non_null(why);
    if (!strstr(why, "0/2 nodes are available") || !strstr(why, "claim ns/c2, request gpus"))
        fail_msg("p2 not turned away by Filter: %s", why);
    sb_done(sb, &l);
}

/* ---- KEP-5004: extended resources served by a DeviceClass ------------------ */

/* The class of every case, serving example.com/gpu too. */
static json_t *ext_class(void)
{
    json_t *c = gpu_class();
    json_object_set_new(json_object_get(c, "spec"), "extendedResourceName", json_string("example.com/gpu"));
    return c;
}

/* A node advertising gpus example.com/gpu (0: none). */
static json_t *gpu_node(const char *name, int gpus)
{
    json_t *n = node(name);
    if (gpus) {
        json_t *st = json_object_get(n, "status");
        json_object_set_new(json_object_get(st, "capacity"), "example.com/gpu", json_integer(gpus));
        json_object_set_new(json_object_get(st, "allocatable"), "example.com/gpu", json_integer(gpus));
    }
    return n;
}

/* Pod ns/name with no claim, its container c asking gpus example.com/gpu. */
static json_t *gpu_pod(const char *name, int gpus)
{
    json_t *p = pod(name, 0, NULL, NULL);
    json_t *c = json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0);
    char q[16];
    snprintf(q, sizeof q, "%d", gpus);
    json_object_set_new(json_object_get(json_object_get(c, "resources"), "requests"), "example.com/gpu",
                        json_string(q));
    json_object_del(json_object_get(p, "spec"), "resourceClaims");
    return p;
}

/* The pod's status.extendedResourceClaimStatus, or NULL. */
static json_t *ext_status(sandbox_t *sb, const char *pod_name)
{
    json_t *p = sandbox_get(sb, "Pod", "ns", pod_name);
    return p ? json_object_get(json_object_get(p, "status"), "extendedResourceClaimStatus") : NULL;
}

/* n1 does not advertise example.com/gpu and has 4 DRA GPUs: the pod asking
 * 2 binds there through a claim the scheduler made as kube's PreBind makes
 * it (annotation, controlling owner, one ExactCount request per container
 * and resource, named container-<i>-request-<j> with j the resource's index
 * among the container's sorted requests: cpu, example.com/gpu, memory),
 * allocated and reserved for the pod, and the pod's status maps container
 * c's example.com/gpu to that request. A second pod takes the other two
 * devices; a third finds none. */
static void test_ext_resource_claim(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l);
    add(sb, ext_class());
    add(sb, gpu_node("n1", 0));
    add(sb, slice("n1", "AAAA"));
    add(sb, gpu_pod("p1", 2));
    sandbox_run(sb);
    assert_string_equal(logged(&l), "BIND ns/p1 node=n1\n");
    json_t *es = ext_status(sb, "p1");
    assert_non_null(es);
    const char *cn = json_string_value(json_object_get(es, "resourceClaimName"));
    assert_non_null(cn);
    assert_int_equal(strncmp(cn, "p1-extended-resources-", 22), 0);
    json_t *want = J("[{'containerName':'c','resourceName':'example.com/gpu','requestName':'container-0-request-1'}]");
    assert_true(json_equal(json_object_get(es, "requestMappings"), want));
    json_decref(want);
    json_t *c = sandbox_get(sb, "ResourceClaim", "ns", cn);
    assert_non_null(c);
    json_t *meta = json_object_get(c, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "generateName")), "p1-extended-resources-");
    assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "annotations"),
                                                          "resource.kubernetes.io/extended-resource-claim")),
                        "true");
    json_t *owner = json_array_get(json_object_get(meta, "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(owner, "kind")), "Pod");
    assert_string_equal(json_string_value(json_object_get(owner, "name")), "p1");
    assert_string_equal(json_string_value(json_object_get(owner, "uid")), uid_of(sb, "p1"));
    assert_true(json_is_true(json_object_get(owner, "controller")));
    want = J("{'devices':{'requests':[{'name':'container-0-request-1','exactly':{'deviceClassName':'gpu.example.com',"
             "'allocationMode':'ExactCount','count':2}}]}}");
    assert_true(json_equal(json_object_get(c, "spec"), want));
    json_decref(want);
    assert_string_equal(json_string_value(json_array_get(json_object_get(meta, "finalizers"), 0)),
                        "resource.kubernetes.io/delete-protection");
    assert_devices(sb, cn, "n1/gpu-0,n1/gpu-1");
    char *rf = reserved_of(sb, cn);
    assert_string_equal(rf, uid_of(sb, "p1"));
    free(rf);
    /* The devices are in use: the next pod gets the other two, a third none. */
    add(sb, gpu_pod("p2", 2));
    sandbox_run(sb);
    assert_string_equal(node_of(sb, "p2"), "n1");
    const char *cn2 = json_string_value(json_object_get(ext_status(sb, "p2"), "resourceClaimName"));
    assert_non_null(cn2);
    assert_devices(sb, cn2, "n1/gpu-2,n1/gpu-3");
    add(sb, gpu_pod("p3", 1));
    sandbox_run(sb);
    assert_null(node_of(sb, "p3"));
    assert_int_equal(sandbox_count(sb, "ResourceClaim", "ns"), 2);
    sb_done(sb, &l);
}

/* A node advertising example.com/gpu serves the pod the device-plugin way:
 * no claim, no status mapping, even with DRA devices on it. With n1
 * advertising 2 and n2 only DRA GPUs, two pods of 2 both bind: the one on
 * n2 through a claim, the one on n1 without. */
static void test_ext_resource_advertised(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l);
    add(sb, ext_class());
    add(sb, gpu_node("n1", 2));
    add(sb, slice("n1", "AAAA"));
    add(sb, gpu_pod("p1", 2));
    sandbox_run(sb);
    assert_string_equal(node_of(sb, "p1"), "n1");
    assert_null(ext_status(sb, "p1"));
    assert_int_equal(sandbox_count(sb, "ResourceClaim", "ns"), 0);
    sb_done(sb, &l);

    sb = sb_new(&l);
    add(sb, ext_class());
    add(sb, gpu_node("n1", 2));
    add(sb, gpu_node("n2", 0));
    add(sb, slice("n2", "AA"));
    add(sb, gpu_pod("p1", 2));
    sandbox_run(sb);
    add(sb, gpu_pod("p2", 2));
    sandbox_run(sb);
    assert_int_equal(l.binds, 2);
    const char *on1 = !strcmp(node_of(sb, "p1"), "n1") ? "p1" : "p2", *on2 = !strcmp(on1, "p1") ? "p2" : "p1";
    assert_string_equal(node_of(sb, on2), "n2");
    assert_null(ext_status(sb, on1));
    const char *cn = json_string_value(json_object_get(ext_status(sb, on2), "resourceClaimName"));
    assert_non_null(cn);
    assert_devices(sb, cn, "n2/gpu-0,n2/gpu-1");
    assert_int_equal(sandbox_count(sb, "ResourceClaim", "ns"), 1);
    sb_done(sb, &l);
}

/* Five asked where the class has four devices: pending, and the reason
 * names the resource, its class and what the node has. */
static void test_ext_resource_too_many(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l);
    add(sb, ext_class());
    add(sb, gpu_node("n1", 0));
    add(sb, slice("n1", "AAAA"));
    add(sb, gpu_pod("p", 5));
    sandbox_run(sb);
    assert_int_equal(l.binds, 0);
    assert_int_equal(l.unsch, 1);
    if (!strstr(logged(&l), "example.com/gpu: 5 devices of class gpu.example.com; the node has 4"))
        fail_msg("reason: %s", logged(&l));
    assert_int_equal(sandbox_count(sb, "ResourceClaim", "ns"), 0);
    sb_done(sb, &l);
}

/* The store's side of a bind that does not happen: the hold of the
 * extended-resource claim keeps its devices from others, PreBind's
 * create is in the writes, and once created the unreserve asks the row to
 * delete the claim (kube's unreserveExtendedResourceClaim), freeing the
 * devices. */
static void test_ext_resource_undo(void **st)
{
    (void)st;
    char err[256] = "";
    dra_store_t *s = dra_store_new();
    json_t *o = ext_class();
    assert_int_equal(dra_store_class(s, KUBE_ADDED, "gpu.example.com", o, err, sizeof err), DRA_CHANGE_MORE);
    json_decref(o);
    o = slice("n1", "AA");
    dra_store_slice(s, KUBE_ADDED, "n1-gpus", o, err, sizeof err);
    json_decref(o);
    pod_t *pods[2];
    for (int i = 0; i < 2; i++) {
        o = gpu_pod(i ? "q" : "p", 2 - i);
        json_object_set_new(json_object_get(o, "metadata"), "uid", json_string(i ? "u2" : "u1"));
        pods[i] = pod_from_json(o, err, sizeof err);
        assert_non_null(pods[i]);
        json_decref(o);
    }
    assert_int_equal(dra_store_reserve(s, pods[0], "n1", NULL, NULL, err, sizeof err), 0);
    dra_write_t *w = NULL;
    assert_int_equal(dra_store_writes(s, pods[0], &w, err, sizeof err), 0);
    assert_non_null(w);
    assert_non_null(w->create);
    assert_string_equal(json_string_value(json_object_get(json_object_get(w->create, "metadata"), "generateName")),
                        "p-extended-resources-");
    assert_int_equal(json_array_size(json_object_get(json_object_get(w->allocation, "devices"), "results")), 2);
    dra_write_free(w);
    /* Both devices held: the other pod fits nowhere. */
    assert_int_not_equal(dra_store_reserve(s, pods[1], "n1", NULL, NULL, err, sizeof err), 0);
    assert_int_equal(dra_store_ext_created(s, "u1", "p-extended-resources-x1"), 0);
    dra_undo_t *u = dra_store_unreserve(s, "u1");
    assert_non_null(u);
    assert_true(u->delete_claim);
    assert_string_equal(u->name, "p-extended-resources-x1");
    assert_null(u->next);
    dra_undo_free(u);
    assert_int_equal(dra_store_reserve(s, pods[1], "n1", NULL, NULL, err, sizeof err), 0);
    dra_undo_free(dra_store_unreserve(s, "u2"));
    pod_unref(pods[0]);
    pod_unref(pods[1]);
    dra_store_free(s);
}

/* The case: nvidia.com/gpu (which the GPU row also knows) served
 * by a class on a node without the device plugin, and the implicit
 * deviceclass.resource.kubernetes.io/<class> name of any class. */
static void test_ext_resource_nvidia_and_implicit(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l);
    json_t *c = gpu_class();
    json_object_set_new(json_object_get(c, "spec"), "extendedResourceName", json_string("nvidia.com/gpu"));
    add(sb, c);
    add(sb, gpu_node("n1", 0));
    add(sb, slice("n1", "AAA"));
    json_t *p = gpu_pod("p1", 1);
    json_t *req = json_object_get(
        json_object_get(json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0), "resources"),
        "requests");
    json_object_del(req, "example.com/gpu");
    json_object_set_new(req, "nvidia.com/gpu", json_string("1"));
    json_object_set_new(req, "deviceclass.resource.kubernetes.io/gpu.example.com", json_string("2"));
    add(sb, p);
    sandbox_run(sb);
    assert_string_equal(logged(&l), "BIND ns/p1 node=n1\n");
    json_t *es = ext_status(sb, "p1");
    const char *cn = json_string_value(json_object_get(es, "resourceClaimName"));
    assert_non_null(cn);
    /* Sorted requests: cpu, deviceclass.resource..., memory, nvidia.com/gpu. */
    json_t *want = J("[{'containerName':'c','resourceName':'deviceclass.resource.kubernetes.io/gpu.example.com',"
                     "'requestName':'container-0-request-1'},"
                     "{'containerName':'c','resourceName':'nvidia.com/gpu','requestName':'container-0-request-3'}]");
    if (!json_equal(json_object_get(es, "requestMappings"), want)) {
        char *got = json_dumps(json_object_get(es, "requestMappings"), JSON_COMPACT);
        fail_msg("mappings %s", got);
    }
    json_decref(want);
    assert_devices(sb, cn, "n1/gpu-0,n1/gpu-1,n1/gpu-2");
    sb_done(sb, &l);
}

/* ---- topology levels read from the devices ---------------------------------- */

#define CLIQUE_LEVEL "device:gpu.example.com/clique"

/* A sandbox whose gangs' levels are the devices' clique, then the host. */
static sandbox_t *sb_cliques(log_t *l)
{
    memset(l, 0, sizeof(*l));
    scheduler_opts_t so;
    scheduler_opts_default(&so);
    so.topology_levels = CLIQUE_LEVEL ",kubernetes.io/hostname";
    char err[256] = "";
    sandbox_opts_t o = { &so, 7, T0, on_action, l };
    sandbox_t *sb = sandbox_new(&o, err, sizeof err);
    if (!sb)
        fail_msg("sandbox_new: %s", err);
    add(sb, gpu_class());
    return sb;
}

/* Node name and its slice of GPUs, one per letter of cliques (each
 * device's attribute "clique", qualified by the driver's domain). */
static void clique_node(sandbox_t *sb, const char *name, const char *cliques)
{
    add(sb, node(name));
    json_t *s = slice(name, "");
    json_t *devs = json_object_get(json_object_get(s, "spec"), "devices");
    for (int i = 0; cliques[i]; i++) {
        char dn[16], v[2] = { cliques[i], 0 };
        snprintf(dn, sizeof dn, "gpu-%d", i);
        json_array_append_new(devs, json_pack("{s:s, s:{s:{s:s}}}", "name", dn, "attributes", "clique", "string", v));
    }
    add(sb, s);
}

/* Gang g of n members asking 10 CPUs each (one per 16-CPU node), no
 * claims, topology-required on the clique level. */
static void clique_gang(sandbox_t *sb, int n)
{
    json_t *g = J("{'apiVersion':'scheduling.x-k8s.io/v1alpha1','kind':'PodGroup','metadata':{'name':'g',"
                  "'namespace':'ns','annotations':{'resource.aibee.cn/topology-required':'" CLIQUE_LEVEL "'}},"
                  "'spec':{}}");
    json_object_set_new(json_object_get(g, "spec"), "minMember", json_integer(n));
    add(sb, g);
    for (int i = 0; i < n; i++) {
        char pn[8];
        snprintf(pn, sizeof pn, "w%d", i);
        json_t *p = pod(pn, 0, NULL, NULL);
        json_object_set_new(json_object_get(json_object_get(p, "metadata"), "labels"), "scheduling.x-k8s.io/pod-group",
                            json_string("g"));
        json_t *req = json_object_get(
            json_object_get(json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0), "resources"),
            "requests");
        json_object_set_new(req, "cpu", json_string("10"));
        add(sb, p);
    }
}

/* n1 and n2 have clique "a" devices, n3 clique "b": a gang of 2 that asks
 * the clique level lands on n1 and n2 (before, the level was read as a
 * node label no node has, and the gang stayed pending). */
static void test_gang_in_one_clique(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_cliques(&l);
    clique_node(sb, "n3", "bb");
    clique_node(sb, "n1", "aa");
    clique_node(sb, "n2", "a");
    clique_gang(sb, 2);
    sandbox_run(sb);
    sandbox_advance(sb, T0 + 30000);
    assert_int_equal(l.binds, 2);
    const char *a = node_of(sb, "w0"), *b = node_of(sb, "w1");
    assert_non_null(a);
    assert_non_null(b);
    assert_true((!strcmp(a, "n1") && !strcmp(b, "n2")) || (!strcmp(a, "n2") && !strcmp(b, "n1")));
    sb_done(sb, &l);
}

/* A gang of 3 on n1, n2 (clique a), n3 (b) and n4, whose devices disagree
 * (a and b: in no clique): it fits only across cliques, so it stays
 * pending, and the reason names the level. */
static void test_gang_across_cliques_waits(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_cliques(&l);
    clique_node(sb, "n1", "a");
    clique_node(sb, "n2", "a");
    clique_node(sb, "n3", "b");
    clique_node(sb, "n4", "ab");
    clique_gang(sb, 3);
    sandbox_run(sb);
    sandbox_advance(sb, T0 + 30000);
    assert_int_equal(l.binds, 0);
    if (!strstr(logged(&l), "no " CLIQUE_LEVEL " domain of pool"))
        fail_msg("no reason naming the level in:\n%s", logged(&l));
    /* n4's devices agree once its b device goes: n1, n2, n4 are clique a. */
    clique_node(sb, "n4", "a");
    sandbox_advance(sb, T0 + 120000);
    assert_int_equal(l.binds, 3);
    assert_string_not_equal(node_of(sb, "w0"), "n3");
    assert_string_not_equal(node_of(sb, "w1"), "n3");
    assert_string_not_equal(node_of(sb, "w2"), "n3");
    sb_done(sb, &l);
}

/* ---- Queues count DRA devices ---------------------------------------------- */

/* Queue q (gpu quota and limit 2); n1 has an A100 (40Gi) and two H100s
 * (80Gi). Three pods of q each claim one H100. Counted one GPU per device
 * (the default mapping) two bind and the third waits on the limit;
 * counted by memory over 40Gi (--dra-queue-resources
 * gpu.example.com=gpu:memory/40Gi) an H100 is 2 GPUs: one binds, the
 * second waits. */
static int queue_case(const char *mapping)
{
    log_t l;
    memset(&l, 0, sizeof(l));
    scheduler_opts_t so;
    scheduler_opts_default(&so);
    if (mapping)
        so.dra_queue_resources = mapping;
    char err[256] = "";
    sandbox_opts_t o = { &so, 7, T0, on_action, &l };
    sandbox_t *sb = sandbox_new(&o, err, sizeof err);
    if (!sb)
        fail_msg("sandbox_new: %s", err);
    add(sb, gpu_class());
    add(sb, node("n1"));
    add(sb, slice("n1", "AHH"));
    add(sb, J("{'apiVersion':'resource.aibee.cn/v1alpha1','kind':'Queue','metadata':{'name':'q'},"
              "'spec':{'resources':{'gpu':{'quota':2,'limit':2}}}}"));
    for (int i = 0; i < 3; i++) {
        char cn[8], pn[8];
        snprintf(cn, sizeof cn, "h%d", i);
        snprintf(pn, sizeof pn, "p%d", i);
        add(sb, claim(cn, 1, "device.attributes['gpu.example.com'].model == 'H100'"));
        const char *cl[] = { cn, NULL };
        json_t *p = pod(pn, 0, NULL, cl);
        json_object_set_new(json_object_get(json_object_get(p, "metadata"), "labels"), "resource.aibee.cn/queue",
                            json_string("q"));
        add(sb, p);
        sandbox_run(sb);
    }
    sandbox_advance(sb, T0 + 20000);
    int binds = l.binds;
    sb_done(sb, &l);
    return binds;
}

static void test_queue_counts_dra_gpus(void **st)
{
    (void)st;
    assert_int_equal(queue_case(NULL), 2);
    assert_int_equal(queue_case("gpu.example.com=gpu:memory/40Gi"), 1);
    /* Counted nowhere: both H100s go, the queue's limit never sees them. */
    assert_int_equal(queue_case(""), 2);
}

/* Composition seed 714906225: after a restart the pods were listed before
 * their claims, charged to their queue with no GPU, and never charged
 * again, so the queue passed its limit. Here two pods of q run on claims
 * the API lists after them; a third pod of q asking one GPU must wait on
 * q's limit of 2. */
static void test_queue_counts_claims_listed_late(void **st)
{
    (void)st;
    log_t l;
    sandbox_t *sb = sb_new(&l);
    add(sb, gpu_class());
    add(sb, node("n1"));
    add(sb, slice("n1", "AAAA"));
    add(sb, J("{'apiVersion':'resource.aibee.cn/v1alpha1','kind':'Queue','metadata':{'name':'q'},"
              "'spec':{'resources':{'gpu':{'quota':2,'limit':2}}}}"));
    for (int i = 0; i < 2; i++) {
        char cn[8], pn[8], uid[16];
        snprintf(cn, sizeof cn, "r%d", i);
        snprintf(pn, sizeof pn, "run%d", i);
        snprintf(uid, sizeof uid, "uid-run%d", i);
        const char *cl[] = { cn, NULL };
        json_t *p = pod(pn, 0, "n1", cl);
        json_t *meta = json_object_get(p, "metadata");
        json_object_set_new(meta, "uid", json_string(uid));
        json_object_set_new(json_object_get(meta, "labels"), "resource.aibee.cn/queue", json_string("q"));
        add(sb, p);
    }
    sandbox_run(sb);
    for (int i = 0; i < 2; i++) {
        char cn[8], pn[8], uid[16], dev[8];
        snprintf(cn, sizeof cn, "r%d", i);
        snprintf(pn, sizeof pn, "run%d", i);
        snprintf(uid, sizeof uid, "uid-run%d", i);
        snprintf(dev, sizeof dev, "gpu-%d", i);
        json_t *c = claim(cn, 1, NULL);
        json_object_set_new(c, "status",
                            json_pack("{s:{s:{s:[{s:s, s:s, s:s, s:s}]}, s:{s:[{s:[{s:s, s:s, s:[s]}]}]}},"
                                      " s:[{s:s, s:s, s:s}]}",
                                      "allocation", "devices", "results", "request", "gpus", "driver",
                                      "gpu.example.com", "pool", "n1", "device", dev, "nodeSelector",
                                      "nodeSelectorTerms", "matchFields", "key", "metadata.name", "operator", "In",
                                      "values", "n1", "reservedFor", "resource", "pods", "name", pn, "uid", uid));
        add(sb, c);
    }
    add(sb, claim("more", 1, NULL));
    static const char *const cl[] = { "more", NULL };
    json_t *p = pod("more", 0, NULL, cl);
    json_object_set_new(json_object_get(json_object_get(p, "metadata"), "labels"), "resource.aibee.cn/queue",
                        json_string("q"));
    add(sb, p);
    sandbox_run(sb);
    sandbox_advance(sb, T0 + 20000);
    assert_null(node_of(sb, "more"));
    assert_non_null(strstr(logged(&l), "limit: gpu 2 + 1 > 2"));
    assert_devices(sb, "more", "");
    sb_done(sb, &l);
}

static void test_queue_mapping_parse(void **st)
{
    (void)st;
    dra_qmap_t *m = NULL;
    int n = 0;
    char err[256] = "";
    assert_int_equal(
        dra_qmap_parse("gpu.nvidia.com=gpu,x.example.com=nvidia.com/gpu:memory/80Gi", &m, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(m[0].cls, "gpu.nvidia.com");
    assert_null(m[0].cap);
    assert_string_equal(m[1].cap, "memory");
    assert_true(m[1].unit == 80LL * 1024 * 1024 * 1024 * 1000);
    dra_qmap_free(m, n);
    assert_int_equal(dra_qmap_parse("gpu.nvidia.com=cpu", &m, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "gpu.nvidia.com=cpu"));
    assert_int_equal(dra_qmap_parse("a=gpu:memory", &m, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "CAPACITY/QUANTITY"));
}

int main(void)
{
    capabilities_init();
    if (getenv("DRA_DEBUG"))
        log_set_verbosity(6);
    if (getenv("DRA_TEST")) /* one case, e.g. to see it fail on older code */
        cmocka_set_test_filter(getenv("DRA_TEST"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocates_and_writes),
        cmocka_unit_test(test_two_claims_cannot_share),
        cmocka_unit_test(test_unsatisfiable_says_why),
        cmocka_unit_test(test_unsupported_cel),
        cmocka_unit_test(test_gang_all_or_nothing),
        cmocka_unit_test(test_preemption_frees_devices),
        cmocka_unit_test(test_nominated_claim_keeps_its_device),
        cmocka_unit_test(test_shared_claim),
        cmocka_unit_test(test_template_claim_waits),
        cmocka_unit_test(test_first_available),
        cmocka_unit_test(test_all_and_match_attribute),
        cmocka_unit_test(test_pool_complete_only),
        cmocka_unit_test(test_device_use_survives_slice_changes),
        cmocka_unit_test(test_verdicts_per_selector),
        cmocka_unit_test(test_queue_counts_dra_gpus),
        cmocka_unit_test(test_queue_mapping_parse),
        cmocka_unit_test(test_queue_counts_claims_listed_late),
        cmocka_unit_test(test_ext_resource_claim),
        cmocka_unit_test(test_ext_resource_advertised),
        cmocka_unit_test(test_ext_resource_too_many),
        cmocka_unit_test(test_ext_resource_undo),
        cmocka_unit_test(test_ext_resource_nvidia_and_implicit),
        cmocka_unit_test(test_gang_in_one_clique),
        cmocka_unit_test(test_gang_across_cliques_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
