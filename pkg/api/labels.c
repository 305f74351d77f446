/* labels.c -- label sets (sorted, owned) and selectors for LabelSelector,
 * NodeSelectorTerm and nodeSelector maps. */
#include "api/labels.h"
#include "util/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- label sets ---------------------------------------------------------- */

static int label_cmp(const void *a, const void *b)
{
    return strcmp(((const label_t *)a)->key, ((const label_t *)b)->key);
}

int labels_from_json(labels_t *out, json_t *obj, char *err, size_t errlen)
{
    out->items = NULL;
    out->n = 0;
    if (!obj || json_is_null(obj))
        return 0;
    if (!json_is_object(obj))
        return util_errf(err, errlen, "labels: not an object");
    size_t n = json_object_size(obj);
    if (n == 0)
        return 0;
    label_t *items = util_xcalloc(n, sizeof *items);
    int i = 0;
    const char *k;
    json_t *v;
    json_object_foreach (obj, k, v) {
        if (!json_is_string(v)) {
            util_errf(err, errlen, "label %.64s: value is not a string", k);
            for (int j = 0; j < i; j++) {
                free(items[j].key);
                free(items[j].value);
            }
            free(items);
            return -1;
        }
        items[i].key = util_strdup(k);
        items[i].value = util_strdup(json_string_value(v));
        i++;
    }
    qsort(items, (size_t)i, sizeof *items, label_cmp);
    out->items = items;
    out->n = i;
    return 0;
}

const char *labels_get(const labels_t *l, const char *key)
{
    if (!l || !key || l->n == 0)
        return NULL;
    label_t probe = { .key = (char *)key };
    const label_t *hit = bsearch(&probe, l->items, (size_t)l->n, sizeof probe, label_cmp);
    return hit ? hit->value : NULL;
}

void labels_free(labels_t *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

int labels_copy(labels_t *dst, const labels_t *src)
{
    dst->items = NULL;
    dst->n = 0;
    if (!src || src->n == 0)
        return 0;
    dst->items = util_xcalloc((size_t)src->n, sizeof(label_t));
    for (int i = 0; i < src->n; i++) {
        dst->items[i].key = util_strdup(src->items[i].key);
        dst->items[i].value = util_strdup(src->items[i].value);
    }
    dst->n = src->n;
    return 0;
}

/* ---- selectors ----------------------------------------------------------- */

static void req_free(sel_req_t *r)
{
    free(r->key);
    for (int i = 0; i < r->nvalues; i++)
        free(r->values[i]);
    free(r->values);
}

void selector_free(selector_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        req_free(&s->reqs[i]);
    free(s->reqs);
    s->reqs = NULL;
    s->n = 0;
}

/* Appends a requirement; the selector grows one slot at a time since
 * selectors hold a handful of requirements. */
static sel_req_t *add_req(selector_t *s, const char *key, sel_op_t op, int on_field)
{
    s->reqs = util_xrealloc(s->reqs, (size_t)(s->n + 1) * sizeof *s->reqs);
    sel_req_t *r = &s->reqs[s->n++];
    r->key = util_strdup(key);
    r->op = op;
    r->values = NULL;
    r->nvalues = 0;
    r->on_field = on_field;
    return r;
}

static void req_add_value(sel_req_t *r, const char *v)
{
    r->values = util_xrealloc(r->values, (size_t)(r->nvalues + 1) * sizeof *r->values);
    r->values[r->nvalues++] = util_strdup(v);
}

static int parse_op(const char *s, sel_op_t *op)
{
    static const struct {
        const char *name;
        sel_op_t op;
    } ops[] = {
        { "In", SEL_IN }, { "NotIn", SEL_NOT_IN }, { "Exists", SEL_EXISTS }, { "DoesNotExist", SEL_DOES_NOT_EXIST },
        { "Gt", SEL_GT }, { "Lt", SEL_LT },
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (strcmp(s, ops[i].name) == 0) {
            *op = ops[i].op;
            return 0;
        }
    }
    return -1;
}

/* Parses one {key, operator, values} requirement into s. what names the list
 * for messages; allow_cmp admits Gt/Lt; on_field marks matchFields. */
static int parse_requirement(selector_t *s, json_t *e, const char *what, int allow_cmp, int on_field, char *err,
                             size_t errlen)
{
    if (!json_is_object(e))
        return util_errf(err, errlen, "%s: requirement is not an object", what);
    json_t *jk = json_object_get(e, "key");
    json_t *jo = json_object_get(e, "operator");
    json_t *jv = json_object_get(e, "values");
    if (!json_is_string(jk) || json_string_length(jk) == 0)
        return util_errf(err, errlen, "%s: missing key", what);
    const char *key = json_string_value(jk);
    sel_op_t op;
    if (!json_is_string(jo) || parse_op(json_string_value(jo), &op) < 0)
        return util_errf(err, errlen, "%s: key %.64s: bad operator", what, key);
    if ((op == SEL_GT || op == SEL_LT) && !allow_cmp)
        return util_errf(err, errlen, "%s: key %.64s: operator %s not allowed", what, key, json_string_value(jo));
    if (jv && !json_is_null(jv) && !json_is_array(jv))
        return util_errf(err, errlen, "%s: key %.64s: values is not an array", what, key);
    size_t nv = jv && json_is_array(jv) ? json_array_size(jv) : 0;
    for (size_t i = 0; i < nv; i++) {
        if (!json_is_string(json_array_get(jv, i)))
            return util_errf(err, errlen, "%s: key %.64s: value is not a string", what, key);
    }
    if (on_field) {
        if (strcmp(key, "metadata.name") != 0)
            return util_errf(err, errlen, "%s: unsupported field %.64s", what, key);
        if (op != SEL_IN && op != SEL_NOT_IN)
            return util_errf(err, errlen, "%s: field %.64s: only In and NotIn", what, key);
    }
    /* The same value-count rules the API server's validation enforces. */
    switch (op) {
    case SEL_IN:
    case SEL_NOT_IN:
        if (nv == 0)
            return util_errf(err, errlen, "%s: key %.64s: In/NotIn need values", what, key);
        break;
    case SEL_EXISTS:
    case SEL_DOES_NOT_EXIST:
        if (nv != 0)
            return util_errf(err, errlen, "%s: key %.64s: Exists/DoesNotExist take no values", what, key);
        break;
    case SEL_GT:
    case SEL_LT:
        if (nv != 1)
            return util_errf(err, errlen, "%s: key %.64s: Gt/Lt need exactly one value", what, key);
        break;
    }
    sel_req_t *r = add_req(s, key, op, on_field);
    for (size_t i = 0; i < nv; i++)
        req_add_value(r, json_string_value(json_array_get(jv, i)));
    return 0;
}

static int parse_requirements(selector_t *s, json_t *arr, const char *what, int allow_cmp, int on_field, char *err,
                              size_t errlen)
{
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return util_errf(err, errlen, "%s: not an array", what);
    size_t i;
    json_t *e;
    json_array_foreach (arr, i, e) {
        if (parse_requirement(s, e, what, allow_cmp, on_field, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* matchLabels / nodeSelector: every entry becomes key In (value). */
static int parse_map(selector_t *s, json_t *obj, const char *what, char *err, size_t errlen)
{
    if (!obj || json_is_null(obj))
        return 0;
    if (!json_is_object(obj))
        return util_errf(err, errlen, "%s: not an object", what);
    const char *k;
    json_t *v;
    json_object_foreach (obj, k, v) {
        if (!json_is_string(v))
            return util_errf(err, errlen, "%s: %.64s: value is not a string", what, k);
    }
    json_object_foreach (obj, k, v) {
        sel_req_t *r = add_req(s, k, SEL_IN, 0);
        req_add_value(r, json_string_value(v));
    }
    return 0;
}

int selector_from_label_selector(selector_t *out, json_t *obj, char *err, size_t errlen)
{
    out->reqs = NULL;
    out->n = 0;
    if (!obj || json_is_null(obj))
        return 0;
    if (!json_is_object(obj))
        return util_errf(err, errlen, "labelSelector: not an object");
    if (parse_map(out, json_object_get(obj, "matchLabels"), "matchLabels", err, errlen) < 0 ||
        parse_requirements(out, json_object_get(obj, "matchExpressions"), "matchExpressions", 0, 0, err, errlen) < 0) {
        selector_free(out);
        return -1;
    }
    return 0;
}

int selector_from_node_term(selector_t *out, json_t *obj, char *err, size_t errlen)
{
    out->reqs = NULL;
    out->n = 0;
    if (!json_is_object(obj))
        return util_errf(err, errlen, "nodeSelectorTerm: not an object");
    if (parse_requirements(out, json_object_get(obj, "matchExpressions"), "matchExpressions", 1, 0, err, errlen) < 0 ||
        parse_requirements(out, json_object_get(obj, "matchFields"), "matchFields", 0, 1, err, errlen) < 0) {
        selector_free(out);
        return -1;
    }
    return 0;
}

int selector_from_map(selector_t *out, json_t *obj, char *err, size_t errlen)
{
    out->reqs = NULL;
    out->n = 0;
    if (parse_map(out, obj, "nodeSelector", err, errlen) < 0) {
        selector_free(out);
        return -1;
    }
    return 0;
}

static int has_value(const sel_req_t *r, const char *v)
{
    for (int i = 0; i < r->nvalues; i++) {
        if (strcmp(r->values[i], v) == 0)
            return 1;
    }
    return 0;
}

/* strconv.ParseInt(s, 10, 64): optional sign, digits only, in range. */
static int parse_int64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!*p)
        return -1;
    for (const char *q = p; *q; q++) {
        if (*q < '0' || *q > '9')
            return -1;
    }
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return -1;
    *out = (int64_t)v;
    return 0;
}

static int req_matches(const sel_req_t *r, const labels_t *l, const char *name)
{
    const char *v = r->on_field ? (name ? name : "") : labels_get(l, r->key);
    int64_t a, b;
    switch (r->op) {
    case SEL_IN: return v && has_value(r, v);
    case SEL_NOT_IN: return !v || !has_value(r, v);
    case SEL_EXISTS: return v != NULL;
    case SEL_DOES_NOT_EXIST: return v == NULL;
    case SEL_GT:
    case SEL_LT:
        /* Fail closed: a missing or non-integer label never satisfies Gt/Lt. */
        if (!v || r->nvalues != 1 || parse_int64(v, &a) < 0 || parse_int64(r->values[0], &b) < 0)
            return 0;
        return r->op == SEL_GT ? a > b : a < b;
    }
    return 0;
}

int selector_matches(const selector_t *s, const labels_t *l, const char *name)
{
    if (!s)
        return 1;
    for (int i = 0; i < s->n; i++) {
        if (!req_matches(&s->reqs[i], l, name))
            return 0;
    }
    return 1;
}

int selector_copy(selector_t *dst, const selector_t *src)
{
    dst->reqs = NULL;
    dst->n = 0;
    if (!src)
        return 0;
    for (int i = 0; i < src->n; i++) {
        const sel_req_t *r = &src->reqs[i];
        sel_req_t *c = add_req(dst, r->key, r->op, r->on_field);
        for (int j = 0; j < r->nvalues; j++)
            req_add_value(c, r->values[j]);
    }
    return 0;
}

int selector_is_empty(const selector_t *s)
{
    return !s || s->n == 0;
}
