/* volume_binding.c -- VolumeBinding: PreFilter sorts the pod's claims
 * (missing, deleting and unbound Immediate claims make the pod
 * unschedulable); Filter checks bound claims' PV node affinity and finds,
 * per node, PVs or dynamic provisioning for the unbound ones. Reserve and
 * PreBind live in the scheduler (volume/volume.h holds the logic). */
#include <stdlib.h>

#include "framework/plugins/plugins.h"
#include "util/util.h"
#include "volume/volume.h"

/* PreFilter's view of the pod's claims (volume_prepare): Filter, run for
 * thousands of nodes, needs no lock. */
static void vb_state_free(void *p)
{
    volume_prepared_free(p);
    free(p);
}

static int pod_has_claims(const pod_t *pod)
{
    for (int i = 0; i < pod->nvolumes; i++)
        if (pod->volumes[i].kind == PVOL_PVC)
            return 1;
    return 0;
}

/* Without any cluster view (a framework used alone, as in other plugins'
 * tests; the scheduler always gives one, see framework_set_base_cluster)
 * the volume plugins do not check. A view without a store means no storage
 * is known: every claim is missing. */
static int vb_pre_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, fw_status_t *st)
{
    const fw_cluster_t *cl = cycle_state_cluster(cs);
    if (!pod_has_claims(pod) || !cl)
        return FW_SUCCESS;
    vb_prepared_t *s = util_xcalloc(1, sizeof(*s));
    char msg[FW_REASON_LEN * 2];
    vb_rc_t rc = volume_prepare(cl->volumes, pod, s, msg, sizeof(msg));
    if (rc != VB_OK) {
        free(s);
        fw_status_add(st, rc == VB_ERROR ? FW_ERROR : FW_UNSCHEDULABLE_UNRESOLVABLE, msg);
        return st->code;
    }
    cycle_state_set_slot(cs, pl, s);
    return FW_SUCCESS;
}

static int vb_filter(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni, fw_status_t *st)
{
    const vb_prepared_t *s = cycle_state_slot(cs, pl);
    unsigned reasons = 0;
    char err[FW_REASON_LEN * 2];

    if (!s || s->claims.skip)
        return FW_SUCCESS;
    if (volume_prepared_find(s, ni->node, &reasons, err, sizeof(err)) < 0) {
        fw_status_add(st, FW_ERROR, err);
        return st->code;
    }
    if (reasons & VB_NODE_CONFLICT)
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, VB_REASON_NODE_CONFLICT);
    if (reasons & VB_BIND_CONFLICT)
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, VB_REASON_BIND_CONFLICT);
    if (reasons & VB_PV_NOT_EXIST)
        fw_status_add(st, FW_UNSCHEDULABLE_UNRESOLVABLE, VB_REASON_PV_NOT_EXIST);
    return st->code;
}

void plugin_volume_binding(fw_plugin_t *pl)
{
    *pl = (fw_plugin_t){
        .name = "VolumeBinding", .pre_filter = vb_pre_filter, .filter = vb_filter, .state_free = vb_state_free
    };
}
