/* sandbox.c -- the scheduler run on a copy of a cluster (sandbox.h): the
 * copy (store.c) stands in for the API server, answering the scheduler's
 * requests through an in-process kube client (api.c) and handing the watch
 * events each write causes back to the scheduler's informer handlers; this
 * file drives it: objects in, cycles, the virtual clock. */
#include <stdlib.h>
#include <string.h>

#include "sandbox/internal.h"
#include "util/log.h"
#include "util/util.h"

/* One sandbox with a virtual clock per process (the clock is global). */
static sandbox_t *clock_owner;

/* ------------------------------------------------------------ clock */

static int64_t clock_read(void *ud)
{
    return ((sandbox_t *)ud)->now;
}

int64_t sandbox_now(const sandbox_t *sb)
{
    return sb->virtual_clock ? sb->now : util_wall_ms();
}

/* ------------------------------------------------------------ driving */

/* The disruption controller's write: a budget's new disruptionsAllowed. */
static void budget_write(void *ud, const char *ns, const char *name, int32_t allowed)
{
    sandbox_t *sb = ud;
    json_t *cur = sb_store_get(sb, "PodDisruptionBudget", ns, name);
    if (!cur)
        return;
    json_t *np = json_copy(cur);
    json_object_set_new(sb_own_object(np, "status"), "disruptionsAllowed", json_integer(allowed));
    sb_store_put(sb, sb_kind_by_name("PodDisruptionBudget"), "MODIFIED", ns, name, np);
}

/* A PDB applied: its counts from the pods of its namespace as they are. */
static int budget_applied(sandbox_t *sb, const char *ns, const char *name, json_t *obj, char *err, size_t errlen)
{
    if (budgets_set(sb->budgets, ns, name, obj, err, errlen) != 0)
        return -1;
    if (!obj)
        return 0;
    char *pre = sb_store_key("Pod", ns, "");
    size_t plen = strlen(pre);
    int healthy = 0, expected = 0;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(sb->objs, &it, &k, &v);) {
        if (strncmp(k, pre, plen) != 0 || !budgets_matches(sb->budgets, ns, name, v))
            continue;
        const char *node = sb_str_at(v, "spec", "nodeName"), *phase = sb_str_at(v, "status", "phase");
        int done = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
        expected += !done;
        healthy += node && node[0] && phase && !strcmp(phase, "Running") &&
                   !json_object_get(json_object_get(v, "metadata"), "deletionTimestamp");
    }
    free(pre);
    budgets_counts(sb->budgets, ns, name, healthy, expected);
    return 0;
}

/* Writes, their events, until neither is left. */
static void settle(sandbox_t *sb)
{
    for (;;) {
        int n = scheduler_drain(sb->s);
        sb_evict_said(sb, NULL, NULL, NULL, NULL);
        budgets_each_changed(sb->budgets, budget_write, sb);
        n += sb_deliver(sb);
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
    sb->budgets = budgets_new();
    if (o->start_wall_ms > 0) {
        sb->virtual_clock = 1;
        sb->now = o->start_wall_ms;
        clock_owner = sb;
        util_clock_override(clock_read, clock_read, sb);
    }
    sb->next_hk = sandbox_now(sb) + 1000;
    sb->kc = kube_client_new_inproc(sb_api_serve, sb);
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
        sb_evicted_free(e);
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
    budgets_free(sb->budgets);
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
    const char *name = sb_str_at(obj, "metadata", "name");
    if (!json_is_object(meta) || !name || !name[0])
        return util_errf(err, errlen, "sandbox: %s without metadata.name", kind);
    const kind_row_t *k = sb_kind_by_name(kind);
    if (!sb_kind_fed(k))
        return 0; /* not a kind the scheduler watches */
    const char *ns = k->namespaced ? sb_str_at(obj, "metadata", "namespace") : NULL;
    if (k->namespaced && (!ns || !ns[0]))
        ns = "default";
    /* The API server's names never hold one; the store's keys rely on it. */
    if (strchr(name, '/') || (ns && strchr(ns, '/')))
        return util_errf(err, errlen, "sandbox: %s %s%s%s: a name or namespace with '/'", kind, ns ? ns : "",
                         ns ? "/" : "", name);
    char *nsc = ns ? util_strdup(ns) : NULL, *nm = util_strdup(name);
    int pdb = !strcmp(k->kind, "PodDisruptionBudget"), rc = 0;
    if (!strcmp(type, "DELETED")) {
        sb_store_delete(sb, k, nsc, nm);
        if (pdb)
            budget_applied(sb, nsc, nm, NULL, err, errlen);
    } else if (pdb && budget_applied(sb, nsc, nm, obj, err, errlen) != 0) {
        rc = -1; /* not stored: the scheduler would ignore it too */
    } else {
        json_t *cur = sb_store_get(sb, k->kind, nsc, nm);
        json_t *c = json_deep_copy(obj);
        json_t *cm = json_object_get(c, "metadata");
        /* An update keeps the stored uid unless it names its own. */
        if (cur && !json_is_string(json_object_get(cm, "uid")))
            json_object_set(cm, "uid", json_object_get(json_object_get(cur, "metadata"), "uid"));
        sb_fill_meta(sb, k, cm, nsc);
        sb_store_put(sb, k, cur ? "MODIFIED" : "ADDED", nsc, nm, c);
    }
    free(nsc);
    free(nm);
    /* Delivered now: whatever the caller applies next sees this one's effect. */
    settle(sb);
    return rc;
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
        const kind_row_t *k = sb_kind_by_name(json_string_value(json_object_get(o, "kind")));
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

/* Once a second while it has work time moves on (scheduler_housekeep_wanted:
 * pods wait, reservation pods are held...), else once where the clock
 * stops: an idle hour costs one pass, not 3600. */
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
    if (with_hk && (!due || sb->next_hk < due) && scheduler_housekeep_wanted(sb->s))
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
    int64_t ran_at = -1; /* a due time already run at now */
    for (;;) {
        int64_t due = next_due(sb, 1);
        if (!due || due > wall_ms)
            break;
        if (due > sb->now) {
            sb->now = due;
        } else if (ran_at == due) {
            /* Still due after a run at this time (an early estimate, such
             * as a queue's flush time): only time moves it; a second on. */
            int64_t next = sb->next_hk > sb->now ? sb->next_hk : sb->now + 1000;
            if (next > wall_ms)
                break;
            sb->now = next;
        }
        ran_at = due;
        housekeep_due(sb);
        sandbox_run(sb);
    }
    if (wall_ms > sb->now)
        sb->now = wall_ms;
    if (sb->now >= sb->next_hk || wall_ms >= sb->next_hk)
        housekeep_due(sb);
    sandbox_run(sb);
}

json_t *sandbox_get(sandbox_t *sb, const char *kind, const char *ns, const char *name)
{
    const kind_row_t *k = sb_kind_by_name(kind);
    if (!k || !name)
        return NULL;
    return sb_store_get(sb, k->kind, k->namespaced ? (ns ? ns : "default") : NULL, name);
}

int sandbox_count(sandbox_t *sb, const char *kind, const char *ns)
{
    const kind_row_t *k = sb_kind_by_name(kind);
    if (!k)
        return 0;
    sbuf_t pre = { 0 };
    sbuf_printf(&pre, "%s/%s", k->kind, k->namespaced ? (ns ? ns : "default") : "");
    const char *key;
    void *v;
    int n = 0;
    for (size_t it = 0; hashmap_next(sb->objs, &it, &key, &v);)
        n += !strncmp(key, pre.data, pre.len) && key[pre.len] == '/';
    sbuf_free(&pre);
    return n;
}

scheduler_t *sandbox_scheduler(sandbox_t *sb)
{
    return sb->s;
}
