/* extras.c -- the Pod and Node fields that scoring and warnings need beyond
 * the core ones in types.c: ownerReferences, container images, preemption
 * policy, node images and the preferAvoidPods annotation. */
#include "api/types.h"
#include "api/unsupported.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define PREFER_AVOID_ANNOTATION "scheduler.alpha.kubernetes.io/preferAvoidPods"
#define MAX_NODE_IMAGES         4096 /* kubelet reports at most 50 by default */

char *image_normalize(const char *name)
{
    const char *colon = strrchr(name, ':'), *slash = strrchr(name, '/');
    /* kube: LastIndex(":") <= LastIndex("/") means no tag. */
    if (colon == NULL || (slash != NULL && colon < slash)) {
        size_t n = strlen(name);
        char *s = util_xmalloc(n + sizeof(":latest"));
        memcpy(s, name, n);
        memcpy(s + n, ":latest", sizeof(":latest"));
        return s;
    }
    return util_strdup(name);
}

/* ---- Node ---------------------------------------------------------------- */

/* Live node objects that report images (atomic): lets ImageLocality skip
 * its walk over the cluster when no node reports any, which is the common
 * case for clusters whose kubelets do not send images. */
static int nodes_with_images;

int node_images_any(void)
{
    return __atomic_load_n(&nodes_with_images, __ATOMIC_RELAXED) > 0;
}

static int image_cmp(const void *a, const void *b)
{
    return strcmp(((const node_image_t *)a)->name, ((const node_image_t *)b)->name);
}

static int parse_node_images(node_t *n, json_t *status, char *err, size_t errlen)
{
    json_t *arr = status ? json_object_get(status, "images") : NULL;
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return util_errf(err, errlen, "status.images: not an array");
    size_t i, j;
    json_t *img, *nm;
    size_t total = 0;
    json_array_foreach (arr, i, img) {
        json_t *names = json_is_object(img) ? json_object_get(img, "names") : NULL;
        if (!json_is_object(img) || (names && !json_is_null(names) && !json_is_array(names)))
            return util_errf(err, errlen, "status.images[%zu]: not an image", i);
        total += json_array_size(names);
    }
    if (total == 0)
        return 0;
    if (total > MAX_NODE_IMAGES)
        total = MAX_NODE_IMAGES;
    n->images = util_xcalloc(total, sizeof(*n->images));
    json_array_foreach (arr, i, img) {
        json_t *size = json_object_get(img, "sizeBytes");
        int64_t bytes = 0;
        if (size && !json_is_null(size)) {
            if (!json_is_integer(size) || json_integer_value(size) < 0)
                return util_errf(err, errlen, "status.images[%zu].sizeBytes: not a size", i);
            bytes = json_integer_value(size);
        }
        json_array_foreach (json_object_get(img, "names"), j, nm) {
            if (!json_is_string(nm))
                return util_errf(err, errlen, "status.images[%zu].names[%zu]: not a string", i, j);
            if ((size_t)n->nimages == total)
                break;
            n->images[n->nimages].name = util_strdup(json_string_value(nm));
            n->images[n->nimages].size = bytes;
            n->nimages++;
        }
    }
    qsort(n->images, (size_t)n->nimages, sizeof(*n->images), image_cmp);
    /* One entry per name, the first reported (kube keys its image map by name). */
    int w = 0;
    for (int r = 0; r < n->nimages; r++) {
        if (w > 0 && strcmp(n->images[w - 1].name, n->images[r].name) == 0) {
            free(n->images[r].name);
            continue;
        }
        n->images[w++] = n->images[r];
    }
    n->nimages = w;
    return 0;
}

/* A malformed annotation means "avoid nothing", as kube's
 * GetAvoidPodsFromNodeAnnotations error path scores the node normally. */
static void parse_avoid(node_t *n, json_t *meta)
{
    json_t *ann = meta ? json_object_get(meta, "annotations") : NULL;
    json_t *v = json_is_object(ann) ? json_object_get(ann, PREFER_AVOID_ANNOTATION) : NULL;
    if (!json_is_string(v))
        return;
    json_t *doc = json_loads(json_string_value(v), 0, NULL);
    json_t *arr = json_is_object(doc) ? json_object_get(doc, "preferAvoidPods") : NULL;
    size_t i;
    json_t *e;
    if (json_is_array(arr) && json_array_size(arr) > 0) {
        n->avoid = util_xcalloc(json_array_size(arr), sizeof(*n->avoid));
        json_array_foreach (arr, i, e) {
            json_t *ctl = json_object_get(json_object_get(e, "podSignature"), "podController");
            json_t *kind = json_object_get(ctl, "kind"), *uid = json_object_get(ctl, "uid");
            if (!json_is_string(kind) || !json_is_string(uid))
                continue;
            n->avoid[n->navoid].kind = util_strdup(json_string_value(kind));
            n->avoid[n->navoid].uid = util_strdup(json_string_value(uid));
            n->navoid++;
        }
    }
    json_decref(doc);
}

int node_parse_extras(node_t *n, json_t *obj, char *err, size_t errlen)
{
    json_t *status = json_object_get(obj, "status");
    if (parse_node_images(n, json_is_object(status) ? status : NULL, err, errlen) < 0) {
        for (int i = 0; i < n->nimages; i++)
            free(n->images[i].name);
        free(n->images);
        n->images = NULL;
        n->nimages = 0;
        return -1;
    }
    if (n->nimages > 0)
        __atomic_add_fetch(&nodes_with_images, 1, __ATOMIC_RELAXED);
    json_t *meta = json_object_get(obj, "metadata");
    parse_avoid(n, json_is_object(meta) ? meta : NULL);
    return 0;
}

void node_free_extras(node_t *n)
{
    if (n->nimages > 0)
        __atomic_sub_fetch(&nodes_with_images, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < n->nimages; i++)
        free(n->images[i].name);
    free(n->images);
    for (int i = 0; i < n->navoid; i++) {
        free(n->avoid[i].kind);
        free(n->avoid[i].uid);
    }
    free(n->avoid);
}

const node_image_t *node_find_image(const node_t *n, const char *name)
{
    int lo = 0, hi = n->nimages - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(n->images[mid].name, name);
        if (c == 0)
            return &n->images[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* ---- Pod ----------------------------------------------------------------- */

/* metav1.GetControllerOf: the first ownerReference with controller: true. */
static int parse_controller(pod_t *p, json_t *meta, char *err, size_t errlen)
{
    json_t *refs = meta ? json_object_get(meta, "ownerReferences") : NULL;
    const char *kind = NULL, *uid = NULL, *api = NULL, *name = NULL;
    if (refs && !json_is_null(refs)) {
        if (!json_is_array(refs))
            return util_errf(err, errlen, "metadata.ownerReferences: not an array");
        size_t i;
        json_t *r;
        json_array_foreach (refs, i, r) {
            if (!json_is_object(r))
                return util_errf(err, errlen, "metadata.ownerReferences[%zu]: not an object", i);
            json_t *ctl = json_object_get(r, "controller");
            json_t *k = json_object_get(r, "kind"), *u = json_object_get(r, "uid");
            json_t *a = json_object_get(r, "apiVersion"), *n = json_object_get(r, "name");
            if ((ctl && !json_is_null(ctl) && !json_is_boolean(ctl)) || (k && !json_is_string(k)) ||
                (u && !json_is_string(u)) || (a && !json_is_string(a)) || (n && !json_is_string(n)))
                return util_errf(err, errlen, "metadata.ownerReferences[%zu]: bad field type", i);
            if (json_is_true(ctl)) {
                kind = k ? json_string_value(k) : "";
                uid = u ? json_string_value(u) : "";
                api = a ? json_string_value(a) : "";
                name = n ? json_string_value(n) : "";
                break;
            }
        }
    }
    /* NULL when no controller: most pods in a big cluster, two allocations saved each. */
    p->controller_kind = kind ? util_strdup(kind) : NULL;
    p->controller_uid = kind ? util_strdup(uid ? uid : "") : NULL;
    p->controller_api = kind ? util_strdup(api ? api : "") : NULL;
    p->controller_name = kind ? util_strdup(name ? name : "") : NULL;
    return 0;
}

static int parse_images(pod_t *p, json_t *spec, char *err, size_t errlen)
{
    json_t *cs = spec ? json_object_get(spec, "containers") : NULL;
    if (!json_is_array(cs) || json_array_size(cs) == 0)
        return 0; /* types.c already rejected a non-array */
    p->images = util_xcalloc(json_array_size(cs), sizeof(*p->images));
    size_t i;
    json_t *c;
    json_array_foreach (cs, i, c) {
        json_t *img = json_is_object(c) ? json_object_get(c, "image") : NULL;
        if (img && !json_is_null(img) && !json_is_string(img))
            return util_errf(err, errlen, "spec.containers[%zu].image: not a string", i);
        p->images[p->ncontainers++] = image_normalize(json_is_string(img) ? json_string_value(img) : "");
    }
    return 0;
}

/* The names of a list of {name: ...} objects (spec.schedulingGates,
 * spec.resourceClaims) as "a, b", at most NAMES_MAX characters (then
 * ", ..."); *names NULL and *n 0 for an absent, null or empty list. */
#define NAMES_MAX 400
static int parse_names(json_t *spec, const char *field, char **names, int *n, char *err, size_t errlen)
{
    json_t *arr = spec ? json_object_get(spec, field) : NULL;
    *names = NULL;
    *n = 0;
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return util_errf(err, errlen, "spec.%s: not an array", field);
    sbuf_t b = { 0 };
    size_t i;
    json_t *e;
    json_array_foreach (arr, i, e) {
        json_t *nm = json_is_object(e) ? json_object_get(e, "name") : NULL;
        if (!json_is_string(nm)) {
            sbuf_free(&b);
            return util_errf(err, errlen, "spec.%s[%zu]: no name", field, i);
        }
        if (b.len <= NAMES_MAX)
            sbuf_printf(&b, "%s%s", i ? ", " : "", b.len < NAMES_MAX ? json_string_value(nm) : "...");
    }
    *n = (int)json_array_size(arr);
    *names = b.data;
    return 0;
}

/* When a bound pod's kubelet has not reported status.startTime yet, the
 * time it was bound: its PodScheduled=True condition's lastTransitionTime
 * (the API server sets it with the Binding), if later than started_ms (its
 * creation, types.c's default). It has run since then at most: counting
 * from its creation would add the time it waited to its runtime (a
 * recreated victim was evicted again 4 s after its bind, under a minimum
 * runtime of 6 s: composition seed 809706068). */
static void start_from_binding(pod_t *p, json_t *status, json_t *cond)
{
    json_t *st = json_object_get(cond, "status"), *at = json_object_get(cond, "lastTransitionTime");
    json_t *start = json_object_get(status, "startTime");
    if ((start && !json_is_null(start)) || !json_is_string(st) || strcmp(json_string_value(st), "True") != 0 ||
        !json_is_string(at))
        return;
    int64_t t = util_parse_rfc3339(json_string_value(at));
    if (t > p->started_ms)
        p->started_ms = t;
}

/* The PodScheduled condition's reason and message, and the bind time it
 * tells (start_from_binding); a malformed status is ignored (it only
 * spares a write). */
static void parse_scheduled_condition(pod_t *p, json_t *obj)
{
    json_t *status = json_object_get(obj, "status");
    json_t *conds = json_object_get(status, "conditions");
    size_t i;
    json_t *c;
    if (!json_is_array(conds))
        return;
    json_array_foreach (conds, i, c) {
        json_t *type = json_object_get(c, "type");
        if (!json_is_string(type) || strcmp(json_string_value(type), "PodScheduled") != 0)
            continue;
        json_t *reason = json_object_get(c, "reason"), *msg = json_object_get(c, "message");
        p->scheduled_reason = util_strdup(json_is_string(reason) ? json_string_value(reason) : "");
        p->scheduled_message = util_strdup(json_is_string(msg) ? json_string_value(msg) : "");
        start_from_binding(p, status, c);
        return;
    }
}

int pod_parse_extras(pod_t *p, json_t *obj, char *err, size_t errlen)
{
    json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    if (!json_is_object(meta))
        meta = NULL;
    if (!json_is_object(spec))
        spec = NULL;
    if (parse_controller(p, meta, err, errlen) < 0 || parse_images(p, spec, err, errlen) < 0)
        return -1;
    json_t *pol = spec ? json_object_get(spec, "preemptionPolicy") : NULL;
    if (pol && !json_is_null(pol) && !json_is_string(pol))
        return util_errf(err, errlen, "spec.preemptionPolicy: not a string");
    p->preempt_never = json_is_string(pol) && strcmp(json_string_value(pol), "Never") == 0;
    json_t *tsc = spec ? json_object_get(spec, "topologySpreadConstraints") : NULL;
    p->has_spread_constraints = json_is_array(tsc) && json_array_size(tsc) > 0;
    p->unsupported = pod_unsupported_fields(obj);
    if (parse_names(spec, "schedulingGates", &p->gates, &p->ngates, err, errlen) < 0 ||
        parse_names(spec, "resourceClaims", &p->claims, &p->nclaims, err, errlen) < 0)
        return -1;
    parse_scheduled_condition(p, obj);
    return 0;
}

void pod_free_extras(pod_t *p)
{
    free(p->controller_kind);
    free(p->controller_uid);
    free(p->controller_api);
    free(p->controller_name);
    for (int i = 0; i < p->ncontainers; i++)
        free(p->images[i]);
    free(p->images);
    free(p->unsupported);
    free(p->gates);
    free(p->claims);
    free(p->scheduled_reason);
    free(p->scheduled_message);
}
