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

int topo_pool_domains(const sched_services_t *svc, void *core, const char *key, int pool, topo_domain_t **doms,
                      resources_t **alloc)
{
    pool_doms_t p = { .levels = svc->topo_levels(core), .key = key, .pool = pool, .want_alloc = alloc != NULL };
    svc->nodes_visit(core, add_domain, &p);
    *doms = p.doms;
    if (alloc)
        *alloc = p.alloc;
    return p.nd;
}
