/* fake_services.c -- the default calls of the fake services table
 * (fake_services.h): answers from the fake core, records of what a row did. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_services.h"
#include "util/util.h"

static const char *f_name(void *core)
{
    return ((fake_core_t *)core)->name;
}

static const scheduler_opts_t *f_opts(void *core)
{
    return &((fake_core_t *)core)->opts;
}

static int f_fenced(void *core)
{
    return ((fake_core_t *)core)->fenced;
}

/* Request i recorded; its answer: the status the test set, else 201 to a
 * POST (a creation) and 200 to the others. */
static long record_req(fake_core_t *fc, const char *method, const char *path, const char *content_type,
                       const char *body, json_t *json)
{
    assert_true(fc->nreqs < FAKE_MAX_REQS);
    int i = fc->nreqs++;
    fake_req_t *r = &fc->req[i];
    r->method = util_strdup(method);
    r->path = util_strdup(path);
    r->content_type = util_strdup(content_type ? content_type : "");
    r->body = util_strdup(body ? body : "");
    r->json = json ? json_deep_copy(json) : NULL;
    if (fc->status[i])
        return fc->status[i];
    return strcmp(method, "POST") == 0 ? 201 : 200;
}

static int f_api(void *core, const char *method, const char *path, const char *body, long *status, char **answer,
                 char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    *status = record_req(core, method, path, NULL, body, NULL);
    if (answer)
        *answer = util_strdup(*status >= 300 ? "{\"kind\":\"Status\"}" : "{}");
    return 0;
}

static int f_api_json(void *core, const char *method, const char *path, const char *content_type, json_t *body,
                      json_t **out, long *status, char *err, size_t errlen)
{
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    *status = record_req(core, method, path, content_type, text, body);
    free(text);
    if (*status >= 300) {
        snprintf(err, errlen, "HTTP %ld (fake)", *status);
        return -1;
    }
    if (out)
        *out = json_pack("{s:{s:s}}", "metadata", "resourceVersion", "7");
    return 0;
}

static void f_patch(void *core, const char *path, const char *content_type, char *body)
{
    record_req(core, "PATCH", path, content_type, body, NULL);
    free(body);
}

static void record_event(fake_core_t *fc, const char *who, const char *api_version, const char *type,
                         const char *reason, const char *message)
{
    fc->nevents++;
    snprintf(fc->event, sizeof(fc->event), "%s %s %s %s", who, type, reason, message);
    snprintf(fc->event_api_version, sizeof(fc->event_api_version), "%s", api_version ? api_version : "");
}

static void f_pod_event(void *core, const pod_t *pod, const char *type, const char *reason, const char *message)
{
    record_event(core, pod->key, "v1", type, reason, message);
}

static void f_pod_event_by_name(void *core, const char *ns, const char *name, const char *uid, const char *type,
                                const char *reason, const char *message)
{
    char who[300];
    (void)uid;
    snprintf(who, sizeof(who), "%s/%s", ns, name);
    record_event(core, who, "v1", type, reason, message);
}

void fake_object_event(void *core, const char *ns, json_t *involved, const char *type, const char *reason,
                       const char *message, const char *base_name)
{
    char who[300];
    (void)ns;
    (void)base_name;
    snprintf(who, sizeof(who), "%s %s/%s", json_string_value(json_object_get(involved, "kind")),
             json_string_value(json_object_get(involved, "namespace")),
             json_string_value(json_object_get(involved, "name")));
    record_event(core, who, json_string_value(json_object_get(involved, "apiVersion")), type, reason, message);
    json_decref(involved);
}

void fake_object_event_ref(void *core, const char *kind, const char *api_version, const char *ns, const char *name,
                           const char *uid, const char *type, const char *reason, const char *message)
{
    char who[300];
    (void)uid;
    snprintf(who, sizeof(who), "%s %s/%s", kind, ns, name);
    record_event(core, who, api_version, type, reason, message);
}

static void f_wake_all(void *core, const char *event)
{
    fake_core_t *fc = core;
    fc->nwakes++;
    fc->wake_pool = -1;
    snprintf(fc->wake, sizeof(fc->wake), "%s", event);
}

void fake_pool_wake(void *core, int pool, const char *event)
{
    fake_core_t *fc = core;
    fc->nwakes++;
    fc->wake_pool = pool;
    snprintf(fc->wake, sizeof(fc->wake), "%s", event);
}

void fake_pod_activate(void *core, int pool, const char *uid)
{
    (void)pool;
    (void)uid;
    ((fake_core_t *)core)->nactivated++;
}

static void f_status_changed(void *core)
{
    ((fake_core_t *)core)->nstatus++;
}

static void f_node_visit(void *core, const char *node, sched_node_fn fn, void *ud)
{
    fake_core_t *fc = core;
    for (int i = 0; i < fc->nnodes; i++)
        if (strcmp(node, fc->nodes[i]->name) == 0)
            fn(ud, fc->nodes[i]);
}

static void f_nodes_visit(void *core, sched_node_fn fn, void *ud)
{
    fake_core_t *fc = core;
    for (int i = 0; i < fc->nnodes; i++)
        fn(ud, fc->nodes[i]);
}

static const node_info_t *f_lookup(void *core, const char *name)
{
    fake_core_t *fc = core;
    assert_true(fc->frozen); /* only inside nodes_frozen */
    for (int i = 0; i < fc->nnodes; i++)
        if (strcmp(name, fc->nodes[i]->name) == 0)
            return fc->nodes[i];
    return NULL;
}

static void f_nodes_frozen(void *core, sched_nodes_frozen_fn fn, void *ud)
{
    fake_core_t *fc = core;
    fc->frozen = 1;
    fn(ud, core, f_lookup);
    fc->frozen = 0;
}

static int f_pool_views(void *core, int pool, const pod_t *pod, node_info_t ***out)
{
    fake_core_t *fc = core;
    (void)pool;
    (void)pod;
    *out = util_xcalloc((size_t)fc->nnodes + 1, sizeof(**out));
    for (int i = 0; i < fc->nnodes; i++)
        (*out)[i] = node_info_clone(fc->nodes[i]);
    return fc->nnodes;
}

static int f_nominated(void *core, const char *node, pod_t ***out)
{
    (void)core;
    (void)node;
    *out = NULL;
    return 0;
}

static void f_stats(void *core, void (*fn)(scheduler_stats_t *st, void *ud), void *ud)
{
    fn(&((fake_core_t *)core)->st, ud);
}

static framework_t *f_pod_fw(void *core, const pod_t *pod)
{
    (void)pod;
    return ((fake_core_t *)core)->fw;
}

static int f_is_ours(void *core, const char *scheduler_name)
{
    (void)core;
    (void)scheduler_name;
    return 1;
}

static int f_home_pool(void *core, const pod_t *pod)
{
    (void)pod;
    return ((fake_core_t *)core)->home_pool;
}

static pod_t *f_pod_get(void *core, const char *uid, cache_pod_state_t *st)
{
    (void)core;
    (void)uid;
    *st = CPOD_NONE;
    return NULL; /* the cache holds no pod */
}

static int f_tenant_of(void *core, const pod_t *pod)
{
    (void)core;
    (void)pod;
    return -1; /* Queues are off */
}

static int f_same_queue(void *core, int a, int b)
{
    (void)core;
    return a == b;
}

static int f_preemptible(void *core, const pod_t *pod)
{
    (void)core;
    (void)pod;
    return 1;
}

int fake_min_runtime(void *core, const pod_t *pod, int kind, int64_t now_wall)
{
    (void)pod;
    (void)kind;
    (void)now_wall;
    return ((fake_core_t *)core)->min_runtime;
}

static int f_queues_active(void *core)
{
    (void)core;
    return 0;
}

static int32_t f_gang_priority(void *core, const gang_snap_t *g, int32_t floor)
{
    (void)core;
    (void)g;
    return floor; /* no class of the gang's is known */
}

static int f_may_evict(void *core, const struct pod_set *set)
{
    (void)set;
    return ((fake_core_t *)core)->may_evict;
}

static void f_nominate(void *core, pod_t *pod, const char *node)
{
    fake_core_t *fc = core;
    (void)pod;
    snprintf(fc->nominated, sizeof(fc->nominated), "%s", node);
}

void fake_lone_set(pod_set_t *set, queue_item_t *it, pod_t *pod)
{
    memset(set, 0, sizeof(*set));
    it->pod = pod;
    set->kind = SET_LONE;
    set->items = util_xcalloc(2, sizeof(*set->items));
    set->items[0] = it;
    set->n = set->need = 1;
    set->pool_name = "default";
}

void fake_set_done(pod_set_t *set)
{
    for (int i = 0; i < set->n; i++)
        set->items[i] = NULL; /* the test's, not the set's */
    pod_set_clear(set);
}

void fake_set_gang(fake_core_t *fc, const struct pod_set *set, const gang_snap_t *g)
{
    int free_slot = -1;
    for (int i = 0; i < FAKE_MAX_GANGS; i++) {
        if (fc->gangs[i].set == set) {
            fc->gangs[i].set = g ? set : NULL;
            fc->gangs[i].g = g;
            return;
        }
        if (!fc->gangs[i].set && free_slot < 0)
            free_slot = i;
    }
    assert_true(free_slot >= 0);
    fc->gangs[free_slot].set = set;
    fc->gangs[free_slot].g = g;
}

static const gang_snap_t *f_set_gang(void *core, const struct pod_set *set)
{
    const fake_core_t *fc = core;
    for (int i = 0; i < FAKE_MAX_GANGS; i++)
        if (fc->gangs[i].set == set)
            return fc->gangs[i].g;
    return NULL;
}

static int f_queue_admits(void *core, int pool, pod_t *const *pods, int n)
{
    (void)core;
    (void)pool;
    (void)pods;
    (void)n;
    return 1;
}

void fake_core_init(fake_core_t *fc)
{
    memset(fc, 0, sizeof(*fc));
    scheduler_opts_default(&fc->opts);
    fc->name = "ai-scheduler";
    fc->wake_pool = -2;
    fc->svc = (sched_services_t){
        .name = f_name,
        .opts = f_opts,
        .fenced = f_fenced,
        .api = f_api,
        .api_json = f_api_json,
        .patch = f_patch,
        .pod_event = f_pod_event,
        .pod_event_by_name = f_pod_event_by_name,
        .object_event = fake_object_event,
        .object_event_ref = fake_object_event_ref,
        .wake_all = f_wake_all,
        .pool_wake = fake_pool_wake,
        .pod_activate = fake_pod_activate,
        .status_changed = f_status_changed,
        .node_visit = f_node_visit,
        .nodes_visit = f_nodes_visit,
        .nodes_frozen = f_nodes_frozen,
        .pool_views = f_pool_views,
        .nominated = f_nominated,
        .stats = f_stats,
        .pod_fw = f_pod_fw,
        .is_ours = f_is_ours,
        .home_pool = f_home_pool,
        .pod_get = f_pod_get,
        .tenant_of = f_tenant_of,
        .same_queue = f_same_queue,
        .same_tree = f_same_queue,
        .queue_admits = f_queue_admits,
        .preemptible = f_preemptible,
        .min_runtime = fake_min_runtime,
        .queues_active = f_queues_active,
        .gang_priority = f_gang_priority,
        .may_evict = f_may_evict,
        .nominate = f_nominate,
        .set_gang = f_set_gang,
    };
}

void fake_core_free(fake_core_t *fc)
{
    for (int i = 0; i < fc->nreqs; i++) {
        fake_req_t *r = &fc->req[i];
        free(r->method);
        free(r->path);
        free(r->content_type);
        free(r->body);
        json_decref(r->json);
    }
    fc->nreqs = 0;
}
