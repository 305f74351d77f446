/* snapshot.c -- `ai-scheduler snapshot -o FILE [--anonymize] [--config FILE]`. */
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "snapshot/objfile.h"
#include "snapshot/snapshot.h"
#include "util/util.h"
#include "cli.h"

static void usage_text(FILE *f)
{
    fputs("Usage: ai-scheduler snapshot -o FILE [--anonymize] [--config FILE] [--kubeconfig FILE]\n"
          "Writes what the scheduler reads (nodes, pods, Pools, Queues, PodGroups, PDBs,\n"
          "PriorityClasses, PVs, PVCs, StorageClasses, CSINodes, Services, ReplicaSets,\n"
          "ReplicationControllers, StatefulSets) to one JSON file that `whatif --snapshot`\n"
          "and `simulate --snapshot` read. Never a Secret; container env values, commands,\n"
          "args and managedFields are left out. A kind the cluster does not serve is skipped.\n"
          "  -o, --output FILE      where to write (\"-\": standard output)\n"
          "  --anonymize            replace names, namespaces, node names, label values and\n"
          "                         identity annotations by consistent pseudonyms\n"
          "  --config FILE          the scheduler's config file, carried in the snapshot\n"
          "  --kubeconfig FILE      default: $KUBECONFIG, ~/.kube/config, in-cluster\n"
          "  -h, --help             this text\n",
          f);
}

typedef struct snap_args {
    int anonymize;
    const char *config;
} snap_args_t;

static int snap_arg(void *ctx, int argc, char **argv, int *i)
{
    snap_args_t *a = ctx;
    const char *v;
    int missing;
    if (!strcmp(argv[*i], "--anonymize")) {
        a->anonymize = 1;
        return 1;
    }
    if ((v = util_opt_value(argc, argv, i, "--config", NULL, &missing)) || missing) {
        if (!v || !*v)
            return -1;
        a->config = v;
        return 1;
    }
    return 0;
}

json_t *snapshot_config_json(const char *path, FILE *errf)
{
    sched_config_t cfg;
    char err[512] = "";
    config_default(&cfg);
    int rc = config_load_file(&cfg, path, err, sizeof err);
    if (rc == 0)
        rc = config_validate(&cfg, err, sizeof err);
    config_free(&cfg);
    if (rc != 0) {
        fprintf(errf, "error: %s\n", err);
        return NULL;
    }
    json_t *j = objfile_load_one(path, err, sizeof err);
    if (j && !json_is_object(j)) {
        snprintf(err, sizeof err, "%s: not a map", path);
        json_decref(j);
        j = NULL;
    }
    if (!j)
        fprintf(errf, "error: %s\n", err);
    return j;
}

int snapshot_write(const char *path, json_t *doc, FILE *out, FILE *errf)
{
    size_t flags = JSON_INDENT(1) | JSON_SORT_KEYS;
    if (!strcmp(path, "-")) {
        int rc = json_dumpf(doc, out, flags);
        fputc('\n', out);
        if (rc != 0 || fflush(out) != 0 || ferror(out)) {
            fprintf(errf, "error: writing the snapshot failed\n");
            return -1;
        }
        return 0;
    }
    sbuf_t tmp = { 0 };
    sbuf_printf(&tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fprintf(errf, "error: %s: %s\n", tmp.data, strerror(errno));
        if (fd >= 0)
            close(fd);
        sbuf_free(&tmp);
        return -1;
    }
    int rc = json_dumpf(doc, f, flags);
    fputc('\n', f);
    if (fflush(f) != 0 || ferror(f) || fsync(fd) != 0)
        rc = -1;
    if (fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp.data, path) != 0)
        rc = -1;
    if (rc != 0) {
        fprintf(errf, "error: writing %s failed: %s\n", path, strerror(errno));
        unlink(tmp.data);
    }
    sbuf_free(&tmp);
    return rc == 0 ? 0 : -1;
}

static void note_to(void *ud, const char *msg)
{
    fprintf((FILE *)ud, "note: %s\n", msg);
}

int snapshot_main(int argc, char **argv, FILE *out, FILE *errf)
{
    static const cli_cmd_t cmd = {
        .user_agent = "ai-scheduler-snapshot",
        .flags = 0,
        .usage = usage_text,
        .arg = snap_arg,
    };
    /* -o names the file here, not a format: taken out before the common flags */
    const char *file = NULL;
    char **rest = util_xcalloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0;
    for (int i = 0; i < argc; i++) {
        const char *v;
        int missing;
        if ((v = util_opt_value(argc, argv, &i, "--output", "-o", &missing)) || missing) {
            if (!v || !*v) {
                fprintf(errf, "error: -o needs a file name\n");
                free(rest);
                return 2;
            }
            file = v;
        } else {
            rest[nrest++] = argv[i];
        }
    }
    snap_args_t a = { 0, NULL };
    cli_t c;
    int rc = cli_parse(&c, &cmd, &a, nrest, rest, 0, out, errf);
    free(rest);
    if (rc != CLI_CONTINUE)
        return rc;
    if (!file) {
        fprintf(errf, "error: -o FILE is required\n");
        usage_text(errf);
        return 2;
    }
    json_t *config = NULL;
    if (a.config && !(config = snapshot_config_json(a.config, errf)))
        return 1;
    kube_client_t *kc = cli_client(&c);
    if (!kc) {
        json_decref(config);
        return 1;
    }
    char err[600] = "";
    json_t *items = snapshot_list(kc, note_to, errf, err, sizeof err);
    if (!items) {
        fprintf(errf, "error: %s: %s\n", kube_client_server(kc), err);
        kube_client_free(kc);
        json_decref(config);
        return 1;
    }
    kube_client_free(kc);
    size_t nodes = 0, pods = 0, i;
    json_t *o;
    json_array_foreach (items, i, o) {
        const char *k = json_string_value(json_object_get(o, "kind"));
        nodes += k && !strcmp(k, "Node");
        pods += k && !strcmp(k, "Pod");
    }
    size_t n = json_array_size(items);
    json_t *doc = snapshot_doc(items, config, util_wall_ms());
    int renamed = a.anonymize ? snapshot_anonymize(doc) : 0;
    rc = snapshot_write(file, doc, out, errf) == 0 ? 0 : 1;
    json_decref(doc);
    if (rc == 0 && strcmp(file, "-")) {
        fprintf(errf, "snapshot: %zu objects (%zu nodes, %zu pods) written to %s", n, nodes, pods, file);
        if (a.anonymize)
            fprintf(errf, ", %d names replaced", renamed);
        fputc('\n', errf);
    }
    return rc;
}
