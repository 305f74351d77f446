/* nodeinfo.c -- one node as the scheduler sees it: the Node, the pods on it
 * and the running sums the filters and scorers read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/podext.h"
#include "framework/nodeinfo.h"
#include "util/util.h"

/* Registered before any thread starts, read-only afterwards. */
static const node_ext_t *exts[NODE_EXT_MAX];
static int nexts;

int node_ext_register(const node_ext_t *ext)
{
    const char *why = pod_ext_sealed()                                  ? "registry already sealed"
                      : nexts == NODE_EXT_MAX                           ? "no free slot (NODE_EXT_MAX)"
                      : ext->pod_ext < 0 || ext->pod_ext >= POD_EXT_MAX ? "bad pod slot"
                                                                        : NULL;
    if (why) {
        fprintf(stderr, "node_ext_register(%s): %s\n", ext->name, why);
        abort();
    }
    exts[nexts] = ext;
    return nexts++;
}

node_info_t *node_info_new(const char *name)
{
    node_info_t *ni = util_xcalloc(1, sizeof(*ni));
    ni->name = util_strdup(name ? name : "");
    res_zero(&ni->requested);
    ni->pool = -1; /* no pool until the pool module assigns one */
    return ni;
}

void node_info_free(node_info_t *ni)
{
    if (ni == NULL)
        return;
    for (int i = 0; i < ni->npods; i++)
        pod_unref(ni->pods[i]);
    free(ni->pods);
    for (int i = 0; i < nexts; i++)
        if (ni->ext[i])
            exts[i]->free(ni->ext[i]);
    if (ni->node)
        node_unref(ni->node);
    free(ni->name);
    free(ni);
}

void node_info_set_node(node_info_t *ni, node_t *n)
{
    if (n)
        node_ref(n);
    if (ni->node)
        node_unref(ni->node);
    ni->node = n;
    ni->generation++;
}

/* The accountants' corrections for p (node_ext_t.account), taken before
 * p's requests change the sums, as each accountant expects. */
static void ext_account(node_info_t *ni, const pod_t *p, int sign, int64_t *delta)
{
    for (int i = 0; i < nexts; i++) {
        const node_ext_t *x = exts[i];
        delta[i] = p->ext[x->pod_ext] ? x->account(&ni->ext[i], ni, p, sign) : 0;
    }
}

static void ext_apply(node_info_t *ni, const int64_t *delta)
{
    for (int i = 0; i < nexts; i++)
        if (delta[i] != 0)
            res_add_scalar(&ni->requested, exts[i]->resource, delta[i]);
}

/* requested.pods counts the pods holding resources (non-terminal), which is
 * what the pod-count check of NodeResourcesFit compares to allocatable. A
 * pod is immutable, so it is terminal on removal iff it was on addition. */
static void account(node_info_t *ni, const pod_t *p, int sign)
{
    int64_t npods = ni->requested.pods;

    /* Counted even for terminal pods, so removal mirrors addition. */
    if (p->interpod &&
        p->interpod->naff_req + p->interpod->nanti_req + p->interpod->naff_pref + p->interpod->nanti_pref > 0)
        ni->npods_affinity += sign;
    if (p->interpod && p->interpod->nanti_req > 0)
        ni->npods_anti_req += sign;

    if (pod_is_terminal(p))
        return;
    /* A pod with no capability's data pays this one test. */
    int64_t delta[NODE_EXT_MAX];
    int ext = p->ext_mask != 0;
    if (ext)
        ext_account(ni, p, sign, delta);
    if (sign > 0) {
        res_add(&ni->requested, &p->requests);
        ni->requested.pods = npods + 1;
        /* Saturating, as res_add: requests come from untrusted pods, and
         * two of 7Ei each overflow an int64 (found by test/fuzz/fuzz_cycle). */
        ni->nonzero_cpu = res_sat_add(ni->nonzero_cpu, p->nonzero_cpu);
        ni->nonzero_mem = res_sat_add(ni->nonzero_mem, p->nonzero_mem);
    } else {
        res_sub(&ni->requested, &p->requests);
        ni->requested.pods = npods > 0 ? npods - 1 : 0;
        ni->nonzero_cpu -= p->nonzero_cpu;
        ni->nonzero_mem -= p->nonzero_mem;
        if (ni->nonzero_cpu < 0)
            ni->nonzero_cpu = 0;
        if (ni->nonzero_mem < 0)
            ni->nonzero_mem = 0;
    }
    if (ext)
        ext_apply(ni, delta);
}

void node_info_add_pod(node_info_t *ni, pod_t *p)
{
    if (ni->npods == ni->cap) {
        ni->cap = ni->cap ? ni->cap * 2 : 8;
        ni->pods = util_xrealloc(ni->pods, sizeof(*ni->pods) * (size_t)ni->cap);
    }
    ni->pods[ni->npods++] = pod_ref(p);
    account(ni, p, +1);
    ni->generation++;
}

int node_info_remove_pod(node_info_t *ni, const char *uid)
{
    for (int i = 0; i < ni->npods; i++) {
        pod_t *p = ni->pods[i];
        if (strcmp(p->uid, uid) != 0)
            continue;
        account(ni, p, -1);
        /* Keep the order: pods are listed oldest-added first. */
        memmove(&ni->pods[i], &ni->pods[i + 1], sizeof(*ni->pods) * (size_t)(ni->npods - i - 1));
        ni->npods--;
        pod_unref(p);
        ni->generation++;
        return 1;
    }
    return 0;
}

node_info_t *node_info_clone(const node_info_t *ni)
{
    node_info_t *c = util_xmalloc(sizeof(*c));

    *c = *ni;
    c->name = util_strdup(ni->name);
    if (c->node)
        node_ref(c->node);
    c->cap = ni->npods;
    c->pods = NULL;
    for (int i = 0; i < nexts; i++)
        c->ext[i] = ni->ext[i] ? exts[i]->clone(ni->ext[i]) : NULL;
    if (ni->npods > 0) {
        c->pods = util_xmalloc(sizeof(*c->pods) * (size_t)ni->npods);
        for (int i = 0; i < ni->npods; i++)
            c->pods[i] = pod_ref(ni->pods[i]);
    }
    return c;
}
