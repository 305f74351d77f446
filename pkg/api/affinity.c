/* affinity.c -- parsing and matching of pod (anti-)affinity terms and
 * topology spread constraints. */
#include "api/affinity.h"
#include "api/types.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

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
static int parse_term(pod_affinity_t *a, pod_aff_term_t *t, json_t *obj, const char *pod_ns, const char *what,
                      char *err, size_t errlen)
{
    if (!json_is_object(obj))
        return util_errf(err, errlen, "%s: not an object", what);
    if (parse_selector(obj, &t->selector, &t->match_nothing, what, err, errlen) < 0 ||
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
        ns_add(t, pod_ns ? pod_ns : "default");
    if (t->nnamespaces > 1)
        qsort(t->namespaces, (size_t)t->nnamespaces, sizeof(char *), cmp_str);
    term_make_key(t);
    return 0;
}

static int parse_terms(pod_affinity_t *a, json_t *arr, int weighted, pod_aff_term_t **out, int *n, const char *pod_ns,
                       const char *what, char *err, size_t errlen)
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
        if (parse_term(a, t, term, pod_ns, w, err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int parse_spread(pod_affinity_t *a, json_t *arr, char *err, size_t errlen)
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
        if (parse_selector(v, &c->selector, &c->match_nothing, w, err, errlen) < 0)
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

int pod_affinity_parse(pod_affinity_t **out, json_t *spec, const char *pod_ns, char *err, size_t errlen)
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
    const char *req = "requiredDuringSchedulingIgnoredDuringExecution";
    const char *pref = "preferredDuringSchedulingIgnoredDuringExecution";
    if (parse_terms(a, json_object_get(pa, req), 0, &a->aff_req, &a->naff_req, pod_ns, "podAffinity.required", err,
                    errlen) < 0 ||
        parse_terms(a, json_object_get(pa, pref), 1, &a->aff_pref, &a->naff_pref, pod_ns, "podAffinity.preferred", err,
                    errlen) < 0 ||
        parse_terms(a, json_object_get(paa, req), 0, &a->anti_req, &a->nanti_req, pod_ns, "podAntiAffinity.required",
                    err, errlen) < 0 ||
        parse_terms(a, json_object_get(paa, pref), 1, &a->anti_pref, &a->nanti_pref, pod_ns,
                    "podAntiAffinity.preferred", err, errlen) < 0 ||
        parse_spread(a, ts, err, errlen) < 0) {
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
