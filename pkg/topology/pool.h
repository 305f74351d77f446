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

#endif
