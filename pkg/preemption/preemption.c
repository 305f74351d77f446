/* preemption.c -- PodDisruptionBudget parsing, minimal victim sets per node
 * (kube-scheduler v1.20 selectVictimsOnNode) and the choice among nodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preemption/preemption.h"
#include "framework/nodeinfo.h"
#include "util/log.h"
#include "util/util.h"

/* Ranks can be negative (the scheduler puts borrowers 2^38 below, elastic
 * gang surplus 2^36 below). Sums are taken over rank + RANK_OFFSET, as kube
 * adds MaxInt32+1 to each priority, so that one more victim always makes
 * the sum larger. */
#define RANK_OFFSET PREEMPT_RANK_OFFSET

/* ----------------------------------------------------------------- PDBs */

static void set_err(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
}

/* A selector no label set satisfies: key both present and absent. kube's
 * preemption treats a nil or empty PDB selector as matching nothing. */
static void selector_nothing(selector_t *s)
{
    s->n = 2;
    s->reqs = util_xcalloc(2, sizeof(*s->reqs));
    s->reqs[0].key = util_strdup("aisched.invalid/none");
    s->reqs[0].op = SEL_EXISTS;
    s->reqs[1].key = util_strdup("aisched.invalid/none");
    s->reqs[1].op = SEL_DOES_NOT_EXIST;
}

static int selector_json_empty(json_t *sel)
{
    if (!json_is_object(sel))
        return 1;
    json_t *ml = json_object_get(sel, "matchLabels");
    json_t *me = json_object_get(sel, "matchExpressions");
    return (!ml || json_object_size(ml) == 0) && (!me || json_array_size(me) == 0);
}

pdb_t *pdb_from_json(json_t *obj, char *err, size_t errlen)
{
    if (!json_is_object(obj)) {
        set_err(err, errlen, "PodDisruptionBudget: not an object");
        return NULL;
    }
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (kind && strcmp(kind, "PodDisruptionBudget") != 0) {
        set_err(err, errlen, "PodDisruptionBudget: wrong kind");
        return NULL;
    }
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    if (api && strcmp(api, "policy/v1") != 0 && strcmp(api, "policy/v1beta1") != 0) {
        set_err(err, errlen, "PodDisruptionBudget: unsupported apiVersion");
        return NULL;
    }
    json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!name || !*name) {
        set_err(err, errlen, "PodDisruptionBudget: metadata.name missing");
        return NULL;
    }
    json_t *spec = json_object_get(obj, "spec");
    if (spec && !json_is_object(spec)) {
        set_err(err, errlen, "PodDisruptionBudget: spec is not an object");
        return NULL;
    }
    json_t *sel = json_object_get(spec, "selector");
    if (sel && !json_is_null(sel) && !json_is_object(sel)) {
        set_err(err, errlen, "PodDisruptionBudget: spec.selector is not an object");
        return NULL;
    }

    pdb_t *p = util_xcalloc(1, sizeof(*p));
    if (selector_json_empty(sel)) {
        selector_nothing(&p->selector);
    } else if (selector_from_label_selector(&p->selector, sel, err, errlen) != 0) {
        free(p);
        return NULL;
    }
    p->ns = util_strdup(ns && *ns ? ns : "default");
    p->name = util_strdup(name);

    json_t *status = json_object_get(obj, "status");
    json_t *da = json_object_get(status, "disruptionsAllowed");
    if (!da)
        da = json_object_get(status, "podDisruptionsAllowed"); /* pre-1.10 name */
    if (json_is_integer(da)) {
        json_int_t v = json_integer_value(da);
        p->disruptions_allowed = v < 0 ? 0 : v > INT32_MAX ? INT32_MAX : (int32_t)v;
    }
    return p;
}

void pdb_free(pdb_t *p)
{
    if (!p)
        return;
    free(p->ns);
    free(p->name);
    selector_free(&p->selector);
    free(p);
}

/* --------------------------------------------------------- victim sets */

typedef struct victim {
    pod_t *pod; /* one ref */
    int64_t rank;
    int order;     /* position on the node: last tie-break, for determinism */
    int violating; /* evicting it would break a PDB */
} victim_t;

/* Most important first: the order in which victims are offered reprieve. */
static int victim_cmp(const void *pa, const void *pb)
{
    const victim_t *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank > b->rank ? -1 : 1;
    if (a->pod->started_ms != b->pod->started_ms)
        return a->pod->started_ms < b->pod->started_ms ? -1 : 1;
    return a->order - b->order;
}

static int pdb_matches(const pdb_t *d, const pod_t *p)
{
    return d && strcmp(d->ns, p->ns) == 0 && selector_matches(&d->selector, &p->labels, p->name);
}

/* kube's filterPodsWithPDBViolation: walking victims most important first,
 * each one spends a disruption of every PDB that selects it; once a PDB
 * runs out, the victims it selects are violating. */
static void mark_pdb_violations(victim_t *v, int n, pdb_t *const *pdbs, int npdbs)
{
    if (npdbs <= 0)
        return;
    int32_t *left = util_xcalloc((size_t)npdbs, sizeof(*left));
    for (int i = 0; i < npdbs; i++)
        left[i] = pdbs[i] ? pdbs[i]->disruptions_allowed : 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < npdbs; j++)
            if (pdb_matches(pdbs[j], v[i].pod) && --left[j] < 0)
                v[i].violating = 1;
    free(left);
}

int preempt_pdb_violations(pod_t *const *pods, int n, pdb_t *const *pdbs, int npdbs)
{
    victim_t *v = util_xcalloc((size_t)n + 1, sizeof(*v));
    for (int i = 0; i < n; i++)
        v[i].pod = pods[i];
    mark_pdb_violations(v, n, pdbs, npdbs);
    int k = 0;
    for (int i = 0; i < n; i++)
        k += v[i].violating;
    free(v);
    return k;
}

static int fits(framework_t *fw, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni)
{
    fw_status_t st;
    fw_status_reset(&st);
    return framework_filter(fw, cs, pod, ni, &st) == FW_SUCCESS;
}

int preempt_removable(const pod_t *p, const char *node)
{
    return pod_is_bound(p) && !pod_is_terminal(p) && (!node || strcmp(p->node_name, node) == 0);
}

/* Collects (and removes from ni) every pod is_victim accepts among those
 * that can leave ni (the others stay: they hold room, see
 * preempt_removable); the PreFilter state in cs follows each removal
 * (kube's RemovePod). */
static int collect_victims(framework_t *fw, cycle_state_t *cs, node_info_t *ni, const pod_t *preemptor,
                           preempt_victim_fn is_victim, void *ud, victim_t **out)
{
    victim_t *v = util_xcalloc((size_t)ni->npods + 1, sizeof(*v));
    int n = 0;
    for (int i = 0; i < ni->npods; i++) {
        const pod_t *p = ni->pods[i];
        int64_t rank = 0;
        if (!preempt_removable(p, ni->name) || strcmp(p->uid, preemptor->uid) == 0)
            continue;
        if (!is_victim(p, preemptor, ud, &rank))
            continue;
        v[n].pod = pod_ref(ni->pods[i]);
        v[n].rank = rank;
        v[n].order = n;
        n++;
    }
    for (int i = 0; i < n; i++) {
        node_info_remove_pod(ni, v[i].pod->uid);
        framework_remove_pod(fw, cs, preemptor, v[i].pod, ni);
    }
    *out = v;
    return n;
}

/* Puts victims back, most important first, as long as the preemptor still
 * fits; the ones that must stay out go to out. Two passes: PDB-violating
 * victims get the first chance to stay. */
static void reprieve(framework_t *fw, cycle_state_t *cs, const pod_t *preemptor, node_info_t *ni, victim_t *v, int n,
                     preempt_candidate_t *out)
{
    out->max_rank = INT64_MIN;
    for (int pass = 1; pass >= 0; pass--) {
        for (int i = 0; i < n; i++) {
            if (v[i].violating != pass)
                continue;
            node_info_add_pod(ni, v[i].pod);
            framework_add_pod(fw, cs, preemptor, v[i].pod, ni);
            if (fits(fw, cs, preemptor, ni)) {
                pod_unref(v[i].pod);
                v[i].pod = NULL;
                continue;
            }
            node_info_remove_pod(ni, v[i].pod->uid);
            framework_remove_pod(fw, cs, preemptor, v[i].pod, ni);
            out->victims[out->nvictims++] = v[i].pod;
            v[i].pod = NULL;
            out->pdb_violations += pass;
            if (v[i].rank > out->max_rank)
                out->max_rank = v[i].rank;
            out->rank_sum += v[i].rank + RANK_OFFSET;
            int64_t started = out->victims[out->nvictims - 1]->started_ms;
            if (started > out->latest_start_ms)
                out->latest_start_ms = started;
            int64_t saved = out->victims[out->nvictims - 1]->checkpointed_at_ms;
            if (saved < out->checkpointed_ms)
                out->checkpointed_ms = saved;
        }
    }
}

int preempt_select_on_node_cs(framework_t *fw, cycle_state_t *cs, const pod_t *preemptor, const node_info_t *ni,
                              preempt_victim_fn is_victim, void *ud, pdb_t *const *pdbs, int npdbs,
                              preempt_candidate_t *out)
{
    memset(out, 0, sizeof(*out));
    node_info_t *sim = node_info_clone(ni);
    victim_t *v = NULL;
    int n = collect_victims(fw, cs, sim, preemptor, is_victim, ud, &v);
    int ok = fits(fw, cs, preemptor, sim);
    if (ok) {
        qsort(v, (size_t)n, sizeof(*v), victim_cmp);
        mark_pdb_violations(v, n, pdbs, npdbs);
        out->node = util_strdup(ni->name);
        out->victims = util_xcalloc((size_t)n + 1, sizeof(*out->victims));
        out->latest_start_ms = INT64_MIN;
        out->checkpointed_ms = INT64_MAX;
        reprieve(fw, cs, preemptor, sim, v, n, out);
        if (out->nvictims == 0)
            out->latest_start_ms = out->checkpointed_ms = 0;
        /* Give the caller its state back as PreFilter left it. */
        for (int i = 0; i < out->nvictims; i++)
            framework_add_pod(fw, cs, preemptor, out->victims[i], ni);
    } else {
        for (int i = 0; i < n; i++)
            framework_add_pod(fw, cs, preemptor, v[i].pod, ni);
    }
    for (int i = 0; i < n; i++)
        pod_unref(v[i].pod); /* NULL for those handed on */
    free(v);
    node_info_free(sim);
    return ok;
}

int preempt_select_on_node(framework_t *fw, const pod_t *preemptor, const node_info_t *ni, preempt_victim_fn is_victim,
                           void *ud, pdb_t *const *pdbs, int npdbs, preempt_candidate_t *out)
{
    cycle_state_t *cs = cycle_state_new();
    fw_status_t st;
    fw_status_reset(&st);
    int ok = 0;
    if (framework_pre_filter(fw, cs, preemptor, &st) == FW_SUCCESS)
        ok = preempt_select_on_node_cs(fw, cs, preemptor, ni, is_victim, ud, pdbs, npdbs, out);
    else
        memset(out, 0, sizeof(*out));
    cycle_state_free(cs);
    return ok;
}

/* --------------------------------------------------------- node choice */

/* Nonzero if a is a better place to preempt than b. */
static int candidate_better(const preempt_candidate_t *a, const preempt_candidate_t *b)
{
    /* A node that needs no eviction at all wins outright, as in kube. */
    if ((a->nvictims == 0) != (b->nvictims == 0))
        return a->nvictims == 0;
    if (a->pdb_violations != b->pdb_violations)
        return a->pdb_violations < b->pdb_violations;
    if (a->max_rank != b->max_rank)
        return a->max_rank < b->max_rank;
    if (a->rank_sum != b->rank_sum)
        return a->rank_sum < b->rank_sum;
    if (a->nvictims != b->nvictims)
        return a->nvictims < b->nvictims;
    /* Victims that saved lately lose the least work (checkpoint before
     * eviction): the freshest of the candidates' oldest saves wins. */
    if (a->checkpointed_ms != b->checkpointed_ms)
        return a->checkpointed_ms > b->checkpointed_ms;
    return a->latest_start_ms > b->latest_start_ms;
}

int preempt_pick(const preempt_candidate_t *c, int n)
{
    if (n <= 0)
        return -1;
    int best = 0;
    for (int i = 1; i < n; i++)
        if (candidate_better(&c[i], &c[best]))
            best = i;
    return best;
}

void preempt_candidate_clear(preempt_candidate_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nvictims; i++)
        pod_unref(c->victims[i]);
    free(c->victims);
    free(c->node);
    memset(c, 0, sizeof(*c));
}
