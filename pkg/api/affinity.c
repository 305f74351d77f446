/* affinity.c -- parsing and matching of pod (anti-)affinity terms and
 * topology spread constraints. */
#include "api/affinity.h"
#include "api/types.h"
#include "util/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* What every term of one pod is parsed against. */
typedef struct pctx {
    pod_affinity_t *a;
    const char *ns;         /* the pod's namespace */
    const labels_t *labels; /* the pod's labels (matchLabelKeys) */
} pctx_t;

void aff_term_clear(pod_aff_term_t *t)
{
    for (int i = 0; i < t->nnamespaces; i++)
        free(t->namespaces[i]);
    free(t->namespaces);
    selector_free(&t->selector);
    free(t->topology_key);
    free(t->key);
}

void pod_affinity_free(pod_affinity_t *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->naff_req; i++)
        aff_term_clear(&a->aff_req[i]);
    for (int i = 0; i < a->nanti_req; i++)
        aff_term_clear(&a->anti_req[i]);
    for (int i = 0; i < a->naff_pref; i++)
        aff_term_clear(&a->aff_pref[i]);
    for (int i = 0; i < a->nanti_pref; i++)
        aff_term_clear(&a->anti_pref[i]);
    free(a->aff_req);
    free(a->anti_req);
    free(a->aff_pref);
    free(a->anti_pref);
    for (int i = 0; i < a->nspread; i++) {
        free(a->spread[i].topology_key);
        free(a->spread[i].key);
        selector_free(&a->spread[i].selector);
    }
    free(a->spread);
    free(a->warning);
    free(a);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void ns_add(pod_aff_term_t *t, const char *ns)
{
    for (int i = 0; i < t->nnamespaces; i++)
        if (strcmp(t->namespaces[i], ns) == 0)
            return;
    t->namespaces = util_xrealloc(t->namespaces, sizeof(char *) * (size_t)(t->nnamespaces + 1));
    t->namespaces[t->nnamespaces++] = util_strdup(ns);
}

/* Selector as text, in the order given: enough to tell identical terms of
 * pods made from one template apart from others. */
static void selector_text(sbuf_t *b, const selector_t *s)
{
    for (int i = 0; i < s->n; i++) {
        const sel_req_t *r = &s->reqs[i];
        sbuf_printf(b, "%s%s:%d", i ? ";" : "", r->key, (int)r->op);
        for (int j = 0; j < r->nvalues; j++)
            sbuf_printf(b, "%s%s", j ? "," : "=", r->values[j]);
    }
}

static void term_make_key(pod_aff_term_t *t)
{
    sbuf_t b = { 0 };
    if (t->all_namespaces)
        sbuf_printf(&b, "*");
    for (int i = 0; i < t->nnamespaces; i++)
        sbuf_printf(&b, "%s%s", i ? "," : "", t->namespaces[i]);
    sbuf_printf(&b, "|");
    if (t->match_nothing)
        sbuf_printf(&b, "!");
    else
        selector_text(&b, &t->selector);
    sbuf_printf(&b, "|%s", t->topology_key);
    t->key = b.data ? b.data : util_strdup("");
}

void aff_term_copy(pod_aff_term_t *dst, const pod_aff_term_t *src)
{
    memset(dst, 0, sizeof(*dst));
    for (int i = 0; i < src->nnamespaces; i++)
        ns_add(dst, src->namespaces[i]);
    dst->all_namespaces = src->all_namespaces;
    selector_copy(&dst->selector, &src->selector);
    dst->match_nothing = src->match_nothing;
    dst->topology_key = util_strdup(src->topology_key);
    dst->weight = src->weight;
    dst->key = util_strdup(src->key);
}

/* Optional label selector: absent or null means "matches nothing". */
static int parse_selector(json_t *obj, selector_t *sel, int *nothing, const char *what, char *err, size_t errlen)
{
    char sub[200];
    json_t *ls = json_object_get(obj, "labelSelector");
    if (!ls || json_is_null(ls)) {
        *nothing = 1;
        return 0;
    }
    if (selector_from_label_selector(sel, ls, sub, sizeof sub) < 0)
        return util_errf(err, errlen, "%s.labelSelector: %s", what, sub);
    return 0;
}

/* ---- matchLabelKeys / mismatchLabelKeys ----------------------------------- */

static int name_part_ok(const char *s, size_t n)
{
    if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return 0;
    return 1;
}

static int prefix_ok(const char *s, size_t n)
{
    if (n == 0 || n > 253 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' || s[i] == '.'))
            return 0;
    return 1;
}

/* kube's ValidateLabelName: [DNS-subdomain prefix "/"] name of 1-63
 * alphanumerics, '-', '_' and '.', alphanumeric at both ends. */
static int label_name_ok(const char *k)
{
    const char *slash = strchr(k, '/');
    if (!slash)
        return name_part_ok(k, strlen(k));
    return prefix_ok(k, (size_t)(slash - k)) && name_part_ok(slash + 1, strlen(slash + 1));
}

/* obj[field]: absent, null or an array of label names; *out borrowed. */
static int label_keys(json_t *obj, const char *field, json_t **out, const char *what, char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, field);
    size_t i;
    json_t *k;
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return util_errf(err, errlen, "%s.%s: not an array", what, field);
    if (json_array_size(v) > 1000)
        return util_errf(err, errlen, "%s.%s: too many keys", what, field);
    json_array_foreach (v, i, k) {
        if (!json_is_string(k) || !label_name_ok(json_string_value(k)))
            return util_errf(err, errlen, "%s.%s[%zu]: not a valid label key", what, field, i);
    }
    *out = v;
    return (int)json_array_size(v);
}

/* Requirements of s on key: of operator op when op >= 0, with the single
 * value value when value is set. */
static int sel_count(const selector_t *s, const char *key, int op, const char *value)
{
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        const sel_req_t *r = &s->reqs[i];
        if (strcmp(r->key, key) != 0 || (op >= 0 && (int)r->op != op))
            continue;
        if (value && (r->nvalues != 1 || strcmp(r->values[0], value) != 0))
            continue;
        n++;
    }
    return n;
}

static void sel_append(selector_t *s, const char *key, sel_op_t op, const char *value)
{
    s->reqs = util_xrealloc(s->reqs, (size_t)(s->n + 1) * sizeof *s->reqs);
    sel_req_t *r = &s->reqs[s->n++];
    *r = (sel_req_t){ .key = util_strdup(key), .op = op, .values = util_xmalloc(sizeof(char *)), .nvalues = 1 };
    r->values[0] = util_strdup(value);
}

/* Adds key op (the pod's value) for each key the pod has, as the API
 * server's applyLabelKeysToLabelSelector does. A matchLabelKeys key that
 * already has an In requirement was merged by the API server (its
 * validation forbids the user's own): merging again would only repeat it,
 * or, if the pod was relabelled since, make the term match nothing. */
static void apply_label_keys(selector_t *sel, json_t *keys, sel_op_t op, const labels_t *pod_labels)
{
    size_t i;
    json_t *k;
    json_array_foreach (keys, i, k) {
        const char *key = json_string_value(k), *v = pod_labels ? labels_get(pod_labels, key) : NULL;
        if (!v || sel_count(sel, key, (int)op, op == SEL_IN ? NULL : v) > 0)
            continue;
        sel_append(sel, key, op, v);
    }
}

/* matchLabelKeys (key In value) and, for pod affinity terms,
 * mismatchLabelKeys (key NotIn value) into sel, with kube's validation
 * (ValidateMatchLabelKeysAndMismatchLabelKeys, after the API server's
 * merge): keys need a labelSelector; a key may not be in both lists; a
 * matchLabelKeys key may appear in the selector once (the merged
 * requirement), never twice. */
static int merge_label_keys(json_t *obj, int with_mismatch, selector_t *sel, int nothing, const labels_t *pod_labels,
                            const char *what, char *err, size_t errlen)
{
    json_t *ml, *mml = NULL, *k, *k2;
    size_t i, j;
    int nml = label_keys(obj, "matchLabelKeys", &ml, what, err, errlen);
    if (nml < 0 || (with_mismatch && label_keys(obj, "mismatchLabelKeys", &mml, what, err, errlen) < 0))
        return -1;
    if (nml == 0 && json_array_size(mml) == 0)
        return 0;
    if (nothing)
        return util_errf(err, errlen, "%s: matchLabelKeys/mismatchLabelKeys must not be set when labelSelector is not",
                         what);
    json_array_foreach (ml, i, k) {
        const char *key = json_string_value(k);
        if (sel_count(sel, key, -1, NULL) > 1)
            return util_errf(err, errlen,
                             "%s.matchLabelKeys[%zu]: %.64s exists in both matchLabelKeys and labelSelector", what, i,
                             key);
        json_array_foreach (mml, j, k2)
            if (strcmp(key, json_string_value(k2)) == 0)
                return util_errf(err, errlen,
                                 "%s.matchLabelKeys[%zu]: %.64s exists in both matchLabelKeys and mismatchLabelKeys",
                                 what, i, key);
    }
    apply_label_keys(sel, ml, SEL_IN, pod_labels);
    apply_label_keys(sel, mml, SEL_NOT_IN, pod_labels);
    return 0;
}

static int parse_topology_key(json_t *obj, char **out, const char *what, char *err, size_t errlen)
{
    json_t *k = json_object_get(obj, "topologyKey");
    if (!json_is_string(k) || json_string_length(k) == 0)
        return util_errf(err, errlen, "%s.topologyKey: required", what);
    if (json_string_length(k) > 316) /* qualified name: prefix 253 + '/' + 63 */
        return util_errf(err, errlen, "%s.topologyKey: too long", what);
    *out = util_strdup(json_string_value(k));
    return 0;
}

/* One v1.PodAffinityTerm. */
static int parse_term(const pctx_t *x, pod_aff_term_t *t, json_t *obj, const char *what, char *err, size_t errlen)
{
    pod_affinity_t *a = x->a;
    if (!json_is_object(obj))
        return util_errf(err, errlen, "%s: not an object", what);
    if (parse_selector(obj, &t->selector, &t->match_nothing, what, err, errlen) < 0 ||
        merge_label_keys(obj, 1, &t->selector, t->match_nothing, x->labels, what, err, errlen) < 0 ||
        parse_topology_key(obj, &t->topology_key, what, err, errlen) < 0)
        return -1;
    json_t *nss = json_object_get(obj, "namespaces");
    if (nss && !json_is_null(nss) && !json_is_array(nss))
        return util_errf(err, errlen, "%s.namespaces: not an array", what);
    size_t i;
    json_t *v;
    json_array_foreach (nss, i, v) {
        if (!json_is_string(v))
            return util_errf(err, errlen, "%s.namespaces[%zu]: not a string", what, i);
        ns_add(t, json_string_value(v));
    }
    json_t *nsel = json_object_get(obj, "namespaceSelector");
    if (nsel && !json_is_null(nsel)) {
        if (!json_is_object(nsel))
            return util_errf(err, errlen, "%s.namespaceSelector: not an object", what);
        json_t *ml = json_object_get(nsel, "matchLabels");
        json_t *me = json_object_get(nsel, "matchExpressions");
        if (json_object_size(ml) == 0 && json_array_size(me) == 0) {
            t->all_namespaces = 1; /* {}: every namespace */
        } else if (!a->warning) {
            /* Namespace labels are not watched: fall back to the listed
             * namespaces and say so. */
            a->warning = util_strdup("podAffinityTerm.namespaceSelector with labels is not supported by "
                                     "ai-scheduler; only the term's namespaces (or the pod's own) are used");
        }
    }
    if (!t->all_namespaces && t->nnamespaces == 0)
        ns_add(t, x->ns ? x->ns : "default");
    if (t->nnamespaces > 1)
        qsort(t->namespaces, (size_t)t->nnamespaces, sizeof(char *), cmp_str);
    term_make_key(t);
    return 0;
}

static int parse_terms(const pctx_t *x, json_t *arr, int weighted, pod_aff_term_t **out, int *n, const char *what,
                       char *err, size_t errlen)
{
    char w[96];
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return util_errf(err, errlen, "%s: not an array", what);
    if (json_array_size(arr) == 0)
        return 0;
    if (json_array_size(arr) > 1000)
        return util_errf(err, errlen, "%s: too many terms", what);
    *out = util_xcalloc(json_array_size(arr), sizeof(**out));
    size_t i;
    json_t *v;
    json_array_foreach (arr, i, v) {
        pod_aff_term_t *t = &(*out)[*n];
        json_t *term = v;
        snprintf(w, sizeof w, "%s[%zu]", what, i);
        if (weighted) {
            if (!json_is_object(v))
                return util_errf(err, errlen, "%s: not an object", w);
            json_t *wt = json_object_get(v, "weight");
            if (!json_is_integer(wt) || json_integer_value(wt) < 1 || json_integer_value(wt) > 100)
                return util_errf(err, errlen, "%s.weight: must be in the range 1-100", w);
            t->weight = (int)json_integer_value(wt);
            term = json_object_get(v, "podAffinityTerm");
        }
        (*n)++; /* counted now so pod_affinity_free releases a half-parsed term */
        if (parse_term(x, t, term, w, err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int parse_policy(json_t *v, const char *field, int dflt, int *honor, int *set, const char *w, char *err,
                        size_t errlen)
{
    json_t *p = json_object_get(v, field);
    const char *s = json_string_value(p);
    *honor = dflt;
    if (!p || json_is_null(p))
        return 0;
    if (!s || (strcmp(s, "Honor") != 0 && strcmp(s, "Ignore") != 0))
        return util_errf(err, errlen, "%s.%s: must be Honor or Ignore", w, field);
    *honor = strcmp(s, "Honor") == 0;
    *set = 1;
    return 0;
}

/* minDomains, nodeAffinityPolicy and nodeTaintsPolicy with kube's defaults
 * (1, Honor, Ignore: filterTopologySpreadConstraints) and validation. */
static int parse_spread_options(pod_affinity_t *a, spread_constraint_t *c, json_t *v, const char *w, char *err,
                                size_t errlen)
{
    json_t *md = json_object_get(v, "minDomains");
    c->min_domains = 1;
    if (md && !json_is_null(md)) {
        if (!json_is_integer(md) || json_integer_value(md) < 1 || json_integer_value(md) > INT32_MAX)
            return util_errf(err, errlen, "%s.minDomains: must be greater than zero", w);
        if (!c->hard)
            return util_errf(err, errlen, "%s.minDomains: can only be used with whenUnsatisfiable DoNotSchedule", w);
        c->min_domains = (int32_t)json_integer_value(md);
    }
    return parse_policy(v, "nodeAffinityPolicy", 1, &c->affinity_honor, &a->spread_policies, w, err, errlen) < 0 ||
                   parse_policy(v, "nodeTaintsPolicy", 0, &c->taints_honor, &a->spread_policies, w, err, errlen) < 0
               ? -1
               : 0;
}

static int parse_spread(pod_affinity_t *a, json_t *arr, const labels_t *pod_labels, char *err, size_t errlen)
{
    char w[64];
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return util_errf(err, errlen, "spec.topologySpreadConstraints: not an array");
    if (json_array_size(arr) == 0)
        return 0;
    if (json_array_size(arr) > 1000)
        return util_errf(err, errlen, "spec.topologySpreadConstraints: too many constraints");
    a->spread = util_xcalloc(json_array_size(arr), sizeof(*a->spread));
    size_t i;
    json_t *v;
    json_array_foreach (arr, i, v) {
        spread_constraint_t *c = &a->spread[a->nspread];
        snprintf(w, sizeof w, "spec.topologySpreadConstraints[%zu]", i);
        if (!json_is_object(v))
            return util_errf(err, errlen, "%s: not an object", w);
        a->nspread++;
        json_t *ms = json_object_get(v, "maxSkew");
        if (!json_is_integer(ms) || json_integer_value(ms) < 1 || json_integer_value(ms) > INT32_MAX)
            return util_errf(err, errlen, "%s.maxSkew: must be greater than zero", w);
        c->max_skew = (int32_t)json_integer_value(ms);
        if (parse_topology_key(v, &c->topology_key, w, err, errlen) < 0)
            return -1;
        const char *wu = json_string_value(json_object_get(v, "whenUnsatisfiable"));
        if (wu && strcmp(wu, "DoNotSchedule") == 0)
            c->hard = 1;
        else if (!wu || strcmp(wu, "ScheduleAnyway") != 0)
            return util_errf(err, errlen, "%s.whenUnsatisfiable: must be DoNotSchedule or ScheduleAnyway", w);
        for (int j = 0; j < a->nspread - 1; j++)
            if (a->spread[j].hard == c->hard && strcmp(a->spread[j].topology_key, c->topology_key) == 0)
                return util_errf(err, errlen, "%s: duplicate {topologyKey, whenUnsatisfiable}", w);
        if (parse_selector(v, &c->selector, &c->match_nothing, w, err, errlen) < 0 ||
            merge_label_keys(v, 0, &c->selector, c->match_nothing, pod_labels, w, err, errlen) < 0 ||
            parse_spread_options(a, c, v, w, err, errlen) < 0)
            return -1;
        if (c->hard)
            a->nspread_hard++;
        sbuf_t b = { 0 };
        if (c->match_nothing)
            sbuf_printf(&b, "!");
        else
            selector_text(&b, &c->selector);
        sbuf_printf(&b, "|%s", c->topology_key);
        c->key = b.data;
    }
    return 0;
}

int pod_affinity_parse(pod_affinity_t **out, json_t *spec, const char *pod_ns, const labels_t *pod_labels, char *err,
                       size_t errlen)
{
    *out = NULL;
    if (!json_is_object(spec))
        return 0;
    json_t *aff = json_object_get(spec, "affinity");
    json_t *ts = json_object_get(spec, "topologySpreadConstraints");
    json_t *pa = NULL, *paa = NULL;
    if (aff && !json_is_null(aff)) {
        if (!json_is_object(aff))
            return util_errf(err, errlen, "spec.affinity: not an object");
        pa = json_object_get(aff, "podAffinity");
        paa = json_object_get(aff, "podAntiAffinity");
        if ((pa && !json_is_null(pa) && !json_is_object(pa)) || (paa && !json_is_null(paa) && !json_is_object(paa)))
            return util_errf(err, errlen, "spec.affinity: podAffinity/podAntiAffinity not an object");
    }
    if (!json_is_object(pa) && !json_is_object(paa) && (!ts || json_is_null(ts)))
        return 0;
    pod_affinity_t *a = util_xcalloc(1, sizeof(*a));
    const pctx_t x = { a, pod_ns, pod_labels };
    const char *req = "requiredDuringSchedulingIgnoredDuringExecution";
    const char *pref = "preferredDuringSchedulingIgnoredDuringExecution";
    if (parse_terms(&x, json_object_get(pa, req), 0, &a->aff_req, &a->naff_req, "podAffinity.required", err, errlen) <
            0 ||
        parse_terms(&x, json_object_get(pa, pref), 1, &a->aff_pref, &a->naff_pref, "podAffinity.preferred", err,
                    errlen) < 0 ||
        parse_terms(&x, json_object_get(paa, req), 0, &a->anti_req, &a->nanti_req, "podAntiAffinity.required", err,
                    errlen) < 0 ||
        parse_terms(&x, json_object_get(paa, pref), 1, &a->anti_pref, &a->nanti_pref, "podAntiAffinity.preferred", err,
                    errlen) < 0 ||
        parse_spread(a, ts, pod_labels, err, errlen) < 0) {
        pod_affinity_free(a);
        return -1;
    }
    if (a->naff_req + a->nanti_req + a->naff_pref + a->nanti_pref + a->nspread == 0) {
        pod_affinity_free(a);
        return 0;
    }
    *out = a;
    return 0;
}

int aff_term_matches(const pod_aff_term_t *t, const struct pod *p)
{
    if (t->match_nothing)
        return 0;
    if (!t->all_namespaces) {
        int found = 0;
        for (int i = 0; i < t->nnamespaces && !found; i++)
            found = strcmp(t->namespaces[i], p->ns) == 0;
        if (!found)
            return 0;
    }
    return selector_matches(&t->selector, &p->labels, NULL);
}

int spread_matches(const spread_constraint_t *c, const char *ns, const struct pod *p)
{
    if (c->match_nothing || p->deleting || strcmp(p->ns, ns) != 0)
        return 0;
    return selector_matches(&c->selector, &p->labels, NULL);
}

int spread_counts_all_nodes(const spread_constraint_t *c, const struct pod *p)
{
    return !c->taints_honor && (!c->affinity_honor || (!p->has_node_selector && p->naffinity_terms == 0));
}

int pod_affinity_hard(const pod_affinity_t *a)
{
    return a && (a->naff_req > 0 || a->nanti_req > 0 || a->nspread_hard > 0);
}
