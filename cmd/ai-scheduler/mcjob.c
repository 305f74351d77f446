/* mcjob.c -- `ai-scheduler mcjob get`: GETs or LISTs MultiClusterJobs and
 * prints them as a table or JSON. */
#include "mcjob.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dispatch/controller.h"
#include "dispatch/table.h"
#include "util/util.h"

void mcjob_print(FILE *out, json_t *items, int all_ns, int64_t now_ms)
{
    static const char *const hdr[DSP_TABLE_COLS] = { "NAMESPACE", "NAME", "PHASE", "WINNER", "WAITED", "CLUSTERS" };
    /* three blanks apart, widths in bytes; NAMESPACE only with -A */
    cli_table_t t = { .header = hdr, .cols = DSP_TABLE_COLS, .first = all_ns ? 0 : 1, .gap = 3, .bytes = 1 };
    t.rows = (int)json_array_size(items);
    t.cells = dsp_table_cells(items, now_ms);
    cli_table_print(out, &t);
    cli_cells_free(t.cells, (size_t)t.rows * DSP_TABLE_COLS);
}

static int fetch(const cli_t *c, const char *name)
{
    kube_client_t *kc = cli_client(c);
    char err[512] = "";
    if (!kc)
        return 1;
    sbuf_t p = { 0 };
    sbuf_printf(&p, "/apis/%s/%s", DSP_GROUP, DSP_VERSION);
    if (c->ns) {
        char *ens = util_urlencode(c->ns);
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
        fprintf(c->errf, "error: %s%s\n", err,
                status == 404 && !name ? " (is pools/multiclusterjob-crd.yaml applied?)" : "");
        json_decref(items);
        return 1;
    }
    /* as before the move: a failed write does not change the exit code */
    if (c->fmt == CLI_OUT_JSON)
        (void)cli_emit(c->out, CLI_OUT_JSON, items);
    else if (json_array_size(items) == 0)
        fprintf(c->out, "No MultiClusterJobs found.\n");
    else
        mcjob_print(c->out, items, c->ns == NULL, util_wall_ms());
    json_decref(items);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ai-scheduler mcjob get [NAME] [-n NAMESPACE | -A] [--kubeconfig FILE] [-o table|json]\n"
               "Lists MultiClusterJobs: phase, winner, how long each waited, and each cluster's (priority)=state.\n");
}

/* NAME, once. */
static int mcjob_arg(void *ctx, int argc, char **argv, int *i)
{
    const char **name = ctx;
    if (argv[*i][0] == '-' || *name)
        return 0;
    *name = argv[*i];
    return 1;
}

int mcjob_main(int argc, char **argv, FILE *out, FILE *errf)
{
    static const cli_cmd_t cmd = {
        .user_agent = "ai-scheduler/mcjob",
        .flags = CLI_NAMESPACE,
        .usage = usage,
        .arg = mcjob_arg,
    };
    if (argc < 1 || strcmp(argv[0], "get") != 0) {
        if (argc >= 1 && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
            usage(out);
            return 0;
        }
        usage(errf);
        return 2;
    }
    const char *name = NULL;
    cli_t c;
    int rc = cli_parse(&c, &cmd, &name, argc, argv, 1, out, errf);
    if (rc != CLI_CONTINUE)
        return rc;
    if (name && !c.ns) {
        fprintf(errf, "error: a NAME needs one namespace (-n), not -A\n");
        return 2;
    }
    return fetch(&c, name);
}
