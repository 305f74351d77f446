/* snapshot.c -- LIST what the scheduler reads, sanitize it, wrap it in the
 * ClusterSnapshot document, check a document read back. */
#include "snapshot/snapshot.h"

#include <stdio.h>
#include <string.h>

#include "fairshare/fairshare.h"
#include "gang/gang.h"
#include "util/util.h"

static const snapshot_kind_t kinds[] = {
    { "/apis/scheduling.k8s.io/v1/priorityclasses", "scheduling.k8s.io/v1", "PriorityClass", NULL, NULL, 0 },
    { "/apis/resource.aibee.cn/v1alpha1/pools", "resource.aibee.cn/v1alpha1", "Pool", NULL, NULL, 0 },
    { FS_QUEUE_API "/queues", "resource.aibee.cn/v1alpha1", "Queue", NULL, NULL, 0 },
    { "/apis/storage.k8s.io/v1/storageclasses", "storage.k8s.io/v1", "StorageClass", NULL, NULL, 0 },
    { "/apis/storage.k8s.io/v1/csinodes", "storage.k8s.io/v1", "CSINode", NULL, NULL, 0 },
    { "/api/v1/persistentvolumes", "v1", "PersistentVolume", NULL, NULL, 0 },
    { "/api/v1/persistentvolumeclaims", "v1", "PersistentVolumeClaim", NULL, NULL, 0 },
    { "/api/v1/services", "v1", "Service", NULL, NULL, 0 },
    { "/api/v1/replicationcontrollers", "v1", "ReplicationController", NULL, NULL, 0 },
    { "/apis/apps/v1/replicasets", "apps/v1", "ReplicaSet", NULL, NULL, 0 },
    { "/apis/apps/v1/statefulsets", "apps/v1", "StatefulSet", NULL, NULL, 0 },
    { "/apis/policy/v1/poddisruptionbudgets", "policy/v1", "PodDisruptionBudget",
      "/apis/policy/v1beta1/poddisruptionbudgets", "policy/v1beta1", 0 },
    { PODGROUP_API "/podgroups", PODGROUP_VERSION, "PodGroup", NULL, NULL, 0 },
    { "/apis/resource.k8s.io/v1/deviceclasses", "resource.k8s.io/v1", "DeviceClass", NULL, NULL, 1 },
    { "/apis/resource.k8s.io/v1/resourceslices", "resource.k8s.io/v1", "ResourceSlice", NULL, NULL, 1 },
    { "/apis/resource.k8s.io/v1/resourceclaims", "resource.k8s.io/v1", "ResourceClaim", NULL, NULL, 1 },
    { "/api/v1/nodes", "v1", "Node", NULL, NULL, 0 },
    { "/api/v1/pods", "v1", "Pod", NULL, NULL, 0 },
};

const snapshot_kind_t *snapshot_kinds(int *n)
{
    *n = (int)(sizeof kinds / sizeof kinds[0]);
    return kinds;
}

/* ------------------------------------------------------------ sanitize */

static void strip_containers(json_t *arr)
{
    size_t i;
    json_t *c;
    json_array_foreach (arr, i, c) {
        if (!json_is_object(c))
            continue;
        json_t *env = json_object_get(c, "env");
        if (json_is_array(env)) {
            /* names only: a value, or a valueFrom's field path, may be a secret */
            json_t *names = json_array();
            size_t k;
            json_t *e;
            json_array_foreach (env, k, e) {
                json_t *nm = json_object_get(e, "name");
                if (json_is_string(nm))
                    json_array_append_new(names, json_pack("{s:O}", "name", nm));
            }
            json_object_set_new(c, "env", names);
        } else if (env) {
            json_object_del(c, "env");
        }
        json_object_del(c, "command");
        json_object_del(c, "args");
    }
}

static void strip_walk(json_t *v, int depth)
{
    if (depth > 64)
        return;
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach (v, i, x)
            strip_walk(x, depth + 1);
        return;
    }
    if (!json_is_object(v))
        return;
    const char *k;
    json_t *x;
    json_object_foreach (v, k, x) {
        if (json_is_array(x) &&
            (!strcmp(k, "containers") || !strcmp(k, "initContainers") || !strcmp(k, "ephemeralContainers")))
            strip_containers(x);
        else
            strip_walk(x, depth + 1);
    }
}

int snapshot_sanitize(json_t *obj)
{
    if (!json_is_object(obj))
        return 0;
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (kind && !strcmp(kind, "Secret"))
        return 1;
    json_t *meta = json_object_get(obj, "metadata");
    if (json_is_object(meta)) {
        json_object_del(meta, "managedFields");
        json_t *ann = json_object_get(meta, "annotations");
        if (json_is_object(ann))
            json_object_del(ann, "kubectl.kubernetes.io/last-applied-configuration");
    }
    strip_walk(json_object_get(obj, "spec"), 0);
    return 0;
}

/* ------------------------------------------------------------ LIST */

typedef struct list_ctx {
    json_t *out;
    const char *api_version, *kind;
} list_ctx_t;

static int on_item(json_t *item, void *ud)
{
    list_ctx_t *lc = ud;
    if (!json_is_object(item))
        return 0;
    json_t *o = json_deep_copy(item);
    json_object_set_new(o, "apiVersion", json_string(lc->api_version));
    json_object_set_new(o, "kind", json_string(lc->kind));
    if (snapshot_sanitize(o))
        json_decref(o);
    else
        json_array_append_new(lc->out, o);
    return 0;
}

static void note_f(snapshot_note_fn note, void *ud, const char *fmt, const char *a, const char *b)
{
    char m[512];
    if (!note)
        return;
    snprintf(m, sizeof m, fmt, a, b);
    note(ud, m);
}

json_t *snapshot_list(kube_client_t *kc, snapshot_note_fn note, void *ud, char *err, size_t errlen)
{
    json_t *out = json_array();
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const snapshot_kind_t *k = &kinds[i];
        list_ctx_t lc = { out, k->api_version, k->kind };
        char e[512] = "";
        long status = 0;
        size_t before = json_array_size(out);
        int rc = kube_list(kc, k->path, 500, on_item, &lc, NULL, 0, &status, e, sizeof e);
        if (rc < 0 && status == 404 && k->fallback) {
            while (json_array_size(out) > before)
                json_array_remove(out, json_array_size(out) - 1);
            lc.api_version = k->fallback_version;
            e[0] = '\0';
            status = 0;
            rc = kube_list(kc, k->fallback, 500, on_item, &lc, NULL, 0, &status, e, sizeof e);
        }
        if (rc < 0 && status == 404) {
            while (json_array_size(out) > before)
                json_array_remove(out, json_array_size(out) - 1);
            if (!k->optional)
                note_f(note, ud, "%ss are not served (%s): none in the snapshot", k->kind, k->path);
            continue;
        }
        if (rc < 0) {
            util_errf(err, errlen, "list %s: %s", k->path, e[0] ? e : "failed");
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

json_t *snapshot_doc(json_t *items, json_t *config, int64_t wall_ms)
{
    char ts[40];
    util_rfc3339(wall_ms, ts, sizeof ts);
    return json_pack("{s:s, s:s, s:s, s:o, s:o}", "apiVersion", SNAPSHOT_API_VERSION, "kind", SNAPSHOT_KIND, "takenAt",
                     ts, "config", config ? config : json_null(), "items", items);
}

int snapshot_check(const json_t *doc, char *err, size_t errlen)
{
    if (!json_is_object(doc))
        return util_errf(err, errlen, "not a JSON object");
    const char *av = json_string_value(json_object_get(doc, "apiVersion"));
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!av || strcmp(av, SNAPSHOT_API_VERSION) || !kind || strcmp(kind, SNAPSHOT_KIND))
        return util_errf(err, errlen, "not a %s %s document (apiVersion %s, kind %s)", SNAPSHOT_API_VERSION,
                         SNAPSHOT_KIND, av ? av : "missing", kind ? kind : "missing");
    json_t *config = json_object_get(doc, "config");
    if (config && !json_is_null(config) && !json_is_object(config))
        return util_errf(err, errlen, "config is neither null nor an object");
    json_t *items = json_object_get(doc, "items");
    if (!json_is_array(items))
        return util_errf(err, errlen, "items is not a list");
    size_t i;
    json_t *o;
    json_array_foreach (items, i, o) {
        json_t *meta = json_object_get(o, "metadata");
        if (!json_is_object(o) || !json_is_string(json_object_get(o, "apiVersion")) ||
            !json_is_string(json_object_get(o, "kind")) || !json_is_object(meta) ||
            !json_is_string(json_object_get(meta, "name")))
            return util_errf(err, errlen, "items[%zu] is not an object with apiVersion, kind and metadata.name", i);
    }
    return 0;
}
