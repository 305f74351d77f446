/* volume_zone.c -- VolumeZone: a bound PV's zone and region labels must
 * include the node's (a value may list several zones joined by "__"). */
#include <stdio.h>
#include <string.h>

#include "framework/plugins/plugins.h"
#include "volume/volume.h"

#define VZ_REASON "node(s) had no available volume zone"

static const char *const ZONE_LABELS[] = {
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
};
#define NZONE_LABELS (sizeof(ZONE_LABELS) / sizeof(ZONE_LABELS[0]))

static int vz_pre_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    const fw_cluster_t *cl = cycle_state_cluster(cs);
    for (int i = 0; i < pod->nvolumes && cl && cl->volumes; i++) {
        if (pod->volumes[i].kind == PVOL_PVC) {
            cycle_state_set_slot(cs, pl, cl->volumes);
            break;
        }
    }
    return FW_SUCCESS;
}

/* volumehelpers.LabelZonesToSet: "a__b" is {a, b}; node_value may be NULL
 * (the node lacks the label: never in the set). */
static int zone_set_has(const char *set, const char *node_value)
{
    size_t n;
    if (!node_value)
        return 0;
    n = strlen(node_value);
    for (const char *p = set;;) {
        const char *sep = strstr(p, "__");
        size_t len = sep ? (size_t)(sep - p) : strlen(p);
        if (len == n && strncmp(p, node_value, n) == 0)
            return 1;
        if (!sep)
            return 0;
        p = sep + 2;
    }
}

/* Returns FW_SUCCESS, or the status to give (lock held). */
static int check_claim(volume_store_t *vs, const pod_t *pod, const char *claim, const node_t *node, fw_status_t *st)
{
    char msg[FW_REASON_LEN * 2];
    const pvc_t *c = volume_pvc_locked(vs, pod->ns, claim);
    if (!c) {
        snprintf(msg, sizeof(msg), "persistentvolumeclaim \"%s\" not found", claim);
        fw_status_add(st, FW_ERROR, msg);
        return st->code;
    }
    if (!c->volume_name[0]) {
        if (!c->class_name[0]) {
            fw_status_add(st, FW_ERROR, "PersistentVolumeClaim had no pv name and storageClass name");
            return st->code;
        }
        const storage_class_t *sc = volume_class_locked(vs, c->class_name);
        if (!sc) {
            snprintf(msg, sizeof(msg), "StorageClass \"%s\" claimed by PersistentVolumeClaim \"%s\" not found",
                     c->class_name, claim);
        } else if (sc->mode == SC_BIND_UNSET) {
            snprintf(msg, sizeof(msg), "VolumeBindingMode not set for StorageClass \"%s\"", c->class_name);
        } else if (sc->mode == SC_BIND_WAIT) {
            return FW_SUCCESS; /* the binder picks a PV for this node */
        } else {
            snprintf(msg, sizeof(msg), "PersistentVolume had no name");
        }
        fw_status_add(st, FW_ERROR, msg);
        return st->code;
    }
    const pv_t *pv = volume_pv_locked(vs, c->volume_name);
    if (!pv) {
        snprintf(msg, sizeof(msg), "persistentvolume \"%s\" not found", c->volume_name);
        fw_status_add(st, FW_ERROR, msg);
        return st->code;
    }
    for (size_t i = 0; i < NZONE_LABELS; i++) {
        const char *pv_value = labels_get(&pv->labels, ZONE_LABELS[i]);
        if (pv_value && !zone_set_has(pv_value, labels_get(&node->labels, ZONE_LABELS[i]))) {
            fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, VZ_REASON);
            return st->code;
        }
    }
    return FW_SUCCESS;
}

static int vz_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    volume_store_t *vs = cycle_state_slot(cs, pl);
    int constrained = 0, rc = FW_SUCCESS;
    if (!vs)
        return FW_SUCCESS;
    for (size_t i = 0; i < NZONE_LABELS; i++)
        if (labels_get(&ni->node->labels, ZONE_LABELS[i]))
            constrained = 1;
    if (!constrained)
        return FW_SUCCESS;
    volume_store_rdlock(vs);
    for (int i = 0; i < pod->nvolumes && rc == FW_SUCCESS; i++)
        if (pod->volumes[i].kind == PVOL_PVC)
            rc = check_claim(vs, pod, pod->volumes[i].id, ni->node, st);
    volume_store_unlock(vs);
    return rc;
}

void plugin_volume_zone(fw_plugin_t *pl)
{
    *pl = (fw_plugin_t){ .name = "VolumeZone", .pre_filter = vz_pre_filter, .filter = vz_filter };
}
