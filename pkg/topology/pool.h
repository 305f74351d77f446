/* pool.h -- a pool's topology domains as the rows see its nodes (through
 * the services), for the rows that plan or judge by domain. */
#ifndef AISCHED_TOPOLOGY_POOL_H
#define AISCHED_TOPOLOGY_POOL_H

#include "framework/services.h"
#include "topology/topology.h"

/* The domains at level key of pool's nodes, in node order (*doms: the
 * caller frees each and the array) and, when alloc is given, each one's
 * allocatable sum (*alloc, the caller frees it). Returns their count. */
int topo_pool_domains(const sched_services_t *svc, void *core, const char *key, int pool, topo_domain_t **doms,
                      resources_t **alloc);

/* *view: the levels (svc->topo_levels) with each device level down to key
 * filled with the nodes' values now (svc->device_attr_nodes), the keys
 * borrowed; the domains made from it keep their values. Release it with
 * topo_levels_view_free, not topo_levels_free. Call it holding no lock. */
void topo_levels_view(const sched_services_t *svc, void *core, const char *key, topo_levels_t *view);
void topo_levels_view_free(topo_levels_t *view);

#endif
