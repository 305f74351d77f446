/* table.c -- the rows of `ai-scheduler queues`: the Queue tree with quota,
 * limit, weight and the scheduler's status, as table cells and a document. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fairshare/table.h"
#include "util/util.h"

#define DEFAULT_QUEUE "default"
#define NCOLS         QUEUE_TABLE_COLS
#define CELL_MAX      320 /* a name is <= 253 bytes, plus the indent */
#define MAX_INDENT    32  /* deeper trees are indented no further */

enum { R_GPU, R_CPU, R_MEM, NRES };
static const char *res_names[NRES] = { "gpu", "cpu", "memory" };

/* One queue as shown. Every pointer is owned by the row. Numbers are in
 * the API's units; -1 is "none" for quota and limit, NAN "not written" for
 * the status numbers. */
typedef struct qrow {
    char *name, *parent; /* parent NULL: top level */
    int64_t priority;
    double quota[NRES], limit[NRES], weight[NRES]; /* weight: the effective one */
    double alloc[NRES], fair[NRES], requested[NRES];
    int64_t pending; /* -1: not written */
    char *state, *message;
    char *why;    /* our own reason for Invalid (missing parent, cycle) */
    int implicit; /* the implicit default queue: no object, no status */
    int up;       /* the parent's row, -1 at the top level */
    int depth;
} qrow_t;

/* The rows by name, their tree order, and the pool shown (NULL: all). */
struct queue_table {
    qrow_t *rows;
    int n;
    int *order; /* tree order: row indices */
    const char *pool;
};

/* ------------------------------------------------------------ parsing */

static const char *item_name(json_t *item)
{
    return json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
}

/* A finite JSON number, else dflt (wrong types read as absent). */
static double num_or(json_t *v, double dflt)
{
    if (!json_is_number(v))
        return dflt;
    double d = json_number_value(v);
    return isfinite(d) ? d : dflt;
}

/* {gpu: {quota, overQuotaWeight, limit}, ...}: only the resources present
 * in res are overwritten (a per-pool override replaces a whole resource). */
static void read_resources(json_t *res, double quota[NRES], double limit[NRES], double weight[NRES])
{
    for (int r = 0; r < NRES; r++) {
        json_t *o = json_object_get(res, res_names[r]);
        if (!json_is_object(o))
            continue;
        quota[r] = num_or(json_object_get(o, "quota"), -1);
        limit[r] = num_or(json_object_get(o, "limit"), -1);
        weight[r] = num_or(json_object_get(o, "overQuotaWeight"), -1);
    }
}

static void read_amounts(json_t *o, double out[NRES])
{
    for (int r = 0; r < NRES; r++)
        out[r] = json_is_object(o) ? num_or(json_object_get(o, res_names[r]), NAN) : NAN;
}

/* status.pools[] entry named pool, or NULL. */
static json_t *status_pool(json_t *status, const char *pool)
{
    json_t *pools = json_object_get(status, "pools"), *p;
    size_t i;
    if (!json_is_array(pools))
        return NULL;
    json_array_foreach (pools, i, p) {
        const char *n = json_string_value(json_object_get(p, "name"));
        if (n && !strcmp(n, pool))
            return p;
    }
    return NULL;
}

static void row_blank(qrow_t *q, const char *name)
{
    memset(q, 0, sizeof(*q));
    q->name = util_strdup(name);
    q->pending = -1;
    q->up = -1;
    for (int r = 0; r < NRES; r++) {
        q->quota[r] = q->limit[r] = q->weight[r] = -1;
        q->alloc[r] = q->fair[r] = q->requested[r] = NAN;
    }
}

/* Absent or -1 weight: the quota when it is > 0, else 1 (as the scheduler). */
static void effective_weights(qrow_t *q)
{
    for (int r = 0; r < NRES; r++)
        if (q->weight[r] < 0)
            q->weight[r] = q->quota[r] > 0 ? q->quota[r] : 1;
}

static char *dup_string(json_t *v)
{
    const char *s = json_string_value(v);
    return s && s[0] ? util_strdup(s) : NULL;
}

static void row_from_item(qrow_t *q, json_t *item, const char *name, const char *pool)
{
    json_t *spec = json_object_get(item, "spec"), *status = json_object_get(item, "status");
    row_blank(q, name);
    q->parent = dup_string(json_object_get(spec, "parentQueue"));
    json_t *prio = json_object_get(spec, "priority");
    q->priority = json_is_integer(prio) ? (int64_t)json_integer_value(prio) : 0;
    read_resources(json_object_get(spec, "resources"), q->quota, q->limit, q->weight);
    if (pool)
        read_resources(json_object_get(json_object_get(json_object_get(spec, "pools"), pool), "resources"), q->quota,
                       q->limit, q->weight);
    effective_weights(q);
    if (json_is_object(status)) {
        json_t *src = pool ? status_pool(status, pool) : status;
        if (src) {
            read_amounts(json_object_get(src, "allocated"), q->alloc);
            read_amounts(json_object_get(src, "fairShare"), q->fair);
            read_amounts(json_object_get(src, "requested"), q->requested);
            json_t *p = json_object_get(src, "pending");
            if (json_is_integer(p) && json_integer_value(p) >= 0)
                q->pending = (int64_t)json_integer_value(p);
        } else if (pool) {
            /* The scheduler writes only the pools a queue uses: none here. */
            for (int r = 0; r < NRES; r++)
                q->alloc[r] = q->fair[r] = q->requested[r] = 0;
            q->pending = 0;
        }
        q->state = dup_string(json_object_get(status, "state"));
        q->message = dup_string(json_object_get(status, "message"));
    }
}

static void row_free(qrow_t *q)
{
    free(q->name);
    free(q->parent);
    free(q->state);
    free(q->message);
    free(q->why);
}

static int cmp_row(const void *a, const void *b)
{
    return strcmp(((const qrow_t *)a)->name, ((const qrow_t *)b)->name);
}

static int find_row(const qrow_t *rows, int n, const char *name)
{
    qrow_t key = { .name = (char *)name };
    const qrow_t *hit = bsearch(&key, rows, (size_t)n, sizeof(*rows), cmp_row);
    return hit ? (int)(hit - rows) : -1;
}

/* The rows, sorted by name, with the implicit default when no Queue is
 * named so. Duplicate names (not from a real API server) keep the first. */
static qrow_t *parse_rows(FILE *errf, json_t *queues, const char *pool, int *count)
{
    size_t cap = json_is_array(queues) ? json_array_size(queues) : 0;
    qrow_t *rows = util_xcalloc(cap + 1, sizeof(*rows));
    int n = 0, has_default = 0;
    for (size_t i = 0; i < cap; i++) {
        json_t *item = json_array_get(queues, i);
        const char *name = item_name(item);
        if (!name || !name[0] || strlen(name) > 253) {
            fprintf(errf, "warning: skipping a Queue without a valid metadata.name\n");
            continue;
        }
        row_from_item(&rows[n++], item, name, pool);
        has_default |= !strcmp(name, DEFAULT_QUEUE);
    }
    if (!has_default) {
        row_blank(&rows[n], DEFAULT_QUEUE);
        rows[n].implicit = 1;
        effective_weights(&rows[n]);
        n++;
    }
    qsort(rows, (size_t)n, sizeof(*rows), cmp_row);
    int w = 0;
    for (int i = 0; i < n; i++) {
        if (w > 0 && !strcmp(rows[w - 1].name, rows[i].name)) {
            fprintf(errf, "warning: skipping a second Queue named \"%s\"\n", rows[i].name);
            row_free(&rows[i]);
            continue;
        }
        rows[w++] = rows[i];
    }
    *count = w;
    return rows;
}

/* ------------------------------------------------------------ the tree */

static void mark_invalid(qrow_t *q, const char *why)
{
    free(q->why);
    q->why = util_strdup(why);
    q->up = -1;
}

/* path[from..len-1] is a cycle: "spec.parentQueue cycle: a -> b -> a" on
 * each of its queues (the names cut short if very many). */
static void mark_cycle(qrow_t *rows, const int *path, int from, int len)
{
    char buf[400];
    size_t used = (size_t)snprintf(buf, sizeof(buf), "spec.parentQueue cycle: ");
    for (int k = from; k <= len && used < sizeof(buf); k++)
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s", k > from ? " -> " : "",
                                 rows[path[k < len ? k : from]].name);
    for (int k = from; k < len; k++)
        mark_invalid(&rows[path[k]], buf);
}

/* Links each row to its parent; a missing parent or a cycle puts the
 * queue at the top level with a reason. Each walk stops at a row already
 * seen, so this is linear and cannot loop. */
static void link_parents(qrow_t *rows, int n)
{
    for (int i = 0; i < n; i++) {
        if (!rows[i].parent)
            continue;
        rows[i].up = find_row(rows, n, rows[i].parent);
        if (rows[i].up < 0) {
            char why[400];
            snprintf(why, sizeof(why), "parent queue \"%s\" not found", rows[i].parent);
            mark_invalid(&rows[i], why);
        }
    }
    /* 0 unseen, 1 on the walk being made, 2 done */
    char *seen = util_xcalloc((size_t)n + 1, 1);
    int *path = util_xcalloc((size_t)n + 1, sizeof(*path));
    for (int i = 0; i < n; i++) {
        int len = 0, j = i;
        while (j >= 0 && !seen[j]) {
            seen[j] = 1;
            path[len++] = j;
            j = rows[j].up;
        }
        if (j >= 0 && seen[j] == 1) { /* back on this walk: path from j on is a cycle */
            int k = len - 1;
            while (path[k] != j)
                k--;
            mark_cycle(rows, path, k, len);
        }
        for (int k = 0; k < len; k++)
            seen[path[k]] = 2;
    }
    free(seen);
    free(path);
}

/* Depth-first order from the top-level rows, siblings by name (rows are
 * sorted); fills order[] and each row's depth. Iterative: any depth. */
static void tree_order(qrow_t *rows, int n, int *order)
{
    int *first = util_xcalloc((size_t)n + 1, sizeof(int)), *next = util_xcalloc((size_t)n + 1, sizeof(int));
    int *stack = util_xcalloc((size_t)n + 1, sizeof(int)), top = 0, k = 0;
    for (int i = 0; i < n; i++)
        first[i] = next[i] = -1;
    int roots = -1;
    for (int i = n - 1; i >= 0; i--) { /* prepend backwards: lists in name order */
        int *head = rows[i].up >= 0 ? &first[rows[i].up] : &roots;
        next[i] = *head;
        *head = i;
    }
    /* The stack holds the next sibling to visit at each level. */
    if (roots >= 0)
        stack[top++] = roots;
    while (top > 0) {
        int i = stack[top - 1];
        stack[top - 1] = next[i];
        if (next[i] < 0)
            top--;
        rows[i].depth = rows[i].up >= 0 ? rows[rows[i].up].depth + 1 : 0;
        order[k++] = i;
        if (first[i] >= 0)
            stack[top++] = first[i];
    }
    free(first);
    free(next);
    free(stack);
}

/* ------------------------------------------------------------ rendering */

/* Up to two decimals, no trailing zeros: 12, 2.5, 1.33; "-" for NAN. */
static void fmt_num(double v, char *buf, size_t n)
{
    if (isnan(v)) {
        snprintf(buf, n, "-");
        return;
    }
    if (fabs(v) >= 1e15) {
        snprintf(buf, n, "%.3g", v);
        return;
    }
    long long h = llround(v * 100);
    const char *sign = h < 0 ? "-" : "";
    h = h < 0 ? -h : h;
    if (h % 100 == 0)
        snprintf(buf, n, "%s%lld", sign, h / 100);
    else if (h % 10 == 0)
        snprintf(buf, n, "%s%lld.%lld", sign, h / 100, (h % 100) / 10);
    else
        snprintf(buf, n, "%s%lld.%02lld", sign, h / 100, h % 100);
}

static void fmt_limit(double v, char *buf, size_t n)
{
    fmt_num(v < 0 ? NAN : v, buf, n);
}

static const char *row_state(const qrow_t *q)
{
    if (q->why)
        return "Invalid";
    if (q->implicit)
        return "Implicit";
    return q->state ? q->state : "-";
}

static void fill_row(char (*c)[CELL_MAX], const qrow_t *q)
{
    char a[64], b[64];
    int indent = q->depth < MAX_INDENT ? q->depth : MAX_INDENT;
    snprintf(c[0], CELL_MAX, "%*s%s", 2 * indent, "", q->name);
    snprintf(c[1], CELL_MAX, "%lld", (long long)q->priority);
    fmt_limit(q->quota[R_GPU], c[2], CELL_MAX);
    fmt_limit(q->limit[R_GPU], c[3], CELL_MAX);
    fmt_num(q->weight[R_GPU], c[4], CELL_MAX);
    fmt_num(q->alloc[R_GPU], c[5], CELL_MAX);
    fmt_num(q->fair[R_GPU], c[6], CELL_MAX);
    /* cpu in cores, memory in Gi: the API's millicores and MB */
    fmt_num(q->alloc[R_CPU] / 1000, a, sizeof(a));
    fmt_num(q->fair[R_CPU] / 1000, b, sizeof(b));
    snprintf(c[7], CELL_MAX, "%s/%s", a, b);
    fmt_num(q->alloc[R_MEM] * 1e6 / (1024.0 * 1024 * 1024), a, sizeof(a));
    snprintf(c[8], CELL_MAX, "%s%s", a, isnan(q->alloc[R_MEM]) ? "" : "Gi");
    if (q->pending >= 0)
        snprintf(c[9], CELL_MAX, "%lld", (long long)q->pending);
    else
        snprintf(c[9], CELL_MAX, "-");
    snprintf(c[10], CELL_MAX, "%s", row_state(q));
}

char **queue_table_cells(const queue_table_t *t, int *rows)
{
    char(*grid)[NCOLS][CELL_MAX] = util_xcalloc((size_t)t->n + 1, sizeof(*grid));
    char **cells = util_xcalloc((size_t)t->n * NCOLS + 1, sizeof(*cells));
    for (int k = 0; k < t->n; k++) {
        fill_row(grid[k], &t->rows[t->order[k]]);
        for (int c = 0; c < NCOLS; c++)
            cells[(size_t)k * NCOLS + (size_t)c] = util_strdup(grid[k][c]);
    }
    free(grid);
    *rows = t->n;
    return cells;
}

char *queue_table_notes(const queue_table_t *t)
{
    sbuf_t b = { 0 };
    for (int k = 0; k < t->n; k++) {
        const qrow_t *q = &t->rows[t->order[k]];
        const char *why = q->why ? q->why : q->state && !strcmp(q->state, "Invalid") ? q->message : NULL;
        if (why)
            sbuf_printf(&b, "%s: %s\n", q->name, why);
    }
    return b.data;
}

/* Integral values as JSON integers (12, not 12.0); NAN as null. */
static json_t *num_json(double v)
{
    if (isnan(v))
        return json_null();
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        return json_integer((json_int_t)v);
    return json_real(v);
}

static json_t *res_json(const double v[NRES])
{
    if (isnan(v[R_GPU]) && isnan(v[R_CPU]) && isnan(v[R_MEM]))
        return json_null();
    json_t *o = json_object();
    for (int r = 0; r < NRES; r++)
        json_object_set_new(o, res_names[r], num_json(v[r]));
    return o;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *queue_table_doc(const queue_table_t *t)
{
    json_t *arr = json_array();
    for (int k = 0; k < t->n; k++) {
        const qrow_t *q = &t->rows[t->order[k]];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(q->name));
        json_object_set_new(o, "parent", str_or_null(q->parent));
        json_object_set_new(o, "depth", json_integer(q->depth));
        if (t->pool)
            json_object_set_new(o, "pool", json_string(t->pool));
        json_object_set_new(o, "priority", json_integer((json_int_t)q->priority));
        json_object_set_new(o, "quota", res_json(q->quota));
        json_object_set_new(o, "limit", res_json(q->limit));
        json_object_set_new(o, "overQuotaWeight", res_json(q->weight));
        json_object_set_new(o, "allocated", res_json(q->alloc));
        json_object_set_new(o, "fairShare", res_json(q->fair));
        json_object_set_new(o, "requested", res_json(q->requested));
        json_object_set_new(o, "pending", q->pending >= 0 ? json_integer((json_int_t)q->pending) : json_null());
        json_object_set_new(o, "state", str_or_null(q->why ? "Invalid" : q->state));
        json_object_set_new(o, "message", str_or_null(q->why ? q->why : q->message));
        json_object_set_new(o, "implicit", json_boolean(q->implicit));
        json_array_append_new(arr, o);
    }
    return arr;
}

queue_table_t *queue_table_load(FILE *errf, json_t *queues, const char *pool)
{
    queue_table_t *t = util_xcalloc(1, sizeof(*t));
    t->pool = pool;
    t->rows = parse_rows(errf, queues, pool, &t->n);
    t->order = util_xcalloc((size_t)t->n + 1, sizeof(*t->order));
    link_parents(t->rows, t->n);
    tree_order(t->rows, t->n, t->order);
    return t;
}

void queue_table_free(queue_table_t *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        row_free(&t->rows[i]);
    free(t->rows);
    free(t->order);
    free(t);
}
