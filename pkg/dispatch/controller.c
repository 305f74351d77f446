/* controller.c -- MultiClusterJob reconciliation: queue, spec, member
 * states, the decision, status, events and cleanup (see controller.h).
 *
 * Order of writes, so a crash anywhere is safe: a decision (who won, who is
 * cancelled) is written to .status before any loser is deleted; objects are
 * created under fixed names, so creating again after a crash finds them
 * (409, our label) instead of making a second copy; the finalizer comes off
 * only after every member answered that our objects are gone. */
#include "dispatch/controller.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/decide.h"
#include "dispatch/member.h"
#include "dispatch/template.h"
#include "kube/event.h"
#include "kube/informer.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/util.h"

#define JOBS_PATH       "/apis/" DSP_GROUP "/" DSP_VERSION "/multiclusterjobs"
#define MAX_CLUSTERS    64
#define RETRY_MIN_MS    1000
#define RETRY_MAX_MS    60000
#define DEFAULT_GUARD_S 600
#define DEFAULT_SCALE_S 60
/* A racing job whose members' pods are all watched is looked at this many
 * poll intervals apart when nothing changes. */
#define WATCHED_POLL_FACTOR 5
/* A member's cleanup given up for want of credentials (status reason). */
#define DSP_R_ABANDONED "CleanupAbandoned"

typedef struct entry {
    json_t *obj; /* latest seen, owned; NULL once deleted */
    int64_t due; /* monotonic ms; -1: nothing planned */
    int busy;    /* a worker holds it */
    int dirty;   /* changed while busy */
} entry_t;

struct dsp_controller {
    kube_client_t *hub;
    dsp_opts_t o;
    informer_t *inf;
    dsp_members_t *members;
    pthread_mutex_t mu; /* entries, stop */
    pthread_cond_t cv;
    hashmap_t *entries; /* "ns/name" -> entry_t */
    hashmap_t *by_uid;  /* job uid -> "ns/name" (owned copy), for the member watches' kicks */
    int stop;
    int started; /* workers running */
    pthread_t workers[DSP_MAX_WORKERS];
    unsigned long seq;
    metric_t *m_reconciles, *m_decisions, *m_latency, *m_member_errors, *m_jobs, *m_abandoned;
};

/* ---- member state in .status ------------------------------------------ */

typedef struct cstat {
    char name[64];
    int priority;
    const char *bad; /* spec problem: reason, or NULL */
    char bad_msg[256];
    const char *secret, *secret_key, *ns;
    char state[16];
    char reason[32];
    char message[400];
    int64_t submitted, running, won, cancelled, deleted, retry_at; /* wall ms; 0 = unset */
    int attempts;
    int contacted, cleaned;
    int pods_total, pods_running, pods_succeeded;
    double deadline;   /* open window end, wall s; 0 = none */
    double cancel_due; /* this pass: when its cancel became due, wall s */
    json_t *objs;      /* this pass: the specialised objects (cluster_objs), owned */
    char objs_err[300];
} cstat_t;

static int st_is(const cstat_t *c, const char *s)
{
    return strcmp(c->state, s) == 0;
}

static void st_set(cstat_t *c, const char *s, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void st_set(cstat_t *c, const char *s, const char *reason, const char *fmt, ...)
{
    snprintf(c->state, sizeof c->state, "%s", s);
    snprintf(c->reason, sizeof c->reason, "%s", reason ? reason : "");
    c->message[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->message, sizeof c->message, fmt, ap);
        va_end(ap);
    }
}

static int64_t get_time(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    int64_t v = s ? util_parse_rfc3339(s) : -1;
    return v > 0 ? v : 0;
}

static void put_time(json_t *o, const char *k, int64_t ms)
{
    if (ms > 0) {
        char b[48];
        util_rfc3339_ms(ms, b, sizeof b);
        json_object_set_new(o, k, json_string(b));
    }
}

static void cstat_load(cstat_t *c, json_t *s)
{
    const char *st = json_string_value(json_object_get(s, "state"));
    snprintf(c->state, sizeof c->state, "%s", st ? st : "Submitting");
    const char *r = json_string_value(json_object_get(s, "reason"));
    snprintf(c->reason, sizeof c->reason, "%s", r ? r : "");
    const char *m = json_string_value(json_object_get(s, "message"));
    snprintf(c->message, sizeof c->message, "%s", m ? m : "");
    c->submitted = get_time(s, "submittedAt");
    c->running = get_time(s, "runningSince");
    c->won = get_time(s, "wonAt");
    c->cancelled = get_time(s, "cancelledAt");
    c->deleted = get_time(s, "deletedAt");
    c->cancel_due = (double)get_time(s, "cancelDueAt") / 1000.0;
    c->retry_at = get_time(s, "nextRetryAt");
    c->attempts = (int)json_integer_value(json_object_get(s, "attempts"));
    c->contacted = json_is_true(json_object_get(s, "contacted"));
    c->cleaned = json_is_true(json_object_get(s, "cleanedUp"));
}

static json_t *cstat_json(const cstat_t *c)
{
    json_t *o = json_pack("{s:s, s:i, s:s}", "name", c->name, "priority", c->priority, "state", c->state);
    if (c->reason[0])
        json_object_set_new(o, "reason", json_string(c->reason));
    if (c->message[0])
        json_object_set_new(o, "message", json_string(c->message));
    put_time(o, "submittedAt", c->submitted);
    if (st_is(c, "Running") || st_is(c, "Won"))
        put_time(o, "runningSince", c->running);
    put_time(o, "wonAt", c->won);
    put_time(o, "cancelledAt", c->cancelled);
    if (c->cancel_due > 0)
        put_time(o, "cancelDueAt", (int64_t)llround(c->cancel_due * 1000));
    put_time(o, "deletedAt", c->deleted);
    if (st_is(c, "Unavailable"))
        put_time(o, "nextRetryAt", c->retry_at);
    if (c->deadline > 0)
        put_time(o, "windowEndsAt", (int64_t)llround(c->deadline * 1000));
    if (c->attempts)
        json_object_set_new(o, "attempts", json_integer(c->attempts));
    if (c->contacted)
        json_object_set_new(o, "contacted", json_true());
    if (c->cleaned)
        json_object_set_new(o, "cleanedUp", json_true());
    if (c->pods_total)
        json_object_set_new(o, "pods",
                            json_pack("{s:i, s:i, s:i}", "total", c->pods_total, "running", c->pods_running,
                                      "succeeded", c->pods_succeeded));
    return o;
}

/* ---- the job ---------------------------------------------------------- */

typedef struct job {
    char ns[64], name[256], uid[64]; /* copies: j->obj's parts are replaced by writes */
    json_t *obj;
    json_t *tmpl, *params;
    double guard, scale;
    int n;
    cstat_t c[MAX_CLUSTERS];
    cstat_t old[MAX_CLUSTERS];
    int winner;
    int64_t decided; /* wall ms of the winner's win */
    int final;
    int polled;        /* this pass, a member's pods were LISTed (its watch not current) */
    const char *phase; /* static, or old_phase */
    char old_phase[32];
    char spec_err[300];
    json_t *events; /* [type, reason, message] to post after the status write */
} job_t;

static double num_or(json_t *v, double dflt)
{
    if (json_is_number(v)) {
        double d = json_number_value(v);
        if (isfinite(d) && d >= 0 && d <= 1e7)
            return d;
    }
    return dflt;
}

/* A DNS label: what `<name>-<cluster>` and the label value need. */
static int dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || (ch == '-' && i > 0 && i + 1 < n);
        if (!ok)
            return 0;
    }
    return 1;
}

static void spec_cluster(job_t *j, cstat_t *c, json_t *e, int idx, json_t *refs)
{
    const char *name = json_string_value(json_object_get(e, "name"));
    snprintf(c->name, sizeof c->name, "%s", name ? name : "");
    if (!name || !dns_label(name)) {
        snprintf(c->name, sizeof c->name, "cluster-%d", idx);
        c->bad = "InvalidCluster";
        snprintf(c->bad_msg, sizeof c->bad_msg, "clusters[%d]: name must be a DNS label (a-z, 0-9, -; up to 63)", idx);
        return;
    }
    for (int i = 0; i < idx; i++)
        if (strcmp(j->c[i].name, c->name) == 0) {
            snprintf(c->name, sizeof c->name, "cluster-%d", idx);
            c->bad = "InvalidCluster";
            snprintf(c->bad_msg, sizeof c->bad_msg, "clusters[%d]: name \"%.60s\" is listed twice", idx, name);
            return;
        }
    json_t *p = json_object_get(e, "priority");
    json_int_t pr = json_is_integer(p) ? json_integer_value(p) : (p ? -1 : 0);
    if (pr < 0 || pr > 100) {
        c->priority = 0;
        c->bad = "InvalidPriority";
        snprintf(c->bad_msg, sizeof c->bad_msg, "cluster %s: priority must be an integer from 0 to 100", c->name);
        return;
    }
    c->priority = (int)pr;
    json_t *ks = json_object_get(e, "kubeconfigSecret");
    if (json_is_object(ks)) {
        c->secret = json_string_value(json_object_get(ks, "name"));
        c->secret_key = json_string_value(json_object_get(ks, "key"));
    } else {
        c->secret = json_string_value(ks);
    }
    if (!c->secret || !c->secret[0]) {
        c->bad = DSP_R_SECRET;
        snprintf(c->bad_msg, sizeof c->bad_msg, "cluster %s: kubeconfigSecret names no Secret", c->name);
        return;
    }
    c->ns = json_string_value(json_object_get(e, "namespace"));
    if (!c->ns || !c->ns[0])
        c->ns = j->ns;
    /* every param the template uses must have a value here */
    size_t i;
    json_t *r;
    json_array_foreach (refs, i, r) {
        json_t *byc = json_object_get(j->params, json_string_value(r));
        if (!json_is_object(byc)) {
            c->bad = "UnknownParam";
            snprintf(c->bad_msg, sizeof c->bad_msg, "cluster %s: unknown param \"%.100s\"", c->name,
                     json_string_value(r));
            break;
        }
        if (!json_object_get(byc, c->name)) {
            c->bad = "UnknownParam";
            snprintf(c->bad_msg, sizeof c->bad_msg, "cluster %s: param \"%.100s\" has no value for it", c->name,
                     json_string_value(r));
            break;
        }
    }
}

static int job_load(job_t *j, json_t *obj)
{
    memset(j, 0, sizeof(*j));
    j->obj = obj;
    j->winner = -1;
    json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    if (!ns || !name || !uid || strlen(ns) >= sizeof j->ns || strlen(name) >= sizeof j->name ||
        strlen(uid) >= sizeof j->uid)
        return -1;
    snprintf(j->ns, sizeof j->ns, "%s", ns);
    snprintf(j->name, sizeof j->name, "%s", name);
    snprintf(j->uid, sizeof j->uid, "%s", uid);
    json_t *spec = json_object_get(obj, "spec");
    j->tmpl = json_object_get(spec, "template");
    j->params = json_object_get(spec, "params");
    j->guard = num_or(json_object_get(spec, "guardTimeRunningSeconds"), DEFAULT_GUARD_S);
    j->scale = num_or(json_object_get(spec, "timeScaleSeconds"), DEFAULT_SCALE_S);
    if (!json_is_array(j->tmpl) || json_array_size(j->tmpl) == 0)
        snprintf(j->spec_err, sizeof j->spec_err, "spec.template must be a non-empty list of objects");
    else if (j->params && !json_is_object(j->params))
        snprintf(j->spec_err, sizeof j->spec_err, "spec.params must be a map");
    json_t *cl = json_object_get(spec, "clusters");
    if (!json_is_array(cl) || json_array_size(cl) == 0) {
        snprintf(j->spec_err, sizeof j->spec_err, "spec.clusters must list at least one cluster");
        cl = NULL;
    }
    size_t n = json_array_size(cl);
    if (n > MAX_CLUSTERS) {
        snprintf(j->spec_err, sizeof j->spec_err, "spec.clusters lists %zu clusters; at most %d", n, MAX_CLUSTERS);
        n = 0;
    }
    j->n = (int)n;
    json_t *status = json_object_get(obj, "status");
    json_t *sc = json_object_get(status, "clusters");
    json_t *refs = json_array(); /* the params the template uses */
    dsp_param_refs(j->tmpl, refs);
    for (int i = 0; i < j->n; i++) {
        cstat_t *c = &j->c[i];
        spec_cluster(j, c, json_array_get(cl, (size_t)i), i, refs);
        snprintf(c->state, sizeof c->state, "Submitting");
        size_t k;
        json_t *e;
        json_array_foreach (sc, k, e) {
            const char *nm = json_string_value(json_object_get(e, "name"));
            if (nm && strcmp(nm, c->name) == 0)
                cstat_load(c, e);
        }
        j->old[i] = *c; /* before the spec's verdict, so a new one gets its event */
        if (c->bad && !st_is(c, "Failed") && !st_is(c, "Cancelled"))
            st_set(c, "Failed", c->bad, "%s", c->bad_msg);
        if (j->spec_err[0] && !st_is(c, "Failed"))
            st_set(c, "Failed", "InvalidSpec", "%s", j->spec_err);
    }
    json_decref(refs);
    const char *w = json_string_value(json_object_get(status, "winner"));
    for (int i = 0; w && i < j->n; i++)
        if (strcmp(j->c[i].name, w) == 0)
            j->winner = i;
    j->decided = get_time(status, "decidedAt");
    j->events = json_array();
    return 0;
}

static void job_free(job_t *j)
{
    for (int i = 0; i < j->n; i++)
        json_decref(j->c[i].objs);
    json_decref(j->events);
    free(j);
}

static void job_event(job_t *j, const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void job_event(job_t *j, const char *type, const char *reason, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_array_append_new(j->events, json_pack("[s,s,s]", type, reason, msg));
}

/* ---- members ---------------------------------------------------------- */

static int64_t backoff_ms(int attempts)
{
    int64_t d = RETRY_MIN_MS;
    for (int i = 1; i < attempts && d < RETRY_MAX_MS; i++)
        d *= 2;
    return d < RETRY_MAX_MS ? d : RETRY_MAX_MS;
}

static void unavailable(dsp_controller_t *ctl, cstat_t *c, const char *reason, const char *msg, int64_t now)
{
    c->attempts++;
    c->retry_at = now + backoff_ms(c->attempts);
    st_set(c, "Unavailable", reason, "%s", msg);
    c->running = 0;
    if (ctl->m_member_errors) {
        char lb[128];
        metric_inc(ctl->m_member_errors, metrics_labels(lb, sizeof lb, "reason", reason, NULL));
    }
}

static dsp_member_client_t *member_of(dsp_controller_t *ctl, job_t *j, cstat_t *c, const char **reason, char *err,
                                      size_t errlen)
{
    return dsp_member_get(ctl->members, j->ns, c->secret, c->secret_key, j->uid, reason, err, errlen);
}

/* c's objects, specialised once per pass (submit, observe and cleanup all
 * use them). Borrowed; NULL with err when the template cannot be. */
static json_t *cluster_objs(job_t *j, cstat_t *c, char *err, size_t errlen)
{
    if (!c->objs && !c->objs_err[0])
        c->objs = dsp_specialise(j->tmpl, j->params, c->name, c->ns, j->name, j->uid, c->objs_err, sizeof c->objs_err);
    if (!c->objs)
        util_errf(err, errlen, "%s", c->objs_err);
    return c->objs;
}

/* Submitting / Unavailable: (re)create everything; then observe. */
static int submit(dsp_controller_t *ctl, job_t *j, cstat_t *c, int64_t now)
{
    const char *reason = NULL;
    char err[512];
    dsp_member_client_t *mc = member_of(ctl, j, c, &reason, err, sizeof err);
    if (!mc) {
        unavailable(ctl, c, reason, err, now);
        return -1;
    }
    json_t *objs = cluster_objs(j, c, err, sizeof err);
    if (!objs) {
        dsp_member_put(mc);
        st_set(c, "Failed", "InvalidTemplate", "%s", err);
        return -1;
    }
    c->contacted = 1;
    size_t i;
    json_t *o;
    int rc = 0;
    json_array_foreach (objs, i, o) {
        if (dsp_member_create(mc, o, j->uid, &reason, err, sizeof err) != 0) {
            unavailable(ctl, c, reason, err, now);
            rc = -1;
            break;
        }
    }
    dsp_member_put(mc);
    if (rc == 0) {
        if (!c->submitted)
            c->submitted = now;
        c->attempts = 0;
        st_set(c, "Waiting", NULL, NULL);
    }
    return rc;
}

/* Waiting / Running / Won: what the member's pods say. */
static void observe(dsp_controller_t *ctl, job_t *j, cstat_t *c, int64_t now)
{
    const char *reason = NULL;
    char err[512];
    dsp_member_client_t *mc = member_of(ctl, j, c, &reason, err, sizeof err);
    dsp_pods_t p;
    json_t *objs = mc ? cluster_objs(j, c, err, sizeof err) : NULL;
    int rc = objs ? dsp_member_observe(mc, c->ns, j->uid, objs, &p, err, sizeof err) : -1;
    int won = st_is(c, "Won"), had_client = mc != NULL;
    dsp_member_put(mc);
    if (rc != 0) {
        j->polled = 1;
        if (won) { /* a winner stays the winner; say why it is not seen */
            snprintf(c->message, sizeof c->message, "not observed: %.380s", err);
            return;
        }
        unavailable(ctl, c, had_client ? DSP_R_UNREACHABLE : reason, err, now);
        return;
    }
    if (!p.watched)
        j->polled = 1;
    c->pods_total = p.total;
    c->pods_running = p.running;
    c->pods_succeeded = p.succeeded;
    if (p.failed || p.job_failed) {
        st_set(c, "Failed", p.job_failed ? "JobFailed" : "PodFailed", "%s", "dropped from the race");
        c->running = 0;
    } else if (won) {
        c->message[0] = '\0'; /* a winner stays the winner */
    } else if (p.total > 0 && p.running + p.succeeded == p.total) {
        if (!st_is(c, "Running") || !c->running)
            c->running = now;
        st_set(c, "Running", NULL, NULL);
    } else {
        c->running = 0;
        st_set(c, "Waiting", NULL, p.total ? "%d of %d pods running" : NULL, p.running + p.succeeded, p.total);
    }
}

/* cleanup's answer when the member cannot be reached for want of
 * credentials: its Secret is gone and none are kept. */
#define CLEANUP_NO_CREDENTIALS (-1)

/* Deletes c's objects; 1 when none of ours is left running there (the
 * member answered they are gone, 404 included), 0 while pending, or
 * CLEANUP_NO_CREDENTIALS. */
static int cleanup(dsp_controller_t *ctl, job_t *j, cstat_t *c, char *err, size_t errlen)
{
    const char *reason = NULL;
    int none = 0;
    dsp_member_client_t *mc =
        dsp_member_get_cleanup(ctl->members, j->ns, c->secret, c->secret_key, j->uid, &none, &reason, err, errlen);
    if (!mc && !c->contacted)
        return 1; /* never reached: nothing was created there */
    if (!mc)
        return none ? CLEANUP_NO_CREDENTIALS : 0;
    json_t *objs = cluster_objs(j, c, err, errlen);
    if (!objs) {
        dsp_member_put(mc);
        return 1; /* nothing could be created from it either */
    }
    size_t i;
    json_t *o;
    int done = 1;
    json_array_foreach (objs, i, o) {
        int foreign = 0;
        if (dsp_member_delete(mc, o, j->uid, &foreign, err, errlen) < 0)
            done = 0;
        else if (foreign)
            LOG_W("dispatch: %s/%s: %s %s in cluster %s is not ours; left alone", j->ns, j->name,
                  json_string_value(json_object_get(o, "kind")),
                  json_string_value(json_object_get(json_object_get(o, "metadata"), "name")), c->name);
    }
    dsp_member_put(mc);
    return done;
}

/* ---- status ----------------------------------------------------------- */

static const char *cond_status(int b)
{
    return b ? "True" : "False";
}

/* A condition, keeping lastTransitionTime while its status stays. */
static void put_cond(json_t *conds, json_t *old, const char *type, int status, const char *reason, const char *msg,
                     int64_t now)
{
    char ts[48];
    util_rfc3339_ms(now, ts, sizeof ts);
    size_t i;
    json_t *e;
    json_array_foreach (old, i, e) {
        const char *t = json_string_value(json_object_get(e, "type"));
        const char *s = json_string_value(json_object_get(e, "status"));
        const char *lt = json_string_value(json_object_get(e, "lastTransitionTime"));
        if (t && s && lt && strcmp(t, type) == 0 && strcmp(s, cond_status(status)) == 0)
            snprintf(ts, sizeof ts, "%s", lt);
    }
    json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", cond_status(status),
                                           "reason", reason, "message", msg, "lastTransitionTime", ts));
}

static json_t *build_status(job_t *j, int64_t now)
{
    json_t *old = json_object_get(j->obj, "status");
    json_t *oldc = json_object_get(old, "conditions");
    json_t *st = json_object();
    json_object_set_new(st, "phase", json_string(j->phase));
    if (j->winner >= 0) {
        json_object_set_new(st, "winner", json_string(j->c[j->winner].name));
        put_time(st, "decidedAt", j->decided);
    }
    json_t *g = json_object_get(json_object_get(j->obj, "metadata"), "generation");
    if (json_is_integer(g))
        json_object_set(st, "observedGeneration", g);
    json_t *cl = json_array();
    for (int i = 0; i < j->n; i++)
        json_array_append_new(cl, cstat_json(&j->c[i]));
    json_object_set_new(st, "clusters", cl);
    json_t *conds = json_array();
    char msg[300];
    if (j->winner >= 0)
        snprintf(msg, sizeof msg, "%s %s", j->c[j->winner].name,
                 j->final ? "won; every other cluster is out" : "leads; a higher-priority window is open");
    else
        snprintf(msg, sizeof msg, "no cluster has won yet");
    put_cond(conds, oldc, "Decided", j->winner >= 0 && j->final, j->winner >= 0 ? "Won" : "Racing", msg, now);
    int failed = strcmp(j->phase, "Failed") == 0;
    put_cond(conds, oldc, "Failed", failed, failed ? "Failed" : "NotFailed",
             failed ? "the job failed in every cluster" : "", now);
    for (int i = 0; i < j->n; i++) {
        cstat_t *c = &j->c[i];
        char type[96];
        snprintf(type, sizeof type, "ClusterReady.%s", c->name);
        int bad = st_is(c, "Unavailable") || (st_is(c, "Failed") && c->reason[0]);
        put_cond(conds, oldc, type, !bad, bad ? c->reason : c->state, bad ? c->message : "", now);
    }
    json_object_set_new(st, "conditions", conds);
    return st;
}

static int may_act(dsp_controller_t *ctl)
{
    return !ctl->o.may_act || ctl->o.may_act(ctl->o.may_act_ud);
}

/* PATCH (merge) the job, or its status with sub "/status". */
static int patch_job(dsp_controller_t *ctl, job_t *j, const char *sub, json_t *body, json_t **out, long *status,
                     char *err, size_t errlen)
{
    char *ens = util_urlencode(j->ns), *en = util_urlencode(j->name);
    sbuf_t p = { 0 };
    sbuf_printf(&p, "/apis/%s/%s/namespaces/%s/multiclusterjobs/%s%s", DSP_GROUP, DSP_VERSION, ens, en, sub);
    free(ens);
    free(en);
    int rc = kube_send_json(ctl->hub, "PATCH", p.data, "application/merge-patch+json", body, out, status, err, errlen);
    sbuf_free(&p);
    return rc;
}

static int write_status(dsp_controller_t *ctl, job_t *j, json_t *st)
{
    if (!may_act(ctl))
        return -1;
    json_t *body = json_pack("{s:O}", "status", st);
    long status = 0;
    char err[400];
    json_t *out = NULL;
    int rc = patch_job(ctl, j, "/status", body, &out, &status, err, sizeof err);
    json_decref(body);
    if (rc != 0) {
        LOG_W("dispatch: %s/%s: status: %s", j->ns, j->name, err);
        json_decref(out);
        return -1;
    }
    /* later steps of this reconcile compare with what is stored now (and
     * a finalizer change needs the resourceVersion this write made) */
    json_object_set(j->obj, "status", json_object_get(out, "status") ? json_object_get(out, "status") : st);
    if (json_is_object(json_object_get(out, "metadata")))
        json_object_set(j->obj, "metadata", json_object_get(out, "metadata"));
    json_decref(out);
    return 0;
}

/* Writes the status built from j when it differs from the stored one. 0
 * when stored (or already so), -1 when the write failed. */
static int store_status(dsp_controller_t *ctl, job_t *j, int64_t now)
{
    json_t *st = build_status(j, now);
    json_t *old = json_object_get(j->obj, "status");
    int rc = (old && json_equal(old, st)) ? 0 : write_status(ctl, j, st);
    json_decref(st);
    return rc;
}

static void post_events(dsp_controller_t *ctl, job_t *j)
{
    size_t i;
    json_t *e;
    char *ens = util_urlencode(j->ns);
    sbuf_t p = { 0 };
    sbuf_printf(&p, "/api/v1/namespaces/%s/events", ens);
    free(ens);
    json_array_foreach (j->events, i, e) {
        if (!may_act(ctl))
            break;
        json_t *inv = json_pack("{s:s, s:s, s:s, s:s, s:s}", "apiVersion", DSP_GROUP "/" DSP_VERSION, "kind",
                                "MultiClusterJob", "namespace", j->ns, "name", j->name, "uid", j->uid);
        json_t *ev = kube_event_new(j->ns, inv, json_string_value(json_array_get(e, 0)),
                                    json_string_value(json_array_get(e, 1)), json_string_value(json_array_get(e, 2)),
                                    "ai-scheduler-dispatch", ctl->o.identity ? ctl->o.identity : "", j->name,
                                    __atomic_add_fetch(&ctl->seq, 1, __ATOMIC_RELAXED));
        if (!ev)
            continue;
        long status = 0;
        char err[300];
        if (kube_send_json(ctl->hub, "POST", p.data, NULL, ev, NULL, &status, err, sizeof err) != 0)
            LOG_D("dispatch: event: %s", err);
        json_decref(ev);
    }
    sbuf_free(&p);
}

/* Events for each member whose state or reason changed in this reconcile. */
static void state_events(job_t *j)
{
    for (int i = 0; i < j->n; i++) {
        cstat_t *c = &j->c[i], *o = &j->old[i];
        if (st_is(c, o->state) && strcmp(c->reason, o->reason) == 0)
            continue;
        int abandoned = strcmp(c->reason, DSP_R_ABANDONED) == 0;
        int warn = st_is(c, "Unavailable") || st_is(c, "Failed") || abandoned;
        const char *what = st_is(c, "Waiting") && st_is(o, "Submitting") ? "Submitted" : c->state;
        if (abandoned)
            what = DSP_R_ABANDONED;
        if (st_is(c, "Waiting") && st_is(o, "Unavailable"))
            what = "Submitted";
        job_event(j, warn ? "Warning" : "Normal", what, "cluster %s: %s%s%s", c->name, c->state,
                  c->message[0] ? ": " : "", c->message);
    }
}

/* ---- finalizer -------------------------------------------------------- */

static int has_finalizer(json_t *obj)
{
    json_t *f = json_object_get(json_object_get(obj, "metadata"), "finalizers");
    size_t i;
    json_t *e;
    json_array_foreach (f, i, e)
        if (json_is_string(e) && strcmp(json_string_value(e), DSP_FINALIZER) == 0)
            return 1;
    return 0;
}

/* Adds (add=1) or removes our finalizer, guarded by resourceVersion. */
static int set_finalizer(dsp_controller_t *ctl, job_t *j, int add)
{
    if (!may_act(ctl))
        return -1;
    json_t *meta = json_object_get(j->obj, "metadata");
    json_t *old = json_object_get(meta, "finalizers");
    json_t *list = json_array();
    size_t i;
    json_t *e;
    json_array_foreach (old, i, e)
        if (!(json_is_string(e) && strcmp(json_string_value(e), DSP_FINALIZER) == 0))
            json_array_append(list, e);
    if (add)
        json_array_append_new(list, json_string(DSP_FINALIZER));
    json_t *body = json_pack("{s:{s:o, s:O}}", "metadata", "finalizers", list, "resourceVersion",
                             json_object_get(meta, "resourceVersion"));
    long status = 0;
    char err[400];
    json_t *out = NULL;
    int rc = patch_job(ctl, j, "", body, &out, &status, err, sizeof err);
    json_decref(body);
    if (rc != 0) {
        if (status != 409 && status != 404)
            LOG_W("dispatch: %s/%s: finalizer: %s", j->ns, j->name, err);
        json_decref(out);
        return -1;
    }
    if (json_object_get(out, "metadata"))
        json_object_set(j->obj, "metadata", json_object_get(out, "metadata"));
    json_decref(out);
    return 0;
}

/* ---- reconcile -------------------------------------------------------- */

static int in_race(const cstat_t *c)
{
    return !c->bad && (st_is(c, "Submitting") || st_is(c, "Waiting") || st_is(c, "Running") ||
                       st_is(c, "Unavailable") || st_is(c, "Won"));
}

static void decide(dsp_controller_t *ctl, job_t *j, int64_t now, int *cancel, dsp_decision_t *d)
{
    dsp_member_t m[MAX_CLUSTERS];
    for (int i = 0; i < j->n; i++) {
        m[i].priority = j->c[i].priority;
        m[i].in_race = in_race(&j->c[i]);
        m[i].running_since = st_is(&j->c[i], "Running") && j->c[i].running ? (double)j->c[i].running / 1000.0 : -1;
    }
    int prev = (j->winner >= 0 && st_is(&j->c[j->winner], "Won")) ? j->winner : -1;
    dsp_decide(m, j->n, prev, (double)j->decided / 1000.0, j->guard, j->scale, (double)now / 1000.0, cancel, d);
    if (d->winner >= 0 && d->winner != prev) {
        cstat_t *w = &j->c[d->winner];
        st_set(w, "Won", NULL, NULL);
        w->won = now;
        j->winner = d->winner;
        j->decided = (int64_t)llround(d->decided_at * 1000);
        if (ctl->m_decisions)
            metric_inc(ctl->m_decisions, NULL);
    } else if (d->winner < 0) {
        j->winner = -1;
        j->decided = 0;
    }
    for (int i = 0; i < j->n; i++) {
        cstat_t *c = &j->c[i];
        c->deadline = 0;
        if (cancel[i]) {
            int pw = j->c[d->winner].priority;
            st_set(c, "Cancelled", "Lost", "cluster %s won", j->c[d->winner].name);
            c->cancelled = now;
            /* when it was due: at the win, or when its window ended */
            c->cancel_due = c->priority > pw ? dsp_deadline(c->priority, pw, d->decided_at, j->scale) : d->decided_at;
            c->cleaned = 0;
            c->running = 0;
        } else if (d->winner >= 0 && i != d->winner && in_race(c)) {
            c->deadline = dsp_deadline(c->priority, j->c[d->winner].priority, d->decided_at, j->scale);
        }
    }
    j->final = d->final;
}

static void set_phase(job_t *j)
{
    int racing = 0, submitted = 0;
    for (int i = 0; i < j->n; i++) {
        racing |= in_race(&j->c[i]);
        submitted |= j->c[i].submitted != 0;
    }
    if (j->winner >= 0) {
        cstat_t *w = &j->c[j->winner];
        j->phase = "Won";
        if (j->final && w->pods_total && w->pods_succeeded == w->pods_total)
            j->phase = "Succeeded";
    } else if (!racing) {
        j->phase = "Failed";
    } else {
        j->phase = submitted ? "Racing" : "Pending";
    }
}

static int64_t min_due(int64_t a, int64_t b)
{
    return a < 0 ? b : (b < 0 ? a : (a < b ? a : b));
}

/* "Kind ns/name, ..." of c's objects, for an operator to find them. */
static void objects_list(job_t *j, cstat_t *c, char *out, size_t outlen)
{
    char err[300];
    json_t *objs = cluster_objs(j, c, err, sizeof err);
    size_t n = 0, i;
    json_t *o;
    out[0] = '\0';
    json_array_foreach (objs, i, o) {
        json_t *meta = json_object_get(o, "metadata");
        int w = snprintf(
            out + n, outlen - n, "%s%s %s/%s", i ? ", " : "", json_string_value(json_object_get(o, "kind")),
            json_string_value(json_object_get(meta, "namespace")), json_string_value(json_object_get(meta, "name")));
        if (w < 0 || (size_t)w >= outlen - n)
            break;
        n += (size_t)w;
    }
}

/* c's objects cannot be deleted for want of credentials, and the grace is
 * over: the finalizer comes off without them, said in a Warning event and
 * the log, since the objects may still be running in the member. */
static void abandon(dsp_controller_t *ctl, job_t *j, int i, const char *why, int64_t now)
{
    cstat_t *c = &j->c[i];
    /* said once: a pass that then fails to remove the finalizer comes back */
    int said = strcmp(j->old[i].reason, DSP_R_ABANDONED) == 0;
    char objs[400];
    objects_list(j, c, objs, sizeof objs);
    /* state_events makes this the Warning event */
    st_set(c, "Cancelled", DSP_R_ABANDONED,
           "no credentials to delete its objects (%.120s); the finalizer comes off without it; these may still be "
           "running there: %.150s",
           why, objs);
    if (!c->cancelled)
        c->cancelled = now;
    if (!said)
        LOG_W("dispatch: %s/%s: cluster %s: no credentials to delete its objects (%s); the finalizer comes off without "
              "it; these may still be running there: %s",
              j->ns, j->name, c->name, why, objs);
    if (ctl->m_abandoned && !said)
        metric_inc(ctl->m_abandoned, NULL);
}

/* Deleting: every member cleaned, then the finalizer comes off. A member
 * with no credentials left holds it for the grace after deletionTimestamp
 * only (abandon). Returns the wall-ms delay to come back after, or -1 when
 * done. */
static int64_t reconcile_delete(dsp_controller_t *ctl, job_t *j, int64_t now)
{
    if (!has_finalizer(j->obj)) {
        dsp_members_forget(ctl->members, j->uid);
        return -1;
    }
    int64_t grace_end =
        get_time(json_object_get(j->obj, "metadata"), "deletionTimestamp") + (int64_t)ctl->o.cleanup_grace_s * 1000;
    int all = 1, abandoned = 0;
    int64_t next = 5000;
    for (int i = 0; i < j->n; i++) {
        cstat_t *c = &j->c[i];
        if (c->bad && !c->contacted)
            continue;
        char err[512] = "";
        int rc = cleanup(ctl, j, c, err, sizeof err);
        if (rc == 1) {
            c->cleaned = 1;
            if (!st_is(c, "Cancelled") || !strcmp(c->reason, DSP_R_ABANDONED))
                st_set(c, "Cancelled", "Deleted", "the MultiClusterJob is being deleted");
            if (!c->cancelled)
                c->cancelled = now;
        } else if (rc == CLEANUP_NO_CREDENTIALS && now >= grace_end) {
            abandon(ctl, j, i, err, now);
            abandoned++;
        } else {
            all = 0;
            if (rc == CLEANUP_NO_CREDENTIALS) {
                char at[48];
                util_rfc3339_ms(grace_end, at, sizeof at);
                snprintf(c->message, sizeof c->message,
                         "cleanup pending: %.250s; without credentials by %.30s the finalizer comes off anyway", err,
                         at);
                if (grace_end - now < next)
                    next = grace_end - now;
            } else {
                snprintf(c->message, sizeof c->message, "cleanup pending: %.380s", err);
            }
        }
    }
    if (all) {
        if (abandoned) {
            /* said before the object can go; best effort (a namespace
             * being deleted refuses new events: the log has it too) */
            j->phase = "Deleting";
            store_status(ctl, j, now);
            state_events(j);
            post_events(ctl, j);
        }
        if (set_finalizer(ctl, j, 0) == 0) {
            if (abandoned)
                LOG_W("dispatch: %s/%s: finalizer removed; %d cluster(s) not cleaned up (no credentials)", j->ns,
                      j->name, abandoned);
            else
                LOG_I("dispatch: %s/%s: every member cleaned up; finalizer removed", j->ns, j->name);
            dsp_members_forget(ctl->members, j->uid);
            return -1;
        }
        return 1000;
    }
    j->phase = "Deleting";
    store_status(ctl, j, now);
    state_events(j);
    post_events(ctl, j);
    return next;
}

/* One pass over a job. Returns the delay (ms) until it should be looked at
 * again, or -1 for "only when it changes". */
static int64_t reconcile(dsp_controller_t *ctl, job_t *j)
{
    int64_t now = util_wall_ms();
    if (json_object_get(json_object_get(j->obj, "metadata"), "deletionTimestamp"))
        return reconcile_delete(ctl, j, now);
    if (!has_finalizer(j->obj) && set_finalizer(ctl, j, 1) != 0)
        return 1000;

    const char *op = json_string_value(json_object_get(json_object_get(j->obj, "status"), "phase"));
    snprintf(j->old_phase, sizeof j->old_phase, "%s", op ? op : "");
    int done = strcmp(j->old_phase, "Succeeded") == 0 || strcmp(j->old_phase, "Failed") == 0;
    int64_t next = -1;
    for (int i = 0; i < j->n && !done; i++) {
        cstat_t *c = &j->c[i];
        if (c->bad || st_is(c, "Failed") || st_is(c, "Cancelled"))
            continue;
        if (st_is(c, "Submitting") || st_is(c, "Unavailable")) {
            if (st_is(c, "Unavailable") && c->retry_at > now) {
                next = min_due(next, c->retry_at - now);
                continue;
            }
            if (submit(ctl, j, c, now) != 0) {
                if (st_is(c, "Unavailable"))
                    next = min_due(next, c->retry_at - now);
                continue;
            }
        }
        observe(ctl, j, c, now);
        if (st_is(c, "Unavailable"))
            next = min_due(next, c->retry_at - now);
    }

    int cancel[MAX_CLUSTERS] = { 0 };
    dsp_decision_t d = { -1, 0, 0, -1 };
    if (!done) {
        decide(ctl, j, now, cancel, &d);
        set_phase(j);
    } else {
        j->phase = j->old_phase;
        j->final = 1;
    }
    state_events(j);

    /* 1. the decision is stored before any loser is touched */
    if (store_status(ctl, j, now) != 0)
        return 1000;

    /* 2. cancel: delete the losers' objects (and earlier ones not yet
     * cleaned, e.g. a member that was down when it lost) */
    int cleaned_now = 0, pending = 0;
    for (int i = 0; i < j->n; i++) {
        cstat_t *c = &j->c[i];
        if (!st_is(c, "Cancelled") || c->cleaned)
            continue;
        char err[512] = "";
        if (cleanup(ctl, j, c, err, sizeof err) == 1) {
            c->cleaned = 1;
            snprintf(c->message, sizeof c->message, "cluster %s won; objects deleted",
                     j->winner >= 0 ? j->c[j->winner].name : "?");
            cleaned_now++;
            c->deleted = util_wall_ms();
            if (c->cancel_due > 0) {
                double lat = (double)c->deleted / 1000.0 - c->cancel_due;
                if (ctl->m_latency)
                    metric_observe(ctl->m_latency, NULL, lat < 0 ? 0 : lat);
                LOG_I("dispatch: %s/%s: cluster %s cancelled (%s won), objects deleted %.3fs after it was due", j->ns,
                      j->name, c->name, j->winner >= 0 ? j->c[j->winner].name : "?", lat);
            }
        } else {
            pending = 1;
            snprintf(c->message, sizeof c->message, "cleanup pending: %.380s", err);
        }
    }
    if (cleaned_now || pending)
        store_status(ctl, j, now);
    post_events(ctl, j);

    if (pending)
        next = min_due(next, 5000);
    if (strcmp(j->phase, "Succeeded") == 0 || strcmp(j->phase, "Failed") == 0)
        return next;
    /* Watched members kick a pass when their pods change: the poll is then
     * only the safety net (Jobs' Failed condition, a watch gone quiet). */
    int64_t poll = (int64_t)(ctl->o.poll_s * 1000);
    if (d.next_wake >= 0)
        next = min_due(next, (int64_t)llround(d.next_wake * 1000) - now);
    if (!j->final)
        next = min_due(next, j->polled ? poll : poll * WATCHED_POLL_FACTOR);
    else
        next = min_due(next, poll * 10); /* the winner: only Succeeded / Failed */
    return next < 0 ? 0 : next;
}

/* ---- queue and threads ------------------------------------------------ */

static const char *job_uid(json_t *obj)
{
    const char *u = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
    return u ? u : "";
}

/* A member watch saw one of job uid's pods change: look at the job now. */
static void kick(void *ud, const char *uid)
{
    dsp_controller_t *ctl = ud;
    pthread_mutex_lock(&ctl->mu);
    const char *key = hashmap_get(ctl->by_uid, uid);
    entry_t *e = key ? hashmap_get(ctl->entries, key) : NULL;
    if (e && e->obj) {
        int64_t now = util_now_ms();
        if (e->busy)
            e->dirty = 1;
        else if (e->due < 0 || e->due > now)
            e->due = now;
        pthread_cond_signal(&ctl->cv);
    }
    pthread_mutex_unlock(&ctl->mu);
}

static void on_job(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    dsp_controller_t *ctl = ud;
    pthread_mutex_lock(&ctl->mu);
    entry_t *e = hashmap_get(ctl->entries, key);
    if (e && e->obj)
        free(hashmap_remove(ctl->by_uid, job_uid(e->obj)));
    if (type == KUBE_DELETED || !obj) {
        if (e && !e->busy) {
            json_decref(e->obj);
            free(hashmap_remove(ctl->entries, key));
        } else if (e) {
            json_decref(e->obj);
            e->obj = NULL;
            e->dirty = 1;
        }
        pthread_mutex_unlock(&ctl->mu);
        return;
    }
    if (!e) {
        e = util_xcalloc(1, sizeof(*e));
        hashmap_put(ctl->entries, key, e);
    }
    json_decref(e->obj);
    e->obj = json_deep_copy(obj);
    if (job_uid(obj)[0])
        free(hashmap_put(ctl->by_uid, job_uid(obj), util_strdup(key)));
    e->due = util_now_ms();
    if (e->busy)
        e->dirty = 1;
    pthread_cond_signal(&ctl->cv);
    pthread_mutex_unlock(&ctl->mu);
}

void dsp_controller_collect(dsp_controller_t *ctl)
{
    if (!ctl || !ctl->m_jobs)
        return;
    static const char *const phases[] = { "Pending", "Racing", "Won", "Succeeded", "Failed", "Deleting" };
    int counts[6] = { 0 };
    const char *k;
    void *v;
    pthread_mutex_lock(&ctl->mu);
    for (size_t it = 0; hashmap_next(ctl->entries, &it, &k, &v);) {
        entry_t *e = v;
        const char *ph = json_string_value(json_object_get(json_object_get(e->obj, "status"), "phase"));
        for (int i = 0; ph && i < 6; i++)
            if (strcmp(ph, phases[i]) == 0)
                counts[i]++;
    }
    pthread_mutex_unlock(&ctl->mu);
    for (int i = 0; i < 6; i++) {
        char lb[64];
        metric_set(ctl->m_jobs, metrics_labels(lb, sizeof lb, "phase", phases[i], NULL), counts[i]);
    }
}

static void *worker_main(void *arg)
{
    dsp_controller_t *ctl = arg;
    util_thread_name("dispatch");
    pthread_mutex_lock(&ctl->mu);
    while (!ctl->stop) {
        int64_t now = util_now_ms(), best = -1;
        const char *bk = NULL;
        const char *k;
        void *v;
        for (size_t it = 0; hashmap_next(ctl->entries, &it, &k, &v);) {
            entry_t *e = v;
            if (e->busy || e->due < 0 || !e->obj)
                continue;
            if (best < 0 || e->due < best) {
                best = e->due;
                bk = k;
            }
        }
        if (!bk || best > now) {
            int64_t wait = bk ? best - now : 1000;
            struct timespec ts;
            util_deadline(CLOCK_REALTIME, wait > 1000 ? 1000 : wait, &ts);
            pthread_cond_timedwait(&ctl->cv, &ctl->mu, &ts);
            continue;
        }
        char key[600];
        snprintf(key, sizeof key, "%s", bk);
        entry_t *e = hashmap_get(ctl->entries, key);
        e->busy = 1;
        e->dirty = 0;
        e->due = -1;
        json_t *obj = json_deep_copy(e->obj);
        pthread_mutex_unlock(&ctl->mu);

        int64_t again = -1;
        job_t *j = util_xcalloc(1, sizeof(*j));
        if (job_load(j, obj) == 0) {
            again = reconcile(ctl, j);
            if (ctl->m_reconciles)
                metric_inc(ctl->m_reconciles, NULL);
        }
        job_free(j);
        json_decref(obj);

        pthread_mutex_lock(&ctl->mu);
        e = hashmap_get(ctl->entries, key);
        e->busy = 0;
        if (!e->obj) {
            free(hashmap_remove(ctl->entries, key));
        } else if (e->dirty) {
            e->due = util_now_ms();
        } else if (again >= 0) {
            e->due = util_now_ms() + again;
        }
    }
    pthread_mutex_unlock(&ctl->mu);
    return NULL;
}

dsp_controller_t *dsp_controller_new(kube_client_t *hub, const dsp_opts_t *o, char *err, size_t errlen)
{
    dsp_controller_t *ctl = util_xcalloc(1, sizeof(*ctl));
    ctl->hub = hub;
    ctl->o = *o;
    if (ctl->o.poll_s <= 0)
        ctl->o.poll_s = 1;
    if (ctl->o.member_timeout_s <= 0)
        ctl->o.member_timeout_s = 10;
    if (ctl->o.workers <= 0)
        ctl->o.workers = DSP_DEFAULT_WORKERS;
    if (ctl->o.cleanup_grace_s <= 0)
        ctl->o.cleanup_grace_s = DSP_DEFAULT_CLEANUP_GRACE_S;
    if (ctl->o.workers > DSP_MAX_WORKERS)
        ctl->o.workers = DSP_MAX_WORKERS;
    pthread_mutex_init(&ctl->mu, NULL);
    pthread_cond_init(&ctl->cv, NULL);
    ctl->entries = hashmap_new(64);
    ctl->by_uid = hashmap_new(64);
    ctl->members = dsp_members_new(hub, ctl->o.member_timeout_s, kick, ctl);
    ctl->inf = informer_new(hub, JOBS_PATH, NULL, on_job, ctl);
    if (!ctl->inf) {
        util_errf(err, errlen, "cannot watch %s", JOBS_PATH);
        dsp_controller_free(ctl);
        return NULL;
    }
    if (o->metrics) {
        static const double lat_buckets[] = { 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30 };
        ctl->m_reconciles =
            metrics_counter(o->metrics, "ai_scheduler_dispatch_reconciles_total", "MultiClusterJob reconciles.");
        ctl->m_decisions = metrics_counter(o->metrics, "ai_scheduler_dispatch_decisions_total",
                                           "Winners chosen (a later higher-priority winner counts again).");
        ctl->m_latency = metrics_histogram(
            o->metrics, "ai_scheduler_dispatch_cancel_latency_seconds",
            "From a loser's cancel becoming due (guard time or window elapsed) to its objects deleted.", lat_buckets,
            (int)(sizeof lat_buckets / sizeof lat_buckets[0]));
        ctl->m_member_errors = metrics_counter(o->metrics, "ai_scheduler_dispatch_member_errors_total",
                                               "Member clusters found unavailable, by reason.");
        ctl->m_abandoned =
            metrics_counter(o->metrics, "ai_scheduler_dispatch_cleanups_abandoned_total",
                            "Members whose objects were left when a job's finalizer came off without credentials.");
        ctl->m_jobs = metrics_gauge(o->metrics, "ai_scheduler_dispatch_jobs", "MultiClusterJobs by phase.");
    }
    return ctl;
}

int dsp_controller_start(dsp_controller_t *ctl, char *err, size_t errlen)
{
    if (informer_start(ctl->inf) != 0)
        return util_errf(err, errlen, "cannot start the MultiClusterJob informer");
    for (int i = 0; i < ctl->o.workers; i++) {
        if (pthread_create(&ctl->workers[i], NULL, worker_main, ctl) != 0)
            return util_errf(err, errlen, "cannot start dispatch worker %d", i + 1);
        ctl->started++;
    }
    return 0;
}

int dsp_controller_synced(dsp_controller_t *ctl)
{
    return informer_has_synced(ctl->inf);
}

void dsp_controller_stop(dsp_controller_t *ctl)
{
    if (!ctl)
        return;
    if (ctl->inf)
        informer_stop(ctl->inf);
    pthread_mutex_lock(&ctl->mu);
    ctl->stop = 1;
    pthread_cond_broadcast(&ctl->cv);
    pthread_mutex_unlock(&ctl->mu);
    for (int i = 0; i < ctl->started; i++)
        pthread_join(ctl->workers[i], NULL);
    ctl->started = 0;
}

void dsp_controller_free(dsp_controller_t *ctl)
{
    if (!ctl)
        return;
    dsp_controller_stop(ctl);
    informer_free(ctl->inf);
    dsp_members_free(ctl->members); /* first: its watches' threads kick ctl */
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(ctl->entries, &it, &k, &v);) {
        entry_t *e = v;
        json_decref(e->obj);
        free(e);
    }
    hashmap_free(ctl->entries);
    for (size_t it = 0; hashmap_next(ctl->by_uid, &it, &k, &v);)
        free(v);
    hashmap_free(ctl->by_uid);
    pthread_cond_destroy(&ctl->cv);
    pthread_mutex_destroy(&ctl->mu);
    free(ctl);
}

/* ---- dashboard ---------------------------------------------------------- */

static json_t *dash_job(const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata"), *st = json_object_get(obj, "status");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *phase = json_string_value(json_object_get(st, "phase"));
    const char *winner = json_string_value(json_object_get(st, "winner"));
    json_t *members = json_array();
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(st, "clusters"), i, c) {
        const char *cn = json_string_value(json_object_get(c, "name"));
        const char *cs = json_string_value(json_object_get(c, "state"));
        const char *cm = json_string_value(json_object_get(c, "message"));
        json_array_append_new(members, json_pack("{s:s, s:s, s:o}", "cluster", cn ? cn : "", "state", cs ? cs : "",
                                                 "message", cm ? json_string(cm) : json_null()));
    }
    return json_pack("{s:s, s:s, s:s, s:o, s:o}", "namespace", ns ? ns : "", "name", name ? name : "", "phase",
                     phase ? phase : "Pending", "winner", winner ? json_string(winner) : json_null(), "members",
                     members);
}

static int cmp_job(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c =
        strcmp(json_string_value(json_object_get(x, "namespace")), json_string_value(json_object_get(y, "namespace")));
    return c ? c : strcmp(json_string_value(json_object_get(x, "name")), json_string_value(json_object_get(y, "name")));
}

json_t *dsp_controller_dashboard(dsp_controller_t *ctl)
{
    size_t n = 0, cap = 16;
    json_t **v = util_xcalloc(cap, sizeof *v);
    const char *k;
    void *val;
    pthread_mutex_lock(&ctl->mu);
    for (size_t it = 0; hashmap_next(ctl->entries, &it, &k, &val);) {
        entry_t *e = val;
        if (!e->obj)
            continue;
        if (n == cap) {
            cap *= 2;
            v = util_xrealloc(v, cap * sizeof *v);
        }
        v[n++] = dash_job(e->obj);
    }
    pthread_mutex_unlock(&ctl->mu);
    qsort(v, n, sizeof *v, cmp_job);
    json_t *jobs = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(jobs, v[i]);
    free(v);
    return json_pack("{s:b, s:o}", "served", 1, "jobs", jobs);
}
