/* framework.c -- the scheduling framework: builds the default plugin set from
 * the configuration and runs PreFilter, Filter and Score over nodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "framework/framework.h"
#include "framework/plugins/plugins.h"
#include "util/util.h"

struct framework {
    fw_config_t      cfg;
    res_scorer_ctx_t res_ctx;      /* the resource scorer's ctx */
    fw_plugin_t      plugins[FW_MAX_PLUGINS];
    int              nplugins;
};

/* ---- status ------------------------------------------------------------ */

void fw_status_reset(fw_status_t *st) {
    st->code = FW_SUCCESS;
    st->nreasons = 0;
}

/* The status keeps the most severe code: one unresolvable reason makes the
 * node unresolvable. Reasons beyond FW_MAX_REASONS are dropped. */
void fw_status_add(fw_status_t *st, fw_code_t code, const char *reason) {
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

int64_t fw_scale_score(int64_t num, int64_t den) {
    if (den <= 0 || num <= 0)
        return 0;
    /* 128-bit so memory in bytes times 100 cannot overflow. */
    return (int64_t)((__int128)num * FW_MAX_SCORE / den);
}

void fw_default_normalize(int64_t *scores, int n, int reverse) {
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

/* ---- configuration and construction ------------------------------------- */

static void add_weight(fw_config_t *c, const char *name, int weight) {
    fw_resource_weight_t *w = &c->res_weights[c->nres_weights++];
    snprintf(w->name, sizeof(w->name), "%s", name);
    w->weight = weight;
}

void fw_config_default(fw_config_t *c) {
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

/* Filters run in kube-scheduler v1.20's default order; the first failing one
 * decides the node's reasons, so diagnoses read the same. */
framework_t *framework_new(const fw_config_t *c) {
    framework_t *fw = util_xcalloc(1, sizeof(*fw));
    fw_plugin_t *p = fw->plugins;

    if (c)
        fw->cfg = *c;
    else
        fw_config_default(&fw->cfg);
    if (fw->cfg.nres_weights > 8)
        fw->cfg.nres_weights = 8;
    plugin_node_unschedulable(p++);
    plugin_node_resources_fit(p++);
    plugin_node_name(p++);
    plugin_node_ports(p++);
    plugin_node_affinity(p++, fw->cfg.weight_node_affinity);
    plugin_taint_toleration(p++, fw->cfg.weight_taint_toleration);
    plugin_balanced_allocation(p++, fw->cfg.weight_balanced);
    plugin_resource_allocation(p++, &fw->res_ctx, &fw->cfg);
    /* Last filters in v1.20's order; score weights 2 and 1 as its defaults. */
    plugin_pod_topology_spread(p++, 2);
    plugin_inter_pod_affinity(p++, 1);
    fw->nplugins = (int)(p - fw->plugins);
    for (int i = 0; i < fw->nplugins; i++)
        fw->plugins[i].index = i;
    return fw;
}

void framework_free(framework_t *fw) {
    free(fw);
}

const fw_config_t *framework_config(const framework_t *fw) {
    return &fw->cfg;
}

cycle_state_t *cycle_state_new(void) {
    return util_xcalloc(1, sizeof(cycle_state_t));
}

static void cycle_state_clear_slots(cycle_state_t *cs) {
    for (int i = 0; i < FW_MAX_PLUGINS; i++) {
        if (cs->slot[i] && cs->slot_free[i])
            cs->slot_free[i](cs->slot[i]);
        cs->slot[i] = NULL;
        cs->slot_free[i] = NULL;
    }
}

void cycle_state_free(cycle_state_t *cs) {
    if (cs == NULL)
        return;
    cycle_state_clear_slots(cs);
    free(cs);
}

void cycle_state_set_cluster(cycle_state_t *cs, const fw_cluster_t *cl) {
    cs->cluster = cl;
}

const fw_cluster_t *cycle_state_cluster(const cycle_state_t *cs) {
    return cs->cluster;
}

void *cycle_state_slot(const cycle_state_t *cs, const fw_plugin_t *pl) {
    return pl->index >= 0 && pl->index < FW_MAX_PLUGINS ? cs->slot[pl->index] : NULL;
}

void cycle_state_set_slot(cycle_state_t *cs, const fw_plugin_t *pl, void *data) {
    if (pl->index < 0 || pl->index >= FW_MAX_PLUGINS)
        return;
    if (cs->slot[pl->index] && cs->slot_free[pl->index] && cs->slot[pl->index] != data)
        cs->slot_free[pl->index](cs->slot[pl->index]);
    cs->slot[pl->index] = data;
    cs->slot_free[pl->index] = pl->state_free;
}

/* ---- extension points ---------------------------------------------------- */

int framework_pre_filter(framework_t *fw, cycle_state_t *cs, const pod_t *pod, fw_status_t *st) {
    fw_status_t local;

    if (st == NULL)
        st = &local;
    fw_status_reset(st);
    /* Keep the cluster view; drop what the last PreFilter computed. */
    const fw_cluster_t *cl = cs->cluster;
    cycle_state_clear_slots(cs);
    memset(cs, 0, sizeof(*cs));
    cs->cluster = cl;
    cs->pod = pod;
    for (int i = 0; i < fw->nplugins; i++) {
        const fw_plugin_t *pl = &fw->plugins[i];
        if (pl->pre_filter && pl->pre_filter(pl, cs, pod, st) != FW_SUCCESS) {
            if (st->code == FW_SUCCESS)
                fw_status_add(st, FW_ERROR, NULL);
            return st->code;
        }
    }
    cs->prefiltered = 1;
    return FW_SUCCESS;
}

void framework_add_pod(framework_t *fw, cycle_state_t *cs, const pod_t *pod, const pod_t *other, const node_info_t *ni) {
    if (!cs->prefiltered || cs->pod != pod)
        return;
    for (int i = 0; i < fw->nplugins; i++)
        if (fw->plugins[i].add_pod)
            fw->plugins[i].add_pod(&fw->plugins[i], cs, pod, other, ni);
}

void framework_remove_pod(framework_t *fw, cycle_state_t *cs, const pod_t *pod, const pod_t *other, const node_info_t *ni) {
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
int framework_filter(framework_t *fw, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st) {
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
    for (int i = 0; i < fw->nplugins; i++) {
        const fw_plugin_t *pl = &fw->plugins[i];
        if (pl->filter == NULL)
            continue;
        int rc = pl->filter(pl, cs, pod, ni, st);
        if (rc != FW_SUCCESS) {
            if (st->code == FW_SUCCESS)    /* a plugin that forgot its reason */
                fw_status_add(st, (fw_code_t)rc, NULL);
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
void framework_score(framework_t *fw, cycle_state_t *cs, const pod_t *pod, node_info_t *const *nodes, int n, int64_t *out) {
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
    for (int p = 0; p < fw->nplugins; p++) {
        const fw_plugin_t *pl = &fw->plugins[p];
        if (pl->score == NULL || pl->weight == 0)
            continue;
        if (pl->pre_score)
            pl->pre_score(pl, cs, pod, nodes, n);
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

/* kube-scheduler's numFeasibleNodesToFind: small clusters are searched
 * whole; larger ones stop after an adaptive share (50% minus 1% per 125
 * nodes, at least 5%), never fewer than 100 nodes. */
int framework_num_feasible_to_find(const framework_t *fw, int nnodes) {
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
