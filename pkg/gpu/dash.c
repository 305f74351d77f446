/* dash.c -- what the gpu-sharing row shows on the dashboard's pages
 * (gpu/dash.h), read from the node's shared slots under the cache lock
 * the dashboard holds: names and numbers only. */
#include "gpu/dash.h"

#include "api/resources.h"
#include "gpu/gpu.h"
#include "util/jsonnum.h"

void gpu_row_node_use(const sched_row_t *row, const node_info_t *ni, sched_node_use_t *u)
{
    (void)row;
    const gpu_node_t *g = gpu_node_of(ni);
    if (!g)
        return;
    int64_t whole = res_get_scalar(&ni->node->allocatable, RES_GPU);
    int64_t req = res_get_scalar(&ni->requested, RES_GPU);
    int64_t shared = gpu_node_shared(g);
    double frac = 0;
    for (int i = 0; i < whole && i < GPU_MAX_DEVICES; i++)
        frac += gpu_node_slot_use(g, ni->node, i);
    u->gpu_shared = shared;
    u->gpu_used = (double)(req - shared) + frac;
}

/* Slot i's fractions (pods and their share of it) and reservation pod,
 * or NULL when it has neither. */
static json_t *slot_doc(const node_info_t *ni, const gpu_node_t *g, int64_t mem, int i)
{
    json_t *fr = json_array();
    json_t *res = json_null();
    for (int k = 0; k < ni->npods; k++) {
        const pod_t *p = ni->pods[k];
        if (pod_is_terminal(p))
            continue;
        if (gpu_is_reservation(p) && gpu_req_of(p)->slot == i) {
            json_decref(res);
            res = json_string(p->key);
        } else if (gpu_is_fraction(p) && (gpu_node_mask_of(g, p->uid) >> i & 1)) {
            double share = gpu_share(p, mem) / (gpu_req_of(p)->ndev > 0 ? gpu_req_of(p)->ndev : 1);
            json_array_append_new(fr, json_pack("{s:s, s:o}", "pod", p->key, "fraction", util_json_num(share)));
        }
    }
    if (!json_array_size(fr) && json_is_null(res)) {
        json_decref(fr);
        return NULL;
    }
    return json_pack("{s:i, s:o, s:o, s:o}", "index", i, "used", util_json_num(gpu_node_slot_use(g, ni->node, i)),
                     "fractions", fr, "reservation", res);
}

void gpu_row_node_doc(const sched_row_t *row, const node_info_t *ni, json_t *item)
{
    (void)row;
    json_t *slots = json_array();
    const gpu_node_t *g = ni && ni->node ? gpu_node_of(ni) : NULL;
    if (g) {
        int64_t whole = res_get_scalar(&ni->node->allocatable, RES_GPU);
        int64_t mem = gpu_node_memory(ni->node);
        for (int i = 0; i < whole && i < GPU_MAX_DEVICES; i++) {
            json_t *slot = slot_doc(ni, g, mem, i);
            if (slot)
                json_array_append_new(slots, slot);
        }
    }
    json_object_set_new(item, "slots", slots);
}

void gpu_row_pod_use(const sched_row_t *row, const pod_t *pod, sched_pod_use_t *u)
{
    (void)row;
    u->gpus += gpu_share(pod, 0);
    if (gpu_is_reservation(pod))
        u->holder = 1;
}
