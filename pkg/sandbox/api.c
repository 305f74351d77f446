/* api.c -- the API server the sandbox's scheduler talks to: its requests
 * (Bindings, Evictions, events, patches, reservation pods) applied to the
 * copy and told the caller as actions, and the two controllers' parts the
 * scheduler waits for (claims bound, disruption budgets, budget.c). */
#include <stdlib.h>
#include <string.h>

#include "api/storage.h"
#include "api/types.h"
#include "sandbox/internal.h"
#include "util/util.h"

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
        segs[n++] = util_urldecode(c, len, 0);
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
    p->k = sb_kind_by_plural(segs[i]);
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

/* A write's answer: the object itself (kube_response_t.doc), serialized
 * only if the caller decodes it; most writes' answers (status patches,
 * events) are never read. obj is never changed after (stored objects are
 * copied on write). */
static void answer_write(kube_response_t *resp, long status, json_t *obj)
{
    resp->status = status;
    resp->doc = json_incref(obj);
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
    json_t *pod = sb_store_get(sb, "Pod", p->ns, p->name);
    if (!pod) {
        answer_missing(resp, p);
        return;
    }
    const char *node = sb_str_at(body, "target", "name");
    const char *want_uid = sb_str_at(body, "metadata", "uid");
    const char *uid = sb_str_at(pod, "metadata", "uid");
    const char *bound = sb_str_at(pod, "spec", "nodeName");
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
    json_object_set_new(sb_own_object(np, "spec"), "nodeName", json_string(node));
    json_t *ann = json_object_get(json_object_get(body, "metadata"), "annotations");
    if (json_is_object(ann) && json_object_size(ann) > 0)
        json_object_update(sb_own_object(sb_own_object(np, "metadata"), "annotations"), ann);
    char now[64];
    util_rfc3339(sandbox_now(sb), now, sizeof(now));
    json_t *st = sb_own_object(np, "status");
    json_object_set_new(st, "phase", json_string("Running"));
    json_object_set_new(st, "startTime", json_string(now));
    json_t *conds = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s},{s:s,s:s,s:s}]", "type", "PodScheduled",
                              "status", "True", "lastTransitionTime", now, "type", "Initialized", "status", "True",
                              "lastTransitionTime", now, "type", "ContainersReady", "status", "True",
                              "lastTransitionTime", now, "type", "Ready", "status", "True", "lastTransitionTime", now);
    json_object_set_new(st, "conditions", sb_merge_conditions(json_object_get(st, "conditions"), conds));
    json_decref(conds);
    sb_store_put(sb, p->k, "MODIFIED", p->ns, p->name, np); /* pod (and uid) freed */
    uid = sb_str_at(np, "metadata", "uid");
    free(hashmap_remove(sb->unsch, uid ? uid : ""));
    sb_action_t a = { 0 };
    a.kind = SB_BIND;
    a.ns = p->ns;
    a.name = p->name;
    a.uid = uid;
    a.node = node;
    a.lender = json_string_value(json_object_get(ann, BORROWED_ANNOTATION));
    sb_act(sb, &a);
    answer_status(resp, 201, "Created", "bound");
}

/* An Eviction (or a DELETE): the pod goes at once; grace periods are not
 * simulated (a checkpoint request's wait is the evictor's own and is
 * kept). The action waits for the evictor's event, which says why. */
static void api_evict(sandbox_t *sb, const api_path_t *p, kube_response_t *resp, int is_delete)
{
    json_t *pod = sb_store_get(sb, "Pod", p->ns, p->name);
    if (!pod) {
        answer_missing(resp, p);
        return;
    }
    const char *node = sb_str_at(pod, "spec", "nodeName"), *pdb = NULL;
    if (!is_delete && !budgets_allow(sb->budgets, pod, &pdb)) {
        char msg[400];
        snprintf(msg, sizeof(msg),
                 "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget %.200s "
                 "needs more healthy pods.",
                 pdb);
        answer_status(resp, 429, "TooManyRequests", msg);
        return;
    }
    if (is_delete) {
        sb_act_pod(sb, SB_DELETE, pod, node);
    } else {
        sb_evicted_t *e = util_xcalloc(1, sizeof(*e));
        e->ns = util_strdup(p->ns);
        e->name = util_strdup(p->name);
        e->uid = util_strdup(sb_str_at(pod, "metadata", "uid"));
        e->node = node ? util_strdup(node) : NULL;
        sb_evicted_t **tail = &sb->evicted;
        while (*tail)
            tail = &(*tail)->next;
        *tail = e;
    }
    sb_store_delete(sb, p->k, p->ns, p->name);
    answer_status(resp, is_delete ? 200 : 201, "Success", "deleted");
}

/* SB_EVICT for the eviction of uid (NULL: every one still waiting, with no
 * event: reason "eviction"). */
void sb_evict_said(sandbox_t *sb, const char *uid, const char *reason, const char *message, const char *by)
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
        sb_act(sb, &a);
        sb_evicted_free(e);
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
        sb_evict_said(sb, uid, r, msg, who);
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
        sb_act(sb, &a);
    }
}

static void api_create(sandbox_t *sb, const api_path_t *p, json_t *body, kube_response_t *resp)
{
    if (!strcmp(p->k->kind, "Event")) {
        api_event(sb, body);
        answer_write(resp, 201, body);
        return;
    }
    const char *name = sb_str_at(body, "metadata", "name"), *gen = sb_str_at(body, "metadata", "generateName");
    char genbuf[300];
    if (!name && gen && json_is_object(json_object_get(body, "metadata"))) {
        /* generateName: the API server adds 5 random characters; here a
         * counter keeps runs reproducible. */
        static unsigned gen_seq;
        unsigned seq = __atomic_add_fetch(&gen_seq, 1, __ATOMIC_RELAXED);
        snprintf(genbuf, sizeof(genbuf), "%.250s%05u", gen, seq % 100000u);
        json_object_set_new(json_object_get(body, "metadata"), "name", json_string(genbuf));
        name = genbuf;
    }
    if (!name || !json_is_object(json_object_get(body, "metadata"))) {
        answer_status(resp, 422, "Invalid", "metadata.name is required");
        return;
    }
    const char *ns = p->k->namespaced ? (p->ns ? p->ns : sb_str_at(body, "metadata", "namespace")) : NULL;
    if (sb_store_get(sb, p->k->kind, ns, name)) {
        answer_status(resp, 409, "AlreadyExists", "already exists");
        return;
    }
    json_t *obj = json_deep_copy(body);
    sb_fill_meta(sb, p->k, json_object_get(obj, "metadata"), ns);
    const char *node = sb_str_at(obj, "spec", "nodeName");
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
    sb_store_put(sb, p->k, "ADDED", ns, nm, obj);
    if (!strcmp(p->k->kind, "Pod"))
        sb_act_pod(sb, SB_CREATE, obj, node);
    free(nm);
    answer_write(resp, 201, obj);
}

/* ---- the PV controller's part: claims bound as soon as PreBind asks ---- */

/* pvc (stored) bound to PV pv_name: volumeName, the bind annotations, Bound. */
static void bind_claim(sandbox_t *sb, json_t *pvc, const char *pv_name, json_t *capacity)
{
    const char *ns = sb_str_at(pvc, "metadata", "namespace"), *name = sb_str_at(pvc, "metadata", "name");
    char *nsc = util_strdup(ns), *nm = util_strdup(name);
    json_t *c = json_copy(pvc);
    json_object_set_new(sb_own_object(c, "spec"), "volumeName", json_string(pv_name));
    json_t *ann = sb_own_object(sb_own_object(c, "metadata"), "annotations");
    json_object_set_new(ann, ANN_BIND_COMPLETED, json_string("yes"));
    json_object_set_new(ann, ANN_BOUND_BY_CTRL, json_string("yes"));
    json_t *st = sb_own_object(c, "status");
    json_object_set_new(st, "phase", json_string("Bound"));
    if (capacity)
        json_object_set(st, "capacity", capacity);
    sb_store_put(sb, sb_kind_by_name("PersistentVolumeClaim"), "MODIFIED", nsc, nm, c);
    free(nsc);
    free(nm);
}

/* A PV PreBind gave a claimRef: the controller binds both sides. */
static void pv_claimed(sandbox_t *sb, json_t *pv)
{
    json_t *ref = json_object_get(json_object_get(pv, "spec"), "claimRef");
    const char *cns = json_string_value(json_object_get(ref, "namespace"));
    const char *cname = json_string_value(json_object_get(ref, "name"));
    json_t *pvc = cns && cname ? sb_store_get(sb, "PersistentVolumeClaim", cns, cname) : NULL;
    const char *vn = sb_str_at(pvc, "spec", "volumeName");
    if (!pvc || (vn && vn[0]))
        return;
    char *pvn = util_strdup(sb_str_at(pv, "metadata", "name"));
    json_t *np = json_copy(pv);
    json_object_set_new(sb_own_object(np, "status"), "phase", json_string("Bound"));
    sb_store_put(sb, sb_kind_by_name("PersistentVolume"), "MODIFIED", NULL, pvn, np);
    bind_claim(sb, pvc, pvn, json_object_get(json_object_get(np, "spec"), "capacity"));
    free(pvn);
}

/* A claim PreBind gave a node (WaitForFirstConsumer): provisioned at once,
 * a PV "pvc-<uid>" of its size and class, bound to it. */
static void pvc_node_selected(sandbox_t *sb, json_t *pvc)
{
    json_t *ann = json_object_get(json_object_get(pvc, "metadata"), "annotations");
    const char *vn = sb_str_at(pvc, "spec", "volumeName");
    if (!json_is_string(json_object_get(ann, ANN_SELECTED_NODE)) || (vn && vn[0]))
        return;
    const char *uid = sb_str_at(pvc, "metadata", "uid");
    json_t *spec = json_object_get(pvc, "spec");
    json_t *size = json_object_get(json_object_get(json_object_get(spec, "resources"), "requests"), "storage");
    char name[128];
    snprintf(name, sizeof(name), "pvc-%.100s", uid ? uid : "unknown");
    if (sb_store_get(sb, "PersistentVolume", NULL, name))
        return;
    json_t *pv =
        json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:{s:O?}, s:O?, s:O?, s:s, s:{s:s, s:s, s:s, s:s}},"
                  " s:{s:s}}",
                  "apiVersion", "v1", "kind", "PersistentVolume", "metadata", "name", name, "annotations",
                  "pv.kubernetes.io/provisioned-by", "sandbox", "spec", "capacity", "storage", size, "accessModes",
                  json_object_get(spec, "accessModes"), "storageClassName", json_object_get(spec, "storageClassName"),
                  "persistentVolumeReclaimPolicy", "Delete", "claimRef", "kind", "PersistentVolumeClaim", "namespace",
                  sb_str_at(pvc, "metadata", "namespace"), "name", sb_str_at(pvc, "metadata", "name"), "uid",
                  uid ? uid : "", "status", "phase", "Bound");
    if (!pv)
        return;
    const kind_row_t *k = sb_kind_by_name("PersistentVolume");
    sb_fill_meta(sb, k, json_object_get(pv, "metadata"), NULL);
    sb_store_put(sb, k, "ADDED", NULL, name, pv);
    bind_claim(sb, pvc, name, json_object_get(json_object_get(pv, "spec"), "capacity"));
}

static void api_patch(sandbox_t *sb, const api_path_t *p, const char *ctype, json_t *body, kube_response_t *resp)
{
    json_t *cur = sb_store_get(sb, p->k->kind, p->ns, p->name);
    if (!cur) {
        answer_missing(resp, p);
        return;
    }
    if (!json_is_object(body)) {
        answer_status(resp, 400, "BadRequest", "patch is not an object");
        return;
    }
    const char *want_rv = sb_str_at(body, "metadata", "resourceVersion"),
               *rv = sb_str_at(cur, "metadata", "resourceVersion");
    if (want_rv && (!rv || strcmp(want_rv, rv) != 0)) {
        answer_status(resp, 409, "Conflict",
                      "Operation cannot be fulfilled: the object has been modified; please apply your changes to "
                      "the latest version and try again");
        return;
    }
    int strategic = ctype && strstr(ctype, "strategic");
    json_t *np = json_copy(cur);
    sb_merge_patch(np, body, strategic);
    if (!strcmp(p->k->kind, "Pod")) {
        const char *nom = sb_str_at(body, "status", "nominatedNodeName");
        if (nom && nom[0])
            sb_act_pod(sb, SB_NOMINATE, np, nom);
    }
    sb_store_put(sb, p->k, "MODIFIED", p->ns, p->name, np);
    answer_write(resp, 200, np);
    if (!strcmp(p->k->kind, "PersistentVolume"))
        pv_claimed(sb, np);
    else if (!strcmp(p->k->kind, "PersistentVolumeClaim"))
        pvc_node_selected(sb, np);
}

static void api_put(sandbox_t *sb, const api_path_t *p, json_t *body, kube_response_t *resp)
{
    json_t *cur = sb_store_get(sb, p->k->kind, p->ns, p->name);
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
    sb_store_put(sb, p->k, "MODIFIED", p->ns, p->name, np);
    answer_write(resp, 200, np);
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
void sb_api_serve(void *ud, const char *method, const char *path, const char *ctype, const char *body,
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
        json_t *o = p.name ? sb_store_get(sb, p.k->kind, p.ns, p.name) : NULL;
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
        if (sb_store_get(sb, p.k->kind, p.ns, p.name)) {
            sb_store_delete(sb, p.k, p.ns, p.name);
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
