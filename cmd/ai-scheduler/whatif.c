/* whatif.c -- `ai-scheduler whatif`: the state (a snapshot file, or a LIST
 * with the leader's assumed pods and nominations over it), the option
 * changes, the submissions, one sandbox run, the answer. */
#include "whatif.h"

#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "snapshot/objfile.h"
#include "snapshot/snapshot.h"
#include "util/log.h"
#include "util/util.h"
#include "debugclient.h"
#include "snapshot.h"

static void usage_text(FILE *f)
{
    fputs("Usage: ai-scheduler whatif -f FILE [--add-nodes N --node-template NODE.yaml]\n"
          "         [--remove-node NAME]... [--set-quota QUEUE=gpu:N[,cpu:Q][,memory:Q]]...\n"
          "         [--snapshot FILE] [--server URL] [--config FILE] [--member NAME]\n"
          "         [--horizon DURATION] [--seed N] [-v N] [-o text|json|yaml] [--kubeconfig FILE]\n"
          "Would the pods of FILE fit? The scheduler's own cycle (queues, gangs, filters,\n"
          "scores, consolidation, preemption, reclaim, borrowing, topology, GPU slots)\n"
          "runs on a copy of the cluster and says where they would go, whom they would\n"
          "evict and why, or why they would wait. Nothing is written, ever.\n"
          "  -f, --filename FILE    Pods; a PodGroup with its pods; a MultiClusterJob\n"
          "  --add-nodes N          N more nodes made from --node-template (a Node)\n"
          "  --remove-node NAME     the node gone (its controllers' pods come back pending)\n"
          "  --set-quota Q=gpu:N    queue Q's deserved quota (cpu and memory as quantities)\n"
          "  --snapshot FILE        the state from `ai-scheduler snapshot` instead of the cluster\n"
          "  --server URL           the scheduler's HTTP port (default: the leader found through\n"
          "                         its Lease, via the API server); its assumed pods and\n"
          "                         nominations are laid over the LIST (state \"leader\";\n"
          "                         unreachable: \"list\")\n"
          "  --lease-namespace NS, --lease-name NAME, --scheduler-port N: finding the leader\n"
          "  --no-leader            a LIST only, without asking the leader\n"
          "  --config FILE          the scheduler's config (default: the snapshot's, or defaults)\n"
          "  --member NAME          a MultiClusterJob's member cluster (default: the first)\n"
          "  --horizon DURATION     virtual time the copy may run for victims to leave (2m)\n"
          "  --seed N               tie-breaks' seed (default: the config's seed, else 1)\n"
          "  -v N                   the scheduler's log lines from the copy (default: warnings only)\n"
          "  -o, --output FORMAT    text (default), json or yaml\n"
          "  --kubeconfig FILE      default: $KUBECONFIG, ~/.kube/config, in-cluster\n"
          "  -h, --help             this text\n",
          f);
}

void whatif_args_free(whatif_args_t *a)
{
    for (int i = 0; i < a->nquotas; i++)
        whatif_quota_free(&a->quotas[i]);
    free(a->quotas);
    free(a->remove);
    memset(a, 0, sizeof *a);
}

typedef struct parse_ctx {
    whatif_args_t *a;
    FILE *errf;
    int failed; /* an error line was printed */
} parse_ctx_t;

static int bad(parse_ctx_t *p, const char *fmt, const char *v)
{
    fprintf(p->errf, "error: ");
    fprintf(p->errf, fmt, v);
    fputc('\n', p->errf);
    p->failed = 1;
    return 1; /* taken: the error is reported after the loop */
}

static int whatif_arg(void *ctx, int argc, char **argv, int *i)
{
    parse_ctx_t *p = ctx;
    whatif_args_t *a = p->a;
    const char *v;
    int missing;
    static const struct {
        const char *lng, *shrt;
        size_t off;
    } strs[] = {
        { "--filename", "-f", offsetof(whatif_args_t, file) },
        { "--node-template", NULL, offsetof(whatif_args_t, node_template) },
        { "--snapshot", NULL, offsetof(whatif_args_t, snapshot) },
        { "--config", NULL, offsetof(whatif_args_t, config) },
        { "--member", NULL, offsetof(whatif_args_t, member) },
    };
    if (!strcmp(argv[*i], "--no-leader")) {
        a->no_leader = 1;
        return 1;
    }
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++) {
        if ((v = util_opt_value(argc, argv, i, strs[k].lng, strs[k].shrt, &missing)) || missing) {
            if (!v || !*v)
                return -1;
            *(const char **)((char *)a + strs[k].off) = v;
            return 1;
        }
    }
    if ((v = util_opt_value(argc, argv, i, "--add-nodes", NULL, &missing)) || missing) {
        char *end;
        if (!v || !*v)
            return -1;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 1000)
            return bad(p, "--add-nodes %s: a number of nodes from 1 to 1000", v);
        a->add_nodes = (int)n;
        return 1;
    }
    if ((v = util_opt_value(argc, argv, i, "--remove-node", NULL, &missing)) || missing) {
        if (!v || !*v)
            return -1;
        a->remove = util_xrealloc(a->remove, (size_t)(a->nremove + 1) * sizeof *a->remove);
        a->remove[a->nremove++] = v;
        return 1;
    }
    if ((v = util_opt_value(argc, argv, i, "--set-quota", NULL, &missing)) || missing) {
        char err[300];
        whatif_quota_t q;
        if (!v || !*v)
            return -1;
        if (whatif_parse_quota(v, &q, err, sizeof err) < 0)
            return bad(p, "%s", err);
        a->quotas = util_xrealloc(a->quotas, (size_t)(a->nquotas + 1) * sizeof *a->quotas);
        a->quotas[a->nquotas++] = q;
        return 1;
    }
    if ((v = util_opt_value(argc, argv, i, "--seed", NULL, &missing)) || missing) {
        char *end;
        if (!v || !*v)
            return -1;
        unsigned long long n = strtoull(v, &end, 10);
        if (*end || n == 0 || v[0] == '-')
            return bad(p, "--seed %s: a positive integer", v);
        a->seed = n;
        return 1;
    }
    if ((v = util_opt_value(argc, argv, i, "-v", NULL, &missing)) || missing) {
        char *end;
        if (!v || !*v)
            return -1;
        long n = strtol(v, &end, 10);
        if (*end || n < 0 || n > 10)
            return bad(p, "-v %s: a verbosity from 0 to 10", v);
        a->verbosity = (int)n;
        a->verbose = 1;
        return 1;
    }
    if ((v = util_opt_value(argc, argv, i, "--horizon", NULL, &missing)) || missing) {
        int64_t ms;
        if (!v || !*v)
            return -1;
        if (util_parse_duration_ms(v, &ms) != 0 || ms <= 0 || ms > 24LL * 3600 * 1000)
            return bad(p, "--horizon %s: a duration from 1ms to 24h (\"90s\", \"5m\")", v);
        a->horizon_ms = ms;
        return 1;
    }
    return 0;
}

int whatif_parse_args(whatif_args_t *a, cli_t *c, int argc, char **argv, FILE *out, FILE *errf)
{
    static const cli_cmd_t cmd = {
        .user_agent = "ai-scheduler-whatif",
        .flags = CLI_YAML | CLI_SERVER,
        .usage = usage_text,
        .arg = whatif_arg,
    };
    memset(a, 0, sizeof *a);
    a->horizon_ms = 120000;
    /* "-o text" is this command's word for the table format */
    char **av = util_xcalloc((size_t)argc + 1, sizeof *av);
    for (int i = 0; i < argc; i++)
        av[i] = (i > 0 && !strcmp(argv[i], "text") && (!strcmp(argv[i - 1], "-o") || !strcmp(argv[i - 1], "--output")))
                    ? "table"
                    : argv[i];
    parse_ctx_t p = { a, errf, 0 };
    int rc = cli_parse(c, &cmd, &p, argc, av, 0, out, errf);
    free(av);
    if (rc != CLI_CONTINUE)
        return rc;
    if (p.failed)
        return 2;
    if (!a->file) {
        fprintf(errf, "error: -f FILE is required (the pods that would be submitted)\n");
        return 2;
    }
    if ((a->add_nodes > 0) != (a->node_template != NULL)) {
        fprintf(errf, "error: --add-nodes and --node-template go together\n");
        return 2;
    }
    if (a->snapshot && c->server) {
        fprintf(errf, "error: --snapshot and --server: the state is one or the other\n");
        return 2;
    }
    return CLI_CONTINUE;
}

/* ------------------------------------------------------------ state */

static void note_add(void *ud, const char *msg)
{
    json_array_append_new(ud, json_string(msg));
}

/* The state's items (a new reference) and its word; NULL after an error line. */
static json_t *load_state(const whatif_args_t *a, const cli_t *c, json_t **config, const char **state, json_t *notes)
{
    char err[600] = "";
    if (a->snapshot) {
        json_t *doc = objfile_load_one(a->snapshot, err, sizeof err);
        if (doc && snapshot_check(doc, err, sizeof err) < 0) {
            json_decref(doc);
            doc = NULL;
            fprintf(c->errf, "error: %s: %s\n", a->snapshot, err);
            return NULL;
        }
        if (!doc) {
            fprintf(c->errf, "error: %s\n", err);
            return NULL;
        }
        json_t *cf = json_object_get(doc, "config");
        *config = json_is_object(cf) ? json_incref(cf) : NULL;
        json_t *items = json_incref(json_object_get(doc, "items"));
        json_decref(doc);
        *state = "snapshot";
        return items;
    }
    kube_client_t *kc = cli_client(c);
    if (!kc)
        return NULL;
    json_t *items = snapshot_list(kc, note_add, notes, err, sizeof err);
    if (!items)
        fprintf(c->errf, "error: %s: %s\n", kube_client_server(kc), err);
    kube_client_free(kc);
    if (!items)
        return NULL;
    *state = "list";
    if (!a->no_leader) {
        json_t *st = NULL;
        int n = debug_get(c, c->server, "/debug/state", &st, err, sizeof err) == 0
                    ? whatif_overlay(items, st, err, sizeof err)
                    : -1;
        json_decref(st);
        if (n >= 0) {
            *state = "leader";
        } else {
            sbuf_t m = { 0 };
            sbuf_printf(&m, "the leader's state was not read (%s): a LIST without its assumed pods and nominations",
                        err);
            note_add(notes, m.data);
            sbuf_free(&m);
        }
    }
    return items;
}

/* ------------------------------------------------------------ config */

static int load_config(sched_config_t *cfg, const char *path, json_t *from_snapshot, FILE *errf)
{
    char err[600] = "";
    config_default(cfg);
    int rc = 0;
    if (path) {
        rc = config_load_file(cfg, path, err, sizeof err);
    } else if (from_snapshot) {
        char *txt = json_dumps(from_snapshot, JSON_COMPACT); /* JSON is YAML */
        rc = txt ? config_load_string(cfg, txt, strlen(txt), "the snapshot's config", err, sizeof err) : -1;
        free(txt);
    }
    if (rc == 0)
        rc = config_validate(cfg, err, sizeof err);
    if (rc != 0)
        fprintf(errf, "error: %s\n", err[0] ? err : "bad config");
    return rc;
}

/* ------------------------------------------------------------ main */

static int apply_edits(const whatif_args_t *a, json_t *items, json_t *notes, FILE *errf)
{
    char err[600] = "";
    for (int i = 0; i < a->nremove; i++) {
        int req = 0, drop = 0;
        if (whatif_remove_node(items, a->remove[i], &req, &drop, err, sizeof err) < 0)
            goto fail;
        sbuf_t m = { 0 };
        sbuf_printf(&m, "node %s removed: %d of its pods come back pending (their controllers'), %d go with it",
                    a->remove[i], req, drop);
        note_add(notes, m.data);
        sbuf_free(&m);
    }
    if (a->add_nodes > 0) {
        json_t *tmpl = objfile_load_one(a->node_template, err, sizeof err);
        int rc = tmpl ? whatif_add_nodes(items, tmpl, a->add_nodes, err, sizeof err) : -1;
        json_decref(tmpl);
        if (rc < 0)
            goto fail;
    }
    for (int i = 0; i < a->nquotas; i++)
        if (whatif_set_quota(items, &a->quotas[i], err, sizeof err) < 0)
            goto fail;
    return 0;
fail:
    fprintf(errf, "error: %s\n", err);
    return -1;
}

int whatif_main(int argc, char **argv, FILE *out, FILE *errf)
{
    whatif_args_t a;
    cli_t c;
    int rc = whatif_parse_args(&a, &c, argc, argv, out, errf);
    if (rc != CLI_CONTINUE) {
        whatif_args_free(&a);
        return rc;
    }
    char err[600] = "";
    json_t *notes = json_array(), *config = NULL, *items = NULL, *objs = NULL, *subs = NULL, *ans = NULL;
    const char *state = NULL, **names = NULL;
    fw_config_t *fw = NULL;
    sched_config_t cfg;
    int have_cfg = 0;
    rc = 1;
    if (!(objs = objfile_load(a.file, err, sizeof err))) {
        fprintf(errf, "error: %s\n", err);
        goto out;
    }
    if (!(items = load_state(&a, &c, &config, &state, notes)))
        goto out;
    have_cfg = 1;
    if (load_config(&cfg, a.config, config, errf) != 0)
        goto out;
    if (apply_edits(&a, items, notes, errf) < 0)
        goto out;
    scheduler_opts_t so;
    config_scheduler_opts(&cfg, "whatif", &so, &names, &fw);
    if (!(subs = whatif_submissions(objs, items, a.member, so.scheduler_name, util_wall_ms(), err, sizeof err))) {
        fprintf(errf, "error: %s: %s\n", a.file, err);
        goto out;
    }
    /* The copy's info lines (pools created, pods unschedulable) describe the
     * copy, not the cluster: shown only when asked for with -v. */
    if (a.verbose)
        log_set_verbosity(a.verbosity);
    else
        log_set_quiet(1);
    /* the live scheduler's ties break alike when it runs with the same seed */
    whatif_run_opts_t ro = { .sched = &so,
                             .horizon_ms = a.horizon_ms,
                             .seed = a.seed    ? a.seed
                                     : so.seed ? so.seed
                                               : 1 };
    if (!(ans = whatif_run(items, subs, &ro, state, notes, err, sizeof err))) {
        fprintf(errf, "error: %s\n", err);
        goto out;
    }
    rc = (c.fmt == CLI_OUT_TABLE ? whatif_print_text(out, ans) : cli_emit(out, c.fmt, ans)) < 0 ? 1 : 0;
    if (rc)
        fprintf(errf, "error: writing the answer failed\n");
out:
    if (have_cfg)
        config_free(&cfg);
    free(names);
    free(fw);
    json_decref(ans);
    json_decref(subs);
    json_decref(objs);
    json_decref(items);
    json_decref(config);
    json_decref(notes);
    whatif_args_free(&a);
    return rc;
}
