/* grouper.c -- gangs derived from pods' owners: one worker walks a held pod's ownerReferences through the
 * workload table, creates the PodGroup of the topmost gang owner and labels the pod to it, or lets the pod in
 * as a pod of its own. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grouper/grouper.h"
#include "fairshare/fairshare.h"
#include "gang/gang.h"
#include "util/hashmap.h"
#include "util/lockorder.h"
#include "util/log.h"
#include "util/util.h"

#define MERGE_PATCH   "application/merge-patch+json"
#define EVENT_REASON  "NotGrouped"
#define ALONE         "the pod is scheduled as a pod of its own"
#define API_TRIES     4 /* one try and 3 retries */
#define FENCE_WAIT_MS 1000

static const int backoff_ms[API_TRIES - 1] = { 100, 400, 1600 };

/* An ownerReference (or an object's identity): all four set. */
typedef struct ref {
    char *api, *kind, *name, *uid;
} ref_t;

static void ref_set(ref_t *r, const char *api, const char *kind, const char *name, const char *uid)
{
    r->api = util_strdup(api);
    r->kind = util_strdup(kind);
    r->name = util_strdup(name);
    r->uid = util_strdup(uid);
}

static void ref_clear(ref_t *r)
{
    free(r->api);
    free(r->kind);
    free(r->name);
    free(r->uid);
    memset(r, 0, sizeof(*r));
}

static void verdict_copy(wl_verdict_t *dst, const wl_verdict_t *src)
{
    dst->gang = src->gang;
    dst->min_member = src->min_member;
    dst->queue = util_strdup_or_null(src->queue);
    dst->priority_class = util_strdup_or_null(src->priority_class);
    dst->why = util_strdup_or_null(src->why);
    dst->unmet = src->unmet;
}

/* ---- a bounded cache: a map and a list, oldest first ----------------------- */

typedef struct lru_node {
    char *key;
    int64_t at_ms, ttl_ms;
    struct lru_node *prev, *next;
} lru_node_t;

typedef struct lru {
    hashmap_t *map;
    lru_node_t *head, *tail;
    void (*free_fn)(lru_node_t *);
} lru_t;

static void lru_init(lru_t *l, void (*free_fn)(lru_node_t *))
{
    l->map = hashmap_new(64);
    l->head = l->tail = NULL;
    l->free_fn = free_fn;
}

static void lru_unlink(lru_t *l, lru_node_t *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        l->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        l->tail = n->prev;
    n->prev = n->next = NULL;
}

static void lru_drop(lru_t *l, lru_node_t *n)
{
    hashmap_remove(l->map, n->key);
    lru_unlink(l, n);
    l->free_fn(n);
}

/* The entry of key while fresh at now, or NULL. */
static lru_node_t *lru_fresh(lru_t *l, const char *key, int64_t now)
{
    lru_node_t *n = hashmap_get(l->map, key);
    return n && now - n->at_ms < n->ttl_ms ? n : NULL;
}

/* Inserts n (replacing its key's entry), then drops expired entries from
 * the head and the oldest beyond max. n itself stays. */
static void lru_put(lru_t *l, lru_node_t *n, int max, int64_t now)
{
    lru_node_t *old = hashmap_get(l->map, n->key);
    if (old)
        lru_drop(l, old);
    hashmap_put(l->map, n->key, n);
    n->prev = l->tail;
    n->next = NULL;
    if (l->tail)
        l->tail->next = n;
    else
        l->head = n;
    l->tail = n;
    while (l->head != n && (now - l->head->at_ms >= l->head->ttl_ms || (int)hashmap_len(l->map) > max))
        lru_drop(l, l->head);
}

static void lru_destroy(lru_t *l)
{
    while (l->head)
        lru_drop(l, l->head);
    hashmap_free(l->map);
}

/* ---- what the walk reads and concludes ------------------------------------- */

/* One owner as read (the owner cache, by uid). */
typedef struct owner {
    lru_node_t node; /* key: its uid */
    const wl_row_t *row;
    char *queue, *pool; /* its queue label and pool annotation, NULL when none */
    int has_verdict;    /* a gang row's */
    wl_verdict_t v;
    int has_ctrl;
    ref_t ctrl; /* its controller ownerReference */
} owner_t;

static void owner_free(lru_node_t *n)
{
    owner_t *o = (owner_t *)n;
    free(o->node.key);
    free(o->queue);
    free(o->pool);
    if (o->has_verdict)
        wl_verdict_clear(&o->v);
    ref_clear(&o->ctrl);
    free(o);
}

/* What the walk from a controller concluded (the decision cache, by the
 * pods' controller uid). Immutable once cached; only the worker frees. */
typedef struct decision {
    lru_node_t node;
    char *err;          /* the walk failed: why */
    char *queue, *pool; /* the top owner's */
    int has_gang;       /* a gang owner was read */
    ref_t gang;
    const wl_row_t *row;
    wl_verdict_t v;
} decision_t;

static void decision_free(lru_node_t *n)
{
    decision_t *d = (decision_t *)n;
    free(d->node.key);
    free(d->err);
    free(d->queue);
    free(d->pool);
    if (d->has_gang) {
        ref_clear(&d->gang);
        wl_verdict_clear(&d->v);
    }
    free(d);
}

/* ---- the grouper ----------------------------------------------------------- */

/* DONE: let in; the pod is never held again while it lives (it is in a
 * scheduling queue, whose age and attempts a second hold would reset),
 * whatever the decision caches hold by then. */
enum { REC_PENDING, REC_PATCHED, REC_DONE };

/* A pod being grouped or decided, or let in (by uid). */
typedef struct prec {
    int state;
    pod_t *pod; /* PENDING: the newest object seen */
    int queued; /* a work item names it */
    int wrote_gang, wrote_queue, wrote_pool;
} prec_t;

/* A PodGroup of ours (by "ns/name"), refreshed from its owner. */
typedef struct managed {
    char *ns, *name;
    ref_t owner;
    const wl_row_t *row;
    int32_t min;
    int queued;
} managed_t;

enum { WORK_POD, WORK_REFRESH };
typedef struct work {
    int kind;
    char *key; /* pod uid, or the PodGroup's "ns/name" */
    struct work *next;
} work_t;

/* A work item's end: done, or fenced (kept and tried again). */
enum { W_DONE, W_FENCED };

struct grouper {
    kube_client_t *kc;
    wl_table_t *table;
    grouper_opts_t o;
    grouper_hooks_t h;

    pthread_mutex_t mu; /* LO_GROUPER: everything below */
    pthread_cond_t cv;  /* CLOCK_MONOTONIC */
    pthread_t thread;
    int started, stopping;
    hashmap_t *pods;    /* uid -> prec_t */
    lru_t decisions;    /* the pods' controller uid -> decision_t */
    lru_t owners;       /* owner uid -> owner_t (only the worker reads it) */
    hashmap_t *managed; /* "ns/name" -> managed_t */
    work_t *qhead, *qtail;
    int nqueued, busy;
    int64_t fenced_until_ms, last_refresh_ms;
    grouper_stats_t st;
};

void grouper_opts_default(grouper_opts_t *o)
{
    o->max_depth = 8;
    o->owner_ttl_s = 10;
    o->single_ttl_s = 300;
    o->refresh_s = 30;
    o->max_owners = 100000;
}

static void lock(grouper_t *g)
{
    lo_mutex_lock(&g->mu, LO_GROUPER);
}

static void unlock(grouper_t *g)
{
    lo_mutex_unlock(&g->mu, LO_GROUPER);
}

static void prec_free(prec_t *r)
{
    if (r->pod)
        pod_unref(r->pod);
    free(r);
}

/* The pod is let in: its record stays, DONE, holding no object. */
static void prec_done(prec_t *r)
{
    r->state = REC_DONE;
    if (r->pod)
        pod_unref(r->pod);
    r->pod = NULL;
}

static void managed_free(managed_t *m)
{
    free(m->ns);
    free(m->name);
    ref_clear(&m->owner);
    free(m);
}

static void sanitize_opts(grouper_opts_t *o)
{
    grouper_opts_t d;
    grouper_opts_default(&d);
    if (o->max_depth < 1)
        o->max_depth = d.max_depth;
    if (o->owner_ttl_s < 0)
        o->owner_ttl_s = d.owner_ttl_s;
    if (o->single_ttl_s < 0)
        o->single_ttl_s = d.single_ttl_s;
    if (o->refresh_s < 0)
        o->refresh_s = d.refresh_s;
    if (o->max_owners < 1)
        o->max_owners = d.max_owners;
}

grouper_t *grouper_new(kube_client_t *kc, wl_table_t *table, const grouper_opts_t *o, const grouper_hooks_t *h)
{
    grouper_t *g = util_xcalloc(1, sizeof(*g));
    g->kc = kc;
    g->table = table;
    if (o)
        g->o = *o;
    else
        grouper_opts_default(&g->o);
    sanitize_opts(&g->o);
    if (h)
        g->h = *h;
    pthread_mutex_init(&g->mu, NULL);
    util_cond_init_monotonic(&g->cv);
    g->pods = hashmap_new(64);
    g->managed = hashmap_new(16);
    lru_init(&g->decisions, decision_free);
    lru_init(&g->owners, owner_free);
    g->last_refresh_ms = util_now_ms();
    return g;
}

/* ---- hooks (never called with the mutex held) ------------------------------ */

static int fenced(grouper_t *g)
{
    return g->h.fenced && g->h.fenced(g->h.ud);
}

static void release(grouper_t *g, const char *uid)
{
    if (g->h.release)
        g->h.release(g->h.ud, uid);
}

static void warn(grouper_t *g, const pod_t *pod, const char *msg)
{
    LOG_I("pod=%s not grouped: %s", pod->key, msg);
    if (g->h.pod_event)
        g->h.pod_event(g->h.ud, pod->ns, pod->name, pod->uid, "Warning", EVENT_REASON, msg);
}

/* ---- the work queue -------------------------------------------------------- */

/* mu held. */
static void enqueue_locked(grouper_t *g, int kind, const char *key, int front)
{
    work_t *w = util_xcalloc(1, sizeof(*w));
    w->kind = kind;
    w->key = util_strdup(key);
    if (front) {
        w->next = g->qhead;
        g->qhead = w;
        if (!g->qtail)
            g->qtail = w;
    } else {
        if (g->qtail)
            g->qtail->next = w;
        else
            g->qhead = w;
        g->qtail = w;
    }
    g->nqueued++;
    pthread_cond_signal(&g->cv);
}

static void work_free(work_t *w)
{
    free(w->key);
    free(w);
}

/* The item's "queued" mark (a pod's record, a managed group's), mu held. */
static void mark_queued_locked(grouper_t *g, const work_t *w, int queued)
{
    if (w->kind == WORK_POD) {
        prec_t *r = hashmap_get(g->pods, w->key);
        if (r)
            r->queued = queued;
    } else {
        managed_t *m = hashmap_get(g->managed, w->key);
        if (m)
            m->queued = queued;
    }
}

/* Sleeps ms unless stopping (mu not held); 0, or -1 when stopping. */
static int nap(grouper_t *g, int64_t ms)
{
    struct timespec ts;
    util_deadline(CLOCK_MONOTONIC, ms, &ts);
    lock(g);
    while (!g->stopping && pthread_cond_timedwait(&g->cv, &g->mu, &ts) == 0)
        ;
    int stopping = g->stopping;
    unlock(g);
    return stopping ? -1 : 0;
}

/* ---- API calls with retries ------------------------------------------------ */

static int retryable(int rc, long status)
{
    return rc != 0 && (status <= 0 || status == 429 || status >= 500);
}

/* GET (body NULL, method "GET") or a JSON write; transport errors, 429 and
 * 5xx are tried again after 100 ms, 400 ms and 1.6 s. */
static int api_call(grouper_t *g, const char *method, const char *path, json_t *body, json_t **out, long *status,
                    char *err, size_t errlen)
{
    int rc = -1;
    for (int i = 0; i < API_TRIES; i++) {
        if (out)
            *out = NULL;
        if (!strcmp(method, "GET"))
            rc = kube_get_json(g->kc, path, out, status, err, errlen);
        else
            rc = kube_send_json(g->kc, method, path, !strcmp(method, "PATCH") ? MERGE_PATCH : NULL, body, out, status,
                                err, errlen);
        if (!retryable(rc, *status) || i == API_TRIES - 1 || nap(g, backoff_ms[i]) != 0)
            break;
    }
    return rc;
}

/* ---- JSON readers (nothing trusted) ---------------------------------------- */

static const char *jstr(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static const char *meta_map_str(json_t *obj, const char *map, const char *key)
{
    const char *s = jstr(json_object_get(json_object_get(obj, "metadata"), map), key);
    return s && s[0] ? s : NULL;
}

/* The object's queue label (ours, then KAI's), or NULL. */
static const char *obj_queue(json_t *obj)
{
    const char *q = meta_map_str(obj, "labels", FS_QUEUE_LABEL);
    return q ? q : meta_map_str(obj, "labels", FS_KAI_QUEUE_LABEL);
}

/* The controller ownerReference of obj (all four fields strings, uid set):
 * its element, or NULL. */
static json_t *obj_controller(json_t *obj)
{
    json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), *r;
    size_t i;
    if (!json_is_array(refs))
        return NULL;
    json_array_foreach (refs, i, r) {
        if (!json_is_true(json_object_get(r, "controller")))
            continue;
        const char *api = jstr(r, "apiVersion"), *kind = jstr(r, "kind"), *name = jstr(r, "name"),
                   *uid = jstr(r, "uid");
        return api && kind && name && uid && uid[0] ? r : NULL;
    }
    return NULL;
}

static const char *pod_own_queue(const pod_t *pod)
{
    const char *q = labels_get(&pod->labels, FS_QUEUE_LABEL);
    if (q && q[0])
        return q;
    q = labels_get(&pod->labels, FS_KAI_QUEUE_LABEL);
    return q && q[0] ? q : NULL;
}

static int pod_has_pool(const pod_t *pod)
{
    return pod->pool && pod->pool[0];
}

/* ---- grouper_hold ---------------------------------------------------------- */

/* Whether a PATCHED pod now carries what was written. */
static int carries_writes(const prec_t *r, const pod_t *pod)
{
    if (r->wrote_gang)
        return 0; /* its label is checked first, in grouper_hold */
    return (!r->wrote_queue || labels_get(&pod->labels, FS_QUEUE_LABEL)) && (!r->wrote_pool || pod_has_pool(pod));
}

/* The hot path: the pod's controller has a fresh decision that puts the pod
 * on its own and writes nothing the pod lacks. mu held. */
static int decided_quietly_locked(grouper_t *g, const pod_t *pod)
{
    decision_t *d = (decision_t *)lru_fresh(&g->decisions, pod->controller_uid, util_now_ms());
    if (!d || d->err)
        return 0;
    if (d->has_gang && !(d->v.gang == 0 && d->v.unmet) && !(d->v.gang == 1 && !wl_row_admits(d->row, &pod->labels)))
        return 0;
    return (!d->queue || pod_own_queue(pod)) && (!d->pool || pod_has_pool(pod));
}

int grouper_hold(grouper_t *g, const pod_t *pod)
{
    if (!g || !pod || !pod->uid)
        return 0;
    int has_label = labels_get(&pod->labels, GANG_LABEL) != NULL;
    if (!has_label && (!pod->controller_uid || !pod->controller_uid[0]))
        return 0;
    int hold = 0;
    lock(g);
    prec_t *r = hashmap_get(g->pods, pod->uid);
    if (has_label) {
        if (r)
            prec_free(hashmap_remove(g->pods, pod->uid));
    } else if (r && r->state == REC_DONE) {
        hold = 0;
    } else if (r && r->state == REC_PATCHED) {
        hold = !carries_writes(r, pod);
        if (!hold)
            prec_done(r);
    } else if (r) { /* PENDING: the worker reads the newest object */
        pod_t *old = r->pod;
        r->pod = pod_ref((pod_t *)pod);
        pod_unref(old);
        hold = 1;
    } else {
        r = util_xcalloc(1, sizeof(*r));
        hashmap_put(g->pods, pod->uid, r);
        if (decided_quietly_locked(g, pod)) {
            r->state = REC_DONE; /* in at once, and for good */
        } else {
            r->state = REC_PENDING;
            r->pod = pod_ref((pod_t *)pod);
            r->queued = 1;
            enqueue_locked(g, WORK_POD, pod->uid, 0);
            hold = 1;
        }
    }
    unlock(g);
    return hold;
}

void grouper_forget(grouper_t *g, const char *uid)
{
    if (!g || !uid)
        return;
    lock(g);
    prec_t *r = hashmap_remove(g->pods, uid);
    if (r)
        prec_free(r);
    unlock(g);
}

/* ---- the walk -------------------------------------------------------------- */

/* "resource.group" (the core group: "resource"). */
static void resource_name(const wl_row_t *row, char *buf, size_t n)
{
    const char *grp = wl_row_group(row);
    snprintf(buf, n, "%s%s%s", wl_row_resource(row), grp && grp[0] ? "." : "", grp ? grp : "");
}

/* An owner_t from obj, read for ref by row. */
static owner_t *owner_parse(const wl_row_t *row, const ref_t *ref, json_t *obj, int64_t ttl_ms)
{
    owner_t *o = util_xcalloc(1, sizeof(*o));
    o->node.key = util_strdup(ref->uid);
    o->node.at_ms = util_now_ms();
    o->node.ttl_ms = ttl_ms;
    o->row = row;
    o->queue = util_strdup_or_null(obj_queue(obj));
    o->pool = util_strdup_or_null(meta_map_str(obj, "annotations", POOL_ANNOTATION));
    if (wl_row_is_gang(row)) {
        o->has_verdict = 1;
        if (wl_row_eval(row, obj, &o->v) != 0) {
            memset(&o->v, 0, sizeof(o->v));
            o->v.why = util_strdup("its minimum could not be evaluated");
        }
    }
    json_t *c = obj_controller(obj);
    if (c) {
        o->has_ctrl = 1;
        ref_set(&o->ctrl, jstr(c, "apiVersion"), jstr(c, "kind"), jstr(c, "name"), jstr(c, "uid"));
    }
    return o;
}

/* GETs the owner ref of row; NULL with why in err (404, 403, replaced,
 * other). */
static owner_t *owner_read(grouper_t *g, const wl_row_t *row, const ref_t *ref, const char *ns, char *err,
                           size_t errlen)
{
    char *path = wl_object_path(row, ref->api, ns, ref->name);
    if (!path) {
        util_errf(err, errlen, "%s %s cannot be read (not a valid name)", ref->kind, ref->name);
        return NULL;
    }
    json_t *obj = NULL;
    long status = 0;
    char aerr[512] = "";
    int rc = api_call(g, "GET", path, NULL, &obj, &status, aerr, sizeof aerr);
    free(path);
    lock(g);
    g->st.owner_reads++;
    unlock(g);
    char res[256];
    resource_name(row, res, sizeof res);
    const char *uid = rc == 0 ? jstr(json_object_get(obj, "metadata"), "uid") : NULL;
    owner_t *o = NULL;
    if ((rc != 0 && status == 404) || (rc == 0 && (!uid || strcmp(uid, ref->uid))))
        util_errf(err, errlen, "%s %s not found (not created yet, or its CRD is not installed)", ref->kind, ref->name);
    else if (rc != 0 && status == 403)
        util_errf(err, errlen, "no RBAC to get %s", res);
    else if (rc != 0)
        util_errf(err, errlen, "reading %s %s failed: %s", ref->kind, ref->name, aerr);
    else
        o = owner_parse(row, ref, obj, (int64_t)g->o.owner_ttl_s * 1000);
    json_decref(obj);
    return o;
}

/* The owner ref of row from the cache while fresh, else read (and cached).
 * The entry stays valid until the worker caches another. */
static owner_t *owner_get(grouper_t *g, const wl_row_t *row, const ref_t *ref, const char *ns, char *err, size_t errlen)
{
    lock(g);
    owner_t *o = (owner_t *)lru_fresh(&g->owners, ref->uid, util_now_ms());
    unlock(g);
    if (o)
        return o;
    o = owner_read(g, row, ref, ns, err, errlen);
    if (!o)
        return NULL;
    lock(g);
    lru_put(&g->owners, &o->node, g->o.max_owners, util_now_ms());
    unlock(g);
    return o;
}

/* Takes what d keeps of a read owner: the top owner's copies; the gang
 * owner's identity and verdict when its row is a gang row. */
static void decision_take(decision_t *d, const owner_t *o, const ref_t *ref)
{
    free(d->queue);
    free(d->pool);
    d->queue = util_strdup_or_null(o->queue);
    d->pool = util_strdup_or_null(o->pool);
    if (!o->has_verdict)
        return;
    if (d->has_gang) {
        ref_clear(&d->gang);
        wl_verdict_clear(&d->v);
    }
    d->has_gang = 1;
    ref_set(&d->gang, ref->api, ref->kind, ref->name, ref->uid);
    d->row = o->row;
    verdict_copy(&d->v, &o->v);
}

static int seen_before(char **seen, int n, const char *uid)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(seen[i], uid))
            return 1;
    return 0;
}

/* Walks up from the pod's controller; a new decision (err set on failure). */
static decision_t *walk(grouper_t *g, const pod_t *pod)
{
    decision_t *d = util_xcalloc(1, sizeof(*d));
    d->node.key = util_strdup(pod->controller_uid);
    ref_t cur;
    ref_set(&cur, pod->controller_api, pod->controller_kind, pod->controller_name, pod->controller_uid);
    char **seen = util_xcalloc((size_t)g->o.max_depth + 1, sizeof(char *));
    int nseen = 0;
    char err[768] = "";
    for (;;) {
        const wl_row_t *row = wl_table_find(g->table, cur.api, cur.kind);
        if (!row)
            break;
        if (seen_before(seen, nseen, cur.uid)) {
            util_errf(err, sizeof err, "the ownerReferences of %s %s form a cycle", cur.kind, cur.name);
            break;
        }
        if (nseen >= g->o.max_depth) {
            util_errf(err, sizeof err, "the owners go deeper than %d levels (at %s %s)", g->o.max_depth, cur.kind,
                      cur.name);
            break;
        }
        seen[nseen++] = util_strdup(cur.uid);
        owner_t *o = owner_get(g, row, &cur, pod->ns, err, sizeof err);
        if (!o)
            break;
        decision_take(d, o, &cur);
        ref_t next = { 0 };
        if (o->has_ctrl)
            ref_set(&next, o->ctrl.api, o->ctrl.kind, o->ctrl.name, o->ctrl.uid);
        ref_clear(&cur);
        cur = next;
        if (!cur.uid)
            break;
    }
    if (err[0])
        d->err = util_strdup(err);
    ref_clear(&cur);
    for (int i = 0; i < nseen; i++)
        free(seen[i]);
    free(seen);
    int quiet = !d->err && (!d->has_gang || (d->v.gang == 0 && d->v.unmet));
    d->node.at_ms = util_now_ms();
    d->node.ttl_ms = (int64_t)(quiet ? g->o.single_ttl_s : g->o.owner_ttl_s) * 1000;
    return d;
}

/* The decision for the pod's controller: cached while fresh, else walked
 * and cached. Valid until the worker caches another. */
static decision_t *decide(grouper_t *g, const pod_t *pod)
{
    lock(g);
    decision_t *d = (decision_t *)lru_fresh(&g->decisions, pod->controller_uid, util_now_ms());
    unlock(g);
    if (d)
        return d;
    d = walk(g, pod);
    lock(g);
    lru_put(&g->decisions, &d->node, g->o.max_owners, util_now_ms());
    unlock(g);
    return d;
}

/* ---- what one pod gets ----------------------------------------------------- */

typedef struct outcome {
    char *event;    /* a Warning to send, NULL */
    int no_writes;  /* an error: released as it is */
    char *pg;       /* the PodGroup, NULL: a pod of its own */
    char *queue;    /* the queue label to copy (the pod has none), NULL */
    char *pool;     /* the pool annotation to copy, NULL */
    char *pg_queue; /* the gang's queue, for its PodGroup */
} outcome_t;

static void outcome_clear(outcome_t *o)
{
    free(o->event);
    free(o->pg);
    free(o->queue);
    free(o->pool);
    free(o->pg_queue);
    memset(o, 0, sizeof(*o));
}

static void outcome_event(outcome_t *o, const char *fmt, const char *a, const char *b, const char *c)
{
    sbuf_t s = { 0 };
    sbuf_printf(&s, fmt, a, b, c);
    free(o->event);
    o->event = s.data;
}

/* The gang part of the outcome: o->pg, or an event / nothing for a pod of
 * its own. */
static void outcome_gang(const decision_t *d, const pod_t *pod, outcome_t *o)
{
    if (d->v.gang != 1) {
        if (!d->v.unmet)
            outcome_event(o, "%s %s is not a gang: %s; " ALONE, d->gang.kind, d->gang.name,
                          d->v.why ? d->v.why : "no minimum");
        return;
    }
    if (!wl_row_admits(d->row, &pod->labels))
        return;
    const char *by = wl_row_group_by(d->row), *suffix = NULL;
    if (by) {
        suffix = labels_get(&pod->labels, by);
        if (!suffix || !suffix[0]) {
            outcome_event(o, "the pod has no %s label, which splits the pods of %s %s into gangs; " ALONE, by,
                          d->gang.kind, d->gang.name);
            return;
        }
    }
    o->pg = wl_group_name(d->gang.kind, d->gang.name, suffix);
    if (!o->pg)
        outcome_event(o, "%s %s%s gives no PodGroup name; " ALONE, d->gang.kind, d->gang.name, "");
}

static void outcome_for(const decision_t *d, const pod_t *pod, outcome_t *o)
{
    memset(o, 0, sizeof(*o));
    if (d->err) {
        outcome_event(o, "%s; " ALONE "%s%s", d->err, "", "");
        o->no_writes = 1;
        return;
    }
    if (d->has_gang)
        outcome_gang(d, pod, o);
    const char *q = o->pg && d->v.queue ? d->v.queue : d->queue;
    if (o->pg)
        o->pg_queue = util_strdup_or_null(q);
    if (q && !pod_own_queue(pod))
        o->queue = util_strdup(q);
    if (d->pool && !pod_has_pool(pod))
        o->pool = util_strdup(d->pool);
}

/* ---- PodGroups ------------------------------------------------------------- */

static char *podgroup_path(const char *ns, const char *name)
{
    char *ens = util_urlencode(ns), *en = name ? util_urlencode(name) : NULL;
    sbuf_t p = { 0 };
    sbuf_printf(&p, "%s/namespaces/%s/podgroups%s%s", PODGROUP_API, ens, en ? "/" : "", en ? en : "");
    free(ens);
    free(en);
    return p.data;
}

static json_t *podgroup_body(const char *ns, const char *pg, const decision_t *d, const char *queue)
{
    json_t *labels = json_pack("{s:s}", GROUPER_MANAGED_LABEL, GROUPER_MANAGED_VALUE);
    if (queue)
        json_object_set_new(labels, FS_QUEUE_LABEL, json_string(queue));
    json_t *meta = json_pack("{s:s, s:s, s:o}", "name", pg, "namespace", ns, "labels", labels);
    if (d->v.priority_class)
        json_object_set_new(meta, "annotations",
                            json_pack("{s:s}", GANG_PRIORITY_CLASS_ANNOTATION, d->v.priority_class));
    json_object_set_new(meta, "ownerReferences",
                        json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", d->gang.api, "kind", d->gang.kind,
                                  "name", d->gang.name, "uid", d->gang.uid, "controller", 1, "blockOwnerDeletion", 0));
    return json_pack("{s:s, s:s, s:o, s:{s:i}}", "apiVersion", PODGROUP_VERSION, "kind", "PodGroup", "metadata", meta,
                     "spec", "minMember", (json_int_t)d->v.min_member);
}

/* Whether pg (as read) is ours for the owner uid: labelled managed by
 * ai-scheduler with a controller ownerReference to it. */
static int podgroup_ours(json_t *pg, const char *owner_uid)
{
    const char *m = meta_map_str(pg, "labels", GROUPER_MANAGED_LABEL);
    json_t *c = obj_controller(pg);
    return m && !strcmp(m, GROUPER_MANAGED_VALUE) && c && !strcmp(jstr(c, "uid"), owner_uid);
}

static int32_t podgroup_min(json_t *pg)
{
    json_t *v = json_object_get(json_object_get(pg, "spec"), "minMember");
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
    return n > 0 && n <= INT32_MAX ? (int32_t)n : 0;
}

/* merge-PATCHes the PodGroup's spec.minMember; the answer's status (0: no
answer; err says why when not 2xx). */
static long podgroup_resize(grouper_t *g, const char *ns, const char *name, int32_t min, char *err, size_t errlen)
{
    char *path = podgroup_path(ns, name);
    json_t *body = json_pack("{s:{s:i}}", "spec", "minMember", (json_int_t)min);
    long status = 0;
    int rc = api_call(g, "PATCH", path, body, NULL, &status, err, errlen);
    json_decref(body);
    free(path);
    if (rc == 0) {
        lock(g);
        g->st.groups_resized++;
        unlock(g);
        LOG_I("PodGroup %s/%s: minMember %d", ns, name, (int)min);
    }
    return rc == 0 ? 200 : status;
}

static void managed_track(grouper_t *g, const char *ns, const char *name, const ref_t *owner, const wl_row_t *row,
                          int32_t min)
{
    managed_t *m = util_xcalloc(1, sizeof(*m));
    m->ns = util_strdup(ns);
    m->name = util_strdup(name);
    ref_set(&m->owner, owner->api, owner->kind, owner->name, owner->uid);
    m->row = row;
    m->min = min;
    char key[512];
    snprintf(key, sizeof key, "%s/%s", ns, name);
    lock(g);
    managed_t *old = hashmap_put(g->managed, key, m);
    if (old) {
        m->queued = old->queued;
        managed_free(old);
    }
    unlock(g);
}

/* Whether ns/name is ours; *min (may be NULL) its minMember as we know it. */
static int managed_min(grouper_t *g, const char *ns, const char *name, int32_t *min)
{
    char key[512];
    snprintf(key, sizeof key, "%s/%s", ns, name);
    lock(g);
    managed_t *m = hashmap_get(g->managed, key);
    if (m && min)
        *min = m->min;
    unlock(g);
    return m != NULL;
}

static int managed_has(grouper_t *g, const char *ns, const char *name)
{
    return managed_min(g, ns, name, NULL);
}

static void managed_untrack(grouper_t *g, const char *key)
{
    lock(g);
    managed_t *m = hashmap_remove(g->managed, key);
    unlock(g);
    if (m)
        managed_free(m);
}

/* An existing PodGroup at the name (409): ours is verified and resized; a
 * user's gives the event. 0 when the pod may be labelled to it. */
static int podgroup_adopt(grouper_t *g, const char *ns, const char *pg, const decision_t *d, outcome_t *o)
{
    char *path = podgroup_path(ns, pg), err[512] = "";
    json_t *cur = NULL;
    long status = 0;
    int rc = api_call(g, "GET", path, NULL, &cur, &status, err, sizeof err);
    free(path);
    int ok = -1;
    if (rc != 0)
        outcome_event(o, "PodGroup %s/%s exists but cannot be read: %s; " ALONE, ns, pg, err);
    else if (!podgroup_ours(cur, d->gang.uid)) {
        sbuf_t s = { 0 };
        sbuf_printf(&s, "PodGroup %s/%s exists and was not created by ai-scheduler for %s %s: the pod is not grouped",
                    ns, pg, d->gang.kind, d->gang.name);
        free(o->event);
        o->event = s.data;
    } else {
        ok = 0;
        int32_t min = podgroup_min(cur);
        if (min != d->v.min_member) {
            if (podgroup_resize(g, ns, pg, d->v.min_member, err, sizeof err) / 100 == 2)
                min = d->v.min_member;
            else
                LOG_W("PodGroup %s/%s: minMember not updated: %s", ns, pg, err);
        }
        managed_track(g, ns, pg, &d->gang, d->row, min);
    }
    json_decref(cur);
    return ok;
}

/* Makes the pod's PodGroup exist (once per group): 0, or -1 with the event
 * in o (the pod goes on its own). */
static int podgroup_ensure(grouper_t *g, const char *ns, const decision_t *d, outcome_t *o)
{
    int32_t have = 0;
    if (managed_min(g, ns, o->pg, &have)) {
        /* A new pod of a workload read anew (its decision expired): a
         * resize shows here before the periodic refresh. */
        char err[512];
        if (have != d->v.min_member && !fenced(g) &&
            podgroup_resize(g, ns, o->pg, d->v.min_member, err, sizeof err) / 100 == 2)
            managed_track(g, ns, o->pg, &d->gang, d->row, d->v.min_member);
        return 0;
    }
    char *path = podgroup_path(ns, NULL), err[512] = "";
    json_t *body = podgroup_body(ns, o->pg, d, o->pg_queue);
    long status = 0;
    int rc = api_call(g, "POST", path, body, NULL, &status, err, sizeof err);
    json_decref(body);
    free(path);
    if (rc == 0) {
        lock(g);
        g->st.groups_created++;
        unlock(g);
        LOG_I("PodGroup %s/%s created for %s %s (minMember %d)", ns, o->pg, d->gang.kind, d->gang.name,
              (int)d->v.min_member);
        managed_track(g, ns, o->pg, &d->gang, d->row, d->v.min_member);
        return 0;
    }
    if (status == 409)
        return podgroup_adopt(g, ns, o->pg, d, o);
    if (status == 404)
        outcome_event(o, "the PodGroup API (%s) is not served, PodGroup %s/%s not created; " ALONE, PODGROUP_VERSION,
                      ns, o->pg);
    else if (status == 403)
        outcome_event(o, "no RBAC to create podgroups.scheduling.x-k8s.io (PodGroup %s/%s)%s; " ALONE, ns, o->pg, "");
    else
        outcome_event(o, "creating PodGroup %s/%s failed: %s; " ALONE, ns, o->pg, err);
    return -1;
}

/* ---- a pod's work ---------------------------------------------------------- */

/* merge-PATCHes the pod's label and copies; the status, 0 on failure
 * (err says why). */
static long pod_patch(grouper_t *g, const pod_t *pod, const outcome_t *o, char *err, size_t errlen)
{
    json_t *labels = json_object(), *meta = json_pack("{s:s}", "uid", pod->uid);
    if (o->pg)
        json_object_set_new(labels, GANG_LABEL, json_string(o->pg));
    if (o->queue)
        json_object_set_new(labels, FS_QUEUE_LABEL, json_string(o->queue));
    if (json_object_size(labels))
        json_object_set(meta, "labels", labels);
    if (o->pool)
        json_object_set_new(meta, "annotations", json_pack("{s:s}", POOL_ANNOTATION, o->pool));
    json_decref(labels);
    json_t *body = json_pack("{s:o}", "metadata", meta);
    char *path = kube_pod_path(pod->ns, pod->name, NULL);
    long status = 0;
    int rc = api_call(g, "PATCH", path, body, NULL, &status, err, errlen);
    free(path);
    json_decref(body);
    return rc == 0 ? 200 : status;
}

/* Ends the pod's record: state (DONE) with the writes, or dropped (-1).
 * Returns 1 when the pod must be let in now: patched, and its update
 * carrying what was written came while the PATCH was on its way (that
 * update found the record pending and kept the pod out; no other comes). */
static int prec_end(grouper_t *g, const char *uid, int state, const outcome_t *o)
{
    int let_in = 0;
    lock(g);
    prec_t *r = hashmap_get(g->pods, uid);
    if (r && state < 0) {
        prec_free(hashmap_remove(g->pods, uid));
    } else if (r) {
        r->state = state;
        r->wrote_gang = o && o->pg;
        r->wrote_queue = o && o->queue;
        r->wrote_pool = o && o->pool;
        if (state == REC_PATCHED && r->pod && carries_writes(r, r->pod)) {
            prec_done(r);
            let_in = 1;
        } else {
            if (r->pod)
                pod_unref(r->pod);
            r->pod = NULL;
        }
    }
    if (o && o->pg && state == REC_PATCHED)
        g->st.pods_grouped++;
    else if (state == REC_DONE || state == REC_PATCHED)
        g->st.pods_single++;
    if (o && o->event)
        g->st.errors++;
    unlock(g);
    return let_in;
}

/* Writes the outcome onto the pod; W_FENCED when it must wait. */
static int pod_write(grouper_t *g, const pod_t *pod, outcome_t *o)
{
    if (fenced(g))
        return W_FENCED;
    char err[512] = "";
    long status = pod_patch(g, pod, o, err, sizeof err);
    if (status / 100 == 2) {
        int let_in = prec_end(g, pod->uid, REC_PATCHED, o);
        if (o->event)
            warn(g, pod, o->event);
        if (let_in)
            release(g, pod->uid);
        return W_DONE;
    }
    if (status == 404 || status == 409) { /* gone, or replaced */
        prec_end(g, pod->uid, -1, NULL);
        return W_DONE;
    }
    outcome_event(o, "labelling the pod failed: %s; " ALONE "%s%s", err, "", "");
    free(o->pg);
    o->pg = NULL;
    o->no_writes = 1;
    return -1;
}

/* The pods still pending on controller cuid that its decision, now
 * cached, lets in as they are: decided at once and released together, not
 * one work item after another (after a restart thousands of a
 * ReplicaSet's pods wait behind its first). */
static void release_siblings(grouper_t *g, const char *cuid)
{
    char **uids = NULL;
    size_t n = 0, cap = 0;
    lock(g);
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(g->pods, &it, &k, &v);) {
        prec_t *r = v;
        if (r->state != REC_PENDING || !r->pod || !r->pod->controller_uid ||
            strcmp(r->pod->controller_uid, cuid) != 0 || !decided_quietly_locked(g, r->pod))
            continue;
        prec_done(r);
        g->st.pods_single++;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            uids = util_xrealloc(uids, cap * sizeof(*uids));
        }
        uids[n++] = util_strdup(k);
    }
    unlock(g);
    for (size_t i = 0; i < n; i++) {
        release(g, uids[i]);
        free(uids[i]);
    }
    free(uids);
}

static int work_pod(grouper_t *g, const char *uid)
{
    lock(g);
    prec_t *r = hashmap_get(g->pods, uid);
    pod_t *pod = r && r->state == REC_PENDING && r->pod ? pod_ref(r->pod) : NULL;
    unlock(g);
    if (!pod)
        return W_DONE;
    if (fenced(g)) {
        pod_unref(pod);
        return W_FENCED;
    }
    const decision_t *d = decide(g, pod);
    outcome_t o;
    outcome_for(d, pod, &o);
    int rc = W_DONE;
    if (o.pg) {
        if (!managed_has(g, pod->ns, o.pg) && fenced(g)) {
            rc = W_FENCED;
            goto out;
        }
        if (podgroup_ensure(g, pod->ns, d, &o) != 0) { /* on its own: the top owner's queue */
            free(o.pg);
            free(o.queue);
            o.pg = NULL;
            o.queue = d->queue && !pod_own_queue(pod) ? util_strdup(d->queue) : NULL;
        }
    }
    if (!o.no_writes && (o.pg || o.queue || o.pool)) {
        rc = pod_write(g, pod, &o);
        if (rc != -1)
            goto out;
        rc = W_DONE;
    }
    prec_end(g, pod->uid, REC_DONE, &o);
    if (o.event)
        warn(g, pod, o.event);
    release(g, pod->uid);
    if (!o.event && !o.pg && !o.queue && !o.pool)
        release_siblings(g, pod->controller_uid);
out:
    outcome_clear(&o);
    pod_unref(pod);
    return rc;
}

/* ---- refresh of managed PodGroups ------------------------------------------ */

static int work_refresh(grouper_t *g, const char *key)
{
    lock(g);
    managed_t *m = hashmap_get(g->managed, key), c = { 0 };
    if (m) {
        c.ns = util_strdup(m->ns);
        c.name = util_strdup(m->name);
        ref_set(&c.owner, m->owner.api, m->owner.kind, m->owner.name, m->owner.uid);
        c.row = m->row;
        c.min = m->min;
    }
    unlock(g);
    if (!m)
        return W_DONE;
    int rc = W_DONE;
    char *path = NULL, err[512] = "";
    json_t *obj = NULL;
    long status = 0;
    if (fenced(g)) {
        rc = W_FENCED;
        goto out;
    }
    path = wl_object_path(c.row, c.owner.api, c.ns, c.owner.name);
    if (!path)
        goto out;
    int r = api_call(g, "GET", path, NULL, &obj, &status, err, sizeof err);
    lock(g);
    g->st.owner_reads++;
    unlock(g);
    const char *uid = r == 0 ? jstr(json_object_get(obj, "metadata"), "uid") : NULL;
    if ((r != 0 && status == 404) || (r == 0 && (!uid || strcmp(uid, c.owner.uid)))) {
        LOG_I("PodGroup %s: its owner %s %s is gone; no longer refreshed", key, c.owner.kind, c.owner.name);
        managed_untrack(g, key);
        goto out;
    }
    if (r != 0) {
        LOG_W("PodGroup %s: reading its owner %s %s failed: %s", key, c.owner.kind, c.owner.name, err);
        goto out;
    }
    wl_verdict_t v;
    memset(&v, 0, sizeof(v));
    if (wl_row_eval(c.row, obj, &v) == 0 && v.gang == 1 && v.min_member != c.min) {
        if (fenced(g)) {
            rc = W_FENCED;
        } else {
            long st = podgroup_resize(g, c.ns, c.name, v.min_member, err, sizeof err);
            if (st / 100 == 2) {
                lock(g);
                managed_t *cur = hashmap_get(g->managed, key);
                if (cur)
                    cur->min = v.min_member;
                unlock(g);
            } else if (st == 404) {
                managed_untrack(g, key);
            } else {
                LOG_W("PodGroup %s: minMember not updated: %s", key, err);
            }
        }
    }
    wl_verdict_clear(&v);
out:
    json_decref(obj);
    free(path);
    free(c.ns);
    free(c.name);
    ref_clear(&c.owner);
    return rc;
}

/* ---- the worker ------------------------------------------------------------ */

static int do_work(grouper_t *g, const work_t *w)
{
    return w->kind == WORK_POD ? work_pod(g, w->key) : work_refresh(g, w->key);
}

/* The next item, or NULL when stopping. mu held. */
static work_t *next_work_locked(grouper_t *g)
{
    for (;;) {
        if (g->stopping)
            return NULL;
        int64_t now = util_now_ms();
        if (g->qhead && now >= g->fenced_until_ms)
            break;
        if (g->qhead) {
            struct timespec ts;
            util_deadline(CLOCK_MONOTONIC, g->fenced_until_ms - now, &ts);
            pthread_cond_timedwait(&g->cv, &g->mu, &ts);
        } else {
            pthread_cond_wait(&g->cv, &g->mu);
        }
    }
    work_t *w = g->qhead;
    g->qhead = w->next;
    if (!g->qhead)
        g->qtail = NULL;
    w->next = NULL;
    g->nqueued--;
    g->busy = 1;
    mark_queued_locked(g, w, 0);
    return w;
}

static void *worker_main(void *arg)
{
    grouper_t *g = arg;
    util_thread_name("grouper");
    lock(g);
    work_t *w;
    while ((w = next_work_locked(g)) != NULL) {
        unlock(g);
        int rc = do_work(g, w);
        lock(g);
        g->busy = 0;
        if (rc == W_FENCED) { /* kept, first in line, tried again in a second */
            g->fenced_until_ms = util_now_ms() + FENCE_WAIT_MS;
            w->next = g->qhead;
            g->qhead = w;
            if (!g->qtail)
                g->qtail = w;
            g->nqueued++;
            mark_queued_locked(g, w, 1);
        } else {
            work_free(w);
        }
    }
    unlock(g);
    return NULL;
}

int grouper_start(grouper_t *g)
{
    if (!g || g->started)
        return -1;
    g->stopping = 0;
    if (pthread_create(&g->thread, NULL, worker_main, g) != 0)
        return -1;
    g->started = 1;
    return 0;
}

void grouper_stop(grouper_t *g)
{
    if (!g || !g->started)
        return;
    lock(g);
    g->stopping = 1;
    pthread_cond_broadcast(&g->cv);
    unlock(g);
    pthread_join(g->thread, NULL);
    g->started = 0;
}

void grouper_free(grouper_t *g)
{
    if (!g)
        return;
    grouper_stop(g);
    while (g->qhead) {
        work_t *w = g->qhead;
        g->qhead = w->next;
        work_free(w);
    }
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(g->pods, &it, &k, &v);)
        prec_free(v);
    hashmap_free(g->pods);
    for (size_t it = 0; hashmap_next(g->managed, &it, &k, &v);)
        managed_free(v);
    hashmap_free(g->managed);
    lru_destroy(&g->decisions);
    lru_destroy(&g->owners);
    wl_table_free(g->table);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* ---- the PodGroup informer and housekeeping -------------------------------- */

void grouper_podgroup(grouper_t *g, const char *ns, const char *name, json_t *obj)
{
    if (!g || !ns || !name)
        return;
    char key[512];
    snprintf(key, sizeof key, "%s/%s", ns, name);
    const char *m = obj ? meta_map_str(obj, "labels", GROUPER_MANAGED_LABEL) : NULL;
    json_t *c = m && !strcmp(m, GROUPER_MANAGED_VALUE) ? obj_controller(obj) : NULL;
    const wl_row_t *row = c ? wl_table_find(g->table, jstr(c, "apiVersion"), jstr(c, "kind")) : NULL;
    if (!row || !wl_row_is_gang(row)) {
        managed_untrack(g, key);
        return;
    }
    ref_t owner;
    ref_set(&owner, jstr(c, "apiVersion"), jstr(c, "kind"), jstr(c, "name"), jstr(c, "uid"));
    managed_track(g, ns, name, &owner, row, podgroup_min(obj));
    ref_clear(&owner);
}

void grouper_housekeep(grouper_t *g)
{
    if (!g)
        return;
    int64_t now = util_now_ms();
    lock(g);
    if (now - g->last_refresh_ms >= (int64_t)g->o.refresh_s * 1000) {
        g->last_refresh_ms = now;
        const char *k;
        void *v;
        for (size_t it = 0; hashmap_next(g->managed, &it, &k, &v);) {
            managed_t *m = v;
            if (m->queued)
                continue;
            m->queued = 1;
            enqueue_locked(g, WORK_REFRESH, k, 0);
        }
    }
    unlock(g);
}

void grouper_get_stats(grouper_t *g, grouper_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    if (!g)
        return;
    lock(g);
    *st = g->st;
    st->owners_cached = (int)hashmap_len(g->owners.map);
    int waiting = 0;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(g->pods, &it, &k, &v);)
        waiting += ((prec_t *)v)->state != REC_DONE;
    st->pods_waiting = waiting;
    st->work_queued = g->nqueued + g->busy;
    unlock(g);
}
