/* config.h -- everything configurable about the scheduler: defaults, the
 * AiSchedulerConfiguration YAML file and the command-line flags.
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
 * Ownership: every char * in sched_config_t is heap-owned by the struct and
 * released by config_free(); setters replace (and free) the old string. */
#ifndef AISCHED_CONFIG_H
#define AISCHED_CONFIG_H

#include <stddef.h>
#include <stdio.h>
#include "framework/framework.h"

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
    int line;             /* where it starts in the file */
} sched_profile_config_t;

typedef struct sched_config {
    char *scheduler_name;         /* "ai-scheduler": pods' spec.schedulerName */
    char *kubeconfig;             /* NULL: $KUBECONFIG, ~/.kube/config, in-cluster */
    char *config_file;            /* the --config file loaded, or NULL */
    int verbosity;                /* -v, 0 */
    fw_config_t fw;               /* scoring: strategy, weights, percentage */
    double qps;                   /* --kube-api-qps, 500 */
    int burst;                    /* --kube-api-burst, 1000 */
    int disable_preemption;       /* 0 */
    int insecure_skip_tls_verify; /* 0: --insecure-skip-tls-verify (or --insecure) turns TLS checks off, loudly */
    int bind_workers;             /* 16 */
    int volume_bind_timeout_s;    /* VolumeBinding PreBind wait (600, kube's bindTimeoutSeconds) */
    int gang_timeout_s;           /* PodGroup scheduleTimeoutSeconds when unset (60) */
    int stale_gang_grace_s;       /* placed gang below minMember this long: stale (60) */
    int evict_stale_gangs;        /* evict the rest of a stale gang (off) */
    int usage_half_life_s;        /* queues: decayed usage half-life, 0 = off */
    int starvation_age_s;         /* queues: starvation bound (600) */
    int non_preemptible_priority; /* queues: pods at or above are not preemptible (100) */
    char *gpu_namespace;          /* GPU sharing: reservation pods' namespace (ai-scheduler-system) */
    char *gpu_image;              /* GPU sharing: reservation pods' image */
    char *topology_levels;
    int max_consolidation_moves;
    /* consolidation: most pods moved for one pod (8; 0 = off) */ /* gangs' topology levels, widest first, comma-separated */
    sched_leader_config_t leader;
    char *metrics_bind_address;       /* "0.0.0.0" */
    int metrics_port;                 /* 10261; 0 disables /metrics and probes */
    int pool_status_interval_s;       /* 10 */
    int eviction_grace_s;             /* preemption victims' grace period: 0 at once, -1 the pod's own */
    sched_profile_config_t *profiles; /* `profiles:`; none: one profile from the top level */
    int nprofiles;
} sched_config_t;

/* The number of profiles the scheduler runs (at least 1), and profile i's
 * schedulerName (borrowed from c) and effective framework configuration. */
int config_nprofiles(const sched_config_t *c);
const char *config_profile_fw(const sched_config_t *c, int i, fw_config_t *out);

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
