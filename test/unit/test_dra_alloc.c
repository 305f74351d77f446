/* test_dra_alloc.c -- the structured device allocator (pkg/dra/alloc.c)
 * alone, with a fake selector judge: a selector "NAME=VALUE" matches a
 * device whose attribute NAME has that value, "ERR@dev" fails on that
 * device, and a request's class matches the devices of the driver of that
 * name. Every outcome is worked out by hand from kube's allocator rules. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dra/alloc.h"

#define GPU "gpu.example.com"
#define NIC "nic.example.com"

/* The judge's calls, per (request, device), to see the cache at work. */
typedef struct judge {
    const dra_request_t *req[256];
    const dra_device_t *dev[256];
    int calls[256];
    int n, total;
} judge_t;

static void judge_count(judge_t *j, const dra_request_t *req, const dra_device_t *dev)
{
    j->total++;
    for (int i = 0; i < j->n; i++)
        if (j->req[i] == req && j->dev[i] == dev) {
            j->calls[i]++;
            return;
        }
    if (j->n < 256) {
        j->req[j->n] = req;
        j->dev[j->n] = dev;
        j->calls[j->n++] = 1;
    }
}

static int judge_max_calls(const judge_t *j)
{
    int m = 0;
    for (int i = 0; i < j->n; i++)
        if (j->calls[i] > m)
            m = j->calls[i];
    return m;
}

static int judge_one(const char *sel, const dra_device_t *dev, char *err, size_t errlen)
{
    if (strncmp(sel, "ERR@", 4) == 0) {
        if (strcmp(sel + 4, dev->name) != 0)
            return 1;
        snprintf(err, errlen, "no such key: foo");
        return -1;
    }
    const char *eq = strchr(sel, '=');
    for (int i = 0; eq && i < dev->nattrs; i++) {
        const dra_attr_t *a = &dev->attrs[i];
        if (strlen(a->name) != (size_t)(eq - sel) || strncmp(a->name, sel, (size_t)(eq - sel)) != 0)
            continue;
        if (a->kind == DRA_ATTR_INT)
            return a->i == atoll(eq + 1);
        return a->s && strcmp(a->s, eq + 1) == 0;
    }
    return 0;
}

static int judge(void *ud, const dra_request_t *req, const dra_device_t *dev, char *err, size_t errlen)
{
    judge_count(ud, req, dev);
    if (strcmp(req->class_name, dev->driver) != 0)
        return 0;
    for (int i = 0; i < req->nsel; i++) {
        int r = judge_one(req->sel_text[i], dev, err, errlen);
        if (r <= 0)
            return r;
    }
    return 1;
}

/* A node's devices: name, driver, model ("" none), numa (-1 none), in use. */
typedef struct node {
    dra_device_t dev[40];
    dra_attr_t attrs[40][2];
    char names[40][16];
    dra_candidate_t cand[40];
    int n;
} node_t;

static void add_dev(node_t *nd, const char *name, const char *driver, const char *model, int numa, int in_use)
{
    int i = nd->n++;
    dra_device_t *d = &nd->dev[i];
    snprintf(nd->names[i], sizeof(nd->names[i]), "%s", name);
    *d = (dra_device_t){ .driver = driver, .pool = "n1", .name = nd->names[i], .attrs = nd->attrs[i] };
    if (model[0])
        nd->attrs[i][d->nattrs++] = (dra_attr_t){ .name = GPU "/model", .kind = DRA_ATTR_STRING, .s = (char *)model };
    if (numa >= 0)
        nd->attrs[i][d->nattrs++] = (dra_attr_t){ .name = "example.com/numa", .kind = DRA_ATTR_INT, .i = numa };
    nd->cand[i] = (dra_candidate_t){ .dev = d, .in_use = in_use };
}

static dra_request_t req(const char *name, const char *cls, int64_t count, char **sel, int nsel)
{
    return (dra_request_t){ .name = (char *)name,
                            .class_name = (char *)cls,
                            .mode = DRA_MODE_EXACT,
                            .count = count,
                            .sel_text = sel,
                            .nsel = nsel };
}

/* The results as "req:dev,req:dev;next claim", admin devices marked '!'. */
static const char *render(const dra_alloc_t *a)
{
    static char buf[1024];
    buf[0] = '\0';
    for (int c = 0; c < a->nclaims; c++) {
        if (c > 0)
            strcat(buf, ";");
        for (int i = 0; i < a->claim[c].n; i++) {
            const dra_result_t *r = &a->claim[c].results[i];
            size_t used = strlen(buf);
            snprintf(buf + used, sizeof(buf) - used, "%s%s:%s%s", i ? "," : "", r->request, r->dev->name,
                     r->admin ? "!" : "");
        }
    }
    return buf;
}

typedef struct run {
    int rc;
    dra_alloc_t out;
    char why[512];
    judge_t j;
} run_t;

static run_t *run_alloc(const dra_claim_req_t *claims, int nclaims, node_t *nd)
{
    static run_t r;
    memset(&r, 0, sizeof(r));
    r.rc = dra_allocate(claims, nclaims, nd->cand, nd->n, judge, &r.j, &r.out, r.why, sizeof(r.why));
    return &r;
}

static void four_gpus(node_t *nd, int in_use0, int in_use1)
{
    memset(nd, 0, sizeof(*nd));
    add_dev(nd, "gpu-0", GPU, "a100", 0, in_use0);
    add_dev(nd, "gpu-1", GPU, "a100", 0, in_use1);
    add_dev(nd, "gpu-2", GPU, "a100", 1, 0);
    add_dev(nd, "gpu-3", GPU, "a100", 1, 0);
}

static void test_exact_count_fits_first_fit(void **state)
{
    (void)state;
    node_t nd;
    four_gpus(&nd, 0, 0);
    char *sel[] = { GPU "/model=a100" };
    dra_request_t r = req("gpus", GPU, 2, sel, 1);
    dra_claim_req_t c = { .key = "default/c1", .reqs = &r, .nreqs = 1 };
    run_t *x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpus:gpu-0,gpus:gpu-1");
    /* Two tries, two selector calls: nothing beyond the first fit. */
    assert_int_equal(x->out.steps, 4);
    assert_int_equal(x->j.total, 2);
    dra_alloc_free(&x->out);

    /* gpu-0 in use: the next two in order. */
    four_gpus(&nd, 1, 0);
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpus:gpu-1,gpus:gpu-2");
    assert_int_equal(x->j.total, 2); /* the device in use is never judged */
    dra_alloc_free(&x->out);

    /* Two requests of one claim: each device to one of them. */
    four_gpus(&nd, 0, 0);
    dra_request_t two[2] = { req("a", GPU, 2, NULL, 0), req("b", GPU, 2, NULL, 0) };
    dra_claim_req_t c2 = { .key = "default/c2", .reqs = two, .nreqs = 2 };
    x = run_alloc(&c2, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "a:gpu-0,a:gpu-1,b:gpu-2,b:gpu-3");
    dra_alloc_free(&x->out);
    two[1].count = 3;
    x = run_alloc(&c2, 1, &nd);
    assert_int_equal(x->rc, 1);
    assert_string_equal(x->why, "claim default/c2, request b: 3 devices of class gpu.example.com; the node has 4, "
                                "but not together with the pod's other requests");
}

static void test_exact_count_does_not_fit(void **state)
{
    (void)state;
    node_t nd;
    four_gpus(&nd, 1, 1);
    char *sel[] = { GPU "/model=a100" };
    dra_request_t r = req("gpus", GPU, 5, sel, 1);
    dra_claim_req_t c = { .key = "default/c1", .reqs = &r, .nreqs = 1 };
    run_t *x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 1);
    assert_string_equal(x->why, "claim default/c1, request gpus: 5 devices of class gpu.example.com matching "
                                "gpu.example.com/model=a100; the node has 4 (2 in use)");
    assert_null(x->out.claim);

    /* 3 of 4 with two in use: 2 free, also no. */
    r.count = 3;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 1);
    assert_string_equal(x->why, "claim default/c1, request gpus: 3 devices of class gpu.example.com matching "
                                "gpu.example.com/model=a100; the node has 4 (2 in use)");
    assert_int_equal(judge_max_calls(&x->j), 1);

    /* The class's selectors and the request's, each in parentheses. */
    char *two[] = { GPU "/model=a100", "example.com/numa=1" };
    r.sel_text = two;
    r.nsel = 2;
    r.count = 3;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 1);
    assert_string_equal(x->why, "claim default/c1, request gpus: 3 devices of class gpu.example.com matching "
                                "(gpu.example.com/model=a100) && (example.com/numa=1); the node has 2");
    r.sel_text = sel;
    r.nsel = 1;

    /* Without a why buffer: the same answer, and only the search's calls. */
    judge_t j = { 0 };
    dra_alloc_t out;
    assert_int_equal(dra_allocate(&c, 1, nd.cand, nd.n, judge, &j, &out, NULL, 0), 1);
    assert_int_equal(j.total, 0); /* two free devices cannot hold 3: nothing judged */
}

static void test_two_claims_compete_for_one_device(void **state)
{
    (void)state;
    node_t nd = { 0 };
    add_dev(&nd, "gpu-0", GPU, "a100", 0, 0);
    dra_request_t r1 = req("gpu", GPU, 1, NULL, 0), r2 = req("gpu", GPU, 1, NULL, 0);
    dra_claim_req_t c[2] = { { .key = "default/c1", .reqs = &r1, .nreqs = 1 },
                             { .key = "default/c2", .reqs = &r2, .nreqs = 1 } };
    run_t *x = run_alloc(c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpu:gpu-0");
    dra_alloc_free(&x->out);

    x = run_alloc(c, 2, &nd);
    assert_int_equal(x->rc, 1);
    assert_string_equal(x->why, "claim default/c2, request gpu: 1 device of class gpu.example.com; the node has 1, "
                                "but not together with the pod's other requests");

    /* A second device: one each, in claim order. */
    add_dev(&nd, "gpu-1", GPU, "a100", 0, 0);
    x = run_alloc(c, 2, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpu:gpu-0;gpu:gpu-1");
    dra_alloc_free(&x->out);

    /* A device that allows multiple allocations serves both. */
    nd.n = 1;
    nd.dev[0].multi = 1;
    x = run_alloc(c, 2, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpu:gpu-0;gpu:gpu-0");
    dra_alloc_free(&x->out);
}

static void test_all_mode(void **state)
{
    (void)state;
    node_t nd = { 0 };
    add_dev(&nd, "gpu-0", GPU, "a100", 0, 0);
    add_dev(&nd, "gpu-1", GPU, "h100", 0, 0);
    add_dev(&nd, "gpu-2", GPU, "a100", 1, 0);
    add_dev(&nd, "gpu-3", GPU, "a100", 1, 0);
    char *sel[] = { GPU "/model=a100" };
    dra_request_t r = req("all", GPU, 0, sel, 1);
    r.mode = DRA_MODE_ALL;
    dra_claim_req_t c = { .key = "default/c1", .reqs = &r, .nreqs = 1 };
    run_t *x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "all:gpu-0,all:gpu-2,all:gpu-3");
    dra_alloc_free(&x->out);

    /* One matching device in use: All cannot be met (kube: every matching
     * device must be allocatable, in use or not). */
    nd.cand[2].in_use = 1;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 1);
    assert_string_equal(x->why, "claim default/c1, request all: all devices of class gpu.example.com matching "
                                "gpu.example.com/model=a100; the node has 3 (1 in use)");

    /* The device in use but not matching: no matter. */
    nd.cand[2].in_use = 0;
    nd.cand[1].in_use = 1;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "all:gpu-0,all:gpu-2,all:gpu-3");
    dra_alloc_free(&x->out);

    /* A matchAttribute that refuses one of All's devices: kube's error
     * (such a claim can never be met), not a node that does not fit. */
    dra_constraint_t con = { .attr = "example.com/numa" };
    c.cons = &con;
    c.ncons = 1;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, -1);
    assert_string_equal(x->why, "claim default/c1, request all: cannot add device gpu.example.com/n1/gpu-2 because a "
                                "claim constraint would not be satisfied");
    c.ncons = 0;

    /* No matching device at all: no allocation (kube: All needs one). */
    char *none[] = { GPU "/model=b200" };
    r.sel_text = none;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 1);
    assert_string_equal(x->why, "claim default/c1, request all: all devices of class gpu.example.com matching "
                                "gpu.example.com/model=b200; the node has 0");
}

static void test_admin_access(void **state)
{
    (void)state;
    node_t nd;
    four_gpus(&nd, 1, 1);
    dra_request_t r = req("mon", GPU, 2, NULL, 0);
    r.admin = 1;
    dra_claim_req_t c = { .key = "default/mon", .reqs = &r, .nreqs = 1 };
    run_t *x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "mon:gpu-0!,mon:gpu-1!");
    dra_alloc_free(&x->out);

    /* Two admin requests of one claim never take one device twice. */
    dra_request_t two[2] = { req("a", GPU, 1, NULL, 0), req("b", GPU, 1, NULL, 0) };
    two[0].admin = two[1].admin = 1;
    dra_claim_req_t c2 = { .key = "default/mon", .reqs = two, .nreqs = 2 };
    x = run_alloc(&c2, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "a:gpu-0!,b:gpu-1!");
    dra_alloc_free(&x->out);

    /* An admin claim and a plain claim in one allocation: kube counts the
     * admin's device as taken for the plain claim (allocatingDevices). */
    four_gpus(&nd, 0, 0);
    dra_request_t plain = req("gpu", GPU, 1, NULL, 0);
    dra_claim_req_t cs[2] = { { .key = "default/mon", .reqs = &r, .nreqs = 1 },
                              { .key = "default/c1", .reqs = &plain, .nreqs = 1 } };
    r.count = 1;
    x = run_alloc(cs, 2, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "mon:gpu-0!;gpu:gpu-1");
    dra_alloc_free(&x->out);

    /* All with admin access takes devices in use. */
    four_gpus(&nd, 1, 0);
    r.mode = DRA_MODE_ALL;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "mon:gpu-0!,mon:gpu-1!,mon:gpu-2!,mon:gpu-3!");
    dra_alloc_free(&x->out);
}

static void test_first_available_falls_back(void **state)
{
    (void)state;
    node_t nd = { 0 };
    add_dev(&nd, "gpu-0", GPU, "a100", 0, 0);
    add_dev(&nd, "gpu-1", GPU, "h100", 0, 1);
    add_dev(&nd, "gpu-2", GPU, "a100", 1, 0);
    char *h100[] = { GPU "/model=h100" }, *a100[] = { GPU "/model=a100" };
    dra_request_t subs[2] = { req("big", GPU, 1, h100, 1), req("gpus/small", GPU, 2, a100, 1) };
    dra_request_t r = { .name = "gpus", .subs = subs, .nsubs = 2 };
    dra_claim_req_t c = { .key = "default/c1", .reqs = &r, .nreqs = 1 };
    run_t *x = run_alloc(&c, 1, &nd);
    /* The only h100 is in use: the second alternative, both a100s. */
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpus/small:gpu-0,gpus/small:gpu-2");
    dra_alloc_free(&x->out);

    /* The h100 free: the first alternative, named parent/sub. */
    nd.cand[1].in_use = 0;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpus/big:gpu-1");
    dra_alloc_free(&x->out);

    /* Neither fits: why names the last alternative. */
    nd.cand[1].in_use = 1;
    nd.cand[2].in_use = 1;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 1);
    assert_string_equal(x->why, "claim default/c1, request gpus/small: 2 devices of class gpu.example.com matching "
                                "gpu.example.com/model=a100; the node has 2 (1 in use)");

    /* The alternative depends on the next claim: c2 needs an a100 and only
     * gpu-0 is a free one, so c1 falls back from "a" to "h". */
    nd.cand[1].in_use = 0;
    dra_request_t subs2[2] = { req("a", GPU, 1, a100, 1), req("h", GPU, 1, h100, 1) };
    dra_request_t r1 = { .name = "gpus", .subs = subs2, .nsubs = 2 };
    dra_request_t r2 = req("gpu", GPU, 1, a100, 1);
    dra_claim_req_t cs[2] = { { .key = "default/c1", .reqs = &r1, .nreqs = 1 },
                              { .key = "default/c2", .reqs = &r2, .nreqs = 1 } };
    x = run_alloc(cs, 2, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpus/h:gpu-1;gpu:gpu-0");
    dra_alloc_free(&x->out);
}

static void test_match_attribute_backtracks(void **state)
{
    (void)state;
    node_t nd = { 0 };
    add_dev(&nd, "gpu-x", GPU, "a100", -1, 0); /* no numa: never with the constraint */
    add_dev(&nd, "gpu-0", GPU, "a100", 0, 0);
    add_dev(&nd, "gpu-1", GPU, "a100", 1, 0);
    add_dev(&nd, "nic-0", NIC, "", 1, 0);
    dra_request_t rs[2] = { req("gpu", GPU, 1, NULL, 0), req("nic", NIC, 1, NULL, 0) };
    char *names[] = { "gpu", "nic" };
    dra_constraint_t con = { .requests = names, .nrequests = 2, .attr = "example.com/numa" };
    dra_claim_req_t c = { .key = "default/c1", .reqs = rs, .nreqs = 2, .cons = &con, .ncons = 1 };
    run_t *x = run_alloc(&c, 1, &nd);
    /* gpu-0 (numa 0) is the first fit for "gpu", but the only nic is numa 1:
     * back to "gpu", which takes gpu-1. */
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpu:gpu-1,nic:nic-0");
    assert_int_equal(judge_max_calls(&x->j), 1);
    dra_alloc_free(&x->out);

    /* No names: the constraint covers every request; the same answer. */
    con.nrequests = 0;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpu:gpu-1,nic:nic-0");
    dra_alloc_free(&x->out);

    /* Only "gpu" named: the nic is free of it, so gpu-x (no numa) still
     * does not qualify, and gpu-0 does. */
    con.nrequests = 1;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpu:gpu-0,nic:nic-0");
    dra_alloc_free(&x->out);

    /* gpu-1 in use: no numa-1 gpu; why names the nic, the deepest the
     * search reached, and the constraint. */
    con.nrequests = 2;
    nd.cand[2].in_use = 1;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 1);
    assert_string_equal(x->why, "claim default/c1, request nic: 1 device of class nic.example.com; the node has 1, "
                                "but not with matchAttribute example.com/numa and the pod's other requests");

    /* One request of 2 with numa 0 and numa 1 free, one each: no pair. */
    dra_request_t pair = req("pair", GPU, 2, NULL, 0);
    dra_constraint_t all = { .attr = "example.com/numa" };
    dra_claim_req_t c2 = { .key = "default/c2", .reqs = &pair, .nreqs = 1, .cons = &all, .ncons = 1 };
    x = run_alloc(&c2, 1, &nd);
    assert_int_equal(x->rc, 1);
    assert_string_equal(x->why, "claim default/c2, request pair: 2 devices of class gpu.example.com; the node has 3 "
                                "(1 in use), but not with matchAttribute example.com/numa");

    /* A parent's name covers its alternatives; the values must be of one
     * kind: a string "1" is not the int 1. */
    nd.cand[2].in_use = 0;
    dra_request_t subs[1] = { req("any", GPU, 1, NULL, 0) };
    dra_request_t rs2[2] = { { .name = "gpu", .subs = subs, .nsubs = 1 }, req("nic", NIC, 1, NULL, 0) };
    c.reqs = rs2;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpu/any:gpu-1,nic:nic-0");
    dra_alloc_free(&x->out);
    /* The alternative's full name covers it as well. */
    char *full[] = { "gpu/any", "nic" };
    con.requests = full;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpu/any:gpu-1,nic:nic-0");
    dra_alloc_free(&x->out);
    nd.attrs[3][0] = (dra_attr_t){ .name = "example.com/numa", .kind = DRA_ATTR_STRING, .s = "1" };
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 1);
}

static void test_budget_exhausted(void **state)
{
    (void)state;
    node_t nd = { 0 };
    char name[16];
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof(name), "gpu-%d", i);
        add_dev(&nd, name, GPU, "a100", 0, 0);
    }
    /* 10 of 30 gpus, then 21 more: no allocation, but only trying every
     * set of 10 (C(30,10) = 30045015) shows it. */
    dra_request_t rs[2] = { req("gpus", GPU, 10, NULL, 0), req("more", GPU, 21, NULL, 0) };
    dra_claim_req_t c = { .key = "default/c1", .reqs = rs, .nreqs = 2 };
    run_t *x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, -1);
    assert_int_equal(x->out.steps, DRA_ALLOC_BUDGET + 1);
    assert_string_equal(
        x->why, "device allocation gave up after 100000 steps (its budget): 1 claim(s) on 30 candidate device(s)");
    assert_null(x->out.claim);
    /* 100000 steps, yet each (request, device) judged at most once. */
    assert_int_equal(judge_max_calls(&x->j), 1);
    assert_true(x->j.total <= 60);
}

static void test_request_no_choice_helps(void **state)
{
    (void)state;
    node_t nd = { 0 };
    char name[16];
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof(name), "gpu-%d", i);
        add_dev(&nd, name, GPU, "a100", 0, 0);
    }
    /* 10 of 30 gpus, then a nic the node does not have: the nic fails
     * whatever the gpus took (none of the 10 taken is a nic), so the search
     * stops there instead of trying C(30,10) sets. Steps: 10 gpus tried and
     * judged (20), the nic's 30 tries and 20 judged, the 10 taken judged for
     * the nic (10). */
    dra_request_t rs[2] = { req("gpus", GPU, 10, NULL, 0), req("nic", NIC, 1, NULL, 0) };
    dra_claim_req_t c = { .key = "default/c1", .reqs = rs, .nreqs = 2 };
    run_t *x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 1);
    assert_int_equal(x->out.steps, 80);
    assert_string_equal(x->why, "claim default/c1, request nic: 1 device of class nic.example.com; the node has 0");
    assert_int_equal(judge_max_calls(&x->j), 1);

    /* A device the gpus took would have served the second request: that
     * one fails because of the first's choice, so the search goes on and
     * finds the set without it. */
    four_gpus(&nd, 0, 0);
    add_dev(&nd, "gpu-4", GPU, "a100", 1, 0);
    nd.attrs[1][0].s = "x";
    char *x_sel[] = { GPU "/model=x" };
    dra_request_t rs2[2] = { req("gpus", GPU, 3, NULL, 0), req("x", GPU, 1, x_sel, 1) };
    c.reqs = rs2;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpus:gpu-0,gpus:gpu-2,gpus:gpu-3,x:gpu-1");
    dra_alloc_free(&x->out);
}

static void test_eligibility_error(void **state)
{
    (void)state;
    node_t nd;
    four_gpus(&nd, 0, 0);
    char *sel[] = { "ERR@gpu-1" };
    dra_request_t r = req("gpus", GPU, 1, sel, 1);
    dra_claim_req_t c = { .key = "default/c1", .reqs = &r, .nreqs = 1 };
    /* One device: gpu-0 fits first, gpu-1 is never judged (kube judges
     * lazily too). */
    run_t *x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_string_equal(render(&x->out), "gpus:gpu-0");
    dra_alloc_free(&x->out);

    r.count = 2;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, -1);
    assert_string_equal(x->why, "claim default/c1, request gpus: a selector failed on device "
                                "gpu.example.com/n1/gpu-1: no such key: foo");
    assert_null(x->out.claim);
}

static void test_requests_kube_refuses(void **state)
{
    (void)state;
    node_t nd;
    four_gpus(&nd, 0, 0);
    dra_request_t r = req("gpus", GPU, 33, NULL, 0);
    dra_claim_req_t c = { .key = "default/c1", .reqs = &r, .nreqs = 1 };
    run_t *x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, -1);
    assert_string_equal(x->why, "claim default/c1: number of requested devices 33 exceeds the claim limit of 32");
    r.count = 0;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, -1);
    assert_string_equal(x->why, "claim default/c1, request gpus: count 0 is not positive");
    /* No claims, or a claim without requests: an empty allocation. */
    x = run_alloc(NULL, 0, &nd);
    assert_int_equal(x->rc, 0);
    assert_int_equal(x->out.nclaims, 0);
    dra_alloc_free(&x->out);
    c.nreqs = 0;
    x = run_alloc(&c, 1, &nd);
    assert_int_equal(x->rc, 0);
    assert_int_equal(x->out.nclaims, 1);
    assert_int_equal(x->out.claim[0].n, 0);
    dra_alloc_free(&x->out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_count_fits_first_fit),
        cmocka_unit_test(test_exact_count_does_not_fit),
        cmocka_unit_test(test_two_claims_compete_for_one_device),
        cmocka_unit_test(test_all_mode),
        cmocka_unit_test(test_admin_access),
        cmocka_unit_test(test_first_available_falls_back),
        cmocka_unit_test(test_match_attribute_backtracks),
        cmocka_unit_test(test_budget_exhausted),
        cmocka_unit_test(test_request_no_choice_helps),
        cmocka_unit_test(test_eligibility_error),
        cmocka_unit_test(test_requests_kube_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
