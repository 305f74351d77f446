/* member.c -- member clusters for dispatch: clients from Secrets, discovery,
 * create / observe / delete of the specialised objects. */
#include "dispatch/member.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/podwatch.h"
#include "dispatch/template.h"
#include "kube/kubeconfig.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/util.h"

#define SECRET_TTL_MS 10000
#define KEEP_MS       ((int64_t)DSP_KEEP_CREDS_S * 1000)

/* A usable member client, built from one version of its Secret and shared
 * by the workers: a newer Secret replaces it in the slot, and the last
 * worker to let go frees it. */
struct dsp_mclient {
    int refs; /* under ms->mu: the slot's, and one per dsp_member_get */
    dsp_members_t *ms;
    kube_client_t *kc;  /* thread-safe */
    pthread_mutex_t mu; /* discovery, watches */
    json_t *discovery;  /* groupVersion -> resources[] */
    hashmap_t *watches; /* namespace -> dsp_podwatch_t, owned; on kc */
};

/* What is known of one Secret. */
typedef struct slot {
    char *secret_rv;
    char secret_id[160]; /* "uid U, resourceVersion R" of the version cur was built from */
    int64_t checked_ms;
    struct dsp_mclient *cur; /* NULL while the Secret is unusable; holds a reference */
    const char *reason;      /* why cur is NULL */
    char err[384];
    /* The last usable client, kept once the Secret went (or stopped
     * parsing) so the jobs that used it can still delete their objects;
     * dropped when none of them is left, after KEEP_MS, or when a usable
     * Secret is back. Holds a reference. */
    struct dsp_mclient *kept;
    char kept_id[160];
    int64_t kept_ms;  /* monotonic: when it was kept */
    hashmap_t *users; /* uids of the jobs that got a client from this slot */
} slot_t;

struct dsp_members {
    kube_client_t *hub;
    int timeout_s;
    pthread_mutex_t mu;   /* by_secret, the slots, refs */
    hashmap_t *by_secret; /* "ns/secret/key" -> slot_t */
    dsp_kick_fn kick;
    void *kick_ud;
};

dsp_members_t *dsp_members_new(kube_client_t *hub, int timeout_s, dsp_kick_fn kick, void *kick_ud)
{
    dsp_members_t *ms = util_xcalloc(1, sizeof(*ms));
    ms->hub = hub;
    ms->timeout_s = timeout_s > 0 ? timeout_s : 10;
    pthread_mutex_init(&ms->mu, NULL);
    ms->by_secret = hashmap_new(16);
    ms->kick = kick;
    ms->kick_ud = kick_ud;
    return ms;
}

static void mclient_free(struct dsp_mclient *m)
{
    const char *k;
    void *v;
    /* The watches use kc: they stop first. */
    for (size_t it = 0; m->watches && hashmap_next(m->watches, &it, &k, &v);)
        dsp_podwatch_free(v);
    hashmap_free(m->watches);
    kube_client_free(m->kc);
    json_decref(m->discovery);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* Drops a reference; the last one frees, outside ms->mu (stopping a watch
 * joins its thread). */
static void mclient_unref(dsp_members_t *ms, struct dsp_mclient *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&ms->mu);
    int last = --m->refs == 0;
    pthread_mutex_unlock(&ms->mu);
    if (last)
        mclient_free(m);
}

void dsp_member_put(dsp_member_client_t *mc)
{
    if (mc)
        mclient_unref(mc->ms, mc);
}

void dsp_members_free(dsp_members_t *ms)
{
    if (!ms)
        return;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(ms->by_secret, &it, &k, &v);) {
        slot_t *sl = v;
        mclient_unref(ms, sl->cur);
        mclient_unref(ms, sl->kept);
        hashmap_free(sl->users);
        free(sl->secret_rv);
        free(sl);
    }
    hashmap_free(ms->by_secret);
    pthread_mutex_destroy(&ms->mu);
    free(ms);
}

const char *dsp_member_server(dsp_member_client_t *mc)
{
    return mc && mc->kc ? kube_client_server(mc->kc) : "";
}

/* The kubeconfig bytes in the Secret: data[key], else the only entry. */
static char *secret_kubeconfig(json_t *secret, const char *key, size_t *len, char *err, size_t errlen)
{
    json_t *data = json_object_get(secret, "data");
    json_t *v = NULL;
    if (json_is_object(data)) {
        v = json_object_get(data, key ? key : "kubeconfig");
        if (!v && !key && json_object_size(data) == 1)
            v = json_object_iter_value(json_object_iter(data));
    }
    if (!json_is_string(v)) {
        util_errf(err, errlen, "has no data key \"%s\"", key ? key : "kubeconfig");
        return NULL;
    }
    char *out = kube_base64_decode(json_string_value(v), len);
    if (!out)
        util_errf(err, errlen, "data \"%s\" is not base64", key ? key : "kubeconfig");
    return out;
}

/* A client from the Secret's kubeconfig (one reference, the slot's), or
 * NULL with sl->reason and sl->err. */
static struct dsp_mclient *mclient_build(dsp_members_t *ms, slot_t *sl, json_t *secret, const char *name,
                                         const char *key)
{
    size_t len = 0;
    char why[300];
    char *kcfg = secret_kubeconfig(secret, key, &len, why, sizeof why);
    sl->reason = DSP_R_KUBECONFIG;
    if (!kcfg) {
        snprintf(sl->err, sizeof sl->err, "secret %.150s %.200s", name, why);
        return NULL;
    }
    char src[300];
    snprintf(src, sizeof src, "in secret %.250s", name);
    kube_config_t cfg;
    int rc = kube_config_parse(&cfg, kcfg, len, src, sl->err, sizeof sl->err);
    free(kcfg);
    if (rc != 0)
        return NULL;
    kube_client_opts_t o = {
        .qps = 20, .burst = 40, .timeout_s = ms->timeout_s, .user_agent = "ai-scheduler/dispatch"
    };
    kube_client_t *kc = kube_client_new(&cfg, &o, sl->err, sizeof sl->err);
    kube_config_free(&cfg);
    if (!kc)
        return NULL;
    struct dsp_mclient *m = util_xcalloc(1, sizeof(*m));
    m->refs = 1;
    m->ms = ms;
    m->kc = kc;
    pthread_mutex_init(&m->mu, NULL);
    m->discovery = json_object();
    m->watches = hashmap_new(4);
    sl->reason = NULL;
    sl->err[0] = '\0';
    return m;
}

/* The Secret can no longer give a client: cur, if any, becomes the kept
 * one. ms->mu held. Returns the client that drops out (the kept one it
 * replaces), for the caller to let go of outside the lock. */
static struct dsp_mclient *keep(slot_t *sl)
{
    struct dsp_mclient *old = NULL;
    if (sl->cur) {
        old = sl->kept;
        sl->kept = sl->cur;
        snprintf(sl->kept_id, sizeof sl->kept_id, "%s", sl->secret_id);
        sl->kept_ms = util_now_ms();
        sl->cur = NULL;
    }
    return old;
}

/* Reads the Secret again when its slot is older than SECRET_TTL_MS, and
 * replaces the client when the Secret changed. ms->mu held (one refresh at
 * a time; the other workers wait for it). The clients that drop out go in
 * drop[0..1], for the caller to let go of outside the lock; *fail set when
 * the hub did not answer and no client is at hand. */
static void refresh(dsp_members_t *ms, slot_t *sl, const char *ns, const char *secret, const char *key,
                    struct dsp_mclient *drop[2], int *fail, char *err, size_t errlen)
{
    int64_t now = util_now_ms();
    *fail = 0;
    if (sl->checked_ms && now - sl->checked_ms < SECRET_TTL_MS)
        return;
    char *ens = util_urlencode(ns), *esec = util_urlencode(secret);
    sbuf_t path = { 0 };
    sbuf_printf(&path, "/api/v1/namespaces/%s/secrets/%s", ens, esec);
    free(ens);
    free(esec);
    json_t *s = NULL;
    long status = 0;
    char gerr[300];
    int rc = kube_get_json(ms->hub, path.data, &s, &status, gerr, sizeof gerr);
    sbuf_free(&path);
    if (rc != 0) {
        if (status == 404 || status == 403) {
            drop[0] = keep(sl);
            free(sl->secret_rv);
            sl->secret_rv = NULL;
            sl->reason = DSP_R_SECRET;
            snprintf(sl->err, sizeof sl->err, "secret %.63s/%.100s: %.200s", ns, secret, gerr);
            sl->checked_ms = now;
        } else if (!sl->cur) {
            /* the hub did not answer: keep what we had, try again soon */
            util_errf(err, errlen, "reading secret %s/%s: %s", ns, secret, gerr);
            *fail = 1;
        }
    } else {
        const char *rv = json_string_value(json_object_get(json_object_get(s, "metadata"), "resourceVersion"));
        if (!sl->secret_rv || !rv || strcmp(rv, sl->secret_rv) != 0) {
            char name[400];
            snprintf(name, sizeof name, "%.63s/%.253s", ns, secret);
            struct dsp_mclient *m = mclient_build(ms, sl, s, name, key);
            if (!m) {
                drop[0] = keep(sl);
            } else {
                /* a usable Secret again: it is the one to use */
                drop[0] = sl->cur;
                drop[1] = sl->kept;
                sl->kept = NULL;
                sl->cur = m;
                const char *uid = json_string_value(json_object_get(json_object_get(s, "metadata"), "uid"));
                snprintf(sl->secret_id, sizeof sl->secret_id, "uid %.60s, resourceVersion %.60s", uid ? uid : "?",
                         rv ? rv : "?");
            }
            free(sl->secret_rv);
            sl->secret_rv = util_strdup(rv ? rv : "");
        }
        sl->checked_ms = now;
    }
    json_decref(s);
}

/* The kept client, once no job that used it is left or it is older than
 * KEEP_MS: taken out of sl for the caller to let go of. ms->mu held. */
static struct dsp_mclient *kept_expired(slot_t *sl, int64_t now)
{
    struct dsp_mclient *m = sl->kept;
    if (!m || (hashmap_len(sl->users) > 0 && now - sl->kept_ms < KEEP_MS))
        return NULL;
    sl->kept = NULL;
    return m;
}

/* dsp_member_get, and for cleanup (cleanup=1) the kept client when the
 * Secret gives none and job uid used it. */
static dsp_member_client_t *get(dsp_members_t *ms, const char *ns, const char *secret, const char *key, const char *uid,
                                int cleanup, int *none, const char **reason, char *err, size_t errlen)
{
    char mk[600];
    snprintf(mk, sizeof mk, "%s/%s/%s", ns, secret, key ? key : "");
    pthread_mutex_lock(&ms->mu);
    slot_t *sl = hashmap_get(ms->by_secret, mk);
    if (!sl) {
        sl = util_xcalloc(1, sizeof(*sl));
        sl->users = hashmap_new(4);
        hashmap_put(ms->by_secret, mk, sl);
    }
    int fail = 0;
    struct dsp_mclient *drop[3] = { NULL, NULL, NULL }, *m = NULL;
    refresh(ms, sl, ns, secret, key, drop, &fail, err, errlen);
    drop[2] = kept_expired(sl, util_now_ms());
    if (sl->cur) {
        m = sl->cur;
        if (uid)
            hashmap_put(sl->users, uid, sl);
    } else if (cleanup && sl->kept && uid && hashmap_get(sl->users, uid)) {
        m = sl->kept;
        LOG_I("dispatch: secret %s/%s gives no client (%s); deleting with the credentials it held before (%s)", ns,
              secret, fail ? err : sl->err, sl->kept_id);
    } else if (fail) {
        *reason = DSP_R_SECRET;
    } else {
        *reason = sl->reason ? sl->reason : DSP_R_KUBECONFIG;
        util_errf(err, errlen, "%s", sl->err);
        *none = 1;
    }
    if (m)
        m->refs++;
    pthread_mutex_unlock(&ms->mu);
    for (int i = 0; i < 3; i++)
        mclient_unref(ms, drop[i]);
    return m;
}

dsp_member_client_t *dsp_member_get(dsp_members_t *ms, const char *ns, const char *secret, const char *key,
                                    const char *uid, const char **reason, char *err, size_t errlen)
{
    int none = 0;
    return get(ms, ns, secret, key, uid, 0, &none, reason, err, errlen);
}

dsp_member_client_t *dsp_member_get_cleanup(dsp_members_t *ms, const char *ns, const char *secret, const char *key,
                                            const char *uid, int *none, const char **reason, char *err, size_t errlen)
{
    *none = 0;
    return get(ms, ns, secret, key, uid, 1, none, reason, err, errlen);
}

void dsp_members_forget(dsp_members_t *ms, const char *uid)
{
    /* one client at a time: the last reference frees outside ms->mu */
    for (;;) {
        struct dsp_mclient *m = NULL;
        const char *k;
        void *v;
        pthread_mutex_lock(&ms->mu);
        int64_t now = util_now_ms();
        for (size_t it = 0; !m && hashmap_next(ms->by_secret, &it, &k, &v);) {
            slot_t *sl = v;
            hashmap_remove(sl->users, uid);
            m = kept_expired(sl, now);
        }
        pthread_mutex_unlock(&ms->mu);
        if (!m)
            return;
        mclient_unref(ms, m);
    }
}

/* "v1" -> /api/v1, "g/v" -> /apis/g/v */
static void gv_path(const char *api_version, sbuf_t *b)
{
    if (strchr(api_version, '/'))
        sbuf_printf(b, "/apis/%s", api_version);
    else
        sbuf_printf(b, "/api/%s", api_version);
}

/* The collection path of obj's kind in ns, from the member's discovery. */
static int object_path(dsp_member_client_t *mc, json_t *obj, sbuf_t *out, int *transport, char *err, size_t errlen)
{
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *ns = json_string_value(json_object_get(json_object_get(obj, "metadata"), "namespace"));
    *transport = 0;
    /* Our own reference: another worker may store the same entry meanwhile. */
    pthread_mutex_lock(&mc->mu);
    json_t *res = json_incref(json_object_get(mc->discovery, av));
    pthread_mutex_unlock(&mc->mu);
    if (!res) {
        sbuf_t p = { 0 };
        gv_path(av, &p);
        json_t *doc = NULL;
        long status = 0;
        int rc = kube_get_json(mc->kc, p.data, &doc, &status, err, errlen);
        sbuf_free(&p);
        if (rc != 0) {
            *transport = status == 0 || status >= 500;
            if (status == 404)
                util_errf(err, errlen, "the member does not serve %s", av);
            return -1;
        }
        res = json_incref(json_object_get(doc, "resources"));
        json_decref(doc);
        if (!json_is_array(res)) {
            json_decref(res);
            return util_errf(err, errlen, "discovery of %s returned no resources", av);
        }
        pthread_mutex_lock(&mc->mu);
        json_object_set(mc->discovery, av, res);
        pthread_mutex_unlock(&mc->mu);
    }
    int rc = 1; /* 1: no such kind there */
    size_t i;
    json_t *r;
    json_array_foreach (res, i, r) {
        const char *name = json_string_value(json_object_get(r, "name"));
        const char *k = json_string_value(json_object_get(r, "kind"));
        if (!name || !k || strchr(name, '/') || strcmp(k, kind) != 0)
            continue;
        if (!json_is_true(json_object_get(r, "namespaced"))) {
            rc = util_errf(err, errlen, "%s %s is not namespaced", av, kind);
            break;
        }
        char *ens = util_urlencode(ns);
        gv_path(av, out);
        sbuf_printf(out, "/namespaces/%s/%s", ens, name);
        free(ens);
        rc = 0;
        break;
    }
    json_decref(res);
    if (rc == 1)
        rc = util_errf(err, errlen, "the member has no kind %s in %s", kind, av);
    return rc;
}

static const char *obj_name(json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

static int is_ours(json_t *o, const char *uid)
{
    const char *v =
        json_string_value(json_object_get(json_object_get(json_object_get(o, "metadata"), "labels"), DSP_LABEL_UID));
    return v && strcmp(v, uid) == 0;
}

/* GET the member's object: 1 found (*out), 0 not found, -1 error. */
static int get_object(dsp_member_client_t *mc, const char *coll, const char *name, json_t **out, int *transport,
                      char *err, size_t errlen)
{
    char *en = util_urlencode(name);
    sbuf_t p = { 0 };
    sbuf_printf(&p, "%s/%s", coll, en);
    free(en);
    long status = 0;
    int rc = kube_get_json(mc->kc, p.data, out, &status, err, errlen);
    sbuf_free(&p);
    if (rc == 0)
        return 1;
    if (status == 404)
        return 0;
    *transport = status == 0 || status >= 500 || status == 429;
    return -1;
}

int dsp_member_create(dsp_member_client_t *mc, json_t *obj, const char *uid, const char **reason, char *err,
                      size_t errlen)
{
    sbuf_t coll = { 0 };
    int transport = 0;
    *reason = DSP_R_REJECTED;
    if (object_path(mc, obj, &coll, &transport, err, errlen) != 0) {
        if (transport)
            *reason = DSP_R_UNREACHABLE;
        sbuf_free(&coll);
        return -1;
    }
    long status = 0;
    char perr[400];
    int rc = kube_send_json(mc->kc, "POST", coll.data, NULL, obj, NULL, &status, perr, sizeof perr);
    if (rc == 0) {
        sbuf_free(&coll);
        return 0;
    }
    if (status != 409) {
        *reason = (status == 0 || status >= 500 || status == 429) ? DSP_R_UNREACHABLE : DSP_R_REJECTED;
        util_errf(err, errlen, "%s %s: %s", json_string_value(json_object_get(obj, "kind")), obj_name(obj), perr);
        sbuf_free(&coll);
        return -1;
    }
    /* already there: ours (created before a restart) or someone else's */
    json_t *cur = NULL;
    int got = get_object(mc, coll.data, obj_name(obj), &cur, &transport, err, errlen);
    sbuf_free(&coll);
    if (got == 1 && is_ours(cur, uid)) {
        json_decref(cur);
        return 0;
    }
    json_decref(cur);
    if (got == 1) {
        *reason = DSP_R_CONFLICT;
        util_errf(err, errlen, "%s %s exists and does not belong to this job (left alone)",
                  json_string_value(json_object_get(obj, "kind")), obj_name(obj));
    } else if (got == 0) {
        *reason = DSP_R_UNREACHABLE; /* deleted meanwhile: try again */
        util_errf(err, errlen, "%s %s: conflict, then not found", json_string_value(json_object_get(obj, "kind")),
                  obj_name(obj));
    } else if (transport) {
        *reason = DSP_R_UNREACHABLE;
    }
    return -1;
}

int dsp_member_delete(dsp_member_client_t *mc, json_t *obj, const char *uid, int *foreign, char *err, size_t errlen)
{
    *foreign = 0;
    sbuf_t coll = { 0 };
    int transport = 0;
    if (object_path(mc, obj, &coll, &transport, err, errlen) != 0) {
        sbuf_free(&coll);
        /* a kind the member does not serve was never created there */
        return transport ? -1 : 1;
    }
    json_t *cur = NULL;
    int got = get_object(mc, coll.data, obj_name(obj), &cur, &transport, err, errlen);
    if (got <= 0) {
        sbuf_free(&coll);
        return got == 0 ? 1 : -1;
    }
    json_t *meta = json_object_get(cur, "metadata");
    if (!is_ours(cur, uid)) {
        *foreign = 1;
        json_decref(cur);
        sbuf_free(&coll);
        return 1;
    }
    if (json_object_get(meta, "deletionTimestamp")) {
        json_decref(cur);
        sbuf_free(&coll);
        return 1;
    }
    json_t *body = json_pack("{s:s, s:s, s:s, s:{s:O}}", "kind", "DeleteOptions", "apiVersion", "v1",
                             "propagationPolicy", "Background", "preconditions", "uid", json_object_get(meta, "uid"));
    char *en = util_urlencode(obj_name(obj));
    sbuf_printf(&coll, "/%s", en);
    free(en);
    long status = 0;
    int rc = kube_send_json(mc->kc, "DELETE", coll.data, NULL, body, NULL, &status, err, errlen);
    json_decref(body);
    json_decref(cur);
    sbuf_free(&coll);
    /* 404: gone already; 409: the uid changed, so it is no longer ours */
    if (rc == 0 || status == 404 || status == 409)
        return 1;
    return -1;
}

static int job_failed(json_t *job)
{
    json_t *conds = json_object_get(json_object_get(job, "status"), "conditions");
    size_t i;
    json_t *c;
    json_array_foreach (conds, i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && strcmp(t, "Failed") == 0 && strcmp(s, "True") == 0)
            return 1;
    }
    return 0;
}

/* The batch Jobs among objs: one that failed fails the member. */
static int observe_jobs(dsp_member_client_t *mc, const char *uid, json_t *objs, dsp_pods_t *out, char *err,
                        size_t errlen)
{
    size_t i;
    json_t *o;
    json_array_foreach (objs, i, o) {
        const char *av = json_string_value(json_object_get(o, "apiVersion"));
        const char *kind = json_string_value(json_object_get(o, "kind"));
        if (!av || !kind || strncmp(av, "batch/", 6) != 0 || strcmp(kind, "Job") != 0)
            continue;
        sbuf_t coll = { 0 };
        int transport = 0;
        json_t *job = NULL;
        if (object_path(mc, o, &coll, &transport, err, errlen) == 0 &&
            get_object(mc, coll.data, obj_name(o), &job, &transport, err, errlen) == 1 && is_ours(job, uid))
            out->job_failed |= job_failed(job);
        json_decref(job);
        sbuf_free(&coll);
    }
    return 0;
}

int dsp_member_observe(dsp_member_client_t *mc, const char *ns, const char *uid, json_t *objs, dsp_pods_t *out,
                       char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&mc->mu);
    dsp_podwatch_t *w = hashmap_get(mc->watches, ns);
    if (!w) {
        w = dsp_podwatch_new(mc->kc, ns, mc->ms->kick, mc->ms->kick_ud);
        hashmap_put(mc->watches, ns, w);
    }
    pthread_mutex_unlock(&mc->mu);
    /* The watch when it is current; else (not synced yet, the member
     * down, no permission to watch) a LIST, whose failure says so. */
    if (dsp_podwatch_count(w, uid, out) == 0)
        return observe_jobs(mc, uid, objs, out, err, errlen);
    char *ens = util_urlencode(ns);
    char sel[200];
    snprintf(sel, sizeof sel, "%s=%s", DSP_LABEL_UID, uid);
    char *esel = util_urlencode(sel);
    sbuf_t p = { 0 };
    sbuf_printf(&p, "/api/v1/namespaces/%s/pods?labelSelector=%s", ens, esel);
    free(ens);
    free(esel);
    json_t *items = json_array();
    long status = 0;
    int rc = kube_list_array(mc->kc, p.data, items, &status, err, errlen);
    sbuf_free(&p);
    if (rc != 0) {
        json_decref(items);
        return -1;
    }
    size_t i;
    json_t *pod;
    json_array_foreach (items, i, pod)
        dsp_pods_add(out, pod);
    json_decref(items);
    return observe_jobs(mc, uid, objs, out, err, errlen);
}
