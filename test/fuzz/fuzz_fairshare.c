/* fuzz_fairshare.c -- Queues as users write them, with the pods charged to
 * them: {"queues": [Queue...], "pods": [Pod...], "cap": {ResourceList},
 * "halfLife": N}. Queues are upserted (a parent may be missing, a cycle, a
 * duplicate), bound pods (spec.nodeName) charged and the others pending in
 * one pool; then fair shares, order, admission, reclaim and the status
 * patches of a tick. Nothing may crash, and a ratio is never NaN. */
#include <math.h>

#include "fuzz.h"
#include "api/resources.h"
#include "api/types.h"
#include "fairshare/fairshare.h"
#include "scheduler/capabilities.h"

#define MAX_PODS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    capabilities_init();
    json_t *j = fuzz_json(data, size);
    if (!j)
        return 0;
    char err[256];
    fs_opts_t o = { .usage_half_life_s = (int)(json_integer_value(json_object_get(j, "halfLife")) & 0xffff),
                    .starvation_age_s = 600,
                    .non_preemptible_priority = 100 };
    fs_store_t *fs = fs_store_new(&o);
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(j, "queues"), i, v) {
        fs_queue_spec_t *q = fs_queue_from_json(v, err, sizeof err);
        if (q)
            fs_queue_upsert(fs, q);
    }
    resources_t capr;
    res_zero(&capr);
    double cap[FS_NRES] = { 8, 64000, 256.0 * (1 << 30) };
    if (json_object_get(j, "cap") && res_from_json(&capr, json_object_get(j, "cap"), err, sizeof err) == 0)
        fs_res_vec(&capr, cap);
    fs_set_pool(fs, 0, "default", cap);

    pod_t *pods[MAX_PODS];
    int np = 0;
    fs_pending_t pend[MAX_PODS];
    int npend = 0;
    json_array_foreach (json_object_get(j, "pods"), i, v) {
        if (np == MAX_PODS)
            break;
        pod_t *p = pod_from_json(v, err, sizeof err);
        if (!p)
            continue;
        pods[np++] = p;
        int t = fs_tenant_id(fs, fs_pod_queue_label(p));
        if (p->node_name[0]) {
            fs_charge(fs, p, t, 0, 81920, +1);
        } else {
            pend[npend] = (fs_pending_t){ .tenant = t, .pods = 1 };
            fs_pod_vec(p, pend[npend++].v);
        }
    }
    fs_set_pending(fs, 0, pend, npend);
    fs_refresh(fs, 0, 1000);
    int tenants[MAX_PODS];
    int64_t first[MAX_PODS];
    for (int k = 0; k < np; k++) {
        pod_t *p = pods[k];
        int t = fs_tenant_id(fs, fs_pod_queue_label(p));
        tenants[k] = t;
        first[k] = k;
        FUZZ_ASSERT(!isnan(fs_ratio(fs, 0, t)));
        free(fs_fallback_message(fs, t));
        free(fs_queue_name(fs, t));
        if (p->node_name[0])
            continue;
        double req[FS_NRES];
        fs_pod_vec(p, req);
        char msg[256];
        (void)fs_admit(fs, 0, t, req, fs_pod_preemptible(fs, p), msg, sizeof msg);
        for (int m = 0; m < np; m++) {
            int cross;
            if (pods[m]->node_name[0])
                (void)fs_may_reclaim(fs, 0, t, req, k & 1, 0, 0, pods[m]->uid, k & 2, 700000, &cross);
        }
        char **victims = NULL;
        int nv = fs_limit_victims(fs, 0, t, req, p->priority, 700000, &victims);
        if (nv > 0)
            (void)fs_victims_ok(fs, 0, t, req, 0, (const char *const *)victims, NULL, nv, 700000);
        for (int m = 0; m < nv; m++)
            free(victims[m]);
        free(victims);
    }
    if (np > 0)
        (void)fs_pick(fs, 0, tenants, first, np, 700000);
    fs_tick_t tick = { 0 };
    fs_tick(fs, 2000, &tick);
    for (int k = 0; k < tick.npatches; k++) {
        json_t *b = json_loads(tick.patches[k].body, 0, NULL); /* what goes to the API server parses */
        FUZZ_ASSERT(b != NULL);
        json_decref(b);
    }
    fs_tick_clear(&tick);
    for (int k = 0; k < np; k++) {
        fs_uncharge(fs, pods[k]->uid);
        pod_unref(pods[k]);
    }
    json_array_foreach (json_object_get(j, "queues"), i, v) {
        const char *name = json_string_value(json_object_get(json_object_get(v, "metadata"), "name"));
        if (name)
            fs_queue_delete(fs, name);
    }
    fs_store_free(fs);
    json_decref(j);
    return 0;
}
