/* framework.c -- the scheduling framework: builds the default plugin set from
 * the configuration and runs PreFilter, Filter and Score over nodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "framework/framework.h"
#include "framework/plugins/plugins.h"
#include "util/util.h"

struct framework {
    fw_config_t cfg;
    res_scorer_ctx_t res_ctx[2];         /* the resource scorers' ctx: least, most */
    fw_plugin_t plugins[FW_MAX_PLUGINS]; /* one instance per enabled plugin */
    int nplugins;
    fw_cluster_t base; /* view for states without one */
    int has_base;
    /* Instance indexes per point, in the profile's order. */
    int filter[FW_MAX_PLUGINS], nfilter;
    int score[FW_MAX_PLUGINS], nscore;
    int preemption;        /* DefaultPreemption at postFilter */
    struct owners *owners; /* borrowed (framework_set_owners) */
};

/* ---- status ------------------------------------------------------------ */

void fw_status_reset(fw_status_t *st)
{
    st->code = FW_SUCCESS;
    st->nreasons = 0;
    st->plugin = NULL;
}

/* The status keeps the most severe code: one unresolvable reason makes the
 * node unresolvable. Reasons beyond FW_MAX_REASONS are dropped. */
void fw_status_add(fw_status_t *st, fw_code_t code, const char *reason)
{
    if (code > st->code)
        st->code = code;
    if (reason == NULL || st->nreasons >= FW_MAX_REASONS)
        return;
    size_t n = strlen(reason);
    if (n >= FW_REASON_LEN)
        n = FW_REASON_LEN - 1;
    memcpy(st->reasons[st->nreasons], reason, n);
    st->reasons[st->nreasons][n] = '\0';
    st->nreasons++;
}

/* ---- scoring helpers shared by plugins ----------------------------------- */

int64_t fw_scale_score(int64_t num, int64_t den)
{
    if (den <= 0 || num <= 0)
        return 0;
    /* 128-bit so memory in bytes times 100 cannot overflow. */
    return (int64_t)((__int128)num * FW_MAX_SCORE / den);
}

void fw_default_normalize(int64_t *scores, int n, int reverse)
{
    int64_t max = 0;

    for (int i = 0; i < n; i++)
        if (scores[i] > max)
            max = scores[i];
    if (max == 0) {
        if (reverse)
            for (int i = 0; i < n; i++)
                scores[i] = FW_MAX_SCORE;
        return;
    }
    for (int i = 0; i < n; i++) {
        int64_t s = fw_scale_score(scores[i], max);
        scores[i] = reverse ? FW_MAX_SCORE - s : s;
    }
}

/* ---- the plugin registry ------------------------------------------------- */

#define PT(x) (1u << (x))

static void mk_node_unschedulable(fw_plugin_t *pl, framework_t *fw)
{
    plugin_node_unschedulable(pl);
}
static void mk_node_name(fw_plugin_t *pl, framework_t *fw)
{
    plugin_node_name(pl);
}
static void mk_node_resources_fit(fw_plugin_t *pl, framework_t *fw)
{
    plugin_node_resources_fit(pl);
}
static void mk_node_ports(fw_plugin_t *pl, framework_t *fw)
{
    plugin_node_ports(pl);
}
static void mk_node_affinity(fw_plugin_t *pl, framework_t *fw)
{
    plugin_node_affinity(pl, 1);
}
static void mk_taint_toleration(fw_plugin_t *pl, framework_t *fw)
{
    plugin_taint_toleration(pl, 1);
}
static void mk_balanced(fw_plugin_t *pl, framework_t *fw)
{
    if (fw->cfg.v1_resource_scores)
        plugin_balanced_allocation_v1(pl, 1);
    else
        plugin_balanced_allocation(pl, 1);
}
static void mk_image_locality(fw_plugin_t *pl, framework_t *fw)
{
    plugin_image_locality(pl);
}
static void mk_prefer_avoid(fw_plugin_t *pl, framework_t *fw)
{
    plugin_node_prefer_avoid_pods(pl);
}
/* One plugin for explicit constraints and v1.20's default spreading. */
static void mk_pod_topology_spread(fw_plugin_t *pl, framework_t *fw)
{
    plugin_pod_topology_spread(pl, 2);
    pl->ctx = fw;
}
static void mk_inter_pod_affinity(fw_plugin_t *pl, framework_t *fw)
{
    plugin_inter_pod_affinity(pl, 1);
}
static void mk_volume_restrictions(fw_plugin_t *pl, framework_t *fw)
{
    plugin_volume_restrictions(pl);
}
static void mk_ebs_limits(fw_plugin_t *pl, framework_t *fw)
{
    plugin_in_tree_volume_limits(pl, 0);
}
static void mk_gce_pd_limits(fw_plugin_t *pl, framework_t *fw)
{
    plugin_in_tree_volume_limits(pl, 1);
}
static void mk_azure_disk_limits(fw_plugin_t *pl, framework_t *fw)
{
    plugin_in_tree_volume_limits(pl, 2);
}
static void mk_node_volume_limits(fw_plugin_t *pl, framework_t *fw)
{
    plugin_node_volume_limits(pl);
}
static void mk_dynamic_resources(fw_plugin_t *pl, framework_t *fw)
{
    (void)fw;
    plugin_dynamic_resources(pl);
}

static void mk_volume_binding(fw_plugin_t *pl, framework_t *fw)
{
    plugin_volume_binding(pl);
}
static void mk_volume_zone(fw_plugin_t *pl, framework_t *fw)
{
    plugin_volume_zone(pl);
}

static void mk_gpu_sharing(fw_plugin_t *pl, framework_t *fw)
{
    plugin_gpu_sharing(pl, 1);
}

static void mk_topology_domain(fw_plugin_t *pl, framework_t *fw)
{
    plugin_topology_domain(pl);
}

static void mk_resources(fw_plugin_t *pl, framework_t *fw, score_strategy_t strategy)
{
    fw_config_t c = fw->cfg;
    c.strategy = strategy;
    plugin_resource_allocation(pl, &fw->res_ctx[strategy == SCORE_MOST_ALLOCATED], &c);
}
static void mk_least(fw_plugin_t *pl, framework_t *fw)
{
    mk_resources(pl, fw, SCORE_LEAST_ALLOCATED);
}
static void mk_most(fw_plugin_t *pl, framework_t *fw)
{
    mk_resources(pl, fw, SCORE_MOST_ALLOCATED);
}

typedef struct fw_registry_entry {
    const char *name;
    unsigned points;                                /* PT(fw_point_t) of the points it extends */
    void (*make)(fw_plugin_t *pl, framework_t *fw); /* NULL: lives outside the framework */
} fw_registry_entry_t;

/* Every plugin a profile may name. A plugin added to the build gets a row
 * here (and its place in the default lists below). */
static const fw_registry_entry_t REGISTRY[] = {
    { "PrioritySort", PT(FW_PT_QUEUE_SORT), NULL },
    { "NodeUnschedulable", PT(FW_PT_FILTER), mk_node_unschedulable },
    { "NodeName", PT(FW_PT_FILTER), mk_node_name },
    { "TaintToleration", PT(FW_PT_FILTER) | PT(FW_PT_PRE_SCORE) | PT(FW_PT_SCORE), mk_taint_toleration },
    { "NodeAffinity", PT(FW_PT_FILTER) | PT(FW_PT_SCORE), mk_node_affinity },
    { "NodePorts", PT(FW_PT_PRE_FILTER) | PT(FW_PT_FILTER), mk_node_ports },
    { "NodeResourcesFit", PT(FW_PT_PRE_FILTER) | PT(FW_PT_FILTER), mk_node_resources_fit },
    { "NodeResourcesBalancedAllocation", PT(FW_PT_SCORE), mk_balanced },
    { "NodeResourcesLeastAllocated", PT(FW_PT_SCORE), mk_least },
    { "NodeResourcesMostAllocated", PT(FW_PT_SCORE), mk_most },
    { "ImageLocality", PT(FW_PT_SCORE), mk_image_locality },
    { "NodePreferAvoidPods", PT(FW_PT_SCORE), mk_prefer_avoid },
    { "PodTopologySpread", PT(FW_PT_PRE_FILTER) | PT(FW_PT_FILTER) | PT(FW_PT_PRE_SCORE) | PT(FW_PT_SCORE),
      mk_pod_topology_spread },
    { "InterPodAffinity", PT(FW_PT_PRE_FILTER) | PT(FW_PT_FILTER) | PT(FW_PT_PRE_SCORE) | PT(FW_PT_SCORE),
      mk_inter_pod_affinity },
    { "VolumeRestrictions", PT(FW_PT_FILTER), mk_volume_restrictions },
    { "EBSLimits", PT(FW_PT_FILTER), mk_ebs_limits },
    { "GCEPDLimits", PT(FW_PT_FILTER), mk_gce_pd_limits },
    { "NodeVolumeLimits", PT(FW_PT_FILTER), mk_node_volume_limits },
    { "AzureDiskLimits", PT(FW_PT_FILTER), mk_azure_disk_limits },
    /* Reserve and PreBind run in the volumes row (volume/row.c). */
    { "VolumeBinding", PT(FW_PT_PRE_FILTER) | PT(FW_PT_FILTER) | PT(FW_PT_RESERVE) | PT(FW_PT_PRE_BIND),
      mk_volume_binding },
    { "VolumeZone", PT(FW_PT_FILTER), mk_volume_zone },
    /* ai-scheduler's own: GPU fractions; Reserve and PreBind run in the
     * scheduler (scheduler/gpu.c). */
    { "GpuSharing",
      PT(FW_PT_PRE_FILTER) | PT(FW_PT_FILTER) | PT(FW_PT_PRE_SCORE) | PT(FW_PT_SCORE) | PT(FW_PT_RESERVE) |
          PT(FW_PT_PRE_BIND),
      mk_gpu_sharing },
    /* A pod set's node match (cycle_state_set_match): the topology row's
     * domains, consolidation's held node. */
    { "TopologyDomain", PT(FW_PT_FILTER), mk_topology_domain },
    /* DRA claims: PreEnqueue, Reserve and PreBind run in the
     * dynamic-resources row (dra/row.c). */
    { "DynamicResources", PT(FW_PT_PRE_FILTER) | PT(FW_PT_FILTER) | PT(FW_PT_RESERVE) | PT(FW_PT_PRE_BIND),
      mk_dynamic_resources },
    { "DefaultPreemption", PT(FW_PT_POST_FILTER), NULL },
    { "DefaultBinder", PT(FW_PT_BIND), NULL },
};
#define NREGISTRY ((int)(sizeof(REGISTRY) / sizeof(REGISTRY[0])))

static const fw_registry_entry_t *registry_find(const char *name)
{
    for (int i = 0; i < NREGISTRY; i++)
        if (strcmp(REGISTRY[i].name, name) == 0)
            return &REGISTRY[i];
    return NULL;
}

static const char *const POINT_NAMES[FW_NPOINTS] = {
    "queueSort", "preFilter", "filter",  "postFilter", "preScore", "score",
    "reserve",   "permit",    "preBind", "bind",       "postBind",
};

int fw_point_from_name(const char *name)
{
    for (int i = 0; i < FW_NPOINTS; i++)
        if (strcmp(POINT_NAMES[i], name) == 0)
            return i;
    return -1;
}

const char *fw_point_name(int point)
{
    return point >= 0 && point < FW_NPOINTS ? POINT_NAMES[point] : "?";
}

int fw_plugin_known(const char *name, int point)
{
    const fw_registry_entry_t *e = registry_find(name);
    if (e == NULL)
        return 0;
    return point >= 0 && point < FW_NPOINTS && (e->points & PT(point)) ? 1 : -1;
}

/* kube-scheduler v1.20's default plugins (algorithmprovider/registry.go with
 * the DefaultPodTopologySpread gate on, its v1.20 default, so no
 * SelectorSpread). Names not in REGISTRY (not built) are skipped. */
typedef struct default_ref {
    int point;
    const char *name;
    int weight;
} default_ref_t;

#define W_RESOURCES (-1) /* weights taken from the legacy fw_config_t fields */
#define W_BALANCED  (-2)
#define W_AFFINITY  (-3)
#define W_TAINT     (-4)

static const default_ref_t DEFAULTS[] = {
    { FW_PT_QUEUE_SORT, "PrioritySort", 0 },
    { FW_PT_PRE_FILTER, "NodeResourcesFit", 0 },
    { FW_PT_PRE_FILTER, "NodePorts", 0 },
    { FW_PT_PRE_FILTER, "PodTopologySpread", 0 },
    { FW_PT_PRE_FILTER, "InterPodAffinity", 0 },
    { FW_PT_PRE_FILTER, "VolumeBinding", 0 },
    { FW_PT_PRE_FILTER, "GpuSharing", 0 },
    { FW_PT_PRE_FILTER, "DynamicResources", 0 },
    { FW_PT_FILTER, "NodeUnschedulable", 0 },
    { FW_PT_FILTER, "NodeName", 0 },
    { FW_PT_FILTER, "TaintToleration", 0 },
    { FW_PT_FILTER, "NodeAffinity", 0 },
    { FW_PT_FILTER, "NodePorts", 0 },
    { FW_PT_FILTER, "NodeResourcesFit", 0 },
    { FW_PT_FILTER, "VolumeRestrictions", 0 },
    { FW_PT_FILTER, "EBSLimits", 0 },
    { FW_PT_FILTER, "GCEPDLimits", 0 },
    { FW_PT_FILTER, "NodeVolumeLimits", 0 },
    { FW_PT_FILTER, "AzureDiskLimits", 0 },
    { FW_PT_FILTER, "VolumeBinding", 0 },
    { FW_PT_FILTER, "VolumeZone", 0 },
    { FW_PT_FILTER, "PodTopologySpread", 0 },
    { FW_PT_FILTER, "InterPodAffinity", 0 },
    { FW_PT_FILTER, "GpuSharing", 0 },
    { FW_PT_FILTER, "DynamicResources", 0 },
    { FW_PT_FILTER, "TopologyDomain", 0 },
    { FW_PT_POST_FILTER, "DefaultPreemption", 0 },
    { FW_PT_PRE_SCORE, "InterPodAffinity", 0 },
    { FW_PT_PRE_SCORE, "PodTopologySpread", 0 },
    { FW_PT_PRE_SCORE, "TaintToleration", 0 },
    { FW_PT_PRE_SCORE, "GpuSharing", 0 },
    { FW_PT_SCORE, "NodeResourcesBalancedAllocation", W_BALANCED },
    { FW_PT_SCORE, "ImageLocality", 1 },
    { FW_PT_SCORE, "InterPodAffinity", 1 },
    /* kube's is NodeResourcesLeastAllocated; ai-scheduler follows
     * scoring.strategy (MostAllocated by default, as kube's
     * ClusterAutoscalerProvider). */
    { FW_PT_SCORE, NULL, W_RESOURCES },
    { FW_PT_SCORE, "NodeAffinity", W_AFFINITY },
    { FW_PT_SCORE, "NodePreferAvoidPods", 10000 },
    { FW_PT_SCORE, "PodTopologySpread", 2 },
    { FW_PT_SCORE, "TaintToleration", W_TAINT },
    /* Packing fractions outweighs the resource scorers (weights 1 + 1 + 3
     * per unit), so a fraction fills a shared GPU before opening one. */
    { FW_PT_SCORE, "GpuSharing", 5 },
    { FW_PT_RESERVE, "GpuSharing", 0 },
    { FW_PT_PRE_BIND, "GpuSharing", 0 },
    { FW_PT_RESERVE, "VolumeBinding", 0 },
    { FW_PT_PRE_BIND, "VolumeBinding", 0 },
    { FW_PT_RESERVE, "DynamicResources", 0 },
    { FW_PT_PRE_BIND, "DynamicResources", 0 },
    { FW_PT_BIND, "DefaultBinder", 0 },
};
#define NDEFAULTS ((int)(sizeof(DEFAULTS) / sizeof(DEFAULTS[0])))

/* One point's resolved list: kube's mergePluginSets (defaults minus the
 * disabled ones, or none with "*", then the enabled ones in order). */
typedef struct point_list {
    const char *name[FW_MAX_PLUGINS];
    int weight[FW_MAX_PLUGINS];
    int line[FW_MAX_PLUGINS];
    int n;
} point_list_t;

static int op_disabled(const fw_config_t *c, int point, const char *name)
{
    for (int i = 0; i < c->nplugin_ops; i++) {
        const fw_plugin_op_t *op = &c->plugin_ops[i];
        if (op->point == point && !op->enable && (strcmp(op->name, "*") == 0 || strcmp(op->name, name) == 0))
            return 1;
    }
    return 0;
}

static int default_weight(const fw_config_t *c, int w)
{
    switch (w) {
    case W_RESOURCES: return c->weight_resources;
    case W_BALANCED: return c->weight_balanced;
    case W_AFFINITY: return c->weight_node_affinity;
    case W_TAINT: return c->weight_taint_toleration;
    default: return w;
    }
}

static void resolve_point(const fw_config_t *c, int point, point_list_t *out)
{
    out->n = 0;
    for (int i = 0; i < NDEFAULTS && out->n < FW_MAX_PLUGINS; i++) {
        const default_ref_t *d = &DEFAULTS[i];
        const char *name = d->name;
        if (d->point != point)
            continue;
        if (name == NULL)
            name = c->strategy == SCORE_MOST_ALLOCATED ? "NodeResourcesMostAllocated" : "NodeResourcesLeastAllocated";
        if (op_disabled(c, point, name))
            continue;
        out->name[out->n] = name;
        out->weight[out->n] = default_weight(c, d->weight);
        out->line[out->n] = 0;
        out->n++;
    }
    for (int i = 0; i < c->nplugin_ops && out->n < FW_MAX_PLUGINS; i++) {
        const fw_plugin_op_t *op = &c->plugin_ops[i];
        if (op->point != point || !op->enable)
            continue;
        out->name[out->n] = op->name;
        out->weight[out->n] = op->weight > 0 ? op->weight : 1;
        out->line[out->n] = op->line;
        out->n++;
    }
}

int fw_config_check(const fw_config_t *c, char *err, size_t errlen, int *line)
{
    *line = 0;
    for (int i = 0; i < c->nplugin_ops; i++) {
        const fw_plugin_op_t *op = &c->plugin_ops[i];
        int k = strcmp(op->name, "*") == 0 && !op->enable ? 1 : fw_plugin_known(op->name, op->point);
        if (k <= 0) {
            *line = op->line;
            return util_errf(err, errlen, k == 0 ? "%s: unknown plugin \"%s\"" : "%s: plugin \"%s\" does not extend %s",
                             fw_point_name(op->point), op->name, fw_point_name(op->point));
        }
    }
    for (int p = 0; p < FW_NPOINTS; p++) {
        point_list_t l;
        resolve_point(c, p, &l);
        for (int i = 0; i < l.n; i++)
            for (int j = 0; j < i; j++)
                if (strcmp(l.name[i], l.name[j]) == 0) {
                    *line = l.line[i];
                    return util_errf(err, errlen,
                                     "%s: plugin \"%s\" is enabled twice (disable it first to change "
                                     "its weight)",
                                     fw_point_name(p), l.name[i]);
                }
        int built = 0;
        for (int i = 0; i < l.n; i++)
            built += registry_find(l.name[i]) != NULL;
        if (p == FW_PT_QUEUE_SORT && built != 1)
            return util_errf(err, errlen, "queueSort: exactly one plugin (PrioritySort) is needed");
        if (p == FW_PT_BIND && built < 1)
            return util_errf(err, errlen, "bind: at least one bind plugin (DefaultBinder) is needed");
    }
    return 0;
}

/* ---- configuration and construction ------------------------------------- */

static void add_weight(fw_config_t *c, const char *name, int weight)
{
    fw_resource_weight_t *w = &c->res_weights[c->nres_weights++];
    snprintf(w->name, sizeof(w->name), "%s", name);
    w->weight = weight;
}

void fw_config_default(fw_config_t *c)
{
    memset(c, 0, sizeof(*c));
    c->strategy = SCORE_MOST_ALLOCATED;
    add_weight(c, "cpu", 1);
    add_weight(c, "memory", 1);
    add_weight(c, RES_GPU, 3);
    c->weight_resources = 1;
    c->weight_balanced = 1;
    c->weight_node_affinity = 1;
    c->weight_taint_toleration = 1;
    c->percentage_of_nodes_to_score = 0;
}

/* The instance of a registered plugin, made on first use. */
static int instance(framework_t *fw, const char *name)
{
    for (int i = 0; i < fw->nplugins; i++)
        if (strcmp(fw->plugins[i].name, name) == 0)
            return i;
    const fw_registry_entry_t *e = registry_find(name);
    if (e == NULL || e->make == NULL || fw->nplugins >= FW_MAX_PLUGINS)
        return -1;
    fw_plugin_t *pl = &fw->plugins[fw->nplugins];
    e->make(pl, fw);
    pl->name = e->name; /* the registry's name, even if the plugin says another */
    pl->weight = 0;
    pl->index = fw->nplugins;
    return fw->nplugins++;
}

/* Instances are made in the order preFilter, filter, preScore, score, so
 * PreFilter runs in the profile's preFilter order; every instance's
 * pre_filter runs (it prepares what its Filter and Score read). Filters run
 * in the profile's filter order and the first failure decides the node's
 * reasons, as kube-scheduler without runAllFilters. */
framework_t *framework_new(const fw_config_t *c)
{
    framework_t *fw = util_xcalloc(1, sizeof(*fw));
    char err[256];
    int line;

    if (c)
        fw->cfg = *c;
    else
        fw_config_default(&fw->cfg);
    if (fw->cfg.nres_weights > 8)
        fw->cfg.nres_weights = 8;
    if (fw->cfg.nplugin_ops > FW_MAX_PLUGIN_OPS)
        fw->cfg.nplugin_ops = FW_MAX_PLUGIN_OPS;
    if (fw_config_check(&fw->cfg, err, sizeof(err), &line) != 0) {
        free(fw);
        return NULL;
    }
    static const int order[] = { FW_PT_PRE_FILTER, FW_PT_FILTER, FW_PT_PRE_SCORE, FW_PT_SCORE };
    for (size_t o = 0; o < sizeof(order) / sizeof(order[0]); o++) {
        point_list_t l;
        resolve_point(&fw->cfg, order[o], &l);
        for (int i = 0; i < l.n; i++) {
            int k = instance(fw, l.name[i]);
            if (k < 0)
                continue;
            if (order[o] == FW_PT_FILTER && fw->plugins[k].filter)
                fw->filter[fw->nfilter++] = k;
            if (order[o] == FW_PT_SCORE && fw->plugins[k].score && l.weight[i] > 0) {
                fw->plugins[k].weight = l.weight[i];
                fw->score[fw->nscore++] = k;
            }
        }
    }
    point_list_t pf;
    resolve_point(&fw->cfg, FW_PT_POST_FILTER, &pf);
    for (int i = 0; i < pf.n; i++)
        if (strcmp(pf.name[i], "DefaultPreemption") == 0)
            fw->preemption = 1;
    return fw;
}

void framework_free(framework_t *fw)
{
    free(fw);
}

int framework_runs(const framework_t *fw, int point, const char *name)
{
    point_list_t l;
    resolve_point(&fw->cfg, point, &l);
    for (int i = 0; i < l.n; i++)
        if (l.name[i] && strcmp(l.name[i], name) == 0)
            return 1;
    return 0;
}

void framework_set_base_cluster(framework_t *fw, const fw_cluster_t *cl)
{
    memset(&fw->base, 0, sizeof(fw->base));
    fw->has_base = cl != NULL;
    if (cl) {
        fw->base.volumes = cl->volumes;
        fw->base.dra = cl->dra;
    }
}

const fw_config_t *framework_config(const framework_t *fw)
{
    return &fw->cfg;
}

int framework_preemption_enabled(const framework_t *fw)
{
    return fw->preemption;
}

int framework_score_weight(const framework_t *fw, const char *name)
{
    for (int i = 0; i < fw->nscore; i++)
        if (strcmp(fw->plugins[fw->score[i]].name, name) == 0)
            return fw->plugins[fw->score[i]].weight;
    return 0;
}

int framework_filter_enabled(const framework_t *fw, const char *name)
{
    for (int i = 0; i < fw->nfilter; i++)
        if (strcmp(fw->plugins[fw->filter[i]].name, name) == 0)
            return 1;
    return 0;
}

void framework_set_owners(framework_t *fw, struct owners *o)
{
    fw->owners = o;
}

struct owners *framework_owners(const framework_t *fw)
{
    return fw->owners;
}

cycle_state_t *cycle_state_new(void)
{
    return util_xcalloc(1, sizeof(cycle_state_t));
}

static void cycle_state_clear_slots(cycle_state_t *cs)
{
    for (int i = 0; i < FW_MAX_PLUGINS; i++) {
        if (cs->slot[i] && cs->slot_free[i])
            cs->slot_free[i](cs->slot[i]);
        cs->slot[i] = NULL;
        cs->slot_free[i] = NULL;
    }
}

void cycle_state_free(cycle_state_t *cs)
{
    if (cs == NULL)
        return;
    cycle_state_clear_slots(cs);
    free(cs);
}

void cycle_state_set_cluster(cycle_state_t *cs, const fw_cluster_t *cl)
{
    cs->cluster = cl;
}

const fw_cluster_t *cycle_state_cluster(const cycle_state_t *cs)
{
    return cs->cluster;
}

void cycle_state_set_match(cycle_state_t *cs, const fw_node_match_t *m)
{
    cs->match = m;
}

const fw_node_match_t *cycle_state_match(const cycle_state_t *cs)
{
    return cs->match;
}

void fw_score_uniform(cycle_state_t *cs, const fw_plugin_t *pl, int64_t score)
{
    if (pl->index < 0 || pl->index >= FW_MAX_PLUGINS)
        return;
    cs->uniform_set[pl->index] = 1;
    cs->uniform[pl->index] = score;
}

void *cycle_state_slot(const cycle_state_t *cs, const fw_plugin_t *pl)
{
    return pl->index >= 0 && pl->index < FW_MAX_PLUGINS ? cs->slot[pl->index] : NULL;
}

void cycle_state_set_slot(cycle_state_t *cs, const fw_plugin_t *pl, void *data)
{
    if (pl->index < 0 || pl->index >= FW_MAX_PLUGINS)
        return;
    if (cs->slot[pl->index] && cs->slot_free[pl->index] && cs->slot[pl->index] != data)
        cs->slot_free[pl->index](cs->slot[pl->index]);
    cs->slot[pl->index] = data;
    cs->slot_free[pl->index] = pl->state_free;
}

/* ---- extension points ---------------------------------------------------- */

int framework_pre_filter(framework_t *fw, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    fw_status_t local;

    if (st == NULL)
        st = &local;
    fw_status_reset(st);
    /* Keep the cluster view and the caller's node match; drop what the
     * last PreFilter computed. */
    const fw_cluster_t *cl = cs->cluster ? cs->cluster : fw->has_base ? &fw->base : NULL;
    const fw_node_match_t *match = cs->match;
    cycle_state_clear_slots(cs);
    memset(cs, 0, sizeof(*cs));
    cs->cluster = cl;
    cs->match = match;
    cs->pod = pod;
    for (int i = 0; i < fw->nplugins; i++) {
        const fw_plugin_t *pl = &fw->plugins[i];
        if (pl->pre_filter && pl->pre_filter(pl, cs, pod, st) != FW_SUCCESS) {
            if (st->code == FW_SUCCESS)
                fw_status_add(st, FW_ERROR, NULL);
            st->plugin = pl->name;
            return st->code;
        }
    }
    cs->prefiltered = 1;
    return FW_SUCCESS;
}

void framework_add_pod(framework_t *fw, cycle_state_t *cs, const pod_t *pod, const pod_t *other, const node_info_t *ni)
{
    if (!cs->prefiltered || cs->pod != pod)
        return;
    for (int i = 0; i < fw->nplugins; i++)
        if (fw->plugins[i].add_pod)
            fw->plugins[i].add_pod(&fw->plugins[i], cs, pod, other, ni);
}

void framework_remove_pod(framework_t *fw, cycle_state_t *cs, const pod_t *pod, const pod_t *other,
                          const node_info_t *ni)
{
    if (!cs->prefiltered || cs->pod != pod)
        return;
    for (int i = 0; i < fw->nplugins; i++)
        if (fw->plugins[i].remove_pod)
            fw->plugins[i].remove_pod(&fw->plugins[i], cs, pod, other, ni);
}

/* Stops at the first failing plugin, as kube-scheduler does by default
 * (runAllFilters off). Filters are called with a state made for this pod:
 * PreFilter runs here if the caller did not run it (or ran it for another
 * pod), and a NULL cs gets a state on the stack. */
int framework_filter(framework_t *fw, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    fw_status_t local;
    cycle_state_t tmp;

    if (st == NULL)
        st = &local;
    if (cs == NULL) {
        memset(&tmp, 0, sizeof(tmp));
        cs = &tmp;
    }
    if (!cs->prefiltered || cs->pod != pod) {
        int rc = framework_pre_filter(fw, cs, pod, st);
        if (rc != FW_SUCCESS) {
            if (cs == &tmp)
                cycle_state_clear_slots(&tmp);
            return rc;
        }
    }
    fw_status_reset(st);
    if (ni->node == NULL) {
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, FW_REASON_UNKNOWN_CONDITION);
        return st->code;
    }
    for (int i = 0; i < fw->nfilter; i++) {
        const fw_plugin_t *pl = &fw->plugins[fw->filter[i]];
        int rc = pl->filter(pl, cs, pod, ni, st);
        if (rc != FW_SUCCESS) {
            if (st->code == FW_SUCCESS) /* a plugin that forgot its reason */
                fw_status_add(st, (fw_code_t)rc, NULL);
            st->plugin = pl->name;
            if (cs == &tmp)
                cycle_state_clear_slots(&tmp);
            return st->code;
        }
    }
    if (cs == &tmp)
        cycle_state_clear_slots(&tmp);
    return FW_SUCCESS;
}

/* One scratch vector for all plugins: raw scores, normalized in place, then
 * weighted into out. */
void framework_score(framework_t *fw, cycle_state_t *cs, const pod_t *pod, node_info_t *const *nodes, int n,
                     int64_t *out)
{
    int64_t stackbuf[256], *buf;
    cycle_state_t tmp;

    if (n <= 0)
        return;
    if (cs == NULL) {
        memset(&tmp, 0, sizeof(tmp));
        cs = &tmp;
        framework_pre_filter(fw, cs, pod, NULL);
    }
    buf = n <= (int)(sizeof(stackbuf) / sizeof(stackbuf[0])) ? stackbuf : util_xmalloc(sizeof(int64_t) * (size_t)n);
    memset(out, 0, sizeof(int64_t) * (size_t)n);
    for (int p = 0; p < fw->nscore; p++) {
        const fw_plugin_t *pl = &fw->plugins[fw->score[p]];
        cs->uniform_set[pl->index] = 0;
        if (pl->pre_score)
            pl->pre_score(pl, cs, pod, nodes, n);
    }
    for (int p = 0; p < fw->nscore; p++) {
        const fw_plugin_t *pl = &fw->plugins[fw->score[p]];
        if (cs->uniform_set[pl->index]) {
            for (int i = 0; i < n; i++)
                out[i] += (int64_t)pl->weight * cs->uniform[pl->index];
            continue;
        }
        for (int i = 0; i < n; i++)
            buf[i] = pl->score(pl, cs, pod, nodes[i]);
        if (pl->normalize)
            pl->normalize(pl, cs, pod, buf, n);
        for (int i = 0; i < n; i++)
            out[i] += (int64_t)pl->weight * buf[i];
    }
    if (buf != stackbuf)
        free(buf);
    if (cs == &tmp)
        cycle_state_clear_slots(&tmp);
}

/* framework_score's loop, each plugin's share kept apart: only for a
 * decision record, so framework_score stays as it is. */
int framework_score_explain(framework_t *fw, cycle_state_t *cs, const pod_t *pod, node_info_t *const *nodes, int n,
                            int64_t *out, int64_t *per_plugin, const char **names, int maxp)
{
    if (n <= 0)
        return 0;
    int64_t *buf = util_xcalloc((size_t)n, sizeof(*buf));
    int np = 0;
    memset(out, 0, sizeof(int64_t) * (size_t)n);
    for (int p = 0; p < fw->nscore; p++) {
        const fw_plugin_t *pl = &fw->plugins[fw->score[p]];
        cs->uniform_set[pl->index] = 0;
        if (pl->pre_score)
            pl->pre_score(pl, cs, pod, nodes, n);
    }
    for (int p = 0; p < fw->nscore; p++) {
        const fw_plugin_t *pl = &fw->plugins[fw->score[p]];
        if (cs->uniform_set[pl->index]) {
            for (int i = 0; i < n; i++)
                buf[i] = cs->uniform[pl->index];
        } else {
            for (int i = 0; i < n; i++)
                buf[i] = pl->score(pl, cs, pod, nodes[i]);
            if (pl->normalize)
                pl->normalize(pl, cs, pod, buf, n);
        }
        for (int i = 0; i < n; i++) {
            out[i] += (int64_t)pl->weight * buf[i];
            if (np < maxp)
                per_plugin[np * n + i] = (int64_t)pl->weight * buf[i];
        }
        if (np < maxp)
            names[np++] = pl->name;
    }
    free(buf);
    return np;
}

/* kube-scheduler's numFeasibleNodesToFind: small clusters are searched
 * whole; larger ones stop after an adaptive share (50% minus 1% per 125
 * nodes, at least 5%), never fewer than 100 nodes. */
int framework_num_feasible_to_find(const framework_t *fw, int nnodes)
{
    const int min_nodes = 100, min_pct = 5;
    int pct = fw->cfg.percentage_of_nodes_to_score;
    int64_t num;

    if (nnodes < min_nodes || pct >= 100)
        return nnodes;
    if (pct <= 0) {
        pct = 50 - nnodes / 125;
        if (pct < min_pct)
            pct = min_pct;
    }
    num = (int64_t)nnodes * pct / 100;
    if (num < min_nodes)
        return min_nodes;
    return (int)num;
}
