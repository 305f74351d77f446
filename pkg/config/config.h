/* config.h -- everything configurable about the scheduler: defaults, the
 * AiSchedulerConfiguration YAML file (or a kube-scheduler
 * KubeSchedulerConfiguration v1 or v1beta1 file, kubesched.c) and the
 * command-line flags.
 *
 * Order of precedence: defaults < --config FILE < other flags (whatever
 * their position relative to --config).
 *
 *   sched_config_t c;
 *   config_default(&c);
 *   int rc = config_parse_args(&c, argc, argv, err, sizeof err);
 *   ... CONFIG_HELP: usage went to stdout, exit 0; -1: err says why ...
 *   config_free(&c);
 *
 * Ownership: every string in sched_config_t is heap-owned by the struct and
 * released by config_free(); setters replace (and free) the old string.
 * That includes the const char * knobs of c->sched (scheduler_name,
 * gpu_namespace, gpu_image, topology_levels): scheduler_opts_t only borrows
 * them, so they live as long as the config. config.c knows them as the
 * string rows of its flag table that point into c->sched. */
#ifndef AISCHED_CONFIG_H
#define AISCHED_CONFIG_H

#include <stddef.h>
#include <stdio.h>
#include "framework/framework.h"
#include "scheduler/scheduler.h"

#define CONFIG_API_VERSION "ai-scheduler.aibee.cn/v1alpha1"
#define CONFIG_KIND        "AiSchedulerConfiguration"

/* config_parse_args() result when -h/--help printed the usage. */
#define CONFIG_HELP 1

typedef struct sched_leader_config {
    int enabled;           /* --leader-elect, default 1 */
    char *lease_name;      /* "ai-scheduler" */
    char *lease_namespace; /* "kube-system" */
    int lease_duration_s;  /* 15 */
    int renew_deadline_s;  /* 10 */
    int retry_period_s;    /* 2 */
    char *identity;        /* "<hostname>_<pid>" */
} sched_leader_config_t;

/* One entry of `profiles:` (KubeSchedulerConfiguration's profiles). Its
 * framework configuration is the top level's (scoring, plugins) with this
 * profile's plugins and pluginConfig applied: see config_profile_fw. */
typedef struct sched_profile_config {
    char *scheduler_name; /* NULL: the top-level schedulerName */
    fw_config_t fw;       /* only plugin_ops and the args below are read */
    int has_resources;    /* pluginConfig set the resource weights */
    int has_spread;       /* pluginConfig set PodTopologySpread's defaulting */
    int has_pct;          /* the profile sets percentageOfNodesToScore (v1 files) */
    int has_strategy;     /* the profile has its own scoring strategy (v1 files) */
    int line;             /* where it starts in the file */
} sched_profile_config_t;

typedef struct sched_config {
    /* Every scheduler knob, defaults from scheduler_opts_default: the file's
     * keys and the flags write here, and the daemon hands it to
     * scheduler_new as it is (with the first profile's name and framework,
     * and its own wiring). scheduler_name and fw are the top level's; the
     * string members are owned by this struct, as below. */
    scheduler_opts_t sched;
    char *kubeconfig;             /* NULL: $KUBECONFIG, ~/.kube/config, in-cluster */
    char *config_file;            /* the --config file loaded, or NULL */
    int verbosity;                /* -v, 0 */
    double qps;                   /* --kube-api-qps, 500 */
    int burst;                    /* --kube-api-burst, 1000 */
    int insecure_skip_tls_verify; /* 0: --insecure-skip-tls-verify (or --insecure) turns TLS checks off, loudly */
    sched_leader_config_t leader;
    char *metrics_bind_address; /* "0.0.0.0" */
    int metrics_port;           /* 10261; 0 disables /metrics and probes */
    /* Serving (`serving:` keys, kube-scheduler's flag names): the port is
     * HTTPS with tls_cert_file/tls_private_key_file (both or neither; neither:
     * a self-signed certificate made at start) unless plain_http; a client
     * certificate verifying against client_ca_file authenticates; the paths
     * in always_allow_paths (comma list; NULL none) need no credentials. */
    char *tls_cert_file, *tls_private_key_file, *client_ca_file;
    int plain_http;
    char *always_allow_paths;         /* "/healthz,/readyz,/livez" */
    sched_profile_config_t *profiles; /* `profiles:`; none: one profile from the top level */
    int nprofiles;
} sched_config_t;

/* The number of profiles the scheduler runs (at least 1), and profile i's
 * schedulerName (borrowed from c) and effective framework configuration. */
int config_nprofiles(const sched_config_t *c);
const char *config_profile_fw(const sched_config_t *c, int i, fw_config_t *out);
/* The scheduler's options from the config, as scheduler_new takes them:
 * cfg->sched (every knob; its strings stay owned by cfg, which must outlive
 * the scheduler), the first profile's name and framework, the others in
 * *names and *fw (arrays the caller frees), and identity (borrowed). */
void config_scheduler_opts(const sched_config_t *cfg, const char *identity, scheduler_opts_t *o, const char ***names,
                           fw_config_t **fw);

/* Fills c with the defaults (allocates its strings). */
void config_default(sched_config_t *c);
void config_free(sched_config_t *c);

/* Loads an AiSchedulerConfiguration YAML file over c (only the keys present
 * change). Returns 0, or -1 with "FILE:LINE: message" in err; c may then be
 * partly updated. */
int config_load_file(sched_config_t *c, const char *path, char *err, size_t errlen);
/* Same from memory; name is used in messages in place of a file name. */
int config_load_string(sched_config_t *c, const char *yaml, size_t len, const char *name, char *err, size_t errlen);

/* Parses argv[1..argc-1]: --config FILE first, then every other flag over it;
 * "--flag value" and "--flag=value" both work, boolean flags take only
 * "--flag" or "--flag=true|false". Validates the result.
 * Returns 0, CONFIG_HELP (usage printed to stdout), or -1 with err set. */
int config_parse_args(sched_config_t *c, int argc, char **argv, char *err, size_t errlen);

/* Cross-field checks (renew deadline < lease duration, ...): 0 or -1 + err. */
int config_validate(const sched_config_t *c, char *err, size_t errlen);

/* Go-style duration ("15s", "1m30s", "2h", "1500ms", or bare seconds "15")
 * to whole seconds. Returns 0, or -1 when malformed, negative, overflowing
 * or not a whole number of seconds. */
int config_parse_duration(const char *s, int *seconds);

void config_usage(FILE *out);

#endif
