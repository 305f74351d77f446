/* simulate.c -- `ai-scheduler simulate --snapshot FILE --workload FILE`:
 * loads the snapshot into a sandbox with the snapshot's (or --config's)
 * configuration, runs the workload in virtual time and writes jobs.csv,
 * events.csv, result.json and report.html into -o DIR, a summary on stdout. */
#include "simulate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "sandbox/sandbox.h"
#include "simulate/simulate.h"
#include "simulate/workload.h"
#include "util/log.h"
#include "util/util.h"

#define SNAPSHOT_KIND   "ClusterSnapshot"
#define SNAPSHOT_MAX    (2048u << 20)
#define DEFAULT_OUT_DIR "simulation"
#define DEFAULT_START   "2026-01-01T00:00:00Z"

typedef struct sim_args {
    const char *snapshot, *workload, *config, *out_dir, *log_file;
    uint64_t seed;
    int64_t until_ms, idle_ms;
    int verbosity;
} sim_args_t;

static void usage(FILE *f)
{
    fputs("Usage: ai-scheduler simulate --snapshot FILE --workload FILE [flags]\n"
          "\n"
          "Runs the workload's jobs through the scheduler's own code on a copy of the snapshot's\n"
          "cluster, in virtual time, with no API server; writes jobs.csv, events.csv, result.json\n"
          "and report.html into the output directory and a summary on stdout.\n"
          "\n"
          "  --snapshot FILE    a ClusterSnapshot (ai-scheduler snapshot -o FILE)\n"
          "  --workload FILE    the jobs (YAML or JSON; docs/operations.md, \"Simulate\")\n"
          "  --config FILE      the scheduler's configuration (default: the snapshot's)\n"
          "  --seed N           every random tie-break's seed (default 1)\n"
          "  --until DURATION   stop this long after the start (default: when every job finished,\n"
          "                     or nothing can start any more)\n"
          "  --idle DURATION    with nothing running and nothing to arrive, stop after this long\n"
          "                     without a placement (default 10m)\n"
          "  -o, --output DIR   where the files go (default ./" DEFAULT_OUT_DIR ")\n"
          "  --log FILE         the scheduler's log lines (default: discarded)\n"
          "  -v N               log verbosity (as the scheduler's -v)\n"
          "  -h, --help\n",
          f);
}

static int parse_ms(const char *s, int64_t *ms)
{
    return util_parse_duration_ms(s, ms) < 0 || *ms <= 0 ? -1 : 0;
}

/* 0 parsed, 1 help printed, 2 bad usage (said on errf). */
static int parse_args(sim_args_t *a, int argc, char **argv, FILE *out, FILE *errf)
{
    memset(a, 0, sizeof(*a));
    a->seed = 1;
    a->out_dir = DEFAULT_OUT_DIR;
    for (int i = 0; i < argc; i++) {
        int missing = 0;
        const char *v;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(out);
            return 1;
        }
        if ((v = util_opt_value(argc, argv, &i, "--snapshot", NULL, &missing)))
            a->snapshot = v;
        else if ((v = util_opt_value(argc, argv, &i, "--workload", NULL, &missing)))
            a->workload = v;
        else if ((v = util_opt_value(argc, argv, &i, "--config", NULL, &missing)))
            a->config = v;
        else if ((v = util_opt_value(argc, argv, &i, "--output", "-o", &missing)))
            a->out_dir = v;
        else if ((v = util_opt_value(argc, argv, &i, "--log", NULL, &missing)))
            a->log_file = v;
        else if ((v = util_opt_value(argc, argv, &i, "--seed", NULL, &missing))) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(v, &end, 10);
            if (errno || *end || !*v || *v == '-') {
                fprintf(errf, "ai-scheduler simulate: --seed: want a whole number, not \"%s\"\n", v);
                return 2;
            }
            a->seed = n;
        } else if ((v = util_opt_value(argc, argv, &i, "--until", NULL, &missing))) {
            if (parse_ms(v, &a->until_ms) < 0) {
                fprintf(errf, "ai-scheduler simulate: --until: want a positive duration (\"2h\"), not \"%s\"\n", v);
                return 2;
            }
        } else if ((v = util_opt_value(argc, argv, &i, "--idle", NULL, &missing))) {
            if (parse_ms(v, &a->idle_ms) < 0) {
                fprintf(errf, "ai-scheduler simulate: --idle: want a positive duration (\"10m\"), not \"%s\"\n", v);
                return 2;
            }
        } else if ((v = util_opt_value(argc, argv, &i, "--v", "-v", &missing))) {
            a->verbosity = atoi(v);
        } else {
            fprintf(errf, "ai-scheduler simulate: %s: %s (see --help)\n", argv[i],
                    missing ? "needs a value" : "unknown flag");
            return 2;
        }
        if (missing) {
            fprintf(errf, "ai-scheduler simulate: %s: needs a value\n", argv[i]);
            return 2;
        }
    }
    if (!a->snapshot || !a->workload) {
        fprintf(errf, "ai-scheduler simulate: --snapshot and --workload are required (see --help)\n");
        return 2;
    }
    return 0;
}

static json_t *load_snapshot(const char *path, char *err, size_t errlen)
{
    size_t len;
    char *buf = sim_read_file(path, SNAPSHOT_MAX, &len, err, errlen);
    if (!buf)
        return NULL;
    char e[400];
    json_t *doc = sim_yaml_load(buf, len, e, sizeof e);
    free(buf);
    if (!doc) {
        util_errf(err, errlen, "%s: %s", path, e);
        return NULL;
    }
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!json_is_object(doc) || (kind && strcmp(kind, SNAPSHOT_KIND)) ||
        !json_is_array(json_object_get(doc, "items"))) {
        util_errf(err, errlen, "%s: not a %s (an object with kind %s and items)", path, SNAPSHOT_KIND, SNAPSHOT_KIND);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* --config FILE, else the snapshot's "config" (the file's content as JSON,
 * which is YAML too), else the defaults. */
static int load_config(sched_config_t *cfg, const char *file, json_t *snapshot, char *err, size_t errlen)
{
    config_default(cfg);
    json_t *c = json_object_get(snapshot, "config");
    if (file) {
        if (config_load_file(cfg, file, err, errlen) < 0)
            return -1;
    } else if (json_is_object(c)) {
        char *text = json_dumps(c, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        int rc = config_load_string(cfg, text, strlen(text), "snapshot config", err, errlen);
        free(text);
        if (rc < 0)
            return -1;
    } else if (c && !json_is_null(c)) {
        return util_errf(err, errlen, "snapshot: config is neither an object nor null");
    }
    return config_validate(cfg, err, errlen);
}

/* The sandbox reports actions before the simulator exists (loading the
 * snapshot); those are not the workload's. */
static void on_action(void *ud, const sb_action_t *a)
{
    sim_t **s = ud;
    if (*s)
        sim_on_action(*s, a);
}

/* The scheduler's log lines go to --log FILE or nowhere; our own messages
 * keep the caller's stderr (errf). */
static int redirect_log(const char *file, FILE *errf)
{
    int fd = open(file ? file : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(errf, "ai-scheduler simulate: --log %s: %s\n", file, strerror(errno));
        return -1;
    }
    fflush(stderr);
    dup2(fd, STDERR_FILENO);
    close(fd);
    return 0;
}

static int64_t start_of(const sim_workload_t *w, json_t *snapshot)
{
    if (w->start_wall_ms > 0)
        return w->start_wall_ms;
    const char *t = json_string_value(json_object_get(snapshot, "takenAt"));
    int64_t ms = t ? util_parse_rfc3339(t) : -1;
    return ms > 0 ? ms : util_parse_rfc3339(DEFAULT_START);
}

static int run(const sim_args_t *a, FILE *out, FILE *errf)
{
    char err[1024];
    int rc = 2;
    sched_config_t cfg;
    sim_workload_t w = { 0 };
    scheduler_opts_t so;
    const char **names = NULL;
    fw_config_t *fw = NULL;
    sandbox_t *sb = NULL;
    sim_t *s = NULL;
    json_t *snap = load_snapshot(a->snapshot, err, sizeof err);
    config_default(&cfg);
    if (!snap)
        goto fail;
    config_free(&cfg);
    if (load_config(&cfg, a->config, snap, err, sizeof err) < 0)
        goto fail;
    config_scheduler_opts(&cfg, "simulate", &so, &names, &fw);
    so.no_decision_records = 1; /* explain's records: a sixth of a run's CPU, and nothing reads them here */
    if (sim_workload_load_file(&w, a->workload, so.scheduler_name, err, sizeof err) < 0)
        goto fail;
    int64_t start = start_of(&w, snap);
    for (int i = 0; i < w.njobs; i++)
        if (w.jobs[i].arrival_abs && w.jobs[i].arrival < start) {
            util_errf(err, sizeof err,
                      "%s: job %s/%s arrives before the simulation starts (the workload's start, else "
                      "the snapshot's takenAt)",
                      a->workload, w.jobs[i].ns, w.jobs[i].name);
            goto fail;
        }
    if (redirect_log(a->log_file, errf) < 0)
        goto fail_quiet;
    log_set_verbosity(a->verbosity);
    sandbox_opts_t sbo = { .sched = &so, .seed = a->seed, .start_wall_ms = start, .on_action = on_action, .ud = &s };
    sb = sandbox_new(&sbo, err, sizeof err);
    if (!sb || sandbox_load(sb, snap, err, sizeof err) < 0)
        goto fail;
    sim_backend_t b;
    sim_backend_sandbox(&b, sb);
    sim_opts_t o = { .start_wall_ms = start, .until_ms = a->until_ms, .idle_ms = a->idle_ms, .seed = a->seed };
    s = sim_new(&o, &w, &b);
    if (sim_load(s, snap, err, sizeof err) < 0)
        goto fail;
    rc = 1;
    if (sim_run(s, err, sizeof err) < 0 || sim_write_dir(s, a->out_dir, err, sizeof err) < 0)
        goto fail;
    sim_write_summary(s, out);
    fprintf(out, "seed %llu; files in %s: jobs.csv, events.csv, result.json, report.html\n",
            (unsigned long long)a->seed, a->out_dir);
    rc = 0;
    goto done;
fail:
    fprintf(errf, "ai-scheduler simulate: %s\n", err);
fail_quiet:
done:
    sim_free(s);
    if (sb)
        sandbox_free(sb);
    sim_workload_free(&w);
    json_decref(snap);
    free(names);
    free(fw);
    config_free(&cfg);
    return rc;
}

int simulate_main(int argc, char **argv, FILE *out, FILE *errf)
{
    sim_args_t a;
    int rc = parse_args(&a, argc, argv, out, errf);
    if (rc)
        return rc == 1 ? 0 : rc;
    /* errf may be stderr, which the scheduler's log takes over: keep a copy. */
    FILE *ef = errf;
    int fd = -1;
    if (errf == stderr && (fd = dup(STDERR_FILENO)) >= 0)
        ef = fdopen(fd, "w");
    if (!ef)
        ef = errf;
    rc = run(&a, out, ef);
    if (ef != errf)
        fclose(ef);
    return rc;
}
