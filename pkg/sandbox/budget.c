/* budget.c -- PodDisruptionBudgets in the sandbox (budget.h): the
 * Eviction's check and the disruption controller's count, kept per budget
 * as pods come and go instead of re-listing them. */
#include "sandbox/budget.h"

#include <stdlib.h>
#include <string.h>

#include "api/labels.h"
#include "preemption/preemption.h"
#include "util/util.h"

typedef struct budget {
    char *ns, *name;
    selector_t sel;
    json_t *spec; /* a reference */
    int healthy, expected;
    int32_t allowed;
    int changed; /* allowed moved since budgets_each_changed */
} budget_t;

struct sb_budgets {
    budget_t *b;
    int n, cap;
};

sb_budgets_t *budgets_new(void)
{
    return util_xcalloc(1, sizeof(sb_budgets_t));
}

static void budget_clear(budget_t *x)
{
    free(x->ns);
    free(x->name);
    selector_free(&x->sel);
    json_decref(x->spec);
}

void budgets_free(sb_budgets_t *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->n; i++)
        budget_clear(&b->b[i]);
    free(b->b);
    free(b);
}

static budget_t *find(sb_budgets_t *b, const char *ns, const char *name)
{
    for (int i = 0; i < b->n; i++)
        if (!strcmp(b->b[i].ns, ns) && !strcmp(b->b[i].name, name))
            return &b->b[i];
    return NULL;
}

/* An IntOrString: the number, or pct of total rounded up; -1 when absent or malformed. */
static int scaled(json_t *v, int total)
{
    if (json_is_integer(v))
        return json_integer_value(v) < 0 ? -1 : (int)json_integer_value(v);
    const char *s = json_string_value(v);
    if (!s)
        return -1;
    char *end;
    long pct = strtol(s, &end, 10);
    if (end == s || strcmp(end, "%") != 0 || pct < 0 || pct > 100)
        return -1;
    return (int)((pct * total + 99) / 100);
}

int32_t budgets_allowed(json_t *spec, int healthy, int expected)
{
    json_t *min = json_object_get(spec, "minAvailable"), *max = json_object_get(spec, "maxUnavailable");
    int desired;
    if (max) {
        int m = scaled(max, expected);
        desired = m < 0 ? expected : expected - m;
    } else {
        int m = min ? scaled(min, expected) : 1;
        desired = m < 0 ? expected : m;
    }
    int a = healthy - desired;
    return a > 0 ? a : 0;
}

int budgets_set(sb_budgets_t *b, const char *ns, const char *name, json_t *obj, char *err, size_t errlen)
{
    budget_t *x = find(b, ns, name);
    if (x) {
        budget_clear(x);
        *x = b->b[--b->n];
    }
    if (!obj)
        return 0;
    pdb_t *p = pdb_from_json(obj, err, errlen);
    if (!p)
        return -1;
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 4;
        b->b = util_xrealloc(b->b, (size_t)b->cap * sizeof(*b->b));
    }
    x = &b->b[b->n++];
    memset(x, 0, sizeof(*x));
    x->ns = util_strdup(ns);
    x->name = util_strdup(name);
    selector_copy(&x->sel, &p->selector);
    x->spec = json_incref(json_object_get(obj, "spec"));
    x->allowed = p->disruptions_allowed;
    /* No status yet (a budget applied by hand): the controller fills it. */
    json_t *st = json_object_get(obj, "status");
    x->changed = !json_is_integer(json_object_get(st, "disruptionsAllowed"));
    pdb_free(p);
    return 0;
}

static const char *str_at(json_t *o, const char *a, const char *k)
{
    return json_string_value(json_object_get(json_object_get(o, a), k));
}

static int selects(const budget_t *x, json_t *pod, const labels_t *l)
{
    const char *ns = str_at(pod, "metadata", "namespace");
    return ns && !strcmp(ns, x->ns) && selector_matches(&x->sel, l, NULL);
}

int budgets_matches(sb_budgets_t *b, const char *ns, const char *name, json_t *pod)
{
    budget_t *x = find(b, ns, name);
    labels_t l = { 0 };
    char err[128];
    if (!x || labels_from_json(&l, json_object_get(json_object_get(pod, "metadata"), "labels"), err, sizeof err) != 0)
        return 0;
    int m = selects(x, pod, &l);
    labels_free(&l);
    return m;
}

static void recount(budget_t *x)
{
    int32_t a = budgets_allowed(x->spec, x->healthy, x->expected);
    if (a != x->allowed) {
        x->allowed = a;
        x->changed = 1;
    }
}

void budgets_counts(sb_budgets_t *b, const char *ns, const char *name, int healthy, int expected)
{
    budget_t *x = find(b, ns, name);
    if (!x)
        return;
    x->healthy = healthy;
    x->expected = expected;
    if (x->changed)
        recount(x);
}

static int pod_healthy(json_t *p)
{
    const char *node = str_at(p, "spec", "nodeName"), *phase = str_at(p, "status", "phase");
    return node && node[0] && phase && !strcmp(phase, "Running") &&
           !json_object_get(json_object_get(p, "metadata"), "deletionTimestamp");
}

static int pod_expected(json_t *p)
{
    const char *phase = str_at(p, "status", "phase");
    return !phase || (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0);
}

/* Adds sign times pod's counts to the budgets that select it. */
static void count(sb_budgets_t *b, json_t *pod, int sign)
{
    if (!pod)
        return;
    labels_t l = { 0 };
    char err[128];
    if (labels_from_json(&l, json_object_get(json_object_get(pod, "metadata"), "labels"), err, sizeof err) != 0)
        return;
    for (int i = 0; i < b->n; i++) {
        if (!selects(&b->b[i], pod, &l))
            continue;
        b->b[i].healthy += sign * pod_healthy(pod);
        b->b[i].expected += sign * pod_expected(pod);
        recount(&b->b[i]);
    }
    labels_free(&l);
}

void budgets_pod(sb_budgets_t *b, json_t *old, json_t *now)
{
    if (b->n == 0)
        return;
    count(b, old, -1);
    count(b, now, 1);
}

int budgets_allow(sb_budgets_t *b, json_t *pod, const char **pdb)
{
    if (b->n == 0)
        return 1;
    labels_t l = { 0 };
    char err[128];
    if (labels_from_json(&l, json_object_get(json_object_get(pod, "metadata"), "labels"), err, sizeof err) != 0)
        return 1;
    int ok = 1;
    /* The API server lets an unhealthy pod go whatever its budget says. */
    for (int i = 0; i < b->n && ok && pod_healthy(pod); i++)
        if (selects(&b->b[i], pod, &l) && b->b[i].allowed <= 0) {
            ok = 0;
            *pdb = b->b[i].name;
        }
    labels_free(&l);
    return ok;
}

void budgets_each_changed(sb_budgets_t *b, void (*fn)(void *ud, const char *ns, const char *name, int32_t allowed),
                          void *ud)
{
    for (int i = 0; i < b->n; i++)
        if (b->b[i].changed) {
            b->b[i].changed = 0;
            fn(ud, b->b[i].ns, b->b[i].name, b->b[i].allowed);
        }
}
