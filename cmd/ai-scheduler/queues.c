/* queues.c -- `ai-scheduler queues` / `kubectl queue`: LISTs the Queues and
 * prints their tree with quota, limit, weight and the scheduler's status. */
#include "queues.h"

#include <stdlib.h>
#include <string.h>

#include "fairshare/table.h"
#include "util/util.h"

#define QUEUES_PATH "/apis/resource.aibee.cn/v1alpha1/queues"

static void usage_text(FILE *f)
{
    fputs("Usage: ai-scheduler queues [--kubeconfig FILE] [-o table|json|yaml] [--pool NAME]\n"
          "       kubectl queue [same flags]\n"
          "Prints the Queue tree: each queue's priority, GPU quota, limit and\n"
          "over-quota weight, and from the status the scheduler writes: allocated,\n"
          "fair share (GPU; CPU in cores), memory allocated, pending pods and state.\n"
          "\"default\" is the implicit queue of pods without a queue label (no status).\n"
          "  --kubeconfig FILE      default: $KUBECONFIG, ~/.kube/config, in-cluster\n"
          "  -o, --output FORMAT    table (default), json or yaml (the API's units)\n"
          "  --pool NAME            that pool's numbers instead of the sums over pools\n"
          "  -h, --help             this text\n",
          f);
}

int queues_render(FILE *out, FILE *errf, cli_out_t fmt, json_t *queues, const char *pool)
{
    static const char *const hdr[QUEUE_TABLE_COLS] = { "QUEUE",
                                                       "PRIORITY",
                                                       "GPU QUOTA",
                                                       "GPU LIMIT",
                                                       "GPU WEIGHT",
                                                       "GPU ALLOCATED",
                                                       "GPU FAIRSHARE",
                                                       "CPU ALLOCATED/FAIRSHARE",
                                                       "MEMORY ALLOCATED",
                                                       "PENDING",
                                                       "STATE" };
    queue_table_t *qt = queue_table_load(errf, queues, pool);
    int rc = 0;
    if (fmt == CLI_OUT_TABLE) {
        /* as kubectl: three blanks apart; widths in bytes */
        cli_table_t t = { .header = hdr, .cols = QUEUE_TABLE_COLS, .gap = 3, .bytes = 1 };
        t.cells = queue_table_cells(qt, &t.rows);
        cli_table_print(out, &t);
        cli_cells_free(t.cells, (size_t)t.rows * QUEUE_TABLE_COLS);
        char *notes = queue_table_notes(qt);
        if (notes)
            fprintf(out, "\n%s", notes);
        free(notes);
    } else {
        json_t *doc = queue_table_doc(qt);
        rc = cli_emit(out, fmt, doc);
        json_decref(doc);
    }
    queue_table_free(qt);
    return rc < 0 || ferror(out) ? -1 : 0;
}

static int fetch_and_render(const cli_t *c, const char *pool)
{
    kube_client_t *kc;
    char err[512] = "";
    long status = 0;
    int rc = 1;
    json_t *queues = json_array();

    if (!(kc = cli_client(c)))
        goto out;
    if (kube_list_array(kc, QUEUES_PATH, queues, &status, err, sizeof(err)) < 0) {
        if (status != 404) {
            fprintf(c->errf, "error: %s: %s\n", kube_client_server(kc), err[0] ? err : "list queues failed");
            goto out_client;
        }
        /* No Queue CRD: every pod is in the implicit default queue. */
        json_array_clear(queues);
    }
    rc = queues_render(c->out, c->errf, c->fmt, queues, pool) < 0 ? 1 : 0;
    if (rc)
        fprintf(c->errf, "error: writing output failed\n");
out_client:
    kube_client_free(kc);
out:
    json_decref(queues);
    return rc;
}

/* --pool NAME. */
static int queues_arg(void *ctx, int argc, char **argv, int *i)
{
    const char **pool = ctx, *v;
    int missing;
    if (!(v = util_opt_value(argc, argv, i, "--pool", NULL, &missing)) && !missing)
        return 0;
    if (!v || !*v)
        return -1;
    *pool = v;
    return 1;
}

int queues_main(int argc, char **argv, FILE *out, FILE *errf)
{
    static const cli_cmd_t cmd = {
        .user_agent = "ai-scheduler-queues",
        .flags = CLI_YAML,
        .usage = usage_text,
        .arg = queues_arg,
    };
    const char *pool = NULL;
    cli_t c;
    int rc = cli_parse(&c, &cmd, &pool, argc, argv, 0, out, errf);
    return rc != CLI_CONTINUE ? rc : fetch_and_render(&c, pool);
}
