/* dashboard.c -- the dashboard's /api/v1 routes and queue history
 * (dashboard/dashboard.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dashboard/dashboard.h"
#include "gang/dash.h"
#include "scheduler/dashboard.h"
#include "util/util.h"

/* ------------------------------------------------------------ history */

typedef struct hist_queue {
    char *name;
    int64_t last_seen; /* wall ms of the last sample that had it */
    int head, n;       /* ring: oldest at (head - n) mod POINTS */
    int64_t t[DASHBOARD_HISTORY_POINTS];
    double v[DASHBOARD_HISTORY_POINTS][3][2]; /* [point][resource][allocated, fairShare] */
} hist_queue_t;

struct dashboard {
    dashboard_opts_t o;
    pthread_mutex_t mu; /* history (a leaf: nothing is called while held) */
    hist_queue_t **q;
    int nq;
    pthread_mutex_t run_mu; /* the sampler thread's stop flag */
    pthread_cond_t run_cv;
    int stop, started;
    pthread_t thread;
};

static const char *const res_names[3] = { "gpu", "cpu", "memory" };

static int res_index(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, res_names[i]) == 0)
            return i;
    return -1;
}

/* Lock held. */
static hist_queue_t *hist_find(dashboard_t *d, const char *name)
{
    for (int i = 0; i < d->nq; i++)
        if (strcmp(d->q[i]->name, name) == 0)
            return d->q[i];
    return NULL;
}

/* Lock held: a new ring for name, dropping the least recently seen queue
 * when DASHBOARD_HISTORY_QUEUES are kept. */
static hist_queue_t *hist_add(dashboard_t *d, const char *name)
{
    if (d->nq >= DASHBOARD_HISTORY_QUEUES) {
        int old = 0;
        for (int i = 1; i < d->nq; i++)
            if (d->q[i]->last_seen < d->q[old]->last_seen)
                old = i;
        free(d->q[old]->name);
        free(d->q[old]);
        d->q[old] = d->q[--d->nq];
    }
    hist_queue_t *h = util_xcalloc(1, sizeof *h);
    h->name = util_strdup(name);
    d->q = util_xrealloc(d->q, (size_t)(d->nq + 1) * sizeof *d->q);
    d->q[d->nq++] = h;
    return h;
}

typedef struct tick_ctx {
    dashboard_t *d;
    int64_t now;
} tick_ctx_t;

static void take_point(void *ud, const char *queue, const double alloc[3], const double fair[3])
{
    tick_ctx_t *c = ud;
    dashboard_t *d = c->d;
    pthread_mutex_lock(&d->mu);
    hist_queue_t *h = hist_find(d, queue);
    if (!h)
        h = hist_add(d, queue);
    h->last_seen = c->now;
    h->t[h->head] = c->now;
    for (int r = 0; r < 3; r++) {
        h->v[h->head][r][0] = alloc[r];
        h->v[h->head][r][1] = fair[r];
    }
    h->head = (h->head + 1) % DASHBOARD_HISTORY_POINTS;
    if (h->n < DASHBOARD_HISTORY_POINTS)
        h->n++;
    pthread_mutex_unlock(&d->mu);
}

void dashboard_history_tick(dashboard_t *d, int64_t now)
{
    scheduler_t *s = d->o.leading ? d->o.leading(d->o.ud) : NULL;
    if (!s)
        return;
    tick_ctx_t c = { d, now };
    scheduler_dash_queue_sample(s, take_point, &c);
}

static void *sampler_main(void *arg)
{
    dashboard_t *d = arg;
    pthread_mutex_lock(&d->run_mu);
    while (!d->stop) {
        pthread_mutex_unlock(&d->run_mu);
        dashboard_history_tick(d, util_wall_ms());
        struct timespec ts;
        util_deadline(CLOCK_MONOTONIC, DASHBOARD_HISTORY_INTERVAL_MS, &ts);
        pthread_mutex_lock(&d->run_mu);
        while (!d->stop && pthread_cond_timedwait(&d->run_cv, &d->run_mu, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&d->run_mu);
    return NULL;
}

/* ------------------------------------------------------------ lifecycle */

dashboard_t *dashboard_new(const dashboard_opts_t *o)
{
    dashboard_t *d = util_xcalloc(1, sizeof *d);
    d->o = *o;
    pthread_mutex_init(&d->mu, NULL);
    pthread_mutex_init(&d->run_mu, NULL);
    util_cond_init_monotonic(&d->run_cv);
    return d;
}

int dashboard_start(dashboard_t *d)
{
    if (d->started)
        return 0;
    if (pthread_create(&d->thread, NULL, sampler_main, d) != 0)
        return -1;
    d->started = 1;
    return 0;
}

void dashboard_free(dashboard_t *d)
{
    if (!d)
        return;
    if (d->started) {
        pthread_mutex_lock(&d->run_mu);
        d->stop = 1;
        pthread_cond_broadcast(&d->run_cv);
        pthread_mutex_unlock(&d->run_mu);
        pthread_join(d->thread, NULL);
    }
    for (int i = 0; i < d->nq; i++) {
        free(d->q[i]->name);
        free(d->q[i]);
    }
    free(d->q);
    pthread_mutex_destroy(&d->mu);
    pthread_mutex_destroy(&d->run_mu);
    pthread_cond_destroy(&d->run_cv);
    free(d);
}

/* ------------------------------------------------------------ queries */

/* The decoded value of key in a raw query string (caller frees), or NULL.
 * Malformed escapes are kept as they are. */
static char *query_get(const char *query, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > kl && strncmp(p, key, kl) == 0 && p[kl] == '=')
            return util_urldecode(p + kl + 1, len - kl - 1, 1);
        p = amp ? amp + 1 : NULL;
    }
    return NULL;
}

/* A non-negative integer parameter: 0 and *out set (def when absent), -1
 * when present but not a number in [0, max]. */
static int query_int(const char *query, const char *key, long def, long max, long *out)
{
    char *v = query_get(query, key);
    *out = def;
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    int bad = !v[0] || *end || errno || n < 0 || n > max;
    free(v);
    if (bad)
        return -1;
    *out = n;
    return 0;
}

static int reply(char **body, const char **ctype, int code, json_t *doc)
{
    *body = json_dumps(doc, JSON_COMPACT);
    *ctype = "application/json";
    json_decref(doc);
    return code;
}

static int bad_request(char **body, const char **ctype, const char *msg)
{
    return reply(body, ctype, 400, http_status_doc(400, "BadRequest", msg));
}

/* The list options of a query: 0, or -1 with *why. Strings are the
 * caller's to free (dash_opts_clear). */
static int list_opts(const char *query, dash_list_opts_t *o, const char **why)
{
    memset(o, 0, sizeof *o);
    long off, lim;
    if (query_int(query, "offset", 0, 100000000L, &off) != 0) {
        *why = "offset must be a non-negative integer";
        return -1;
    }
    if (query_int(query, "limit", DASH_LIMIT_DEFAULT, DASH_LIMIT_MAX, &lim) != 0 || lim == 0) {
        *why = "limit must be an integer from 1 to 500";
        return -1;
    }
    o->offset = (int)off;
    o->limit = (int)lim;
    char *sort = query_get(query, "sort"), *order = query_get(query, "order");
    int rc = 0;
    if (!sort || strcmp(sort, "wait") == 0)
        o->sort = DASH_SORT_WAIT;
    else if (strcmp(sort, "name") == 0)
        o->sort = DASH_SORT_NAME;
    else if (strcmp(sort, "queue") == 0)
        o->sort = DASH_SORT_QUEUE;
    else if (strcmp(sort, "pool") == 0)
        o->sort = DASH_SORT_POOL;
    else {
        *why = "sort must be wait, name, queue or pool";
        rc = -1;
    }
    /* Longest wait first unless asked otherwise; names A to Z. */
    o->desc = o->sort == DASH_SORT_WAIT;
    if (order && strcmp(order, "asc") == 0)
        o->desc = 0;
    else if (order && strcmp(order, "desc") == 0)
        o->desc = 1;
    else if (order && rc == 0) {
        *why = "order must be asc or desc";
        rc = -1;
    }
    free(sort);
    free(order);
    o->queue = query_get(query, "queue");
    o->pool = query_get(query, "pool");
    o->q = query_get(query, "q");
    return rc;
}

static void dash_opts_clear(dash_list_opts_t *o)
{
    free((char *)o->queue);
    free((char *)o->pool);
    free((char *)o->q);
}

/* ------------------------------------------------------------ routes */

static json_t *stamp(json_t *doc, scheduler_t *s)
{
    json_object_set_new(doc, "generation", json_integer(s ? (json_int_t)scheduler_generation(s) : 0));
    json_object_set_new(doc, "now", json_integer((json_int_t)util_wall_ms()));
    return doc;
}

static json_t *leader_doc(dashboard_t *d, scheduler_t *s)
{
    char holder[256] = "";
    if (d->o.leader)
        d->o.leader(d->o.ud, holder, sizeof holder);
    if (!holder[0] && s && d->o.identity)
        snprintf(holder, sizeof holder, "%s", d->o.identity);
    int is_leader = s != NULL;
    /* leaderPod: the identity does not say the pod's namespace for sure,
     * so it is not guessed. */
    return json_pack("{s:s, s:s, s:o, s:b, s:n}", "version", d->o.version ? d->o.version : "", "identity",
                     d->o.identity ? d->o.identity : "", "leader", holder[0] ? json_string(holder) : json_null(),
                     "isLeader", is_leader, "leaderPod");
}

static int serve_info(dashboard_t *d, scheduler_t *s, char **body, const char **ctype)
{
    json_t *doc = leader_doc(d, s);
    const json_t *user = http_request_user();
    const char *uname = json_string_value(json_object_get(user, "username"));
    json_object_set_new(doc, "user", uname ? json_string(uname) : json_null());
    json_object_set_new(doc, "pages",
                        json_pack("[s,s,s,s,s,s]", "overview", "queues", "gangs", "pending", "nodes", "multicluster"));
    json_object_set_new(doc, "historyIntervalMs", json_integer(DASHBOARD_HISTORY_INTERVAL_MS));
    json_object_set_new(doc, "historyKeepMs",
                        json_integer((json_int_t)DASHBOARD_HISTORY_INTERVAL_MS * DASHBOARD_HISTORY_POINTS));
    return reply(body, ctype, 200, stamp(doc, s));
}

typedef struct known_ctx {
    const char *name;
    int found;
} known_ctx_t;

static void note_known(void *ud, const char *queue, const double alloc[3], const double fair[3])
{
    (void)alloc, (void)fair;
    known_ctx_t *k = ud;
    k->found |= strcmp(queue, k->name) == 0;
}

/* Whether the scheduler has numbers for the queue now. */
static int queue_known(scheduler_t *s, const char *name)
{
    known_ctx_t k = { name, 0 };
    scheduler_dash_queue_sample(s, note_known, &k);
    return k.found;
}

static int serve_history(dashboard_t *d, scheduler_t *s, const char *query, char **body, const char **ctype)
{
    char *queue = query_get(query, "queue"), *res = query_get(query, "resource");
    long since;
    int r = res ? res_index(res) : 0;
    int code;
    json_t *doc;
    if (!queue || !queue[0]) {
        code = bad_request(body, ctype, "queue is required");
        goto out;
    }
    if (r < 0) {
        code = bad_request(body, ctype, "resource must be gpu, cpu or memory");
        goto out;
    }
    if (query_int(query, "since", 0, 0x7fffffffffffffffL, &since) != 0) {
        code = bad_request(body, ctype, "since must be ms since the epoch");
        goto out;
    }
    pthread_mutex_lock(&d->mu);
    hist_queue_t *h = hist_find(d, queue);
    if (!h) {
        pthread_mutex_unlock(&d->mu);
        if (queue_known(s, queue)) { /* not sampled yet (new since the last sample): no points */
            doc = json_pack("{s:s, s:s, s:i, s:[]}", "queue", queue, "resource", res_names[r], "intervalMs",
                            DASHBOARD_HISTORY_INTERVAL_MS, "points");
            code = reply(body, ctype, 200, stamp(doc, s));
        } else {
            char msg[400];
            snprintf(msg, sizeof msg, "no queue %.250s", queue);
            code = reply(body, ctype, 404, http_status_doc(404, "NotFound", msg));
        }
        goto out;
    }
    json_t *pts = json_array();
    for (int i = 0; i < h->n; i++) {
        int k = (h->head - h->n + i + DASHBOARD_HISTORY_POINTS) % DASHBOARD_HISTORY_POINTS;
        if (h->t[k] < since)
            continue;
        json_array_append_new(pts, json_pack("[I, f, f]", (json_int_t)h->t[k], h->v[k][r][0], h->v[k][r][1]));
    }
    pthread_mutex_unlock(&d->mu);
    doc = json_pack("{s:s, s:s, s:i, s:o}", "queue", queue, "resource", res_names[r], "intervalMs",
                    DASHBOARD_HISTORY_INTERVAL_MS, "points", pts);
    code = reply(body, ctype, 200, stamp(doc, s));
out:
    free(queue);
    free(res);
    return code;
}

typedef json_t *(*list_fn)(scheduler_t *s, const dash_list_opts_t *o);

/* The gang list is the gang row's page. */
static json_t *dash_gangs(scheduler_t *s, const dash_list_opts_t *o)
{
    return gang_row_dash_gangs(scheduler_row(s, "gang"), o);
}

static int serve_list(scheduler_t *s, list_fn fn, const char *query, char **body, const char **ctype)
{
    dash_list_opts_t o;
    const char *why = NULL;
    int code;
    if (list_opts(query, &o, &why) != 0)
        code = bad_request(body, ctype, why);
    else
        code = reply(body, ctype, 200, stamp(fn(s, &o), s));
    dash_opts_clear(&o);
    return code;
}

static int not_found(char **body, const char **ctype, const char *path)
{
    char msg[300];
    snprintf(msg, sizeof msg, "no dashboard route %.200s", path);
    return reply(body, ctype, 404, http_status_doc(404, "NotFound", msg));
}

int dashboard_serve(dashboard_t *d, const char *path, const char *query, char **body, const char **ctype)
{
    scheduler_t *s = d->o.leading ? d->o.leading(d->o.ud) : NULL;
    if (!query)
        query = "";
    if (strcmp(path, "/api/v1/info") == 0)
        return serve_info(d, s, body, ctype);
    static const char *const known[] = { "/api/v1/overview",  "/api/v1/queues",      "/api/v1/queues/history",
                                         "/api/v1/gangs",     "/api/v1/pending",     "/api/v1/nodes",
                                         "/api/v1/nodes/map", "/api/v1/multicluster" };
    int ok = 0;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        ok |= strcmp(path, known[i]) == 0;
    if (!ok)
        return not_found(body, ctype, path);
    if (!s) {
        json_t *st = d->o.not_leading ? d->o.not_leading(d->o.ud) : NULL;
        if (!st)
            st = http_status_doc(503, "ServiceUnavailable", "this replica is not the leader");
        return reply(body, ctype, 503, st);
    }
    if (strcmp(path, "/api/v1/multicluster") == 0)
        return reply(body, ctype, 200,
                     stamp(json_pack("{s:b, s:s}", "served", 0, "message",
                                     "MultiClusterJobs are shown by the dispatch controller's own dashboard "
                                     "(ai-scheduler dispatch), not by the scheduler"),
                           s));
    if (strcmp(path, "/api/v1/overview") == 0) {
        json_t *doc = scheduler_dash_overview(s);
        json_object_set_new(doc, "leader", leader_doc(d, s));
        return reply(body, ctype, 200, stamp(doc, s));
    }
    if (strcmp(path, "/api/v1/queues") == 0)
        return reply(body, ctype, 200, stamp(scheduler_dash_queues(s), s));
    if (strcmp(path, "/api/v1/queues/history") == 0)
        return serve_history(d, s, query, body, ctype);
    if (strcmp(path, "/api/v1/gangs") == 0)
        return serve_list(s, dash_gangs, query, body, ctype);
    if (strcmp(path, "/api/v1/pending") == 0)
        return serve_list(s, scheduler_dash_pending, query, body, ctype);
    if (strcmp(path, "/api/v1/nodes") == 0)
        return serve_list(s, scheduler_dash_nodes, query, body, ctype);
    return reply(body, ctype, 200, stamp(scheduler_dash_nodes_map(s), s));
}

static int route_fn(void *ud, const char *path, const char *query, char **body, const char **ctype)
{
    return dashboard_serve(ud, path, query, body, ctype);
}

int dashboard_routes_add(dashboard_t *d, http_server_t *http)
{
    static const struct {
        const char *prefix, *verb, *group, *resource;
        int authn_only;
    } rows[] = {
        { "/api/v1/info", NULL, NULL, NULL, 1 },
        { "/api/v1/overview", "get", "resource.aibee.cn", "pools", 0 },
        { "/api/v1/queues", "get", "resource.aibee.cn", "pools", 0 },
        { "/api/v1/queues/history", "get", "resource.aibee.cn", "pools", 0 },
        { "/api/v1/gangs", "list", "scheduling.x-k8s.io", "podgroups", 0 },
        { "/api/v1/pending", "list", "", "pods", 0 },
        { "/api/v1/nodes", "get", "resource.aibee.cn", "pools", 0 },
        { "/api/v1/nodes/map", "get", "resource.aibee.cn", "pools", 0 },
        { "/api/v1/multicluster", "list", "resource.aibee.cn", "multiclusterjobs", 0 },
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        http_route_t r = { .prefix = rows[i].prefix,
                           .fn = route_fn,
                           .ud = d,
                           .verb = rows[i].verb,
                           .group = rows[i].group,
                           .resource = rows[i].resource,
                           .authn_only = rows[i].authn_only };
        rc |= http_server_route(http, &r);
    }
    return rc ? -1 : 0;
}
