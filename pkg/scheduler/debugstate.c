/* debugstate.c -- the scheduler's own view that a LIST of the API server
 * does not show: pods assumed (placed, bind in flight) and nominations
 * (room made by preemption, held for a preemptor). `whatif` lays it over a
 * LIST to get the leader's exact state; /debug/state serves it. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/util.h"

static void add_placed(void *ud, const pod_t *p, const char *node, int nominated)
{
    json_t **arr = ud;
    json_array_append_new(arr[nominated ? 1 : 0], json_pack("{s:s, s:s, s:s, s:s}", "uid", p->uid, "namespace", p->ns,
                                                            "name", p->name, "node", node));
}

static int cmp_pod(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c =
        strcmp(json_string_value(json_object_get(x, "namespace")), json_string_value(json_object_get(y, "namespace")));
    return c ? c : strcmp(json_string_value(json_object_get(x, "name")), json_string_value(json_object_get(y, "name")));
}

/* The array in namespace/name order: the same state reads the same. */
static json_t *sorted(json_t *arr)
{
    size_t n = json_array_size(arr);
    json_t **v = util_xcalloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(arr, i));
    qsort(v, n, sizeof *v, cmp_pod);
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, v[i]);
    free(v);
    json_decref(arr);
    return out;
}

json_t *scheduler_debug_state(scheduler_t *s)
{
    json_t *arr[2] = { json_array(), json_array() };
    cache_each_placed(s->cache, add_placed, arr);
    char ts[40];
    util_rfc3339_ms(util_wall_ms(), ts, sizeof ts);
    return json_pack("{s:s, s:s, s:s, s:o, s:o}", "kind", "SchedulerState", "scheduler", s->name, "takenAt", ts,
                     "assumed", sorted(arr[0]), "nominated", sorted(arr[1]));
}

int scheduler_debug_state_http(void *ud, const char *path, const char *query, char **body, const char **ctype)
{
    (void)query;
    *ctype = "application/json";
    if (strcmp(path, "/debug/state") != 0) {
        *body = util_strdup("{\"error\":\"not found\"}\n");
        return 404;
    }
    json_t *st = scheduler_debug_state(ud);
    char *txt = json_dumps(st, JSON_INDENT(2));
    json_decref(st);
    sbuf_t b = { 0 };
    sbuf_puts(&b, txt ? txt : "{}");
    sbuf_puts(&b, "\n");
    free(txt);
    *body = b.data;
    return 200;
}
