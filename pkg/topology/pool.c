/* pool.c -- a pool's topology domains as the rows see its nodes. */
#include "topology/pool.h"

typedef struct pool_doms {
    const topo_levels_t *levels;
    const char *key;
    int pool;
    topo_domain_t *doms;
    resources_t *alloc;
    int want_alloc;
    int nd;
} pool_doms_t;

static void add_domain(void *ud, const node_info_t *ni)
{
    pool_doms_t *p = ud;
    if (ni->pool == p->pool)
        topo_domains_add(p->levels, p->key, ni->node, &p->doms, p->want_alloc ? &p->alloc : NULL, &p->nd);
}

static void add_value(void *ud, const char *node, const char *value)
{
    fw_node_values_add(ud, node, value);
}

void topo_levels_view(const sched_services_t *svc, void *core, const char *key, topo_levels_t *view)
{
    const topo_levels_t *l = svc->topo_levels(core);
    *view = *l;
    int idx = topo_level_index(l, key);
    for (int i = 0; i < view->n; i++) {
        const char *attr = topo_level_device(view->keys[i]);
        view->by[i] = NULL;
        if (!attr || i > idx || !svc->device_attr_nodes)
            continue;
        view->by[i] = fw_node_values_new();
        svc->device_attr_nodes(core, attr, add_value, view->by[i]);
        fw_node_values_seal(view->by[i]);
    }
}

void topo_levels_view_free(topo_levels_t *view)
{
    for (int i = 0; i < view->n; i++) {
        fw_node_values_unref(view->by[i]);
        view->by[i] = NULL;
    }
    view->n = 0;
}

int topo_pool_domains(const sched_services_t *svc, void *core, const char *key, int pool, topo_domain_t **doms,
                      resources_t **alloc)
{
    topo_levels_t view;
    topo_levels_view(svc, core, key, &view);
    pool_doms_t p = { .levels = &view, .key = key, .pool = pool, .want_alloc = alloc != NULL };
    svc->nodes_visit(core, add_domain, &p);
    topo_levels_view_free(&view);
    *doms = p.doms;
    if (alloc)
        *alloc = p.alloc;
    return p.nd;
}
