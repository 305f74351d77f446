/* volume_restrictions.c -- VolumeRestrictions: the same GCE PD, EBS volume,
 * iSCSI or RBD disk cannot be used by two pods on a node (read-only on both
 * sides is fine, except for EBS). */
#include <string.h>

#include "framework/plugins/plugins.h"

#define VR_REASON "node(s) had no available disk"

static int overlap(char *const *a, int na, char *const *b, int nb)
{
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (strcmp(a[i], b[j]) == 0)
                return 1;
    return 0;
}

static int conflicts(const pod_volume_t *v, const pod_volume_t *e)
{
    if (v->kind != e->kind)
        return 0;
    int both_ro = v->read_only && e->read_only;
    switch (v->kind) {
    case PVOL_GCE_PD:
    case PVOL_ISCSI: return strcmp(v->id, e->id) == 0 && !both_ro;
    case PVOL_AWS_EBS: return strcmp(v->id, e->id) == 0;
    case PVOL_RBD:
        return overlap(v->monitors, v->nmonitors, e->monitors, e->nmonitors) && strcmp(v->pool, e->pool) == 0 &&
               strcmp(v->id, e->id) == 0 && !both_ro;
    default: return 0;
    }
}

static int vr_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    for (int i = 0; i < pod->nvolumes; i++) {
        const pod_volume_t *v = &pod->volumes[i];
        if (v->kind != PVOL_GCE_PD && v->kind != PVOL_AWS_EBS && v->kind != PVOL_RBD && v->kind != PVOL_ISCSI)
            continue;
        for (int p = 0; p < ni->npods; p++) {
            const pod_t *other = ni->pods[p];
            for (int j = 0; j < other->nvolumes; j++) {
                if (conflicts(v, &other->volumes[j])) {
                    fw_status_add(st, FW_UNSCHEDULABLE, VR_REASON);
                    return st->code;
                }
            }
        }
    }
    return FW_SUCCESS;
}

void plugin_volume_restrictions(fw_plugin_t *pl)
{
    *pl = (fw_plugin_t){ .name = "VolumeRestrictions", .filter = vr_filter };
}
