/* store.c -- the sandbox's copy of the cluster: the kinds it keeps, the
 * objects (copy-on-write, so a queued watch event keeps its version), the
 * watch events waiting for the scheduler and the actions told the caller. */
#include <stdlib.h>
#include <string.h>

#include "sandbox/internal.h"
#include "util/util.h"

/* ------------------------------------------------------------ kinds */

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
    { "DeviceClass", "deviceclasses", 0, 3 },
    { "ResourceSlice", "resourceslices", 0, 6 },
    { "ResourceClaim", "resourceclaims", 1, 7 },
    { "Pod", "pods", 1, 8 },
    /* Written by the scheduler, never fed to it. */
    { "Event", "events", 1, 9 },
    { "Namespace", "namespaces", 0, 9 },
};
#define NKINDS (sizeof(kind_rows) / sizeof(kind_rows[0]))
#define NFED   18 /* the first NFED rows are watched by the scheduler */

const kind_row_t *sb_kind_by_name(const char *kind)
{
    for (size_t i = 0; kind && i < NKINDS; i++)
        if (!strcmp(kind_rows[i].kind, kind))
            return &kind_rows[i];
    return NULL;
}

const kind_row_t *sb_kind_by_plural(const char *plural)
{
    for (size_t i = 0; plural && i < NKINDS; i++)
        if (!strcmp(kind_rows[i].plural, plural))
            return &kind_rows[i];
    return NULL;
}

int sb_kind_fed(const kind_row_t *k)
{
    return k && k - kind_rows < (ptrdiff_t)NFED;
}

/* ------------------------------------------------------------ store */

const char *sb_str_at(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(json_object_get(o, a), b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

char *sb_store_key(const char *kind, const char *ns, const char *name)
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

json_t *sb_store_get(sandbox_t *sb, const char *kind, const char *ns, const char *name)
{
    char *key = sb_store_key(kind, ns, name);
    json_t *o = hashmap_get(sb->objs, key);
    free(key);
    return o;
}

static void queue_event(sandbox_t *sb, const kind_row_t *k, const char *type, const char *ns, const char *name,
                        json_t *obj)
{
    if (!sb_kind_fed(k))
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
json_t *sb_own_object(json_t *target, const char *key)
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
        json_object_set_new(sb_own_object(obj, "metadata"), "resourceVersion", json_string(rv));
}

/* Stores obj (taken) as the object kind/ns/name now is, and queues the
 * watch event type for it. */
/* Succeeded or Failed: its claims are released as a deleted pod's. */
static int pod_finished(json_t *pod)
{
    const char *phase = sb_str_at(pod, "status", "phase");
    return phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
}

void sb_store_put(sandbox_t *sb, const kind_row_t *k, const char *type, const char *ns, const char *name, json_t *obj)
{
    set_rv(sb, obj);
    char *key = sb_store_key(k->kind, k->namespaced ? ns : NULL, name);
    json_t *old = hashmap_put(sb->objs, key, obj);
    if (!strcmp(k->kind, "Pod"))
        budgets_pod(sb->budgets, old, obj);
    if (!strcmp(k->kind, "ResourceClaim"))
        sb->has_claims = 1;
    json_decref(old);
    free(key);
    queue_event(sb, k, type, ns, name, obj);
    if (!strcmp(k->kind, "Pod") && pod_finished(obj))
        sb_claims_pod_gone(sb, sb_str_at(obj, "metadata", "uid"));
}

void sb_store_delete(sandbox_t *sb, const kind_row_t *k, const char *ns, const char *name)
{
    char *key = sb_store_key(k->kind, k->namespaced ? ns : NULL, name);
    json_t *old = hashmap_remove(sb->objs, key);
    free(key);
    if (!old)
        return;
    if (!strcmp(k->kind, "Pod")) {
        budgets_pod(sb->budgets, old, NULL);
        const char *uid = sb_str_at(old, "metadata", "uid");
        free(hashmap_remove(sb->unsch, uid ? uid : ""));
    }
    queue_event(sb, k, "DELETED", ns, name, old);
    if (!strcmp(k->kind, "Pod"))
        sb_claims_pod_gone(sb, sb_str_at(old, "metadata", "uid"));
    json_decref(old);
}

/* Fills what the API server would: uid, creationTimestamp, namespace. */
void sb_fill_meta(sandbox_t *sb, const kind_row_t *k, json_t *meta, const char *ns)
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

void sb_act(sandbox_t *sb, sb_action_t *a)
{
    a->at_ms = sandbox_now(sb);
    if (sb->on_action)
        sb->on_action(sb->ud, a);
}

void sb_act_pod(sandbox_t *sb, sb_action_kind_t kind, json_t *pod, const char *node)
{
    sb_action_t a = { 0 };
    a.kind = kind;
    a.ns = sb_str_at(pod, "metadata", "namespace");
    a.name = sb_str_at(pod, "metadata", "name");
    a.uid = sb_str_at(pod, "metadata", "uid");
    a.node = node;
    sb_act(sb, &a);
}

/* ------------------------------------------------------------ patches */

/* A strategic merge patch's conditions: merged by type, into a new array
 * (the conditions changed are new objects). */
json_t *sb_merge_conditions(json_t *cur, json_t *patch)
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
void sb_merge_patch(json_t *target, json_t *patch, int strategic)
{
    const char *k;
    json_t *v;
    json_object_foreach (patch, k, v) {
        json_t *t = json_object_get(target, k);
        if (json_is_null(v))
            json_object_del(target, k);
        else if (json_is_object(v))
            sb_merge_patch(sb_own_object(target, k), v, strategic);
        else if (strategic && json_is_array(v) && json_is_array(t) && !strcmp(k, "conditions"))
            json_object_set_new(target, k, sb_merge_conditions(t, v));
        else
            json_object_set(target, k, v);
    }
}

void sb_evicted_free(sb_evicted_t *e)
{
    free(e->ns);
    free(e->name);
    free(e->uid);
    free(e->node);
    free(e);
}

/* Hands every queued watch event to the scheduler; returns how many. */
int sb_deliver(sandbox_t *sb)
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
