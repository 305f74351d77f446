/* test_config.c -- defaults, the YAML file, flags and their precedence. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "config/config.h"
#include "tmpdir.h"

static char tmpdir[256];

static const char *write_tmp(const char *name, const char *text)
{
    static char path[320];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static int setup(void **st)
{
    tmp_template(tmpdir, sizeof tmpdir, "test_config.");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **st)
{
    return tmp_rm_tree(tmpdir);
}

static int load(sched_config_t *c, const char *yaml, char *err, size_t n)
{
    return config_load_string(c, yaml, strlen(yaml), "cfg.yaml", err, n);
}

#define HDR "apiVersion: ai-scheduler.aibee.cn/v1alpha1\nkind: AiSchedulerConfiguration\n"

static void test_defaults(void **st)
{
    sched_config_t c;
    char err[256];
    config_default(&c);
    assert_string_equal(c.sched.scheduler_name, "ai-scheduler");
    assert_null(c.kubeconfig);
    assert_int_equal(c.verbosity, 0);
    assert_true(c.qps == 500.0);
    assert_int_equal(c.burst, 1000);
    assert_int_equal(c.sched.disable_preemption, 0);
    assert_int_equal(c.sched.bind_workers, 16);
    assert_int_equal(c.leader.enabled, 1);
    assert_string_equal(c.leader.lease_name, "ai-scheduler");
    assert_string_equal(c.leader.lease_namespace, "kube-system");
    assert_int_equal(c.leader.lease_duration_s, 15);
    assert_int_equal(c.leader.renew_deadline_s, 10);
    assert_int_equal(c.leader.retry_period_s, 2);
    char want[64];
    snprintf(want, sizeof want, "_%ld", (long)getpid());
    assert_non_null(strstr(c.leader.identity, want));
    assert_string_equal(c.metrics_bind_address, "0.0.0.0");
    assert_int_equal(c.metrics_port, 10261);
    assert_int_equal(c.sched.pool_status_interval_s, 10);
    fw_config_t fw;
    fw_config_default(&fw);
    assert_memory_equal(&fw, &c.sched.fw, sizeof fw);
    assert_int_equal(config_validate(&c, err, sizeof err), 0);
    config_free(&c);
}

/* One set of defaults (scheduler_opts_default) and one home for the knobs:
 * c.sched is what the scheduler gets, the file and the flags write straight
 * into it, and its strings are the config's own copies, replaced and freed
 * by the config (valgrind or ASan see a leak or a double free). */
static void test_knobs_are_scheduler_opts(void **st)
{
    sched_config_t c;
    scheduler_opts_t o, same;
    char err[256] = "";
    config_default(&c);
    scheduler_opts_default(&o);
    memcpy(&same, &c.sched, sizeof same);
    const char **mine[] = { &same.scheduler_name, &same.gpu_namespace, &same.gpu_image, &same.topology_levels,
                            &same.dra_queue_resources };
    const char *const defaults[] = { o.scheduler_name, o.gpu_namespace, o.gpu_image, o.topology_levels,
                                     o.dra_queue_resources };
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) {
        assert_string_equal(*mine[i], defaults[i]);
        assert_ptr_not_equal(*mine[i], defaults[i]); /* a copy, not the literal */
        *mine[i] = defaults[i];
    }
    assert_memory_equal(&same, &o, sizeof o);
    assert_int_equal(c.sched.gang_timeout_s, 60);

    const char *path = write_tmp("knobs.yaml", HDR "gangScheduleTimeoutSeconds: 30\n"
                                                   "gpuReservationNamespace: file-ns\n"
                                                   "topologyLevels: [zone, rack]\n");
    char *argv[] = {
        "ai-scheduler", "--config",           (char *)path, "--gang-schedule-timeout=45", "--gpu-reservation-image",
        "img:1",        "--topology-levels=", NULL
    };
    assert_int_equal(config_parse_args(&c, (int)(sizeof argv / sizeof argv[0]) - 1, argv, err, sizeof err), 0);
    assert_int_equal(c.sched.gang_timeout_s, 45);
    assert_string_equal(c.sched.gpu_namespace, "file-ns");
    assert_string_equal(c.sched.gpu_image, "img:1");
    assert_null(c.sched.topology_levels);
    assert_int_equal(load(&c, HDR "topologyLevels: [zone, rack]\nschedulerName: again\n", err, sizeof err), 0);
    assert_string_equal(c.sched.topology_levels, "zone,rack");
    assert_string_equal(c.sched.scheduler_name, "again");
    config_free(&c);
}

static void test_duration(void **st)
{
    int s = -1;
    assert_int_equal(config_parse_duration("15s", &s), 0);
    assert_int_equal(s, 15);
    assert_int_equal(config_parse_duration("1m30s", &s), 0);
    assert_int_equal(s, 90);
    assert_int_equal(config_parse_duration("2h", &s), 0);
    assert_int_equal(s, 7200);
    assert_int_equal(config_parse_duration("2000ms", &s), 0);
    assert_int_equal(s, 2);
    assert_int_equal(config_parse_duration("1.5m", &s), 0);
    assert_int_equal(s, 90);
    assert_int_equal(config_parse_duration("7", &s), 0);
    assert_int_equal(s, 7);
    assert_int_equal(config_parse_duration("1500ms", &s), -1);
    assert_int_equal(config_parse_duration("", &s), -1);
    assert_int_equal(config_parse_duration("s", &s), -1);
    assert_int_equal(config_parse_duration("15x", &s), -1);
    assert_int_equal(config_parse_duration("-5s", &s), -1);
    assert_int_equal(config_parse_duration("-5", &s), -1);
    assert_int_equal(config_parse_duration("99999999999999999999h", &s), -1);
    assert_int_equal(config_parse_duration("999999999h", &s), -1);
}

static void test_full_file(void **st)
{
    sched_config_t c;
    char err[256] = "";
    config_default(&c);
    const char *y =
        HDR "schedulerName: gpu-sched\n"
            "clientConnection:\n  qps: 50.5\n  burst: 100\n  kubeconfig: /etc/kube.conf\n"
            "leaderElection:\n  leaderElect: false\n  leaseDuration: 30s\n  renewDeadline: 20s\n"
            "  retryPeriod: 4s\n  resourceName: lease-x\n  resourceNamespace: sched\n  resourceLock: leases\n"
            "scoring:\n  strategy: LeastAllocated\n  percentageOfNodesToScore: 40\n"
            "  resources:\n  - name: cpu\n    weight: 2\n  - {name: nvidia.com/gpu, weight: 5}\n"
            "plugins:\n  weights:\n    NodeResourcesFit: 3\n    NodeResourcesBalancedAllocation: 0\n"
            "    NodeAffinity: 4\n    TaintToleration: 5\n"
            "preemption:\n  disabled: true\n"
            "bindWorkers: 8\n"
            "metrics:\n  bindAddress: 127.0.0.1\n  port: 9000\n"
            "poolStatusIntervalSeconds: 30\n"
            "verbosity: 4\n";
    assert_int_equal(load(&c, y, err, sizeof err), 0);
    assert_string_equal(c.sched.scheduler_name, "gpu-sched");
    assert_true(c.qps == 50.5);
    assert_int_equal(c.burst, 100);
    assert_string_equal(c.kubeconfig, "/etc/kube.conf");
    assert_int_equal(c.leader.enabled, 0);
    assert_int_equal(c.leader.lease_duration_s, 30);
    assert_int_equal(c.leader.renew_deadline_s, 20);
    assert_int_equal(c.leader.retry_period_s, 4);
    assert_string_equal(c.leader.lease_name, "lease-x");
    assert_string_equal(c.leader.lease_namespace, "sched");
    assert_int_equal(c.sched.fw.strategy, SCORE_LEAST_ALLOCATED);
    assert_int_equal(c.sched.fw.percentage_of_nodes_to_score, 40);
    assert_int_equal(c.sched.fw.nres_weights, 2);
    assert_string_equal(c.sched.fw.res_weights[0].name, "cpu");
    assert_int_equal(c.sched.fw.res_weights[0].weight, 2);
    assert_string_equal(c.sched.fw.res_weights[1].name, "nvidia.com/gpu");
    assert_int_equal(c.sched.fw.res_weights[1].weight, 5);
    assert_int_equal(c.sched.fw.weight_resources, 3);
    assert_int_equal(c.sched.fw.weight_balanced, 0);
    assert_int_equal(c.sched.fw.weight_node_affinity, 4);
    assert_int_equal(c.sched.fw.weight_taint_toleration, 5);
    assert_int_equal(c.sched.disable_preemption, 1);
    assert_int_equal(c.sched.bind_workers, 8);
    assert_string_equal(c.metrics_bind_address, "127.0.0.1");
    assert_int_equal(c.metrics_port, 9000);
    assert_int_equal(c.sched.pool_status_interval_s, 30);
    assert_int_equal(c.verbosity, 4);
    assert_int_equal(config_validate(&c, err, sizeof err), 0);
    config_free(&c);
}

/* Each bad document and the message it must produce. */
static void test_file_errors(void **st)
{
    static const struct {
        const char *yaml, *msg;
    } cases[] = {
        { HDR "leaderElection:\n  foo: 1\n", "cfg.yaml:4: unknown key \"foo\" in leaderElection" },
        { HDR "bogus: 1\n", "cfg.yaml:3: unknown key \"bogus\" in AiSchedulerConfiguration" },
        { HDR "scoring:\n  resources:\n  - name: cpu\n    wieght: 1\n",
          "cfg.yaml:6: unknown key \"wieght\" in scoring.resources" },
        { HDR "plugins:\n  weights:\n    NodePorts: 1\n", "cfg.yaml:5: unknown key \"NodePorts\" in plugins.weights" },
        { HDR "leaderElection:\n  leaseDuration: 15\n  renewDeadline: soon\n",
          "cfg.yaml:5: leaderElection.renewDeadline: \"soon\" is not a duration of whole seconds such as \"15s\"" },
        { HDR "bindWorkers: many\n", "cfg.yaml:3: bindWorkers: \"many\" is not an integer in 1..1024" },
        { HDR "bindWorkers: 0\n", "cfg.yaml:3: bindWorkers: \"0\" is not an integer in 1..1024" },
        { HDR "metrics:\n  port: 70000\n", "cfg.yaml:4: metrics.port: \"70000\" is not an integer in 0..65535" },
        { HDR "preemption:\n  disabled: maybe\n",
          "cfg.yaml:4: preemption.disabled: \"maybe\" is not a boolean (true or false)" },
        { HDR "scoring:\n  strategy: Random\n",
          "cfg.yaml:4: scoring.strategy: \"Random\" is not LeastAllocated or MostAllocated" },
        { HDR "scoring:\n  resources: cpu\n", "cfg.yaml:4: scoring.resources: expected a list of {name, weight}" },
        { HDR "scoring:\n  resources:\n  - weight: 2\n", "cfg.yaml:5: scoring.resources: item without a name" },
        { HDR "scoring:\n  resources:\n  - name: cpu\n  - name: cpu\n",
          "cfg.yaml:6: scoring.resources: \"cpu\" listed twice" },
        { HDR "clientConnection: 5\n", "cfg.yaml:3: clientConnection: expected a mapping" },
        { HDR "schedulerName: [a, b]\n", "cfg.yaml:3: schedulerName: expected a scalar value" },
        { HDR "verbosity: 1\nverbosity: 2\n", "cfg.yaml:4: duplicate key \"verbosity\" in AiSchedulerConfiguration" },
        { "kind: AiSchedulerConfiguration\n", "cfg.yaml:1: missing apiVersion: ai-scheduler.aibee.cn/v1alpha1" },
        { "apiVersion: v1\nkind: AiSchedulerConfiguration\n",
          "cfg.yaml:1: apiVersion is \"v1\", expected \"ai-scheduler.aibee.cn/v1alpha1\"" },
        { "apiVersion: ai-scheduler.aibee.cn/v1alpha1\nkind: KubeSchedulerConfiguration\n",
          "cfg.yaml:2: kind is \"KubeSchedulerConfiguration\", expected \"AiSchedulerConfiguration\"" },
        { "- a\n- b\n", "cfg.yaml:1: expected a mapping" },
        { HDR "---\n" HDR, "cfg.yaml:4: only one YAML document is allowed" },
        { "", "cfg.yaml: empty configuration" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sched_config_t c;
        char err[256] = "";
        config_default(&c);
        int rc = load(&c, cases[i].yaml, err, sizeof err);
        if (rc != -1 || strncmp(err, cases[i].msg, strlen(cases[i].msg)) != 0)
            fail_msg("case %zu: rc=%d err=\"%s\" want \"%s\"", i, rc, err, cases[i].msg);
        config_free(&c);
    }
}

/* Malformed YAML never crashes and reports a position. */
static void test_garbage(void **st)
{
    static const char *bad[] = {
        "a: [1, 2\n",
        "key: \"unterminated\n",
        "\t- x\n",
        "a: &x 1\nb: *y\n",
        HDR "scoring:\n  resources: [&a {name: cpu}, *a]\n",
        HDR "clientConnection: {qps: \"1\\u0000\"}\n",
        "\xff\xfe\x00garbage",
        ": : :\n",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sched_config_t c;
        char err[256] = "";
        config_default(&c);
        size_t len = i == 6 ? 9 : strlen(bad[i]);
        assert_int_equal(config_load_string(&c, bad[i], len, "g.yaml", err, sizeof err), -1);
        assert_true(strncmp(err, "g.yaml", 6) == 0);
        config_free(&c);
    }
}

static void test_flags_override_file(void **st)
{
    const char *path = write_tmp("a.yaml", HDR "schedulerName: from-file\nbindWorkers: 4\nverbosity: 2\n"
                                               "leaderElection:\n  resourceName: file-lease\n");
    sched_config_t c;
    char err[256] = "";
    config_default(&c);
    /* --config appears after flags that must still win over it. */
    char *argv[] = { "ai-scheduler",
                     "--scheduler-name",
                     "from-flag",
                     "--v=5",
                     "--config",
                     (char *)path,
                     "--kube-api-qps=20",
                     "--kube-api-burst",
                     "40",
                     "--disable-preemption",
                     "--leader-elect=false",
                     "--leader-elect-lease-duration=1m",
                     "--leader-elect-renew-deadline",
                     "30s",
                     "--leader-elect-retry-period=5s",
                     "--leader-elect-resource-namespace",
                     "ns1",
                     "--metrics-port=0",
                     "--metrics-bind-address",
                     "::1",
                     "--scoring-strategy=least",
                     "--percentage-of-nodes-to-score",
                     "50",
                     "--kubeconfig=/k",
                     NULL };
    int argc = (int)(sizeof argv / sizeof argv[0]) - 1;
    assert_int_equal(config_parse_args(&c, argc, argv, err, sizeof err), 0);
    assert_string_equal(c.config_file, path);
    assert_string_equal(c.sched.scheduler_name, "from-flag");
    assert_int_equal(c.sched.bind_workers, 4); /* file, no flag */
    assert_int_equal(c.verbosity, 5);
    assert_string_equal(c.leader.lease_name, "file-lease");
    assert_string_equal(c.leader.lease_namespace, "ns1");
    assert_true(c.qps == 20.0);
    assert_int_equal(c.burst, 40);
    assert_int_equal(c.sched.disable_preemption, 1);
    assert_int_equal(c.leader.enabled, 0);
    assert_int_equal(c.leader.lease_duration_s, 60);
    assert_int_equal(c.leader.renew_deadline_s, 30);
    assert_int_equal(c.leader.retry_period_s, 5);
    assert_int_equal(c.metrics_port, 0);
    assert_string_equal(c.metrics_bind_address, "::1");
    assert_int_equal(c.sched.fw.strategy, SCORE_LEAST_ALLOCATED);
    assert_int_equal(c.sched.fw.percentage_of_nodes_to_score, 50);
    assert_string_equal(c.kubeconfig, "/k");
    config_free(&c);

    config_default(&c);
    char *argv2[] = { "x", "-v", "3", "--bind-workers=2", "--scoring-strategy", "MostAllocated", NULL };
    assert_int_equal(config_parse_args(&c, 6, argv2, err, sizeof err), 0);
    assert_int_equal(c.verbosity, 3);
    assert_int_equal(c.sched.bind_workers, 2);
    assert_int_equal(c.sched.fw.strategy, SCORE_MOST_ALLOCATED);
    assert_null(c.config_file);
    config_free(&c);
}

/* The serving keys and flags: defaults, file, flags over the file, and
 * what is refused. */
static void test_serving(void **st)
{
    (void)st;
    sched_config_t c;
    char err[256];
    config_default(&c);
    assert_null(c.tls_cert_file);
    assert_null(c.tls_private_key_file);
    assert_null(c.client_ca_file);
    assert_int_equal(c.plain_http, 0);
    assert_string_equal(c.always_allow_paths, "/healthz,/readyz,/livez");
    config_free(&c);

    const char *y = HDR "serving:\n  tlsCertFile: /t/tls.crt\n  tlsPrivateKeyFile: /t/tls.key\n"
                        "  clientCAFile: /t/ca.crt\n  plainHTTP: true\n"
                        "  authorizationAlwaysAllowPaths: /healthz,/metrics\n";
    config_default(&c);
    assert_int_equal(load(&c, y, err, sizeof err), 0);
    assert_string_equal(c.tls_cert_file, "/t/tls.crt");
    assert_string_equal(c.tls_private_key_file, "/t/tls.key");
    assert_string_equal(c.client_ca_file, "/t/ca.crt");
    assert_int_equal(c.plain_http, 1);
    assert_string_equal(c.always_allow_paths, "/healthz,/metrics");
    assert_int_equal(config_validate(&c, err, sizeof err), 0);
    config_free(&c);

    config_default(&c);
    char *argv[] = { "x",
                     "--tls-cert-file=/a.crt",
                     "--tls-private-key-file",
                     "/a.key",
                     "--client-ca-file=/ca",
                     "--plain-http",
                     "--authorization-always-allow-paths=",
                     NULL };
    assert_int_equal(config_parse_args(&c, 7, argv, err, sizeof err), 0);
    assert_string_equal(c.tls_cert_file, "/a.crt");
    assert_string_equal(c.tls_private_key_file, "/a.key");
    assert_string_equal(c.client_ca_file, "/ca");
    assert_int_equal(c.plain_http, 1);
    assert_null(c.always_allow_paths); /* "": nothing served without credentials */
    config_free(&c);

    config_default(&c);
    char *argv2[] = { "x", "--tls-cert-file=/a.crt", NULL };
    assert_int_equal(config_parse_args(&c, 2, argv2, err, sizeof err), -1);
    assert_string_equal(err, "--tls-cert-file and --tls-private-key-file go together: give both or neither");
    config_free(&c);
    config_default(&c);
    char *argv3[] = { "x", "--authorization-always-allow-paths=/healthz,metrics", NULL };
    assert_int_equal(config_parse_args(&c, 2, argv3, err, sizeof err), -1);
    assert_string_equal(err, "authorization always-allow path \"metrics\" does not start with /");
    config_free(&c);
    config_default(&c);
    assert_int_equal(load(&c, HDR "serving:\n  tlsCertFile: /x\n  nope: 1\n", err, sizeof err), -1);
    assert_string_equal(err, "cfg.yaml:5: unknown key \"nope\" in serving");
    config_free(&c);
}

static void test_flag_errors(void **st)
{
    static const struct {
        const char *args[4];
        const char *msg;
    } cases[] = {
        { { "--nope" }, "unknown flag --nope" },
        { { "stray" }, "unexpected argument \"stray\"" },
        { { "--bind-workers" }, "flag --bind-workers needs a value" },
        { { "--bind-workers=0" }, "flag --bind-workers: \"0\" is not an integer in 1..1024" },
        { { "--kube-api-qps", "fast" }, "flag --kube-api-qps: \"fast\" is not a number" },
        { { "--leader-elect=perhaps" }, "flag --leader-elect: \"perhaps\" is not true or false" },
        { { "--leader-elect-retry-period=0s" }, "flag --leader-elect-retry-period: \"0s\" is not a duration" },
        { { "--scoring-strategy=x" }, "flag --scoring-strategy: \"x\" is not LeastAllocated or MostAllocated" },
        { { "--scheduler-name=" }, "flag --scheduler-name: must not be empty" },
        { { "--metrics-bind-address", "localhost" }, "metrics bind address \"localhost\" is not an IP address" },
        { { "--leader-elect-renew-deadline=20s" },
          "leader election lease duration (15s) must be greater than renew deadline (20s)" },
        { { "--leader-elect-retry-period=9s" },
          "leader election renew deadline (10s) must be greater than 1.2 x retry period (9s)" },
        { { "--config", "/nonexistent/x.yaml" }, "/nonexistent/x.yaml: No such file or directory" },
        { { "--help=yes" }, "flag --help takes no value" },
        { { "--seed=0" }, "flag --seed: \"0\" is not an integer in 1..18446744073709551615" },
        { { "--seed", "-3" }, "flag --seed: \"-3\" is not an integer" },
        { { "--seed", "18446744073709551616" }, "flag --seed: \"18446744073709551616\" is not an integer" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[6] = { "ai-scheduler" };
        int argc = 1;
        for (int j = 0; j < 4 && cases[i].args[j]; j++)
            argv[argc++] = (char *)cases[i].args[j];
        sched_config_t c;
        char err[256] = "";
        config_default(&c);
        int rc = config_parse_args(&c, argc, argv, err, sizeof err);
        if (rc != -1 || strncmp(err, cases[i].msg, strlen(cases[i].msg)) != 0)
            fail_msg("case %zu: rc=%d err=\"%s\" want \"%s\"", i, rc, err, cases[i].msg);
        config_free(&c);
    }
    /* Leader election off: its timing is not checked. */
    sched_config_t c;
    char err[256];
    config_default(&c);
    char *argv[] = { "x", "--leader-elect=false", "--leader-elect-renew-deadline=20s", NULL };
    assert_int_equal(config_parse_args(&c, 3, argv, err, sizeof err), 0);
    config_free(&c);
}

/* --seed and the seed key: a 64-bit seed; the flag overrides the file. */
static void test_seed(void **st)
{
    sched_config_t c;
    char err[256] = "";
    config_default(&c);
    assert_int_equal(c.sched.seed, 0); /* from the time, at start */
    assert_int_equal(load(&c, HDR "seed: 18446744073709551615\n", err, sizeof err), 0);
    assert_true(c.sched.seed == UINT64_MAX);
    char *argv[] = { "x", "--seed", "42", NULL };
    assert_int_equal(config_parse_args(&c, 3, argv, err, sizeof err), 0);
    assert_int_equal(c.sched.seed, 42);
    config_free(&c);
    config_default(&c);
    assert_int_equal(load(&c, HDR "seed: soon\n", err, sizeof err), -1);
    assert_non_null(strstr(err, "seed: \"soon\" is not an integer"));
    config_free(&c);
}

static void test_bad_file_via_flag(void **st)
{
    const char *path = write_tmp("bad.yaml", HDR "leaderElection:\n  leaseDuration: 15s\n  foo: bar\n");
    sched_config_t c;
    char err[256] = "", want[256];
    config_default(&c);
    char *argv[] = { "x", "--config=", NULL };
    char arg[200];
    snprintf(arg, sizeof arg, "--config=%s", path);
    argv[1] = arg;
    assert_int_equal(config_parse_args(&c, 2, argv, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:5: unknown key \"foo\" in leaderElection", path);
    assert_string_equal(err, want);
    config_free(&c);
}

/* KubeSchedulerConfiguration-style profiles: plugins per point, weights,
 * "*", pluginConfig; each profile is its own framework. */
static void test_profiles(void **st)
{
    sched_config_t c;
    char err[512] = "";
    config_default(&c);
    const char *yaml =
        HDR "scoring:\n"
            "  strategy: LeastAllocated\n"
            "profiles:\n"
            "  - plugins:\n" /* inherits schedulerName */
            "      filter:\n"
            "        disabled: [{name: NodeAffinity}]\n"
            "  - schedulerName: spread\n"
            "    plugins:\n"
            "      score:\n"
            "        disabled: [{name: \"*\"}]\n"
            "        enabled:\n"
            "          - {name: NodeResourcesLeastAllocated, weight: 5}\n"
            "          - {name: ImageLocality}\n"
            "      postFilter:\n"
            "        disabled: [{name: DefaultPreemption}]\n"
            "    pluginConfig:\n"
            "      - name: NodeResourcesLeastAllocated\n"
            "        args: {resources: [{name: cpu, weight: 2}]}\n"
            "      - name: PodTopologySpread\n"
            "        args:\n"
            "          defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]\n";
    assert_int_equal(load(&c, yaml, err, sizeof err), 0);
    assert_int_equal(config_nprofiles(&c), 2);
    fw_config_t fw;
    assert_string_equal(config_profile_fw(&c, 0, &fw), "ai-scheduler");
    assert_int_equal(fw.strategy, SCORE_LEAST_ALLOCATED);
    framework_t *f = framework_new(&fw);
    assert_non_null(f);
    assert_false(framework_filter_enabled(f, "NodeAffinity"));
    assert_true(framework_filter_enabled(f, "TaintToleration"));
    assert_int_equal(framework_score_weight(f, "NodeResourcesLeastAllocated"), 1);
    assert_int_equal(framework_score_weight(f, "NodePreferAvoidPods"), 10000);
    assert_true(framework_preemption_enabled(f));
    framework_free(f);

    assert_string_equal(config_profile_fw(&c, 1, &fw), "spread");
    assert_int_equal(fw.nres_weights, 1);
    assert_int_equal(fw.res_weights[0].weight, 2);
    assert_int_equal(fw.spread_list_defaulting, 1); /* constraints given: List */
    assert_int_equal(fw.nspread_defaults, 1);
    f = framework_new(&fw);
    assert_non_null(f);
    assert_true(framework_filter_enabled(f, "NodeAffinity"));
    assert_int_equal(framework_score_weight(f, "NodeResourcesLeastAllocated"), 5);
    assert_int_equal(framework_score_weight(f, "ImageLocality"), 1); /* weight 0 means 1 */
    assert_int_equal(framework_score_weight(f, "TaintToleration"), 0);
    assert_false(framework_preemption_enabled(f));
    framework_free(f);
    config_free(&c);

    /* Without profiles, top-level plugins apply to the one profile and the
     * legacy weights still work. */
    config_default(&c);
    assert_int_equal(load(&c,
                          HDR "plugins:\n  weights: {TaintToleration: 7}\n  filter:\n"
                              "    disabled: [{name: NodePorts}]\n",
                          err, sizeof err),
                     0);
    assert_int_equal(config_nprofiles(&c), 1);
    assert_string_equal(config_profile_fw(&c, 0, &fw), "ai-scheduler");
    f = framework_new(&fw);
    assert_false(framework_filter_enabled(f, "NodePorts"));
    assert_int_equal(framework_score_weight(f, "TaintToleration"), 7);
    framework_free(f);
    config_free(&c);
}

static void expect_error(const char *yaml, const char *want)
{
    sched_config_t c;
    char err[512] = "";
    config_default(&c);
    assert_int_equal(load(&c, yaml, err, sizeof err), -1);
    if (!strstr(err, want))
        fail_msg("error \"%s\" does not contain \"%s\"", err, want);
    config_free(&c);
}

static void test_profile_errors(void **st)
{
    expect_error(HDR "profiles:\n  - plugins:\n      filter:\n        disabled:\n          - name: NodeAfinity\n",
                 "cfg.yaml:7: plugins.filter: unknown plugin \"NodeAfinity\"");
    expect_error(HDR "profiles:\n  - plugins:\n      filter:\n        enabled: [{name: ImageLocality}]\n",
                 "cfg.yaml:6: plugins.filter: plugin \"ImageLocality\" does not extend filter");
    expect_error(HDR "plugins:\n  score:\n    enabled: [{name: ImageLocality, weight: 3}]\n",
                 "cfg.yaml:5: profile \"ai-scheduler\": score: plugin \"ImageLocality\" is enabled twice");
    expect_error(HDR "profiles:\n  - schedulerName: a\n  - schedulerName: a\n",
                 "cfg.yaml:5: profiles: schedulerName \"a\" is used twice");
    expect_error(HDR "profiles:\n  - plugins:\n      bind:\n        disabled: [{name: \"*\"}]\n",
                 "bind: at least one bind plugin");
    expect_error(HDR "profiles:\n  - pluginConfig:\n      - name: Nope\n",
                 "cfg.yaml:5: pluginConfig: unknown plugin \"Nope\"");
    expect_error(HDR "profiles:\n  - pluginConfig:\n      - name: NodeAffinity\n        args: {addedAffinity: {}}\n",
                 "cfg.yaml:5: pluginConfig: args for \"NodeAffinity\" are not supported");
    expect_error(HDR "profiles:\n  - pluginConfig:\n      - name: PodTopologySpread\n        args:\n"
                     "          defaultingType: System\n          defaultConstraints: [{maxSkew: 1, topologyKey: k}]\n",
                 "defaultConstraints must be empty when defaultingType is System");
    expect_error(HDR "profiles:\n  - plugins:\n      sideways: {}\n", "cfg.yaml:5: unknown key \"sideways\"");
    expect_error(HDR "profiles: {a: b}\n", "cfg.yaml:3: profiles: expected a list");
}

/* ---- kubescheduler.config.k8s.io/v1 files ------------------------------- */

/* c gets the defaults and then yaml, which must load. */
static void load_ok(sched_config_t *c, const char *yaml)
{
    char err[512] = "";
    config_default(c);
    if (load(c, yaml, err, sizeof err) != 0)
        fail_msg("load failed: %s", err);
}

static void assert_res(const fw_config_t *fw, int i, const char *name, int weight)
{
    assert_true(i < fw->nres_weights);
    assert_string_equal(fw->res_weights[i].name, name);
    assert_int_equal(fw->res_weights[i].weight, weight);
}

#define V1 "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

/* The plugins a profile enables at one point, in order, as "A,B" (score:
 * "A:w,B:w"): the v1 loader writes "*" disabled then the expanded list. */
static const char *point_list(const fw_config_t *fw, int point)
{
    static char buf[1024];
    buf[0] = 0;
    for (int i = 0; i < fw->nplugin_ops; i++) {
        const fw_plugin_op_t *op = &fw->plugin_ops[i];
        if (op->point != point || !op->enable)
            continue;
        size_t n = strlen(buf);
        if (point == FW_PT_SCORE)
            snprintf(buf + n, sizeof buf - n, "%s%s:%d", n ? "," : "", op->name, op->weight);
        else
            snprintf(buf + n, sizeof buf - n, "%s%s", n ? "," : "", op->name);
    }
    return buf;
}

/* The default filters of kube 1.35's v1 multiPoint set in its order, with
 * ai-scheduler's GpuSharing and TopologyDomain after InterPodAffinity. */
#define V1_FILTERS                                                                                                     \
    "NodeUnschedulable,NodeName,TaintToleration,NodeAffinity,NodePorts,NodeResourcesFit,VolumeRestrictions,"           \
    "EBSLimits,GCEPDLimits,NodeVolumeLimits,AzureDiskLimits,VolumeBinding,VolumeZone,PodTopologySpread,"               \
    "InterPodAffinity,GpuSharing,TopologyDomain,DynamicResources"

/* A v1 file with no profiles: kube's one profile "default-scheduler" with
 * v1's defaults (default_plugins.go): score weights TaintToleration 3,
 * NodeAffinity 2, PodTopologySpread 2, InterPodAffinity 2, NodeResourcesFit
 * 1 as LeastAllocated over cpu 1 + memory 1, BalancedAllocation 1,
 * ImageLocality 1 (ai-scheduler's GpuSharing keeps its 5); no
 * NodePreferAvoidPods (removed); PodTopologySpread System defaulting. */
static void test_v1_defaults(void **st)
{
    sched_config_t c;
    char err[512] = "";
    load_ok(&c, V1);
    assert_int_equal(config_nprofiles(&c), 1);
    fw_config_t fw;
    assert_string_equal(config_profile_fw(&c, 0, &fw), "default-scheduler");
    assert_string_equal(point_list(&fw, FW_PT_QUEUE_SORT), "PrioritySort");
    assert_string_equal(
        point_list(&fw, FW_PT_PRE_FILTER),
        "NodePorts,NodeResourcesFit,VolumeBinding,PodTopologySpread,InterPodAffinity,GpuSharing,DynamicResources");
    assert_string_equal(point_list(&fw, FW_PT_FILTER), V1_FILTERS);
    assert_string_equal(point_list(&fw, FW_PT_POST_FILTER), "DefaultPreemption");
    assert_string_equal(point_list(&fw, FW_PT_PRE_SCORE),
                        "TaintToleration,PodTopologySpread,InterPodAffinity,GpuSharing");
    assert_string_equal(point_list(&fw, FW_PT_SCORE),
                        "TaintToleration:3,NodeAffinity:2,NodeResourcesLeastAllocated:1,PodTopologySpread:2,"
                        "InterPodAffinity:2,GpuSharing:5,NodeResourcesBalancedAllocation:1,ImageLocality:1");
    assert_string_equal(point_list(&fw, FW_PT_BIND), "DefaultBinder");
    assert_int_equal(fw.strategy, SCORE_LEAST_ALLOCATED);
    assert_int_equal(fw.nres_weights, 2);
    assert_res(&fw, 0, "cpu", 1);
    assert_res(&fw, 1, "memory", 1);
    assert_int_equal(fw.spread_list_defaulting, 0);
    assert_int_equal(fw.nspread_defaults, 0);
    assert_int_equal(fw.v1_resource_scores, 1);
    framework_t *f = framework_new(&fw);
    assert_non_null(f);
    assert_int_equal(framework_score_weight(f, "TaintToleration"), 3);
    assert_int_equal(framework_score_weight(f, "NodeResourcesLeastAllocated"), 1);
    assert_int_equal(framework_score_weight(f, "NodePreferAvoidPods"), 0);
    assert_true(framework_preemption_enabled(f));
    assert_true(framework_runs(f, FW_PT_RESERVE, "VolumeBinding"));
    framework_free(f);
    /* --scheduler-name still names the profile that sets none. */
    char *argv[] = { "x", "--scheduler-name=kube-two", NULL };
    assert_int_equal(config_parse_args(&c, 2, argv, err, sizeof err), 0);
    assert_string_equal(config_profile_fw(&c, 0, &fw), "kube-two");
    config_free(&c);
}

/* multiPoint as the kube docs use it: an enabled default is replaced in
 * place (TaintToleration weight 5; InterPodAffinity named without a weight
 * gets 1, not its default 2), disabled ImageLocality leaves every point, a
 * point's own disabled list and enabled entry win over multiPoint there
 * (expandMultiPointPlugins: the explicit score entry NodeAffinity 4 comes
 * first, then the multiPoint ones), other points keep multiPoint's. */
static void test_v1_multipoint(void **st)
{
    sched_config_t c;
    const char *yaml = V1 "profiles:\n"
                          "  - schedulerName: multipoint-scheduler\n"
                          "    plugins:\n"
                          "      multiPoint:\n"
                          "        enabled:\n"
                          "        - name: TaintToleration\n"
                          "          weight: 5\n"
                          "        - name: InterPodAffinity\n"
                          "        disabled:\n"
                          "        - name: ImageLocality\n"
                          "      filter:\n"
                          "        disabled:\n"
                          "        - name: NodeAffinity\n"
                          "      score:\n"
                          "        enabled:\n"
                          "        - name: NodeAffinity\n"
                          "          weight: 4\n"
                          "        disabled:\n"
                          "        - name: PodTopologySpread\n";
    load_ok(&c, yaml);
    fw_config_t fw;
    assert_string_equal(config_profile_fw(&c, 0, &fw), "multipoint-scheduler");
    assert_string_equal(point_list(&fw, FW_PT_FILTER),
                        "NodeUnschedulable,NodeName,TaintToleration,NodePorts,NodeResourcesFit,VolumeRestrictions,"
                        "EBSLimits,GCEPDLimits,NodeVolumeLimits,AzureDiskLimits,VolumeBinding,VolumeZone,"
                        "PodTopologySpread,InterPodAffinity,GpuSharing,TopologyDomain,DynamicResources");
    assert_string_equal(point_list(&fw, FW_PT_SCORE),
                        "NodeAffinity:4,TaintToleration:5,NodeResourcesLeastAllocated:1,InterPodAffinity:1,"
                        "GpuSharing:5,NodeResourcesBalancedAllocation:1");
    assert_string_equal(point_list(&fw, FW_PT_PRE_SCORE),
                        "TaintToleration,PodTopologySpread,InterPodAffinity,GpuSharing");
    framework_t *f = framework_new(&fw);
    assert_non_null(f);
    assert_false(framework_filter_enabled(f, "NodeAffinity"));
    assert_int_equal(framework_score_weight(f, "NodeAffinity"), 4);
    assert_int_equal(framework_score_weight(f, "ImageLocality"), 0);
    assert_int_equal(framework_score_weight(f, "PodTopologySpread"), 0);
    assert_true(framework_filter_enabled(f, "PodTopologySpread"));
    framework_free(f);
    config_free(&c);

    /* disabled "*" at multiPoint: only what is named runs (kube's
     * mergePluginSet drops every default). */
    yaml = V1 "profiles:\n"
              "  - schedulerName: minimal\n"
              "    plugins:\n"
              "      multiPoint:\n"
              "        enabled:\n"
              "        - name: PrioritySort\n"
              "        - name: NodeResourcesFit\n"
              "          weight: 2\n"
              "        - name: DefaultBinder\n"
              "        disabled:\n"
              "        - name: '*'\n";
    load_ok(&c, yaml);
    config_profile_fw(&c, 0, &fw);
    assert_string_equal(point_list(&fw, FW_PT_FILTER), "NodeResourcesFit");
    assert_string_equal(point_list(&fw, FW_PT_PRE_FILTER), "NodeResourcesFit");
    assert_string_equal(point_list(&fw, FW_PT_SCORE), "NodeResourcesLeastAllocated:2");
    assert_string_equal(point_list(&fw, FW_PT_POST_FILTER), "");
    f = framework_new(&fw);
    assert_non_null(f);
    assert_false(framework_preemption_enabled(f));
    framework_free(f);
    config_free(&c);
}

/* Two profiles, the kube docs' "Multiple profiles" example: the second
 * scores nothing (preScore and score "*" disabled), the first is v1's
 * default. */
static void test_v1_two_profiles(void **st)
{
    sched_config_t c;
    const char *yaml = V1 "profiles:\n"
                          "  - schedulerName: default-scheduler\n"
                          "  - schedulerName: no-scoring-scheduler\n"
                          "    plugins:\n"
                          "      preScore:\n"
                          "        disabled:\n"
                          "        - name: '*'\n"
                          "      score:\n"
                          "        disabled:\n"
                          "        - name: '*'\n";
    load_ok(&c, yaml);
    assert_int_equal(config_nprofiles(&c), 2);
    fw_config_t fw;
    assert_string_equal(config_profile_fw(&c, 0, &fw), "default-scheduler");
    assert_string_equal(point_list(&fw, FW_PT_SCORE),
                        "TaintToleration:3,NodeAffinity:2,NodeResourcesLeastAllocated:1,PodTopologySpread:2,"
                        "InterPodAffinity:2,GpuSharing:5,NodeResourcesBalancedAllocation:1,ImageLocality:1");
    assert_string_equal(config_profile_fw(&c, 1, &fw), "no-scoring-scheduler");
    assert_string_equal(point_list(&fw, FW_PT_SCORE), "");
    assert_string_equal(point_list(&fw, FW_PT_PRE_SCORE), "");
    assert_string_equal(point_list(&fw, FW_PT_FILTER), V1_FILTERS);
    framework_t *f = framework_new(&fw);
    assert_non_null(f);
    assert_int_equal(framework_score_weight(f, "TaintToleration"), 0);
    assert_true(framework_filter_enabled(f, "TaintToleration"));
    framework_free(f);
    config_free(&c);
}

/* NodeResourcesFit MostAllocated with per-resource weights (the kube docs'
 * "Resource Bin Packing" shape, with nvidia.com/gpu): the score becomes
 * ai-scheduler's MostAllocated scorer, the same weighted average
 * (sum w_r * requested_r * 100 / allocatable_r) / sum w_r; also a
 * per-profile and a top-level percentageOfNodesToScore. */
static void test_v1_fit_most_allocated(void **st)
{
    sched_config_t c;
    const char *yaml = V1 "percentageOfNodesToScore: 30\n"
                          "profiles:\n"
                          "- schedulerName: bin-packing\n"
                          "  percentageOfNodesToScore: 50\n"
                          "  pluginConfig:\n"
                          "  - args:\n"
                          "      apiVersion: kubescheduler.config.k8s.io/v1\n"
                          "      kind: NodeResourcesFitArgs\n"
                          "      scoringStrategy:\n"
                          "        resources:\n"
                          "        - name: cpu\n"
                          "          weight: 1\n"
                          "        - name: memory\n"
                          "          weight: 1\n"
                          "        - name: nvidia.com/gpu\n"
                          "          weight: 3\n"
                          "        type: MostAllocated\n"
                          "    name: NodeResourcesFit\n"
                          "- schedulerName: spread\n";
    load_ok(&c, yaml);
    fw_config_t fw;
    assert_string_equal(config_profile_fw(&c, 0, &fw), "bin-packing");
    assert_int_equal(fw.strategy, SCORE_MOST_ALLOCATED);
    assert_int_equal(fw.percentage_of_nodes_to_score, 50);
    assert_int_equal(fw.nres_weights, 3);
    assert_res(&fw, 0, "cpu", 1);
    assert_res(&fw, 1, "memory", 1);
    assert_res(&fw, 2, "nvidia.com/gpu", 3);
    assert_string_equal(point_list(&fw, FW_PT_SCORE),
                        "TaintToleration:3,NodeAffinity:2,NodeResourcesMostAllocated:1,PodTopologySpread:2,"
                        "InterPodAffinity:2,GpuSharing:5,NodeResourcesBalancedAllocation:1,ImageLocality:1");
    framework_t *f = framework_new(&fw);
    assert_int_equal(framework_score_weight(f, "NodeResourcesMostAllocated"), 1);
    assert_int_equal(framework_score_weight(f, "NodeResourcesLeastAllocated"), 0);
    framework_free(f);
    assert_string_equal(config_profile_fw(&c, 1, &fw), "spread");
    assert_int_equal(fw.strategy, SCORE_LEAST_ALLOCATED);
    assert_int_equal(fw.percentage_of_nodes_to_score, 30);
    assert_int_equal(fw.nres_weights, 2);
    config_free(&c);
}

/* PodTopologySpread cluster defaults as the kube docs write them
 * (defaultingType: List); and the other args kube defaults to, given
 * explicitly, load. */
static void test_v1_plugin_args(void **st)
{
    sched_config_t c;
    const char *yaml = V1 "profiles:\n"
                          "  - schedulerName: default-scheduler\n"
                          "    pluginConfig:\n"
                          "      - name: PodTopologySpread\n"
                          "        args:\n"
                          "          defaultConstraints:\n"
                          "            - maxSkew: 1\n"
                          "              topologyKey: topology.kubernetes.io/zone\n"
                          "              whenUnsatisfiable: ScheduleAnyway\n"
                          "          defaultingType: List\n"
                          "      - name: InterPodAffinity\n"
                          "        args: {hardPodAffinityWeight: 1}\n"
                          "      - name: NodeResourcesBalancedAllocation\n"
                          "        args: {resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]}\n"
                          "      - name: DefaultPreemption\n"
                          "        args: {minCandidateNodesPercentage: 10, minCandidateNodesAbsolute: 100}\n"
                          "      - name: VolumeBinding\n"
                          "        args: {bindTimeoutSeconds: 300}\n"
                          "      - name: NodeAffinity\n"
                          "        args: {}\n";
    load_ok(&c, yaml);
    fw_config_t fw;
    config_profile_fw(&c, 0, &fw);
    assert_int_equal(fw.spread_list_defaulting, 1);
    assert_int_equal(fw.nspread_defaults, 1);
    assert_int_equal(fw.spread_defaults[0].max_skew, 1);
    assert_string_equal(fw.spread_defaults[0].topology_key, "topology.kubernetes.io/zone");
    assert_int_equal(c.sched.volume_bind_timeout_s, 300);
    config_free(&c);
}

static void test_v1_errors(void **st)
{
    /* Removed plugins: kube 1.35 refuses them ("does not exist"). */
    expect_error(V1 "profiles:\n  - plugins:\n      multiPoint:\n        enabled: [{name: SelectorSpread}]\n",
                 "cfg.yaml:6: plugins.multiPoint.enabled: plugin \"SelectorSpread\" was removed from kube-scheduler "
                 "and kubescheduler.config.k8s.io/v1 refuses it; use PodTopologySpread");
    expect_error(V1 "profiles:\n  - plugins:\n      score:\n        enabled: [{name: NodeResourcesMostAllocated}]\n",
                 "plugin \"NodeResourcesMostAllocated\" was removed from kube-scheduler and "
                 "kubescheduler.config.k8s.io/v1 refuses it; use NodeResourcesFit args scoringStrategy.type "
                 "MostAllocated");
    expect_error(V1 "profiles:\n  - plugins:\n      score:\n        disabled: [{name: NodePreferAvoidPods}]\n",
                 "plugin \"NodePreferAvoidPods\" was removed");
    expect_error(V1 "profiles:\n  - pluginConfig:\n      - name: NodeLabel\n        args: {}\n",
                 "cfg.yaml:5: pluginConfig: plugin \"NodeLabel\" was removed");
    expect_error(V1 "profiles:\n  - plugins:\n      multiPoint:\n        enabled: [{name: MyPlugin}]\n",
                 "cfg.yaml:6: plugins.multiPoint.enabled: plugin \"MyPlugin\" does not exist");
    expect_error(V1 "profiles:\n  - plugins:\n      filter:\n        enabled: [{name: ImageLocality}]\n",
                 "plugins.filter.enabled: plugin \"ImageLocality\" does not extend filter");
    /* Strict decoding: v1beta1's healthzBindAddress is gone in v1. */
    expect_error(V1 "healthzBindAddress: 0.0.0.0:10251\n",
                 "cfg.yaml:3: unknown field \"healthzBindAddress\" in KubeSchedulerConfiguration");
    expect_error(V1 "profiles:\n  - schedulerName: a\n    plugin: {}\n",
                 "cfg.yaml:5: unknown field \"plugin\" in profiles");
    expect_error(V1 "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n        args: {scoringStrategy: "
                    "{type: MostAllocated, resource: []}}\n",
                 "unknown field \"resource\" in NodeResourcesFit args scoringStrategy");
    /* v1's PodTopologySpread defaultingType is System unless set. */
    expect_error(V1 "profiles:\n  - pluginConfig:\n      - name: PodTopologySpread\n        args:\n"
                    "          defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: "
                    "ScheduleAnyway}]\n",
                 "cfg.yaml:7: PodTopologySpread: defaultConstraints must be empty when defaultingType is System");
    expect_error(V1
                 "profiles:\n  - pluginConfig:\n      - name: NodeAffinity\n        args:\n          addedAffinity:\n"
                 "            requiredDuringSchedulingIgnoredDuringExecution:\n              nodeSelectorTerms: []\n",
                 "cfg.yaml:8: NodeAffinity.addedAffinity is not supported by ai-scheduler");
    expect_error(V1 "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n        args:\n"
                    "          scoringStrategy:\n            type: RequestedToCapacityRatio\n",
                 "cfg.yaml:8: NodeResourcesFit: scoringStrategy.type RequestedToCapacityRatio is not supported");
    expect_error(V1 "profiles:\n  - pluginConfig:\n      - name: NodeResourcesBalancedAllocation\n        args:\n"
                    "          resources: [{name: cpu, weight: 1}, {name: nvidia.com/gpu, weight: 1}]\n",
                 "cfg.yaml:7: NodeResourcesBalancedAllocation.resources: ai-scheduler balances cpu and memory only");
    expect_error(
        V1 "profiles:\n  - pluginConfig:\n      - name: InterPodAffinity\n        args: {hardPodAffinityWeight: 5}\n",
        "InterPodAffinity.hardPodAffinityWeight: 5 is not supported by ai-scheduler (1 only");
    expect_error(V1 "profiles:\n  - pluginConfig:\n      - name: ImageLocality\n        args: {foo: 1}\n",
                 "ImageLocality takes no args (unknown field \"foo\")");
    expect_error(V1 "podMaxBackoffSeconds: 20\n",
                 "cfg.yaml:3: podMaxBackoffSeconds: 20 is not supported by ai-scheduler");
    expect_error(V1 "extenders:\n  - urlPrefix: http://x\n", "cfg.yaml:4: extenders are not supported");
    expect_error(V1 "profiles:\n  - plugins:\n      preEnqueue:\n        disabled: [{name: SchedulingGates}]\n",
                 "SchedulingGates cannot be disabled");
    /* Without a queue-sort plugin kube's framework refuses the profile. */
    expect_error(V1 "profiles:\n  - plugins:\n      multiPoint:\n        disabled: [{name: '*'}]\n",
                 "queueSort: exactly one plugin");
    expect_error(V1
                 "profiles:\n  - plugins:\n      multiPoint:\n        enabled: [{name: MyPlugin}, {name: MyPlugin}]\n",
                 "does not exist");
    expect_error(V1 "profiles:\n  - plugins:\n      filter:\n        enabled: [{name: NodeName}, {name: NodeName}]\n",
                 "cfg.yaml:4: profiles: plugins.filter: plugin \"NodeName\" is enabled twice");
    expect_error("apiVersion: kubescheduler.config.k8s.io/v1beta2\nkind: KubeSchedulerConfiguration\n",
                 "cfg.yaml:1: apiVersion kubescheduler.config.k8s.io/v1beta2 is not read by ai-scheduler");
    expect_error("apiVersion: kubescheduler.config.k8s.io/v1\nkind: AiSchedulerConfiguration\n",
                 "cfg.yaml:2: kind is \"AiSchedulerConfiguration\", expected \"KubeSchedulerConfiguration\"");
    expect_error(V1 "profiles:\n  - {}\n  - {}\n", "profiles: schedulerName \"default-scheduler\" is used twice");
}

/* v1beta3 has v1's shape and defaults: it loads the same. */
static void test_v1beta3(void **st)
{
    sched_config_t c;
    load_ok(&c, "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n"
                "profiles:\n  - schedulerName: b3\n");
    fw_config_t fw;
    assert_string_equal(config_profile_fw(&c, 0, &fw), "b3");
    assert_string_equal(point_list(&fw, FW_PT_FILTER), V1_FILTERS);
    config_free(&c);
}

/* ---- kubescheduler.config.k8s.io/v1beta1 files (kube 1.20-1.21) -------- */

#define V1BETA1 "apiVersion: kubescheduler.config.k8s.io/v1beta1\nkind: KubeSchedulerConfiguration\n"

/* The profiles of kube 1.20's v1beta1 docs: the default one, one with no
 * scoring, one bin-packing GPUs; their shape is the own format's. */
#define V1BETA1_PROFILES                                                                                               \
    "profiles:\n"                                                                                                      \
    "  - schedulerName: default-scheduler\n"                                                                           \
    "  - schedulerName: no-scoring-scheduler\n"                                                                        \
    "    plugins:\n"                                                                                                   \
    "      preScore:\n"                                                                                                \
    "        disabled:\n"                                                                                              \
    "          - name: '*'\n"                                                                                          \
    "      score:\n"                                                                                                   \
    "        disabled:\n"                                                                                              \
    "          - name: '*'\n"                                                                                          \
    "  - schedulerName: bin-packing\n"                                                                                 \
    "    plugins:\n"                                                                                                   \
    "      score:\n"                                                                                                   \
    "        disabled:\n"                                                                                              \
    "          - name: NodeResourcesLeastAllocated\n"                                                                  \
    "        enabled:\n"                                                                                               \
    "          - name: NodeResourcesMostAllocated\n"                                                                   \
    "            weight: 2\n"                                                                                          \
    "    pluginConfig:\n"                                                                                              \
    "      - name: NodeResourcesMostAllocated\n"                                                                       \
    "        args:\n"                                                                                                  \
    "          resources:\n"                                                                                           \
    "            - name: cpu\n"                                                                                        \
    "              weight: 1\n"                                                                                        \
    "            - name: memory\n"                                                                                     \
    "              weight: 1\n"                                                                                        \
    "            - name: nvidia.com/gpu\n"                                                                             \
    "              weight: 3\n"                                                                                        \
    "      - name: PodTopologySpread\n"                                                                                \
    "        args:\n"                                                                                                  \
    "          defaultConstraints:\n"                                                                                  \
    "            - maxSkew: 1\n"                                                                                       \
    "              topologyKey: topology.kubernetes.io/zone\n"                                                         \
    "              whenUnsatisfiable: ScheduleAnyway\n"

static const char V1BETA1_FILE[] =
    V1BETA1 "clientConnection:\n  kubeconfig: /etc/kubernetes/scheduler.conf\n  qps: 100\n  burst: 200\n"
            "leaderElection:\n  leaderElect: true\n  resourceNamespace: kube-system\n  resourceName: kube-scheduler\n"
            "  leaseDuration: 15s\n  resourceLock: leases\n"
            "healthzBindAddress: 0.0.0.0:10251\nmetricsBindAddress: 0.0.0.0:10251\n"
            "enableProfiling: true\nenableContentionProfiling: false\npercentageOfNodesToScore: 50\n"
            "podInitialBackoffSeconds: 1\npodMaxBackoffSeconds: 10\nextenders: []\n" V1BETA1_PROFILES;

/* The same configuration in ai-scheduler's own format: v1beta1's
 * LeastAllocated over cpu and memory said at the top. */
static const char V1BETA1_OWN[] = HDR "schedulerName: default-scheduler\n"
                                      "scoring:\n  strategy: LeastAllocated\n  percentageOfNodesToScore: 50\n"
                                      "  resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]\n"
                                      "clientConnection:\n  kubeconfig: /etc/kubernetes/scheduler.conf\n"
                                      "  qps: 100\n  burst: 200\n" V1BETA1_PROFILES;

/* Two effective frameworks are the same (op lines aside). */
static void assert_same_fw(const fw_config_t *a, const fw_config_t *b)
{
    assert_int_equal(a->nplugin_ops, b->nplugin_ops);
    for (int i = 0; i < a->nplugin_ops; i++) {
        assert_string_equal(a->plugin_ops[i].name, b->plugin_ops[i].name);
        assert_int_equal(a->plugin_ops[i].point, b->plugin_ops[i].point);
        assert_int_equal(a->plugin_ops[i].enable, b->plugin_ops[i].enable);
        assert_int_equal(a->plugin_ops[i].weight, b->plugin_ops[i].weight);
    }
    assert_int_equal(a->strategy, b->strategy);
    assert_int_equal(a->nres_weights, b->nres_weights);
    for (int i = 0; i < a->nres_weights; i++)
        assert_res(b, i, a->res_weights[i].name, a->res_weights[i].weight);
    assert_int_equal(a->percentage_of_nodes_to_score, b->percentage_of_nodes_to_score);
    assert_int_equal(a->v1_resource_scores, b->v1_resource_scores);
    assert_int_equal(a->spread_list_defaulting, b->spread_list_defaulting);
    assert_int_equal(a->nspread_defaults, b->nspread_defaults);
    assert_int_equal(a->weight_resources, b->weight_resources);
    assert_int_equal(a->weight_balanced, b->weight_balanced);
}

static void assert_op(const fw_config_t *fw, int i, int point, int enable, const char *name, int weight)
{
    assert_true(i < fw->nplugin_ops);
    assert_int_equal(fw->plugin_ops[i].point, point);
    assert_int_equal(fw->plugin_ops[i].enable, enable);
    assert_string_equal(fw->plugin_ops[i].name, name);
    assert_int_equal(fw->plugin_ops[i].weight, weight);
}

/* v1beta1's resource scorer defaults: LeastAllocated over cpu 1, memory 1. */
static void assert_least_cpu_memory(const fw_config_t *fw)
{
    assert_int_equal(fw->strategy, SCORE_LEAST_ALLOCATED);
    assert_int_equal(fw->nres_weights, 2);
    assert_res(fw, 0, "cpu", 1);
    assert_res(fw, 1, "memory", 1);
}

static void test_v1beta1_file(void **st)
{
    sched_config_t c, own;
    load_ok(&c, V1BETA1_FILE);
    load_ok(&own, V1BETA1_OWN);
    assert_int_equal(c.nprofiles, 3);
    assert_string_equal(c.leader.lease_name, "kube-scheduler");
    assert_string_equal(c.leader.lease_namespace, "kube-system");
    assert_string_equal(c.kubeconfig, "/etc/kubernetes/scheduler.conf");
    assert_int_equal(c.burst, 200);
    assert_string_equal(c.metrics_bind_address, "0.0.0.0");
    assert_int_equal(c.metrics_port, 10251);
    fw_config_t fw, ofw;
    /* default-scheduler: v1.20's set, NodeResourcesLeastAllocated over cpu 1
     * + memory 1, System spreading, v1.20's resource maths. */
    assert_string_equal(config_profile_fw(&c, 0, &fw), "default-scheduler");
    assert_int_equal(fw.nplugin_ops, 0);
    assert_least_cpu_memory(&fw);
    assert_int_equal(fw.percentage_of_nodes_to_score, 50);
    assert_int_equal(fw.spread_list_defaulting, 0);
    assert_int_equal(fw.v1_resource_scores, 0);
    assert_string_equal(config_profile_fw(&c, 1, &fw), "no-scoring-scheduler");
    assert_int_equal(fw.nplugin_ops, 2);
    assert_op(&fw, 0, FW_PT_PRE_SCORE, 0, "*", 0);
    assert_op(&fw, 1, FW_PT_SCORE, 0, "*", 0);
    assert_string_equal(config_profile_fw(&c, 2, &fw), "bin-packing");
    assert_int_equal(fw.nplugin_ops, 2);
    assert_op(&fw, 0, FW_PT_SCORE, 0, "NodeResourcesLeastAllocated", 0);
    assert_op(&fw, 1, FW_PT_SCORE, 1, "NodeResourcesMostAllocated", 2);
    assert_int_equal(fw.nres_weights, 3);
    assert_res(&fw, 2, "nvidia.com/gpu", 3);
    /* v1beta1 defaulting: constraints given, so List. */
    assert_int_equal(fw.spread_list_defaulting, 1);
    assert_int_equal(fw.nspread_defaults, 1);
    assert_string_equal(fw.spread_defaults[0].topology_key, "topology.kubernetes.io/zone");
    assert_int_equal(config_nprofiles(&own), 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(config_profile_fw(&c, i, &fw), config_profile_fw(&own, i, &ofw));
        assert_same_fw(&fw, &ofw);
    }
    config_free(&own);
    config_free(&c);
}

/* No profiles: kube's one default-scheduler with v1beta1's defaults; the
 * args v1.20 has beyond the own format's are read with its fields. */
static void test_v1beta1_defaults_and_args(void **st)
{
    sched_config_t c;
    fw_config_t fw;
    load_ok(&c, V1BETA1);
    assert_int_equal(config_nprofiles(&c), 1);
    assert_string_equal(config_profile_fw(&c, 0, &fw), "default-scheduler");
    assert_least_cpu_memory(&fw);
    assert_int_equal(c.metrics_port, 10261); /* ai-scheduler's, not kube's 10251 */
    config_free(&c);
    load_ok(&c, V1BETA1 "metricsBindAddress: '[::1]:9090'\nparallelism: 16\n"
                        "profiles:\n  - pluginConfig:\n"
                        "      - {name: InterPodAffinity, args: {hardPodAffinityWeight: 1}}\n"
                        "      - {name: NodeResourcesFit, args: {ignoredResources: []}}\n"
                        "      - {name: DefaultPreemption, args: {minCandidateNodesPercentage: 10}}\n"
                        "      - {name: NodeAffinity, args: {addedAffinity: {}}}\n"
                        "      - {name: VolumeBinding, args: {bindTimeoutSeconds: 300}}\n");
    assert_string_equal(config_profile_fw(&c, 0, &fw), "default-scheduler");
    assert_string_equal(c.metrics_bind_address, "::1");
    assert_int_equal(c.metrics_port, 9090);
    assert_int_equal(c.sched.volume_bind_timeout_s, 300);
    config_free(&c);
}

static void test_v1beta1_errors(void **st)
{
    expect_error(V1BETA1 "algorithmSource: {}\n",
                 "cfg.yaml:3: unknown field \"algorithmSource\" in KubeSchedulerConfiguration");
    expect_error(V1BETA1 "delayCacheUntilActive: true\n", "unknown field \"delayCacheUntilActive\"");
    expect_error(V1BETA1 "profiles:\n  - schedulerName: a\n    plugin: {}\n",
                 "cfg.yaml:5: unknown key \"plugin\" in profiles");
    expect_error(V1BETA1 "profiles:\n  - plugins:\n      score:\n        enabled: [{name: NodeResourcesFitt}]\n",
                 "cfg.yaml:6: plugins.score: unknown plugin \"NodeResourcesFitt\"");
    expect_error(V1BETA1 "profiles:\n  - plugins:\n      filter:\n        enabled: [{name: ImageLocality}]\n",
                 "plugins.filter: plugin \"ImageLocality\" does not extend filter");
    expect_error(V1BETA1 "profiles:\n  - pluginConfig:\n      - {name: SelectorSpread, args: {}}\n",
                 "cfg.yaml:5: pluginConfig: plugin \"SelectorSpread\" of kube-scheduler v1.20 is not supported");
    expect_error(V1BETA1 "profiles:\n  - pluginConfig:\n"
                         "      - {name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated}}}\n",
                 "unknown field \"scoringStrategy\" in NodeResourcesFit args");
    expect_error(V1BETA1 "profiles:\n  - pluginConfig:\n"
                         "      - {name: InterPodAffinity, args: {hardPodAffinityWeight: 5}}\n",
                 "InterPodAffinity.hardPodAffinityWeight: 5 is not supported");
    expect_error(V1BETA1 "profiles:\n  - schedulerName: a\n  - plugins: {}\n",
                 "cfg.yaml:5: profiles: schedulerName is required when there are several");
    expect_error(V1BETA1 "healthzBindAddress: 0.0.0.0:10251\nmetricsBindAddress: 0.0.0.0:10259\n",
                 "cfg.yaml:3: healthzBindAddress must equal metricsBindAddress");
    expect_error(V1BETA1 "metricsBindAddress: 10251\n", "metricsBindAddress: \"10251\" is not IP:PORT");
    expect_error(V1BETA1 "extenders:\n  - urlPrefix: http://x\n", "extenders are not supported");
    expect_error("apiVersion: kubescheduler.config.k8s.io/v1alpha2\nkind: KubeSchedulerConfiguration\n",
                 "v1beta3 and v1beta1 also work");
}

static void test_help(void **st)
{
    sched_config_t c;
    char err[256];
    config_default(&c);
    char *argv[] = { "x", "--bind-workers=3", "-h", NULL };
    assert_int_equal(config_parse_args(&c, 3, argv, err, sizeof err), CONFIG_HELP);
    config_free(&c);
    FILE *f = tmpfile();
    assert_non_null(f);
    config_usage(f);
    long n = ftell(f);
    assert_true(n > 200);
    rewind(f);
    char *buf = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    assert_non_null(strstr(buf, "--leader-elect-resource-namespace"));
    assert_non_null(strstr(buf, "--config FILE"));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_knobs_are_scheduler_opts),
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_full_file),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_flags_override_file),
        cmocka_unit_test(test_serving),
        cmocka_unit_test(test_flag_errors),
        cmocka_unit_test(test_seed),
        cmocka_unit_test(test_bad_file_via_flag),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_profiles),
        cmocka_unit_test(test_profile_errors),
        cmocka_unit_test(test_v1_defaults),
        cmocka_unit_test(test_v1_multipoint),
        cmocka_unit_test(test_v1_two_profiles),
        cmocka_unit_test(test_v1_fit_most_allocated),
        cmocka_unit_test(test_v1_plugin_args),
        cmocka_unit_test(test_v1_errors),
        cmocka_unit_test(test_v1beta3),
        cmocka_unit_test(test_v1beta1_file),
        cmocka_unit_test(test_v1beta1_defaults_and_args),
        cmocka_unit_test(test_v1beta1_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
