/* nodematch.c -- a node constraint by label values (nodematch.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "framework/nodematch.h"
#include "util/util.h"

typedef struct fw_node_value {
    char *node, *value;
} fw_node_value_t;

struct fw_node_values {
    atomic_int refs;
    int sealed;
    fw_node_value_t *v; /* sorted by node once sealed */
    int n;
};

fw_node_values_t *fw_node_values_new(void)
{
    fw_node_values_t *v = util_xcalloc(1, sizeof(*v));
    atomic_init(&v->refs, 1);
    return v;
}

void fw_node_values_add(fw_node_values_t *v, const char *node, const char *value)
{
    v->v = util_xrealloc(v->v, (size_t)(v->n + 1) * sizeof(*v->v));
    v->v[v->n].node = util_strdup(node);
    v->v[v->n++].value = util_strdup(value);
}

static int by_node(const void *a, const void *b)
{
    return strcmp(((const fw_node_value_t *)a)->node, ((const fw_node_value_t *)b)->node);
}

void fw_node_values_seal(fw_node_values_t *v)
{
    if (v->n > 1)
        qsort(v->v, (size_t)v->n, sizeof(*v->v), by_node);
    v->sealed = 1;
}

const char *fw_node_values_get(const fw_node_values_t *v, const char *node)
{
    if (!v || !node)
        return NULL;
    fw_node_value_t key = { (char *)node, NULL };
    const fw_node_value_t *f = v->sealed ? bsearch(&key, v->v, (size_t)v->n, sizeof(*v->v), by_node) : NULL;
    return f ? f->value : NULL;
}

fw_node_values_t *fw_node_values_ref(fw_node_values_t *v)
{
    if (v)
        atomic_fetch_add(&v->refs, 1);
    return v;
}

void fw_node_values_unref(fw_node_values_t *v)
{
    if (!v || atomic_fetch_sub(&v->refs, 1) != 1)
        return;
    for (int i = 0; i < v->n; i++) {
        free(v->v[i].node);
        free(v->v[i].value);
    }
    free(v->v);
    free(v);
}

void fw_node_match_free(fw_node_match_t *m)
{
    for (int i = 0; i < m->n; i++) {
        free(m->keys[i]);
        free(m->values[i]);
        fw_node_values_unref(m->by[i]);
        m->by[i] = NULL;
    }
    m->n = 0;
}

const char *fw_node_match_value(const fw_node_match_t *m, int i, const node_t *n)
{
    const char *v = m->by[i] ? fw_node_values_get(m->by[i], n->name) : labels_get(&n->labels, m->keys[i]);
    return v ? v : "";
}

int fw_node_match(const fw_node_match_t *m, const node_t *n)
{
    if (!n)
        return 0;
    for (int i = 0; i < m->n; i++)
        if (strcmp(fw_node_match_value(m, i, n), m->values[i]) != 0)
            return 0;
    return 1;
}

void fw_node_match_copy(fw_node_match_t *dst, const fw_node_match_t *src)
{
    for (int i = 0; i < src->n; i++) {
        dst->keys[i] = util_strdup(src->keys[i]);
        dst->values[i] = util_strdup(src->values[i]);
        dst->by[i] = fw_node_values_ref(src->by[i]);
    }
    dst->n = src->n;
}
