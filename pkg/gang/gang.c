/* gang.c -- the gang store: PodGroups, their member pods, and the
 * scheduler's memory of each gang (see gang.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gang/gang.h"
#include "util/hashmap.h"
#include "util/util.h"
#include "util/lockorder.h"

typedef struct gang {
    char *key, *ns, *name;
    podgroup_t *pg;     /* NULL: not seen, or deleted */
    int deleted;        /* seen, then deleted: members fall back to single pods */
    hashmap_t *members; /* uid -> pod_t* (one ref) */
    /* The bound, live members, oldest start first, borrowed from members:
     * asked per candidate victim, so kept until members changes (its pods
     * are never changed in place, only replaced). */
    pod_t **order;
    int norder, order_ok;
    /* scheduler memory */
    int64_t start_ms;  /* first considered (wall), 0 = never */
    int64_t placed_ms; /* minimum last placed (wall), 0 = never */
    int64_t resize_ms; /* last size change by the scheduler began (wall), 0 = none seen */
    int ran;           /* members of that placement were seen bound and alive */
    int waiting;       /* minimum did not fit; blocks backfill behind it */
    int wait_pool;
    int32_t wait_prio;
    int64_t wait_created;
    gang_claim_t wait_claim; /* owner -1: none */
    char *wait_msg;
    int timed_out;        /* start_ms + timeout passed without placement */
    int64_t below_since;  /* placed gang below its minimum since (wall), 0 = not */
    int stale;            /* reported stale */
    int evicted;          /* stale members handed out for eviction */
    char *last_status;    /* last status body written */
    int64_t written_ms;   /* when (wall); rewritten until the API shows it */
    int dirty;            /* status may have changed */
    char *warned_invalid; /* resourceVersion-free: the invalid message warned */
    /* member counts as of the last tick that found the gang dirty */
    int c_n, c_sched, c_run, c_succ, c_fail, c_alive;
} gang_t;

struct gang_store {
    pthread_mutex_t mu;
    hashmap_t *gangs;  /* "ns/name" -> gang_t */
    hashmap_t *pod_of; /* pod uid -> "ns/name" (owned string) */
    int nwaiting;      /* atomic mirror of gangs waiting, for the fast path */
    hashmap_t *turns;  /* "ns/name" of gangs in a turn -> (void *)1 */
    pthread_cond_t turn_cv;
};

/* ------------------------------------------------------------ PodGroup */

void podgroup_free(podgroup_t *pg)
{
    if (!pg)
        return;
    free(pg->ns);
    free(pg->name);
    free(pg->uid);
    free(pg->queue);
    free(pg->invalid);
    free(pg->topo_level);
    free(pg->priority_class);
    free(pg->observed_status);
    free(pg);
}

/* The status body this scheduler writes, {"status":{...}} compact with
 * sorted keys: the fields it owns, from status (NULL: none). */
static char *status_body(json_t *status)
{
    static const char *const owned[] = { "phase", "scheduled", "running", "succeeded", "failed", "scheduleStartTime" };
    json_t *st = json_object();
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
        json_t *v = json_object_get(status, owned[i]);
        if (v)
            json_object_set(st, owned[i], v);
    }
    json_t *patch = json_pack("{s:o}", "status", st);
    char *body = json_dumps(patch, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(patch);
    return body;
}

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* An int32 field: absent/null -> 0 (ok); not an integer or out of range -> -1. */
static int int32_field(json_t *o, const char *k, int32_t *out)
{
    json_t *v = json_object_get(o, k);
    *out = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return -1;
    json_int_t i = json_integer_value(v);
    if (i < INT32_MIN || i > INT32_MAX)
        return -1;
    *out = (int32_t)i;
    return 0;
}

podgroup_t *podgroup_from_json(json_t *obj, char *err, size_t errlen)
{
    json_t *meta = json_object_get(obj, "metadata");
    const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name"), *uid = jstr(meta, "uid");
    if (!json_is_object(obj) || !ns || !name || !uid) {
        util_errf(err, errlen, "not a namespaced object with name and uid");
        return NULL;
    }
    podgroup_t *pg = util_xcalloc(1, sizeof(*pg));
    pg->ns = util_strdup(ns);
    pg->name = util_strdup(name);
    pg->uid = util_strdup(uid);
    res_zero(&pg->min_resources);
    const char *ts = jstr(meta, "creationTimestamp");
    pg->created_ms = ts ? util_parse_rfc3339(ts) : 0;
    if (pg->created_ms < 0)
        pg->created_ms = 0;
    json_t *labels = json_object_get(meta, "labels");
    const char *q = jstr(labels, "resource.aibee.cn/queue");
    if (!q || !q[0])
        q = jstr(labels, "kai.scheduler/queue");
    if (q && q[0] && strlen(q) <= 253)
        pg->queue = util_strdup(q);
    /* Topology: a label or an annotation; required wins over preferred. */
    json_t *ann = json_object_get(meta, "annotations");
    const char *tr = jstr(labels, "resource.aibee.cn/topology-required");
    if (!tr || !tr[0])
        tr = jstr(ann, "resource.aibee.cn/topology-required");
    const char *tp = jstr(labels, "resource.aibee.cn/topology-preferred");
    if (!tp || !tp[0])
        tp = jstr(ann, "resource.aibee.cn/topology-preferred");
    const char *lvl = tr && tr[0] ? tr : tp;
    if (lvl && lvl[0] && strlen(lvl) <= 317) {
        pg->topo_level = util_strdup(lvl);
        pg->topo_required = tr && tr[0];
    }
    pg->freezing_window_ms = DURATION_UNSET;
    const char *fw = jstr(ann, GANG_FREEZING_WINDOW_ANNOTATION);
    if (fw && util_parse_duration_ms(fw, &pg->freezing_window_ms) != 0)
        pg->freezing_window_ms = DURATION_BAD;
    const char *pc = jstr(ann, GANG_PRIORITY_CLASS_ANNOTATION);
    if (pc && pc[0] && strlen(pc) <= 253)
        pg->priority_class = util_strdup(pc);
    json_t *status = json_object_get(obj, "status");
    pg->observed_status = status_body(json_is_object(status) ? status : NULL);
    json_t *spec = json_object_get(obj, "spec");
    char why[256] = "";
    if (spec && !json_is_object(spec))
        snprintf(why, sizeof(why), "spec is not an object");
    else if (int32_field(spec, "minMember", &pg->min_member) != 0)
        snprintf(why, sizeof(why), "spec.minMember is not a 32-bit integer");
    else if (pg->min_member <= 0)
        snprintf(why, sizeof(why), "spec.minMember is %d; it must be at least 1", (int)pg->min_member);
    else if (int32_field(spec, "scheduleTimeoutSeconds", &pg->timeout_s) != 0 || pg->timeout_s < 0)
        snprintf(why, sizeof(why), "spec.scheduleTimeoutSeconds is not a non-negative 32-bit integer");
    else {
        json_t *mr = json_object_get(spec, "minResources");
        char e2[200];
        if (mr && !json_is_null(mr) && res_from_json(&pg->min_resources, mr, e2, sizeof(e2)) != 0)
            snprintf(why, sizeof(why), "spec.minResources: %s", e2);
    }
    if (why[0])
        pg->invalid = util_strdup(why);
    return pg;
}

const char *gang_of(const pod_t *p)
{
    const char *g = labels_get(&p->labels, GANG_LABEL);
    return g && g[0] ? g : NULL;
}

/* -------------------------------------------------------------- store */

gang_store_t *gang_store_new(void)
{
    gang_store_t *gs = util_xcalloc(1, sizeof(*gs));
    pthread_mutex_init(&gs->mu, NULL);
    gs->gangs = hashmap_new(64);
    gs->pod_of = hashmap_new(256);
    gs->turns = hashmap_new(8);
    pthread_cond_init(&gs->turn_cv, NULL);
    return gs;
}

static void members_clear(hashmap_t *m)
{
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(m, &it, &k, &v);)
        pod_unref(v);
    hashmap_free(m);
}

static void gang_free(gang_t *g)
{
    free(g->key);
    free(g->ns);
    free(g->name);
    podgroup_free(g->pg);
    members_clear(g->members);
    free(g->order);
    free(g->wait_msg);
    free(g->last_status);
    free(g->warned_invalid);
    free(g);
}

void gang_store_free(gang_store_t *gs)
{
    if (!gs)
        return;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(gs->gangs, &it, &k, &v);)
        gang_free(v);
    hashmap_free(gs->gangs);
    for (size_t it = 0; hashmap_next(gs->pod_of, &it, &k, &v);)
        free(v);
    hashmap_free(gs->pod_of);
    hashmap_free(gs->turns);
    pthread_cond_destroy(&gs->turn_cv);
    pthread_mutex_destroy(&gs->mu);
    free(gs);
}

static gang_t *get_or_new(gang_store_t *gs, const char *ns, const char *name)
{
    sbuf_t key = { 0 };
    sbuf_printf(&key, "%s/%s", ns, name);
    gang_t *g = hashmap_get(gs->gangs, key.data);
    if (!g) {
        g = util_xcalloc(1, sizeof(*g));
        g->key = util_strdup(key.data);
        g->ns = util_strdup(ns);
        g->name = util_strdup(name);
        g->members = hashmap_new(8);
        g->dirty = 1;
        hashmap_put(gs->gangs, key.data, g);
    }
    sbuf_free(&key);
    return g;
}

static void set_waiting(gang_store_t *gs, gang_t *g, int on)
{
    if (g->waiting == on)
        return;
    g->waiting = on;
    __atomic_add_fetch(&gs->nwaiting, on ? 1 : -1, __ATOMIC_RELAXED);
}

/* Drops a gang with no PodGroup and no member. */
static void maybe_drop(gang_store_t *gs, gang_t *g)
{
    if (g->pg || hashmap_len(g->members) > 0)
        return;
    set_waiting(gs, g, 0);
    hashmap_remove(gs->gangs, g->key);
    gang_free(g);
}

static int same_spec(const podgroup_t *a, const podgroup_t *b)
{
    return strcmp(a->uid, b->uid) == 0 && a->min_member == b->min_member && a->timeout_s == b->timeout_s &&
           res_equal(&a->min_resources, &b->min_resources) && !a->invalid == !b->invalid &&
           (!a->invalid || strcmp(a->invalid, b->invalid) == 0) &&
           strcmp(a->queue ? a->queue : "", b->queue ? b->queue : "") == 0 &&
           strcmp(a->topo_level ? a->topo_level : "", b->topo_level ? b->topo_level : "") == 0 &&
           a->topo_required == b->topo_required && a->freezing_window_ms == b->freezing_window_ms &&
           strcmp(a->priority_class ? a->priority_class : "", b->priority_class ? b->priority_class : "") == 0;
}

/* A copy of one string field of PodGroup ns/name, or NULL. */
static char *pg_field(gang_store_t *gs, const char *ns, const char *name, int priority_class)
{
    sbuf_t key = { 0 };
    sbuf_printf(&key, "%s/%s", ns, name);
    lo_mutex_lock(&gs->mu, LO_GANG);
    gang_t *g = hashmap_get(gs->gangs, key.data);
    const char *v = !g || !g->pg ? NULL : priority_class ? g->pg->priority_class : g->pg->queue;
    char *q = v ? util_strdup(v) : NULL;
    lo_mutex_unlock(&gs->mu, LO_GANG);
    sbuf_free(&key);
    return q;
}

char *gang_queue_of(gang_store_t *gs, const char *ns, const char *name)
{
    return pg_field(gs, ns, name, 0);
}

char *gang_priority_class_of(gang_store_t *gs, const char *ns, const char *name)
{
    return pg_field(gs, ns, name, 1);
}

int gang_group_upsert(gang_store_t *gs, podgroup_t *pg)
{
    lo_mutex_lock(&gs->mu, LO_GANG);
    gang_t *g = get_or_new(gs, pg->ns, pg->name);
    int changed = !g->pg || !same_spec(g->pg, pg);
    if (g->pg && strcmp(g->pg->uid, pg->uid) != 0) {
        /* A new object under the old name: start over. */
        g->start_ms = g->placed_ms = 0;
        g->timed_out = 0;
        free(g->last_status);
        g->last_status = NULL;
    }
    podgroup_free(g->pg);
    g->pg = pg;
    g->deleted = 0;
    g->dirty = 1;
    lo_mutex_unlock(&gs->mu, LO_GANG);
    return changed;
}

void gang_group_delete(gang_store_t *gs, const char *ns, const char *name)
{
    lo_mutex_lock(&gs->mu, LO_GANG);
    sbuf_t key = { 0 };
    sbuf_printf(&key, "%s/%s", ns, name);
    gang_t *g = hashmap_get(gs->gangs, key.data);
    sbuf_free(&key);
    if (g) {
        podgroup_free(g->pg);
        g->pg = NULL;
        g->deleted = 1;
        set_waiting(gs, g, 0);
        free(g->last_status);
        g->last_status = NULL;
        maybe_drop(gs, g);
    }
    lo_mutex_unlock(&gs->mu, LO_GANG);
}

static void remove_member_locked(gang_store_t *gs, const char *uid)
{
    char *key = hashmap_remove(gs->pod_of, uid);
    if (!key)
        return;
    gang_t *g = hashmap_get(gs->gangs, key);
    free(key);
    if (!g)
        return;
    pod_unref(hashmap_remove(g->members, uid));
    g->order_ok = 0;
    g->dirty = 1;
    maybe_drop(gs, g);
}

void gang_pod_upsert(gang_store_t *gs, pod_t *p)
{
    const char *group = gang_of(p);
    lo_mutex_lock(&gs->mu, LO_GANG);
    const char *was = hashmap_get(gs->pod_of, p->uid);
    if (!group && !was) {
        lo_mutex_unlock(&gs->mu, LO_GANG);
        return;
    }
    if (was) {
        /* Still in the same group: replace the object in place. */
        sbuf_t key = { 0 };
        if (group)
            sbuf_printf(&key, "%s/%s", p->ns, group);
        int same = group && strcmp(key.data, was) == 0;
        sbuf_free(&key);
        if (!same)
            remove_member_locked(gs, p->uid);
    }
    if (group) {
        gang_t *g = get_or_new(gs, p->ns, group);
        pod_t *old = hashmap_put(g->members, p->uid, pod_ref(p));
        g->order_ok = 0;
        if (!old)
            hashmap_put(gs->pod_of, p->uid, util_strdup(g->key));
        else if (old->phase != p->phase || strcmp(old->node_name, p->node_name) != 0)
            g->dirty = 1;
        if (!old)
            g->dirty = 1;
        pod_unref(old);
    }
    lo_mutex_unlock(&gs->mu, LO_GANG);
}

void gang_pod_delete(gang_store_t *gs, const pod_t *p)
{
    lo_mutex_lock(&gs->mu, LO_GANG);
    remove_member_locked(gs, p->uid);
    lo_mutex_unlock(&gs->mu, LO_GANG);
}

void gang_touch(gang_store_t *gs, const char *ns, const char *name)
{
    lo_mutex_lock(&gs->mu, LO_GANG);
    sbuf_t key = { 0 };
    sbuf_printf(&key, "%s/%s", ns, name);
    gang_t *g = hashmap_get(gs->gangs, key.data);
    sbuf_free(&key);
    if (g)
        g->dirty = 1;
    lo_mutex_unlock(&gs->mu, LO_GANG);
}

/* ------------------------------------------------------ scheduler side */

int gang_snapshot(gang_store_t *gs, const char *ns, const char *name, gang_snap_t *out)
{
    memset(out, 0, sizeof(*out));
    lo_mutex_lock(&gs->mu, LO_GANG);
    sbuf_t key = { 0 };
    sbuf_printf(&key, "%s/%s", ns, name);
    gang_t *g = hashmap_get(gs->gangs, key.data);
    sbuf_free(&key);
    if (!g) {
        lo_mutex_unlock(&gs->mu, LO_GANG);
        return -1;
    }
    out->key = util_strdup(g->key);
    out->ns = util_strdup(g->ns);
    out->name = util_strdup(g->name);
    if (g->pg) {
        out->uid = util_strdup(g->pg->uid);
        out->state = g->pg->invalid ? GANG_INVALID : GANG_OK;
        out->invalid = g->pg->invalid ? util_strdup(g->pg->invalid) : NULL;
        out->min_member = g->pg->min_member;
        out->timeout_s = g->pg->timeout_s;
        out->created_ms = g->pg->created_ms;
        out->min_resources = g->pg->min_resources;
        out->topo_level = g->pg->topo_level ? util_strdup(g->pg->topo_level) : NULL;
        out->topo_required = g->pg->topo_required;
        out->priority_class = g->pg->priority_class ? util_strdup(g->pg->priority_class) : NULL;
    } else {
        out->state = g->deleted ? GANG_DELETED : GANG_MISSING;
    }
    out->members = util_xcalloc(hashmap_len(g->members) + 1, sizeof(*out->members));
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(g->members, &it, &k, &v);)
        out->members[out->nmembers++] = pod_ref(v);
    out->start_ms = g->start_ms;
    lo_mutex_unlock(&gs->mu, LO_GANG);
    return 0;
}

void gang_snap_clear(gang_snap_t *s)
{
    free(s->key);
    free(s->ns);
    free(s->name);
    free(s->uid);
    free(s->invalid);
    free(s->topo_level);
    free(s->priority_class);
    for (int i = 0; i < s->nmembers; i++)
        pod_unref(s->members[i]);
    free(s->members);
    memset(s, 0, sizeof(*s));
}

void gang_turn_begin(gang_store_t *gs, const char *key)
{
    lo_mutex_lock(&gs->mu, LO_GANG);
    while (hashmap_get(gs->turns, key))
        pthread_cond_wait(&gs->turn_cv, &gs->mu);
    hashmap_put(gs->turns, key, (void *)1);
    lo_mutex_unlock(&gs->mu, LO_GANG);
}

void gang_turn_end(gang_store_t *gs, const char *key)
{
    lo_mutex_lock(&gs->mu, LO_GANG);
    hashmap_remove(gs->turns, key);
    pthread_cond_broadcast(&gs->turn_cv);
    lo_mutex_unlock(&gs->mu, LO_GANG);
}

int64_t gang_considered(gang_store_t *gs, const char *key, int64_t now)
{
    lo_mutex_lock(&gs->mu, LO_GANG);
    gang_t *g = hashmap_get(gs->gangs, key);
    int64_t t = 0;
    if (g) {
        if (!g->start_ms) {
            g->start_ms = now;
            g->dirty = 1;
        }
        t = g->start_ms;
    }
    lo_mutex_unlock(&gs->mu, LO_GANG);
    return t;
}

double gang_placed(gang_store_t *gs, const char *key, int64_t now, int *was_waiting)
{
    double wait = -1;
    lo_mutex_lock(&gs->mu, LO_GANG);
    gang_t *g = hashmap_get(gs->gangs, key);
    if (was_waiting)
        *was_waiting = g && g->waiting;
    if (g) {
        if (g->start_ms)
            wait = (double)(now - g->start_ms) / 1000.0;
        g->placed_ms = now;
        g->ran = 0;
        g->timed_out = 0;
        g->below_since = 0;
        g->stale = 0;
        g->evicted = 0;
        g->dirty = 1;
        set_waiting(gs, g, 0);
        free(g->wait_msg);
        g->wait_msg = NULL;
    }
    lo_mutex_unlock(&gs->mu, LO_GANG);
    return wait;
}

void gang_waiting(gang_store_t *gs, const char *key, int pool, int32_t prio, int64_t created_ms, const char *message,
                  int blocks, const gang_claim_t *claim)
{
    lo_mutex_lock(&gs->mu, LO_GANG);
    gang_t *g = hashmap_get(gs->gangs, key);
    if (g) {
        set_waiting(gs, g, blocks);
        g->wait_pool = pool;
        g->wait_prio = prio;
        g->wait_created = created_ms;
        if (claim)
            g->wait_claim = *claim;
        else
            g->wait_claim = (gang_claim_t){ .owner = -1 };
        free(g->wait_msg);
        g->wait_msg = message ? util_strdup(message) : NULL;
        g->dirty = 1;
    }
    lo_mutex_unlock(&gs->mu, LO_GANG);
}

int gang_nwaiting(gang_store_t *gs)
{
    return __atomic_load_n(&gs->nwaiting, __ATOMIC_RELAXED);
}

/* a ranks ahead of b in queue order: higher priority, then older, then
 * first considered (creation times have second precision: of two gangs
 * created in one second, the one this scheduler tried first goes first,
 * as kube-scheduler orders by the time a pod entered its queue), then key.
 * A strict order, so two waiting gangs never hold each other back. */
static int ranks_ahead(int32_t pa, int64_t ca, int64_t sa, const char *ka, int32_t pb, int64_t cb, int64_t sb,
                       const char *kb)
{
    if (pa != pb)
        return pa > pb;
    if (ca != cb)
        return ca < cb;
    if (sa && sb && sa != sb)
        return sa < sb;
    return strcmp(ka, kb) < 0;
}

/* A waiting gang whose claim the caller's queue rule decides on
 * (blocker's yields): ahead, it holds the set back unless it would give
 * way to it; not ahead, only if the set must give way to it. */
typedef struct yield_cand {
    char *key;
    gang_claim_t claim;
    int ahead;
} yield_cand_t;

static void add_cand(yield_cand_t **cands, int *n, const gang_t *g, int ahead)
{
    *cands = util_xrealloc(*cands, sizeof(**cands) * (size_t)(*n + 1));
    (*cands)[(*n)++] = (yield_cand_t){ util_strdup(g->key), g->wait_claim, ahead };
}

static char *blocked_by(const char *key, int queues)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, "waiting behind pod group %s, which goes first in this pool and does not fit yet%s", key,
                queues ? " (its queue is below its fair share: placed first, this would be reclaimed for it)" : "");
    return b.data;
}

static char *blocker(gang_store_t *gs, int pool, const char *self_key, int32_t prio, int64_t created_ms, int surplus,
                     int pool_preempts, int nominee, gang_yield_fn yields, void *ud)
{
    if (gang_nwaiting(gs) == 0)
        return NULL;
    char *why = NULL;
    yield_cand_t *cands = NULL;
    int ncands = 0;
    lo_mutex_lock(&gs->mu, LO_GANG);
    const gang_t *me = self_key ? hashmap_get(gs->gangs, self_key) : NULL;
    int64_t my_start = me ? me->start_ms : 0;
    const char *k;
    void *v;
    for (size_t it = 0; !why && hashmap_next(gs->gangs, &it, &k, &v);) {
        gang_t *g = v;
        if (!g->waiting || g->wait_pool != pool || !g->pg)
            continue;
        if (self_key && strcmp(self_key, g->key) == 0)
            continue;
        /* Past its timeout a gang holds nothing back by its rank; the
         * queue rule (yields) still asks whether the set must give way. */
        if (g->timed_out) {
            if (yields && g->wait_claim.owner >= 0)
                add_cand(&cands, &ncands, g, 0);
            continue;
        }
        /* A pod of no gang ties behind a waiting gang: creation times have
         * second precision, and the gang was waiting before the pod was
         * tried (by key it would pass whenever both came in one second). */
        int ahead = self_key ? ranks_ahead(g->wait_prio, g->wait_created, g->start_ms, g->key, prio, created_ms,
                                           my_start, self_key)
                             : (g->wait_prio != prio ? g->wait_prio > prio : g->wait_created <= created_ms);
        ahead = ahead || surplus;
        if (ahead && pool_preempts && prio < g->wait_prio)
            continue; /* the gang can evict it when it needs the room */
        if (ahead && nominee && prio >= g->wait_prio)
            continue; /* the room it holds is the gang's neither way (gang_blocker_nominee) */
        if (yields && g->wait_claim.owner >= 0) {
            add_cand(&cands, &ncands, g, ahead);
        } else if (ahead) {
            why = blocked_by(g->key, 0);
        }
    }
    lo_mutex_unlock(&gs->mu, LO_GANG);
    /* The queue rule is the caller's, asked with no lock of ours held. */
    for (int i = 0; i < ncands; i++) {
        if (!why && yields(ud, &cands[i].claim, cands[i].ahead))
            why = blocked_by(cands[i].key, !cands[i].ahead);
        free(cands[i].key);
    }
    free(cands);
    return why;
}

char *gang_blocker(gang_store_t *gs, int pool, const char *self_key, int32_t prio, int64_t created_ms, int surplus,
                   int pool_preempts)
{
    return blocker(gs, pool, self_key, prio, created_ms, surplus, pool_preempts, 0, NULL, NULL);
}

char *gang_blocker_q(gang_store_t *gs, int pool, const char *self_key, int32_t prio, int64_t created_ms, int surplus,
                     int pool_preempts, gang_yield_fn yields, void *ud)
{
    return blocker(gs, pool, self_key, prio, created_ms, surplus, pool_preempts, 0, yields, ud);
}

char *gang_blocker_nominee(gang_store_t *gs, int pool, int32_t prio, int64_t created_ms, int pool_preempts)
{
    return blocker(gs, pool, NULL, prio, created_ms, 0, pool_preempts, 1, NULL, NULL);
}

static int member_live(const pod_t *p)
{
    return pod_is_bound(p) && !pod_is_terminal(p) && !p->deleting;
}

/* Bound, live members of g, oldest start first (g->order, rebuilt when
 * members changed); the array is g's and valid until members changes. */
static int bound_members(gang_t *g, pod_t ***out)
{
    if (!g->order_ok) {
        free(g->order);
        pod_t **a = util_xcalloc(hashmap_len(g->members) + 1, sizeof(*a));
        int n = 0;
        const char *k;
        void *v;
        for (size_t it = 0; hashmap_next(g->members, &it, &k, &v);) {
            pod_t *p = v;
            if (member_live(p))
                a[n++] = p;
        }
        /* insertion sort by start, then uid: small n, sorted once per change */
        for (int i = 1; i < n; i++) {
            pod_t *x = a[i];
            int j = i - 1;
            while (j >= 0 && (a[j]->started_ms > x->started_ms ||
                              (a[j]->started_ms == x->started_ms && strcmp(a[j]->uid, x->uid) > 0))) {
                a[j + 1] = a[j];
                j--;
            }
            a[j + 1] = x;
        }
        g->order = a;
        g->norder = n;
        g->order_ok = 1;
    }
    *out = g->order;
    return g->norder;
}

static gang_t *gang_of_pod_locked(gang_store_t *gs, const pod_t *p)
{
    const char *key = hashmap_get(gs->pod_of, p->uid);
    return key ? hashmap_get(gs->gangs, key) : NULL;
}

int gang_member_class(gang_store_t *gs, const pod_t *p)
{
    int cls = GANG_MEMBER_NONE;
    lo_mutex_lock(&gs->mu, LO_GANG);
    gang_t *g = gang_of_pod_locked(gs, p);
    if (g && g->pg && !g->pg->invalid) {
        const pod_t *self = hashmap_get(g->members, p->uid);
        pod_t **b;
        int n = bound_members(g, &b);
        for (int i = 0; self && i < n; i++)
            if (b[i] == self)
                cls = i < g->pg->min_member ? GANG_MEMBER_MINIMUM : GANG_MEMBER_SURPLUS;
    }
    lo_mutex_unlock(&gs->mu, LO_GANG);
    return cls;
}

int64_t gang_last_start(gang_store_t *gs, const pod_t *p)
{
    int64_t last = p->started_ms;
    lo_mutex_lock(&gs->mu, LO_GANG);
    gang_t *g = gang_of_pod_locked(gs, p);
    if (g) {
        pod_t **b;
        int n = bound_members(g, &b);
        if (n > 0 && b[n - 1]->started_ms > last)
            last = b[n - 1]->started_ms; /* oldest start first */
    }
    lo_mutex_unlock(&gs->mu, LO_GANG);
    return last;
}

static gang_t *gang_by_name_locked(gang_store_t *gs, const char *ns, const char *name)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name ? name : "");
    return hashmap_get(gs->gangs, key);
}

void gang_resized(gang_store_t *gs, const char *ns, const char *name, int64_t now_wall)
{
    lo_mutex_lock(&gs->mu, LO_GANG);
    gang_t *g = gang_by_name_locked(gs, ns, name);
    if (g && (g->resize_ms == 0 || now_wall - g->resize_ms >= GANG_RESIZE_BURST_MS))
        g->resize_ms = now_wall;
    lo_mutex_unlock(&gs->mu, LO_GANG);
}

int64_t gang_resize_start(gang_store_t *gs, const char *ns, const char *name, int64_t *window_ms)
{
    int64_t start = 0;
    *window_ms = DURATION_UNSET;
    lo_mutex_lock(&gs->mu, LO_GANG);
    gang_t *g = gang_by_name_locked(gs, ns, name);
    if (g && g->pg && !g->pg->invalid) {
        *window_ms = g->pg->freezing_window_ms;
        start = g->resize_ms;
        if (start == 0) {
            /* No change seen by this process (a restart): a gang above its
             * minimum was resized once; its newest member says when. */
            pod_t **b;
            int n = bound_members(g, &b);
            if (n > g->pg->min_member)
                start = b[n - 1]->started_ms;
        }
    }
    lo_mutex_unlock(&gs->mu, LO_GANG);
    return start;
}

int gang_is_surplus(gang_store_t *gs, const pod_t *p)
{
    return gang_member_class(gs, p) == GANG_MEMBER_SURPLUS;
}

int gang_mates(gang_store_t *gs, const pod_t *p, pod_t ***out)
{
    *out = NULL;
    int n = 0;
    lo_mutex_lock(&gs->mu, LO_GANG);
    gang_t *g = gang_of_pod_locked(gs, p);
    if (g && g->pg && !g->pg->invalid) {
        pod_t **b;
        int nb = bound_members(g, &b);
        int is_surplus = 0;
        for (int i = g->pg->min_member; i < nb; i++)
            if (strcmp(b[i]->uid, p->uid) == 0)
                is_surplus = 1;
        if (!is_surplus) {
            *out = util_xcalloc((size_t)nb + 1, sizeof(**out));
            for (int i = 0; i < nb; i++)
                if (strcmp(b[i]->uid, p->uid) != 0)
                    (*out)[n++] = pod_ref(b[i]);
        }
    }
    lo_mutex_unlock(&gs->mu, LO_GANG);
    return n;
}

void gang_count_waiting(gang_store_t *gs, int *per_pool, int npools)
{
    lo_mutex_lock(&gs->mu, LO_GANG);
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(gs->gangs, &it, &k, &v);) {
        gang_t *g = v;
        if (g->waiting && g->wait_pool >= 0 && g->wait_pool < npools)
            per_pool[g->wait_pool]++;
    }
    lo_mutex_unlock(&gs->mu, LO_GANG);
}

/* -------------------------------------------------------- housekeeping */

const char *gang_phase(int nmembers, int min_member, int scheduled, int running, int succeeded, int failed,
                       int timed_out)
{
    if (min_member > 0 && succeeded >= min_member)
        return "Finished";
    if (min_member > 0 && running >= min_member)
        return "Running";
    if (min_member > 0 && scheduled >= min_member)
        return failed > 0 && running + succeeded < min_member ? "Failed" : "Scheduled";
    if (timed_out)
        return "Failed";
    if (scheduled > 0)
        return "Scheduling";
    if (nmembers >= min_member && min_member > 0)
        return "PreScheduling";
    return "Pending";
}

/* type and reason: static strings. */
static void add_event(gang_tick_t *t, const gang_t *g, const char *type, const char *reason, const char *msg)
{
    t->events = util_xrealloc(t->events, (size_t)(t->nevents + 1) * sizeof(*t->events));
    t->events[t->nevents++] = (gang_event_t){ .ns = util_strdup(g->ns),
                                              .name = util_strdup(g->name),
                                              .uid = util_strdup(g->pg ? g->pg->uid : ""),
                                              .msg = util_strdup(msg),
                                              .type = type,
                                              .reason = reason };
}

static void add_wake(gang_tick_t *t, int pool)
{
    t->wake_pools = util_xrealloc(t->wake_pools, (size_t)(t->nwake + 1) * sizeof(*t->wake_pools));
    t->wake_pools[t->nwake++] = pool;
}

/* Store lock held; gang_tick fixes the nwaiting mirror after the loop. */
static void unwait(gang_t *g, gang_tick_t *t)
{
    g->waiting = 0;
    t->unwaited++;
    add_wake(t, g->wait_pool);
}

/* Member counts from the pods as the API has them (scheduled = bound):
 * recounted only when a member changed, so a quiet gang costs nothing. */
static void recount(gang_t *g)
{
    g->c_n = g->c_sched = g->c_run = g->c_succ = g->c_fail = g->c_alive = 0;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(g->members, &it, &k, &v);) {
        pod_t *p = v;
        int pl = pod_is_bound(p);
        g->c_n++;
        g->c_sched += pl;
        g->c_run += p->phase == PHASE_RUNNING;
        g->c_succ += p->phase == PHASE_SUCCEEDED;
        g->c_fail += p->phase == PHASE_FAILED;
        if (pl && !pod_is_terminal(p) && !p->deleting)
            g->c_alive++;
    }
}

/* How long a status write may take to show in the informer before it is
 * sent again. */
#define STATUS_RETRY_MS 10000

static void tick_one(gang_t *g, int64_t now, int default_timeout_s, int stale_grace_s, int evict_stale,
                     int write_status, gang_tick_t *t)
{
    int min = g->pg->min_member;
    if (g->dirty)
        recount(g);
    int n = g->c_n, scheduled = g->c_sched, running = g->c_run, succeeded = g->c_succ, failed = g->c_fail,
        alive_placed = g->c_alive;
    const char *k;
    void *v;
    /* A placement that ran and is gone whole (preempted as a gang, or its
     * pods deleted to be recreated) is over: the gang schedules anew, with
     * a fresh clock for its timeout at its next turn. Until its pods are
     * seen bound, a placement's Bindings may still be on their way. */
    if (g->placed_ms && alive_placed > 0)
        g->ran = 1;
    if (g->placed_ms && g->ran && alive_placed == 0 && succeeded < min) {
        g->placed_ms = 0;
        g->ran = 0;
        g->start_ms = 0;
        g->timed_out = 0;
        g->dirty = 1;
    }
    /* Timeout: considered, not placed, past its scheduleTimeoutSeconds. */
    int timeout = g->pg->timeout_s > 0 ? g->pg->timeout_s : default_timeout_s;
    if (g->start_ms && !g->placed_ms && !g->timed_out && timeout > 0 && scheduled < min &&
        now - g->start_ms >= (int64_t)timeout * 1000) {
        g->timed_out = 1;
        g->dirty = 1;
        t->timed_out++;
        char msg[700];
        snprintf(msg, sizeof(msg), "not placed within %ds: %.600s", timeout,
                 g->wait_msg ? g->wait_msg : "its members are still pending");
        add_event(t, g, "Warning", "GangScheduleTimeout", msg);
        if (g->waiting)
            add_wake(t, g->wait_pool); /* it stops holding back the pods behind it */
    }
    /* A waiting gang whose members went away holds nothing back. */
    if (g->waiting && n < min)
        unwait(g, t);
    if (g->waiting && !g->timed_out)
        t->waiting++;
    /* Stale: a placed gang below its minimum for longer than the grace. */
    if (g->placed_ms && alive_placed + succeeded < min && alive_placed > 0) {
        if (!g->below_since)
            g->below_since = now;
        if (!g->stale && now - g->below_since >= (int64_t)stale_grace_s * 1000) {
            g->stale = 1;
            char msg[300];
            snprintf(msg, sizeof(msg), "%d of minMember %d members placed and alive for %llds%s", alive_placed, min,
                     (long long)((now - g->below_since) / 1000),
                     evict_stale ? "; evicting the rest so their resources return" : "");
            add_event(t, g, "Warning", "StaleGang", msg);
        }
        if (g->stale && evict_stale && !g->evicted) {
            g->evicted = 1;
            for (size_t it = 0; hashmap_next(g->members, &it, &k, &v);) {
                pod_t *p = v;
                if (pod_is_bound(p) && !pod_is_terminal(p) && !p->deleting) {
                    t->evict = util_xrealloc(t->evict, (size_t)(t->nevict + 1) * sizeof(*t->evict));
                    t->evict[t->nevict++] = pod_ref(p);
                }
            }
        }
    } else {
        g->below_since = 0;
        g->stale = 0;
        g->evicted = 0;
    }
    if (g->stale)
        t->stale++;
    if (!g->dirty || !write_status)
        return;
    g->dirty = 0;
    json_t *st = json_pack("{s:s, s:i, s:i, s:i, s:i}", "phase",
                           gang_phase(n, min, scheduled, running, succeeded, failed, g->timed_out), "scheduled",
                           scheduled, "running", running, "succeeded", succeeded, "failed", failed);
    if (g->start_ms) {
        char ts[64];
        util_rfc3339(g->start_ms, ts, sizeof(ts));
        json_object_set_new(st, "scheduleStartTime", json_string(ts));
    }
    char *body = status_body(st);
    json_decref(st);
    if (!body)
        return;
    /* Written is not shown: a write the writer dropped (or the API refused)
     * is sent again every STATUS_RETRY_MS until the PodGroup the informer
     * sees carries it. */
    if (g->pg->observed_status && strcmp(g->pg->observed_status, body) == 0) {
        free(body);
        return;
    }
    g->dirty = 1; /* looked at again next tick, until confirmed */
    if (g->last_status && strcmp(g->last_status, body) == 0 && now - g->written_ms < STATUS_RETRY_MS) {
        free(body);
        return;
    }
    free(g->last_status);
    g->last_status = util_strdup(body);
    g->written_ms = now;
    char *ens = util_urlencode(g->ns), *en = util_urlencode(g->name);
    sbuf_t path = { 0 };
    sbuf_printf(&path, PODGROUP_API "/namespaces/%s/podgroups/%s/status", ens, en);
    free(ens);
    free(en);
    t->patches = util_xrealloc(t->patches, (size_t)(t->npatches + 1) * sizeof(*t->patches));
    t->patches[t->npatches++] = (gang_patch_t){ .path = path.data, .body = body };
}

void gang_tick(gang_store_t *gs, int64_t now, int default_timeout_s, int stale_grace_s, int evict_stale,
               int write_status, gang_tick_t *out)
{
    memset(out, 0, sizeof(*out));
    lo_mutex_lock(&gs->mu, LO_GANG);
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(gs->gangs, &it, &k, &v);) {
        gang_t *g = v;
        if (!g->pg)
            continue;
        if (g->pg->invalid) {
            if (!g->warned_invalid || strcmp(g->warned_invalid, g->pg->invalid) != 0) {
                free(g->warned_invalid);
                g->warned_invalid = util_strdup(g->pg->invalid);
                add_event(out, g, "Warning", "InvalidPodGroup", g->pg->invalid);
            }
            continue;
        }
        tick_one(g, now, default_timeout_s, stale_grace_s, evict_stale, write_status, out);
    }
    if (out->unwaited)
        __atomic_sub_fetch(&gs->nwaiting, out->unwaited, __ATOMIC_RELAXED);
    lo_mutex_unlock(&gs->mu, LO_GANG);
}

void gang_tick_clear(gang_tick_t *t)
{
    for (int i = 0; i < t->npatches; i++) {
        free(t->patches[i].path);
        free(t->patches[i].body);
    }
    free(t->patches);
    for (int i = 0; i < t->nevents; i++) {
        free(t->events[i].ns);
        free(t->events[i].name);
        free(t->events[i].uid);
        free(t->events[i].msg);
    }
    free(t->events);
    free(t->wake_pools);
    for (int i = 0; i < t->nevict; i++)
        pod_unref(t->evict[i]);
    free(t->evict);
    memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------ dashboard */

/* Each pool's first waiting gang in line, the gang every other waiting
 * gang of that pool waits behind: ranks_ahead is a strict total order, so
 * the first of those ahead of a gang is the pool's first. One pass over
 * the store (a pass per gang would hold the lock for G^2 comparisons).
 * Lock held. *out: malloc'd; returns how many pools have one. */
typedef struct pool_head {
    int pool;
    const gang_t *g;
} pool_head_t;

static int pool_heads_locked(gang_store_t *gs, pool_head_t **out)
{
    pool_head_t *h = NULL;
    int n = 0;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(gs->gangs, &it, &k, &v);) {
        const gang_t *o = v;
        if (!o->waiting || o->timed_out || !o->pg)
            continue;
        int i = 0;
        while (i < n && h[i].pool != o->wait_pool)
            i++;
        if (i == n) {
            h = util_xrealloc(h, (size_t)(n + 1) * sizeof *h);
            h[n++] = (pool_head_t){ o->wait_pool, o };
        } else if (ranks_ahead(o->wait_prio, o->wait_created, o->start_ms, o->key, h[i].g->wait_prio,
                               h[i].g->wait_created, h[i].g->start_ms, h[i].g->key)) {
            h[i].g = o;
        }
    }
    *out = h;
    return n;
}

/* The gang g waits behind: its pool's first in line unless that is g. */
static const gang_t *waits_behind(const pool_head_t *h, int n, const gang_t *g)
{
    if (!g->waiting || g->timed_out)
        return NULL;
    for (int i = 0; i < n; i++)
        if (h[i].pool == g->wait_pool)
            return h[i].g != g ? h[i].g : NULL;
    return NULL;
}

void gang_each_row(gang_store_t *gs, void (*fn)(void *ud, const gang_row_t *r), void *ud)
{
    lo_mutex_lock(&gs->mu, LO_GANG);
    pool_head_t *heads;
    int nheads = pool_heads_locked(gs, &heads);
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(gs->gangs, &it, &k, &v);) {
        gang_t *g = v;
        if (!g->pg || g->deleted)
            continue;
        recount(g);
        gang_row_t r = { .key = g->key,
                         .ns = g->ns,
                         .name = g->name,
                         .queue = g->pg->queue,
                         .topo_level = g->pg->topo_level,
                         .wait_msg = g->wait_msg,
                         .invalid = g->pg->invalid,
                         .min_member = g->pg->min_member,
                         .members = g->c_n,
                         .placed = g->c_alive,
                         .running = g->c_run,
                         .succeeded = g->c_succ,
                         .failed = g->c_fail,
                         .created_ms = g->pg->created_ms,
                         .start_ms = g->start_ms,
                         .waiting = g->waiting,
                         .wait_pool = g->wait_pool,
                         .timed_out = g->timed_out,
                         .topo_required = g->pg->topo_required };
        r.phase = gang_phase(g->c_n, g->pg->min_member, g->c_sched, g->c_run, g->c_succ, g->c_fail, g->timed_out);
        const gang_t *b = waits_behind(heads, nheads, g);
        r.waiting_behind = b ? b->key : NULL;
        const char *mk;
        void *mv;
        for (size_t mi = 0; (!r.member || !r.placed_node) && hashmap_next(g->members, &mi, &mk, &mv);) {
            const pod_t *m = mv;
            if (!r.member) {
                r.member_pool = pod_home_pool(m);
                r.member = m;
            }
            if (!r.placed_node && m->node_name[0])
                r.placed_node = m->node_name;
        }
        fn(ud, &r);
    }
    free(heads);
    lo_mutex_unlock(&gs->mu, LO_GANG);
}
