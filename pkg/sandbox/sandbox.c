/* sandbox.c -- the scheduler run on a copy of a cluster (sandbox.h): an
 * object store stands in for the API server, answering the scheduler's
 * requests through an in-process kube client and handing the watch events
 * each write causes back to the scheduler's informer handlers. */
#include "sandbox/sandbox.h"

#include <stdlib.h>
#include <string.h>

#include "api/types.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/util.h"

/* A watch event waiting to be delivered. obj is never changed after it is
 * queued: every write replaces the stored object with a new one. */
typedef struct sb_event {
    struct sb_event *next;
    const char *kind; /* static (kind_rows) */
    char *type, *key;
    json_t *obj; /* one reference */
} sb_event_t;

/* An eviction whose Preempted (or Consolidated) event has not come yet. */
typedef struct sb_evicted {
    struct sb_evicted *next;
    char *ns, *name, *uid, *node;
} sb_evicted_t;

struct sandbox {
    scheduler_t *s;
    kube_client_t *kc;
    scheduler_opts_t sched;
    sb_action_fn on_action;
    void *ud;
    int virtual_clock;
    int64_t now; /* the virtual clock (wall ms; the monotonic one reads the same) */
    int64_t next_hk;
    hashmap_t *objs;  /* "Kind/ns/name" -> json_t * (one reference) */
    hashmap_t *unsch; /* pod uid -> last SB_UNSCHEDULABLE message (owned) */
    sb_event_t *head, *tail;
    sb_evicted_t *evicted;
    uint64_t rv, uids;
};

/* One sandbox with a virtual clock per process (the clock is global). */
static sandbox_t *clock_owner;

/* ------------------------------------------------------------ kinds */

typedef struct kind_row {
    const char *kind;
    const char *plural;
    int namespaced;
    int load_rank; /* sandbox_load's order: what each depends on first */
} kind_row_t;

static const kind_row_t kind_rows[] = {
    { "PriorityClass", "priorityclasses", 0, 0 },
    { "Pool", "pools", 0, 1 },
    { "Queue", "queues", 0, 2 },
    { "StorageClass", "storageclasses", 0, 3 },
    { "CSINode", "csinodes", 0, 3 },
    { "PersistentVolume", "persistentvolumes", 0, 4 },
    { "PersistentVolumeClaim", "persistentvolumeclaims", 1, 4 },
    { "Node", "nodes", 0, 5 },
    { "PodDisruptionBudget", "poddisruptionbudgets", 1, 6 },
    { "Service", "services", 1, 6 },
    { "ReplicationController", "replicationcontrollers", 1, 6 },
    { "ReplicaSet", "replicasets", 1, 6 },
    { "StatefulSet", "statefulsets", 1, 6 },
    { "PodGroup", "podgroups", 1, 7 },
    { "Pod", "pods", 1, 8 },
    /* Written by the scheduler, never fed to it. */
    { "Event", "events", 1, 9 },
    { "Namespace", "namespaces", 0, 9 },
};
#define NKINDS  (sizeof(kind_rows) / sizeof(kind_rows[0]))
#define NFED    15 /* the first NFED rows are watched by the scheduler */
#define KIND_NS "Namespace"

static const kind_row_t *kind_by_name(const char *kind)
{
    for (size_t i = 0; kind && i < NKINDS; i++)
        if (!strcmp(kind_rows[i].kind, kind))
            return &kind_rows[i];
    return NULL;
}

static const kind_row_t *kind_by_plural(const char *plural)
{
    for (size_t i = 0; plural && i < NKINDS; i++)
        if (!strcmp(kind_rows[i].plural, plural))
            return &kind_rows[i];
    return NULL;
}

static int kind_fed(const kind_row_t *k)
{
    return k && k - kind_rows < (ptrdiff_t)NFED;
}

/* ------------------------------------------------------------ clock */

static int64_t clock_read(void *ud)
{
    return ((sandbox_t *)ud)->now;
}

int64_t sandbox_now(const sandbox_t *sb)
{
    return sb->virtual_clock ? sb->now : util_wall_ms();
}

/* ------------------------------------------------------------ store */

static const char *str_at(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(json_object_get(o, a), b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static char *store_key(const char *kind, const char *ns, const char *name)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, "%s/%s/%s", kind, ns ? ns : "", name);
    return b.data;
}

/* The informer's key: "ns/name" or "name". */
static char *watch_key(const kind_row_t *k, const char *ns, const char *name)
{
    sbuf_t b = { 0 };
    if (k->namespaced)
        sbuf_printf(&b, "%s/%s", ns ? ns : "", name);
    else
        sbuf_puts(&b, name);
    return b.data;
}

static json_t *store_get(sandbox_t *sb, const char *kind, const char *ns, const char *name)
{
    char *key = store_key(kind, ns, name);
    json_t *o = hashmap_get(sb->objs, key);
    free(key);
    return o;
}

static void queue_event(sandbox_t *sb, const kind_row_t *k, const char *type, const char *ns, const char *name,
                        json_t *obj)
{
    if (!kind_fed(k))
        return;
    sb_event_t *e = util_xcalloc(1, sizeof(*e));
    e->kind = k->kind;
    e->type = util_strdup(type);
    e->key = watch_key(k, ns, name);
    e->obj = json_incref(obj);
    if (sb->tail)
        sb->tail->next = e;
    else
        sb->head = e;
    sb->tail = e;
}

/* Stored objects are never changed in place (a queued event may hold the
 * old version): a write copies only what it changes, shallowly, down the
 * path it writes, and shares the rest. */

/* target[key] as an object of target's own (a shallow copy of the shared
 * one, or a new one), to be changed. */
static json_t *own_object(json_t *target, const char *key)
{
    json_t *t = json_object_get(target, key);
    json_t *c = json_is_object(t) ? json_copy(t) : json_object();
    json_object_set_new(target, key, c);
    return c;
}

static void set_rv(sandbox_t *sb, json_t *obj)
{
    char rv[32];
    snprintf(rv, sizeof(rv), "%llu", (unsigned long long)++sb->rv);
    if (json_is_object(json_object_get(obj, "metadata")))
        json_object_set_new(own_object(obj, "metadata"), "resourceVersion", json_string(rv));
}

/* Stores obj (taken) as the object kind/ns/name now is, and queues the
 * watch event type for it. */
static void store_put(sandbox_t *sb, const kind_row_t *k, const char *type, const char *ns, const char *name,
                      json_t *obj)
{
    set_rv(sb, obj);
    char *key = store_key(k->kind, k->namespaced ? ns : NULL, name);
    json_decref(hashmap_put(sb->objs, key, obj));
    free(key);
    queue_event(sb, k, type, ns, name, obj);
}

static void store_delete(sandbox_t *sb, const kind_row_t *k, const char *ns, const char *name)
{
    char *key = store_key(k->kind, k->namespaced ? ns : NULL, name);
    json_t *old = hashmap_remove(sb->objs, key);
    free(key);
    if (!old)
        return;
    queue_event(sb, k, "DELETED", ns, name, old);
    json_decref(old);
}

/* Fills what the API server would: uid, creationTimestamp, namespace. */
static void fill_meta(sandbox_t *sb, const kind_row_t *k, json_t *meta, const char *ns)
{
    if (!json_is_string(json_object_get(meta, "uid"))) {
        char uid[48];
        snprintf(uid, sizeof(uid), "sandbox-%012llx", (unsigned long long)++sb->uids);
        json_object_set_new(meta, "uid", json_string(uid));
    }
    if (!json_is_string(json_object_get(meta, "creationTimestamp"))) {
        char ts[64];
        util_rfc3339(sandbox_now(sb), ts, sizeof(ts));
        json_object_set_new(meta, "creationTimestamp", json_string(ts));
    }
    if (k->namespaced && !json_is_string(json_object_get(meta, "namespace")))
        json_object_set_new(meta, "namespace", json_string(ns && ns[0] ? ns : "default"));
}

/* ------------------------------------------------------------ actions */

static void act(sandbox_t *sb, sb_action_t *a)
{
    a->at_ms = sandbox_now(sb);
    if (sb->on_action)
        sb->on_action(sb->ud, a);
}

static void act_pod(sandbox_t *sb, sb_action_kind_t kind, json_t *pod, const char *node)
{
    sb_action_t a = { 0 };
    a.kind = kind;
    a.ns = str_at(pod, "metadata", "namespace");
    a.name = str_at(pod, "metadata", "name");
    a.uid = str_at(pod, "metadata", "uid");
    a.node = node;
    act(sb, &a);
}

/* ------------------------------------------------------------ patches */

/* A strategic merge patch's conditions: merged by type, into a new array
 * (the conditions changed are new objects). */
static json_t *merge_conditions(json_t *cur, json_t *patch)
{
    json_t *out = json_is_array(cur) ? json_copy(cur) : json_array();
    size_t i, j;
    json_t *pc, *tc;
    json_array_foreach (patch, i, pc) {
        const char *type = json_string_value(json_object_get(pc, "type"));
        int found = 0;
        json_array_foreach (out, j, tc) {
            const char *t = json_string_value(json_object_get(tc, "type"));
            if (type && t && !strcmp(type, t)) {
                json_t *m = json_copy(tc);
                json_object_update(m, pc);
                json_array_set_new(out, j, m);
                found = 1;
                break;
            }
        }
        if (!found)
            json_array_append(out, pc);
    }
    return out;
}

/* RFC 7386 merge of patch into target (target is the writer's own, its
 * members shared); strategic: conditions by type (the only list the
 * scheduler patches by key). */
static void merge_patch(json_t *target, json_t *patch, int strategic)
{
    const char *k;
    json_t *v;
    json_object_foreach (patch, k, v) {
        json_t *t = json_object_get(target, k);
        if (json_is_null(v))
            json_object_del(target, k);
        else if (json_is_object(v))
            merge_patch(own_object(target, k), v, strategic);
        else if (strategic && json_is_array(v) && json_is_array(t) && !strcmp(k, "conditions"))
            json_object_set_new(target, k, merge_conditions(t, v));
        else
            json_object_set(target, k, v);
    }
}

/* ------------------------------------------------------------ the API */

typedef struct api_path {
    const kind_row_t *k;
    char *ns, *name, *sub; /* owned, NULL when absent */
} api_path_t;

static void path_free(api_path_t *p)
{
    free(p->ns);
    free(p->name);
    free(p->sub);
}

static char *url_decode(const char *s, size_t n)
{
    char *out = util_xmalloc(n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n) {
            char hex[3] = { s[i + 1], s[i + 2], 0 };
            char *end;
            long c = strtol(hex, &end, 16);
            if (*end == '\0' && c > 0) {
                out[o++] = (char)c;
                i += 2;
                continue;
            }
        }
        out[o++] = s[i];
    }
    out[o] = '\0';
    return out;
}

/* "/api/v1[/namespaces/NS]/PLURAL[/NAME[/SUB]]" or "/apis/G/V/...". 0, or
 * -1 for a path that names no kind the store keeps. */
static int parse_path(const char *path, api_path_t *p)
{
    memset(p, 0, sizeof(*p));
    char *segs[8];
    int n = 0;
    size_t plen = strcspn(path, "?");
    const char *c = path;
    while (c < path + plen && n < 8) {
        while (*c == '/' && c < path + plen)
            c++;
        if (c >= path + plen)
            break;
        size_t len = strcspn(c, "/?");
        segs[n++] = url_decode(c, len);
        c += len;
    }
    int i = 0, rc = -1;
    if (n >= 2 && !strcmp(segs[0], "api"))
        i = 2;
    else if (n >= 3 && !strcmp(segs[0], "apis"))
        i = 3;
    else
        goto out;
    if (n - i >= 2 && !strcmp(segs[i], "namespaces") && n - i != 2) {
        p->ns = util_strdup(segs[i + 1]);
        i += 2;
    }
    if (i >= n)
        goto out;
    p->k = kind_by_plural(segs[i]);
    if (!p->k)
        goto out;
    if (i + 1 < n)
        p->name = util_strdup(segs[i + 1]);
    if (i + 2 < n)
        p->sub = util_strdup(segs[i + 2]);
    rc = 0;
out:
    for (int j = 0; j < n; j++)
        free(segs[j]);
    if (rc != 0)
        path_free(p);
    return rc;
}

static void answer(kube_response_t *resp, long status, json_t *obj)
{
    resp->status = status;
    resp->body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
}

static void answer_status(kube_response_t *resp, long code, const char *reason, const char *msg)
{
    if (code < 300) {
        /* The common answer, once per bind: no JSON built. */
        resp->status = code;
        resp->body = util_strdup("{\"apiVersion\":\"v1\",\"kind\":\"Status\",\"status\":\"Success\"}");
        return;
    }
    json_t *st =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "apiVersion", "v1", "kind", "Status", "status",
                  code < 300 ? "Success" : "Failure", "reason", reason, "message", msg, "code", (json_int_t)code);
    answer(resp, code, st);
    json_decref(st);
}

static void answer_missing(kube_response_t *resp, const api_path_t *p)
{
    char msg[600];
    snprintf(msg, sizeof(msg), "%s \"%s\" not found", p->k->plural, p->name ? p->name : "");
    answer_status(resp, 404, "NotFound", msg);
}

/* The Binding: the pod runs on its node at once (there is no kubelet: it
 * is Running and Ready as soon as it is bound). */
static void api_bind(sandbox_t *sb, const api_path_t *p, json_t *body, kube_response_t *resp)
{
    json_t *pod = store_get(sb, "Pod", p->ns, p->name);
    if (!pod) {
        answer_missing(resp, p);
        return;
    }
    const char *node = str_at(body, "target", "name");
    const char *want_uid = str_at(body, "metadata", "uid");
    const char *uid = str_at(pod, "metadata", "uid");
    const char *bound = str_at(pod, "spec", "nodeName");
    if (!node || !node[0]) {
        answer_status(resp, 400, "BadRequest", "Binding without a target node");
        return;
    }
    if (want_uid && uid && strcmp(want_uid, uid) != 0) {
        answer_status(resp, 409, "Conflict", "Precondition failed: UID in precondition does not match");
        return;
    }
    if (bound && bound[0]) {
        answer_status(resp, 409, "Conflict", "pod is already assigned to a node");
        return;
    }
    json_t *np = json_copy(pod);
    json_object_set_new(own_object(np, "spec"), "nodeName", json_string(node));
    json_t *ann = json_object_get(json_object_get(body, "metadata"), "annotations");
    if (json_is_object(ann) && json_object_size(ann) > 0)
        json_object_update(own_object(own_object(np, "metadata"), "annotations"), ann);
    char now[64];
    util_rfc3339(sandbox_now(sb), now, sizeof(now));
    json_t *st = own_object(np, "status");
    json_object_set_new(st, "phase", json_string("Running"));
    json_object_set_new(st, "startTime", json_string(now));
    json_t *conds = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s}]", "type", "PodScheduled",
                              "status", "True", "lastTransitionTime", now, "type", "Initialized", "status", "True",
                              "lastTransitionTime", now, "type", "ContainersReady", "status", "True",
                              "lastTransitionTime", now, "type", "Ready", "status", "True", "lastTransitionTime", now);
    json_object_set_new(st, "conditions", merge_conditions(json_object_get(st, "conditions"), conds));
    json_decref(conds);
    store_put(sb, p->k, "MODIFIED", p->ns, p->name, np); /* pod (and uid) freed */
    uid = str_at(np, "metadata", "uid");
    free(hashmap_remove(sb->unsch, uid ? uid : ""));
    sb_action_t a = { 0 };
    a.kind = SB_BIND;
    a.ns = p->ns;
    a.name = p->name;
    a.uid = uid;
    a.node = node;
    a.lender = json_string_value(json_object_get(ann, BORROWED_ANNOTATION));
    act(sb, &a);
    answer_status(resp, 201, "Created", "bound");
}

/* An Eviction (or a DELETE): the pod goes at once; grace periods are not
 * simulated (a checkpoint request's wait is the evictor's own and is
 * kept). The action waits for the evictor's event, which says why. */
static void api_evict(sandbox_t *sb, const api_path_t *p, kube_response_t *resp, int is_delete)
{
    json_t *pod = store_get(sb, "Pod", p->ns, p->name);
    if (!pod) {
        answer_missing(resp, p);
        return;
    }
    const char *node = str_at(pod, "spec", "nodeName");
    if (is_delete) {
        act_pod(sb, SB_DELETE, pod, node);
    } else {
        sb_evicted_t *e = util_xcalloc(1, sizeof(*e));
        e->ns = util_strdup(p->ns);
        e->name = util_strdup(p->name);
        e->uid = util_strdup(str_at(pod, "metadata", "uid"));
        e->node = node ? util_strdup(node) : NULL;
        sb_evicted_t **tail = &sb->evicted;
        while (*tail)
            tail = &(*tail)->next;
        *tail = e;
    }
    free(hashmap_remove(sb->unsch, str_at(pod, "metadata", "uid") ? str_at(pod, "metadata", "uid") : ""));
    store_delete(sb, p->k, p->ns, p->name);
    answer_status(resp, is_delete ? 200 : 201, "Success", "deleted");
}

static void evicted_free(sb_evicted_t *e)
{
    free(e->ns);
    free(e->name);
    free(e->uid);
    free(e->node);
    free(e);
}

/* SB_EVICT for the eviction of uid (NULL: every one still waiting, with no
 * event: reason "eviction"). */
static void evict_said(sandbox_t *sb, const char *uid, const char *reason, const char *message, const char *by)
{
    for (sb_evicted_t **pp = &sb->evicted; *pp;) {
        sb_evicted_t *e = *pp;
        if (uid && strcmp(e->uid, uid) != 0) {
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        sb_action_t a = { 0 };
        a.kind = SB_EVICT;
        a.ns = e->ns;
        a.name = e->name;
        a.uid = e->uid;
        a.node = e->node;
        a.reason = uid ? reason : "eviction";
        a.message = uid ? message : NULL;
        a.by = uid ? by : NULL;
        act(sb, &a);
        evicted_free(e);
        if (uid)
            return;
    }
}

/* The preemptor named in "Preempted by NS/NAME on node" (or "to make room
 * for NS/NAME on node"), into buf. */
static const char *preemptor_of(const char *msg, const char *lead, char *buf, size_t len)
{
    const char *p = strstr(msg, lead);
    if (!p)
        return NULL;
    p += strlen(lead);
    const char *e = strstr(p, " on node ");
    if (!e || (size_t)(e - p) >= len)
        return NULL;
    memcpy(buf, p, (size_t)(e - p));
    buf[e - p] = '\0';
    return buf;
}

/* An event the scheduler posted: the ones that say what happened to a pod
 * become actions; the others are dropped (events are not stored). */
static void api_event(sandbox_t *sb, json_t *ev)
{
    json_t *inv = json_object_get(ev, "involvedObject");
    const char *kind = json_string_value(json_object_get(inv, "kind"));
    const char *reason = json_string_value(json_object_get(ev, "reason"));
    const char *type = json_string_value(json_object_get(ev, "type"));
    const char *msg = json_string_value(json_object_get(ev, "message"));
    const char *uid = json_string_value(json_object_get(inv, "uid"));
    if (!kind || strcmp(kind, "Pod") != 0 || !reason || !msg || !uid)
        return;
    if (!strcmp(reason, "Preempted") || !strcmp(reason, "Consolidated")) {
        char by[600], why[400];
        const char *who = NULL, *r = "preemption";
        const char *q = strstr(msg, "; reclaimed by queue \"");
        if (!strcmp(reason, "Consolidated")) {
            r = "consolidation move";
            who = preemptor_of(msg, "to make room for ", by, sizeof(by));
        } else {
            who = preemptor_of(msg, "Preempted by ", by, sizeof(by));
            if (!strncmp(msg, "Evicted: its gang", 17))
                r = "stale gang";
            else if (strstr(msg, "(borrowed node reclaimed by its pool)"))
                r = "borrowed-node reclaim";
            else if (q && (q = strstr(q, "\" from queue \""))) {
                q += strlen("\" from queue \"");
                size_t n = strcspn(q, "\"");
                snprintf(why, sizeof(why), "reclaim from queue %.*s", (int)n, q);
                r = why;
            }
        }
        evict_said(sb, uid, r, msg, who);
        return;
    }
    if (type && !strcmp(type, "Warning") &&
        (!strcmp(reason, "FailedScheduling") || !strcmp(reason, "PodGroupNotFound"))) {
        const char *last = hashmap_get(sb->unsch, uid);
        if (last && !strcmp(last, msg))
            return; /* a reminder: said already */
        free(hashmap_put(sb->unsch, uid, util_strdup(msg)));
        sb_action_t a = { 0 };
        a.kind = SB_UNSCHEDULABLE;
        a.ns = json_string_value(json_object_get(inv, "namespace"));
        a.name = json_string_value(json_object_get(inv, "name"));
        a.uid = uid;
        a.reason = reason;
        a.message = msg;
        act(sb, &a);
    }
}

static void api_create(sandbox_t *sb, const api_path_t *p, json_t *body, kube_response_t *resp)
{
    if (!strcmp(p->k->kind, "Event")) {
        api_event(sb, body);
        answer(resp, 201, body);
        return;
    }
    const char *name = str_at(body, "metadata", "name");
    if (!name || !json_is_object(json_object_get(body, "metadata"))) {
        answer_status(resp, 422, "Invalid", "metadata.name is required");
        return;
    }
    const char *ns = p->k->namespaced ? (p->ns ? p->ns : str_at(body, "metadata", "namespace")) : NULL;
    if (store_get(sb, p->k->kind, ns, name)) {
        answer_status(resp, 409, "AlreadyExists", "already exists");
        return;
    }
    json_t *obj = json_deep_copy(body);
    fill_meta(sb, p->k, json_object_get(obj, "metadata"), ns);
    const char *node = str_at(obj, "spec", "nodeName");
    if (!strcmp(p->k->kind, "Pod") && node && node[0]) {
        /* No kubelet: a pod created on a node runs there. */
        json_t *st = json_object_get(obj, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(obj, "status", st);
        }
        json_object_set_new(st, "phase", json_string("Running"));
    }
    char *nm = util_strdup(name);
    store_put(sb, p->k, "ADDED", ns, nm, obj);
    if (!strcmp(p->k->kind, "Pod"))
        act_pod(sb, SB_CREATE, obj, node);
    free(nm);
    answer(resp, 201, obj);
}

static void api_patch(sandbox_t *sb, const api_path_t *p, const char *ctype, json_t *body, kube_response_t *resp)
{
    json_t *cur = store_get(sb, p->k->kind, p->ns, p->name);
    if (!cur) {
        answer_missing(resp, p);
        return;
    }
    if (!json_is_object(body)) {
        answer_status(resp, 400, "BadRequest", "patch is not an object");
        return;
    }
    int strategic = ctype && strstr(ctype, "strategic");
    json_t *np = json_copy(cur);
    merge_patch(np, body, strategic);
    if (!strcmp(p->k->kind, "Pod")) {
        const char *nom = str_at(body, "status", "nominatedNodeName");
        if (nom && nom[0])
            act_pod(sb, SB_NOMINATE, np, nom);
    }
    store_put(sb, p->k, "MODIFIED", p->ns, p->name, np);
    answer(resp, 200, np);
}

static void api_put(sandbox_t *sb, const api_path_t *p, json_t *body, kube_response_t *resp)
{
    json_t *cur = store_get(sb, p->k->kind, p->ns, p->name);
    if (!cur) {
        answer_missing(resp, p);
        return;
    }
    json_t *np = json_deep_copy(body);
    json_t *meta = json_object_get(np, "metadata");
    if (!json_is_object(meta)) {
        json_decref(np);
        answer_status(resp, 422, "Invalid", "metadata is required");
        return;
    }
    json_object_set(meta, "uid", json_object_get(json_object_get(cur, "metadata"), "uid"));
    store_put(sb, p->k, "MODIFIED", p->ns, p->name, np);
    answer(resp, 200, np);
}

static void api_list(sandbox_t *sb, const api_path_t *p, kube_response_t *resp)
{
    json_t *items = json_array();
    sbuf_t pre = { 0 };
    sbuf_printf(&pre, "%s/%s", p->k->kind, p->ns ? p->ns : "");
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(sb->objs, &it, &k, &v);)
        if (!strncmp(k, pre.data, pre.len) && (p->ns || k[strlen(p->k->kind)] == '/'))
            json_array_append(items, v);
    sbuf_free(&pre);
    json_t *l = json_pack("{s:s, s:{s:s}, s:o}", "kind", "List", "metadata", "resourceVersion", "0", "items", items);
    answer(resp, 200, l);
    json_decref(l);
}

/* The in-process client's every request. */
static void api_serve(void *ud, const char *method, const char *path, const char *ctype, const char *body,
                      kube_response_t *resp)
{
    sandbox_t *sb = ud;
    api_path_t p;
    if (!strcmp(method, "POST") && body && strstr(path, "/events") && strstr(body, "\"type\":\"Normal\"") &&
        !strstr(body, "\"reason\":\"Preempted\"") && !strstr(body, "\"reason\":\"Consolidated\"")) {
        /* Scheduled, Borrowed...: no action, not kept; not parsed (one a bind). */
        answer_status(resp, 201, "Created", "event");
        return;
    }
    if (parse_path(path, &p) != 0) {
        answer_status(resp, 404, "NotFound", "the sandbox serves no such path");
        return;
    }
    json_t *b = NULL;
    if (body && body[0]) {
        json_error_t je;
        b = json_loads(body, 0, &je);
        if (!b) {
            answer_status(resp, 400, "BadRequest", "body is not JSON");
            path_free(&p);
            return;
        }
    }
    int pod = !strcmp(p.k->kind, "Pod");
    if (!strcmp(method, "GET")) {
        json_t *o = p.name ? store_get(sb, p.k->kind, p.ns, p.name) : NULL;
        if (!p.name)
            api_list(sb, &p, resp);
        else if (o)
            answer(resp, 200, o);
        else
            answer_missing(resp, &p);
    } else if (!strcmp(method, "POST") && pod && p.name && p.sub && !strcmp(p.sub, "binding")) {
        api_bind(sb, &p, b, resp);
    } else if (!strcmp(method, "POST") && pod && p.name && p.sub && !strcmp(p.sub, "eviction")) {
        api_evict(sb, &p, resp, 0);
    } else if (!strcmp(method, "POST") && !p.name) {
        if (!strcmp(p.k->kind, KIND_NS))
            answer_status(resp, 201, "Created", "namespace");
        else if (b)
            api_create(sb, &p, b, resp);
        else
            answer_status(resp, 400, "BadRequest", "no body");
    } else if (!strcmp(method, "PATCH") && p.name) {
        api_patch(sb, &p, ctype, b, resp);
    } else if (!strcmp(method, "PUT") && p.name && b) {
        api_put(sb, &p, b, resp);
    } else if (!strcmp(method, "DELETE") && p.name && pod) {
        api_evict(sb, &p, resp, 1);
    } else if (!strcmp(method, "DELETE") && p.name) {
        if (store_get(sb, p.k->kind, p.ns, p.name)) {
            store_delete(sb, p.k, p.ns, p.name);
            answer_status(resp, 200, "Success", "deleted");
        } else {
            answer_missing(resp, &p);
        }
    } else {
        answer_status(resp, 405, "MethodNotAllowed", "not served by the sandbox");
    }
    json_decref(b);
    path_free(&p);
}

/* ------------------------------------------------------------ driving */

/* Hands every queued watch event to the scheduler; returns how many. */
static int deliver(sandbox_t *sb)
{
    int n = 0;
    while (sb->head) {
        sb_event_t *e = sb->head;
        sb->head = e->next;
        if (!sb->head)
            sb->tail = NULL;
        scheduler_feed(sb->s, e->kind, e->type, e->key, e->obj);
        json_decref(e->obj);
        free(e->type);
        free(e->key);
        free(e);
        n++;
    }
    return n;
}

/* Writes, their events, until neither is left. */
static void settle(sandbox_t *sb)
{
    for (;;) {
        int n = scheduler_drain(sb->s);
        evict_said(sb, NULL, NULL, NULL, NULL);
        n += deliver(sb);
        if (!n)
            return;
    }
}

sandbox_t *sandbox_new(const sandbox_opts_t *o, char *err, size_t errlen)
{
    if (!o) {
        util_errf(err, errlen, "sandbox: no options");
        return NULL;
    }
    if (o->start_wall_ms > 0 && clock_owner) {
        util_errf(err, errlen, "sandbox: another sandbox owns the virtual clock");
        return NULL;
    }
    sandbox_t *sb = util_xcalloc(1, sizeof(*sb));
    if (o->sched)
        sb->sched = *o->sched;
    else
        scheduler_opts_default(&sb->sched);
    sb->sched.seed = o->seed ? o->seed : 1;
    sb->sched.identity = "sandbox";
    /* Nothing in a sandbox is fenced, timed or counted elsewhere. */
    sb->sched.may_act = NULL;
    sb->sched.on_bound = NULL;
    sb->sched.on_gang_placed = NULL;
    sb->sched.workload_groups = 0;
    sb->on_action = o->on_action;
    sb->ud = o->ud;
    sb->objs = hashmap_new(1024);
    sb->unsch = hashmap_new(64);
    if (o->start_wall_ms > 0) {
        sb->virtual_clock = 1;
        sb->now = o->start_wall_ms;
        clock_owner = sb;
        util_clock_override(clock_read, clock_read, sb);
    }
    sb->next_hk = sandbox_now(sb) + 1000;
    sb->kc = kube_client_new_inproc(api_serve, sb);
    sb->s = scheduler_new(&sb->sched, sb->kc, err, errlen);
    if (!sb->s || scheduler_start_offline(sb->s, err, errlen) != 0) {
        sandbox_free(sb);
        return NULL;
    }
    return sb;
}

void sandbox_free(sandbox_t *sb)
{
    if (!sb)
        return;
    /* The scheduler's last writes still reach the store. */
    scheduler_free(sb->s);
    sb->s = NULL;
    while (sb->head) {
        sb_event_t *e = sb->head;
        sb->head = e->next;
        json_decref(e->obj);
        free(e->type);
        free(e->key);
        free(e);
    }
    while (sb->evicted) {
        sb_evicted_t *e = sb->evicted;
        sb->evicted = e->next;
        evicted_free(e);
    }
    kube_client_free(sb->kc);
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(sb->objs, &it, &k, &v);)
        json_decref(v);
    hashmap_free(sb->objs);
    for (size_t it = 0; hashmap_next(sb->unsch, &it, &k, &v);)
        free(v);
    hashmap_free(sb->unsch);
    if (clock_owner == sb) {
        util_clock_override(NULL, NULL, NULL);
        clock_owner = NULL;
    }
    free(sb);
}

int sandbox_apply(sandbox_t *sb, const char *type, json_t *obj, char *err, size_t errlen)
{
    if (!type || (strcmp(type, "ADDED") && strcmp(type, "MODIFIED") && strcmp(type, "DELETED")))
        return util_errf(err, errlen, "sandbox: event type %s is not ADDED, MODIFIED or DELETED",
                         type ? type : "(none)");
    if (!json_is_object(obj))
        return util_errf(err, errlen, "sandbox: the object is not a JSON object");
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (!kind)
        return util_errf(err, errlen, "sandbox: object without a kind");
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = str_at(obj, "metadata", "name");
    if (!json_is_object(meta) || !name || !name[0])
        return util_errf(err, errlen, "sandbox: %s without metadata.name", kind);
    const kind_row_t *k = kind_by_name(kind);
    if (!kind_fed(k))
        return 0; /* not a kind the scheduler watches */
    const char *ns = k->namespaced ? str_at(obj, "metadata", "namespace") : NULL;
    if (k->namespaced && (!ns || !ns[0]))
        ns = "default";
    char *nsc = ns ? util_strdup(ns) : NULL, *nm = util_strdup(name);
    if (!strcmp(type, "DELETED")) {
        store_delete(sb, k, nsc, nm);
    } else {
        json_t *cur = store_get(sb, k->kind, nsc, nm);
        json_t *c = json_deep_copy(obj);
        json_t *cm = json_object_get(c, "metadata");
        /* An update keeps the stored uid unless it names its own. */
        if (cur && !json_is_string(json_object_get(cm, "uid")))
            json_object_set(cm, "uid", json_object_get(json_object_get(cur, "metadata"), "uid"));
        fill_meta(sb, k, cm, nsc);
        store_put(sb, k, cur ? "MODIFIED" : "ADDED", nsc, nm, c);
    }
    free(nsc);
    free(nm);
    /* Delivered now: whatever the caller applies next sees this one's effect. */
    settle(sb);
    return 0;
}

typedef struct load_item {
    json_t *obj;
    int rank;
    size_t pos;
} load_item_t;

static int load_cmp(const void *a, const void *b)
{
    const load_item_t *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

int sandbox_load(sandbox_t *sb, json_t *snapshot, char *err, size_t errlen)
{
    json_t *items = json_object_get(snapshot, "items");
    if (!json_is_array(items))
        return util_errf(err, errlen, "sandbox: the snapshot has no items array");
    size_t n = json_array_size(items);
    load_item_t *li = util_xcalloc(n + 1, sizeof(*li));
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(items, i);
        const kind_row_t *k = kind_by_name(json_string_value(json_object_get(o, "kind")));
        li[i].obj = o;
        li[i].rank = k ? k->load_rank : 100;
        li[i].pos = i;
    }
    qsort(li, n, sizeof(*li), load_cmp);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char e[300];
        if (sandbox_apply(sb, "ADDED", li[i].obj, e, sizeof(e)) != 0)
            rc = util_errf(err, errlen, "snapshot item %zu: %s", li[i].pos, e);
    }
    free(li);
    return rc;
}

int sandbox_run(sandbox_t *sb)
{
    int total = 0;
    settle(sb);
    for (;;) {
        int n = scheduler_run_pools(sb->s);
        settle(sb);
        if (!n)
            return total;
        total += n;
    }
}

/* Once a second while pods wait (gang timeouts, reservations), and at
 * every stop of the clock. */
static void housekeep_due(sandbox_t *sb)
{
    int64_t now = sandbox_now(sb);
    if (now < sb->next_hk)
        return;
    scheduler_housekeep(sb->s);
    settle(sb);
    sb->next_hk = now + 1000;
}

/* What is due next, wall ms, 0 for nothing; with_hk: the housekeeping
 * tick counts while pods wait. */
static int64_t next_due(sandbox_t *sb, int with_hk)
{
    int64_t ckpt = 0;
    int64_t q = scheduler_next_due(sb->s, &ckpt);
    int64_t due = 0;
    if (q) /* monotonic: the same as wall on a virtual clock */
        due = sb->virtual_clock ? q : q - util_now_ms() + util_wall_ms();
    if (ckpt && (!due || ckpt < due))
        due = ckpt;
    if (with_hk && scheduler_has_pending(sb->s) && (!due || sb->next_hk < due))
        due = sb->next_hk;
    return due;
}

int64_t sandbox_next_due(sandbox_t *sb)
{
    return next_due(sb, 1);
}

void sandbox_advance(sandbox_t *sb, int64_t wall_ms)
{
    if (!sb->virtual_clock) {
        housekeep_due(sb);
        sandbox_run(sb);
        return;
    }
    sandbox_run(sb);
    for (;;) {
        int64_t due = next_due(sb, 1);
        if (!due || due > wall_ms)
            break;
        if (due > sb->now)
            sb->now = due;
        housekeep_due(sb);
        sandbox_run(sb);
        /* Nothing moved at a due time in the past: go on from the next ms. */
        if (due <= sb->now && next_due(sb, 1) == due)
            sb->now++;
    }
    if (wall_ms > sb->now)
        sb->now = wall_ms;
    if (sb->now >= sb->next_hk || wall_ms >= sb->next_hk)
        housekeep_due(sb);
    sandbox_run(sb);
}

json_t *sandbox_get(sandbox_t *sb, const char *kind, const char *ns, const char *name)
{
    const kind_row_t *k = kind_by_name(kind);
    if (!k || !name)
        return NULL;
    return store_get(sb, k->kind, k->namespaced ? (ns ? ns : "default") : NULL, name);
}

scheduler_t *sandbox_scheduler(sandbox_t *sb)
{
    return sb->s;
}
