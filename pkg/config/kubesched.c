/* kubesched.c -- KubeSchedulerConfiguration files of
 * kubescheduler.config.k8s.io/v1 (and v1beta3, the same shape) read as kube
 * 1.30-1.35 reads them, into ai-scheduler profiles.
 *
 * kube's sources followed (pkg/scheduler/apis/config/v1 and the framework):
 *  - default_plugins.go getDefaultPlugins: the default set is one multiPoint
 *    list (TaintToleration 3, NodeAffinity 2, PodTopologySpread 2,
 *    InterPodAffinity 2, NodeResourcesFit, BalancedAllocation and
 *    ImageLocality 1), DynamicResources before DefaultPreemption (1.34 GA);
 *  - default_plugins.go mergePluginSet: a profile's set is merged into the
 *    default one per point (disabled or "*" drop defaults, an enabled default
 *    is replaced in place, the other enabled ones are appended);
 *  - runtime/framework.go expandMultiPointPlugins: each multiPoint plugin is
 *    added to every point it implements unless that point disables it (or
 *    "*"); a plugin also enabled at the point keeps that entry (first), and
 *    getScoreWeights: the score point's weight wins over multiPoint's;
 *  - defaults.go / validation_pluginargs.go: the plugin args' defaults
 *    (NodeResourcesFit LeastAllocated cpu 1 memory 1, PodTopologySpread
 *    System) and checks; strict decoding refuses unknown fields.
 * The result is written as ai-scheduler plugin operations: every point's
 * defaults disabled ("*"), then the expanded list enabled in order, with
 * NodeResourcesFit's score as the Least/Most allocated scorer its
 * scoringStrategy names.
 *
 * v1beta1 files (kube 1.20-1.21) share the top level's readers; their
 * profiles are AiSchedulerConfiguration's shape and rules (v1.20's), so
 * config.c's cfg_load_profiles reads them, with ks_v1beta1_args for the
 * args only kube's v1beta1 has. */
#include "config/kubesched.h"

#include <stdlib.h>
#include <string.h>
#include "util/util.h"

/* A profile's plugin sets: multiPoint, preEnqueue, then ai-scheduler's
 * points (fw_point_t) shifted by two. */
#define KS_MULTI       0
#define KS_PRE_ENQUEUE 1
#define KS_SET(pt)     ((pt) + 2)
#define KS_NSETS       (FW_NPOINTS + 2)
#define KS_MAX_ENTRIES 32

#define KB(set) (1u << (set))
#define KPF     KB(KS_SET(FW_PT_PRE_FILTER))
#define KF      KB(KS_SET(FW_PT_FILTER))
#define KPOSTF  KB(KS_SET(FW_PT_POST_FILTER))
#define KPS     KB(KS_SET(FW_PT_PRE_SCORE))
#define KS      KB(KS_SET(FW_PT_SCORE))
#define KR      KB(KS_SET(FW_PT_RESERVE))
#define KPB     KB(KS_SET(FW_PT_PRE_BIND))

typedef struct ks_entry {
    char name[FW_PLUGIN_NAME_LEN];
    int weight; /* 0: not set */
    int line;
} ks_entry_t;

typedef struct ks_set {
    ks_entry_t en[KS_MAX_ENTRIES], dis[KS_MAX_ENTRIES];
    int nen, ndis;
} ks_set_t;

typedef struct ks_profile {
    sched_profile_config_t *p;
    sched_config_t *c;
    const yaml_node_t *at; /* the profile's node, for messages (NULL: kube's default profile) */
    ks_set_t sets[KS_NSETS];
    char configured[KS_MAX_ENTRIES][FW_PLUGIN_NAME_LEN]; /* pluginConfig names seen */
    int nconfigured;
} ks_profile_t;

/* kube's plugins (and ai-scheduler's own two) with the points they
 * implement in kube 1.33-1.35. SchedulingGates is implied: ai-scheduler
 * always keeps gated pods out of scheduling. DynamicResources' PreFilter
 * and Filter are the framework's plugin; its PreEnqueue, Reserve and
 * PreBind run in the dynamic-resources row (dra/row.c). */
typedef struct ks_plugin {
    const char *name;
    unsigned sets;
} ks_plugin_t;

static const ks_plugin_t KS_PLUGINS[] = {
    { "SchedulingGates", KB(KS_PRE_ENQUEUE) },
    { "PrioritySort", KB(KS_SET(FW_PT_QUEUE_SORT)) },
    { "NodeUnschedulable", KF },
    { "NodeName", KF },
    { "TaintToleration", KF | KPS | KS },
    { "NodeAffinity", KPF | KF | KPS | KS },
    { "NodePorts", KPF | KF },
    { "NodeResourcesFit", KPF | KF | KPS | KS },
    { "VolumeRestrictions", KPF | KF },
    { "EBSLimits", KF },
    { "GCEPDLimits", KF },
    { "NodeVolumeLimits", KPF | KF },
    { "AzureDiskLimits", KF },
    { "VolumeBinding", KPF | KF | KPS | KS | KR | KPB },
    { "VolumeZone", KPF | KF },
    { "PodTopologySpread", KPF | KF | KPS | KS },
    { "InterPodAffinity", KPF | KF | KPS | KS },
    { "GpuSharing", KPF | KF | KPS | KS | KR | KPB },
    { "TopologyDomain", KF },
    { "DynamicResources", KB(KS_PRE_ENQUEUE) | KPF | KF | KPOSTF | KR | KPB },
    { "DefaultPreemption", KPOSTF },
    { "NodeResourcesBalancedAllocation", KPS | KS },
    { "ImageLocality", KS },
    { "DefaultBinder", KB(KS_SET(FW_PT_BIND)) },
};
#define KS_NPLUGINS ((int)(sizeof KS_PLUGINS / sizeof KS_PLUGINS[0]))

/* v1's default multiPoint set in kube's order; ai-scheduler's GpuSharing
 * (fractions, weight 5 as in its v1.20 set) and TopologyDomain (gangs)
 * follow InterPodAffinity as they do there. */
static const ks_entry_t KS_DEFAULTS[] = {
    { "SchedulingGates", 0, 0 },    { "PrioritySort", 0, 0 },
    { "NodeUnschedulable", 0, 0 },  { "NodeName", 0, 0 },
    { "TaintToleration", 3, 0 },    { "NodeAffinity", 2, 0 },
    { "NodePorts", 0, 0 },          { "NodeResourcesFit", 1, 0 },
    { "VolumeRestrictions", 0, 0 }, { "EBSLimits", 0, 0 },
    { "GCEPDLimits", 0, 0 },        { "NodeVolumeLimits", 0, 0 },
    { "AzureDiskLimits", 0, 0 },    { "VolumeBinding", 0, 0 },
    { "VolumeZone", 0, 0 },         { "PodTopologySpread", 2, 0 },
    { "InterPodAffinity", 2, 0 },   { "GpuSharing", 5, 0 },
    { "TopologyDomain", 0, 0 },     { "DynamicResources", 0, 0 },
    { "DefaultPreemption", 0, 0 },  { "NodeResourcesBalancedAllocation", 1, 0 },
    { "ImageLocality", 1, 0 },      { "DefaultBinder", 0, 0 },
};
#define KS_NDEFAULTS ((int)(sizeof KS_DEFAULTS / sizeof KS_DEFAULTS[0]))

/* Plugins kube-scheduler removed: a v1 file naming one fails in kube
 * ("plugin ... does not exist"), so it fails here, with what replaced it. */
static const struct {
    const char *name, *instead;
} KS_REMOVED[] = {
    { "SelectorSpread", "PodTopologySpread (its System default constraints)" },
    { "NodePreferAvoidPods", "nothing (the node annotation is no longer read)" },
    { "ServiceAffinity", "InterPodAffinity" },
    { "NodeLabel", "NodeAffinity" },
    { "NodeResourcesLeastAllocated", "NodeResourcesFit args scoringStrategy.type LeastAllocated" },
    { "NodeResourcesMostAllocated", "NodeResourcesFit args scoringStrategy.type MostAllocated" },
    { "RequestedToCapacityRatio", "NodeResourcesFit args scoringStrategy.type RequestedToCapacityRatio" },
    { "CinderLimits", "NodeVolumeLimits" },
};

static const char *const KS_SET_NAMES[KS_NSETS] = {
    "multiPoint", "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore",
    "score",      "reserve",    "permit",    "preBind",   "bind",   "postBind",
};

#define UNKNOWN(section) cfg_fail(l, kn, "unknown field \"%s\" in %s (kube's strict decoding refuses it)", key, section)

static const ks_plugin_t *ks_plugin(const char *name)
{
    for (int i = 0; i < KS_NPLUGINS; i++)
        if (!strcmp(KS_PLUGINS[i].name, name))
            return &KS_PLUGINS[i];
    return NULL;
}

/* 0 when name is a plugin of the v1 API; else -1 with why not. */
static int ks_check_name(cfg_loader_t *l, const yaml_node_t *at, const char *where, const char *name)
{
    if (ks_plugin(name))
        return 0;
    for (size_t i = 0; i < sizeof KS_REMOVED / sizeof KS_REMOVED[0]; i++)
        if (!strcmp(KS_REMOVED[i].name, name))
            return cfg_fail(l, at,
                            "%s: plugin \"%s\" was removed from kube-scheduler and kubescheduler.config.k8s.io/v1 "
                            "refuses it; use %s",
                            where, name, KS_REMOVED[i].instead);
    return cfg_fail(l, at, "%s: plugin \"%s\" does not exist", where, name);
}

/* ---- plugins: sets per point -------------------------------------------- */

typedef struct ks_set_ctx {
    ks_set_t *set;
    int which; /* KS_MULTI, KS_PRE_ENQUEUE or KS_SET(point) */
} ks_set_ctx_t;

static int ks_add_entry(cfg_loader_t *l, const yaml_node_t *item, int enable, const cfg_plugin_item_t *it, void *ctx)
{
    ks_set_ctx_t *s = ctx;
    char where[64];
    snprintf(where, sizeof where, "plugins.%s.%s", KS_SET_NAMES[s->which], enable ? "enabled" : "disabled");
    int star = !strcmp(it->name, "*");
    if (star && enable)
        return cfg_fail(l, item, "%s: \"*\" only disables", where);
    if (!star && ks_check_name(l, item, where, it->name) < 0)
        return -1;
    if (!star && s->which != KS_MULTI && !(ks_plugin(it->name)->sets & KB(s->which)))
        return cfg_fail(l, item, "%s: plugin \"%s\" does not extend %s", where, it->name, KS_SET_NAMES[s->which]);
    if (!enable && !strcmp(it->name, "SchedulingGates"))
        return cfg_fail(l, item,
                        "%s: SchedulingGates cannot be disabled: ai-scheduler always keeps pods with "
                        "spec.schedulingGates out of scheduling",
                        where);
    int *n = enable ? &s->set->nen : &s->set->ndis;
    if (*n == KS_MAX_ENTRIES)
        return cfg_fail(l, item, "%s: at most %d entries", where, KS_MAX_ENTRIES);
    ks_entry_t *e = &(enable ? s->set->en : s->set->dis)[(*n)++];
    memset(e, 0, sizeof *e);
    strcpy(e->name, it->name);
    e->weight = it->weight;
    e->line = (int)item->start_mark.line + 1;
    return 0;
}

static int ks_on_set(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    return cfg_plugin_set(l, key, kn, vn, KS_SET_NAMES[((ks_set_ctx_t *)ctx)->which], ks_add_entry, ctx);
}

static int ks_on_plugins(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    ks_profile_t *kp = ctx;
    for (int i = 0; i < KS_NSETS; i++)
        if (!strcmp(key, KS_SET_NAMES[i])) {
            ks_set_ctx_t s = { &kp->sets[i], i };
            char what[64];
            snprintf(what, sizeof what, "plugins.%s", key);
            return cfg_each_pair(l, vn, what, ks_on_set, &s);
        }
    return UNKNOWN("profiles.plugins");
}

/* ---- merge and expansion ------------------------------------------------ */

static int ks_has(const ks_entry_t *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            return 1;
    return 0;
}

static const ks_entry_t *ks_find(const ks_entry_t *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            return &v[i];
    return NULL;
}

/* mergePluginSet of the multiPoint defaults and the profile's multiPoint:
 * out gets the enabled list (the point's own disabled list stays in mp). */
static int ks_merge_multi(const ks_set_t *mp, ks_entry_t *out)
{
    int n = 0, star = ks_has(mp->dis, mp->ndis, "*");
    int replaced[KS_MAX_ENTRIES] = { 0 };
    for (int i = 0; i < KS_NDEFAULTS && !star; i++) {
        const ks_entry_t *d = &KS_DEFAULTS[i];
        if (ks_has(mp->dis, mp->ndis, d->name))
            continue;
        const ks_entry_t *custom = ks_find(mp->en, mp->nen, d->name);
        if (custom)
            replaced[custom - mp->en] = 1;
        out[n++] = custom ? *custom : *d;
    }
    for (int i = 0; i < mp->nen; i++)
        if (!replaced[i])
            out[n++] = mp->en[i];
    return n;
}

/* An expanded point lists each plugin once (duplicates are refused before),
 * so it never holds more than every plugin there is. */
typedef struct ks_list {
    ks_entry_t e[KS_MAX_ENTRIES + KS_NDEFAULTS];
    int n;
} ks_list_t;
_Static_assert(KS_NPLUGINS <= KS_MAX_ENTRIES + KS_NDEFAULTS, "ks_list_t holds every plugin");

/* expandMultiPointPlugins for one point: the plugins both enabled at the
 * point and by multiPoint first (in the point's order), then the
 * multiPoint-only ones, then the rest of the point's own. */
static int ks_expand(cfg_loader_t *l, const ks_profile_t *kp, const ks_entry_t *multi, int nmulti, int set,
                     ks_list_t *out)
{
    const ks_set_t *pt = &kp->sets[set];
    out->n = 0;
    for (int i = 0; i < pt->nen; i++)
        if (ks_has(pt->en, i, pt->en[i].name))
            return cfg_fail(l, kp->at, "profiles: plugins.%s: plugin \"%s\" is enabled twice", KS_SET_NAMES[set],
                            pt->en[i].name);
    if (ks_has(pt->dis, pt->ndis, "*")) {
        memcpy(out->e, pt->en, sizeof pt->en[0] * (size_t)pt->nen);
        out->n = pt->nen;
        return 0;
    }
    ks_entry_t only[KS_MAX_ENTRIES + KS_NDEFAULTS];
    int nonly = 0;
    for (int i = 0; i < nmulti; i++) {
        const ks_plugin_t *pl = ks_plugin(multi[i].name);
        if (!(pl->sets & KB(set)) || ks_has(pt->dis, pt->ndis, pl->name) || ks_has(pt->en, pt->nen, pl->name))
            continue;
        if (ks_has(only, nonly, pl->name))
            return cfg_fail(l, kp->at, "profiles: plugin \"%s\" already registered at %s (multiPoint names it twice)",
                            pl->name, KS_SET_NAMES[set]);
        only[nonly++] = multi[i];
    }
    for (int i = 0; i < pt->nen; i++)
        if (ks_has(multi, nmulti, pt->en[i].name))
            out->e[out->n++] = pt->en[i];
    for (int i = 0; i < nonly; i++)
        out->e[out->n++] = only[i];
    for (int i = 0; i < pt->nen; i++)
        if (!ks_has(multi, nmulti, pt->en[i].name))
            out->e[out->n++] = pt->en[i];
    return 0;
}

static int ks_op(cfg_loader_t *l, const ks_profile_t *kp, fw_config_t *fw, int point, int enable, const char *name,
                 int weight, int line)
{
    if (fw->nplugin_ops >= FW_MAX_PLUGIN_OPS)
        return cfg_fail(l, kp->at, "profiles: more than %d plugin entries in all", FW_MAX_PLUGIN_OPS);
    fw_plugin_op_t *op = &fw->plugin_ops[fw->nplugin_ops++];
    memset(op, 0, sizeof *op);
    op->point = point;
    op->enable = enable;
    op->weight = weight;
    op->line = line;
    snprintf(op->name, sizeof op->name, "%s", name);
    return 0;
}

/* The ai-scheduler plugin that plays kube's plugin at a point, or NULL when
 * ai-scheduler has nothing to run there (kube's PreScore of NodeAffinity
 * only precomputes what ai-scheduler's Score computes itself). */
static const char *ks_ai_name(const fw_config_t *fw, const char *name, int point)
{
    if (point == FW_PT_SCORE && !strcmp(name, "NodeResourcesFit"))
        return fw->strategy == SCORE_MOST_ALLOCATED ? "NodeResourcesMostAllocated" : "NodeResourcesLeastAllocated";
    return fw_plugin_known(name, point) == 1 ? name : NULL;
}

/* The score weight: the score point's entry, else multiPoint's; 0 is 1. */
static int ks_weight(const ks_profile_t *kp, const ks_entry_t *multi, int nmulti, const char *name)
{
    const ks_set_t *sc = &kp->sets[KS_SET(FW_PT_SCORE)];
    const ks_entry_t *e = ks_find(sc->en, sc->nen, name);
    if (!e)
        e = ks_find(multi, nmulti, name);
    return e && e->weight > 0 ? e->weight : 1;
}

static int ks_translate(cfg_loader_t *l, ks_profile_t *kp)
{
    fw_config_t *fw = &kp->p->fw;
    ks_entry_t multi[KS_MAX_ENTRIES + KS_NDEFAULTS];
    int nmulti = ks_merge_multi(&kp->sets[KS_MULTI], multi);
    for (int i = 0; i < nmulti; i++)
        if (ks_has(multi, i, multi[i].name))
            return cfg_fail(l, kp->at, "profiles: plugins.multiPoint: plugin \"%s\" is enabled twice", multi[i].name);
    fw->nplugin_ops = 0;
    for (int pt = 0; pt < FW_NPOINTS; pt++) {
        ks_list_t list;
        if (ks_expand(l, kp, multi, nmulti, KS_SET(pt), &list) < 0 || ks_op(l, kp, fw, pt, 0, "*", 0, 0) < 0)
            return -1;
        for (int i = 0; i < list.n; i++) {
            const char *ai = ks_ai_name(fw, list.e[i].name, pt);
            int w = pt == FW_PT_SCORE ? ks_weight(kp, multi, nmulti, list.e[i].name) : 0;
            if (ai && ks_op(l, kp, fw, pt, 1, ai, w, list.e[i].line) < 0)
                return -1;
        }
    }
    return 0;
}

/* ---- pluginConfig ------------------------------------------------------- */

typedef struct ks_args_ctx {
    sched_config_t *c;
    sched_profile_config_t *p;
    const char *plugin;
    int v1beta1;                  /* a v1beta1 file: v1.20's fields only */
    int have_type;                /* NodeResourcesFit scoringStrategy.type */
    cfg_spread_ctx_t spread;      /* PodTopologySpread */
    fw_config_t balanced;         /* NodeResourcesBalancedAllocation resources */
    const yaml_node_t *resources; /* where balanced's list is */
} ks_args_ctx_t;

/* Args may carry their own apiVersion and kind (<Plugin>Args). */
static int ks_args_meta(cfg_loader_t *l, const char *key, const yaml_node_t *vn, const ks_args_ctx_t *a)
{
    const char *v = cfg_scalar(l, vn, key);
    if (!v)
        return -1;
    char kind[FW_PLUGIN_NAME_LEN + 8];
    snprintf(kind, sizeof kind, "%sArgs", a->plugin);
    if (!strcmp(key, "kind") ? strcmp(v, kind) != 0 : strncmp(v, KUBESCHED_GROUP, strlen(KUBESCHED_GROUP)) != 0)
        return cfg_fail(l, vn, "%s args: %s \"%s\" does not fit (%s)", a->plugin, key, v,
                        key[0] == 'k' ? kind : KUBESCHED_GROUP "v1");
    return 0;
}

static int ks_is_meta(const char *key)
{
    return !strcmp(key, "apiVersion") || !strcmp(key, "kind");
}

/* An empty list or mapping (or nothing): kube's zero value. */
static int ks_empty(const yaml_node_t *n)
{
    if (cfg_is_null(n))
        return 1;
    if (n->type == YAML_SEQUENCE_NODE)
        return n->data.sequence.items.top == n->data.sequence.items.start;
    if (n->type == YAML_MAPPING_NODE)
        return n->data.mapping.pairs.top == n->data.mapping.pairs.start;
    return 0;
}

static int ks_on_strategy(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    ks_args_ctx_t *a = ctx;
    fw_config_t *fw = &a->p->fw;
    if (!strcmp(key, "type")) {
        const char *v = cfg_scalar(l, vn, "scoringStrategy.type");
        if (!v)
            return -1;
        a->have_type = 1;
        if (!strcmp(v, "LeastAllocated") || !strcmp(v, "MostAllocated")) {
            fw->strategy = v[0] == 'M' ? SCORE_MOST_ALLOCATED : SCORE_LEAST_ALLOCATED;
            return 0;
        }
        if (!strcmp(v, "RequestedToCapacityRatio"))
            return cfg_fail(l, vn,
                            "NodeResourcesFit: scoringStrategy.type RequestedToCapacityRatio is not supported by "
                            "ai-scheduler (LeastAllocated or MostAllocated)");
        return cfg_fail(l, vn,
                        "NodeResourcesFit: scoringStrategy.type \"%s\" is not LeastAllocated, MostAllocated "
                        "or RequestedToCapacityRatio",
                        v);
    }
    if (!strcmp(key, "resources")) {
        if (cfg_is_null(vn))
            return 0;
        a->p->has_resources = 1;
        return cfg_load_resources(l, vn, fw);
    }
    if (!strcmp(key, "requestedToCapacityRatio"))
        return ks_empty(vn) ? 0
                            : cfg_fail(l, vn,
                                       "NodeResourcesFit: scoringStrategy.requestedToCapacityRatio is not supported "
                                       "by ai-scheduler");
    return UNKNOWN("NodeResourcesFit args scoringStrategy");
}

static int ks_on_fit(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    ks_args_ctx_t *a = ctx;
    if (ks_is_meta(key))
        return ks_args_meta(l, key, vn, a);
    if (!strcmp(key, "ignoredResources") || !strcmp(key, "ignoredResourceGroups"))
        return ks_empty(vn) ? 0
                            : cfg_fail(l, vn,
                                       "NodeResourcesFit: %s is not supported by ai-scheduler (every "
                                       "requested resource is checked)",
                                       key);
    if (!strcmp(key, "scoringStrategy") && !a->v1beta1) {
        if (cfg_is_null(vn))
            return 0;
        if (cfg_each_pair(l, vn, "NodeResourcesFit args scoringStrategy", ks_on_strategy, a) < 0)
            return -1;
        return a->have_type ? 0 : cfg_fail(l, vn, "NodeResourcesFit: scoringStrategy.type is required");
    }
    return UNKNOWN("NodeResourcesFit args");
}

static int ks_on_balanced(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    ks_args_ctx_t *a = ctx;
    if (ks_is_meta(key))
        return ks_args_meta(l, key, vn, a);
    if (!strcmp(key, "resources")) {
        a->resources = vn;
        return cfg_is_null(vn) ? 0 : cfg_load_resources(l, vn, &a->balanced);
    }
    return UNKNOWN("NodeResourcesBalancedAllocation args");
}

static int ks_on_spread(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    ks_args_ctx_t *a = ctx;
    if (ks_is_meta(key))
        return ks_args_meta(l, key, vn, a);
    return cfg_spread_args(l, key, kn, vn, &a->spread);
}

/* A field ai-scheduler has one value for: the same value passes, another
 * is refused (it would change decisions). */
static int ks_fixed_int(cfg_loader_t *l, const yaml_node_t *vn, const char *what, int want, const char *why)
{
    int v;
    if (cfg_get_int(l, vn, what, -1000000, 1000000, &v) < 0)
        return -1;
    return v == want ? 0 : cfg_fail(l, vn, "%s: %d is not supported by ai-scheduler (%d only: %s)", what, v, want, why);
}

static int ks_on_ipa(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    ks_args_ctx_t *a = ctx;
    if (ks_is_meta(key))
        return ks_args_meta(l, key, vn, a);
    if (!strcmp(key, "hardPodAffinityWeight"))
        return ks_fixed_int(l, vn, "InterPodAffinity.hardPodAffinityWeight", 1, "kube's default");
    if (!strcmp(key, "ignorePreferredTermsOfExistingPods") && !a->v1beta1) {
        int b;
        if (cfg_get_bool(l, vn, "InterPodAffinity.ignorePreferredTermsOfExistingPods", &b) < 0)
            return -1;
        return b ? cfg_fail(l, vn,
                            "InterPodAffinity.ignorePreferredTermsOfExistingPods: true is not supported by "
                            "ai-scheduler (existing pods' preferred terms always count)")
                 : 0;
    }
    return UNKNOWN("InterPodAffinity args");
}

static int ks_on_node_affinity(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn,
                               void *ctx)
{
    ks_args_ctx_t *a = ctx;
    if (ks_is_meta(key))
        return ks_args_meta(l, key, vn, a);
    if (!strcmp(key, "addedAffinity"))
        return ks_empty(vn) ? 0
                            : cfg_fail(l, vn,
                                       "NodeAffinity.addedAffinity is not supported by ai-scheduler; put "
                                       "the affinity in the pods (or a mutating webhook) instead");
    return UNKNOWN("NodeAffinity args");
}

static int ks_on_preemption(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    ks_args_ctx_t *a = ctx;
    if (ks_is_meta(key))
        return ks_args_meta(l, key, vn, a);
    if (!strcmp(key, "minCandidateNodesPercentage"))
        return ks_fixed_int(l, vn, "DefaultPreemption.minCandidateNodesPercentage", 10,
                            "kube's default; ai-scheduler looks at every node");
    if (!strcmp(key, "minCandidateNodesAbsolute"))
        return ks_fixed_int(l, vn, "DefaultPreemption.minCandidateNodesAbsolute", 100,
                            "kube's default; ai-scheduler looks at every node");
    return UNKNOWN("DefaultPreemption args");
}

static int ks_on_volume_binding(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn,
                                void *ctx)
{
    ks_args_ctx_t *a = ctx;
    if (ks_is_meta(key))
        return ks_args_meta(l, key, vn, a);
    /* One timeout for the scheduler: a later profile's value wins. */
    if (!strcmp(key, "bindTimeoutSeconds"))
        return cfg_get_int(l, vn, "VolumeBinding.bindTimeoutSeconds", 1, 86400, &a->c->sched.volume_bind_timeout_s);
    if (!strcmp(key, "shape"))
        return ks_empty(vn) ? 0
                            : cfg_fail(l, vn,
                                       "VolumeBinding.shape (StorageCapacityScoring) is not supported by "
                                       "ai-scheduler");
    return UNKNOWN("VolumeBinding args");
}

/* DynamicResources' filterTimeout is read and has nothing to time: the
 * allocator's search is bounded by steps (dra/alloc.h), not by a clock. */
static int ks_on_dra(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    ks_args_ctx_t *a = ctx;
    if (ks_is_meta(key))
        return ks_args_meta(l, key, vn, a);
    if (!strcmp(key, "filterTimeout"))
        return cfg_scalar(l, vn, "DynamicResources.filterTimeout") ? 0 : -1;
    return UNKNOWN("DynamicResources args");
}

/* Plugins without args take none; kube refuses fields there too. */
static int ks_on_no_args(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    ks_args_ctx_t *a = ctx;
    if (ks_is_meta(key))
        return ks_args_meta(l, key, vn, a);
    return cfg_fail(l, kn, "%s takes no args (unknown field \"%s\")", a->plugin, key);
}

/* A plugin's args reader. */
typedef struct ks_args_reader {
    const char *plugin;
    cfg_pair_fn fn;
} ks_args_reader_t;

static const ks_args_reader_t KS_ARGS[] = {
    { "NodeResourcesFit", ks_on_fit },         { "NodeResourcesBalancedAllocation", ks_on_balanced },
    { "PodTopologySpread", ks_on_spread },     { "InterPodAffinity", ks_on_ipa },
    { "NodeAffinity", ks_on_node_affinity },   { "DefaultPreemption", ks_on_preemption },
    { "VolumeBinding", ks_on_volume_binding }, { "DynamicResources", ks_on_dra },
};

/* The reader of name's args in table t of n, else dflt. */
static cfg_pair_fn ks_args_fn(const ks_args_reader_t *t, size_t n, const char *name, cfg_pair_fn dflt)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].plugin, name))
            return t[i].fn;
    return dflt;
}

static void ks_args_init(ks_args_ctx_t *a, sched_config_t *c, sched_profile_config_t *p, const char *plugin)
{
    memset(a, 0, sizeof *a);
    a->c = c;
    a->p = p;
    a->plugin = plugin;
}

/* v1 defaulting of PodTopologySpread (SetDefaults_PodTopologySpreadArgs:
 * System unless set) and its validation (System: no constraints). */
static int ks_spread_done(cfg_loader_t *l, const yaml_node_t *args, ks_args_ctx_t *a)
{
    sched_profile_config_t *p = a->p;
    if (!a->spread.list && p->fw.nspread_defaults > 0)
        return cfg_fail(l, args,
                        "PodTopologySpread: defaultConstraints must be empty when defaultingType is System (v1's "
                        "default); set defaultingType: List");
    p->fw.spread_list_defaulting = a->spread.list;
    return 0;
}

/* Balanced allocation's v1.20 maths read cpu and memory: that list (kube's
 * default) passes; another would be ignored, so it is refused. */
static int ks_balanced_done(cfg_loader_t *l, ks_args_ctx_t *a)
{
    const fw_config_t *b = &a->balanced;
    if (!a->resources || cfg_is_null(a->resources))
        return 0;
    int cpu = 0, mem = 0;
    for (int i = 0; i < b->nres_weights; i++) {
        cpu |= !strcmp(b->res_weights[i].name, "cpu");
        mem |= !strcmp(b->res_weights[i].name, "memory");
    }
    if (b->nres_weights == 2 && cpu && mem)
        return 0;
    return cfg_fail(l, a->resources,
                    "NodeResourcesBalancedAllocation.resources: ai-scheduler balances cpu and memory only (list "
                    "exactly those two)");
}

static int ks_plugin_config(cfg_loader_t *l, const yaml_node_t *item, void *ctx)
{
    ks_profile_t *kp = ctx;
    const yaml_node_t *name_n, *args;
    const char *name;
    if (cfg_plugin_config_entry(l, item, &name_n, &args, &name) < 0)
        return -1;
    if (ks_check_name(l, name_n, "pluginConfig", name) < 0)
        return -1;
    for (int i = 0; i < kp->nconfigured; i++)
        if (!strcmp(kp->configured[i], name))
            return cfg_fail(l, name_n, "pluginConfig: \"%s\" is configured twice", name);
    if (kp->nconfigured == KS_MAX_ENTRIES)
        return cfg_fail(l, name_n, "pluginConfig: at most %d entries", KS_MAX_ENTRIES);
    snprintf(kp->configured[kp->nconfigured++], FW_PLUGIN_NAME_LEN, "%s", name);
    if (!args || cfg_is_null(args))
        return 0;
    ks_args_ctx_t a;
    ks_args_init(&a, kp->c, kp->p, name);
    a.spread.fw = &kp->p->fw;
    cfg_pair_fn fn = ks_args_fn(KS_ARGS, sizeof KS_ARGS / sizeof KS_ARGS[0], name, ks_on_no_args);
    if (!strcmp(name, "PodTopologySpread"))
        kp->p->fw.nspread_defaults = 0;
    char what[96];
    snprintf(what, sizeof what, "%s args", name);
    if (cfg_each_pair(l, args, what, fn, &a) < 0)
        return -1;
    if (fn == ks_on_spread)
        return ks_spread_done(l, args, &a);
    if (fn == ks_on_balanced)
        return ks_balanced_done(l, &a);
    return 0;
}

/* ---- profiles and the top level ----------------------------------------- */

static int ks_on_profile(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    ks_profile_t *kp = ctx;
    sched_profile_config_t *p = kp->p;
    if (!strcmp(key, "schedulerName"))
        return cfg_get_str(l, vn, "profiles.schedulerName", 0, &p->scheduler_name);
    if (!strcmp(key, "percentageOfNodesToScore")) {
        p->has_pct = 1;
        return cfg_get_int(l, vn, "profiles.percentageOfNodesToScore", 0, 100, &p->fw.percentage_of_nodes_to_score);
    }
    if (!strcmp(key, "plugins"))
        return cfg_each_pair(l, vn, "profiles.plugins", ks_on_plugins, kp);
    if (!strcmp(key, "pluginConfig"))
        return cfg_each_item(l, vn, "pluginConfig: expected a list of {name, args}", ks_plugin_config, kp);
    return UNKNOWN("profiles");
}

/* One profile: kube's defaults (LeastAllocated over cpu 1, memory 1;
 * System spreading), the file's fields, then the plugin lists. */
static int ks_load_profile(cfg_loader_t *l, const yaml_node_t *item, sched_config_t *c, sched_profile_config_t *p)
{
    memset(p, 0, sizeof *p);
    fw_config_default(&p->fw);
    p->fw.strategy = SCORE_LEAST_ALLOCATED;
    memset(p->fw.res_weights, 0, sizeof p->fw.res_weights);
    strcpy(p->fw.res_weights[0].name, "cpu");
    strcpy(p->fw.res_weights[1].name, "memory");
    p->fw.res_weights[0].weight = p->fw.res_weights[1].weight = 1;
    p->fw.nres_weights = 2;
    p->fw.v1_resource_scores = 1;
    p->has_resources = 1;
    p->has_spread = 1;
    p->has_strategy = 1;
    p->line = item ? (int)item->start_mark.line + 1 : 0;
    ks_profile_t *kp = util_xcalloc(1, sizeof *kp);
    kp->p = p;
    kp->c = c;
    kp->at = item;
    int rc = 0;
    if (item && item->type != YAML_MAPPING_NODE)
        rc = cfg_fail(l, item, "profiles: expected a mapping");
    else if (item)
        rc = cfg_each_pair(l, item, "profiles", ks_on_profile, kp);
    if (rc == 0)
        rc = ks_translate(l, kp);
    free(kp);
    return rc;
}

static int ks_load_profiles(cfg_loader_t *l, const yaml_node_t *seq, sched_config_t *c)
{
    int n = 0;
    if (seq && !cfg_is_null(seq)) {
        if (seq->type != YAML_SEQUENCE_NODE)
            return cfg_fail(l, seq, "profiles: expected a list of {schedulerName, plugins, pluginConfig}");
        n = (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    }
    if (n > CFG_MAX_PROFILES)
        return cfg_fail(l, seq, "profiles: at most %d", CFG_MAX_PROFILES);
    cfg_free_profiles(c);
    /* No profiles: kube's one default profile. */
    c->profiles = util_xcalloc((size_t)(n ? n : 1), sizeof *c->profiles);
    for (int i = 0; i < (n ? n : 1); i++) {
        const yaml_node_t *item = n ? yaml_document_get_node(l->doc, seq->data.sequence.items.start[i]) : NULL;
        c->nprofiles++;
        if (ks_load_profile(l, item, c, &c->profiles[i]) < 0)
            return -1;
    }
    return 0;
}

static int ks_on_client(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    /* The wire format is ai-scheduler's (JSON) whatever is asked. */
    if (!strcmp(key, "acceptContentTypes") || !strcmp(key, "contentType"))
        return cfg_scalar(l, vn, key) ? 0 : -1;
    return cfg_on_client(l, key, kn, vn, ctx);
}

typedef struct ks_top {
    sched_config_t *c;
    const yaml_node_t *profiles;
    int v1beta1;                          /* a v1beta1 file (kube 1.20-1.21) */
    const yaml_node_t *healthz, *metrics; /* v1beta1's bind addresses */
} ks_top_t;

static int ks_on_top(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    ks_top_t *t = ctx;
    sched_config_t *c = t->c;
    int b, v;
    if (ks_is_meta(key)) /* checked by kubesched_load */
        return 0;
    if (!strcmp(key, "profiles")) {
        t->profiles = vn;
        return 0;
    }
    if (t->v1beta1 && (!strcmp(key, "healthzBindAddress") || !strcmp(key, "metricsBindAddress"))) {
        *(key[0] == 'h' ? &t->healthz : &t->metrics) = vn;
        return cfg_scalar(l, vn, key) ? 0 : -1;
    }
    if (!strcmp(key, "clientConnection"))
        return cfg_each_pair(l, vn, "clientConnection", ks_on_client, c);
    if (!strcmp(key, "leaderElection"))
        return cfg_each_pair(l, vn, "leaderElection", cfg_on_leader, c);
    if (!strcmp(key, "percentageOfNodesToScore"))
        return cfg_get_int(l, vn, "percentageOfNodesToScore", 0, 100, &c->sched.fw.percentage_of_nodes_to_score);
    /* Each pool thread scores its nodes itself: parallelism has no
     * counterpart, and changes no decision. */
    if (!strcmp(key, "parallelism"))
        return cfg_get_int(l, vn, "parallelism", 1, 1000000, &v);
    if (!strcmp(key, "podInitialBackoffSeconds"))
        return ks_fixed_int(l, vn, "podInitialBackoffSeconds", 1, "the queue's backoff is kube's default");
    if (!strcmp(key, "podMaxBackoffSeconds"))
        return ks_fixed_int(l, vn, "podMaxBackoffSeconds", 10, "the queue's backoff is kube's default");
    if (!strcmp(key, "enableProfiling") || !strcmp(key, "enableContentionProfiling") ||
        (!strcmp(key, "delayCacheUntilActive") && !t->v1beta1))
        return cfg_get_bool(l, vn, key, &b);
    if (!strcmp(key, "extenders"))
        return ks_empty(vn) ? 0 : cfg_fail(l, vn, "extenders are not supported by ai-scheduler");
    return UNKNOWN(KUBESCHED_KIND);
}

/* ---- v1beta1 files (kube 1.20-1.21) -------------------------------------- */

/* kube v1.20 plugins ai-scheduler does not build: their args are refused by
 * name (in plugin lists they are unknown plugins). */
static const char *const KS_V1BETA1_MISSING[] = {
    "SelectorSpread", "ServiceAffinity", "NodeLabel", "RequestedToCapacityRatio", "CinderLimits",
};

/* v1beta1's args beyond those AiSchedulerConfiguration reads itself
 * (NodeResources{Least,Most}Allocated resources, PodTopologySpread with
 * v1beta1's defaulting): v1's readers with v1.20's fields. */
static const ks_args_reader_t KS_V1BETA1_ARGS[] = {
    { "NodeResourcesFit", ks_on_fit },         { "InterPodAffinity", ks_on_ipa },
    { "NodeAffinity", ks_on_node_affinity },   { "DefaultPreemption", ks_on_preemption },
    { "VolumeBinding", ks_on_volume_binding },
};

/* cfg_args_hook_fn of a v1beta1 file's pluginConfig entries. */
static int ks_v1beta1_args(cfg_loader_t *l, const yaml_node_t *name_n, const char *name, const yaml_node_t *args,
                           sched_profile_config_t *p, sched_config_t *c)
{
    for (size_t i = 0; i < sizeof KS_V1BETA1_MISSING / sizeof KS_V1BETA1_MISSING[0]; i++)
        if (!strcmp(name, KS_V1BETA1_MISSING[i]))
            return cfg_fail(l, name_n,
                            "pluginConfig: plugin \"%s\" of kube-scheduler v1.20 is not supported by ai-scheduler",
                            name);
    cfg_pair_fn fn = ks_args_fn(KS_V1BETA1_ARGS, sizeof KS_V1BETA1_ARGS / sizeof KS_V1BETA1_ARGS[0], name, NULL);
    if (!fn)
        return 1;
    if (!args || cfg_is_null(args))
        return 0;
    ks_args_ctx_t a;
    ks_args_init(&a, c, p, name);
    a.v1beta1 = 1;
    char what[96];
    snprintf(what, sizeof what, "%s args", name);
    return cfg_each_pair(l, args, what, fn, &a);
}

/* v1beta1's healthzBindAddress and metricsBindAddress ("IP:PORT"; "" turns
 * the server off). ai-scheduler serves /healthz and /metrics on one
 * address, so both must agree; unset, ai-scheduler's --metrics-* defaults
 * stay (kube's 10251 is kube-scheduler's port, not ai-scheduler's). */
static int ks_bind_addresses(cfg_loader_t *l, const ks_top_t *t)
{
    const yaml_node_t *n = t->metrics ? t->metrics : t->healthz;
    if (!n)
        return 0;
    const char *what = t->metrics ? "metricsBindAddress" : "healthzBindAddress";
    const char *v = (const char *)n->data.scalar.value;
    if (t->metrics && t->healthz && strcmp(v, (const char *)t->healthz->data.scalar.value))
        return cfg_fail(l, t->healthz,
                        "healthzBindAddress must equal metricsBindAddress: ai-scheduler serves /healthz and "
                        "/metrics on one address");
    if (!*v) {
        t->c->metrics_port = 0;
        return 0;
    }
    const char *colon = strrchr(v, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    size_t hl = colon ? (size_t)(colon - v) : 0;
    if (!colon || !colon[1] || *end || port < 0 || port > 65535 || hl > 63)
        return cfg_fail(l, n, "%s: \"%s\" is not IP:PORT", what, v);
    char host[64];
    memcpy(host, v, hl);
    host[hl] = 0;
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') { /* [IPv6]:PORT */
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = 0;
    }
    cfg_set_str(&t->c->metrics_bind_address, host[0] ? host : "0.0.0.0");
    t->c->metrics_port = (int)port;
    return 0;
}

/* A v1beta1 file's profiles have the shape, plugin names and merge rules
 * of AiSchedulerConfiguration's (both are kube v1.20's), so they load
 * through cfg_load_profiles over v1beta1's defaults: NodeResourcesLeastAllocated
 * over cpu 1 + memory 1 (SetDefaults_NodeResourcesLeastAllocatedArgs). */
static int ks_load_v1beta1(cfg_loader_t *l, const ks_top_t *t)
{
    sched_config_t *c = t->c;
    fw_config_t *fw = &c->sched.fw;
    if (ks_bind_addresses(l, t) < 0)
        return -1;
    fw->strategy = SCORE_LEAST_ALLOCATED;
    memset(fw->res_weights, 0, sizeof fw->res_weights);
    strcpy(fw->res_weights[0].name, "cpu");
    strcpy(fw->res_weights[1].name, "memory");
    fw->res_weights[0].weight = fw->res_weights[1].weight = 1;
    fw->nres_weights = 2;
    cfg_free_profiles(c);
    if (t->profiles && !cfg_is_null(t->profiles) && cfg_load_profiles(l, t->profiles, c, ks_v1beta1_args) < 0)
        return -1;
    /* v1beta1 names a lone profile default-scheduler; with several, each
     * needs its name (kube's validation). */
    for (int i = 0; c->nprofiles > 1 && i < c->nprofiles; i++)
        if (!c->profiles[i].scheduler_name)
            return util_errf(l->err, l->errlen, "%s:%d: profiles: schedulerName is required when there are several",
                             l->name, c->profiles[i].line);
    return 0;
}

/* The value of a top-level key, or NULL. */
static const yaml_node_t *ks_top_value(cfg_loader_t *l, const yaml_node_t *root, const char *key)
{
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        const yaml_node_t *kn = yaml_document_get_node(l->doc, p->key);
        if (kn && kn->type == YAML_SCALAR_NODE && !strcmp((const char *)kn->data.scalar.value, key))
            return yaml_document_get_node(l->doc, p->value);
    }
    return NULL;
}

int kubesched_is(cfg_loader_t *l, const yaml_node_t *root)
{
    const yaml_node_t *an = ks_top_value(l, root, "apiVersion");
    return an && an->type == YAML_SCALAR_NODE &&
           !strncmp((const char *)an->data.scalar.value, KUBESCHED_GROUP, strlen(KUBESCHED_GROUP));
}

int kubesched_load(cfg_loader_t *l, const yaml_node_t *root, sched_config_t *c)
{
    const yaml_node_t *an = ks_top_value(l, root, "apiVersion"), *kn = ks_top_value(l, root, "kind");
    const char *api = cfg_scalar(l, an, "apiVersion");
    if (!api)
        return -1;
    const char *ver = api + strlen(KUBESCHED_GROUP);
    int v1beta1 = !strcmp(ver, "v1beta1");
    /* v1beta2 has per-point default sets with weights of its own (neither
     * v1's multiPoint set nor v1.20's), which neither reader plays. */
    if (!strcmp(ver, "v1beta2"))
        return cfg_fail(l, an,
                        "apiVersion %s is not read by ai-scheduler (kube 1.22-1.24's default plugin sets are not "
                        "played): rewrite it as " KUBESCHED_GROUP "v1, the same shape with multiPoint",
                        api);
    if (strcmp(ver, "v1") && strcmp(ver, "v1beta3") && !v1beta1)
        return cfg_fail(l, an,
                        "apiVersion %s is not read by ai-scheduler: use " KUBESCHED_GROUP "v1 (kube 1.25+; "
                        "v1beta3 and v1beta1 also work) or ai-scheduler.aibee.cn/v1alpha1",
                        api);
    if (!kn)
        return cfg_fail(l, root, "missing kind: " KUBESCHED_KIND);
    const char *kind = cfg_scalar(l, kn, "kind");
    if (!kind)
        return -1;
    if (strcmp(kind, KUBESCHED_KIND))
        return cfg_fail(l, kn, "kind is \"%s\", expected \"" KUBESCHED_KIND "\"", kind);
    ks_top_t t = { c, NULL, v1beta1, NULL, NULL };
    if (cfg_each_pair(l, root, KUBESCHED_KIND, ks_on_top, &t) < 0)
        return -1;
    /* kube's default profile name; --scheduler-name still overrides it
     * for the profiles that set none. */
    cfg_set_str(&c->sched.scheduler_name, "default-scheduler");
    return v1beta1 ? ks_load_v1beta1(l, &t) : ks_load_profiles(l, t.profiles, c);
}
