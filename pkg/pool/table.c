/* table.c -- the rows of `ai-scheduler pools`: each pool's capacity,
 * allocatable, used, shared and pending resources as table cells and as a
 * JSON document, from the nodes, pods and pools LISTs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "pool/table.h"
#include "util/util.h"

#define NCOLS    POOL_TABLE_COLS
#define ROWS_PER 7              /* cpu gpu mem storage nodes pods [gangs] */
#define CELL_MAX 256            /* a pool name is a DNS subdomain: <= 253 */
#define CHECK    "\xe2\x9c\x93" /* ✓ U+2713, one column wide */

/* ---------------------------------------------------------------- cells */

typedef struct grid {
    char (*cells)[NCOLS][CELL_MAX];
    int rows;
} grid_t;

/* Cores with up to two decimals: 3500 -> "3.5", 250 -> "0.25", 8000 -> "8". */
static void fmt_cores(int64_t milli, char *buf, size_t n)
{
    int64_t hundredths = (milli + 5) / 10;
    int64_t whole = hundredths / 100, frac = hundredths % 100;
    if (frac == 0)
        snprintf(buf, n, "%lld", (long long)whole);
    else if (frac % 10 == 0)
        snprintf(buf, n, "%lld.%lld", (long long)whole, (long long)(frac / 10));
    else
        snprintf(buf, n, "%lld.%02lld", (long long)whole, (long long)frac);
}

static void fmt_int(int64_t v, char *buf, size_t n)
{
    snprintf(buf, n, "%lld", (long long)v);
}

static const char *flag(int disabled)
{
    return disabled ? "x" : CHECK;
}

/* The six rows of one block (seven with "gangs", shown only while some
 * gang is pending, so the original table stays as it was). Columns 3..7:
 * Capacity Allocatable Used Shared Pending. Pending of a resource row is
 * what the pending pods request. */
static void fill_block(grid_t *g, const char *name, const char *flags, const pool_usage_t *u, int rows)
{
    const resources_t *v[5] = { &u->capacity, &u->allocatable, &u->used, &u->shared, &u->pending_req };
    static const char *res_names[ROWS_PER] = { "cpu", "gpu", "mem", "storage", "nodes", "pods", "gangs" };
    for (int r = 0; r < rows; r++) {
        char(*row)[CELL_MAX] = g->cells[g->rows++];
        snprintf(row[0], CELL_MAX, "%s", r == 0 ? name : "");
        snprintf(row[1], CELL_MAX, "%s", r == 0 ? flags : "");
        snprintf(row[2], CELL_MAX, "%s", res_names[r]);
        for (int c = 0; c < 5; c++) {
            char *cell = row[3 + c];
            switch (r) {
            case 0: fmt_cores(v[c]->milli_cpu, cell, CELL_MAX); break;
            case 1:
                fmt_int(res_get_scalar(v[c], RES_GPU), cell, CELL_MAX);
                /* Used GPUs that are split into fractions (one reservation
                 * pod each): "6 (2 shared)". */
                if (c == 2 && u->gpu_shared > 0)
                    snprintf(cell + strlen(cell), CELL_MAX - strlen(cell), " (%d shared)", u->gpu_shared);
                /* Room a reservation holds for a large gang: "20 (8 held)". */
                if (c == 2 && u->held_nodes > 0)
                    snprintf(cell + strlen(cell), CELL_MAX - strlen(cell), " (%lld held)", (long long)u->held_gpu);
                break;
            case 2: quantity_format_bytes(v[c]->memory, cell, CELL_MAX); break;
            case 3: quantity_format_bytes(v[c]->ephemeral, cell, CELL_MAX); break;
            case 4:
                if (c < 2)
                    fmt_int(u->nodes, cell, CELL_MAX);
                else if (c == 2 && u->held_nodes > 0 && u->held_for[0])
                    snprintf(cell, CELL_MAX, "%d held for %.200s", u->held_nodes, u->held_for);
                else if (c == 2 && u->held_nodes > 0)
                    snprintf(cell, CELL_MAX, "%d held", u->held_nodes);
                else
                    snprintf(cell, CELL_MAX, "-");
                break;
            case 6: /* gangs: only pending ones are counted */
                if (c == 4)
                    fmt_int(u->pending_gangs, cell, CELL_MAX);
                else
                    snprintf(cell, CELL_MAX, "-");
                break;
            default:
                /* used/shared .pods count pods (pool_usage_compute charges 1 each) */
                if (c == 4)
                    fmt_int(u->pending, cell, CELL_MAX);
                else
                    fmt_int(v[c]->pods, cell, CELL_MAX);
                break;
            }
        }
    }
}

static void flags_of(const pool_spec_t *s, char *buf, size_t n)
{
    snprintf(buf, n, "%s %s %s", flag(s->disable_preemption), flag(s->disable_borrowing), flag(s->disable_sharing));
}

static void usage_total(const pool_usage_t *usage, int count, pool_usage_t *t)
{
    memset(t, 0, sizeof(*t));
    for (int i = 0; i < count; i++) {
        res_add(&t->capacity, &usage[i].capacity);
        res_add(&t->allocatable, &usage[i].allocatable);
        res_add(&t->used, &usage[i].used);
        res_add(&t->shared, &usage[i].shared);
        res_add(&t->borrowed, &usage[i].borrowed);
        res_add(&t->pending_req, &usage[i].pending_req);
        t->nodes += usage[i].nodes;
        t->pods_running += usage[i].pods_running;
        t->pending += usage[i].pending;
        t->pending_gangs += usage[i].pending_gangs;
        t->gated += usage[i].gated;
        t->gpu_shared += usage[i].gpu_shared;
        t->held_gpu += usage[i].held_gpu;
        t->held_nodes += usage[i].held_nodes;
    }
}

char **pool_table_cells(const pool_spec_t *specs, int n, const pool_spec_t *dflt, const pool_usage_t *usage, int *rows)
{
    grid_t g = { util_xcalloc((size_t)(n + 2) * ROWS_PER + 1, sizeof(*g.cells)), 0 };
    char flags[32], name[CELL_MAX];
    pool_usage_t total;
    usage_total(usage, n + 1, &total);
    int per = total.pending_gangs > 0 ? ROWS_PER : ROWS_PER - 1;
    for (int i = 0; i <= n; i++) {
        const pool_spec_t *s = i < n ? &specs[i] : dflt;
        flags_of(s, flags, sizeof(flags));
        snprintf(name, sizeof(name), "%s", i < n ? s->name : "Default");
        fill_block(&g, name, flags, &usage[i], per);
    }
    fill_block(&g, "Total", "", &total, per);
    char **cells = util_xcalloc((size_t)g.rows * NCOLS + 1, sizeof(*cells));
    for (int r = 0; r < g.rows; r++)
        for (int c = 0; c < NCOLS; c++)
            cells[(size_t)r * NCOLS + (size_t)c] = util_strdup(g.cells[r][c]);
    *rows = g.rows;
    free(g.cells);
    return cells;
}

/* ------------------------------------------------------ the document */

static json_t *res_json(const resources_t *r, int64_t pods)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I}", "cpu_milli", (json_int_t)r->milli_cpu, "gpu",
                     (json_int_t)res_get_scalar(r, RES_GPU), "memory", (json_int_t)r->memory, "storage",
                     (json_int_t)r->ephemeral, "pods", (json_int_t)pods);
}

static json_t *usage_json(const char *name, const pool_spec_t *s, const pool_usage_t *u)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    if (s) {
        json_object_set_new(o, "preemption", json_boolean(!s->disable_preemption));
        json_object_set_new(o, "borrowing", json_boolean(!s->disable_borrowing));
        json_object_set_new(o, "sharing", json_boolean(!s->disable_sharing));
    }
    json_object_set_new(o, "nodes", json_integer(u->nodes));
    json_object_set_new(o, "capacity", res_json(&u->capacity, u->capacity.pods));
    json_object_set_new(o, "allocatable", res_json(&u->allocatable, u->allocatable.pods));
    json_t *used = res_json(&u->used, u->pods_running);
    if (u->gpu_shared > 0) /* only where GPUs are split: the document stays as it was elsewhere */
        json_object_set_new(used, "gpu_shared", json_integer(u->gpu_shared));
    json_object_set_new(o, "used", used);
    json_object_set_new(o, "shared", res_json(&u->shared, u->shared.pods));
    json_object_set_new(o, "borrowed", res_json(&u->borrowed, u->borrowed.pods));
    json_object_set_new(o, "pending", res_json(&u->pending_req, u->pending));
    json_object_set_new(o, "pending_gangs", json_integer(u->pending_gangs));
    if (u->gated > 0) /* as gpu_shared: the document stays as it was where no pod is gated */
        json_object_set_new(o, "gated", json_integer(u->gated));
    if (u->held_nodes > 0) { /* as gated: only while a reservation holds room */
        json_t *h = json_pack("{s:i, s:I}", "nodes", u->held_nodes, "gpu", (json_int_t)u->held_gpu);
        if (u->held_for[0])
            json_object_set_new(h, "pod_group", json_string(u->held_for));
        json_object_set_new(o, "held", h);
    }
    return o;
}

json_t *pool_table_doc(const pool_spec_t *specs, int n, const pool_spec_t *dflt, const pool_usage_t *usage)
{
    json_t *arr = json_array();
    for (int i = 0; i <= n; i++) {
        const pool_spec_t *s = i < n ? &specs[i] : dflt;
        json_array_append_new(arr, usage_json(i < n ? s->name : DEFAULT_POOL, s, &usage[i]));
    }
    pool_usage_t total;
    usage_total(usage, n + 1, &total);
    json_array_append_new(arr, usage_json("total", NULL, &total));
    return arr;
}

/* ------------------------------------------------------ from LIST items */

static int cmp_spec(const void *a, const void *b)
{
    return strcmp(((const pool_spec_t *)a)->name, ((const pool_spec_t *)b)->name);
}

static const char *item_name(json_t *item)
{
    const char *s = json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
    return s ? s : "?";
}

/* Parses the Pool items; a Pool named "default" becomes dflt's flags. */
static int parse_pools(FILE *errf, json_t *pools, pool_spec_t **out, pool_spec_t *dflt)
{
    size_t cap = json_is_array(pools) ? json_array_size(pools) : 0, i;
    pool_spec_t *specs = util_xcalloc(cap + 1, sizeof(*specs));
    int n = 0;
    json_t *item;
    char err[256];
    pool_spec_default(dflt);
    for (i = 0; i < cap; i++) {
        item = json_array_get(pools, i);
        pool_spec_t s;
        if (pool_spec_from_json(&s, item, err, sizeof(err)) < 0) {
            /* err names the pool when it has a name ("pool gpu: spec...") */
            fprintf(errf, "warning: skipping invalid Pool: %s\n", err);
            continue;
        }
        if (!strcmp(s.name, DEFAULT_POOL)) {
            dflt->disable_preemption = s.disable_preemption;
            dflt->disable_borrowing = s.disable_borrowing;
            dflt->disable_sharing = s.disable_sharing;
            pool_spec_free(&s);
            continue;
        }
        specs[n++] = s;
    }
    qsort(specs, (size_t)n, sizeof(*specs), cmp_spec);
    *out = specs;
    return n;
}

/* The room each Pool's .status.reservation says is held (the scheduler
 * writes it; a malformed field is ignored: the table is only a view). */
static void held_from_status(pool_table_t *t, json_t *pools)
{
    size_t n = json_is_array(pools) ? json_array_size(pools) : 0;
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(pools, i);
        json_t *r = json_object_get(json_object_get(item, "status"), "reservation");
        json_t *nodes = json_object_get(r, "nodes");
        if (!json_is_object(r) || !json_is_array(nodes) || json_array_size(nodes) == 0)
            continue;
        const char *name = item_name(item);
        int k = t->n; /* default */
        if (strcmp(name, DEFAULT_POOL) != 0) {
            for (k = 0; k < t->n && strcmp(t->specs[k].name, name) != 0; k++)
                ;
            if (k == t->n)
                continue;
        }
        pool_usage_t *u = &t->usage[k];
        u->held_nodes = (int)json_array_size(nodes);
        json_t *held = json_object_get(r, "held");
        const char *res = json_string_value(json_object_get(r, "resource"));
        if (json_is_integer(held) && res && strcmp(res, RES_GPU_NAME) == 0 && json_integer_value(held) > 0)
            u->held_gpu = json_integer_value(held);
        const char *pg = json_string_value(json_object_get(r, "podGroup"));
        snprintf(u->held_for, sizeof(u->held_for), "%s", pg ? pg : "");
    }
}

void pool_table_load(pool_table_t *t, FILE *errf, json_t *nodes, json_t *pods, json_t *pools,
                     const char *scheduler_name)
{
    t->n = parse_pools(errf, pools, &t->specs, &t->dflt);
    size_t nn = json_is_array(nodes) ? json_array_size(nodes) : 0;
    size_t np = json_is_array(pods) ? json_array_size(pods) : 0;
    node_t **nv = util_xcalloc(nn + 1, sizeof(*nv));
    pod_t **pv = util_xcalloc(np + 1, sizeof(*pv));
    int cn = 0, cp = 0;
    char err[256];
    for (size_t i = 0; i < nn; i++) {
        json_t *it = json_array_get(nodes, i);
        if (!(nv[cn] = node_from_json(it, err, sizeof(err))))
            fprintf(errf, "warning: skipping node %s: %s\n", item_name(it), err);
        else
            cn++;
    }
    for (size_t i = 0; i < np; i++) {
        json_t *it = json_array_get(pods, i);
        if (!(pv[cp] = pod_from_json(it, err, sizeof(err))))
            fprintf(errf, "warning: skipping pod %s: %s\n", item_name(it), err);
        else
            cp++;
    }
    t->usage = util_xcalloc((size_t)t->n + 1, sizeof(*t->usage));
    pool_usage_compute(t->specs, t->n, nv, cn, pv, cp, scheduler_name, t->usage);
    held_from_status(t, pools);
    for (int i = 0; i < cn; i++)
        node_unref(nv[i]);
    for (int i = 0; i < cp; i++)
        pod_unref(pv[i]);
    free(nv);
    free(pv);
}

void pool_table_free(pool_table_t *t)
{
    free(t->usage);
    for (int i = 0; i < t->n; i++)
        pool_spec_free(&t->specs[i]);
    free(t->specs);
    pool_spec_free(&t->dflt);
    memset(t, 0, sizeof(*t));
}
