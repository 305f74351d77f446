/* topo_index.c -- incremental per-topology-value pod counts for the
 * inter-pod plugins: the registry of existing pods' terms and lazy entries
 * for pending pods' matchers (see topo_index.h). */
#include "framework/topo_index.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"
#include "util/util.h"
#include "util/lockorder.h"

#define LAZY_CAP 1024

enum { REG_REQ_ANTI, REG_REQ_AFF, REG_PREF_AFF, REG_PREF_ANTI, REG_KINDS };

typedef struct reg_entry {
    pod_aff_term_t term; /* copy */
    int64_t refs;        /* carriers counted, keyed node or not */
    tp_counts_t values;  /* value of term's key -> summed weight */
} reg_entry_t;

typedef struct reg {
    hashmap_t *by_key; /* term.key -> reg_entry_t */
    reg_entry_t **list;
    int n, cap;
} reg_t;

typedef struct lazy {
    char *id;
    int spread;   /* spread matcher, else a conjunction of terms */
    int affinity; /* some pending pod's required affinity */
    pod_aff_term_t *terms;
    int nterms;
    char *ns; /* spread: the pending pod's namespace */
    selector_t sel;
    int match_nothing;
    char *topo_key;
    tp_counts_t values; /* value -> matching pods */
    uint64_t used;
} lazy_t;

struct fw_topo_index {
    pthread_mutex_t mu;
    reg_t reg[REG_KINDS];
    hashmap_t *lazy_by_id;
    lazy_t **lazy;
    int nlazy, cap_lazy;
    hashmap_t *domains; /* topology key -> tp_counts_t (value -> nodes) */
    uint64_t tick;
};

fw_topo_index_t *fw_topo_index_new(void)
{
    fw_topo_index_t *x = util_xcalloc(1, sizeof(*x));
    pthread_mutex_init(&x->mu, NULL);
    for (int k = 0; k < REG_KINDS; k++)
        x->reg[k].by_key = hashmap_new(64);
    x->lazy_by_id = hashmap_new(64);
    x->domains = hashmap_new(8);
    return x;
}

static void reg_entry_free(reg_entry_t *e)
{
    aff_term_clear(&e->term);
    tpc_free(&e->values);
    free(e);
}

static void lazy_free(lazy_t *l)
{
    free(l->id);
    for (int i = 0; i < l->nterms; i++)
        aff_term_clear(&l->terms[i]);
    free(l->terms);
    free(l->ns);
    selector_free(&l->sel);
    free(l->topo_key);
    tpc_free(&l->values);
    free(l);
}

void fw_topo_index_free(fw_topo_index_t *x)
{
    if (!x)
        return;
    for (int k = 0; k < REG_KINDS; k++) {
        for (int i = 0; i < x->reg[k].n; i++)
            reg_entry_free(x->reg[k].list[i]);
        free(x->reg[k].list);
        hashmap_free(x->reg[k].by_key);
    }
    for (int i = 0; i < x->nlazy; i++)
        lazy_free(x->lazy[i]);
    free(x->lazy);
    hashmap_free(x->lazy_by_id);
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(x->domains, &it, &k, &v);) {
        tpc_free(v);
        free(v);
    }
    hashmap_free(x->domains);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

/* ---- the registry of existing pods' terms ----------------------------------- */

static void reg_update(reg_t *r, const pod_aff_term_t *t, int weighted, const node_t *node, int sign)
{
    reg_entry_t *e = hashmap_get(r->by_key, t->key);
    if (!e) {
        if (sign < 0)
            return; /* never counted */
        e = util_xcalloc(1, sizeof(*e));
        aff_term_copy(&e->term, t);
        tpc_init(&e->values, 8);
        hashmap_put(r->by_key, t->key, e);
        if (r->n == r->cap) {
            r->cap = r->cap ? r->cap * 2 : 16;
            r->list = util_xrealloc(r->list, sizeof(*r->list) * (size_t)r->cap);
        }
        r->list[r->n++] = e;
    }
    e->refs += sign;
    const char *v = labels_get(&node->labels, t->topology_key);
    if (v)
        tpc_add(&e->values, t->topology_key, v, (int64_t)sign * (weighted ? t->weight : 1), 1);
    if (e->refs <= 0) {
        hashmap_remove(r->by_key, t->key);
        for (int i = 0; i < r->n; i++)
            if (r->list[i] == e) {
                r->list[i] = r->list[--r->n];
                break;
            }
        reg_entry_free(e);
    }
}

static void reg_pod(fw_topo_index_t *x, const pod_affinity_t *a, const node_t *node, int sign)
{
    for (int i = 0; i < a->nanti_req; i++)
        reg_update(&x->reg[REG_REQ_ANTI], &a->anti_req[i], 0, node, sign);
    for (int i = 0; i < a->naff_req; i++)
        reg_update(&x->reg[REG_REQ_AFF], &a->aff_req[i], 0, node, sign);
    for (int i = 0; i < a->naff_pref; i++)
        reg_update(&x->reg[REG_PREF_AFF], &a->aff_pref[i], 1, node, sign);
    for (int i = 0; i < a->nanti_pref; i++)
        reg_update(&x->reg[REG_PREF_ANTI], &a->anti_pref[i], 1, node, sign);
}

/* ---- lazy entries -------------------------------------------------------------- */

static int lazy_matches(const lazy_t *l, const pod_t *p)
{
    if (l->spread)
        return !l->match_nothing && !p->deleting && strcmp(p->ns, l->ns) == 0 &&
               selector_matches(&l->sel, &p->labels, NULL);
    for (int i = 0; i < l->nterms; i++)
        if (!aff_term_matches(&l->terms[i], p))
            return 0;
    return l->nterms > 0;
}

static void lazy_count(lazy_t *l, const pod_t *p, const node_t *node, int sign)
{
    if (!lazy_matches(l, p))
        return;
    const char *v = labels_get(&node->labels, l->topo_key);
    if (v)
        tpc_add(&l->values, l->topo_key, v, sign, 1);
}

void fw_topo_index_pod(fw_topo_index_t *x, const pod_t *p, const node_t *node, int sign)
{
    if (!x || !node || pod_is_terminal(p))
        return;
    lo_mutex_lock(&x->mu, LO_TOPO_INDEX);
    if (p->interpod)
        reg_pod(x, p->interpod, node, sign);
    for (int i = 0; i < x->nlazy; i++)
        lazy_count(x->lazy[i], p, node, sign);
    lo_mutex_unlock(&x->mu, LO_TOPO_INDEX);
}

void fw_topo_index_node(fw_topo_index_t *x, const node_t *node, int sign)
{
    if (!x || !node)
        return;
    lo_mutex_lock(&x->mu, LO_TOPO_INDEX);
    const char *k;
    void *d;
    for (size_t it = 0; hashmap_next(x->domains, &it, &k, &d);) {
        const char *v = labels_get(&node->labels, k);
        if (v)
            tpc_add(d, k, v, sign, 1);
    }
    lo_mutex_unlock(&x->mu, LO_TOPO_INDEX);
}

/* What a pending pod's PreFilter asks of the index. */
typedef struct need {
    char *id;
    const pod_aff_term_t *terms; /* conjunction */
    int nterms;
    const spread_constraint_t *spread;
    const char *topo_key;
    int affinity; /* required affinity terms */
} need_t;

static char *id_terms(const pod_aff_term_t *t, int n, const char *topo_key)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, "T");
    for (int i = 0; i < n; i++)
        sbuf_printf(&b, "\x1e%s", t[i].key);
    sbuf_printf(&b, "@%s", topo_key);
    return b.data;
}

static char *id_spread(const spread_constraint_t *c, const char *ns)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, "S\x1e%s\x1e%s", ns, c->key);
    return b.data;
}

/* The one hard spread constraint the index serves, or NULL: when some nodes
 * are not domains (a node selector or required node affinity honoured,
 * taints honoured) or with several hard constraints (nodes must carry every
 * key) the plugin scans. */
static const spread_constraint_t *indexed_spread(const pod_t *pod)
{
    const pod_affinity_t *a = pod->interpod;
    if (!a || a->nspread_hard != 1)
        return NULL;
    for (int i = 0; i < a->nspread; i++)
        if (a->spread[i].hard)
            return spread_counts_all_nodes(&a->spread[i], pod) ? &a->spread[i] : NULL;
    return NULL;
}

static int needs_of(const pod_t *pod, need_t **out)
{
    const pod_affinity_t *a = pod->interpod;
    *out = NULL;
    if (!a)
        return 0;
    int cap = a->naff_req + a->nanti_req + a->naff_pref + a->nanti_pref + 1, n = 0;
    need_t *v = util_xcalloc((size_t)cap, sizeof(*v));
    for (int i = 0; i < a->naff_req; i++)
        v[n++] = (need_t){ id_terms(a->aff_req, a->naff_req, a->aff_req[i].topology_key),
                           a->aff_req,
                           a->naff_req,
                           NULL,
                           a->aff_req[i].topology_key,
                           1 };
    const pod_aff_term_t *lists[3] = { a->anti_req, a->aff_pref, a->anti_pref };
    int counts[3] = { a->nanti_req, a->naff_pref, a->nanti_pref };
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < counts[l]; i++)
            v[n++] = (need_t){
                id_terms(&lists[l][i], 1, lists[l][i].topology_key), &lists[l][i], 1, NULL, lists[l][i].topology_key, 0
            };
    const spread_constraint_t *c = indexed_spread(pod);
    if (c)
        v[n++] = (need_t){ id_spread(c, pod->ns), NULL, 0, c, c->topology_key, 0 };
    *out = v;
    return n;
}

static void needs_free(need_t *v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i].id);
    free(v);
}

static lazy_t *lazy_get(fw_topo_index_t *x, const char *id)
{
    lazy_t *l = hashmap_get(x->lazy_by_id, id);
    if (l)
        l->used = ++x->tick;
    return l;
}

int fw_topo_index_ready(fw_topo_index_t *x, const pod_t *pod)
{
    need_t *v;
    int n = needs_of(pod, &v), ok = 1;
    lo_mutex_lock(&x->mu, LO_TOPO_INDEX);
    for (int i = 0; i < n && ok; i++) {
        lazy_t *l = lazy_get(x, v[i].id);
        ok = l != NULL && (!v[i].spread || hashmap_get(x->domains, v[i].topo_key));
        if (l)
            l->affinity |= v[i].affinity; /* the same term may be another pod's anti-affinity */
    }
    lo_mutex_unlock(&x->mu, LO_TOPO_INDEX);
    needs_free(v, n);
    return ok;
}

static void lazy_evict_one(fw_topo_index_t *x)
{
    int victim = 0;
    for (int i = 1; i < x->nlazy; i++)
        if (x->lazy[i]->used < x->lazy[victim]->used)
            victim = i;
    lazy_t *l = x->lazy[victim];
    hashmap_remove(x->lazy_by_id, l->id);
    x->lazy[victim] = x->lazy[--x->nlazy];
    lazy_free(l);
}

static void domains_add_key(fw_topo_index_t *x, const char *key, node_info_t *const *nodes, int n)
{
    if (hashmap_get(x->domains, key))
        return;
    tp_counts_t *d = util_xcalloc(1, sizeof(*d));
    tpc_init(d, 8);
    for (int i = 0; i < n; i++) {
        const char *v = nodes[i]->node ? labels_get(&nodes[i]->node->labels, key) : NULL;
        if (v)
            tpc_add(d, key, v, 1, 1);
    }
    hashmap_put(x->domains, key, d);
}

void fw_topo_index_prepare(fw_topo_index_t *x, const pod_t *pod, node_info_t *const *nodes, int n)
{
    lockorder_assert_held_excl(LO_CACHE);
    need_t *v;
    int nv = needs_of(pod, &v);
    lo_mutex_lock(&x->mu, LO_TOPO_INDEX);
    for (int k = 0; k < nv; k++) {
        if (v[k].spread)
            domains_add_key(x, v[k].topo_key, nodes, n);
        lazy_t *have = lazy_get(x, v[k].id);
        if (have) {
            have->affinity |= v[k].affinity;
            continue;
        }
        while (x->nlazy >= LAZY_CAP)
            lazy_evict_one(x);
        lazy_t *l = util_xcalloc(1, sizeof(*l));
        l->id = util_strdup(v[k].id);
        l->topo_key = util_strdup(v[k].topo_key);
        l->affinity = v[k].affinity;
        tpc_init(&l->values, 8);
        if (v[k].spread) {
            l->spread = 1;
            l->ns = util_strdup(pod->ns);
            selector_copy(&l->sel, &v[k].spread->selector);
            l->match_nothing = v[k].spread->match_nothing;
        } else {
            l->terms = util_xcalloc((size_t)v[k].nterms, sizeof(*l->terms));
            for (int i = 0; i < v[k].nterms; i++)
                aff_term_copy(&l->terms[i], &v[k].terms[i]);
            l->nterms = v[k].nterms;
        }
        for (int i = 0; i < n; i++) {
            const node_info_t *ni = nodes[i];
            if (!ni->node)
                continue;
            for (int j = 0; j < ni->npods; j++)
                if (!pod_is_terminal(ni->pods[j]))
                    lazy_count(l, ni->pods[j], ni->node, 1);
        }
        l->used = ++x->tick;
        hashmap_put(x->lazy_by_id, l->id, l);
        if (x->nlazy == x->cap_lazy) {
            x->cap_lazy = x->cap_lazy ? x->cap_lazy * 2 : 64;
            x->lazy = util_xrealloc(x->lazy, sizeof(*x->lazy) * (size_t)x->cap_lazy);
        }
        x->lazy[x->nlazy++] = l;
    }
    lo_mutex_unlock(&x->mu, LO_TOPO_INDEX);
    needs_free(v, nv);
}

/* ---- queries --------------------------------------------------------------- */

static void add_values(tp_counts_t *out, const tp_counts_t *in, const char *key, int64_t mult, int drop_zero)
{
    size_t it = 0, klen;
    const char *k, *v;
    int64_t n;
    while (tpc_next(in, &it, &k, &klen, &v, &n))
        tpc_add(out, key, v, n * mult, drop_zero);
}

int fw_topo_index_existing_anti(fw_topo_index_t *x, const pod_t *pod, tp_counts_t *out)
{
    if (!x)
        return 0;
    lo_mutex_lock(&x->mu, LO_TOPO_INDEX);
    const reg_t *r = &x->reg[REG_REQ_ANTI];
    for (int i = 0; i < r->n; i++)
        if (aff_term_matches(&r->list[i]->term, pod))
            add_values(out, &r->list[i]->values, r->list[i]->term.topology_key, 1, 1);
    lo_mutex_unlock(&x->mu, LO_TOPO_INDEX);
    return 1;
}

int fw_topo_index_incoming(fw_topo_index_t *x, const pod_t *pod, tp_counts_t *aff, tp_counts_t *anti)
{
    const pod_affinity_t *a = pod->interpod;
    if (!x)
        return 0;
    if (!a)
        return 1;
    need_t *v;
    int n = needs_of(pod, &v), ok = 1;
    int nin = a->naff_req + a->nanti_req; /* needs_of lists these first */
    lazy_t **l = util_xcalloc((size_t)nin + 1, sizeof(*l));
    lo_mutex_lock(&x->mu, LO_TOPO_INDEX);
    for (int i = 0; i < nin && ok; i++)
        ok = (l[i] = lazy_get(x, v[i].id)) != NULL;
    for (int i = 0; i < nin && ok; i++)
        add_values(i < a->naff_req ? aff : anti, &l[i]->values, v[i].topo_key, 1, 1);
    lo_mutex_unlock(&x->mu, LO_TOPO_INDEX);
    free(l);
    needs_free(v, n);
    return ok;
}

int fw_topo_index_score(fw_topo_index_t *x, const pod_t *pod, int hard_weight, tp_counts_t *out, int *any)
{
    const pod_affinity_t *a = pod->interpod;
    if (!x)
        return 0;
    *any = 0;
    need_t *v;
    int n = needs_of(pod, &v), ok = 1;
    int first = a ? a->naff_req + a->nanti_req : 0, npref = a ? a->naff_pref + a->nanti_pref : 0;
    lazy_t **l = util_xcalloc((size_t)npref + 1, sizeof(*l));
    lo_mutex_lock(&x->mu, LO_TOPO_INDEX);
    for (int i = 0; i < npref && ok; i++)
        ok = (l[i] = lazy_get(x, v[first + i].id)) != NULL;
    for (int i = 0; i < npref && ok; i++) {
        const pod_aff_term_t *t = i < a->naff_pref ? &a->aff_pref[i] : &a->anti_pref[i - a->naff_pref];
        int64_t w = i < a->naff_pref ? t->weight : -t->weight;
        if (tpc_len(&l[i]->values) > 0) {
            add_values(out, &l[i]->values, t->topology_key, w, 0);
            *any = 1;
        }
    }
    static const int kinds[3] = { REG_REQ_AFF, REG_PREF_AFF, REG_PREF_ANTI };
    for (int k = 0; k < 3 && ok; k++) {
        const reg_t *r = &x->reg[kinds[k]];
        int64_t mult = kinds[k] == REG_REQ_AFF ? hard_weight : kinds[k] == REG_PREF_AFF ? 1 : -1;
        if (mult == 0)
            continue;
        for (int i = 0; i < r->n; i++) {
            const reg_entry_t *e = r->list[i];
            if (tpc_len(&e->values) == 0 || !aff_term_matches(&e->term, pod))
                continue;
            add_values(out, &e->values, e->term.topology_key, mult, 0);
            *any = 1;
        }
    }
    lo_mutex_unlock(&x->mu, LO_TOPO_INDEX);
    free(l);
    needs_free(v, n);
    return ok;
}

int fw_topo_index_spread(fw_topo_index_t *x, const spread_constraint_t *c, const char *ns, tp_counts_t *out,
                         int max_domains)
{
    if (!x)
        return 0;
    char *id = id_spread(c, ns);
    int ok = 0;
    lo_mutex_lock(&x->mu, LO_TOPO_INDEX);
    lazy_t *l = lazy_get(x, id);
    tp_counts_t *d = hashmap_get(x->domains, c->topology_key);
    if (l && d && (int)tpc_len(d) <= max_domains) {
        add_values(out, d, c->topology_key, 0, 0);
        add_values(out, &l->values, c->topology_key, 1, 0);
        ok = 1;
    }
    lo_mutex_unlock(&x->mu, LO_TOPO_INDEX);
    free(id);
    return ok;
}

int fw_topo_index_affinity_wanted(fw_topo_index_t *x, const pod_t *p)
{
    int hit = 0;
    if (!x)
        return 0;
    lo_mutex_lock(&x->mu, LO_TOPO_INDEX);
    for (int i = 0; i < x->nlazy && !hit; i++)
        hit = x->lazy[i]->affinity && lazy_matches(x->lazy[i], p);
    lo_mutex_unlock(&x->mu, LO_TOPO_INDEX);
    return hit;
}
