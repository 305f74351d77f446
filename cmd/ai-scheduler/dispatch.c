/* dispatch.c -- `ai-scheduler dispatch --kubeconfig HUB`: runs the
 * MultiClusterJob controller (pkg/dispatch) against a hub cluster, with the
 * scheduler's leader election, /metrics, /healthz and /readyz. Like the
 * scheduler it exits when it loses the lease; its supervisor restarts it and
 * the new leader continues from each job's .status. */
#include "dispatch.h"
#include "daemon.h"
#include "dashboard/assets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch/controller.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "leader/leader.h"
#include "server/auth.h"
#include "server/http.h"
#include "server/metrics.h"
#include "server/tls.h"
#include "util/log.h"
#include "util/util.h"

typedef struct dopts {
    const char *kubeconfig, *lease_name, *lease_ns, *bind;
    const char *tls_cert, *tls_key, *client_ca, *always_allow; /* serving, as the scheduler's flags */
    int leader, port, member_timeout, workers, verbosity, insecure, plain_http;
    double poll;
} dopts_t;

typedef struct dstate {
    dsp_controller_t *ctl; /* atomic */
    leader_t *le;
    int standby; /* atomic */
} dstate_t;

/* GET /api/v1/multicluster (the dashboard's page of this controller):
 * every MultiClusterJob with its members' states; 503 until it leads. It
 * has no change counter: "generation" is 0 and the page refetches as it
 * polls. */
static int multicluster_route(void *ud, const char *path, const char *query, char **body, const char **ctype)
{
    (void)query;
    dstate_t *st = ud;
    dsp_controller_t *ctl = __atomic_load_n(&st->ctl, __ATOMIC_ACQUIRE);
    json_t *doc;
    int code = 200;
    if (strcmp(path, "/api/v1/multicluster") != 0) {
        doc = http_status_doc(404, "NotFound", "expected /api/v1/multicluster");
        code = 404;
    } else if (!ctl) {
        doc = http_status_doc(503, "ServiceUnavailable", "the dispatch controller is not leading (or not started) yet");
        code = 503;
    } else {
        doc = dsp_controller_dashboard(ctl);
        json_object_set_new(doc, "generation", json_integer(0));
        json_object_set_new(doc, "now", json_integer((json_int_t)util_wall_ms()));
    }
    *body = json_dumps(doc, JSON_COMPACT);
    *ctype = "application/json";
    json_decref(doc);
    return code;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ai-scheduler dispatch [flags]\n"
               "Runs the MultiClusterJob controller (multiclusterjobs.resource.aibee.cn) against a hub cluster.\n"
               "  --kubeconfig FILE                   the hub ($KUBECONFIG, ~/.kube/config, in-cluster)\n"
               "  --leader-elect BOOL                 one active replica (default true)\n"
               "  --leader-elect-resource-name NAME   the Lease (default ai-scheduler-dispatch)\n"
               "  --leader-elect-resource-namespace NS (default kube-system)\n"
               "  --metrics-bind-address ADDR         (default 0.0.0.0)\n"
               "  --metrics-port PORT                 /metrics, /healthz, /readyz; 0 turns it off (default 10262)\n"
               "  --tls-cert-file FILE, --tls-private-key-file FILE\n"
               "                                      the HTTPS port's pair (default: self-signed at start)\n"
               "  --client-ca-file FILE               client certificates from these CAs authenticate\n"
               "  --plain-http                        serve plain HTTP (loopback tests, TLS-terminating proxy)\n"
               "  --authorization-always-allow-paths PATHS\n"
               "                                      served without credentials (/healthz,/readyz,/livez)\n"
               "  --poll-interval SECONDS             how often racing members are looked at (default 1)\n"
               "  --member-timeout SECONDS            per request to a member cluster (default 10)\n"
               "  --workers N                         jobs reconciled at once (default 4, at most 64)\n"
               "  --insecure-skip-tls-verify          do not verify the hub's certificate (warned; tests only)\n"
               "  -v N                                log verbosity\n");
}

static int parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "1"))
        *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "0"))
        *out = 0;
    else
        return -1;
    return 0;
}

static int parse_num(const char *v, double lo, double hi, double *out)
{
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= lo && d <= hi))
        return -1;
    *out = d;
    return 0;
}

/* 0, 1 for --help, 2 on a bad flag (message printed). */
static int parse(dopts_t *o, int argc, char **argv)
{
    *o = (dopts_t){ .lease_name = "ai-scheduler-dispatch",
                    .lease_ns = "kube-system",
                    .bind = "0.0.0.0",
                    .leader = 1,
                    .port = 10262,
                    .member_timeout = 10,
                    .workers = DSP_DEFAULT_WORKERS,
                    .poll = 1,
                    .always_allow = HTTP_DEFAULT_ALWAYS_ALLOW };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v;
        int missing = 0;
        double d;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--leader-elect")) { /* bare flag: true */
            o->leader = 1;
            continue;
        }
        if (!strcmp(a, "--insecure-skip-tls-verify") || !strcmp(a, "--insecure")) {
            o->insecure = 1;
            continue;
        }
        if (!strcmp(a, "--plain-http") || !strcmp(a, "--plain-http=true")) {
            o->plain_http = 1;
            continue;
        }
        if (!strcmp(a, "--plain-http=false")) {
            o->plain_http = 0;
            continue;
        }
        if ((v = util_opt_value(argc, argv, &i, "--authorization-always-allow-paths", NULL, &missing)) || missing) {
            if (missing) {
                fprintf(stderr, "ai-scheduler dispatch: %s needs a value\n", a);
                return 2;
            }
            o->always_allow = v; /* "" is a value here: nothing always allowed */
            continue;
        }
        if ((v = util_opt_value(argc, argv, &i, "--kubeconfig", NULL, &missing)) || missing) {
            o->kubeconfig = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--leader-elect", NULL, &missing)) || missing) {
            if (v && parse_bool(v, &o->leader) < 0)
                goto bad;
        } else if ((v = util_opt_value(argc, argv, &i, "--leader-elect-resource-name", NULL, &missing)) || missing) {
            o->lease_name = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--leader-elect-resource-namespace", NULL, &missing)) ||
                   missing) {
            o->lease_ns = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--metrics-bind-address", NULL, &missing)) || missing) {
            o->bind = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--tls-cert-file", NULL, &missing)) || missing) {
            o->tls_cert = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--tls-private-key-file", NULL, &missing)) || missing) {
            o->tls_key = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--client-ca-file", NULL, &missing)) || missing) {
            o->client_ca = v;
        } else if ((v = util_opt_value(argc, argv, &i, "--metrics-port", NULL, &missing)) || missing) {
            if (v && parse_num(v, 0, 65535, &d) < 0)
                goto bad;
            o->port = v ? (int)d : 0;
        } else if ((v = util_opt_value(argc, argv, &i, "--poll-interval", NULL, &missing)) || missing) {
            if (v && parse_num(v, 0.05, 3600, &d) < 0)
                goto bad;
            o->poll = v ? d : 1;
        } else if ((v = util_opt_value(argc, argv, &i, "--member-timeout", NULL, &missing)) || missing) {
            if (v && parse_num(v, 1, 600, &d) < 0)
                goto bad;
            o->member_timeout = v ? (int)d : 10;
        } else if ((v = util_opt_value(argc, argv, &i, "--workers", NULL, &missing)) || missing) {
            if (v && parse_num(v, 1, DSP_MAX_WORKERS, &d) < 0)
                goto bad;
            o->workers = v ? (int)d : DSP_DEFAULT_WORKERS;
        } else if ((v = util_opt_value(argc, argv, &i, "-v", NULL, &missing)) || missing ||
                   (v = util_opt_value(argc, argv, &i, "--v", NULL, &missing)) || missing) {
            if (v && parse_num(v, 0, 10, &d) < 0)
                goto bad;
            o->verbosity = v ? (int)d : 0;
        } else {
            fprintf(stderr, "ai-scheduler dispatch: unknown flag \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
        if (missing || !v || !*v) {
            fprintf(stderr, "ai-scheduler dispatch: %s needs a value\n", a);
            return 2;
        }
        continue;
    bad:
        fprintf(stderr, "ai-scheduler dispatch: bad value for %s: \"%s\"\n", a, v ? v : "");
        return 2;
    }
    return 0;
}

static int ready(void *ud, const char **why)
{
    dstate_t *s = ud;
    if (__atomic_load_n(&s->standby, __ATOMIC_ACQUIRE))
        return 1; /* a healthy follower */
    dsp_controller_t *c = __atomic_load_n(&s->ctl, __ATOMIC_ACQUIRE);
    if (c && dsp_controller_synced(c))
        return 1;
    *why = "MultiClusterJobs not listed yet";
    return 0;
}

/* /metrics: the job counts, from whichever controller is running. */
static void collect(metrics_t *r, void *ud)
{
    (void)r;
    dstate_t *s = ud;
    dsp_controller_collect(__atomic_load_n(&s->ctl, __ATOMIC_ACQUIRE));
}

static int lease_valid(void *ud)
{
    return leader_holds_lease(ud);
}

int dispatch_main(int argc, char **argv, const volatile int *stop)
{
    dopts_t o;
    int rc = parse(&o, argc, argv);
    if (rc)
        return rc == 1 ? 0 : 2;
    log_set_verbosity(o.verbosity);
    char err[512], id[320], host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) < 0 || !host[0])
        strcpy(host, "localhost");
    host[sizeof host - 1] = '\0';
    snprintf(id, sizeof id, "%s_%ld", host, (long)getpid());

    kube_config_t cfg;
    if (kube_config_load(&cfg, o.kubeconfig, err, sizeof err) != 0) {
        fprintf(stderr, "ai-scheduler dispatch: %s\n", err);
        return 1;
    }
    if (o.insecure)
        cfg.insecure = 1; /* kube_client_new says so, loudly */
    kube_client_opts_t ko = { .qps = 50, .burst = 100, .timeout_s = 30, .user_agent = "ai-scheduler/dispatch" };
    kube_client_t *kc = kube_client_new(&cfg, &ko, err, sizeof err), *kc_le = NULL;
    int exit_code = 1;
    metrics_t *reg = metrics_new();
    dstate_t st = { 0 };
    metrics_on_collect(reg, collect, &st);
    http_server_t *http = NULL;
    auth_t *auth = NULL;
    tls_serving_t serving = { 0 };
    dsp_controller_t *ctl = NULL;
    if (!kc) {
        fprintf(stderr, "ai-scheduler dispatch: %s\n", err);
        goto out;
    }
    if (o.port > 0) {
        /* The same protection as the scheduler's port: the hub's API server
         * reviews tokens and access (/metrics: get on the path). */
        auth = auth_new(&cfg, &(auth_opts_t){ .user_agent = "ai-scheduler/dispatch-auth" }, err, sizeof err);
        if (!auth || tls_serving_setup(o.tls_cert, o.tls_key, o.client_ca, o.plain_http, o.bind, &serving, err,
                                       sizeof err) != 0) {
            fprintf(stderr, "ai-scheduler dispatch: %s\n", err);
            goto out;
        }
        auth_metrics(auth, reg);
        http_server_opts_t ho = { .bind_address = o.bind,
                                  .port = o.port,
                                  .metrics = reg,
                                  .ready = ready,
                                  .ready_ud = &st,
                                  .auth = auth,
                                  .always_allow = o.always_allow };
        http_opts_tls(&ho, &serving);
        http = http_server_start(&ho, err, sizeof err);
        if (!http) {
            fprintf(stderr, "ai-scheduler dispatch: metrics server: %s\n", err);
            goto out;
        }
        http_route_t mr = { .prefix = "/api/v1/multicluster",
                            .fn = multicluster_route,
                            .ud = &st,
                            .verb = "list",
                            .group = DSP_GROUP,
                            .resource = "multiclusterjobs" };
        if (http_server_route(http, &mr) != 0)
            LOG_W("dispatch: the /api/v1/multicluster route could not be added");
        if (dashboard_ui_add(http) != 0)
            LOG_W("http: the /ui/ route could not be added");
    }
    if (daemon_preflight(kc, cfg.server, "/version", stop) != 0) {
        exit_code = *stop ? 0 : 1;
        goto out;
    }
    LOG_I("dispatch: hub %s (from %s)", cfg.server, cfg.source ? cfg.source : "?");
    if (o.leader) {
        kube_client_opts_t lo = { .timeout_s = 8, .user_agent = "ai-scheduler/dispatch-leader-election" };
        kc_le = kube_client_new(&cfg, &lo, err, sizeof err);
        leader_opts_t lopts = { .lease_name = o.lease_name,
                                .lease_namespace = o.lease_ns,
                                .identity = id,
                                .lease_duration_s = 15,
                                .renew_deadline_s = 10,
                                .retry_period_s = 2 };
        st.le = kc_le ? leader_new(kc_le, &lopts, err, sizeof err) : NULL;
        if (!st.le || leader_start(st.le, err, sizeof err) != 0) {
            fprintf(stderr, "ai-scheduler dispatch: leader election: %s\n", err);
            goto out;
        }
        LOG_I("dispatch: waiting for lease %s/%s as %s", o.lease_ns, o.lease_name, id);
        __atomic_store_n(&st.standby, 1, __ATOMIC_RELEASE);
        int r = leader_wait_until_leading(st.le, -1, stop);
        __atomic_store_n(&st.standby, 0, __ATOMIC_RELEASE);
        if (r != 1) {
            exit_code = *stop ? 0 : 1;
            goto out;
        }
        LOG_I("dispatch: leading");
    }
    dsp_opts_t dop = { .poll_s = o.poll,
                       .member_timeout_s = o.member_timeout,
                       .workers = o.workers,
                       .identity = id,
                       .metrics = reg,
                       .may_act = st.le ? lease_valid : NULL,
                       .may_act_ud = st.le };
    ctl = dsp_controller_new(kc, &dop, err, sizeof err);
    if (!ctl || dsp_controller_start(ctl, err, sizeof err) != 0) {
        fprintf(stderr, "ai-scheduler dispatch: %s\n", err);
        goto out;
    }
    __atomic_store_n(&st.ctl, ctl, __ATOMIC_RELEASE);
    LOG_I("dispatch: watching MultiClusterJobs");
    while (!*stop && !(st.le && !leader_holds_lease(st.le)))
        util_sleep_ms(100);
    if (st.le && !leader_holds_lease(st.le)) {
        LOG_E("dispatch: leadership lost; exiting");
        exit_code = 1;
    } else {
        exit_code = 0;
    }
out:
    __atomic_store_n(&st.ctl, NULL, __ATOMIC_RELEASE);
    dsp_controller_stop(ctl);
    if (st.le) {
        leader_stop(st.le);
        leader_free(st.le);
    }
    http_server_stop(http);
    auth_free(auth);
    tls_serving_free(&serving);
    dsp_controller_free(ctl);
    kube_client_free(kc_le);
    kube_client_free(kc);
    metrics_free(reg);
    kube_config_free(&cfg);
    return exit_code;
}
