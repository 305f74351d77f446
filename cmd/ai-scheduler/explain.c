/* explain.c -- `ai-scheduler explain`: a decision record fetched from the
 * scheduler's /debug routes and printed as text (sections: unit, queue,
 * filters, top nodes, post-filter steps, gang, hint), JSON or YAML. */
#include "explain.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debugclient.h"
#include "util/util.h"

typedef struct explain_args {
    const char *kind; /* "pod" | "podgroup" */
    const char *target;
    int npos;
    int bad; /* a third positional argument */
} explain_args_t;

static void usage_text(FILE *f)
{
    fputs("Usage: ai-scheduler explain [pod|podgroup] [NAMESPACE/]NAME [-n NAMESPACE] [--server URL]\n"
          "                            [-o json|yaml] [--kubeconfig FILE] [--lease-namespace NS]\n"
          "                            [--lease-name NAME] [--scheduler-port PORT]\n"
          "\n"
          "Why a pending pod (or a PodGroup's gang) is not running: the scheduler's last\n"
          "decision on it (its pool and queue, each filter's reasons with example nodes,\n"
          "the best nodes with each plugin's score, the post-filter steps tried, the\n"
          "gang's state) and a plain hint.\n"
          "\n"
          "  -n NAMESPACE   when NAME has none (default \"default\")\n"
          "  --server URL           the scheduler's own HTTPS port (https://HOST:10261; see debug -h\n"
          "                         for --certificate-authority, --insecure-skip-tls-verify); without it\n"
          "                         the leader, found from its Lease, through the API server's proxy\n"
          "  --lease-namespace NS   the scheduler's Lease (kube-system)\n"
          "  --lease-name NAME      (ai-scheduler)\n"
          "  --scheduler-port PORT  the scheduler pod's HTTP port (10261)\n"
          "  -o FORMAT              text (default), json or yaml\n",
          f);
}

static int explain_arg(void *ctx, int argc, char **argv, int *i)
{
    explain_args_t *a = ctx;
    (void)argc;
    const char *s = argv[*i];
    if (s[0] == '-')
        return 0;
    if (a->npos == 0 && !a->target &&
        (strcmp(s, "pod") == 0 || strcmp(s, "pods") == 0 || strcmp(s, "podgroup") == 0 || strcmp(s, "podgroups") == 0 ||
         strcmp(s, "pg") == 0)) {
        a->kind = strncmp(s, "pod", 3) == 0 && strncmp(s, "podgroup", 8) != 0 ? "pod" : "podgroup";
    } else if (!a->target) {
        a->target = s;
    } else {
        a->bad = 1;
    }
    a->npos++;
    return 1;
}

/* -------------------------------------------------------------- text */

static const char *sv(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void print_res(FILE *out, const char *label, const json_t *r)
{
    if (!json_is_object(r))
        return;
    fprintf(out, "%s gpu %g, cpu %gm, memory %gMB", label, json_number_value(json_object_get(r, "gpu")),
            json_number_value(json_object_get(r, "cpuMillicores")), json_number_value(json_object_get(r, "memoryMB")));
}

static void print_unit(FILE *out, const json_t *rec)
{
    const json_t *g = json_object_get(rec, "gang");
    int group = strcmp(sv(rec, "kind"), "podgroup") == 0;
    fprintf(out, "%s:%*s%s\n", group ? "Pod group" : "Pod", group ? 3 : 9, "", group ? sv(g, "name") : sv(rec, "pod"));
    fprintf(out, "Pool:        %s\n", sv(rec, "pool"));
    fprintf(out, "Outcome:     %s (attempt %lld, at %s)\n", sv(rec, "outcome"),
            (long long)json_integer_value(json_object_get(rec, "attempts")), sv(rec, "time"));
    if (json_is_string(json_object_get(rec, "message")))
        fprintf(out, "Message:     %s\n", sv(rec, "message"));
    const json_t *req = json_object_get(rec, "request");
    if (json_is_object(req))
        fprintf(out, "Request:     gpu %lld, cpu %lldm, memory %lld bytes\n",
                (long long)json_integer_value(json_object_get(req, "gpu")),
                (long long)json_integer_value(json_object_get(req, "cpuMillicores")),
                (long long)json_integer_value(json_object_get(req, "memoryBytes")));
}

static void print_queue(FILE *out, const json_t *rec)
{
    const json_t *q = json_object_get(rec, "queue"), *a = json_object_get(rec, "admission");
    if (json_is_object(q)) {
        fprintf(out, "Queue:       %s (ratio %.2f, %s)\n", sv(q, "name"),
                json_number_value(json_object_get(q, "ratio")),
                json_is_true(json_object_get(q, "preemptible")) ? "preemptible" : "non-preemptible");
        print_res(out, "  usage:     ", json_object_get(q, "usage"));
        if (json_is_object(json_object_get(q, "usage")))
            fputc('\n', out);
        print_res(out, "  fair share:", json_object_get(q, "fairShare"));
        if (json_is_object(json_object_get(q, "fairShare")))
            fputc('\n', out);
    } else {
        fprintf(out, "Queue:       (no Queues)\n");
    }
    if (json_is_object(a))
        fprintf(out, "Admission:   %s%s%s\n", sv(a, "verdict"), *sv(a, "message") ? ": " : "", sv(a, "message"));
}

static void print_filters(FILE *out, const json_t *rec)
{
    const json_t *d = json_object_get(rec, "filterDetails");
    fprintf(out, "Filters:     %lld node(s) evaluated\n",
            (long long)json_integer_value(json_object_get(rec, "nodesEvaluated")));
    size_t i, k;
    json_t *f, *e;
    json_array_foreach (d, i, f) {
        fprintf(out, "  %4lld  %s", (long long)json_integer_value(json_object_get(f, "count")), sv(f, "reason"));
        if (*sv(f, "plugin"))
            fprintf(out, "  [%s]", sv(f, "plugin"));
        json_array_foreach (json_object_get(f, "examples"), k, e)
            fprintf(out, "%s%s", k ? ", " : "  e.g. ", json_string_value(e));
        fputc('\n', out);
    }
}

static void print_top(FILE *out, const json_t *rec)
{
    const json_t *t = json_object_get(rec, "topNodes");
    if (json_array_size(t) == 0)
        return;
    fprintf(out, "Top nodes:\n");
    size_t i;
    json_t *n;
    json_array_foreach (t, i, n) {
        fprintf(out, "  %-20s score %lld:", sv(n, "node"), (long long)json_integer_value(json_object_get(n, "score")));
        const char *k;
        json_t *v;
        json_object_foreach (json_object_get(n, "scores"), k, v)
            fprintf(out, " %s=%lld", k, (long long)json_integer_value(v));
        fputc('\n', out);
    }
}

static void print_steps(FILE *out, const json_t *rec)
{
    const json_t *p = json_object_get(rec, "postFilter");
    if (json_array_size(p) == 0)
        return;
    fprintf(out, "Post-filter:\n");
    size_t i;
    json_t *s;
    json_array_foreach (p, i, s)
        fprintf(out, "  %-14s %-14s %s\n", sv(s, "step"), sv(s, "result"), sv(s, "detail"));
}

static void print_gang(FILE *out, const json_t *rec)
{
    const json_t *g = json_object_get(rec, "gang");
    if (json_is_string(json_object_get(rec, "waitingBehind")))
        fprintf(out, "Waiting behind: pod group %s\n", sv(rec, "waitingBehind"));
    if (!json_is_object(g) || !json_is_string(json_object_get(g, "name")))
        return;
    fprintf(out, "Gang:        %s: %lld/%lld members placeable (%lld placed)", sv(g, "name"),
            (long long)json_integer_value(json_object_get(g, "placeable")),
            (long long)json_integer_value(json_object_get(g, "minMember")),
            (long long)json_integer_value(json_object_get(g, "placed")));
    if (json_is_integer(json_object_get(g, "timeoutLeftSeconds")))
        fprintf(out, ", timeout left %llds", (long long)json_integer_value(json_object_get(g, "timeoutLeftSeconds")));
    if (json_is_string(json_object_get(g, "topologyLevel")))
        fprintf(out, ", topology %s %s",
                json_is_true(json_object_get(g, "topologyRequired")) ? "required" : "preferred",
                sv(g, "topologyLevel"));
    fputc('\n', out);
    size_t i;
    json_t *m;
    json_array_foreach (json_object_get(g, "topology"), i, m)
        fprintf(out, "  topology %s: %s\n", sv(m, "result"), sv(m, "detail"));
    json_array_foreach (json_object_get(g, "members"), i, m)
        fprintf(out, "  %-30s %s\n", sv(m, "pod"), sv(m, "state"));
}

void explain_print_text(FILE *out, const json_t *rec)
{
    print_unit(out, rec);
    print_queue(out, rec);
    print_filters(out, rec);
    print_top(out, rec);
    print_steps(out, rec);
    print_gang(out, rec);
    if (json_is_string(json_object_get(rec, "hint")))
        fprintf(out, "Hint:        %s\n", sv(rec, "hint"));
}

int explain_main(int argc, char **argv, FILE *out, FILE *errf)
{
    static const cli_cmd_t cmd = {
        .user_agent = "ai-scheduler-explain",
        .flags = CLI_YAML | CLI_NAMESPACE | CLI_SERVER,
        .usage = usage_text,
        .arg = explain_arg,
    };
    explain_args_t a = { .kind = "pod" };
    cli_t c;
    int rc = cli_parse(&c, &cmd, &a, argc, argv, 0, out, errf);
    if (rc != CLI_CONTINUE)
        return rc;
    const char *slash = a.target ? strchr(a.target, '/') : NULL;
    if (a.bad || !a.target || !a.target[0] || (slash && (slash == a.target || !slash[1] || strchr(slash + 1, '/'))) ||
        (!slash && !c.ns)) {
        fprintf(errf, "error: expected [pod|podgroup] [NAMESPACE/]NAME (and no -A)\n");
        usage_text(errf);
        return 2;
    }
    sbuf_t path = { 0 };
    sbuf_printf(&path, "/debug/%s/%s%s%s", strcmp(a.kind, "pod") == 0 ? "pods" : "podgroups", slash ? "" : c.ns,
                slash ? "" : "/", a.target);
    json_t *rec = NULL;
    char err[1024] = "";
    rc = debug_get(&c, c.server, path.data, &rec, err, sizeof(err));
    sbuf_free(&path);
    if (rc != 0) {
        fprintf(errf, "error: %s\n", err);
        return 1;
    }
    if (c.fmt == CLI_OUT_TABLE)
        explain_print_text(out, rec);
    else
        rc = cli_emit(out, c.fmt, rec) == 0 ? 0 : 1;
    json_decref(rec);
    return rc;
}
