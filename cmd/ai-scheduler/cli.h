/* cli.h -- what the table commands (`pools`, `queues`, `mcjob get`) share:
 * the common flags, the API client, and table, JSON and YAML output. */
#ifndef AISCHED_CMD_CLI_H
#define AISCHED_CMD_CLI_H

#include <stdio.h>
#include <jansson.h>

#include "kube/client.h"

typedef enum { CLI_OUT_TABLE, CLI_OUT_JSON, CLI_OUT_YAML } cli_out_t;

/* What a command takes besides --kubeconfig, -o/--output and -h/--help. */
enum {
    CLI_YAML = 1 << 0,      /* -o yaml */
    CLI_NAMESPACE = 1 << 1, /* -n/--namespace NS (default "default"), -A/--all-namespaces */
    /* `-o ""` is an unknown format rather than a missing value (as `pools` always said) */
    CLI_EMPTY_OUTPUT = 1 << 2,
    /* How to reach the scheduler (debugclient.h): --server URL, else the
     * leader of --lease-namespace/--lease-name through the API server's pod
     * proxy on --scheduler-port */
    CLI_SERVER = 1 << 3,
};

/* argv[*i] is not a common flag: 1 taken (*i moved past a separate value),
 * 0 not known, -1 known but without its value. */
typedef int (*cli_arg_fn)(void *ctx, int argc, char **argv, int *i);

typedef struct cli_cmd {
    const char *user_agent;
    unsigned flags; /* CLI_* */
    void (*usage)(FILE *f);
    cli_arg_fn arg; /* may be NULL */
} cli_cmd_t;

typedef struct cli {
    const cli_cmd_t *cmd;
    FILE *out, *errf;
    const char *kubeconfig; /* NULL: $KUBECONFIG, ~/.kube/config, in-cluster */
    const char *ns;         /* with CLI_NAMESPACE; NULL after -A */
    cli_out_t fmt;
    /* with CLI_SERVER (defaults: NULL, "kube-system", "ai-scheduler", 10261) */
    const char *server;
    const char *lease_ns, *lease_name;
    int sched_port;
    /* with --server https://...: --certificate-authority FILE checks the
     * scheduler's certificate against FILE (default: the system's CAs);
     * --insecure-skip-tls-verify does not check it */
    const char *server_ca;
    int server_insecure;
} cli_t;

#define CLI_CONTINUE (-1)

/* Parses argv[first..] into c: the common flags here, the others through
 * cmd->arg (ctx passed on). Returns CLI_CONTINUE, or the exit code: 0 after
 * the usage on -h, 2 after one error line on errf. */
int cli_parse(cli_t *c, const cli_cmd_t *cmd, void *ctx, int argc, char **argv, int first, FILE *out, FILE *errf);

/* A client of c->kubeconfig, or NULL after one error line on c->errf. */
kube_client_t *cli_client(const cli_t *c);

/* A table: cols cells a row, row-major, printed after the header (cols
 * strings). Columns before first are not shown. Cells are left-aligned and
 * gap blanks apart; a row's trailing empty cells and blanks are left off.
 * Widths count UTF-8 code points, or bytes with bytes set. */
typedef struct cli_table {
    const char *const *header;
    char **cells; /* rows * cols, NULL counts as "" */
    int rows, cols, first, gap, bytes;
} cli_table_t;

/* Returns 0, or -1 if writing failed. */
int cli_table_print(FILE *out, const cli_table_t *t);

/* Frees n cells and the array. */
void cli_cells_free(char **cells, size_t n);

/* doc as -o json (two-space indent and a newline) or -o yaml (one
 * document, strings quoted only where plain would read back as another
 * type). Returns 0, or -1 if writing failed. */
int cli_emit(FILE *out, cli_out_t fmt, json_t *doc);

#endif
