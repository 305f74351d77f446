/* fuzz_storage.c -- the volume objects from the API server (a PV, a PVC, a
 * StorageClass, a CSINode) and a pod spec's volumes. The input's "kind"
 * picks the parser; anything else is tried as a pod spec. */
#include "fuzz.h"
#include "api/storage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = fuzz_json(data, size);
    if (!j)
        return 0;
    char err[256] = "";
    const char *kind = json_string_value(json_object_get(j, "kind"));
    if (!kind)
        kind = "";
    if (!strcmp(kind, "PersistentVolume")) {
        pv_t *v = pv_from_json(j, err, sizeof err);
        if (v)
            pv_unref(v);
    } else if (!strcmp(kind, "PersistentVolumeClaim")) {
        pvc_t *c = pvc_from_json(j, err, sizeof err);
        if (c)
            pvc_unref(c);
    } else if (!strcmp(kind, "StorageClass")) {
        storage_class_t *c = storage_class_from_json(j, err, sizeof err);
        if (c)
            storage_class_unref(c);
    } else if (!strcmp(kind, "CSINode")) {
        csinode_t *c = csinode_from_json(j, err, sizeof err);
        if (c)
            csinode_unref(c);
    } else {
        pod_volume_t *v = NULL;
        int n = 0;
        if (pod_volumes_from_json(j, &v, &n, err, sizeof err) == 0)
            pod_volumes_free(v, n);
    }
    json_decref(j);
    return 0;
}
