/* table.c -- `ai-scheduler pools` / `kubectl pool`: LISTs nodes, pods and
 * pools and prints each pool's capacity, allocatable, used, shared and
 * pending resources as a table, JSON or YAML. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "api/quantity.h"
#include "gpu/gpu.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "pool/table.h"
#include "util/util.h"

#define POOLS_PATH "/apis/resource.aibee.cn/v1alpha1/pools"
#define NCOLS      8
#define ROWS_PER   7              /* cpu gpu mem storage nodes pods [gangs] */
#define CELL_MAX   256            /* a pool name is a DNS subdomain: <= 253 */
#define CHECK      "\xe2\x9c\x93" /* ✓ U+2713, one column wide */

/* ---------------------------------------------------------------- table */

typedef struct grid {
    char (*cells)[NCOLS][CELL_MAX];
    int rows;
} grid_t;

/* Display width of UTF-8 text: code points, not bytes (✓ is 3 bytes, 1 column). */
static size_t display_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

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
                break;
            case 2: quantity_format_bytes(v[c]->memory, cell, CELL_MAX); break;
            case 3: quantity_format_bytes(v[c]->ephemeral, cell, CELL_MAX); break;
            case 4:
                if (c < 2)
                    fmt_int(u->nodes, cell, CELL_MAX);
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

/* Left-aligned columns two spaces apart, no trailing blanks. */
static int print_grid(FILE *out, const grid_t *g)
{
    size_t w[NCOLS] = { 0 };
    for (int r = 0; r < g->rows; r++)
        for (int c = 0; c < NCOLS; c++) {
            size_t dw = display_width(g->cells[r][c]);
            if (dw > w[c])
                w[c] = dw;
        }
    for (int r = 0; r < g->rows; r++) {
        int last = NCOLS - 1;
        while (last > 0 && !g->cells[r][last][0])
            last--;
        for (int c = 0; c <= last; c++) {
            fputs(g->cells[r][c], out);
            if (c == last)
                break;
            for (size_t pad = display_width(g->cells[r][c]); pad < w[c] + 2; pad++)
                fputc(' ', out);
        }
        fputc('\n', out);
    }
    return ferror(out) ? -1 : 0;
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
        t->gpu_shared += usage[i].gpu_shared;
    }
}

static int render_table(FILE *out, const pool_spec_t *specs, int n, const pool_spec_t *dflt, const pool_usage_t *usage)
{
    grid_t g = { util_xcalloc((size_t)(n + 2) * ROWS_PER + 1, sizeof(*g.cells)), 0 };
    static const char *hdr[NCOLS] = { "Pools",       "p b s", "Resource", "Capacity",
                                      "Allocatable", "Used",  "Shared",   "Pending" };
    char flags[32], name[CELL_MAX];
    for (int c = 0; c < NCOLS; c++)
        snprintf(g.cells[0][c], CELL_MAX, "%s", hdr[c]);
    g.rows = 1;
    pool_usage_t total;
    usage_total(usage, n + 1, &total);
    int rows = total.pending_gangs > 0 ? ROWS_PER : ROWS_PER - 1;
    for (int i = 0; i <= n; i++) {
        const pool_spec_t *s = i < n ? &specs[i] : dflt;
        flags_of(s, flags, sizeof(flags));
        snprintf(name, sizeof(name), "%s", i < n ? s->name : "Default");
        fill_block(&g, name, flags, &usage[i], rows);
    }
    fill_block(&g, "Total", "", &total, rows);
    int rc = print_grid(out, &g);
    free(g.cells);
    return rc;
}

/* ------------------------------------------------------ json and yaml */

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
    return o;
}

static json_t *build_doc(const pool_spec_t *specs, int n, const pool_spec_t *dflt, const pool_usage_t *usage)
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

/* Would this string, written plain, read back as something else (a bool,
 * null or a number)? Then it must be quoted. */
static int yaml_needs_quotes(const char *s)
{
    static const char *words[] = { "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~" };
    if (!*s)
        return 1;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (!strcasecmp(s, words[i]))
            return 1;
    if (strchr("0123456789+-.", *s)) {
        char *end;
        (void)strtod(s, &end);
        if (!*end)
            return 1;
    }
    return 0;
}

/* is_string: quote it when plain would change its type; otherwise plain. */
static int yaml_scalar(yaml_emitter_t *em, const char *s, int is_string)
{
    yaml_event_t ev;
    int plain = !is_string || !yaml_needs_quotes(s);
    yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), plain, 1,
                                 plain ? YAML_ANY_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    return yaml_emitter_emit(em, &ev);
}

/* Emits a jansson value as YAML; numbers and booleans plain, strings plain
 * unless that would turn "true" or "0" into another type. */
static int yaml_value(yaml_emitter_t *em, json_t *v)
{
    yaml_event_t ev;
    char buf[32];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
        if (!yaml_emitter_emit(em, &ev))
            return -1;
        json_object_foreach (v, k, x) {
            if (!yaml_scalar(em, k, 1) || yaml_value(em, x) < 0)
                return -1;
        }
        yaml_mapping_end_event_initialize(&ev);
        return yaml_emitter_emit(em, &ev) ? 0 : -1;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
        if (!yaml_emitter_emit(em, &ev))
            return -1;
        json_array_foreach (v, i, x) {
            if (yaml_value(em, x) < 0)
                return -1;
        }
        yaml_sequence_end_event_initialize(&ev);
        return yaml_emitter_emit(em, &ev) ? 0 : -1;
    }
    case JSON_STRING: return yaml_scalar(em, json_string_value(v), 1) ? 0 : -1;
    case JSON_INTEGER:
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        return yaml_scalar(em, buf, 0) ? 0 : -1;
    case JSON_REAL: snprintf(buf, sizeof(buf), "%g", json_real_value(v)); return yaml_scalar(em, buf, 0) ? 0 : -1;
    case JSON_TRUE: return yaml_scalar(em, "true", 0) ? 0 : -1;
    case JSON_FALSE: return yaml_scalar(em, "false", 0) ? 0 : -1;
    default: return yaml_scalar(em, "null", 0) ? 0 : -1;
    }
}

static int emit_yaml(FILE *out, json_t *doc)
{
    yaml_emitter_t em;
    yaml_event_t ev;
    int rc = -1;
    if (!yaml_emitter_initialize(&em))
        return -1;
    yaml_emitter_set_output_file(&em, out);
    yaml_emitter_set_unicode(&em, 1);
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    if (!yaml_emitter_emit(&em, &ev))
        goto out;
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    if (!yaml_emitter_emit(&em, &ev))
        goto out;
    if (yaml_value(&em, doc) < 0)
        goto out;
    yaml_document_end_event_initialize(&ev, 1);
    if (!yaml_emitter_emit(&em, &ev))
        goto out;
    yaml_stream_end_event_initialize(&ev);
    if (!yaml_emitter_emit(&em, &ev))
        goto out;
    rc = yaml_emitter_flush(&em) ? 0 : -1;
out:
    yaml_emitter_delete(&em);
    return rc;
}

int pool_table_emit_yaml(FILE *out, json_t *doc)
{
    return emit_yaml(out, doc);
}

int pool_table_render(FILE *out, pool_out_t fmt, const pool_spec_t *specs, int n, const pool_spec_t *dflt,
                      const pool_usage_t *usage)
{
    if (fmt == POOL_OUT_TABLE)
        return render_table(out, specs, n, dflt, usage);
    json_t *doc = build_doc(specs, n, dflt, usage);
    int rc;
    if (fmt == POOL_OUT_JSON) {
        rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0 ? -1 : 0;
        fputc('\n', out);
    } else {
        rc = emit_yaml(out, doc);
    }
    json_decref(doc);
    return rc < 0 || ferror(out) ? -1 : 0;
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

int pool_table_from_json(FILE *out, FILE *errf, pool_out_t fmt, json_t *nodes, json_t *pods, json_t *pools,
                         const char *scheduler_name)
{
    pool_spec_t *specs, dflt;
    int n = parse_pools(errf, pools, &specs, &dflt);
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
    pool_usage_t *usage = util_xcalloc((size_t)n + 1, sizeof(*usage));
    pool_usage_compute(specs, n, nv, cn, pv, cp, scheduler_name, usage);
    int rc = pool_table_render(out, fmt, specs, n, &dflt, usage);

    free(usage);
    for (int i = 0; i < cn; i++)
        node_unref(nv[i]);
    for (int i = 0; i < cp; i++)
        pod_unref(pv[i]);
    free(nv);
    free(pv);
    for (int i = 0; i < n; i++)
        pool_spec_free(&specs[i]);
    free(specs);
    pool_spec_free(&dflt);
    return rc;
}

/* ------------------------------------------------------ the command */

static void usage_text(FILE *f)
{
    fputs("Usage: ai-scheduler pools [--kubeconfig FILE] [-o table|json|yaml] [--scheduler-name NAME]\n"
          "                         [--gpu-reservation-namespace NS]\n"
          "       kubectl pool [same flags]\n"
          "Prints each pool's resources: capacity, allocatable, used, shared (used by\n"
          "other pools' pods) and pending (requests of pods waiting for a node).\n"
          "  --kubeconfig FILE      default: $KUBECONFIG, ~/.kube/config, in-cluster\n"
          "  -o, --output FORMAT    table (default), json or yaml\n"
          "  --scheduler-name NAME  whose unbound pods count as pending (ai-scheduler)\n"
          "  --gpu-reservation-namespace NS\n"
          "                         the scheduler's GPU reservation pods' namespace\n"
          "                         (" GPU_RESERVATION_NS "): only there a labelled pod is one\n"
          "  -h, --help             this text\n",
          f);
}

static int fetch_and_render(FILE *out, FILE *errf, const char *kubeconfig, pool_out_t fmt, const char *sched)
{
    kube_config_t cfg;
    kube_client_t *c = NULL;
    char err[512] = "";
    long status = 0;
    int rc = 1;
    json_t *nodes = json_array(), *pods = json_array(), *pools = json_array();

    memset(&cfg, 0, sizeof(cfg));
    if (kube_config_load(&cfg, kubeconfig, err, sizeof(err)) < 0) {
        fprintf(errf, "error: %s\n", err[0] ? err : "cannot load kubeconfig");
        goto out;
    }
    kube_client_opts_t o = { .qps = 0, .burst = 0, .timeout_s = 30, .user_agent = "ai-scheduler-pools" };
    if (!(c = kube_client_new(&cfg, &o, err, sizeof(err)))) {
        fprintf(errf, "error: %s\n", err[0] ? err : "cannot create client");
        goto out_cfg;
    }
    if (kube_list_array(c, "/api/v1/nodes", nodes, &status, err, sizeof(err)) < 0 ||
        kube_list_array(c, "/api/v1/pods", pods, &status, err, sizeof(err)) < 0) {
        fprintf(errf, "error: %s: %s\n", kube_client_server(c), err[0] ? err : "list failed");
        goto out_client;
    }
    /* No CRD installed: there are no pools, everything is default. */
    if (kube_list_array(c, POOLS_PATH, pools, &status, err, sizeof(err)) < 0) {
        if (status != 404) {
            fprintf(errf, "error: %s: %s\n", kube_client_server(c), err[0] ? err : "list pools failed");
            goto out_client;
        }
        json_array_clear(pools);
    }
    rc = pool_table_from_json(out, errf, fmt, nodes, pods, pools, sched) < 0 ? 1 : 0;
    if (rc)
        fprintf(errf, "error: writing output failed\n");
out_client:
    kube_client_free(c);
out_cfg:
    kube_config_free(&cfg);
out:
    json_decref(nodes);
    json_decref(pods);
    json_decref(pools);
    return rc;
}

int pool_table_main(int argc, char **argv, FILE *out, FILE *errf)
{
    const char *kubeconfig = NULL, *sched = "ai-scheduler", *v;
    int missing;
    pool_out_t fmt = POOL_OUT_TABLE;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage_text(out);
            return 0;
        } else if ((v = util_opt_value(argc, argv, &i, "--kubeconfig", NULL, &missing)) || missing) {
            if (!v || !*v)
                goto missing;
            kubeconfig = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--scheduler-name", NULL, &missing)) || missing) {
            if (!v || !*v)
                goto missing;
            sched = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--gpu-reservation-namespace", NULL, &missing)) || missing) {
            if (!v || !*v)
                goto missing;
            gpu_set_reservation_namespace(v); /* before the pods are parsed */
        } else if ((v = util_opt_value(argc, argv, &i, "--output", "-o", &missing)) || missing) {
            if (!v)
                goto missing;
            if (!strcmp(v, "table") || !strcmp(v, "wide"))
                fmt = POOL_OUT_TABLE;
            else if (!strcmp(v, "json"))
                fmt = POOL_OUT_JSON;
            else if (!strcmp(v, "yaml"))
                fmt = POOL_OUT_YAML;
            else {
                fprintf(errf, "error: unknown output format \"%s\" (table, json, yaml)\n", v);
                return 2;
            }
        } else {
            fprintf(errf, "error: unknown argument \"%s\"\n", a);
            usage_text(errf);
            return 2;
        }
        continue;
    missing:
        fprintf(errf, "error: %s needs a value\n", a);
        return 2;
    }
    return fetch_and_render(out, errf, kubeconfig, fmt, sched);
}
