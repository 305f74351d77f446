/* config.c -- defaults, the AiSchedulerConfiguration YAML file (libyaml) and
 * the command-line flags. */
#include "config/config.h"
#include "topology/topology.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

#include "config/kubesched.h"
#include "config/loader.h"
#include "grouper/rules.h"
#include "util/util.h"

#define NRES_MAX         ((int)(sizeof(((fw_config_t *)0)->res_weights) / sizeof(((fw_config_t *)0)->res_weights[0])))
#define CFG_RES_NAME_MAX ((int)sizeof(((fw_resource_weight_t *)0)->name))

/* ---- small helpers ---------------------------------------------------- */

/* Strings: dst points at a string member the config owns, a char * of its
 * own or a const char * knob of c->sched (scheduler_opts_t borrows those).
 * Both kinds of pointer have one representation (C11 6.2.5), so the member
 * is read and written as bytes. put_str takes owned (heap or NULL). */
static char *get_owned(const void *dst)
{
    char *p;
    memcpy(&p, dst, sizeof p);
    return p;
}

static void put_str(void *dst, char *owned)
{
    char *old = get_owned(dst);
    memcpy(dst, &owned, sizeof owned);
    free(old);
}

void cfg_set_str(void *dst, const char *s)
{
    put_str(dst, s ? util_strdup(s) : NULL);
}

static int parse_ll(const char *s, long long *out)
{
    char *end;
    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_int_range(const char *s, int min, int max, int *out)
{
    long long v;
    if (parse_ll(s, &v) < 0 || v < min || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_double_range(const char *s, double min, double max, double *out)
{
    char *end;
    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const t[] = { "true", "True", "TRUE", "1", "t", "T", NULL };
    static const char *const f[] = { "false", "False", "FALSE", "0", "f", "F", NULL };
    for (int i = 0; t[i]; i++)
        if (strcmp(s, t[i]) == 0) {
            *out = 1;
            return 0;
        }
    for (int i = 0; f[i]; i++)
        if (strcmp(s, f[i]) == 0) {
            *out = 0;
            return 0;
        }
    return -1;
}

static int parse_strategy(const char *s, score_strategy_t *out)
{
    if (!strcasecmp(s, "LeastAllocated") || !strcasecmp(s, "least")) {
        *out = SCORE_LEAST_ALLOCATED;
        return 0;
    }
    if (!strcasecmp(s, "MostAllocated") || !strcasecmp(s, "most")) {
        *out = SCORE_MOST_ALLOCATED;
        return 0;
    }
    return -1;
}

int config_parse_duration(const char *s, int *seconds)
{
    int64_t ms;
    if (util_parse_duration_ms(s, &ms) != 0 || ms % 1000 || ms / 1000 > INT_MAX)
        return -1;
    *seconds = (int)(ms / 1000);
    return 0;
}

static void own_knob_strings(sched_config_t *c, int release);
static int validate_profiles(const sched_config_t *c, const char *file, char *err, size_t errlen);

/* ---- defaults ----------------------------------------------------------- */

void config_default(sched_config_t *c)
{
    memset(c, 0, sizeof *c);
    /* The knobs' defaults are the scheduler's own; their strings become
     * copies the config owns. */
    scheduler_opts_default(&c->sched);
    own_knob_strings(c, 0);
    c->qps = 500;
    c->burst = 1000;
    c->leader.enabled = 1;
    c->leader.lease_name = util_strdup("ai-scheduler");
    c->leader.lease_namespace = util_strdup("kube-system");
    c->leader.lease_duration_s = 15;
    c->leader.renew_deadline_s = 10;
    c->leader.retry_period_s = 2;
    char host[256] = "localhost", id[320];
    if (gethostname(host, sizeof host - 1) < 0 || !host[0])
        strcpy(host, "localhost");
    host[sizeof host - 1] = 0;
    snprintf(id, sizeof id, "%s_%ld", host, (long)getpid());
    /* In a pod with the chart's downward-API env: NAMESPACE/POD_pid, so a
     * client finds the leader's pod from the Lease (cmd debugclient.c). */
    const char *pod = getenv("POD_NAME"), *pns = getenv("POD_NAMESPACE");
    if (pod && *pod && pns && *pns && strlen(pod) < 254 && strlen(pns) < 64 && !strchr(pns, '/'))
        snprintf(id, sizeof id, "%s/%s_%ld", pns, pod, (long)getpid());
    c->leader.identity = util_strdup(id);
    c->metrics_bind_address = util_strdup("0.0.0.0");
    c->metrics_port = 10261;
    c->always_allow_paths = util_strdup("/healthz,/readyz,/livez");
}

void config_free(sched_config_t *c)
{
    if (!c)
        return;
    own_knob_strings(c, 1);
    free(c->kubeconfig);
    free(c->config_file);
    free(c->leader.lease_name);
    free(c->leader.lease_namespace);
    free(c->leader.identity);
    free(c->metrics_bind_address);
    free(c->tls_cert_file);
    free(c->tls_private_key_file);
    free(c->client_ca_file);
    free(c->always_allow_paths);
    cfg_free_profiles(c);
    memset(c, 0, sizeof *c);
}

/* A bad workload table file is said at start, not when leadership comes. */
static int validate_workload_table(const sched_config_t *c, char *err, size_t errlen)
{
    const char *f = c->sched.workload_groups_file;
    if (!c->sched.workload_groups || !f || !f[0])
        return 0;
    wl_table_t *t = wl_table_new_default();
    int rc = wl_table_load_file(t, f, err, errlen);
    wl_table_free(t);
    return rc;
}

int config_validate(const sched_config_t *c, char *err, size_t errlen)
{
    const sched_leader_config_t *l = &c->leader;
    if (!c->sched.scheduler_name || !*c->sched.scheduler_name)
        return util_errf(err, errlen, "scheduler name must not be empty");
    if (c->qps < 0 || c->burst < 0)
        return util_errf(err, errlen, "client qps and burst must not be negative");
    if (c->qps > 0 && c->burst < 1)
        return util_errf(err, errlen, "client burst must be at least 1 when qps is set");
    if (c->sched.bind_workers < 1 || c->sched.bind_workers > 1024)
        return util_errf(err, errlen, "bind workers must be in 1..1024, not %d", c->sched.bind_workers);
    if (c->metrics_port < 0 || c->metrics_port > 65535)
        return util_errf(err, errlen, "metrics port must be in 0..65535, not %d", c->metrics_port);
    if (c->metrics_port) {
        unsigned char buf[sizeof(struct in6_addr)];
        const char *a = c->metrics_bind_address ? c->metrics_bind_address : "";
        if (inet_pton(AF_INET, a, buf) != 1 && inet_pton(AF_INET6, a, buf) != 1)
            return util_errf(err, errlen, "metrics bind address \"%s\" is not an IP address", a);
    }
    if (!!c->tls_cert_file != !!c->tls_private_key_file)
        return util_errf(err, errlen, "--tls-cert-file and --tls-private-key-file go together: give both or neither");
    for (const char *p = c->always_allow_paths; p && *p;) {
        p += strspn(p, ", ");
        size_t k = strcspn(p, ", ");
        if (k && p[0] != '/')
            return util_errf(err, errlen, "authorization always-allow path \"%.*s\" does not start with /", (int)k, p);
        p += k;
    }
    if (c->sched.fw.percentage_of_nodes_to_score < 0 || c->sched.fw.percentage_of_nodes_to_score > 100)
        return util_errf(err, errlen, "percentageOfNodesToScore must be in 0..100");
    if (c->sched.pool_status_interval_s < 1)
        return util_errf(err, errlen, "pool status interval must be at least 1s");
    if (validate_profiles(c, c->config_file, err, errlen) != 0)
        return -1;
    if (validate_workload_table(c, err, errlen) != 0)
        return -1;
    if (!l->enabled)
        return 0;
    if (!l->lease_name || !*l->lease_name || !l->lease_namespace || !*l->lease_namespace)
        return util_errf(err, errlen, "leader election needs a lease name and namespace");
    if (!l->identity || !*l->identity)
        return util_errf(err, errlen, "leader election needs an identity");
    if (l->retry_period_s < 1)
        return util_errf(err, errlen, "leader election retry period must be at least 1s");
    if (l->renew_deadline_s * 5 <= l->retry_period_s * 6)
        return util_errf(err, errlen,
                         "leader election renew deadline (%ds) must be greater than 1.2 x retry period (%ds)",
                         l->renew_deadline_s, l->retry_period_s);
    if (l->lease_duration_s <= l->renew_deadline_s)
        return util_errf(err, errlen, "leader election lease duration (%ds) must be greater than renew deadline (%ds)",
                         l->lease_duration_s, l->renew_deadline_s);
    return 0;
}

/* ---- YAML file ---------------------------------------------------------- */

int cfg_fail(cfg_loader_t *l, const yaml_node_t *n, const char *fmt, ...)
{
    if (!l->err || !l->errlen)
        return -1;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(l->err, l->errlen, "%s:%lu: %s", l->name, n ? (unsigned long)n->start_mark.line + 1 : 0UL, msg);
    return -1;
}

/* The scalar's text, or NULL (with the error set) when n is not a scalar or
 * holds a NUL byte. */
const char *cfg_scalar(cfg_loader_t *l, const yaml_node_t *n, const char *what)
{
    if (!n || n->type != YAML_SCALAR_NODE) {
        cfg_fail(l, n, "%s: expected a scalar value", what);
        return NULL;
    }
    if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length) {
        cfg_fail(l, n, "%s: value contains a NUL byte", what);
        return NULL;
    }
    return (const char *)n->data.scalar.value;
}

int cfg_is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    const char *v = (const char *)n->data.scalar.value;
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/* dst: a string member of the config (see cfg_set_str). */
int cfg_get_str(cfg_loader_t *l, const yaml_node_t *n, const char *what, int allow_empty, void *dst)
{
    if (allow_empty && n && cfg_is_null(n)) {
        cfg_set_str(dst, NULL);
        return 0;
    }
    const char *v = cfg_scalar(l, n, what);
    if (!v)
        return -1;
    if (!*v && !allow_empty)
        return cfg_fail(l, n, "%s: must not be empty", what);
    cfg_set_str(dst, *v ? v : NULL);
    return 0;
}

int cfg_get_int(cfg_loader_t *l, const yaml_node_t *n, const char *what, int min, int max, int *dst)
{
    const char *v = cfg_scalar(l, n, what);
    if (!v)
        return -1;
    if (parse_int_range(v, min, max, dst) < 0)
        return cfg_fail(l, n, "%s: \"%s\" is not an integer in %d..%d", what, v, min, max);
    return 0;
}

/* A seed: decimal, 1..2^64-1 (0 would mean "from the time"). */
static int parse_seed(const char *v, uint64_t *dst)
{
    if (!v || *v < '0' || *v > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || x == 0)
        return -1;
    *dst = (uint64_t)x;
    return 0;
}

static int cfg_get_seed(cfg_loader_t *l, const yaml_node_t *n, const char *what, uint64_t *dst)
{
    const char *v = cfg_scalar(l, n, what);
    if (!v)
        return -1;
    if (parse_seed(v, dst) < 0)
        return cfg_fail(l, n, "%s: \"%s\" is not an integer in 1..18446744073709551615", what, v);
    return 0;
}

int cfg_get_double(cfg_loader_t *l, const yaml_node_t *n, const char *what, double min, double max, double *dst)
{
    const char *v = cfg_scalar(l, n, what);
    if (!v)
        return -1;
    if (parse_double_range(v, min, max, dst) < 0)
        return cfg_fail(l, n, "%s: \"%s\" is not a number in %g..%g", what, v, min, max);
    return 0;
}

int cfg_get_bool(cfg_loader_t *l, const yaml_node_t *n, const char *what, int *dst)
{
    const char *v = cfg_scalar(l, n, what);
    if (!v)
        return -1;
    if (parse_bool(v, dst) < 0)
        return cfg_fail(l, n, "%s: \"%s\" is not a boolean (true or false)", what, v);
    return 0;
}

int cfg_get_duration(cfg_loader_t *l, const yaml_node_t *n, const char *what, int *dst)
{
    const char *v = cfg_scalar(l, n, what);
    if (!v)
        return -1;
    if (config_parse_duration(v, dst) < 0 || *dst < 1)
        return cfg_fail(l, n, "%s: \"%s\" is not a duration of whole seconds such as \"15s\"", what, v);
    return 0;
}

/* A duration that may be 0 (reservationAfter: 0 disables). */
static int cfg_get_duration0(cfg_loader_t *l, const yaml_node_t *n, const char *what, int *dst)
{
    const char *v = cfg_scalar(l, n, what);
    if (!v)
        return -1;
    if (config_parse_duration(v, dst) < 0 || *dst < 0)
        return cfg_fail(l, n, "%s: \"%s\" is not a duration of whole seconds such as \"5m\", or \"0\"", what, v);
    return 0;
}

/* Iterates a mapping: calls fn(l, key, keynode, valuenode, ctx) per pair.
 * Rejects non-mappings, non-scalar and duplicate keys. */

int cfg_each_pair(cfg_loader_t *l, const yaml_node_t *map, const char *what, cfg_pair_fn fn, void *ctx)
{
    if (!map || map->type != YAML_MAPPING_NODE) {
        if (map && cfg_is_null(map))
            return 0; /* "section:" with nothing under it */
        return cfg_fail(l, map, "%s: expected a mapping", what);
    }
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const yaml_node_t *kn = yaml_document_get_node(l->doc, p->key);
        const yaml_node_t *vn = yaml_document_get_node(l->doc, p->value);
        const char *key = cfg_scalar(l, kn, what);
        if (!key || !vn)
            return -1;
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
            const yaml_node_t *qk = yaml_document_get_node(l->doc, q->key);
            if (qk && qk->type == YAML_SCALAR_NODE && !strcmp((const char *)qk->data.scalar.value, key))
                return cfg_fail(l, kn, "duplicate key \"%s\" in %s", key, what);
        }
        if (fn(l, key, kn, vn, ctx) < 0)
            return -1;
    }
    return 0;
}

int cfg_each_item(cfg_loader_t *l, const yaml_node_t *seq, const char *not_list, cfg_item_fn fn, void *ctx)
{
    if (cfg_is_null(seq))
        return 0;
    if (seq->type != YAML_SEQUENCE_NODE)
        return cfg_fail(l, seq, "%s", not_list);
    for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top; i++)
        if (fn(l, yaml_document_get_node(l->doc, *i), ctx) < 0)
            return -1;
    return 0;
}

#define UNKNOWN(section) cfg_fail(l, kn, "unknown key \"%s\" in %s", key, section)

int cfg_on_client(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    sched_config_t *c = ctx;
    if (!strcmp(key, "qps"))
        return cfg_get_double(l, vn, "clientConnection.qps", 0, 1e6, &c->qps);
    if (!strcmp(key, "burst"))
        return cfg_get_int(l, vn, "clientConnection.burst", 0, 1000000, &c->burst);
    if (!strcmp(key, "kubeconfig"))
        return cfg_get_str(l, vn, "clientConnection.kubeconfig", 1, &c->kubeconfig);
    return UNKNOWN("clientConnection");
}

int cfg_on_leader(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    sched_leader_config_t *le = &((sched_config_t *)ctx)->leader;
    if (!strcmp(key, "leaderElect"))
        return cfg_get_bool(l, vn, "leaderElection.leaderElect", &le->enabled);
    if (!strcmp(key, "leaseDuration"))
        return cfg_get_duration(l, vn, "leaderElection.leaseDuration", &le->lease_duration_s);
    if (!strcmp(key, "renewDeadline"))
        return cfg_get_duration(l, vn, "leaderElection.renewDeadline", &le->renew_deadline_s);
    if (!strcmp(key, "retryPeriod"))
        return cfg_get_duration(l, vn, "leaderElection.retryPeriod", &le->retry_period_s);
    if (!strcmp(key, "resourceName"))
        return cfg_get_str(l, vn, "leaderElection.resourceName", 0, &le->lease_name);
    if (!strcmp(key, "resourceNamespace"))
        return cfg_get_str(l, vn, "leaderElection.resourceNamespace", 0, &le->lease_namespace);
    if (!strcmp(key, "resourceLock")) {
        const char *v = cfg_scalar(l, vn, "leaderElection.resourceLock");
        if (!v)
            return -1;
        if (strcmp(v, "leases"))
            return cfg_fail(l, vn, "leaderElection.resourceLock: only \"leases\" is supported, not \"%s\"", v);
        return 0;
    }
    return UNKNOWN("leaderElection");
}

typedef struct res_ctx {
    fw_resource_weight_t *rw;
    int have_name, have_weight;
} res_ctx_t;

static int on_resource(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    res_ctx_t *r = ctx;
    if (!strcmp(key, "name")) {
        const char *v = cfg_scalar(l, vn, "scoring.resources.name");
        if (!v)
            return -1;
        if (!*v || strlen(v) >= (size_t)CFG_RES_NAME_MAX)
            return cfg_fail(l, vn, "scoring.resources.name: must be 1..%d characters", CFG_RES_NAME_MAX - 1);
        strcpy(r->rw->name, v);
        r->have_name = 1;
        return 0;
    }
    if (!strcmp(key, "weight")) {
        r->have_weight = 1;
        return cfg_get_int(l, vn, "scoring.resources.weight", 1, 100, &r->rw->weight);
    }
    return UNKNOWN("scoring.resources");
}

/* topologyLevels: a list of label keys, or one comma-separated string;
 * kept as the comma string the scheduler parses (and checks). */
static int load_topology_levels(cfg_loader_t *l, const yaml_node_t *vn, void *dst)
{
    if (vn->type != YAML_SEQUENCE_NODE)
        return cfg_get_str(l, vn, "topologyLevels", 1, dst);
    sbuf_t b = { 0 };
    for (yaml_node_item_t *it = vn->data.sequence.items.start; it < vn->data.sequence.items.top; it++) {
        const yaml_node_t *item = yaml_document_get_node(l->doc, *it);
        const char *v = item ? cfg_scalar(l, item, "topologyLevels") : NULL;
        if (!v) {
            sbuf_free(&b);
            return -1;
        }
        if (!*v || strchr(v, ',')) {
            sbuf_free(&b);
            return cfg_fail(l, item, "topologyLevels: each item is one node label key or device:DOMAIN/NAME");
        }
        sbuf_printf(&b, "%s%s", b.len ? "," : "", v);
    }
    put_str(dst, b.data ? b.data : util_strdup(""));
    return 0;
}

int cfg_load_resources(cfg_loader_t *l, const yaml_node_t *seq, fw_config_t *fw)
{
    if (seq->type != YAML_SEQUENCE_NODE)
        return cfg_fail(l, seq, "scoring.resources: expected a list of {name, weight}");
    fw_resource_weight_t tmp[NRES_MAX];
    int n = 0;
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
        const yaml_node_t *item = yaml_document_get_node(l->doc, *it);
        if (!item)
            return cfg_fail(l, seq, "scoring.resources: bad item");
        if (n == NRES_MAX)
            return cfg_fail(l, item, "scoring.resources: at most %d resources", NRES_MAX);
        memset(&tmp[n], 0, sizeof tmp[n]);
        tmp[n].weight = 1;
        res_ctx_t r = { &tmp[n], 0, 0 };
        if (item->type != YAML_MAPPING_NODE)
            return cfg_fail(l, item, "scoring.resources: expected a mapping with name and weight");
        if (cfg_each_pair(l, item, "scoring.resources", on_resource, &r) < 0)
            return -1;
        if (!r.have_name)
            return cfg_fail(l, item, "scoring.resources: item without a name");
        for (int i = 0; i < n; i++)
            if (!strcmp(tmp[i].name, tmp[n].name))
                return cfg_fail(l, item, "scoring.resources: \"%s\" listed twice", tmp[n].name);
        n++;
    }
    memcpy(fw->res_weights, tmp, sizeof tmp[0] * (size_t)n);
    fw->nres_weights = n;
    return 0;
}

static int on_scoring(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    fw_config_t *fw = &((sched_config_t *)ctx)->sched.fw;
    if (!strcmp(key, "strategy")) {
        const char *v = cfg_scalar(l, vn, "scoring.strategy");
        if (!v)
            return -1;
        if (parse_strategy(v, &fw->strategy) < 0)
            return cfg_fail(l, vn, "scoring.strategy: \"%s\" is not LeastAllocated or MostAllocated", v);
        return 0;
    }
    if (!strcmp(key, "resources"))
        return cfg_load_resources(l, vn, fw);
    if (!strcmp(key, "percentageOfNodesToScore"))
        return cfg_get_int(l, vn, "scoring.percentageOfNodesToScore", 0, 100, &fw->percentage_of_nodes_to_score);
    return UNKNOWN("scoring");
}

static int on_weights(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    fw_config_t *fw = ctx;
    int *dst = NULL;
    if (!strcmp(key, "NodeResourcesFit"))
        dst = &fw->weight_resources;
    else if (!strcmp(key, "NodeResourcesBalancedAllocation"))
        dst = &fw->weight_balanced;
    else if (!strcmp(key, "NodeAffinity"))
        dst = &fw->weight_node_affinity;
    else if (!strcmp(key, "TaintToleration"))
        dst = &fw->weight_taint_toleration;
    else
        return UNKNOWN("plugins.weights");
    char what[96];
    snprintf(what, sizeof what, "plugins.weights.%s", key);
    return cfg_get_int(l, vn, what, 0, 100, dst);
}

/* ---- plugins per extension point, profiles, pluginConfig ---------------- */

int cfg_plugin_item(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    cfg_plugin_item_t *it = ctx;
    if (!strcmp(key, "name")) {
        const char *v = cfg_scalar(l, vn, "plugins.name");
        if (!v)
            return -1;
        if (!*v || strlen(v) >= sizeof it->name)
            return cfg_fail(l, vn, "plugins.name: must be 1..%d characters", (int)sizeof it->name - 1);
        strcpy(it->name, v);
        it->have_name = 1;
        return 0;
    }
    if (!strcmp(key, "weight"))
        return cfg_get_int(l, vn, "plugins.weight", 0, 1000000, &it->weight);
    return UNKNOWN("plugins");
}

typedef struct pset_ctx {
    fw_config_t *fw;
    int point;
} pset_ctx_t;

static int add_plugin_op(cfg_loader_t *l, const yaml_node_t *at, fw_config_t *fw, int point, int enable,
                         const cfg_plugin_item_t *it)
{
    const char *pt = fw_point_name(point);
    if (!(enable == 0 && !strcmp(it->name, "*"))) {
        int k = fw_plugin_known(it->name, point);
        if (k == 0)
            return cfg_fail(l, at, "plugins.%s: unknown plugin \"%s\"", pt, it->name);
        if (k < 0)
            return cfg_fail(l, at, "plugins.%s: plugin \"%s\" does not extend %s", pt, it->name, pt);
    }
    if (fw->nplugin_ops >= FW_MAX_PLUGIN_OPS)
        return cfg_fail(l, at, "plugins: at most %d enabled and disabled entries", FW_MAX_PLUGIN_OPS);
    fw_plugin_op_t *op = &fw->plugin_ops[fw->nplugin_ops++];
    memset(op, 0, sizeof *op);
    op->point = point;
    op->enable = enable;
    op->weight = it->weight;
    op->line = (int)at->start_mark.line + 1;
    strcpy(op->name, it->name);
    return 0;
}

int cfg_plugin_set(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, const char *point,
                   cfg_plugin_add_fn add, void *ctx)
{
    int enable = !strcmp(key, "enabled");
    if (!enable && strcmp(key, "disabled"))
        return UNKNOWN("plugins");
    if (cfg_is_null(vn))
        return 0;
    if (vn->type != YAML_SEQUENCE_NODE)
        return cfg_fail(l, vn, "plugins.%s.%s: expected a list of {name%s}", point, key, enable ? ", weight" : "");
    for (yaml_node_item_t *i = vn->data.sequence.items.start; i < vn->data.sequence.items.top; i++) {
        const yaml_node_t *item = yaml_document_get_node(l->doc, *i);
        cfg_plugin_item_t it;
        memset(&it, 0, sizeof it);
        if (!item || item->type != YAML_MAPPING_NODE)
            return cfg_fail(l, item ? item : vn, "plugins.%s.%s: expected {name: ...}", point, key);
        if (cfg_each_pair(l, item, "plugins", cfg_plugin_item, &it) < 0)
            return -1;
        if (!it.have_name)
            return cfg_fail(l, item, "plugins.%s.%s: entry without a name", point, key);
        if (add(l, item, enable, &it, ctx) < 0)
            return -1;
    }
    return 0;
}

static int add_pset_op(cfg_loader_t *l, const yaml_node_t *item, int enable, const cfg_plugin_item_t *it, void *ctx)
{
    pset_ctx_t *p = ctx;
    return add_plugin_op(l, item, p->fw, p->point, enable, it);
}

static int on_plugin_set(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    return cfg_plugin_set(l, key, kn, vn, fw_point_name(((pset_ctx_t *)ctx)->point), add_pset_op, ctx);
}

/* An extension-point key of `plugins:` (filter, score, ...): 1 handled, 0
 * not a point, -1 error. */
static int plugins_point(cfg_loader_t *l, const char *key, const yaml_node_t *vn, fw_config_t *fw)
{
    int point = fw_point_from_name(key);
    if (point < 0)
        return 0;
    pset_ctx_t p = { fw, point };
    char what[64];
    snprintf(what, sizeof what, "plugins.%s", key);
    return cfg_each_pair(l, vn, what, on_plugin_set, &p) < 0 ? -1 : 1;
}

typedef struct constraint_ctx {
    fw_spread_default_t *d;
    int have_skew, have_key;
} constraint_ctx_t;

static int on_constraint(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    constraint_ctx_t *c = ctx;
    if (!strcmp(key, "maxSkew")) {
        c->have_skew = 1;
        return cfg_get_int(l, vn, "defaultConstraints.maxSkew", 1, 1000000, &c->d->max_skew);
    }
    if (!strcmp(key, "topologyKey")) {
        const char *v = cfg_scalar(l, vn, "defaultConstraints.topologyKey");
        if (!v)
            return -1;
        if (!*v || strlen(v) >= sizeof c->d->topology_key)
            return cfg_fail(l, vn, "defaultConstraints.topologyKey: must be 1..%d characters",
                            (int)sizeof c->d->topology_key - 1);
        strcpy(c->d->topology_key, v);
        c->have_key = 1;
        return 0;
    }
    if (!strcmp(key, "whenUnsatisfiable")) {
        const char *v = cfg_scalar(l, vn, "defaultConstraints.whenUnsatisfiable");
        if (!v)
            return -1;
        if (!strcmp(v, "ScheduleAnyway"))
            return 0;
        if (!strcmp(v, "DoNotSchedule"))
            return cfg_fail(l, vn,
                            "defaultConstraints.whenUnsatisfiable: DoNotSchedule default constraints are not "
                            "supported by ai-scheduler (ScheduleAnyway only)");
        return cfg_fail(l, vn, "defaultConstraints.whenUnsatisfiable: \"%s\" is not ScheduleAnyway", v);
    }
    if (!strcmp(key, "labelSelector"))
        return cfg_fail(l, kn,
                        "defaultConstraints.labelSelector: must be empty (kube computes it from the pod's owners)");
    return UNKNOWN("defaultConstraints");
}

int cfg_spread_args(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    cfg_spread_ctx_t *s = ctx;
    if (!strcmp(key, "defaultingType")) {
        const char *v = cfg_scalar(l, vn, "PodTopologySpread.defaultingType");
        if (!v)
            return -1;
        if (strcmp(v, "System") && strcmp(v, "List"))
            return cfg_fail(l, vn, "PodTopologySpread.defaultingType: \"%s\" is not System or List", v);
        s->have_type = 1;
        s->list = !strcmp(v, "List");
        return 0;
    }
    if (!strcmp(key, "defaultConstraints")) {
        if (cfg_is_null(vn))
            return 0;
        if (vn->type != YAML_SEQUENCE_NODE)
            return cfg_fail(l, vn, "PodTopologySpread.defaultConstraints: expected a list");
        s->fw->nspread_defaults = 0;
        for (yaml_node_item_t *i = vn->data.sequence.items.start; i < vn->data.sequence.items.top; i++) {
            const yaml_node_t *item = yaml_document_get_node(l->doc, *i);
            if (s->fw->nspread_defaults == FW_MAX_DEFAULT_SPREAD)
                return cfg_fail(l, item, "PodTopologySpread.defaultConstraints: at most %d", FW_MAX_DEFAULT_SPREAD);
            fw_spread_default_t *d = &s->fw->spread_defaults[s->fw->nspread_defaults];
            memset(d, 0, sizeof *d);
            constraint_ctx_t c = { d, 0, 0 };
            if (!item || item->type != YAML_MAPPING_NODE)
                return cfg_fail(l, item ? item : vn, "PodTopologySpread.defaultConstraints: expected a mapping");
            if (cfg_each_pair(l, item, "defaultConstraints", on_constraint, &c) < 0)
                return -1;
            if (!c.have_skew || !c.have_key)
                return cfg_fail(l, item, "PodTopologySpread.defaultConstraints: maxSkew and topologyKey are required");
            for (int j = 0; j < s->fw->nspread_defaults; j++)
                if (!strcmp(s->fw->spread_defaults[j].topology_key, d->topology_key))
                    return cfg_fail(l, item, "PodTopologySpread.defaultConstraints: topologyKey \"%s\" twice",
                                    d->topology_key);
            s->fw->nspread_defaults++;
        }
        return 0;
    }
    return UNKNOWN("PodTopologySpread args");
}

typedef struct resargs_ctx {
    fw_config_t *fw;
    const char *plugin;
} resargs_ctx_t;

static int on_resource_args(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    resargs_ctx_t *r = ctx;
    if (!strcmp(key, "resources"))
        return cfg_load_resources(l, vn, r->fw);
    return cfg_fail(l, kn, "unknown key \"%s\" in %s args", key, r->plugin);
}

int cfg_plugin_config_entry(cfg_loader_t *l, const yaml_node_t *item, const yaml_node_t **name_n,
                            const yaml_node_t **args, const char **name)
{
    *name_n = *args = NULL;
    if (!item || item->type != YAML_MAPPING_NODE)
        return cfg_fail(l, item, "pluginConfig: expected {name, args}");
    for (yaml_node_pair_t *q = item->data.mapping.pairs.start; q < item->data.mapping.pairs.top; q++) {
        const yaml_node_t *kn = yaml_document_get_node(l->doc, q->key);
        const yaml_node_t *vn = yaml_document_get_node(l->doc, q->value);
        const char *key = cfg_scalar(l, kn, "pluginConfig");
        if (!key || !vn)
            return -1;
        if (!strcmp(key, "name") && !*name_n)
            *name_n = vn;
        else if (!strcmp(key, "args") && !*args)
            *args = vn;
        else
            return cfg_fail(l, kn, "%s key \"%s\" in pluginConfig",
                            strcmp(key, "name") && strcmp(key, "args") ? "unknown" : "duplicate", key);
    }
    *name = *name_n ? cfg_scalar(l, *name_n, "pluginConfig.name") : NULL;
    if (!*name)
        return *name_n ? -1 : cfg_fail(l, item, "pluginConfig: entry without a name");
    return 0;
}

/* The profile being read, and the caller's hook for the args it reads
 * itself (kubesched.c's v1beta1 files). */
typedef struct profile_ctx {
    sched_profile_config_t *p;
    sched_config_t *c;
    cfg_args_hook_fn hook;
} profile_ctx_t;

/* One pluginConfig entry {name, args}. */
static int load_plugin_config(cfg_loader_t *l, const yaml_node_t *item, void *ctx)
{
    profile_ctx_t *pc = ctx;
    sched_profile_config_t *p = pc->p;
    const yaml_node_t *name_n, *args;
    const char *name;
    if (cfg_plugin_config_entry(l, item, &name_n, &args, &name) < 0)
        return -1;
    if (pc->hook) {
        int rc = pc->hook(l, name_n, name, args, p, pc->c);
        if (rc != 1)
            return rc;
    }
    int known = 0;
    for (int pt = 0; pt < FW_NPOINTS && !known; pt++)
        known = fw_plugin_known(name, pt) == 1;
    if (!known)
        return cfg_fail(l, name_n, "pluginConfig: unknown plugin \"%s\"", name);
    if (!args || cfg_is_null(args))
        return 0;
    if (!strcmp(name, "NodeResourcesLeastAllocated") || !strcmp(name, "NodeResourcesMostAllocated")) {
        resargs_ctx_t r = { &p->fw, name };
        p->has_resources = 1;
        return cfg_each_pair(l, args, "pluginConfig.args", on_resource_args, &r);
    }
    if (!strcmp(name, "PodTopologySpread")) {
        cfg_spread_ctx_t s = { &p->fw, 0, 0 };
        p->fw.nspread_defaults = 0;
        if (cfg_each_pair(l, args, "PodTopologySpread args", cfg_spread_args, &s) < 0)
            return -1;
        /* v1beta1 defaulting: List when constraints are given, else System. */
        if (!s.have_type)
            s.list = p->fw.nspread_defaults > 0;
        if (!s.list && p->fw.nspread_defaults > 0)
            return cfg_fail(l, args,
                            "PodTopologySpread: defaultConstraints must be empty when defaultingType is System");
        p->fw.spread_list_defaulting = s.list;
        p->has_spread = 1;
        return 0;
    }
    return cfg_fail(l, name_n, "pluginConfig: args for \"%s\" are not supported by ai-scheduler", name);
}

static int on_profile_plugins(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    int rc = plugins_point(l, key, vn, &((profile_ctx_t *)ctx)->p->fw);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    return UNKNOWN("profiles.plugins");
}

static int on_profile(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    profile_ctx_t *pc = ctx;
    if (!strcmp(key, "schedulerName"))
        return cfg_get_str(l, vn, "profiles.schedulerName", 0, &pc->p->scheduler_name);
    if (!strcmp(key, "plugins"))
        return cfg_each_pair(l, vn, "profiles.plugins", on_profile_plugins, pc);
    if (!strcmp(key, "pluginConfig"))
        return cfg_each_item(l, vn, "pluginConfig: expected a list of {name, args}", load_plugin_config, pc);
    return UNKNOWN("profiles");
}

void cfg_free_profiles(sched_config_t *c)
{
    for (int i = 0; i < c->nprofiles; i++)
        free(c->profiles[i].scheduler_name);
    free(c->profiles);
    c->profiles = NULL;
    c->nprofiles = 0;
}

int cfg_load_profiles(cfg_loader_t *l, const yaml_node_t *seq, sched_config_t *c, cfg_args_hook_fn hook)
{
    if (seq->type != YAML_SEQUENCE_NODE)
        return cfg_fail(l, seq, "profiles: expected a list of {schedulerName, plugins, pluginConfig}");
    int n = (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    if (n > CFG_MAX_PROFILES)
        return cfg_fail(l, seq, "profiles: at most %d", CFG_MAX_PROFILES);
    cfg_free_profiles(c);
    if (n == 0)
        return 0;
    c->profiles = util_xcalloc((size_t)n, sizeof *c->profiles);
    for (yaml_node_item_t *i = seq->data.sequence.items.start; i < seq->data.sequence.items.top; i++) {
        const yaml_node_t *item = yaml_document_get_node(l->doc, *i);
        sched_profile_config_t *p = &c->profiles[c->nprofiles++];
        memset(p, 0, sizeof *p);
        fw_config_default(&p->fw);
        p->line = item ? (int)item->start_mark.line + 1 : 0;
        if (!item || item->type != YAML_MAPPING_NODE)
            return cfg_fail(l, item ? item : seq, "profiles: expected a mapping");
        profile_ctx_t pc = { p, c, hook };
        if (cfg_each_pair(l, item, "profiles", on_profile, &pc) < 0)
            return -1;
    }
    return 0;
}

int config_nprofiles(const sched_config_t *c)
{
    return c->nprofiles > 0 ? c->nprofiles : 1;
}

const char *config_profile_fw(const sched_config_t *c, int i, fw_config_t *out)
{
    *out = c->sched.fw;
    if (c->nprofiles == 0 || i < 0 || i >= c->nprofiles)
        return c->sched.scheduler_name;
    const sched_profile_config_t *p = &c->profiles[i];
    for (int k = 0; k < p->fw.nplugin_ops && out->nplugin_ops < FW_MAX_PLUGIN_OPS; k++)
        out->plugin_ops[out->nplugin_ops++] = p->fw.plugin_ops[k];
    if (p->has_resources) {
        memcpy(out->res_weights, p->fw.res_weights, sizeof out->res_weights);
        out->nres_weights = p->fw.nres_weights;
    }
    if (p->has_strategy) { /* a v1 profile: its strategy and kube 1.23+'s maths */
        out->strategy = p->fw.strategy;
        out->v1_resource_scores = p->fw.v1_resource_scores;
    }
    if (p->has_pct)
        out->percentage_of_nodes_to_score = p->fw.percentage_of_nodes_to_score;
    if (p->has_spread) {
        out->spread_list_defaulting = p->fw.spread_list_defaulting;
        memcpy(out->spread_defaults, p->fw.spread_defaults, sizeof out->spread_defaults);
        out->nspread_defaults = p->fw.nspread_defaults;
    }
    return p->scheduler_name ? p->scheduler_name : c->sched.scheduler_name;
}

/* Every profile as the framework will build it: unknown names were caught
 * while reading; here a plugin enabled twice, no binder, a name used twice. */
static int validate_profiles(const sched_config_t *c, const char *file, char *err, size_t errlen)
{
    int n = config_nprofiles(c);
    for (int i = 0; i < n; i++) {
        fw_config_t fw;
        const char *name = config_profile_fw(c, i, &fw);
        char msg[300];
        int line = 0;
        if (fw_config_check(&fw, msg, sizeof msg, &line) != 0) {
            if (!line && c->nprofiles)
                line = c->profiles[i].line;
            if (line && file)
                return util_errf(err, errlen, "%s:%d: profile \"%s\": %s", file, line, name, msg);
            return util_errf(err, errlen, "profile \"%s\": %s", name, msg);
        }
        for (int j = 0; j < i; j++) {
            fw_config_t other;
            if (!strcmp(config_profile_fw(c, j, &other), name)) {
                if (file && c->nprofiles)
                    return util_errf(err, errlen, "%s:%d: profiles: schedulerName \"%s\" is used twice", file,
                                     c->profiles[i].line, name);
                return util_errf(err, errlen, "profiles: schedulerName \"%s\" is used twice", name);
            }
        }
    }
    return 0;
}

static int on_plugins(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    if (!strcmp(key, "weights"))
        return cfg_each_pair(l, vn, "plugins.weights", on_weights, &((sched_config_t *)ctx)->sched.fw);
    int rc = plugins_point(l, key, vn, &((sched_config_t *)ctx)->sched.fw);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    return UNKNOWN("plugins");
}

static int on_preemption(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    if (!strcmp(key, "disabled"))
        return cfg_get_bool(l, vn, "preemption.disabled", &((sched_config_t *)ctx)->sched.disable_preemption);
    if (!strcmp(key, "evictionGracePeriodSeconds"))
        return cfg_get_int(l, vn, "preemption.evictionGracePeriodSeconds", -1, 86400,
                           &((sched_config_t *)ctx)->sched.eviction_grace_s);
    return UNKNOWN("preemption");
}

static int on_metrics(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    sched_config_t *c = ctx;
    if (!strcmp(key, "bindAddress"))
        return cfg_get_str(l, vn, "metrics.bindAddress", 0, &c->metrics_bind_address);
    if (!strcmp(key, "port"))
        return cfg_get_int(l, vn, "metrics.port", 0, 65535, &c->metrics_port);
    return UNKNOWN("metrics");
}

static int on_serving(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    sched_config_t *c = ctx;
    if (!strcmp(key, "tlsCertFile"))
        return cfg_get_str(l, vn, "serving.tlsCertFile", 0, &c->tls_cert_file);
    if (!strcmp(key, "tlsPrivateKeyFile"))
        return cfg_get_str(l, vn, "serving.tlsPrivateKeyFile", 0, &c->tls_private_key_file);
    if (!strcmp(key, "clientCAFile"))
        return cfg_get_str(l, vn, "serving.clientCAFile", 0, &c->client_ca_file);
    if (!strcmp(key, "plainHTTP"))
        return cfg_get_bool(l, vn, "serving.plainHTTP", &c->plain_http);
    if (!strcmp(key, "authorizationAlwaysAllowPaths"))
        return cfg_get_str(l, vn, "serving.authorizationAlwaysAllowPaths", 1, &c->always_allow_paths);
    return UNKNOWN("serving");
}

typedef struct top_ctx {
    sched_config_t *c;
    int api_ok, kind_ok;
} top_ctx_t;

static int on_top(cfg_loader_t *l, const char *key, const yaml_node_t *kn, const yaml_node_t *vn, void *ctx)
{
    top_ctx_t *t = ctx;
    sched_config_t *c = t->c;
    if (!strcmp(key, "apiVersion") || !strcmp(key, "kind")) {
        int api = key[0] == 'a';
        const char *want = api ? CONFIG_API_VERSION : CONFIG_KIND;
        const char *v = cfg_scalar(l, vn, key);
        if (!v)
            return -1;
        if (strcmp(v, want))
            return cfg_fail(l, vn, "%s is \"%s\", expected \"%s\"", key, v, want);
        *(api ? &t->api_ok : &t->kind_ok) = 1;
        return 0;
    }
    if (!strcmp(key, "schedulerName"))
        return cfg_get_str(l, vn, "schedulerName", 0, &c->sched.scheduler_name);
    if (!strcmp(key, "clientConnection"))
        return cfg_each_pair(l, vn, "clientConnection", cfg_on_client, c);
    if (!strcmp(key, "leaderElection"))
        return cfg_each_pair(l, vn, "leaderElection", cfg_on_leader, c);
    if (!strcmp(key, "scoring"))
        return cfg_each_pair(l, vn, "scoring", on_scoring, c);
    if (!strcmp(key, "plugins"))
        return cfg_each_pair(l, vn, "plugins", on_plugins, c);
    if (!strcmp(key, "profiles"))
        return cfg_load_profiles(l, vn, c, NULL);
    if (!strcmp(key, "preemption"))
        return cfg_each_pair(l, vn, "preemption", on_preemption, c);
    if (!strcmp(key, "seed"))
        return cfg_get_seed(l, vn, "seed", &c->sched.seed);
    if (!strcmp(key, "bindWorkers"))
        return cfg_get_int(l, vn, "bindWorkers", 1, 1024, &c->sched.bind_workers);
    if (!strcmp(key, "gangScheduleTimeoutSeconds"))
        return cfg_get_int(l, vn, "gangScheduleTimeoutSeconds", 1, 86400, &c->sched.gang_timeout_s);
    if (!strcmp(key, "reservationAfter"))
        return cfg_get_duration0(l, vn, "reservationAfter", &c->sched.reservation_after_s);
    if (!strcmp(key, "reservationTimeout"))
        return cfg_get_duration(l, vn, "reservationTimeout", &c->sched.reservation_timeout_s);
    if (!strcmp(key, "staleGangGraceSeconds"))
        return cfg_get_int(l, vn, "staleGangGraceSeconds", 0, 86400, &c->sched.stale_gang_grace_s);
    if (!strcmp(key, "evictStaleGangs"))
        return cfg_get_bool(l, vn, "evictStaleGangs", &c->sched.evict_stale_gangs);
    if (!strcmp(key, "usageHalfLifeSeconds"))
        return cfg_get_int(l, vn, "usageHalfLifeSeconds", 0, 365 * 86400, &c->sched.usage_half_life_s);
    if (!strcmp(key, "starvationAgeSeconds"))
        return cfg_get_int(l, vn, "starvationAgeSeconds", 0, 365 * 86400, &c->sched.starvation_age_s);
    if (!strcmp(key, "nonPreemptiblePriority"))
        return cfg_get_int(l, vn, "nonPreemptiblePriority", INT32_MIN, INT32_MAX, &c->sched.non_preemptible_priority);
    if (!strcmp(key, "maxConsolidationMoves"))
        return cfg_get_int(l, vn, "maxConsolidationMoves", 0, 1000, &c->sched.max_consolidation_moves);
    if (!strcmp(key, "draQueueResources"))
        return cfg_get_str(l, vn, "draQueueResources", 1, &c->sched.dra_queue_resources);
    if (!strcmp(key, "topologyLevels"))
        return load_topology_levels(l, vn, &c->sched.topology_levels);
    if (!strcmp(key, "workloadGroups"))
        return cfg_get_bool(l, vn, "workloadGroups", &c->sched.workload_groups);
    if (!strcmp(key, "workloadGroupsFile"))
        return cfg_get_str(l, vn, "workloadGroupsFile", 1, &c->sched.workload_groups_file);
    if (!strcmp(key, "workloadGroupsRefreshSeconds"))
        return cfg_get_int(l, vn, "workloadGroupsRefreshSeconds", 1, 86400, &c->sched.workload_refresh_s);
    if (!strcmp(key, "gpuReservationNamespace"))
        return cfg_get_str(l, vn, "gpuReservationNamespace", 0, &c->sched.gpu_namespace);
    if (!strcmp(key, "gpuReservationImage"))
        return cfg_get_str(l, vn, "gpuReservationImage", 0, &c->sched.gpu_image);
    if (!strcmp(key, "volumeBindTimeoutSeconds"))
        return cfg_get_int(l, vn, "volumeBindTimeoutSeconds", 1, 86400, &c->sched.volume_bind_timeout_s);
    if (!strcmp(key, "metrics"))
        return cfg_each_pair(l, vn, "metrics", on_metrics, c);
    if (!strcmp(key, "serving"))
        return cfg_each_pair(l, vn, "serving", on_serving, c);
    if (!strcmp(key, "poolStatusIntervalSeconds"))
        return cfg_get_int(l, vn, "poolStatusIntervalSeconds", 1, 86400, &c->sched.pool_status_interval_s);
    if (!strcmp(key, "verbosity"))
        return cfg_get_int(l, vn, "verbosity", 0, 10, &c->verbosity);
    return UNKNOWN(CONFIG_KIND);
}

static int parser_error(const yaml_parser_t *p, const char *name, char *err, size_t errlen)
{
    const yaml_mark_t *m = p->context ? &p->context_mark : &p->problem_mark;
    if (p->problem)
        m = &p->problem_mark;
    return util_errf(err, errlen, "%s:%lu: YAML: %s%s%s", name, (unsigned long)m->line + 1,
                     p->problem ? p->problem : "parse error", p->context ? " " : "", p->context ? p->context : "");
}

int config_load_string(sched_config_t *c, const char *yaml, size_t len, const char *name, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    int rc = -1;
    if (!name)
        name = "<config>";
    if (!yaml_parser_initialize(&parser))
        return util_errf(err, errlen, "%s: out of memory", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    if (!yaml_parser_load(&parser, &doc)) {
        parser_error(&parser, name, err, errlen);
        yaml_parser_delete(&parser);
        return -1;
    }
    cfg_loader_t l = { &doc, name, err, errlen };
    const yaml_node_t *root = yaml_document_get_root_node(&doc);
    top_ctx_t t = { c, 0, 0 };
    if (!root) {
        util_errf(err, errlen, "%s: empty configuration", name);
    } else if (root->type != YAML_MAPPING_NODE) {
        cfg_fail(&l, root, "expected a mapping with apiVersion: %s and kind: %s", CONFIG_API_VERSION, CONFIG_KIND);
    } else if (kubesched_is(&l, root)) {
        if (kubesched_load(&l, root, c) == 0)
            rc = validate_profiles(c, name, err, errlen);
    } else if (cfg_each_pair(&l, root, CONFIG_KIND, on_top, &t) == 0) {
        if (!t.api_ok)
            cfg_fail(&l, root, "missing apiVersion: %s", CONFIG_API_VERSION);
        else if (!t.kind_ok)
            cfg_fail(&l, root, "missing kind: %s", CONFIG_KIND);
        else
            rc = validate_profiles(c, name, err, errlen);
    }
    yaml_document_delete(&doc);
    if (rc == 0) { /* a second document is a mistake, not ignored */
        yaml_document_t next;
        if (!yaml_parser_load(&parser, &next)) {
            rc = parser_error(&parser, name, err, errlen);
        } else {
            const yaml_node_t *r2 = yaml_document_get_root_node(&next);
            if (r2)
                rc = util_errf(err, errlen, "%s:%lu: only one YAML document is allowed", name,
                               (unsigned long)r2->start_mark.line + 1);
            yaml_document_delete(&next);
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

#define CONFIG_FILE_MAX (1 << 20)

int config_load_file(sched_config_t *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return util_errf(err, errlen, "%s: %s", path, strerror(errno));
    char *buf = util_xmalloc(CONFIG_FILE_MAX + 1);
    size_t n = fread(buf, 1, CONFIG_FILE_MAX + 1, f);
    int rerr = ferror(f);
    fclose(f);
    int rc;
    if (rerr)
        rc = util_errf(err, errlen, "%s: read error", path);
    else if (n > CONFIG_FILE_MAX)
        rc = util_errf(err, errlen, "%s: larger than %d bytes", path, CONFIG_FILE_MAX);
    else
        rc = config_load_string(c, buf, n, path, err, errlen);
    free(buf);
    if (rc == 0)
        cfg_set_str(&c->config_file, path);
    return rc;
}

/* ---- flags -------------------------------------------------------------- */

typedef enum {
    F_STR,
    F_STR_OPT,
    F_INT,
    F_DOUBLE,
    F_BOOL,
    F_DUR,
    F_DUR0,
    F_STRATEGY,
    F_CONFIG,
    F_HELP,
    F_VERB,
    F_SEED
} ftype_t;

typedef struct flagdef {
    const char *name;
    ftype_t type;
    size_t off;
    int min, max;
    const char *arg;
    const char *help;
} flagdef_t;

#define OFF(f) offsetof(sched_config_t, f)

static const flagdef_t FLAGS[] = {
    { "config", F_CONFIG, 0, 0, 0, "FILE",
      "AiSchedulerConfiguration or kubescheduler.config.k8s.io/v1 (or v1beta1) KubeSchedulerConfiguration YAML file; "
      "other flags override it" },
    { "kubeconfig", F_STR_OPT, OFF(kubeconfig), 0, 0, "FILE",
      "kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)" },
    { "scheduler-name", F_STR, OFF(sched.scheduler_name), 0, 0, "NAME",
      "schedule pods whose spec.schedulerName is NAME (ai-scheduler)" },
    { "v", F_VERB, OFF(verbosity), 0, 10, "N", "log verbosity: 0 info, 4 debug, 6 trace (also -v N)" },
    { "kube-api-qps", F_DOUBLE, OFF(qps), 0, 1000000, "QPS", "API server queries per second (500)" },
    { "kube-api-burst", F_INT, OFF(burst), 0, 1000000, "N", "API server request burst (1000)" },
    { "disable-preemption", F_BOOL, OFF(sched.disable_preemption), 0, 0, NULL, "never evict lower-priority pods" },
    { "insecure-skip-tls-verify", F_BOOL, OFF(insecure_skip_tls_verify), 0, 0, NULL,
      "do not verify the API server's certificate (logged as a warning; for tests only)" },
    { "insecure", F_BOOL, OFF(insecure_skip_tls_verify), 0, 0, NULL, "the same as --insecure-skip-tls-verify" },
    { "leader-elect", F_BOOL, OFF(leader.enabled), 0, 0, NULL,
      "run leader election (true); --leader-elect=false for one replica" },
    { "leader-elect-lease-duration", F_DUR, OFF(leader.lease_duration_s), 0, 0, "DUR", "lease duration (15s)" },
    { "leader-elect-renew-deadline", F_DUR, OFF(leader.renew_deadline_s), 0, 0, "DUR",
      "give up leadership if not renewed within (10s)" },
    { "leader-elect-retry-period", F_DUR, OFF(leader.retry_period_s), 0, 0, "DUR", "acquire/renew interval (2s)" },
    { "leader-elect-resource-name", F_STR, OFF(leader.lease_name), 0, 0, "NAME", "Lease name (ai-scheduler)" },
    { "leader-elect-resource-namespace", F_STR, OFF(leader.lease_namespace), 0, 0, "NS",
      "Lease namespace (kube-system)" },
    { "metrics-port", F_INT, OFF(metrics_port), 0, 65535, "PORT",
      "/metrics, /healthz, /readyz port (10261); 0 disables" },
    { "metrics-bind-address", F_STR, OFF(metrics_bind_address), 0, 0, "IP", "address to serve metrics on (0.0.0.0)" },
    { "tls-cert-file", F_STR_OPT, OFF(tls_cert_file), 0, 0, "FILE",
      "the HTTPS port's certificate (PEM, chain after it); default: a self-signed one made at start (its SHA-256 "
      "logged)" },
    { "tls-private-key-file", F_STR_OPT, OFF(tls_private_key_file), 0, 0, "FILE",
      "the key of --tls-cert-file (PEM, unencrypted)" },
    { "client-ca-file", F_STR_OPT, OFF(client_ca_file), 0, 0, "FILE",
      "a client certificate signed by these CAs authenticates a request (user = CN, groups = O); default: ignored" },
    { "plain-http", F_BOOL, OFF(plain_http), 0, 0, NULL,
      "serve plain HTTP, not HTTPS (loopback tests, or behind a TLS-terminating proxy; warned)" },
    { "authorization-always-allow-paths", F_STR_OPT, OFF(always_allow_paths), 0, 0, "PATHS",
      "comma-separated paths served without authentication (/healthz,/readyz,/livez); add /metrics for scrapers "
      "that cannot authenticate" },
    { "eviction-grace-period", F_INT, OFF(sched.eviction_grace_s), -1, 86400, "SECONDS",
      "victims' grace period: -1 the pod's own terminationGracePeriodSeconds, as kube-scheduler (default); 0 at "
      "once, as the original Ai-Scheduler" },
    { "pool-status-interval", F_INT, OFF(sched.pool_status_interval_s), 1, 86400, "SECONDS",
      "how often Pool .status is written (10)" },
    { "seed", F_SEED, OFF(sched.seed), 0, 0, "N",
      "random tie-breaks' seed (score ties, where a victim search starts); default from the time, logged at start "
      "as \"random seed N\": the same seed makes a sandbox (whatif, simulate) break ties alike" },
    { "bind-workers", F_INT, OFF(sched.bind_workers), 1, 1024, "N", "Bindings in flight at once (16)" },
    { "volume-bind-timeout", F_INT, OFF(sched.volume_bind_timeout_s), 1, 86400, "SECONDS",
      "how long PreBind waits for claims to be bound (600)" },
    { "gang-schedule-timeout", F_INT, OFF(sched.gang_timeout_s), 1, 86400, "SECONDS",
      "a PodGroup's scheduleTimeoutSeconds when it sets none (60)" },
    { "reservation-after", F_DUR0, OFF(sched.reservation_after_s), 0, 0, "DUR",
      "a gang at the head of its queue that has waited this long and fits neither now nor by preemption gets "
      "nodes held for it (5m); 0 disables reservations" },
    { "reservation-timeout", F_DUR, OFF(sched.reservation_timeout_s), 0, 0, "DUR",
      "a reservation ends after this long and its gang goes back to the queue (30m)" },
    { "stale-gang-grace", F_INT, OFF(sched.stale_gang_grace_s), 0, 86400, "SECONDS",
      "a placed gang below minMember this long is stale: event, metric (60)" },
    { "evict-stale-gangs", F_BOOL, OFF(sched.evict_stale_gangs), 0, 0, NULL,
      "evict the rest of a stale gang so its resources return" },
    { "usage-half-life", F_INT, OFF(sched.usage_half_life_s), 0, 365 * 86400, "SECONDS",
      "queues: order by usage decayed with this half-life (0: by current allocation)" },
    { "starvation-age", F_INT, OFF(sched.starvation_age_s), 0, 365 * 86400, "SECONDS",
      "queues: a pod pending this long while its queue is under its fair share goes first, by reclaim if needed "
      "(600; 0 = off)" },
    { "non-preemptible-priority", F_INT, OFF(sched.non_preemptible_priority), INT32_MIN, INT32_MAX, "N",
      "queues: pods of this priority or more are non-preemptible and stay within quota (100)" },
    { "max-consolidation-moves", F_INT, OFF(sched.max_consolidation_moves), 0, 1000, "N",
      "consolidation: most pods moved so that a pod fragmented free GPUs could not hold fits (8; 0 = off)" },
    { "topology-levels", F_STR_OPT, OFF(sched.topology_levels), 0, 0, "KEYS",
      "gangs' topology levels, widest first, comma-separated: node label keys, or device:DOMAIN/NAME for a DRA "
      "device attribute whose value on a node's devices is its domain, e.g. device:gpu.nvidia.com/cliqueID (" TOPO_DEFAULT_LEVELS
      ")" },
    { "dra-queue-resources", F_STR_OPT, OFF(sched.dra_queue_resources), 0, 0, "CLASS=gpu[:CAP/Q],...",
      "DRA: device classes whose devices Queues count as GPUs, one each, or by a capacity over a quantity "
      "(gpu.example.com=gpu:memory/80Gi) (" DRA_DEFAULT_QUEUE_RESOURCES "; \"\" = none)" },
    { "workload-groups", F_BOOL, OFF(sched.workload_groups), 0, 0, NULL,
      "derive gangs from the workload owning the pods: PyTorchJob, JobSet, indexed Job, LeaderWorkerSet, ... (on)" },
    { "workload-groups-file", F_STR_OPT, OFF(sched.workload_groups_file), 0, 0, "FILE",
      "workload table rows (WorkloadGroups YAML) loaded over the defaults" },
    { "workload-groups-refresh", F_INT, OFF(sched.workload_refresh_s), 1, 86400, "SECONDS",
      "re-read the owners of derived PodGroups this often, for elastic resizes (30)" },
    { "gpu-reservation-namespace", F_STR, OFF(sched.gpu_namespace), 0, 0, "NS",
      "GPU sharing: namespace of the pods that hold shared GPUs (ai-scheduler-system; created if missing)" },
    { "gpu-reservation-image", F_STR, OFF(sched.gpu_image), 0, 0, "IMAGE",
      "GPU sharing: image of those pods (registry.k8s.io/pause:3.9)" },
    { "scoring-strategy", F_STRATEGY, OFF(sched.fw.strategy), 0, 0, "S",
      "LeastAllocated (spread) or MostAllocated (bin-pack)" },
    { "percentage-of-nodes-to-score", F_INT, OFF(sched.fw.percentage_of_nodes_to_score), 0, 100, "P", "0 = adaptive" },
    { "help", F_HELP, 0, 0, 0, NULL, "print this help (also -h)" },
};
#define NFLAGS ((int)(sizeof FLAGS / sizeof FLAGS[0]))

/* The string knobs of c->sched are the string rows of FLAGS that point into
 * it: !release replaces each value (a scheduler_opts_default literal) with
 * a heap copy the config owns, release frees them. A row sharing another's
 * member is skipped, so no string is copied or freed twice. */
static void own_knob_strings(sched_config_t *c, int release)
{
    for (int i = 0; i < NFLAGS; i++) {
        const flagdef_t *f = &FLAGS[i];
        if ((f->type != F_STR && f->type != F_STR_OPT) || f->off - OFF(sched) >= sizeof c->sched)
            continue; /* not a string, or not in c->sched (unsigned: below it wraps) */
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = FLAGS[j].off == f->off && (FLAGS[j].type == F_STR || FLAGS[j].type == F_STR_OPT);
        if (seen)
            continue;
        void *dst = (char *)c + f->off;
        if (release) {
            put_str(dst, NULL);
        } else {
            char *lit = get_owned(dst), *copy = lit ? util_strdup(lit) : NULL;
            memcpy(dst, &copy, sizeof copy); /* the literal is not freed */
        }
    }
}

void config_usage(FILE *out)
{
    fprintf(out, "Usage: ai-scheduler [flags]\n\nFlags:\n");
    for (int i = 0; i < NFLAGS; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", FLAGS[i].name, FLAGS[i].arg ? " " : "",
                 FLAGS[i].arg ? FLAGS[i].arg : "");
        fprintf(out, "  %-40s %s\n", left, FLAGS[i].help);
    }
    fprintf(out, "\nDurations are like 15s, 1m30s. The file's format is in docs/operations.md.\n");
}

static const flagdef_t *find_flag(const char *name, size_t n)
{
    for (int i = 0; i < NFLAGS; i++)
        if (strlen(FLAGS[i].name) == n && !strncmp(FLAGS[i].name, name, n))
            return &FLAGS[i];
    return NULL;
}

static int apply_flag(sched_config_t *c, const flagdef_t *f, const char *v, char *err, size_t errlen)
{
    char *base = (char *)c;
    switch (f->type) {
    case F_STR:
        if (!*v)
            return util_errf(err, errlen, "flag --%s: must not be empty", f->name);
        cfg_set_str(base + f->off, v);
        return 0;
    case F_STR_OPT: cfg_set_str(base + f->off, *v ? v : NULL); return 0;
    case F_INT:
    case F_VERB:
        if (parse_int_range(v, f->min, f->max, (int *)(base + f->off)) < 0)
            return util_errf(err, errlen, "flag --%s: \"%s\" is not an integer in %d..%d", f->name, v, f->min, f->max);
        return 0;
    case F_DOUBLE:
        if (parse_double_range(v, f->min, f->max, (double *)(base + f->off)) < 0)
            return util_errf(err, errlen, "flag --%s: \"%s\" is not a number in %d..%d", f->name, v, f->min, f->max);
        return 0;
    case F_BOOL:
        if (parse_bool(v, (int *)(base + f->off)) < 0)
            return util_errf(err, errlen, "flag --%s: \"%s\" is not true or false", f->name, v);
        return 0;
    case F_DUR: {
        int s;
        if (config_parse_duration(v, &s) < 0 || s < 1)
            return util_errf(err, errlen, "flag --%s: \"%s\" is not a duration of whole seconds such as 15s", f->name,
                             v);
        *(int *)(base + f->off) = s;
        return 0;
    }
    case F_DUR0: {
        int s;
        if (config_parse_duration(v, &s) < 0 || s < 0)
            return util_errf(err, errlen, "flag --%s: \"%s\" is not a duration of whole seconds such as 5m, or 0",
                             f->name, v);
        *(int *)(base + f->off) = s;
        return 0;
    }
    case F_STRATEGY:
        if (parse_strategy(v, (score_strategy_t *)(base + f->off)) < 0)
            return util_errf(err, errlen, "flag --%s: \"%s\" is not LeastAllocated or MostAllocated", f->name, v);
        return 0;
    case F_SEED:
        if (parse_seed(v, (uint64_t *)(base + f->off)) < 0)
            return util_errf(err, errlen, "flag --%s: \"%s\" is not an integer in 1..18446744073709551615", f->name, v);
        return 0;
    case F_CONFIG:
    case F_HELP: return 0;
    }
    return 0;
}

typedef struct parsed_flag {
    const flagdef_t *f;
    const char *value;
} parsed_flag_t;

/* Splits argv into (flag, value) pairs without applying them. */
static int split_args(int argc, char **argv, parsed_flag_t *out, int *nout, char *err, size_t errlen)
{
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!a)
            break;
        const char *name;
        if (!strcmp(a, "-h"))
            name = "help";
        else if (!strncmp(a, "--", 2) && a[2])
            name = a + 2;
        else if (!strncmp(a, "-v", 2) && (a[2] == 0 || a[2] == '='))
            name = a + 1;
        else
            return util_errf(err, errlen, "unexpected argument \"%s\" (see --help)", a);
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const flagdef_t *f = find_flag(name, nlen);
        if (!f)
            return util_errf(err, errlen, "unknown flag --%.*s (see --help)", (int)(nlen > 64 ? 64 : nlen), name);
        const char *v;
        if (eq) {
            if (f->type == F_HELP)
                return util_errf(err, errlen, "flag --help takes no value");
            v = eq + 1;
        } else if (f->type == F_BOOL) {
            v = "true";
        } else if (f->type == F_HELP) {
            v = "";
        } else {
            if (i + 1 >= argc || !argv[i + 1])
                return util_errf(err, errlen, "flag --%s needs a value", f->name);
            v = argv[++i];
        }
        out[n].f = f;
        out[n].value = v;
        n++;
    }
    *nout = n;
    return 0;
}

int config_parse_args(sched_config_t *c, int argc, char **argv, char *err, size_t errlen)
{
    if (argc < 1)
        return config_validate(c, err, errlen);
    parsed_flag_t *pf = util_xcalloc((size_t)argc, sizeof *pf);
    int n = 0, rc = 0;
    if (split_args(argc, argv, pf, &n, err, errlen) < 0) {
        free(pf);
        return -1;
    }
    const char *config = NULL;
    for (int i = 0; i < n; i++) {
        if (pf[i].f->type == F_HELP) {
            config_usage(stdout);
            free(pf);
            return CONFIG_HELP;
        }
        if (pf[i].f->type == F_CONFIG)
            config = pf[i].value;
    }
    if (config && config_load_file(c, config, err, errlen) < 0)
        rc = -1;
    for (int i = 0; rc == 0 && i < n; i++)
        rc = apply_flag(c, pf[i].f, pf[i].value, err, errlen);
    free(pf);
    if (rc == 0)
        rc = config_validate(c, err, errlen);
    return rc;
}

void config_scheduler_opts(const sched_config_t *cfg, const char *identity, scheduler_opts_t *o, const char ***names,
                           fw_config_t **fw)
{
    *o = cfg->sched;
    o->scheduler_name = config_profile_fw(cfg, 0, &o->fw);
    int n = config_nprofiles(cfg);
    *names = util_xcalloc((size_t)n, sizeof(**names));
    *fw = util_xcalloc((size_t)n, sizeof(**fw));
    for (int i = 1; i < n; i++)
        (*names)[i - 1] = config_profile_fw(cfg, i, &(*fw)[i - 1]);
    o->extra_names = *names;
    o->extra_fw = *fw;
    o->nextra = n - 1;
    o->identity = identity;
}
