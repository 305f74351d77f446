/* row.c -- the workload-groups row: the grouper (grouper.c) behind the
 * extension points, its hooks answered through the services table. */
#include <stdlib.h>
#include <string.h>

#include "grouper/row.h"
#include "grouper/rules.h"
#include "util/util.h"

typedef struct grouper_row {
    const sched_services_t *svc;
    void *core;
    grouper_t *g; /* NULL until started, and when --workload-groups is off */
} grouper_row_t;

void *grouper_row_init(const sched_services_t *svc, void *core)
{
    grouper_row_t *r = util_xcalloc(1, sizeof(*r));
    r->svc = svc;
    r->core = core;
    return r;
}

void grouper_row_fini(void *self)
{
    grouper_row_t *r = self;
    if (!r)
        return;
    grouper_free(r->g); /* stopped by then: its hooks read the core */
    free(r);
}

static void hook_release(void *ud, const char *uid)
{
    grouper_row_t *r = ud;
    r->svc->release(r->core, uid);
}

static void hook_event(void *ud, const char *ns, const char *name, const char *uid, const char *type,
                       const char *reason, const char *message)
{
    grouper_row_t *r = ud;
    r->svc->pod_event_by_name(r->core, ns, name, uid, type, reason, message);
}

static int hook_fenced(void *ud)
{
    grouper_row_t *r = ud;
    return r->svc->fenced(r->core);
}

int grouper_row_start(const sched_row_t *row, char *err, size_t errlen)
{
    grouper_row_t *r = row->self;
    const scheduler_opts_t *o = r->svc->opts(r->core);
    if (!o->workload_groups || r->g)
        return 0;
    wl_table_t *t = wl_table_new_default();
    if (o->workload_groups_file && o->workload_groups_file[0] &&
        wl_table_load_file(t, o->workload_groups_file, err, errlen) != 0) {
        wl_table_free(t);
        return -1;
    }
    grouper_opts_t go;
    grouper_opts_default(&go);
    go.refresh_s = o->workload_refresh_s > 0 ? o->workload_refresh_s : go.refresh_s;
    grouper_hooks_t h = { r, hook_release, hook_event, hook_fenced };
    r->g = grouper_new(r->svc->client(r->core), t, &go, &h);
    if (!r->g || grouper_start(r->g) != 0) {
        snprintf(err, errlen, "cannot start the workload grouper");
        return -1;
    }
    return 0;
}

void grouper_row_stop(const sched_row_t *row)
{
    grouper_row_t *r = row->self;
    if (r->g)
        grouper_stop(r->g);
}

int grouper_row_pre_enqueue(const sched_row_t *row, const pod_t *pod, enqueue_hold_t *hold)
{
    grouper_row_t *r = row->self;
    if (!r->g || !grouper_hold(r->g, pod))
        return 0;
    hold->reason = NULL;
    return 1;
}

void grouper_row_housekeep(const sched_row_t *row)
{
    grouper_row_t *r = row->self;
    if (r->g)
        grouper_housekeep(r->g);
}

void grouper_row_pod_deleted(const sched_row_t *row, const pod_t *pod)
{
    grouper_row_t *r = row->self;
    if (r->g)
        grouper_forget(r->g, pod->uid);
}

void grouper_row_on_podgroup(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    grouper_row_t *r = ud;
    const char *slash = strchr(key, '/');
    if (!r->g || !slash)
        return;
    char *ns = util_strndup(key, (size_t)(slash - key));
    grouper_podgroup(r->g, ns, slash + 1, type == KUBE_DELETED ? NULL : obj);
    free(ns);
}

grouper_t *grouper_row_grouper(void *self)
{
    return ((grouper_row_t *)self)->g;
}
