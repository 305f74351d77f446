/* topology.h -- topology domains for gangs: nodes grouped by the labels of
 * the configured levels (widest first), and the domain a gang fits that
 * leaves the least capacity stranded (Armada's "least lost opportunity").
 * Pure functions on node copies; the caller decides what "fits" means. */
#ifndef AISCHED_TOPOLOGY_H
#define AISCHED_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "api/types.h"
#include "framework/nodeinfo.h"
#include "framework/nodematch.h"

#define TOPO_ANN_REQUIRED  "resource.aibee.cn/topology-required"
#define TOPO_ANN_PREFERRED "resource.aibee.cn/topology-preferred"
#define TOPO_DEFAULT_LEVELS                                                                                            \
    "topology.kubernetes.io/zone,network.aibee.cn/spine,network.aibee.cn/block,kubernetes.io/hostname"
#define TOPO_MAX_LEVELS FW_MATCH_MAX

/* A level that is no node label but a DRA device attribute, fully
 * qualified: "device:gpu.nvidia.com/cliqueID". A node's value is that of
 * the attribute on its devices (node-local slices of complete pools; the
 * devices without it do not count); a node whose devices disagree, or
 * that has none with it, is in no domain of the level. */
#define TOPO_DEVICE_PREFIX "device:"

/* The configured levels, widest first. Owned strings. by[i]: a device
 * level's values per node, NULL in the levels as parsed (and published);
 * a row fills them in a view of the levels before asking for domains
 * (topo_levels_view in pool.h), so what it places reads one snapshot. */
typedef struct topo_levels {
    char *keys[TOPO_MAX_LEVELS];
    fw_node_values_t *by[TOPO_MAX_LEVELS];
    int n;
} topo_levels_t;

/* "a,b,c" (spaces ignored); -1 with a message on an empty or overlong key,
 * a "device:" key without an attribute "domain/name", a duplicate, or more
 * than TOPO_MAX_LEVELS. An empty string gives none. */
int topo_levels_parse(const char *csv, topo_levels_t *out, char *err, size_t errlen);
void topo_levels_free(topo_levels_t *l);
int topo_level_index(const topo_levels_t *l, const char *key);
/* The attribute a device level reads ("gpu.nvidia.com/cliqueID"), or NULL
 * for a node label's level. */
const char *topo_level_device(const char *key);

/* A domain: the label values a node must carry (a value "" means the
 * label is absent; a device level's entry reads the level's by[]), the
 * wider levels first: a node match (a pod set's
 * cycle keeps its members inside it without knowing it is a domain). */
typedef fw_node_match_t topo_domain_t;
void topo_domain_free(topo_domain_t *d);
int topo_node_in(const topo_domain_t *d, const node_t *n);
/* "network.aibee.cn/spine=s1,network.aibee.cn/block=b2" into buf. */
void topo_domain_format(const topo_domain_t *d, char *buf, size_t len);
/* The domain at level key that node n is in; -1 when n lacks the label
 * (or, at a device level, has no value in l->by). */
int topo_domain_of(const topo_levels_t *l, const char *key, const node_t *n, topo_domain_t *out);

/* Adds node n's domain at level key to doms[0..*nd) when it is new there
 * (*doms grown; the caller frees each and the array) and, when alloc is
 * given, n's allocatable to that domain's sum (*alloc, grown alike).
 * Returns the domain's index, or -1 when n lacks the level's label. */
int topo_domains_add(const topo_levels_t *l, const char *key, const node_t *n, topo_domain_t **doms,
                     resources_t **alloc, int *nd);

/* Whether the gang fits on nodes[0..n) (copies it may change but must
 * leave as it found them). */
typedef int (*topo_fit_fn)(void *ud, node_info_t **nodes, int n);

typedef struct topo_choice {
    topo_domain_t dom;          /* the chosen domain (n == 0: none) */
    int64_t stranded_gpu;       /* free GPUs left in it after the gang */
    int64_t stranded_milli_cpu; /* and CPU */
    int nodes;                  /* its nodes */
    int candidates;             /* domains that fit, at the chosen level */
    char next[256];             /* the runner-up and what it would strand, or "" */
} topo_choice_t;

/* Tries level key (required: only it; preferred: it, then each wider
 * level) and returns 1 with the fitting domain that strands the least free
 * capacity once need (the gang's summed requests) is placed: GPUs, then
 * CPU, then fewer nodes, then name. 0 when no domain fits. Free with
 * topo_choice_clear. */
int topo_choose(const topo_levels_t *l, const char *key, int required, node_info_t **nodes, int n,
                const resources_t *need, topo_fit_fn fit, void *ud, topo_choice_t *out);
void topo_choice_clear(topo_choice_t *c);

#endif
