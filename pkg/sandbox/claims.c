/* claims.c -- the resourceclaim controller's part a sandbox plays (kube's
 * pkg/controller/resourceclaim): a pod that is gone or finished leaves its
 * claims' status.reservedFor, and a claim reserved for no pod is
 * deallocated, so a victim's devices come free as they do live. */
#include <stdlib.h>
#include <string.h>

#include "sandbox/internal.h"
#include "util/util.h"

/* The claim obj without uid in reservedFor (a copy, or NULL when uid is
 * not there). */
static json_t *without(json_t *obj, const char *uid)
{
    json_t *rf = json_object_get(json_object_get(obj, "status"), "reservedFor"), *e;
    size_t i;
    json_array_foreach (rf, i, e) {
        const char *u = json_string_value(json_object_get(e, "uid"));
        if (!u || strcmp(u, uid) != 0)
            continue;
        json_t *np = json_deep_copy(obj);
        json_t *st = json_object_get(np, "status");
        json_t *nrf = json_object_get(st, "reservedFor");
        json_array_remove(nrf, i);
        if (json_array_size(nrf) == 0) {
            json_object_del(st, "reservedFor");
            json_object_del(st, "allocation");
        }
        return np;
    }
    return NULL;
}

void sb_claims_pod_gone(sandbox_t *sb, const char *uid)
{
    if (!sb->has_claims || !uid)
        return;
    const kind_row_t *k = sb_kind_by_name("ResourceClaim");
    const char *key;
    void *v;
    json_t *changed = json_array();
    for (size_t it = 0; hashmap_next(sb->objs, &it, &key, &v);)
        if (!strncmp(key, "ResourceClaim/", 14)) {
            json_t *np = without(v, uid);
            if (np)
                json_array_append_new(changed, np);
        }
    size_t i;
    json_t *np;
    json_array_foreach (changed, i, np) {
        json_t *meta = json_object_get(np, "metadata");
        sb_store_put(sb, k, "MODIFIED", json_string_value(json_object_get(meta, "namespace")),
                     json_string_value(json_object_get(meta, "name")), json_incref(np));
    }
    json_decref(changed);
}
