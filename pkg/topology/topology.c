/* topology.c -- topology domains and the least-lost-opportunity choice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/topology.h"
#include "util/util.h"

/* A label key is at most 253 (prefix) + 1 + 63 characters. */
#define TOPO_KEY_MAX 317

int topo_levels_parse(const char *csv, topo_levels_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *c = csv ? csv : "";
    while (*c) {
        while (*c == ' ' || *c == ',')
            c++;
        if (!*c)
            break;
        const char *e = c;
        while (*e && *e != ',' && *e != ' ')
            e++;
        size_t len = (size_t)(e - c);
        if (len > TOPO_KEY_MAX) {
            topo_levels_free(out);
            return util_errf(err, errlen, "topology level too long: %.40s...", c);
        }
        if (out->n == TOPO_MAX_LEVELS) {
            topo_levels_free(out);
            return util_errf(err, errlen, "more than %d topology levels", TOPO_MAX_LEVELS);
        }
        char *k = util_xmalloc(len + 1);
        memcpy(k, c, len);
        k[len] = '\0';
        const char *attr = topo_level_device(k);
        if (attr && (!attr[0] || !strchr(attr, '/') || attr[0] == '/' || attr[strlen(attr) - 1] == '/')) {
            util_errf(err, errlen,
                      "topology level %s: a device level names a qualified attribute, e.g. %sgpu.nvidia.com/cliqueID",
                      k, TOPO_DEVICE_PREFIX);
            free(k);
            topo_levels_free(out);
            return -1;
        }
        if (topo_level_index(out, k) >= 0) {
            util_errf(err, errlen, "topology level %s listed twice", k);
            free(k);
            topo_levels_free(out);
            return -1;
        }
        out->keys[out->n++] = k;
        c = e;
    }
    return 0;
}

void topo_levels_free(topo_levels_t *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->keys[i]);
        fw_node_values_unref(l->by[i]);
        l->by[i] = NULL;
    }
    l->n = 0;
}

const char *topo_level_device(const char *key)
{
    size_t n = strlen(TOPO_DEVICE_PREFIX);
    return key && strncmp(key, TOPO_DEVICE_PREFIX, n) == 0 ? key + n : NULL;
}

/* Node n's value at level i of l, or NULL. */
static const char *level_value(const topo_levels_t *l, int i, const char *key, const node_t *n)
{
    if (i >= 0 && l->by[i])
        return fw_node_values_get(l->by[i], n->name);
    /* A device level without its values (a table without DRA): no node
     * is in one of its domains. */
    return topo_level_device(key) ? NULL : labels_get(&n->labels, key);
}

int topo_level_index(const topo_levels_t *l, const char *key)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->keys[i], key) == 0)
            return i;
    return -1;
}

void topo_domain_free(topo_domain_t *d)
{
    fw_node_match_free(d);
}

int topo_node_in(const topo_domain_t *d, const node_t *n)
{
    return fw_node_match(d, n);
}

void topo_domain_format(const topo_domain_t *d, char *buf, size_t len)
{
    size_t off = 0;
    if (len)
        buf[0] = '\0';
    for (int i = 0; i < d->n && off < len; i++) {
        if (!d->values[i][0])
            continue;
        int w = snprintf(buf + off, len - off, "%s%s=%s", off ? "," : "", d->keys[i], d->values[i]);
        if (w < 0)
            return;
        off += (size_t)w;
    }
}

int topo_domain_of(const topo_levels_t *l, const char *key, const node_t *n, topo_domain_t *out)
{
    memset(out, 0, sizeof(*out));
    int idx = topo_level_index(l, key);
    const char *own = n ? level_value(l, idx, key, n) : NULL;
    if (!own || !own[0])
        return -1;
    /* Wider levels first: a block is one block only inside its spine. */
    for (int i = 0; i < idx; i++) {
        const char *v = level_value(l, i, l->keys[i], n);
        out->keys[out->n] = util_strdup(l->keys[i]);
        out->by[out->n] = fw_node_values_ref(l->by[i]);
        out->values[out->n++] = util_strdup(v ? v : "");
    }
    out->keys[out->n] = util_strdup(key);
    out->by[out->n] = idx >= 0 ? fw_node_values_ref(l->by[idx]) : NULL;
    out->values[out->n++] = util_strdup(own);
    return 0;
}

int topo_domains_add(const topo_levels_t *l, const char *key, const node_t *n, topo_domain_t **doms,
                     resources_t **alloc, int *nd)
{
    topo_domain_t d;
    if (!n || topo_domain_of(l, key, n, &d) != 0)
        return -1;
    int j = 0;
    while (j < *nd && !topo_node_in(&(*doms)[j], n))
        j++;
    if (j < *nd) {
        topo_domain_free(&d);
    } else {
        *doms = util_xrealloc(*doms, (size_t)(*nd + 1) * sizeof(**doms));
        (*doms)[*nd] = d;
        if (alloc) {
            *alloc = util_xrealloc(*alloc, (size_t)(*nd + 1) * sizeof(**alloc));
            res_zero(&(*alloc)[*nd]);
        }
        ++*nd;
    }
    if (alloc)
        res_add(&(*alloc)[j], &n->allocatable);
    return j;
}

/* ------------------------------------------------------------- choice */

typedef struct dom {
    topo_domain_t d;
    char name[512];
    node_info_t **nodes;
    int n;
    int64_t free_gpu, free_cpu;
} dom_t;

static int64_t free_of(int64_t have, int64_t used)
{
    return have > used ? have - used : 0;
}

/* Groups nodes into the domains of level key. */
static int group(const topo_levels_t *l, const char *key, node_info_t **nodes, int n, dom_t **out)
{
    dom_t *v = NULL;
    int nd = 0;
    for (int i = 0; i < n; i++) {
        topo_domain_t d;
        if (!nodes[i]->node || topo_domain_of(l, key, nodes[i]->node, &d) != 0)
            continue;
        char name[512];
        topo_domain_format(&d, name, sizeof(name));
        int k;
        for (k = 0; k < nd && strcmp(v[k].name, name) != 0; k++)
            ;
        if (k == nd) {
            v = util_xrealloc(v, sizeof(*v) * (size_t)(nd + 1));
            memset(&v[nd], 0, sizeof(v[nd]));
            v[nd].d = d;
            snprintf(v[nd].name, sizeof(v[nd].name), "%s", name);
            nd++;
        } else {
            topo_domain_free(&d);
        }
        dom_t *x = &v[k];
        x->nodes = util_xrealloc(x->nodes, sizeof(*x->nodes) * (size_t)(x->n + 1));
        x->nodes[x->n++] = nodes[i];
        const resources_t *a = &nodes[i]->node->allocatable, *u = &nodes[i]->requested;
        x->free_gpu += free_of(res_get_scalar(a, RES_GPU), res_get_scalar(u, RES_GPU));
        x->free_cpu += free_of(a->milli_cpu, u->milli_cpu);
    }
    *out = v;
    return nd;
}

static void groups_free(dom_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        topo_domain_free(&v[i].d);
        free(v[i].nodes);
    }
    free(v);
}

/* Less lost opportunity first. */
static int better(const dom_t *a, const dom_t *b, const resources_t *need)
{
    int64_t ga = a->free_gpu - res_get_scalar(need, RES_GPU), gb = b->free_gpu - res_get_scalar(need, RES_GPU);
    if (ga != gb)
        return ga < gb;
    if (a->free_cpu != b->free_cpu)
        return a->free_cpu < b->free_cpu;
    if (a->n != b->n)
        return a->n < b->n;
    return strcmp(a->name, b->name) < 0;
}

static int try_level(const topo_levels_t *l, const char *key, node_info_t **nodes, int n, const resources_t *need,
                     topo_fit_fn fit, void *ud, topo_choice_t *out)
{
    dom_t *v;
    int nd = group(l, key, nodes, n, &v);
    int best = -1, second = -1, fits = 0;
    for (int i = 0; i < nd; i++) {
        /* Cheap bound first: a domain without the gang's GPUs free cannot fit. */
        if (v[i].free_gpu < res_get_scalar(need, RES_GPU) || v[i].free_cpu < need->milli_cpu)
            continue;
        if (!fit(ud, v[i].nodes, v[i].n))
            continue;
        fits++;
        if (best < 0 || better(&v[i], &v[best], need)) {
            second = best;
            best = i;
        } else if (second < 0 || better(&v[i], &v[second], need)) {
            second = i;
        }
    }
    if (best >= 0) {
        out->dom = v[best].d;
        memset(&v[best].d, 0, sizeof(v[best].d));
        out->stranded_gpu = v[best].free_gpu - res_get_scalar(need, RES_GPU);
        out->stranded_milli_cpu = v[best].free_cpu - need->milli_cpu;
        out->nodes = v[best].n;
        out->candidates = fits;
        if (second >= 0)
            snprintf(out->next, sizeof(out->next), "%.200s would strand %lld GPUs", v[second].name,
                     (long long)(v[second].free_gpu - res_get_scalar(need, RES_GPU)));
    }
    groups_free(v, nd);
    return best >= 0;
}

int topo_choose(const topo_levels_t *l, const char *key, int required, node_info_t **nodes, int n,
                const resources_t *need, topo_fit_fn fit, void *ud, topo_choice_t *out)
{
    memset(out, 0, sizeof(*out));
    if (try_level(l, key, nodes, n, need, fit, ud, out))
        return 1;
    if (required)
        return 0;
    /* Preferred: the next level up, and so on; an unknown level has none. */
    for (int i = topo_level_index(l, key) - 1; i >= 0; i--)
        if (try_level(l, l->keys[i], nodes, n, need, fit, ud, out))
            return 1;
    return 0;
}

void topo_choice_clear(topo_choice_t *c)
{
    topo_domain_free(&c->dom);
}
