/* services.c -- the core's side of the services table (framework/services.h):
 * what rows may ask of the scheduler, and the rows' rooms. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/util.h"

static const char *svc_name(void *core)
{
    return ((scheduler_t *)core)->name;
}

static const scheduler_opts_t *svc_opts(void *core)
{
    return &((scheduler_t *)core)->opts;
}

static int svc_fenced(void *core)
{
    return scheduler_fenced(core);
}

static int svc_api(void *core, const char *method, const char *path, const char *body, long *status, char **answer,
                   char *err, size_t errlen)
{
    scheduler_t *s = core;
    kube_response_t resp = { 0 };
    int rc = kube_request(s->kc, method, path, NULL, body, &resp, err, errlen);
    *status = rc == 0 ? resp.status : 0;
    if (answer)
        *answer = rc == 0 && resp.body ? util_strdup(resp.body) : NULL;
    kube_response_free(&resp);
    return rc == 0 ? 0 : -1;
}

static void svc_node_visit(void *core, const char *node, sched_node_fn fn, void *ud)
{
    cache_node_visit(((scheduler_t *)core)->cache, node, fn, ud);
}

static void svc_nodes_visit(void *core, sched_node_fn fn, void *ud)
{
    cache_t *c = ((scheduler_t *)core)->cache;
    cache_rdlock(c);
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(c, &n);
    for (int i = 0; i < n; i++) {
        cache_node_lock(c, nodes[i]->name);
        fn(ud, nodes[i]);
        cache_node_unlock(c, nodes[i]->name);
    }
    cache_unlock(c);
}

static const node_info_t *frozen_lookup(void *core, const char *name)
{
    return cache_node_locked(((scheduler_t *)core)->cache, name);
}

/* The cache's write lock: no pod is assumed, bound or moved meanwhile. */
static void svc_nodes_frozen(void *core, sched_nodes_frozen_fn fn, void *ud)
{
    cache_t *c = ((scheduler_t *)core)->cache;
    cache_wrlock(c);
    fn(ud, core, frozen_lookup);
    cache_unlock(c);
}

static void svc_stats(void *core, void (*fn)(scheduler_stats_t *st, void *ud), void *ud)
{
    scheduler_t *s = core;
    stats_lock(s);
    fn(&s->stats, ud);
    stats_unlock(s);
}

const sched_services_t sched_services = {
    .name = svc_name,
    .opts = svc_opts,
    .fenced = svc_fenced,
    .api = svc_api,
    .node_visit = svc_node_visit,
    .nodes_visit = svc_nodes_visit,
    .nodes_frozen = svc_nodes_frozen,
    .stats = svc_stats,
};

void *sched_row_core(const sched_services_t *svc, void *core)
{
    (void)svc;
    return core;
}

void sched_rows_init(scheduler_t *s)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    s->rows = util_xcalloc((size_t)n, sizeof(*s->rows));
    s->nrows = n;
    s->view_rows = util_xcalloc((size_t)n, sizeof(*s->view_rows));
    for (int i = 0; i < n; i++) {
        s->rows[i] = (sched_row_t){ .svc = &sched_services, .core = s };
        if (ext[i].init)
            s->rows[i].self = ext[i].init(&sched_services, s);
        if (ext[i].node_view)
            s->view_rows[s->nview_rows++] = i;
    }
}

void sched_rows_fini(scheduler_t *s)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].fini)
            ext[i].fini(s->rows[i].self);
    free(s->rows);
    free(s->view_rows);
    s->rows = NULL;
    s->view_rows = NULL;
    s->nrows = s->nview_rows = 0;
}

const sched_row_t *sched_row(scheduler_t *s, const char *name)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (strcmp(ext[i].name, name) == 0)
            return &s->rows[i];
    return NULL;
}

void sched_rows_pod_deleted(scheduler_t *s, const pod_t *pod)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].pod_deleted)
            ext[i].pod_deleted(&s->rows[i], pod);
}

void sched_rows_tick(sched_pool_t *P)
{
    scheduler_t *s = P->s;
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].tick)
            ext[i].tick(&s->rows[i], P);
}

void sched_rows_post_bind(scheduler_t *s, const pod_t *pod, const char *node, const char *lender)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].post_bind)
            ext[i].post_bind(&s->rows[i], pod, node, lender);
}

int sched_rows_each_watch(scheduler_t *s, int (*fn)(void *ud, void *self, const sched_watch_t *w, informer_t *inf),
                          void *ud)
{
    int n = 0, k = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < n && i < s->nrows; i++)
        for (const sched_watch_t *w = ext[i].watches; w && w->kind; w++, k++) {
            int rc = fn(ud, s->rows[i].self, w, k < s->nrow_infs ? s->row_infs[k] : NULL);
            if (rc)
                return rc;
        }
    return 0;
}

static int count_watch(void *ud, void *self, const sched_watch_t *w, informer_t *inf)
{
    (void)self;
    (void)w;
    (void)inf;
    ++*(int *)ud;
    return 0;
}

typedef struct watch_build {
    scheduler_t *s;
    informer_t **infs;
    int n;
} watch_build_t;

static int new_watch(void *ud, void *self, const sched_watch_t *w, informer_t *inf)
{
    (void)inf;
    watch_build_t *b = ud;
    b->infs[b->n++] = informer_new(b->s->kc, w->path, NULL, w->on_event, self);
    return 0;
}

void sched_rows_watch(scheduler_t *s)
{
    int n = 0;
    sched_rows_each_watch(s, count_watch, &n);
    watch_build_t b = { s, util_xcalloc((size_t)(n ? n : 1), sizeof(informer_t *)), 0 };
    sched_rows_each_watch(s, new_watch, &b);
    s->row_infs = b.infs;
    s->nrow_infs = b.n;
}

typedef struct watch_find {
    const char *kind;
    informer_t *inf;
} watch_find_t;

static int find_watch(void *ud, void *self, const sched_watch_t *w, informer_t *inf)
{
    (void)self;
    watch_find_t *f = ud;
    if (strcmp(w->kind, f->kind) != 0)
        return 0;
    f->inf = inf;
    return 1;
}

informer_t *sched_row_informer(scheduler_t *s, const char *kind)
{
    watch_find_t f = { kind, NULL };
    sched_rows_each_watch(s, find_watch, &f);
    return f.inf;
}
