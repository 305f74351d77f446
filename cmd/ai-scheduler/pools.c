/* pools.c -- `ai-scheduler pools` / `kubectl pool`: LISTs nodes, pods and
 * pools and prints each pool's capacity, allocatable, used, shared and
 * pending resources as a table, JSON or YAML. */
#include "pools.h"

#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "pool/table.h"
#include "util/util.h"

#define POOLS_PATH "/apis/resource.aibee.cn/v1alpha1/pools"

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

int pools_print(FILE *out, cli_out_t fmt, const pool_spec_t *specs, int n, const pool_spec_t *dflt,
                const pool_usage_t *usage)
{
    static const char *const hdr[POOL_TABLE_COLS] = { "Pools",       "p b s", "Resource", "Capacity",
                                                      "Allocatable", "Used",  "Shared",   "Pending" };
    int rc;
    if (fmt == CLI_OUT_TABLE) {
        cli_table_t t = { .header = hdr, .cols = POOL_TABLE_COLS, .gap = 2 };
        t.cells = pool_table_cells(specs, n, dflt, usage, &t.rows);
        rc = cli_table_print(out, &t);
        cli_cells_free(t.cells, (size_t)t.rows * POOL_TABLE_COLS);
        return rc;
    }
    json_t *doc = pool_table_doc(specs, n, dflt, usage);
    rc = cli_emit(out, fmt, doc);
    json_decref(doc);
    return rc;
}

int pools_render(FILE *out, FILE *errf, cli_out_t fmt, json_t *nodes, json_t *pods, json_t *pools,
                 const char *scheduler_name)
{
    pool_table_t t;
    pool_table_load(&t, errf, nodes, pods, pools, scheduler_name);
    int rc = pools_print(out, fmt, t.specs, t.n, &t.dflt, t.usage);
    pool_table_free(&t);
    return rc;
}

static int fetch_and_render(const cli_t *c, const char *sched)
{
    kube_client_t *kc;
    char err[512] = "";
    long status = 0;
    int rc = 1;
    json_t *nodes = json_array(), *pods = json_array(), *pools = json_array();

    if (!(kc = cli_client(c)))
        goto out;
    if (kube_list_array(kc, "/api/v1/nodes", nodes, &status, err, sizeof(err)) < 0 ||
        kube_list_array(kc, "/api/v1/pods", pods, &status, err, sizeof(err)) < 0) {
        fprintf(c->errf, "error: %s: %s\n", kube_client_server(kc), err[0] ? err : "list failed");
        goto out_client;
    }
    /* No CRD installed: there are no pools, everything is default. */
    if (kube_list_array(kc, POOLS_PATH, pools, &status, err, sizeof(err)) < 0) {
        if (status != 404) {
            fprintf(c->errf, "error: %s: %s\n", kube_client_server(kc), err[0] ? err : "list pools failed");
            goto out_client;
        }
        json_array_clear(pools);
    }
    rc = pools_render(c->out, c->errf, c->fmt, nodes, pods, pools, sched) < 0 ? 1 : 0;
    if (rc)
        fprintf(c->errf, "error: writing output failed\n");
out_client:
    kube_client_free(kc);
out:
    json_decref(nodes);
    json_decref(pods);
    json_decref(pools);
    return rc;
}

/* --scheduler-name and --gpu-reservation-namespace. */
static int pools_arg(void *ctx, int argc, char **argv, int *i)
{
    const char **sched = ctx, *v;
    int missing;
    if ((v = util_opt_value(argc, argv, i, "--scheduler-name", NULL, &missing)) || missing) {
        if (!v || !*v)
            return -1;
        *sched = v;
        return 1;
    }
    if ((v = util_opt_value(argc, argv, i, "--gpu-reservation-namespace", NULL, &missing)) || missing) {
        if (!v || !*v)
            return -1;
        gpu_set_reservation_namespace(v); /* before the pods are parsed */
        return 1;
    }
    return 0;
}

int pools_main(int argc, char **argv, FILE *out, FILE *errf)
{
    static const cli_cmd_t cmd = {
        .user_agent = "ai-scheduler-pools",
        .flags = CLI_YAML | CLI_EMPTY_OUTPUT,
        .usage = usage_text,
        .arg = pools_arg,
    };
    const char *sched = "ai-scheduler";
    cli_t c;
    int rc = cli_parse(&c, &cmd, &sched, argc, argv, 0, out, errf);
    return rc != CLI_CONTINUE ? rc : fetch_and_render(&c, sched);
}
