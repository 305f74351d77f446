/* unsupported.c -- the list of pod fields ai-scheduler does not honour yet.
 *
 * To extend it, add a path: dot-separated keys from the pod object, "[]"
 * after a key walks every item of that array. A field counts as set when it
 * is present, not null and, for arrays and objects, not empty. Remove the
 * path when a plugin starts honouring the field. */
#include "api/unsupported.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define PA   "spec.affinity.podAffinity."
#define PAA  "spec.affinity.podAntiAffinity."
#define REQ  "requiredDuringSchedulingIgnoredDuringExecution[]."
#define PREF "preferredDuringSchedulingIgnoredDuringExecution[].podAffinityTerm."

static const char *const PATHS[] = {
    /* Newer than v1.20: an API server of v1.21+ may keep them. */
    PA REQ "namespaceSelector", PA PREF "namespaceSelector", PAA REQ "namespaceSelector", PAA PREF "namespaceSelector",
    /* Generic ephemeral volumes: alpha and off in v1.20, so dropped by a
     * default v1.20 API server; kept by one with the gate on (and by v1.21+),
     * where kube-scheduler's VolumeBinding waits for their claims. */
    "spec.volumes[].ephemeral", NULL
};

const char *unsupported_path(int i)
{
    if (i < 0 || i >= (int)(sizeof(PATHS) / sizeof(PATHS[0])))
        return NULL;
    return PATHS[i];
}

static int is_set(json_t *v)
{
    if (v == NULL || json_is_null(v))
        return 0;
    if (json_is_array(v))
        return json_array_size(v) > 0;
    if (json_is_object(v))
        return json_object_size(v) > 0;
    return 1;
}

/* Whether the rest of path (from p) is set below v. Recursion depth is the
 * number of path segments, fixed by the table. */
static int path_set(json_t *v, const char *p)
{
    if (*p == '\0')
        return is_set(v);
    if (!json_is_object(v))
        return 0;
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    const char *next = dot ? dot + 1 : p + len;
    int each = len > 2 && p[len - 2] == '[' && p[len - 1] == ']';
    char key[96];
    size_t klen = each ? len - 2 : len;
    if (klen >= sizeof(key))
        return 0;
    memcpy(key, p, klen);
    key[klen] = '\0';
    json_t *child = json_object_get(v, key);
    if (!each)
        return path_set(child, next);
    if (!json_is_array(child))
        return 0;
    size_t i;
    json_t *item;
    json_array_foreach (child, i, item)
        if (path_set(item, next))
            return 1;
    return 0;
}

char *pod_unsupported_fields(json_t *pod)
{
    sbuf_t b = { 0 };
    for (int i = 0; PATHS[i]; i++) {
        if (!path_set(pod, PATHS[i]))
            continue;
        sbuf_printf(&b, "%s%s", b.data ? ", " : "", PATHS[i]);
    }
    return b.data;
}
