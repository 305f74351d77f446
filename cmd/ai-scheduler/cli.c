/* cli.c -- the table commands' shared front-end: common flags, the API
 * client, aligned tables, JSON and YAML. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "kube/kubeconfig.h"
#include "util/util.h"

/* ------------------------------------------------------------ flags */

/* -o VALUE: 0, or 2 after the error line. */
static int set_output(cli_t *c, const char *v)
{
    int yaml = (c->cmd->flags & CLI_YAML) != 0;
    if (!strcmp(v, "table") || !strcmp(v, "wide"))
        c->fmt = CLI_OUT_TABLE;
    else if (!strcmp(v, "json"))
        c->fmt = CLI_OUT_JSON;
    else if (yaml && !strcmp(v, "yaml"))
        c->fmt = CLI_OUT_YAML;
    else {
        fprintf(c->errf, "error: unknown output format \"%s\" (table, json%s)\n", v, yaml ? ", yaml" : "");
        return 2;
    }
    return 0;
}

/* --server, --lease-namespace, --lease-name, --scheduler-port,
 * --certificate-authority, --insecure-skip-tls-verify (CLI_SERVER): 1
 * taken, 0 not one of them, -1 without its value, 2 after an error line. */
static int server_arg(cli_t *c, int argc, char **argv, int *i)
{
    int missing;
    const char *v;
    if (!strcmp(argv[*i], "--insecure-skip-tls-verify") || !strcmp(argv[*i], "--insecure-skip-tls-verify=true")) {
        c->server_insecure = 1;
    } else if ((v = util_opt_value(argc, argv, i, "--certificate-authority", NULL, &missing)) || missing) {
        if (!v || !*v)
            return -1;
        c->server_ca = v;
    } else if ((v = util_opt_value(argc, argv, i, "--server", NULL, &missing)) || missing) {
        if (!v || !*v)
            return -1;
        if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) {
            fprintf(c->errf, "error: --server wants an http:// or https:// URL, not \"%s\"\n", v);
            return 2;
        }
        c->server = v;
    } else if ((v = util_opt_value(argc, argv, i, "--lease-namespace", NULL, &missing)) || missing) {
        if (!v || !*v)
            return -1;
        c->lease_ns = v;
    } else if ((v = util_opt_value(argc, argv, i, "--lease-name", NULL, &missing)) || missing) {
        if (!v || !*v)
            return -1;
        c->lease_name = v;
    } else if ((v = util_opt_value(argc, argv, i, "--scheduler-port", NULL, &missing)) || missing) {
        if (!v || !*v)
            return -1;
        char *end;
        long p = strtol(v, &end, 10);
        if (*end || p < 1 || p > 65535) {
            fprintf(c->errf, "error: --scheduler-port wants 1..65535, not \"%s\"\n", v);
            return 2;
        }
        c->sched_port = (int)p;
    } else {
        return 0;
    }
    return 1;
}

int cli_parse(cli_t *c, const cli_cmd_t *cmd, void *ctx, int argc, char **argv, int first, FILE *out, FILE *errf)
{
    *c = (cli_t){ .cmd = cmd, .out = out, .errf = errf, .fmt = CLI_OUT_TABLE };
    int ns = (cmd->flags & CLI_NAMESPACE) != 0, missing, rc;
    const char *v;
    if (ns)
        c->ns = "default";
    if (cmd->flags & CLI_SERVER) {
        c->lease_ns = "kube-system";
        c->lease_name = "ai-scheduler";
        c->sched_port = 10261;
    }
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cmd->usage(out);
            return 0;
        } else if (ns && (!strcmp(a, "-A") || !strcmp(a, "--all-namespaces"))) {
            c->ns = NULL;
        } else if ((v = util_opt_value(argc, argv, &i, "--kubeconfig", NULL, &missing)) || missing) {
            if (!v || !*v)
                goto missing;
            c->kubeconfig = v;
        } else if (ns && ((v = util_opt_value(argc, argv, &i, "--namespace", "-n", &missing)) || missing)) {
            if (!v || !*v)
                goto missing;
            c->ns = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--output", "-o", &missing)) || missing) {
            if (!v || (!*v && !(cmd->flags & CLI_EMPTY_OUTPUT)))
                goto missing;
            if ((rc = set_output(c, v)) != 0)
                return rc;
        } else if ((cmd->flags & CLI_SERVER) && (rc = server_arg(c, argc, argv, &i)) != 0) {
            if (rc < 0)
                goto missing;
            if (rc > 1)
                return rc;
        } else if (!cmd->arg || (rc = cmd->arg(ctx, argc, argv, &i)) == 0) {
            fprintf(errf, "error: unknown argument \"%s\"\n", a);
            cmd->usage(errf);
            return 2;
        } else if (rc < 0) {
            goto missing;
        }
        continue;
    missing:
        fprintf(errf, "error: %s needs a value\n", a);
        return 2;
    }
    return CLI_CONTINUE;
}

/* ------------------------------------------------------------ client */

kube_client_t *cli_client(const cli_t *c)
{
    kube_config_t cfg;
    char err[512] = "";
    memset(&cfg, 0, sizeof(cfg));
    if (kube_config_load(&cfg, c->kubeconfig, err, sizeof(err)) < 0) {
        fprintf(c->errf, "error: %s\n", err[0] ? err : "cannot load kubeconfig");
        return NULL;
    }
    kube_client_opts_t o = { .qps = 0, .burst = 0, .timeout_s = 30, .user_agent = c->cmd->user_agent };
    kube_client_t *kc = kube_client_new(&cfg, &o, err, sizeof(err)); /* cfg is copied */
    kube_config_free(&cfg);
    if (!kc)
        fprintf(c->errf, "error: %s\n", err[0] ? err : "cannot create client");
    return kc;
}

/* ------------------------------------------------------------ tables */

/* Display width of UTF-8 text: code points, not bytes (✓ is 3 bytes, 1 column). */
static size_t display_width(const char *s, int bytes)
{
    if (bytes)
        return strlen(s);
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

static const char *cell(const cli_table_t *t, int r, int c)
{
    const char *s = r < 0 ? t->header[c] : t->cells[(size_t)r * (size_t)t->cols + (size_t)c];
    return s ? s : "";
}

int cli_table_print(FILE *out, const cli_table_t *t)
{
    size_t *w = util_xcalloc((size_t)t->cols + 1, sizeof(*w));
    for (int r = -1; r < t->rows; r++)
        for (int c = t->first; c < t->cols; c++) {
            size_t dw = display_width(cell(t, r, c), t->bytes);
            if (dw > w[c])
                w[c] = dw;
        }
    for (int r = -1; r < t->rows; r++) {
        int last = t->cols - 1;
        while (last > t->first && !cell(t, r, last)[0])
            last--;
        for (int c = t->first; c <= last; c++) {
            const char *s = cell(t, r, c);
            fputs(s, out);
            if (c == last)
                break;
            for (size_t pad = display_width(s, t->bytes); pad < w[c] + (size_t)t->gap; pad++)
                fputc(' ', out);
        }
        fputc('\n', out);
    }
    free(w);
    return ferror(out) ? -1 : 0;
}

void cli_cells_free(char **cells, size_t n)
{
    if (!cells)
        return;
    for (size_t i = 0; i < n; i++)
        free(cells[i]);
    free(cells);
}

/* ------------------------------------------------------------ yaml */

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

int cli_emit(FILE *out, cli_out_t fmt, json_t *doc)
{
    int rc;
    if (fmt == CLI_OUT_YAML) {
        rc = emit_yaml(out, doc);
    } else {
        rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0 ? -1 : 0;
        fputc('\n', out);
    }
    return rc < 0 || ferror(out) ? -1 : 0;
}
