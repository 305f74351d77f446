/* daemon.c -- connect, elect, schedule, serve /metrics, shut down cleanly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "dashboard/assets.h"
#include "dashboard/dashboard.h"
#include "gang/dash.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "leader/leader.h"
#include "reservation/row.h"
#include "scheduler/scheduler.h"
#include "server/http.h"
#include "server/metrics.h"
#include "server/tls.h"
#include "util/log.h"
#include "util/util.h"
#include "version.h"

typedef struct daemon_metrics {
    metrics_t *reg;
    metric_t *attempts, *binds, *bind_errors, *preemptions, *victims, *borrowings, *dropped;
    metric_t *evictions_refused;
    metric_t *gang_wait, *gangs_scheduled, *gangs_timed_out, *gang_preemptions, *gangs_stale, *gangs_pending;
    metric_t *q_alloc, *q_fair, *q_pending, *q_reclaims, *q_reclaimed;
    metric_t *gpu_shared, *gpu_res_created, *gpu_res_deleted;
    metric_t *consolidations, *consolidations_failed, *consolidation_moves;
    metric_t *checkpoints;
    metric_t *reservations, *reserved, *reservations_total;
    metric_t *latency, *queue, *api_requests, *api_errors, *api_latency;
    scheduler_t *sched;
    kube_client_t *kc;
    int standby;  /* connected, waiting for the lease (atomic) */
    leader_t *le; /* the elector, for /debug's answer on a follower (atomic) */
} daemon_metrics_t;

/* Counters are kept by the scheduler as totals; the registry gets the
 * difference since the last scrape. */
static void counter_to(metric_t *m, const char *labels, double total)
{
    double cur = metric_value(m, labels);
    if (total > cur)
        metric_add(m, labels, total - cur);
}

static void pool_gauge(void *ud, const char *pool, int active, int backoff, int unsched)
{
    daemon_metrics_t *dm = ud;
    char l[256];
    metric_set(dm->queue, metrics_labels(l, sizeof(l), "pool", pool, "queue", "active", NULL), active);
    metric_set(dm->queue, metrics_labels(l, sizeof(l), "pool", pool, "queue", "backoff", NULL), backoff);
    metric_set(dm->queue, metrics_labels(l, sizeof(l), "pool", pool, "queue", "unschedulable", NULL), unsched);
}

static void pool_gangs_gauge(void *ud, const char *pool, int waiting)
{
    daemon_metrics_t *dm = ud;
    char l[256];
    metric_set(dm->gangs_pending, metrics_labels(l, sizeof(l), "pool", pool, NULL), waiting);
}

static void pool_reservation_gauge(void *ud, const char *pool, int active, int64_t gpus, int nodes)
{
    daemon_metrics_t *dm = ud;
    char l[256];
    metric_set(dm->reservations, metrics_labels(l, sizeof(l), "pool", pool, NULL), active);
    metric_set(dm->reserved, metrics_labels(l, sizeof(l), "pool", pool, "resource", "gpu", NULL), (double)gpus);
    metric_set(dm->reserved, metrics_labels(l, sizeof(l), "pool", pool, "resource", "nodes", NULL), nodes);
}

static void queue_gauges(void *ud, const char *queue, const char *pool, const double alloc[3], const double fair[3],
                         int pending)
{
    static const char *const res[3] = { "gpu", "cpu", "memory" };
    daemon_metrics_t *dm = ud;
    char l[512];
    for (int r = 0; r < 3; r++) {
        metrics_labels(l, sizeof(l), "queue", queue, "pool", pool, "resource", res[r], NULL);
        metric_set(dm->q_alloc, l, alloc[r]);
        metric_set(dm->q_fair, l, fair[r]);
    }
    metric_set(dm->q_pending, metrics_labels(l, sizeof(l), "queue", queue, "pool", pool, NULL), pending);
}

static void queue_counters(void *ud, const char *queue, unsigned long reclaims, unsigned long reclaimed)
{
    daemon_metrics_t *dm = ud;
    char l[300];
    metrics_labels(l, sizeof(l), "queue", queue, NULL);
    counter_to(dm->q_reclaims, l, (double)reclaims);
    counter_to(dm->q_reclaimed, l, (double)reclaimed);
}

static void collect(metrics_t *r, void *ud)
{
    (void)r;
    daemon_metrics_t *dm = ud;
    if (dm->kc) {
        kube_client_stats_t ks;
        kube_client_get_stats(dm->kc, &ks);
        counter_to(dm->api_requests, NULL, (double)ks.requests);
        counter_to(dm->api_errors, NULL, (double)ks.errors);
        counter_to(dm->api_latency, NULL, ks.latency_sum_s);
    }
    scheduler_t *sched = __atomic_load_n(&dm->sched, __ATOMIC_ACQUIRE);
    if (!sched)
        return;
    scheduler_stats_t st;
    scheduler_get_stats(sched, &st);
    counter_to(dm->attempts, "result=\"scheduled\"", (double)st.attempts_scheduled);
    counter_to(dm->attempts, "result=\"unschedulable\"", (double)st.attempts_unschedulable);
    counter_to(dm->attempts, "result=\"error\"", (double)st.attempts_error);
    counter_to(dm->binds, NULL, (double)st.binds_ok);
    counter_to(dm->bind_errors, NULL, (double)st.bind_errors);
    counter_to(dm->preemptions, NULL, (double)st.preemptions);
    counter_to(dm->victims, NULL, (double)st.victims);
    counter_to(dm->evictions_refused, NULL, (double)st.evictions_refused);
    counter_to(dm->borrowings, NULL, (double)st.borrowings);
    counter_to(dm->dropped, NULL, (double)st.events_dropped);
    scheduler_each_pool(sched, pool_gauge, dm);
    counter_to(dm->gangs_scheduled, NULL, (double)st.gangs_scheduled);
    counter_to(dm->gangs_timed_out, NULL, (double)st.gangs_timed_out);
    counter_to(dm->gang_preemptions, NULL, (double)st.gang_preemptions);
    metric_set(dm->gangs_stale, NULL, st.gangs_stale);
    metric_set(dm->gpu_shared, NULL, st.gpu_shared_devices);
    counter_to(dm->gpu_res_created, NULL, (double)st.gpu_reservations_created);
    counter_to(dm->gpu_res_deleted, NULL, (double)st.gpu_reservations_deleted);
    counter_to(dm->consolidations, NULL, (double)st.consolidations);
    counter_to(dm->consolidations_failed, NULL, (double)st.consolidations_failed);
    counter_to(dm->consolidation_moves, NULL, (double)st.consolidation_moves);
    counter_to(dm->checkpoints, "result=\"requested\"", (double)st.checkpoint_requests);
    counter_to(dm->checkpoints, "result=\"acknowledged\"", (double)st.checkpoint_acked);
    counter_to(dm->checkpoints, "result=\"deadline\"", (double)st.checkpoint_deadlines);
    counter_to(dm->checkpoints, "result=\"withdrawn\"", (double)st.checkpoint_withdrawn);
    gang_row_each_pool(scheduler_row(sched, "gang"), pool_gangs_gauge, dm);
    resv_row_each_pool(scheduler_row(sched, "reservation"), pool_reservation_gauge, dm);
    counter_to(dm->reservations_total, "outcome=\"placed\"", (double)st.reservations_placed);
    counter_to(dm->reservations_total, "outcome=\"expired\"", (double)st.reservations_expired);
    counter_to(dm->reservations_total, "outcome=\"deleted\"", (double)st.reservations_deleted);
    scheduler_each_queue(sched, queue_gauges, dm);
    scheduler_each_queue_counter(sched, queue_counters, dm);
}

static void metrics_setup(daemon_metrics_t *dm)
{
    memset(dm, 0, sizeof(*dm));
    metrics_t *r = dm->reg = metrics_new();
    dm->attempts = metrics_counter(r, "ai_scheduler_schedule_attempts_total", "Scheduling attempts by result.");
    dm->binds = metrics_counter(r, "ai_scheduler_binds_total", "Pods bound.");
    dm->bind_errors = metrics_counter(r, "ai_scheduler_bind_errors_total", "Binding requests that failed.");
    dm->preemptions = metrics_counter(r, "ai_scheduler_preemptions_total", "Preemptions carried out.");
    dm->victims = metrics_counter(r, "ai_scheduler_preemption_victims_total", "Pods evicted by preemption or reclaim.");
    dm->evictions_refused = metrics_counter(r, "ai_scheduler_preemption_evictions_refused_total",
                                            "Preemptions stopped midway by a refused eviction.");
    dm->checkpoints = metrics_counter(r, "ai_scheduler_checkpoint_requests_total",
                                      "Checkpoint before eviction: victims asked (requested), evicted after their "
                                      "acknowledgement or at their deadline, and preemptions withdrawn.");
    dm->borrowings = metrics_counter(r, "ai_scheduler_borrowings_total", "Pods sent to borrow another pool's nodes.");
    dm->dropped = metrics_counter(r, "ai_scheduler_events_dropped_total", "Events and patches dropped under overload.");
    static const double buckets[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 };
    dm->latency = metrics_histogram(r, "ai_scheduler_e2e_scheduling_duration_seconds", "From first queued to bound.",
                                    buckets, (int)(sizeof(buckets) / sizeof(buckets[0])));
    dm->queue = metrics_gauge(r, "ai_scheduler_pending_pods", "Pods in each pool's queues.");
    static const double gang_buckets[] = { 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800 };
    dm->gang_wait = metrics_histogram(r, "ai_scheduler_gang_wait_seconds",
                                      "From a gang first considered (minMember pods pending) to its minimum placed.",
                                      gang_buckets, (int)(sizeof(gang_buckets) / sizeof(gang_buckets[0])));
    dm->gangs_scheduled = metrics_counter(r, "ai_scheduler_gangs_scheduled_total", "Gangs whose minimum was placed.");
    dm->gangs_timed_out =
        metrics_counter(r, "ai_scheduler_gangs_timed_out_total", "Gangs not placed within their schedule timeout.");
    dm->gang_preemptions =
        metrics_counter(r, "ai_scheduler_gang_preemptions_total", "Preemptions made for a whole gang.");
    dm->gangs_stale = metrics_gauge(r, "ai_scheduler_stale_gangs", "Placed gangs below minMember past the grace.");
    dm->gangs_pending = metrics_gauge(r, "ai_scheduler_pending_gangs", "Gangs waiting for room, per pool.");
    dm->reservations = metrics_gauge(r, "ai_scheduler_reservations", "Reservations held for a large gang, per pool.");
    dm->reserved =
        metrics_gauge(r, "ai_scheduler_reserved_resources", "Room held by a pool's reservation (GPUs, nodes).");
    dm->reservations_total = metrics_counter(r, "ai_scheduler_reservations_total",
                                             "Reservations ended, by outcome (placed, expired, deleted).");
    dm->q_alloc = metrics_gauge(r, "ai_scheduler_queue_allocated",
                                "Allocated per queue, pool and resource (GPUs, CPU millicores, memory MB).");
    dm->q_fair = metrics_gauge(r, "ai_scheduler_queue_fair_share", "Fair share per queue, pool and resource.");
    dm->q_pending = metrics_gauge(r, "ai_scheduler_queue_pending_pods", "Pending pods per queue and pool.");
    dm->q_reclaims =
        metrics_counter(r, "ai_scheduler_queue_reclaims_total", "Preemptions by which a queue reclaimed its share.");
    dm->q_reclaimed = metrics_counter(r, "ai_scheduler_queue_reclaimed_pods_total", "Pods reclaimed from a queue.");
    dm->gpu_shared =
        metrics_gauge(r, "ai_scheduler_gpu_shared_devices", "GPUs holding fractions (gpu-fraction, gpu-memory).");
    dm->gpu_res_created =
        metrics_counter(r, "ai_scheduler_gpu_reservations_created_total", "Reservation pods created for shared GPUs.");
    dm->gpu_res_deleted = metrics_counter(r, "ai_scheduler_gpu_reservations_deleted_total",
                                          "Reservation pods deleted (no fraction left, or a whole-GPU pod needed it).");
    dm->consolidations = metrics_counter(r, "ai_scheduler_consolidations_total",
                                         "Consolidations started (pods moved so that a fragmented pod fits).");
    dm->consolidations_failed = metrics_counter(r, "ai_scheduler_consolidations_failed_total",
                                                "Fragmented pods for which no consolidation plan existed.");
    dm->consolidation_moves =
        metrics_counter(r, "ai_scheduler_consolidation_moves_total", "Pods moved by consolidation.");
    dm->api_requests = metrics_counter(r, "ai_scheduler_api_requests_total", "Requests sent to the API server.");
    dm->api_errors = metrics_counter(r, "ai_scheduler_api_request_errors_total", "API requests that failed.");
    dm->api_latency =
        metrics_counter(r, "ai_scheduler_api_request_duration_seconds_total", "Sum of API request latencies.");
    metrics_on_collect(r, collect, dm);
}

/* Ready means "caches synced or standing by as a healthy follower", as in
 * kube-scheduler: a standby that is never Ready would block rolling updates. */
static int ready_cb(void *ud, const char **why)
{
    daemon_metrics_t *dm = ud;
    scheduler_t *sched = __atomic_load_n(&dm->sched, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&dm->standby, __ATOMIC_ACQUIRE) || (sched && scheduler_ready(sched)))
        return 1;
    *why = "caches not synced yet";
    return 0;
}

typedef struct lease_ctx {
    int lost;     /* atomic */
    leader_t *le; /* set before the scheduler starts */
    daemon_metrics_t *dm;
} lease_ctx_t;

/* From the election thread: fence at once (pool threads, binds, writes),
 * then the main loop stops the scheduler. */
static void on_lost_leadership(void *ud)
{
    lease_ctx_t *lc = ud;
    scheduler_t *sched = __atomic_load_n(&lc->dm->sched, __ATOMIC_ACQUIRE);
    if (sched)
        scheduler_fence(sched);
    __atomic_store_n(&lc->lost, 1, __ATOMIC_RELEASE);
}

/* Fencing on time, not only on the election thread's word: after a pause
 * (SIGSTOP, a long GC-like stall) the lease may be gone before that thread
 * runs again. */
static int lease_valid(void *ud)
{
    lease_ctx_t *lc = ud;
    return leader_holds_lease(lc->le);
}

/* ------------------------------------------------ /debug/pods, /debug/podgroups */

/* A path segment a namespace or object name can be: DNS-1123 characters. */
static int name_ok(const char *p, size_t n)
{
    if (n == 0 || n > 253)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') || p[i] == '-' || p[i] == '.'))
            return 0;
    return 1;
}

static int json_reply(char **body, const char **ctype, int code, json_t *doc)
{
    *body = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
    *ctype = "application/json";
    json_decref(doc);
    return code;
}

/* Why a /debug answer cannot come from here (503): a follower names the
 * leader, a leader not synced yet says so. */
static json_t *not_leading(daemon_metrics_t *dm)
{
    leader_t *le = __atomic_load_n(&dm->le, __ATOMIC_ACQUIRE);
    char holder[256] = "";
    if (le)
        leader_holder(le, holder, sizeof(holder));
    sbuf_t b = { 0 };
    if (__atomic_load_n(&dm->standby, __ATOMIC_ACQUIRE))
        sbuf_printf(&b, "this replica is not the leader; the leader is %s", holder[0] ? holder : "unknown");
    else
        sbuf_puts(&b, "the scheduler is not running yet (caches not synced)");
    json_t *doc = http_status_doc(503, "ServiceUnavailable", b.data);
    if (holder[0])
        json_object_set_new(doc, "leader", json_string(holder));
    sbuf_free(&b);
    return doc;
}

/* GET /debug/pods/NS/NAME and /debug/podgroups/NS/NAME: the decision
 * record (200), why none is kept (404), or, on a follower, who leads (503). */
static int explain_route(void *ud, const char *path, const char *query, char **body, const char **ctype)
{
    (void)query;
    daemon_metrics_t *dm = ud;
    int group = strncmp(path, "/debug/podgroups/", 17) == 0;
    const char *rest = path + (group ? 17 : 12);
    const char *slash = strchr(rest, '/');
    if (!slash || !name_ok(rest, (size_t)(slash - rest)) || !name_ok(slash + 1, strlen(slash + 1)))
        return json_reply(body, ctype, 400,
                          http_status_doc(400, "BadRequest",
                                          group ? "expected /debug/podgroups/NAMESPACE/NAME"
                                                : "expected /debug/pods/NAMESPACE/NAME"));
    char *ns = util_strndup(rest, (size_t)(slash - rest));
    const char *name = slash + 1;
    scheduler_t *sched = __atomic_load_n(&dm->sched, __ATOMIC_ACQUIRE);
    int code;
    json_t *doc;
    if (!sched || !scheduler_ready(sched)) {
        doc = not_leading(dm);
        code = 503;
    } else if ((doc = scheduler_explain(sched, group ? "podgroup" : "pod", ns, name)) != NULL) {
        code = 200;
    } else {
        char *why = scheduler_explain_absent(sched, group ? "podgroup" : "pod", ns, name);
        doc = http_status_doc(404, "NotFound", why);
        free(why);
        code = 404;
    }
    free(ns);
    return json_reply(body, ctype, code, doc);
}

static void explain_routes_add(http_server_t *http, daemon_metrics_t *dm)
{
    http_route_t pods = { .prefix = "/debug/pods/",
                          .fn = explain_route,
                          .ud = dm,
                          .verb = "get",
                          .group = "",
                          .resource = "pods",
                          .ns_in_path = 1 };
    http_route_t groups = { .prefix = "/debug/podgroups/",
                            .fn = explain_route,
                            .ud = dm,
                            .verb = "get",
                            .group = "scheduling.x-k8s.io",
                            .resource = "podgroups",
                            .ns_in_path = 1 };
    if (http_server_route(http, &pods) != 0 || http_server_route(http, &groups) != 0)
        LOG_W("http: the /debug routes could not be added");
}

/* ------------------------------------------------------------ /debug/state */

/* GET /debug/state: the leader's assumed pods and nominations, what a LIST
 * does not show (`whatif` lays them over one). Cluster-wide: list pods. */
static int state_route(void *ud, const char *path, const char *query, char **body, const char **ctype)
{
    daemon_metrics_t *dm = ud;
    scheduler_t *sched = __atomic_load_n(&dm->sched, __ATOMIC_ACQUIRE);
    if (strcmp(path, "/debug/state") != 0)
        return json_reply(body, ctype, 404, http_status_doc(404, "NotFound", "expected /debug/state"));
    if (!sched || !scheduler_ready(sched))
        return json_reply(body, ctype, 503, not_leading(dm));
    return scheduler_debug_state_http(sched, path, query, body, ctype);
}

static void state_route_add(http_server_t *http, daemon_metrics_t *dm)
{
    http_route_t r = {
        .prefix = "/debug/state", .fn = state_route, .ud = dm, .verb = "list", .group = "", .resource = "pods"
    };
    if (http_server_route(http, &r) != 0)
        LOG_W("http: the /debug/state route could not be added");
}

/* ------------------------------------------------------------ dashboard */

/* The dashboard's view of who serves: the scheduler while it leads and is
 * synced, the same 503 as /debug otherwise. */
static scheduler_t *dash_leading(void *ud)
{
    daemon_metrics_t *dm = ud;
    scheduler_t *sched = __atomic_load_n(&dm->sched, __ATOMIC_ACQUIRE);
    return sched && scheduler_ready(sched) ? sched : NULL;
}

static json_t *dash_not_leading(void *ud)
{
    return not_leading(ud);
}

static void dash_leader(void *ud, char *buf, size_t n)
{
    daemon_metrics_t *dm = ud;
    leader_t *le = __atomic_load_n(&dm->le, __ATOMIC_ACQUIRE);
    buf[0] = 0;
    if (le)
        leader_holder(le, buf, n);
}

static dashboard_t *dashboard_add(http_server_t *http, daemon_metrics_t *dm, const char *identity)
{
    dashboard_opts_t o = { .leading = dash_leading,
                           .not_leading = dash_not_leading,
                           .leader = dash_leader,
                           .ud = dm,
                           .version = AISCHED_VERSION,
                           .identity = identity };
    dashboard_t *d = dashboard_new(&o);
    if (dashboard_routes_add(d, http) != 0)
        LOG_W("http: the dashboard's /api/v1 routes could not all be added");
    if (dashboard_start(d) != 0)
        LOG_W("dashboard: the queue history sampler could not start");
    return d;
}

/* Fatal at start: what a retry cannot fix (credentials, certificates). */
static int fatal_api_error(long status, const char *err)
{
    if (status == 401 || status == 403)
        return 1;
    return strstr(err, "certificate") || strstr(err, "SSL") || strstr(err, "TLS") || strstr(err, "unauthorized");
}

int daemon_preflight(kube_client_t *kc, const char *server, const char *probe_path, const volatile int *stop)
{
    int warned = 0;
    while (!*stop) {
        char err[512] = "";
        long status = 0;
        json_t *out = NULL;
        int rc = kube_get_json(kc, probe_path, &out, &status, err, sizeof(err));
        json_decref(out);
        if (rc == 0)
            return 0;
        if (fatal_api_error(status, err)) {
            fprintf(stderr, "ai-scheduler: cannot use the API server at %s: %s\n", server, err);
            return -1;
        }
        if (!warned++)
            LOG_W("waiting for the API server at %s: %s", server, err);
        for (int i = 0; i < 20 && !*stop; i++)
            util_sleep_ms(100);
    }
    return -1;
}

static void observe_bound(void *ud, double secs)
{
    metric_observe(ud, NULL, secs);
}

/* Starts the elector and blocks until this replica leads (1), or stop (0),
 * or an error (-1). */
static int lead(kube_client_t *kc, const sched_config_t *cfg, leader_t **out, lease_ctx_t *lc, daemon_metrics_t *dm,
                const volatile int *stop)
{
    char err[512];
    leader_opts_t lo = {
        .lease_name = cfg->leader.lease_name,
        .lease_namespace = cfg->leader.lease_namespace,
        .identity = cfg->leader.identity,
        .lease_duration_s = cfg->leader.lease_duration_s,
        .renew_deadline_s = cfg->leader.renew_deadline_s,
        .retry_period_s = cfg->leader.retry_period_s,
        .on_lost = on_lost_leadership,
        .ud = lc,
    };
    leader_t *le = leader_new(kc, &lo, err, sizeof(err));
    if (!le || leader_start(le, err, sizeof(err)) != 0) {
        fprintf(stderr, "ai-scheduler: leader election: %s\n", err);
        leader_free(le);
        return -1;
    }
    *out = le;
    lc->le = le;
    __atomic_store_n(&dm->le, le, __ATOMIC_RELEASE);
    LOG_I("leader election: waiting for lease %s/%s as %s", cfg->leader.lease_namespace, cfg->leader.lease_name,
          cfg->leader.identity);
    __atomic_store_n(&dm->standby, 1, __ATOMIC_RELEASE);
    int rc = leader_wait_until_leading(le, -1, stop);
    __atomic_store_n(&dm->standby, 0, __ATOMIC_RELEASE);
    if (rc == 1)
        LOG_I("leader election: leading");
    return rc == 1 ? 1 : (*stop ? 0 : -1);
}

int daemon_run(const sched_config_t *cfg, const volatile int *stop, volatile int *dump)
{
    char err[512];
    int exit_code = 1;
    kube_config_t kcfg;
    memset(&kcfg, 0, sizeof(kcfg));
    if (kube_config_load(&kcfg, cfg->kubeconfig, err, sizeof(err)) != 0) {
        fprintf(stderr, "ai-scheduler: %s\n", err);
        return 1;
    }
    if (cfg->insecure_skip_tls_verify)
        kcfg.insecure = 1; /* kube_client_new says so, loudly */
    kube_client_opts_t ko = { .qps = cfg->qps, .burst = cfg->burst, .timeout_s = 30, .user_agent = "ai-scheduler" };
    kube_client_t *kc = kube_client_new(&kcfg, &ko, err, sizeof(err));
    if (!kc) {
        fprintf(stderr, "ai-scheduler: %s\n", err);
        kube_config_free(&kcfg);
        return 1;
    }
    daemon_metrics_t dm;
    metrics_setup(&dm);
    dm.kc = kc;
    http_server_t *http = NULL;
    scheduler_t *sched = NULL;
    leader_t *le = NULL;
    kube_client_t *kc_le = NULL;
    lease_ctx_t lc = { 0, NULL, &dm };
    auth_t *auth = NULL;
    tls_serving_t serving = { 0 };
    dashboard_t *dash = NULL;
    if (cfg->metrics_port > 0) {
        /* /debug is authenticated and authorised by the API server with the
         * scheduler's own credentials (TokenReview, SubjectAccessReview). */
        auth = auth_new(&kcfg, NULL, err, sizeof(err));
        if (!auth) {
            fprintf(stderr, "ai-scheduler: debug endpoints: %s\n", err);
            goto out;
        }
        auth_metrics(auth, dm.reg);
        if (tls_serving_setup(cfg->tls_cert_file, cfg->tls_private_key_file, cfg->client_ca_file, cfg->plain_http,
                              cfg->metrics_bind_address, &serving, err, sizeof err) != 0) {
            fprintf(stderr, "ai-scheduler: %s\n", err);
            goto out;
        }
        http_server_opts_t ho = { .bind_address = cfg->metrics_bind_address,
                                  .port = cfg->metrics_port,
                                  .metrics = dm.reg,
                                  .ready = ready_cb,
                                  .ready_ud = &dm,
                                  .auth = auth,
                                  .always_allow = cfg->always_allow_paths ? cfg->always_allow_paths : "" };
        http_opts_tls(&ho, &serving);
        http = http_server_start(&ho, err, sizeof(err));
        if (!http) {
            fprintf(stderr, "ai-scheduler: metrics server: %s\n", err);
            goto out;
        }
        explain_routes_add(http, &dm);
        state_route_add(http, &dm);
        dash = dashboard_add(http, &dm, cfg->leader.identity);
        if (dashboard_ui_add(http) != 0)
            LOG_W("http: the /ui/ route could not be added");
    }
    if (daemon_preflight(kc, kcfg.server, "/api/v1/nodes?limit=1", stop) != 0)
        goto out;
    LOG_I("ai-scheduler: API server %s (from %s), schedulerName=%s", kcfg.server, kcfg.source ? kcfg.source : "?",
          cfg->sched.scheduler_name);

    if (cfg->leader.enabled) {
        /* The elector's own client: renewals never wait behind binds or a
         * slow LIST, and give up in time for one more try before the renew
         * deadline (well before the lease runs out). */
        int t = cfg->leader.renew_deadline_s - cfg->leader.retry_period_s;
        kube_client_opts_t lo = {
            .qps = 0, .burst = 0, .timeout_s = t > 0 ? t : 1, .user_agent = "ai-scheduler/leader-election"
        };
        kc_le = kube_client_new(&kcfg, &lo, err, sizeof(err));
        if (!kc_le) {
            fprintf(stderr, "ai-scheduler: %s\n", err);
            goto out;
        }
        int r = lead(kc_le, cfg, &le, &lc, &dm, stop);
        if (r <= 0) {
            exit_code = r == 0 ? 0 : 1;
            goto out;
        }
    }

    scheduler_opts_t so;
    const char **xnames;
    fw_config_t *xfw; /* profiles beyond the first, for scheduler_new (which copies them) */
    config_scheduler_opts(cfg, cfg->leader.identity, &so, &xnames, &xfw);
    so.on_bound = observe_bound;
    so.on_bound_ud = dm.latency;
    so.on_gang_placed = observe_bound;
    so.on_gang_ud = dm.gang_wait;
    if (le) {
        so.may_act = lease_valid;
        so.may_act_ud = &lc;
    }
    sched = scheduler_new(&so, kc, err, sizeof(err));
    free(xnames);
    free(xfw);
    if (!sched) {
        fprintf(stderr, "ai-scheduler: %s\n", err);
        goto out;
    }
    __atomic_store_n(&dm.sched, sched, __ATOMIC_RELEASE);
    if (scheduler_start(sched, stop, err, sizeof(err)) != 0) {
        if (!*stop)
            fprintf(stderr, "ai-scheduler: %s\n", err);
        else
            exit_code = 0;
        goto out;
    }
    LOG_I("ai-scheduler: scheduling");
    while (!*stop && !__atomic_load_n(&lc.lost, __ATOMIC_ACQUIRE) && !(le && !leader_holds_lease(le))) {
        util_sleep_ms(100);
        if (dump && *dump) {
            *dump = 0;
            scheduler_dump_cache(sched);
        }
    }
    if (le && !leader_holds_lease(le)) {
        /* Another replica may already be scheduling: stop at once, as
         * kube-scheduler does, and let the supervisor restart us. */
        LOG_E("ai-scheduler: leadership lost; exiting");
        exit_code = 1;
    } else {
        LOG_I("ai-scheduler: shutting down");
        exit_code = 0;
    }
out:
    if (sched)
        scheduler_stop(sched);
    if (le) {
        leader_stop(le); /* releases the lease: the follower takes over at once */
        leader_free(le);
    }
    kube_client_free(kc_le);
    http_server_stop(http);
    dashboard_free(dash);
    auth_free(auth);
    tls_serving_free(&serving);
    dm.sched = NULL;
    scheduler_free(sched);
    metrics_free(dm.reg);
    kube_client_free(kc);
    kube_config_free(&kcfg);
    return exit_code;
}
