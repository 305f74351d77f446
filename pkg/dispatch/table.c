/* table.c -- the MultiClusterJob table for `ai-scheduler mcjob get`. */
#include "dispatch/table.h"

#include <stdlib.h>
#include <string.h>

#include "dispatch/controller.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "util/util.h"

static void fmt_dur(int64_t ms, char *buf, size_t n)
{
    if (ms < 0)
        ms = 0;
    int64_t s = ms / 1000;
    if (s < 120)
        snprintf(buf, n, "%llds", (long long)s);
    else if (s < 7200)
        snprintf(buf, n, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
    else
        snprintf(buf, n, "%lldh%lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
}

static const char *str_or(json_t *v, const char *d)
{
    const char *s = json_string_value(v);
    return s && *s ? s : d;
}

/* How long the job waited: until its winner won, else until now. */
static void waited(json_t *job, int64_t now_ms, char *buf, size_t n)
{
    json_t *meta = json_object_get(job, "metadata"), *st = json_object_get(job, "status");
    int64_t created = util_parse_rfc3339(json_string_value(json_object_get(meta, "creationTimestamp")));
    if (created <= 0) {
        snprintf(buf, n, "-");
        return;
    }
    const char *winner = json_string_value(json_object_get(st, "winner"));
    int64_t end = now_ms;
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(st, "clusters"), i, c) {
        const char *nm = json_string_value(json_object_get(c, "name"));
        int64_t won = util_parse_rfc3339(json_string_value(json_object_get(c, "wonAt")));
        if (winner && nm && strcmp(nm, winner) == 0 && won > 0)
            end = won;
    }
    fmt_dur(end - created, buf, n);
}

static void clusters_cell(json_t *job, sbuf_t *b)
{
    json_t *st = json_object_get(job, "status");
    json_t *cl = json_object_get(st, "clusters");
    size_t i;
    json_t *c;
    if (json_array_size(cl) == 0) {
        /* not reconciled yet: the spec's list */
        json_array_foreach (json_object_get(json_object_get(job, "spec"), "clusters"), i, c)
            sbuf_printf(b, "%s%s=-", i ? "," : "", str_or(json_object_get(c, "name"), "?"));
        if (!b->len)
            sbuf_puts(b, "-");
        return;
    }
    json_array_foreach (cl, i, c)
        sbuf_printf(b, "%s%s(%lld)=%s", i ? "," : "", str_or(json_object_get(c, "name"), "?"),
                    (long long)json_integer_value(json_object_get(c, "priority")),
                    str_or(json_object_get(c, "state"), "?"));
}

void dsp_table_render(FILE *out, json_t *items, int all_ns, int64_t now_ms)
{
    size_t n = json_array_size(items);
    char **cells = util_xcalloc(n * 6 + 6, sizeof(char *));
    const char *hdr[] = { "NAMESPACE", "NAME", "PHASE", "WINNER", "WAITED", "CLUSTERS" };
    int w[6] = { 0 };
    for (int k = 0; k < 6; k++) {
        cells[k] = util_strdup(hdr[k]);
        w[k] = (int)strlen(hdr[k]);
    }
    for (size_t i = 0; i < n; i++) {
        json_t *j = json_array_get(items, i), *meta = json_object_get(j, "metadata"),
               *st = json_object_get(j, "status");
        char **row = cells + (i + 1) * 6, wt[32];
        row[0] = util_strdup(str_or(json_object_get(meta, "namespace"), "-"));
        row[1] = util_strdup(str_or(json_object_get(meta, "name"), "?"));
        row[2] = util_strdup(
            json_object_get(meta, "deletionTimestamp") ? "Deleting" : str_or(json_object_get(st, "phase"), "Pending"));
        row[3] = util_strdup(str_or(json_object_get(st, "winner"), "-"));
        waited(j, now_ms, wt, sizeof wt);
        row[4] = util_strdup(wt);
        sbuf_t b = { 0 };
        clusters_cell(j, &b);
        row[5] = b.data ? b.data : util_strdup("-");
        for (int k = 0; k < 6; k++)
            if ((int)strlen(row[k]) > w[k])
                w[k] = (int)strlen(row[k]);
    }
    for (size_t i = 0; i <= n; i++) {
        char **row = cells + i * 6;
        for (int k = all_ns ? 0 : 1; k < 6; k++)
            if (k == 5)
                fprintf(out, "%s\n", row[k]);
            else
                fprintf(out, "%-*s   ", w[k], row[k]);
    }
    for (size_t i = 0; i < (n + 1) * 6; i++)
        free(cells[i]);
    free(cells);
}

static int fetch(FILE *out, FILE *errf, const char *kubeconfig, const char *ns, const char *name, int json_out)
{
    kube_config_t cfg;
    char err[512];
    if (kube_config_load(&cfg, kubeconfig, err, sizeof err) != 0) {
        fprintf(errf, "error: %s\n", err);
        return 1;
    }
    kube_client_opts_t o = { .timeout_s = 30, .user_agent = "ai-scheduler/mcjob" };
    kube_client_t *kc = kube_client_new(&cfg, &o, err, sizeof err);
    kube_config_free(&cfg);
    if (!kc) {
        fprintf(errf, "error: %s\n", err);
        return 1;
    }
    sbuf_t p = { 0 };
    sbuf_printf(&p, "/apis/%s/%s", DSP_GROUP, DSP_VERSION);
    if (ns) {
        char *ens = util_urlencode(ns);
        sbuf_printf(&p, "/namespaces/%s", ens);
        free(ens);
    }
    sbuf_puts(&p, "/multiclusterjobs");
    json_t *items = json_array();
    long status = 0;
    int rc = 0;
    if (name) {
        char *en = util_urlencode(name);
        sbuf_printf(&p, "/%s", en);
        free(en);
        json_t *one = NULL;
        rc = kube_get_json(kc, p.data, &one, &status, err, sizeof err);
        if (rc == 0)
            json_array_append_new(items, one);
    } else {
        rc = kube_list_array(kc, p.data, items, &status, err, sizeof err);
    }
    sbuf_free(&p);
    kube_client_free(kc);
    if (rc != 0) {
        fprintf(errf, "error: %s%s\n", err,
                status == 404 && !name ? " (is pools/multiclusterjob-crd.yaml applied?)" : "");
        json_decref(items);
        return 1;
    }
    if (json_out) {
        json_dumpf(items, out, JSON_INDENT(2));
        fputc('\n', out);
    } else if (json_array_size(items) == 0) {
        fprintf(out, "No MultiClusterJobs found.\n");
    } else {
        dsp_table_render(out, items, ns == NULL, util_wall_ms());
    }
    json_decref(items);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ai-scheduler mcjob get [NAME] [-n NAMESPACE | -A] [--kubeconfig FILE] [-o table|json]\n"
               "Lists MultiClusterJobs: phase, winner, how long each waited, and each cluster's (priority)=state.\n");
}

int dsp_table_main(int argc, char **argv, FILE *out, FILE *errf)
{
    if (argc < 1 || strcmp(argv[0], "get") != 0) {
        if (argc >= 1 && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
            usage(out);
            return 0;
        }
        usage(errf);
        return 2;
    }
    const char *kubeconfig = NULL, *ns = "default", *name = NULL, *v;
    int json_out = 0, missing;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(out);
            return 0;
        } else if (!strcmp(a, "-A") || !strcmp(a, "--all-namespaces")) {
            ns = NULL;
        } else if ((v = util_opt_value(argc, argv, &i, "--kubeconfig", NULL, &missing)) || missing) {
            if (!v || !*v)
                goto missing;
            kubeconfig = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--namespace", "-n", &missing)) || missing) {
            if (!v || !*v)
                goto missing;
            ns = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--output", "-o", &missing)) || missing) {
            if (!v || !*v)
                goto missing;
            if (!strcmp(v, "json"))
                json_out = 1;
            else if (strcmp(v, "table") != 0 && strcmp(v, "wide") != 0) {
                fprintf(errf, "error: unknown output format \"%s\" (table, json)\n", v);
                return 2;
            }
        } else if (a[0] != '-' && !name) {
            name = a;
        } else {
            fprintf(errf, "error: unknown argument \"%s\"\n", a);
            usage(errf);
            return 2;
        }
        continue;
    missing:
        fprintf(errf, "error: %s needs a value\n", a);
        return 2;
    }
    if (name && !ns) {
        fprintf(errf, "error: a NAME needs one namespace (-n), not -A\n");
        return 2;
    }
    return fetch(out, errf, kubeconfig, ns, name, json_out);
}
