/* pool.c -- Pool spec parsing, the node partition rule and the borrowing rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/pool.h"
#include "util/util.h"

#define ERRF(...)                                                                                                      \
    do {                                                                                                               \
        if (err && errlen)                                                                                             \
            snprintf(err, errlen, __VA_ARGS__);                                                                        \
    } while (0)

/* A missing or null member reads as absent; every other type mismatch is an
 * error, so a "false" string never silently enables a flag. */
static int get_bool(json_t *spec, const char *key, int *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(spec, key);
    *out = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v)) {
        ERRF("spec.%s: must be a boolean", key);
        return -1;
    }
    *out = json_is_true(v);
    return 0;
}

/* matchExpressions checked as apimachinery validates a LabelSelector: In and
 * NotIn need values, Exists and DoesNotExist take none. Done here too so the
 * rule holds whatever the generic selector parser tolerates. */
static int check_expressions(json_t *sel, char *err, size_t errlen)
{
    json_t *exprs = json_object_get(sel, "matchExpressions");
    if (!exprs || json_is_null(exprs))
        return 0;
    if (!json_is_array(exprs)) {
        ERRF("spec.nodeSelector.matchExpressions: must be an array");
        return -1;
    }
    size_t i;
    json_t *e;
    json_array_foreach (exprs, i, e) {
        const char *key = json_string_value(json_object_get(e, "key"));
        const char *op = json_string_value(json_object_get(e, "operator"));
        json_t *vals = json_object_get(e, "values");
        size_t nvals = json_is_array(vals) ? json_array_size(vals) : 0;
        if (!json_is_object(e) || !key || !*key || !op) {
            ERRF("spec.nodeSelector.matchExpressions[%zu]: needs a key and an operator", i);
            return -1;
        }
        if (vals && !json_is_null(vals) && !json_is_array(vals)) {
            ERRF("spec.nodeSelector.matchExpressions[%zu].values: must be an array", i);
            return -1;
        }
        for (size_t j = 0; j < nvals; j++) {
            if (!json_is_string(json_array_get(vals, j))) {
                ERRF("spec.nodeSelector.matchExpressions[%zu].values[%zu]: must be a string", i, j);
                return -1;
            }
        }
        if (!strcmp(op, "In") || !strcmp(op, "NotIn")) {
            if (nvals == 0) {
                ERRF("spec.nodeSelector.matchExpressions[%zu]: operator %s needs values", i, op);
                return -1;
            }
        } else if (!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")) {
            if (nvals != 0) {
                ERRF("spec.nodeSelector.matchExpressions[%zu]: operator %s takes no values", i, op);
                return -1;
            }
        } else {
            ERRF("spec.nodeSelector.matchExpressions[%zu]: unknown operator \"%s\"", i, op);
            return -1;
        }
    }
    return 0;
}

/* Missing or null nodeSelector, and {} too, leave the selector empty, which
 * this module reads as "selects no node" (see pool_partition_node). */
static int parse_selector(pool_spec_t *p, json_t *spec, char *err, size_t errlen)
{
    json_t *sel = json_object_get(spec, "nodeSelector");
    if (!sel || json_is_null(sel))
        return 0;
    if (!json_is_object(sel)) {
        ERRF("spec.nodeSelector: must be an object");
        return -1;
    }
    json_t *ml = json_object_get(sel, "matchLabels");
    if (ml && !json_is_null(ml)) {
        const char *k;
        json_t *v;
        if (!json_is_object(ml)) {
            ERRF("spec.nodeSelector.matchLabels: must be an object");
            return -1;
        }
        json_object_foreach (ml, k, v) {
            if (!json_is_string(v)) {
                ERRF("spec.nodeSelector.matchLabels.%s: must be a string", k);
                return -1;
            }
        }
    }
    if (check_expressions(sel, err, errlen) < 0)
        return -1;
    char e2[256] = "";
    if (selector_from_label_selector(&p->selector, sel, e2, sizeof(e2)) < 0) {
        ERRF("spec.nodeSelector: %s", e2[0] ? e2 : "invalid");
        return -1;
    }
    return 0;
}

static int parse_borrowing(pool_spec_t *p, json_t *spec, char *err, size_t errlen)
{
    json_t *arr = json_object_get(spec, "borrowingPools");
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr)) {
        ERRF("spec.borrowingPools: must be an array of pool names");
        return -1;
    }
    size_t n = json_array_size(arr);
    if (n == 0)
        return 0;
    p->borrowing_pools = util_xcalloc(n, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s || !*s) {
            ERRF("spec.borrowingPools[%zu]: must be a non-empty string", i);
            return -1;
        }
        p->borrowing_pools[p->nborrowing++] = util_strdup(s);
    }
    return 0;
}

/* Optional string member of metadata: absent/null gives "", never NULL. */
static int meta_string(json_t *meta, const char *name, const char *key, char **out, char *err, size_t errlen)
{
    json_t *v = json_object_get(meta, key);
    if (v && !json_is_null(v) && !json_is_string(v)) {
        ERRF("pool %s: metadata.%s: must be a string", name, key);
        return -1;
    }
    *out = util_strdup(v && json_is_string(v) ? json_string_value(v) : "");
    return 0;
}

static int parse_meta(pool_spec_t *p, json_t *obj, char *err, size_t errlen)
{
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta)) {
        ERRF("metadata: missing");
        return -1;
    }
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!name || !*name) {
        ERRF("metadata.name: missing");
        return -1;
    }
    p->name = util_strdup(name);
    if (meta_string(meta, name, "uid", &p->uid, err, errlen) < 0)
        return -1;
    if (meta_string(meta, name, "resourceVersion", &p->resource_version, err, errlen) < 0)
        return -1;
    json_t *gen = json_object_get(meta, "generation");
    if (gen && !json_is_null(gen)) {
        if (!json_is_integer(gen)) {
            ERRF("pool %s: metadata.generation: must be an integer", name);
            return -1;
        }
        p->generation = json_integer_value(gen);
    }
    json_t *ts = json_object_get(meta, "creationTimestamp");
    if (ts && !json_is_null(ts)) {
        int64_t ms = json_is_string(ts) ? util_parse_rfc3339(json_string_value(ts)) : -1;
        if (ms < 0) {
            ERRF("pool %s: metadata.creationTimestamp: not an RFC 3339 time", name);
            return -1;
        }
        p->created_ms = ms;
    }
    return 0;
}

static int get_min_runtime(json_t *spec, const char *key, int64_t *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(spec, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || util_parse_min_runtime(json_string_value(v), out) != 0)
        return util_errf(err, errlen, "spec.%s: not a duration such as \"10m\", \"0\" or \"-1\"", key);
    return 0;
}

int pool_spec_from_json(pool_spec_t *out, json_t *obj, char *err, size_t errlen)
{
    pool_spec_t p;
    memset(&p, 0, sizeof(p));
    memset(out, 0, sizeof(*out));
    if (!json_is_object(obj)) {
        ERRF("pool: not an object");
        return -1;
    }
    if (parse_meta(&p, obj, err, errlen) < 0)
        goto fail;

    json_t *spec = json_object_get(obj, "spec");
    if (spec && !json_is_null(spec)) {
        if (!json_is_object(spec)) {
            ERRF("pool %s: spec: must be an object", p.name);
            goto fail;
        }
        /* Prefix the field errors with the pool's name for the warning line. */
        char e2[256] = "";
        if (parse_selector(&p, spec, e2, sizeof(e2)) < 0 ||
            get_bool(spec, "disablePreemption", &p.disable_preemption, e2, sizeof(e2)) < 0 ||
            get_bool(spec, "disableBorrowing", &p.disable_borrowing, e2, sizeof(e2)) < 0 ||
            get_bool(spec, "disableSharing", &p.disable_sharing, e2, sizeof(e2)) < 0 ||
            parse_borrowing(&p, spec, e2, sizeof(e2)) < 0 ||
            get_min_runtime(spec, "preemptMinRuntime", &p.preempt_min_runtime_ms, e2, sizeof(e2)) < 0 ||
            get_min_runtime(spec, "reclaimMinRuntime", &p.reclaim_min_runtime_ms, e2, sizeof(e2)) < 0) {
            ERRF("pool %s: %s", p.name, e2);
            goto fail;
        }
    }
    *out = p;
    return 0;
fail:
    pool_spec_free(&p);
    return -1;
}

void pool_spec_free(pool_spec_t *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->uid);
    free(p->resource_version);
    selector_free(&p->selector);
    for (int i = 0; i < p->nborrowing; i++)
        free(p->borrowing_pools[i]);
    free(p->borrowing_pools);
    memset(p, 0, sizeof(*p));
}

void pool_spec_default(pool_spec_t *out)
{
    memset(out, 0, sizeof(*out));
    out->name = util_strdup(DEFAULT_POOL);
    out->uid = util_strdup("");
    out->resource_version = util_strdup("");
}

/* An empty selector would match every node as a LabelSelector {} does, which
 * would put each node in conflict with any other pool and push the whole
 * cluster into default. So here an empty selector selects nothing. */
int pool_partition_node(const pool_spec_t *specs, int n, const labels_t *labels, const char *node_name)
{
    int found = -1;
    labels_t none = { NULL, 0 };
    if (!labels)
        labels = &none;
    for (int i = 0; i < n; i++) {
        if (specs[i].selector.n == 0)
            continue;
        if (!selector_matches(&specs[i].selector, labels, node_name ? node_name : ""))
            continue;
        if (found >= 0)
            return -1; /* claimed twice: a conflict goes to default */
        found = i;
    }
    return found;
}

int pool_may_borrow(const pool_spec_t *from, const pool_spec_t *to)
{
    if (!from || !to || !from->name || !to->name)
        return 0;
    if (!strcmp(from->name, to->name))
        return 0;
    if (from->disable_borrowing || to->disable_sharing)
        return 0;
    if (from->nborrowing == 0)
        return 1;
    for (int i = 0; i < from->nborrowing; i++)
        if (!strcmp(from->borrowing_pools[i], to->name))
            return 1;
    return 0;
}
