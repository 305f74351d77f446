/* node_volume_limits.c -- NodeVolumeLimits (CSI): the unique CSI volumes on
 * a node, the pod's included, may not exceed a driver's attach limit (the
 * CSINode's allocatable count, or the node's attachable-volumes-csi-*
 * allocatable). Only volumes behind claims count, as in v1.20; in-tree
 * volumes count there only when migrated to CSI, which v1.20 leaves off by
 * default. They are counted by EBSLimits, GCEPDLimits and AzureDiskLimits
 * (the in-tree filters, also here): inline volumes and claims bound to
 * such PVs (or unbound, of the in-tree provisioner), against the node's
 * attachable-volumes-* allocatable, else $KUBE_MAX_PD_VOLS, else 39 EBS
 * (25 on Nitro instance types), 16 GCE PD, 16 Azure Disk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/plugins/plugins.h"
#include "volume/volume.h"

#define NVL_REASON        "node(s) exceed max volume count"
#define NVL_MAX           64
#define ATTACHABLE_PREFIX "attachable-volumes-"

/* A volume by unique name (driver/handle) and the limit key it counts to. */
typedef struct vol_id {
    char name[320];
    char key[RES_NAME_MAX];
} vol_id_t;

typedef struct vol_set {
    vol_id_t v[NVL_MAX];
    int n;
} vol_set_t;

static void set_add(vol_set_t *s, const char *driver, const char *handle)
{
    char name[320];
    snprintf(name, sizeof(name), "%s/%s", driver, handle);
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, name) == 0)
            return;
    if (s->n >= NVL_MAX)
        return;
    snprintf(s->v[s->n].name, sizeof(s->v[s->n].name), "%s", name);
    volume_csi_limit_key(driver, s->v[s->n].key, sizeof(s->v[s->n].key));
    s->n++;
}

/* In-tree provisioners that v1.20 could migrate to CSI (migration is off
 * by default, so their claims do not count). */
static int migratable_in_tree(const char *provisioner)
{
    static const char *const names[] = { "kubernetes.io/aws-ebs",    "kubernetes.io/gce-pd",
                                         "kubernetes.io/azure-disk", "kubernetes.io/azure-file",
                                         "kubernetes.io/cinder",     "kubernetes.io/vsphere-volume" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(provisioner, names[i]) == 0)
            return 1;
    return 0;
}

/* filterAttachableVolumes for one pod (store lock held). A claim not yet
 * bound counts under its class's provisioner with a per-claim handle. */
static void attachable(volume_store_t *vs, const pod_t *pod, vol_set_t *out)
{
    for (int i = 0; i < pod->nvolumes; i++) {
        if (pod->volumes[i].kind != PVOL_PVC)
            continue;
        const pvc_t *c = volume_pvc_locked(vs, pod->ns, pod->volumes[i].id);
        if (!c)
            continue;
        const pv_t *pv = c->volume_name[0] ? volume_pv_locked(vs, c->volume_name) : NULL;
        if (pv) {
            if (pv->csi_driver[0] && pv->csi_handle[0])
                set_add(out, pv->csi_driver, pv->csi_handle);
            continue;
        }
        const storage_class_t *sc = c->class_name[0] ? volume_class_locked(vs, c->class_name) : NULL;
        if (!sc || !sc->provisioner[0] || migratable_in_tree(sc->provisioner))
            continue;
        char handle[300];
        snprintf(handle, sizeof(handle), "unbound-%s", c->key);
        set_add(out, sc->provisioner, handle);
    }
}

/* The node's limit for a key: the CSINode's count wins over allocatable. */
static int limit_for(const node_t *node, const csinode_t *cn, const char *key, int64_t *limit)
{
    int found = 0;
    for (int i = 0; i < node->allocatable.nscalar; i++) {
        if (strcmp(node->allocatable.scalar[i].name, key) == 0) {
            *limit = node->allocatable.scalar[i].value;
            found = 1;
        }
    }
    for (int i = 0; cn && i < cn->ndrivers; i++) {
        char k[RES_NAME_MAX];
        if (!cn->drivers[i].has_count)
            continue;
        volume_csi_limit_key(cn->drivers[i].name, k, sizeof(k));
        if (strcmp(k, key) == 0) {
            *limit = cn->drivers[i].count;
            found = 1;
        }
    }
    return found;
}

static int nvl_pre_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    const fw_cluster_t *cl = cycle_state_cluster(cs);
    for (int i = 0; i < pod->nvolumes; i++) {
        if (pod->volumes[i].kind == PVOL_PVC && cl && cl->volumes) {
            cycle_state_set_slot(cs, pl, cl->volumes);
            break;
        }
    }
    return FW_SUCCESS;
}

static int nvl_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni,
                      fw_status_t *st)
{
    volume_store_t *vs = cycle_state_slot(cs, pl);
    vol_set_t *mine, *attached;
    int rc = FW_SUCCESS;

    if (!vs)
        return FW_SUCCESS;
    mine = calloc(2, sizeof(vol_set_t));
    if (!mine)
        return FW_SUCCESS;
    attached = mine + 1;
    volume_store_rdlock(vs);
    attachable(vs, pod, mine);
    if (mine->n > 0) {
        const csinode_t *cn = volume_csinode_locked(vs, ni->name);
        for (int p = 0; p < ni->npods; p++)
            attachable(vs, ni->pods[p], attached);
        for (int i = 0; i < mine->n && rc == FW_SUCCESS; i++) {
            const char *key = mine->v[i].key;
            int64_t limit = 0, count = 0;
            int seen = 0;
            if (!limit_for(ni->node, cn, key, &limit))
                continue;
            /* Each key is checked once, at its first new volume. */
            for (int j = 0; j < i; j++)
                if (strcmp(mine->v[j].key, key) == 0)
                    seen = 1;
            if (seen)
                continue;
            for (int j = 0; j < attached->n; j++)
                if (strcmp(attached->v[j].key, key) == 0)
                    count++;
            for (int j = 0; j < mine->n; j++) {
                int already = 0;
                if (strcmp(mine->v[j].key, key) != 0)
                    continue;
                for (int a = 0; a < attached->n && !already; a++)
                    already = strcmp(attached->v[a].name, mine->v[j].name) == 0;
                if (!already)
                    count++;
            }
            if (count > limit) {
                fw_status_add(st, FW_UNSCHEDULABLE, NVL_REASON);
                rc = st->code;
            }
        }
    }
    volume_store_unlock(vs);
    free(mine);
    return rc;
}

/* ---- in-tree limits ---------------------------------------------------------- */

typedef struct intree_filter {
    const char *name;
    pod_volume_kind_t kind;
    const char *provisioner;
    const char *limit_key;
    int default_max;
} intree_filter_t;

static const intree_filter_t INTREE[] = {
    { "EBSLimits", PVOL_AWS_EBS, "kubernetes.io/aws-ebs", "attachable-volumes-aws-ebs", 39 },
    { "GCEPDLimits", PVOL_GCE_PD, "kubernetes.io/gce-pd", "attachable-volumes-gce-pd", 16 },
    { "AzureDiskLimits", PVOL_AZURE_DISK, "kubernetes.io/azure-disk", "attachable-volumes-azure-disk", 16 },
};

typedef struct id_set {
    char id[NVL_MAX][320];
    int n;
} id_set_t;

static void ids_add(id_set_t *s, const char *id)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->id[i], id) == 0)
            return;
    if (s->n < NVL_MAX)
        snprintf(s->id[s->n++], sizeof(s->id[0]), "%s", id);
}

static int ids_has(const id_set_t *s, const char *id)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->id[i], id) == 0)
            return 1;
    return 0;
}

/* filterVolumes: inline volumes of the kind, and claims whose PV is of the
 * kind, or which are unbound (or whose PV is unknown) with a class of the
 * in-tree provisioner. vs may be NULL (claims then do not count). */
static void intree_volumes(const intree_filter_t *f, volume_store_t *vs, const pod_t *pod, id_set_t *out)
{
    for (int i = 0; i < pod->nvolumes; i++) {
        const pod_volume_t *v = &pod->volumes[i];
        if (v->kind == f->kind) {
            ids_add(out, v->id);
            continue;
        }
        if (v->kind != PVOL_PVC || !vs)
            continue;
        const pvc_t *c = volume_pvc_locked(vs, pod->ns, v->id);
        if (!c)
            continue;
        const pv_t *pv = c->volume_name[0] ? volume_pv_locked(vs, c->volume_name) : NULL;
        if (pv) {
            if (pv->intree == f->kind)
                ids_add(out, pv->intree_id);
            continue;
        }
        const storage_class_t *sc = c->class_name[0] ? volume_class_locked(vs, c->class_name) : NULL;
        if (sc && strcmp(sc->provisioner, f->provisioner) == 0) {
            char id[320];
            snprintf(id, sizeof(id), "unbound-%s", c->key);
            ids_add(out, id);
        }
    }
}

/* kube's EBSNitroLimitRegex "^[cmr]5.*|t3|z1d". */
static int nitro(const char *t)
{
    return ((t[0] == 'c' || t[0] == 'm' || t[0] == 'r') && t[1] == '5') || strstr(t, "t3") || strstr(t, "z1d");
}

static int64_t intree_max(const intree_filter_t *f, const node_t *node)
{
    for (int i = 0; i < node->allocatable.nscalar; i++)
        if (strcmp(node->allocatable.scalar[i].name, f->limit_key) == 0)
            return node->allocatable.scalar[i].value;
    const char *env = getenv("KUBE_MAX_PD_VOLS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (!*end && v > 0 && v < INT32_MAX)
            return v;
    }
    if (f->kind == PVOL_AWS_EBS) {
        const char *t = labels_get(&node->labels, "node.kubernetes.io/instance-type");
        if (!t)
            t = labels_get(&node->labels, "beta.kubernetes.io/instance-type");
        if (t && nitro(t))
            return 25;
    }
    return f->default_max;
}

static int intree_pre_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    const fw_cluster_t *cl = cycle_state_cluster(cs);
    if (cl && cl->volumes)
        cycle_state_set_slot(cs, pl, cl->volumes);
    return FW_SUCCESS;
}

static int intree_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni,
                         fw_status_t *st)
{
    const intree_filter_t *f = pl->ctx;
    volume_store_t *vs = cycle_state_slot(cs, pl);
    int rc = FW_SUCCESS, relevant = 0;
    /* Most pods carry only projected or emptyDir volumes: nothing to count. */
    for (int i = 0; i < pod->nvolumes && !relevant; i++)
        relevant = pod->volumes[i].kind == f->kind || (pod->volumes[i].kind == PVOL_PVC && vs);
    if (!relevant)
        return FW_SUCCESS;
    id_set_t *mine = calloc(2, sizeof(id_set_t)), *existing;
    if (!mine)
        return FW_SUCCESS;
    existing = mine + 1;
    if (vs)
        volume_store_rdlock(vs);
    intree_volumes(f, vs, pod, mine);
    if (mine->n > 0) {
        for (int p = 0; p < ni->npods; p++)
            intree_volumes(f, vs, ni->pods[p], existing);
        int fresh = 0;
        for (int i = 0; i < mine->n; i++)
            if (!ids_has(existing, mine->id[i]))
                fresh++;
        if ((int64_t)existing->n + fresh > intree_max(f, ni->node)) {
            fw_status_add(st, FW_UNSCHEDULABLE, NVL_REASON);
            rc = st->code;
        }
    }
    if (vs)
        volume_store_unlock(vs);
    free(mine);
    return rc;
}

void plugin_in_tree_volume_limits(fw_plugin_t *pl, int which)
{
    if (which < 0 || which >= (int)(sizeof(INTREE) / sizeof(INTREE[0])))
        which = 0;
    *pl = (fw_plugin_t){ .name = INTREE[which].name,
                         .pre_filter = intree_pre_filter,
                         .filter = intree_filter,
                         .ctx = (void *)&INTREE[which] };
}

void plugin_node_volume_limits(fw_plugin_t *pl)
{
    *pl = (fw_plugin_t){ .name = "NodeVolumeLimits", .pre_filter = nvl_pre_filter, .filter = nvl_filter };
}
