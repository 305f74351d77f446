/* podres.c -- a pod's requests and non-zero cpu/memory as kube-scheduler
 * 1.33-1.35 counts them (see podres.h). */
#include "api/podres.h"
#include "api/jsonfield.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define NONZERO_MILLI_CPU 100                   /* kube DefaultMilliCPURequest */
#define NONZERO_MEMORY    (200LL * 1024 * 1024) /* kube DefaultMemoryRequest */

/* Which of cpu and memory a resource list names, even as "0": kube's
 * non-zero defaults fill only names that are absent. */
#define HAS_CPU 1u
#define HAS_MEM 2u

typedef struct rlist {
    resources_t r;
    unsigned has;
} rlist_t;

/* One container's effective requests (spec, or spec and status when it runs). */
typedef struct ctr {
    rlist_t req;
    int sidecar;
} ctr_t;

/* The pod's inputs, parsed once: the aggregate runs twice (with and without
 * the non-zero defaults). */
typedef struct podres_in {
    ctr_t *app, *init;
    size_t napp, ninit;
    rlist_t pod_level; /* spec.resources.requests */
    int pod_level_set; /* it names cpu, memory or hugepages-* */
    rlist_t overhead;
} podres_in_t;

/* ---- resource lists ---------------------------------------------------------- */

static int parse_list(json_t *list, const char *what, rlist_t *out, char *err, size_t errlen)
{
    char sub[256];
    out->has = 0;
    if (res_from_json(&out->r, list, sub, sizeof sub) < 0)
        return util_errf(err, errlen, "%s: %s", what, sub);
    if (list && json_object_get(list, "cpu"))
        out->has |= HAS_CPU;
    if (list && json_object_get(list, "memory"))
        out->has |= HAS_MEM;
    return 0;
}

/* obj[key] as a string (borrowed); "" when absent or null. */
static int get_str(json_t *obj, const char *key, const char **out, const char *what, char *err, size_t errlen)
{
    json_t *v;
    if (jf_get(obj, key, JSON_STRING, &v, what, err, errlen) < 0)
        return -1;
    *out = v ? json_string_value(v) : "";
    return 0;
}

/* Every scalar of src must have found room in dst; res_add/res_max drop a
 * name that does not fit, which would silently under-count a request. */
static int scalars_fit(const resources_t *dst, const resources_t *src, char *err, size_t errlen)
{
    for (int i = 0; i < src->nscalar; i++) {
        int found = 0;
        for (int j = 0; j < dst->nscalar && !found; j++)
            found = strcmp(dst->scalar[j].name, src->scalar[i].name) == 0;
        if (!found)
            return util_errf(err, errlen, "pod requests more than %d extended resources", RES_MAX_SCALAR);
    }
    return 0;
}

static int list_add(rlist_t *dst, const rlist_t *src, char *err, size_t errlen)
{
    res_add(&dst->r, &src->r);
    dst->has |= src->has;
    return scalars_fit(&dst->r, &src->r, err, errlen);
}

static int list_max(rlist_t *dst, const rlist_t *src, char *err, size_t errlen)
{
    res_max(&dst->r, &src->r);
    dst->has |= src->has;
    return scalars_fit(&dst->r, &src->r, err, errlen);
}

/* kube's applyNonMissing: the defaults for the names in mask that the
 * container does not name. */
static rlist_t with_defaults(const rlist_t *l, unsigned mask)
{
    rlist_t out = *l;
    if ((mask & HAS_CPU) && !(l->has & HAS_CPU))
        out.r.milli_cpu = res_sat_add(out.r.milli_cpu, NONZERO_MILLI_CPU);
    if ((mask & HAS_MEM) && !(l->has & HAS_MEM))
        out.r.memory = res_sat_add(out.r.memory, NONZERO_MEMORY);
    out.has |= mask;
    return out;
}

/* ---- container statuses (in-place resize) ------------------------------------ */

int podres_is_sidecar(json_t *c, const char *what, char *err, size_t errlen)
{
    const char *policy;
    if (get_str(c, "restartPolicy", &policy, what, err, errlen) < 0)
        return -1;
    return strcmp(policy, "Always") == 0;
}

/* kube's IsPodResizeInfeasible: the first PodResizePending condition says
 * Infeasible. */
static int resize_infeasible(json_t *status, int *out, char *err, size_t errlen)
{
    json_t *conds, *c;
    size_t i;
    *out = 0;
    if (jf_get(status, "conditions", JSON_ARRAY, &conds, "status", err, errlen) < 0)
        return -1;
    json_array_foreach (conds, i, c) {
        const char *type, *reason;
        if (!json_is_object(c))
            return util_errf(err, errlen, "status.conditions[%zu]: not an object", i);
        if (get_str(c, "type", &type, "status.conditions[]", err, errlen) < 0 ||
            get_str(c, "reason", &reason, "status.conditions[]", err, errlen) < 0)
            return -1;
        if (strcmp(type, "PodResizePending") == 0) {
            *out = strcmp(reason, "Infeasible") == 0;
            return 0;
        }
    }
    return 0;
}

/* The last status named name in status[key], or NULL. */
static int find_in(json_t *status, const char *key, const char *name, json_t **out, char *err, size_t errlen)
{
    json_t *arr, *cs;
    size_t i;
    if (jf_get(status, key, JSON_ARRAY, &arr, "status", err, errlen) < 0)
        return -1;
    json_array_foreach (arr, i, cs) {
        const char *n;
        if (!json_is_object(cs))
            return util_errf(err, errlen, "status.%s[%zu]: not an object", key, i);
        char what[48];
        snprintf(what, sizeof what, "status.%s[%zu]", key, i);
        if (get_str(cs, "name", &n, what, err, errlen) < 0)
            return -1;
        if (strcmp(n, name) == 0)
            *out = cs;
    }
    return 0;
}

/* The status of the container called name: kube looks it up in a map filled
 * from containerStatuses, then initContainerStatuses, so a later entry wins. */
static int find_status(json_t *status, const char *name, json_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (find_in(status, "containerStatuses", name, out, err, errlen) < 0)
        return -1;
    return find_in(status, "initContainerStatuses", name, out, err, errlen);
}

/* kube 1.33-1.35's determineContainerReqs for a container whose status has
 * resources: the largest of what the spec asks, what the kubelet allocated
 * and what the runtime applied; the spec is left out while the resize is
 * infeasible, since the kubelet will never grant it. */
static int status_requests(json_t *cs, const char *what, int infeasible, rlist_t *req, char *err, size_t errlen)
{
    json_t *res, *requests;
    rlist_t actual, alloc, out = { 0 };
    char sub[128];
    if (jf_get(cs, "resources", JSON_OBJECT, &res, what, err, errlen) < 0)
        return -1;
    if (!res)
        return 0; /* kube uses the spec when the status has no resources */
    snprintf(sub, sizeof sub, "%s.resources", what);
    if (jf_get(res, "requests", JSON_OBJECT, &requests, sub, err, errlen) < 0)
        return -1;
    snprintf(sub, sizeof sub, "%s.resources.requests", what);
    if (parse_list(requests, sub, &actual, err, errlen) < 0)
        return -1;
    snprintf(sub, sizeof sub, "%s.allocatedResources", what);
    if (parse_list(json_object_get(cs, "allocatedResources"), sub, &alloc, err, errlen) < 0)
        return -1;
    if ((!infeasible && list_max(&out, req, err, errlen) < 0) || list_max(&out, &actual, err, errlen) < 0 ||
        list_max(&out, &alloc, err, errlen) < 0)
        return -1;
    *req = out;
    return 0;
}

/* ---- parsing ------------------------------------------------------------------ */

/* One container: its spec requests, or, when the pod has a status, what
 * status_requests makes of them (kube reads the status of app containers
 * and sidecars only). */
static int parse_container(json_t *c, const char *what, json_t *status, int infeasible, int init, ctr_t *out, char *err,
                           size_t errlen)
{
    json_t *resources, *requests, *cs;
    const char *name;
    char sub[96];
    if (!json_is_object(c))
        return util_errf(err, errlen, "%s: not an object", what);
    snprintf(sub, sizeof sub, "%s.resources.requests", what);
    if (jf_get(c, "resources", JSON_OBJECT, &resources, what, err, errlen) < 0 ||
        jf_get(resources, "requests", JSON_OBJECT, &requests, what, err, errlen) < 0 ||
        parse_list(requests, sub, &out->req, err, errlen) < 0)
        return -1;
    out->sidecar = init ? podres_is_sidecar(c, what, err, errlen) : 0;
    if (out->sidecar < 0)
        return -1;
    if (!status || (init && !out->sidecar))
        return 0;
    if (get_str(c, "name", &name, what, err, errlen) < 0 || find_status(status, name, &cs, err, errlen) < 0)
        return -1;
    snprintf(sub, sizeof sub, "status of %s", what);
    return cs ? status_requests(cs, sub, infeasible, &out->req, err, errlen) : 0;
}

static int parse_containers(json_t *spec, const char *key, json_t *status, int infeasible, ctr_t **out, size_t *n,
                            char *err, size_t errlen)
{
    json_t *arr, *c;
    size_t i;
    char what[64];
    if (jf_get(spec, key, JSON_ARRAY, &arr, "spec", err, errlen) < 0)
        return -1;
    *n = arr ? json_array_size(arr) : 0;
    *out = *n ? util_xcalloc(*n, sizeof **out) : NULL;
    json_array_foreach (arr, i, c) {
        snprintf(what, sizeof what, "spec.%s[%zu]", key, i);
        int init = strcmp(key, "initContainers") == 0;
        if (parse_container(c, what, status, infeasible, init, &(*out)[i], err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int is_hugepages(const char *name)
{
    return strncmp(name, "hugepages-", 10) == 0;
}

/* spec.resources.requests: kube honours cpu, memory and hugepages-* there. */
static int parse_pod_level(json_t *spec, podres_in_t *in, char *err, size_t errlen)
{
    json_t *res, *requests;
    if (jf_get(spec, "resources", JSON_OBJECT, &res, "spec", err, errlen) < 0 ||
        jf_get(res, "requests", JSON_OBJECT, &requests, "spec.resources", err, errlen) < 0 ||
        parse_list(requests, "spec.resources.requests", &in->pod_level, err, errlen) < 0)
        return -1;
    in->pod_level_set = in->pod_level.has != 0;
    for (int i = 0; i < in->pod_level.r.nscalar; i++)
        in->pod_level_set |= is_hugepages(in->pod_level.r.scalar[i].name);
    return 0;
}

static void input_free(podres_in_t *in)
{
    free(in->app);
    free(in->init);
}

static int parse_input(json_t *spec, json_t *status, podres_in_t *in, char *err, size_t errlen)
{
    json_t *overhead;
    int infeasible = 0;
    memset(in, 0, sizeof *in);
    if (resize_infeasible(status, &infeasible, err, errlen) < 0 ||
        parse_containers(spec, "containers", status, infeasible, &in->app, &in->napp, err, errlen) < 0 ||
        parse_containers(spec, "initContainers", status, infeasible, &in->init, &in->ninit, err, errlen) < 0 ||
        parse_pod_level(spec, in, err, errlen) < 0 ||
        jf_get(spec, "overhead", JSON_OBJECT, &overhead, "spec", err, errlen) < 0 ||
        parse_list(overhead, "spec.overhead", &in->overhead, err, errlen) < 0)
        return -1;
    return 0;
}

/* ---- the aggregate ------------------------------------------------------------- */

/* kube's AggregateContainerRequests (KEP-753): app containers and sidecars
 * add up; init container i needs itself plus the sidecars started before it
 * (a sidecar: the sidecars up to and including itself); the pod needs the
 * larger of the two. mask: the non-zero defaults to apply per container. */
static int aggregate(const podres_in_t *in, unsigned mask, rlist_t *out, char *err, size_t errlen)
{
    rlist_t sum = { 0 }, sidecars = { 0 }, peak = { 0 };
    for (size_t i = 0; i < in->napp; i++) {
        rlist_t c = with_defaults(&in->app[i].req, mask);
        if (list_add(&sum, &c, err, errlen) < 0)
            return -1;
    }
    for (size_t i = 0; i < in->ninit; i++) {
        rlist_t c = with_defaults(&in->init[i].req, mask);
        if (in->init[i].sidecar) {
            if (list_add(&sum, &c, err, errlen) < 0 || list_add(&sidecars, &c, err, errlen) < 0)
                return -1;
            c = sidecars;
        } else if (list_add(&c, &sidecars, err, errlen) < 0) {
            return -1;
        }
        if (list_max(&peak, &c, err, errlen) < 0)
            return -1;
    }
    if (list_max(&sum, &peak, err, errlen) < 0)
        return -1;
    *out = sum;
    return 0;
}

/* The pod's value of a hugepages-* name replaces the containers' one. */
static int set_scalar(resources_t *r, const res_scalar_t *s, char *err, size_t errlen)
{
    int64_t cur = res_get_scalar(r, s->name);
    if (res_add_scalar(r, s->name, s->value - cur) < 0)
        return util_errf(err, errlen, "pod requests more than %d extended resources", RES_MAX_SCALAR);
    return 0;
}

/* kube's PodRequests after the aggregate: pod-level requests replace the
 * containers' for the names they give, then the overhead is added. */
static int finish(const podres_in_t *in, rlist_t *l, char *err, size_t errlen)
{
    const rlist_t *pl = &in->pod_level;
    if (pl->has & HAS_CPU)
        l->r.milli_cpu = pl->r.milli_cpu;
    if (pl->has & HAS_MEM)
        l->r.memory = pl->r.memory;
    l->has |= pl->has;
    for (int i = 0; i < pl->r.nscalar; i++)
        if (is_hugepages(pl->r.scalar[i].name) && set_scalar(&l->r, &pl->r.scalar[i], err, errlen) < 0)
            return -1;
    return list_add(l, &in->overhead, err, errlen);
}

static int usage(const podres_in_t *in, unsigned mask, rlist_t *out, char *err, size_t errlen)
{
    return aggregate(in, mask, out, err, errlen) < 0 ? -1 : finish(in, out, err, errlen);
}

int podres_compute(json_t *spec, json_t *status, pod_usage_t *out, char *err, size_t errlen)
{
    podres_in_t in;
    rlist_t req, nz;
    memset(out, 0, sizeof *out);
    int rc = parse_input(spec, status, &in, err, errlen);
    if (rc == 0)
        rc = usage(&in, 0, &req, err, errlen);
    if (rc == 0) {
        /* kube's getNonMissingContainerRequests: every container without
         * cpu or memory counts the default, unless the pod sets pod-level
         * requests; then only a name missing from the whole pod does. */
        unsigned mask = HAS_CPU | HAS_MEM;
        if (in.pod_level_set)
            mask &= ~req.has;
        nz = req;
        if (mask)
            rc = usage(&in, mask, &nz, err, errlen);
    }
    input_free(&in);
    if (rc < 0)
        return -1;
    out->requests = req.r;
    out->nonzero_cpu = nz.r.milli_cpu;
    out->nonzero_mem = nz.r.memory;
    return 0;
}
