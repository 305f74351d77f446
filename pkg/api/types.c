/* types.c -- Pod and Node parsing from API JSON, reference counting, and
 * toleration matching. */
#include "api/types.h"
#include "api/jsonfield.h"
#include "api/podext.h"
#include "api/podres.h"
#include "api/storage.h"
#include "util/log.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* ---- JSON field helpers: missing/null means default, a wrong type is an error ---- */

/* *out = copy of obj[key] or of def. */
static int get_str(json_t *obj, const char *key, const char *def, char **out, const char *what, char *err,
                   size_t errlen)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) {
        *out = util_strdup(def);
        return 0;
    }
    if (!json_is_string(v))
        return util_errf(err, errlen, "%s.%s: not a string", what, key);
    *out = util_strdup(json_string_value(v));
    return 0;
}

/* *out = obj[key] as an object, or NULL when absent. */
static int get_obj(json_t *obj, const char *key, json_t **out, const char *what, char *err, size_t errlen)
{
    return jf_get(obj, key, JSON_OBJECT, out, what, err, errlen);
}

static int get_arr(json_t *obj, const char *key, json_t **out, const char *what, char *err, size_t errlen)
{
    return jf_get(obj, key, JSON_ARRAY, out, what, err, errlen);
}

/* Integer in [lo, hi]; def when absent. */
static int get_int(json_t *obj, const char *key, int64_t def, int64_t lo, int64_t hi, int64_t *out, const char *what,
                   char *err, size_t errlen)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v))
        return util_errf(err, errlen, "%s.%s: not an integer", what, key);
    json_int_t i = json_integer_value(v);
    if (i < lo || i > hi)
        return util_errf(err, errlen, "%s.%s: %lld out of range", what, key, (long long)i);
    *out = (int64_t)i;
    return 0;
}

/* RFC 3339 timestamp as wall ms; def when absent. */
static int get_time(json_t *obj, const char *key, int64_t def, int64_t *out, const char *what, char *err, size_t errlen)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    int64_t t = json_is_string(v) ? util_parse_rfc3339(json_string_value(v)) : -1;
    if (t < 0)
        return util_errf(err, errlen, "%s.%s: not an RFC 3339 time", what, key);
    *out = t;
    return 0;
}

static int parse_effect(json_t *v, int allow_empty, taint_effect_t *out)
{
    const char *s = json_is_string(v) ? json_string_value(v) : (v && !json_is_null(v) ? NULL : "");
    if (!s)
        return -1;
    if (strcmp(s, "NoSchedule") == 0)
        *out = EFFECT_NO_SCHEDULE;
    else if (strcmp(s, "PreferNoSchedule") == 0)
        *out = EFFECT_PREFER_NO_SCHEDULE;
    else if (strcmp(s, "NoExecute") == 0)
        *out = EFFECT_NO_EXECUTE;
    else if (allow_empty && s[0] == '\0')
        *out = EFFECT_ALL;
    else
        return -1;
    return 0;
}

/* ---- Node ------------------------------------------------------------------ */

static void node_free(node_t *n)
{
    free(n->name);
    free(n->uid);
    free(n->resource_version);
    labels_free(&n->labels);
    for (int i = 0; i < n->ntaints; i++) {
        free(n->taints[i].key);
        free(n->taints[i].value);
    }
    free(n->taints);
    node_free_extras(n);
    free(n);
}

static int parse_taints(node_t *n, json_t *arr, char *err, size_t errlen)
{
    if (!arr || json_array_size(arr) == 0)
        return 0;
    n->taints = util_xcalloc(json_array_size(arr), sizeof *n->taints);
    size_t i;
    json_t *t;
    json_array_foreach (arr, i, t) {
        if (!json_is_object(t))
            return util_errf(err, errlen, "spec.taints[%zu]: not an object", i);
        taint_t *tt = &n->taints[n->ntaints];
        if (get_str(t, "key", "", &tt->key, "spec.taints[]", err, errlen) < 0)
            return -1;
        n->ntaints++; /* counted now so node_free releases the key */
        if (get_str(t, "value", "", &tt->value, "spec.taints[]", err, errlen) < 0)
            return -1;
        if (parse_effect(json_object_get(t, "effect"), 0, &tt->effect) < 0)
            return util_errf(err, errlen, "spec.taints[%zu]: bad effect", i);
    }
    return 0;
}

node_t *node_from_json(json_t *obj, char *err, size_t errlen)
{
    if (!json_is_object(obj)) {
        util_errf(err, errlen, "node: not an object");
        return NULL;
    }
    node_t *n = util_xcalloc(1, sizeof *n);
    n->refs = 1;
    json_t *meta, *spec, *status, *taints, *alloc;
    if (get_obj(obj, "metadata", &meta, "node", err, errlen) < 0 ||
        get_obj(obj, "spec", &spec, "node", err, errlen) < 0 ||
        get_obj(obj, "status", &status, "node", err, errlen) < 0)
        goto fail;
    if (get_str(meta, "name", "", &n->name, "metadata", err, errlen) < 0 ||
        get_str(meta, "uid", "", &n->uid, "metadata", err, errlen) < 0 ||
        get_str(meta, "resourceVersion", "", &n->resource_version, "metadata", err, errlen) < 0)
        goto fail;
    if (n->name[0] == '\0') {
        util_errf(err, errlen, "node: metadata.name missing");
        goto fail;
    }
    if (labels_from_json(&n->labels, meta ? json_object_get(meta, "labels") : NULL, err, errlen) < 0)
        goto fail;

    json_t *unsched = spec ? json_object_get(spec, "unschedulable") : NULL;
    if (unsched && !json_is_null(unsched) && !json_is_boolean(unsched)) {
        util_errf(err, errlen, "spec.unschedulable: not a boolean");
        goto fail;
    }
    n->unschedulable = json_is_true(unsched);
    if (get_arr(spec, "taints", &taints, "spec", err, errlen) < 0 || parse_taints(n, taints, err, errlen) < 0)
        goto fail;

    /* Extended resources beyond what a vector holds are left out, never the
     * node: pods asking for them just do not fit there. */
    int ignored = 0;
    if (res_from_json_node(&n->capacity, status ? json_object_get(status, "capacity") : NULL, &ignored, err, errlen) <
        0)
        goto fail;
    alloc = status ? json_object_get(status, "allocatable") : NULL;
    if (!alloc || json_is_null(alloc))
        n->allocatable = n->capacity;
    else if (res_from_json_node(&n->allocatable, alloc, &ignored, err, errlen) < 0)
        goto fail;
    if (ignored)
        LOG_W("node %s: %d extended resource entries left out (more than %d names)", n->name, ignored, RES_MAX_SCALAR);
    if (node_parse_extras(n, obj, err, errlen) < 0)
        goto fail;
    return n;

fail:
    node_free(n);
    return NULL;
}

node_t *node_ref(node_t *n)
{
    if (n)
        __atomic_add_fetch(&n->refs, 1, __ATOMIC_RELAXED);
    return n;
}

void node_unref(node_t *n)
{
    /* acq_rel: the freeing thread must see every other holder's last use. */
    if (n && __atomic_sub_fetch(&n->refs, 1, __ATOMIC_ACQ_REL) == 0)
        node_free(n);
}

/* ---- Pod ------------------------------------------------------------------- */

static void pod_free(pod_t *p)
{
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->key);
    free(p->resource_version);
    free(p->scheduler_name);
    free(p->node_name);
    free(p->nominated_node);
    free(p->pool);
    free(p->borrowed_from);
    labels_free(&p->labels);
    selector_free(&p->node_selector);
    for (int i = 0; i < p->naffinity_terms; i++)
        selector_free(&p->affinity_terms[i]);
    free(p->affinity_terms);
    for (int i = 0; i < p->npreferred; i++)
        selector_free(&p->preferred[i].term);
    free(p->preferred);
    for (int i = 0; i < p->ntolerations; i++) {
        free(p->tolerations[i].key);
        free(p->tolerations[i].value);
    }
    free(p->tolerations);
    pod_volumes_free(p->volumes, p->nvolumes);
    free(p->ports);
    pod_free_extras(p);
    pod_affinity_free(p->interpod);
    pod_ext_free_all(p);
    free(p);
}

/* A positive decimal number of seconds; -1 for anything else, which the
 * scheduler reports instead of guessing. */
static int64_t parse_lifetime(json_t *v)
{
    if (!v || json_is_null(v))
        return 0;
    const char *s = json_string_value(v);
    if (!s || !s[0] || strlen(s) > 12)
        return -1;
    int64_t n = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9')
            return -1;
        n = n * 10 + (*c - '0');
    }
    return n > 0 ? n : -1;
}

/* A duration annotation: DURATION_UNSET when absent, DURATION_BAD when
 * it is not a duration (or is 0 and zero_ok is not set). */
static int64_t parse_duration_ann(json_t *ann, const char *key, int zero_ok)
{
    json_t *v = ann ? json_object_get(ann, key) : NULL;
    if (!v || json_is_null(v))
        return DURATION_UNSET;
    int64_t ms;
    if (!json_is_string(v) || util_parse_duration_ms(json_string_value(v), &ms) != 0 || (ms == 0 && !zero_ok))
        return DURATION_BAD;
    return ms;
}

static void parse_lifecycle(pod_t *p, json_t *ann)
{
    p->preempt_min_runtime_ms = parse_duration_ann(ann, PREEMPT_MIN_RUNTIME_ANNOTATION, 1);
    p->reclaim_min_runtime_ms = parse_duration_ann(ann, RECLAIM_MIN_RUNTIME_ANNOTATION, 1);
    p->checkpoint_grace_ms = parse_duration_ann(ann, CHECKPOINT_GRACE_ANNOTATION, 1);
    p->expected_runtime_ms = parse_duration_ann(ann, EXPECTED_RUNTIME_ANNOTATION, 0);
    const char *at = ann ? json_string_value(json_object_get(ann, CHECKPOINTED_AT_ANNOTATION)) : NULL;
    int64_t t = at ? util_parse_rfc3339(at) : -1;
    p->checkpointed_at_ms = t > 0 ? t : 0;
}

static int parse_pod_meta(pod_t *p, json_t *meta, char *err, size_t errlen)
{
    json_t *ann;
    if (get_str(meta, "namespace", "default", &p->ns, "metadata", err, errlen) < 0 ||
        get_str(meta, "name", "", &p->name, "metadata", err, errlen) < 0 ||
        get_str(meta, "uid", "", &p->uid, "metadata", err, errlen) < 0 ||
        get_str(meta, "resourceVersion", "", &p->resource_version, "metadata", err, errlen) < 0 ||
        get_obj(meta, "annotations", &ann, "metadata", err, errlen) < 0 ||
        get_str(ann, POOL_ANNOTATION, "", &p->pool, "metadata.annotations", err, errlen) < 0 ||
        get_str(ann, BORROWED_ANNOTATION, "", &p->borrowed_from, "metadata.annotations", err, errlen) < 0 ||
        get_time(meta, "creationTimestamp", 0, &p->created_ms, "metadata", err, errlen) < 0)
        return -1;
    if (p->name[0] == '\0')
        return util_errf(err, errlen, "pod: metadata.name missing");
    size_t klen = strlen(p->ns) + strlen(p->name) + 2;
    p->key = util_xmalloc(klen);
    snprintf(p->key, klen, "%s/%s", p->ns, p->name);
    json_t *del = meta ? json_object_get(meta, "deletionTimestamp") : NULL;
    p->deleting = del && !json_is_null(del);
    p->lifetime_s = parse_lifetime(ann ? json_object_get(ann, LIFETIME_ANNOTATION) : NULL);
    parse_lifecycle(p, ann);
    return labels_from_json(&p->labels, meta ? json_object_get(meta, "labels") : NULL, err, errlen);
}

static int parse_host_ports(pod_t *p, json_t *c, const char *what, char *err, size_t errlen)
{
    json_t *ports;
    if (get_arr(c, "ports", &ports, what, err, errlen) < 0)
        return -1;
    size_t i;
    json_t *pt;
    json_array_foreach (ports, i, pt) {
        int64_t hp;
        char *proto = NULL, *ip = NULL;
        if (!json_is_object(pt))
            return util_errf(err, errlen, "%s.ports[%zu]: not an object", what, i);
        if (get_int(pt, "hostPort", 0, INT32_MIN, INT32_MAX, &hp, what, err, errlen) < 0)
            return -1;
        if (hp <= 0)
            continue; /* only host ports occupy anything on the node */
        if (hp > 65535)
            return util_errf(err, errlen, "%s.ports[%zu]: hostPort %lld out of range", what, i, (long long)hp);
        if (get_str(pt, "protocol", "TCP", &proto, what, err, errlen) < 0)
            return -1;
        if (get_str(pt, "hostIP", "", &ip, what, err, errlen) < 0) {
            free(proto);
            return -1;
        }
        host_port_t h = { .port = (int)hp };
        int bad = strlen(proto) >= sizeof h.protocol || strlen(ip) >= sizeof h.host_ip;
        if (!bad) {
            /* protocol "" is defaulted to TCP like the API server does. */
            snprintf(h.protocol, sizeof h.protocol, "%s", proto[0] ? proto : "TCP");
            snprintf(h.host_ip, sizeof h.host_ip, "%s", ip);
        }
        free(proto);
        free(ip);
        if (bad)
            return util_errf(err, errlen, "%s.ports[%zu]: bad protocol or hostIP", what, i);
        p->ports = util_xrealloc(p->ports, (size_t)(p->nports + 1) * sizeof *p->ports);
        p->ports[p->nports++] = h;
    }
    return 0;
}

/* The pod's requests and non-zero cpu/memory (api/podres.h), and the host
 * ports of its app containers and sidecars (kube counts a sidecar's since
 * 1.33: kubernetes#132040). */
static int parse_requests(pod_t *p, json_t *spec, json_t *status, char *err, size_t errlen)
{
    json_t *containers, *inits;
    char what[64];
    pod_usage_t u;
    if (podres_compute(spec, status, &u, err, errlen) < 0)
        return -1;
    p->requests = u.requests;
    p->requests.pods = 1; /* the pod itself occupies one pod slot */
    p->nonzero_cpu = u.nonzero_cpu;
    p->nonzero_mem = u.nonzero_mem;
    if (get_arr(spec, "containers", &containers, "spec", err, errlen) < 0 ||
        get_arr(spec, "initContainers", &inits, "spec", err, errlen) < 0)
        return -1;
    size_t i;
    json_t *c;
    json_array_foreach (containers, i, c) {
        snprintf(what, sizeof what, "spec.containers[%zu]", i);
        if (parse_host_ports(p, c, what, err, errlen) < 0)
            return -1;
    }
    json_array_foreach (inits, i, c) {
        snprintf(what, sizeof what, "spec.initContainers[%zu]", i);
        int sidecar = podres_is_sidecar(c, what, err, errlen);
        if (sidecar < 0 || (sidecar && parse_host_ports(p, c, what, err, errlen) < 0))
            return -1;
    }
    return 0;
}

static int parse_affinity(pod_t *p, json_t *spec, char *err, size_t errlen)
{
    json_t *aff, *na, *req, *terms, *pref;
    char sub[256];
    if (get_obj(spec, "affinity", &aff, "spec", err, errlen) < 0 ||
        get_obj(aff, "nodeAffinity", &na, "spec.affinity", err, errlen) < 0 ||
        get_obj(na, "requiredDuringSchedulingIgnoredDuringExecution", &req, "spec.affinity.nodeAffinity", err, errlen) <
            0 ||
        get_arr(req, "nodeSelectorTerms", &terms, "nodeAffinity.required", err, errlen) < 0 ||
        get_arr(na, "preferredDuringSchedulingIgnoredDuringExecution", &pref, "spec.affinity.nodeAffinity", err,
                errlen) < 0)
        return -1;

    size_t i;
    json_t *t;
    if (terms && json_array_size(terms) > 0) {
        p->affinity_terms = util_xcalloc(json_array_size(terms), sizeof *p->affinity_terms);
        json_array_foreach (terms, i, t) {
            if (selector_from_node_term(&p->affinity_terms[i], t, sub, sizeof sub) < 0)
                return util_errf(err, errlen, "nodeSelectorTerms[%zu]: %s", i, sub);
            p->naffinity_terms++;
        }
    }
    if (pref && json_array_size(pref) > 0) {
        p->preferred = util_xcalloc(json_array_size(pref), sizeof *p->preferred);
        json_array_foreach (pref, i, t) {
            int64_t w;
            json_t *term;
            if (!json_is_object(t))
                return util_errf(err, errlen, "preferredDuringScheduling[%zu]: not an object", i);
            if (get_int(t, "weight", 0, 0, 100, &w, "preferredDuringScheduling[]", err, errlen) < 0)
                return -1;
            term = json_object_get(t, "preference");
            /* An absent preference is Go's zero NodeSelectorTerm: no
             * requirements, which matches no node. */
            if (!term || json_is_null(term))
                p->preferred[i].term = (selector_t){ NULL, 0 };
            else if (selector_from_node_term(&p->preferred[i].term, term, sub, sizeof sub) < 0)
                return util_errf(err, errlen, "preferredDuringScheduling[%zu]: %s", i, sub);
            p->preferred[i].weight = (int)w;
            p->npreferred++;
        }
    }
    return 0;
}

static int parse_tolerations(pod_t *p, json_t *spec, char *err, size_t errlen)
{
    json_t *arr;
    if (get_arr(spec, "tolerations", &arr, "spec", err, errlen) < 0)
        return -1;
    if (!arr || json_array_size(arr) == 0)
        return 0;
    p->tolerations = util_xcalloc(json_array_size(arr), sizeof *p->tolerations);
    size_t i;
    json_t *t;
    json_array_foreach (arr, i, t) {
        if (!json_is_object(t))
            return util_errf(err, errlen, "spec.tolerations[%zu]: not an object", i);
        toleration_t *tt = &p->tolerations[p->ntolerations];
        if (get_str(t, "key", "", &tt->key, "spec.tolerations[]", err, errlen) < 0)
            return -1;
        p->ntolerations++; /* counted now so pod_free releases the key */
        if (get_str(t, "value", "", &tt->value, "spec.tolerations[]", err, errlen) < 0)
            return -1;
        json_t *op = json_object_get(t, "operator");
        const char *ops = json_is_string(op) ? json_string_value(op) : "";
        if (op && !json_is_null(op) && !json_is_string(op))
            return util_errf(err, errlen, "spec.tolerations[%zu]: operator not a string", i);
        if (strcmp(ops, "Exists") == 0)
            tt->op_exists = 1;
        else if (ops[0] != '\0' && strcmp(ops, "Equal") != 0)
            return util_errf(err, errlen, "spec.tolerations[%zu]: bad operator %.32s", i, ops);
        if (parse_effect(json_object_get(t, "effect"), 1, &tt->effect) < 0)
            return util_errf(err, errlen, "spec.tolerations[%zu]: bad effect", i);
    }
    return 0;
}

static pod_phase_t parse_phase(const char *s)
{
    if (s[0] == '\0' || strcmp(s, "Pending") == 0)
        return PHASE_PENDING;
    if (strcmp(s, "Running") == 0)
        return PHASE_RUNNING;
    if (strcmp(s, "Succeeded") == 0)
        return PHASE_SUCCEEDED;
    if (strcmp(s, "Failed") == 0)
        return PHASE_FAILED;
    return PHASE_UNKNOWN;
}

pod_t *pod_from_json(json_t *obj, char *err, size_t errlen)
{
    if (!json_is_object(obj)) {
        util_errf(err, errlen, "pod: not an object");
        return NULL;
    }
    pod_t *p = util_xcalloc(1, sizeof *p);
    p->refs = 1;
    json_t *meta, *spec, *status, *nsel;
    char *phase = NULL;
    int64_t prio;
    if (get_obj(obj, "metadata", &meta, "pod", err, errlen) < 0 ||
        get_obj(obj, "spec", &spec, "pod", err, errlen) < 0 ||
        get_obj(obj, "status", &status, "pod", err, errlen) < 0 || parse_pod_meta(p, meta, err, errlen) < 0)
        goto fail;

    if (get_str(spec, "schedulerName", "default-scheduler", &p->scheduler_name, "spec", err, errlen) < 0 ||
        get_str(spec, "nodeName", "", &p->node_name, "spec", err, errlen) < 0 ||
        get_int(spec, "priority", 0, INT32_MIN, INT32_MAX, &prio, "spec", err, errlen) < 0)
        goto fail;
    if (p->scheduler_name[0] == '\0') { /* "" is defaulted by the API server */
        free(p->scheduler_name);
        p->scheduler_name = util_strdup("default-scheduler");
    }
    p->priority = (int32_t)prio;

    if (get_obj(spec, "nodeSelector", &nsel, "spec", err, errlen) < 0)
        goto fail;
    if (selector_from_map(&p->node_selector, nsel, err, errlen) < 0)
        goto fail;
    p->has_node_selector = p->node_selector.n > 0;

    if (parse_affinity(p, spec, err, errlen) < 0 || parse_tolerations(p, spec, err, errlen) < 0 ||
        parse_requests(p, spec, status, err, errlen) < 0 ||
        pod_affinity_parse(&p->interpod, spec, p->ns, &p->labels, err, errlen) < 0)
        goto fail;
    if (pod_volumes_from_json(spec, &p->volumes, &p->nvolumes, err, errlen) < 0)
        goto fail;

    if (get_str(status, "phase", "", &phase, "status", err, errlen) < 0 ||
        get_str(status, "nominatedNodeName", "", &p->nominated_node, "status", err, errlen) < 0 ||
        get_time(status, "startTime", p->created_ms, &p->started_ms, "status", err, errlen) < 0)
        goto fail;
    p->phase = parse_phase(phase);
    free(phase);
    if (pod_parse_extras(p, obj, err, errlen) < 0) {
        pod_free(p);
        return NULL;
    }
    pod_ext_parse_all(p, obj);
    return p;

fail:
    free(phase);
    pod_free(p);
    return NULL;
}

pod_t *pod_ref(pod_t *p)
{
    if (p)
        __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
    return p;
}

void pod_unref(pod_t *p)
{
    if (p && __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0)
        pod_free(p);
}

int pod_is_terminal(const pod_t *p)
{
    return p->phase == PHASE_SUCCEEDED || p->phase == PHASE_FAILED;
}

int pod_is_bound(const pod_t *p)
{
    return p->node_name && p->node_name[0] != '\0';
}

const char *pod_home_pool(const pod_t *p)
{
    return p->pool && p->pool[0] ? p->pool : DEFAULT_POOL;
}

/* ---- Tolerations ------------------------------------------------------------- */

int toleration_tolerates(const toleration_t *t, const taint_t *taint)
{
    if (t->effect != EFFECT_ALL && t->effect != taint->effect)
        return 0;
    if (t->key[0] != '\0' && strcmp(t->key, taint->key) != 0)
        return 0;
    if (t->op_exists)
        return 1;
    return strcmp(t->value, taint->value) == 0;
}

int pod_tolerates_taints(const pod_t *p, const taint_t *taints, int ntaints, int only_hard,
                         const taint_t **first_untolerated)
{
    if (first_untolerated)
        *first_untolerated = NULL;
    for (int i = 0; i < ntaints; i++) {
        const taint_t *t = &taints[i];
        if (only_hard && t->effect != EFFECT_NO_SCHEDULE && t->effect != EFFECT_NO_EXECUTE)
            continue;
        int ok = 0;
        for (int j = 0; j < p->ntolerations && !ok; j++)
            ok = toleration_tolerates(&p->tolerations[j], t);
        if (!ok) {
            if (first_untolerated)
                *first_untolerated = t;
            return 0;
        }
    }
    return 1;
}
