/* dashlist.c -- the dashboard's list rules (framework/dashlist.h). */
#include <string.h>

#include "framework/dashlist.h"
#include "util/util.h"

static int contains(const char *ns, const char *name, const char *q)
{
    if (!q || !q[0])
        return 1;
    if (strstr(ns, q) || strstr(name, q))
        return 1;
    size_t nl = strlen(ns);
    char buf[512];
    if (nl + strlen(name) + 2 > sizeof buf)
        return 0;
    memcpy(buf, ns, nl);
    buf[nl] = '/';
    strcpy(buf + nl + 1, name);
    return strstr(buf, q) != NULL;
}

int dash_row_passes(const dash_list_opts_t *o, const char *pool, const char *queue, const char *ns, const char *name)
{
    if ((o->pool && strcmp(o->pool, pool) != 0) || (o->queue && strcmp(o->queue, queue) != 0))
        return 0;
    return contains(ns, name, o->q);
}

void dash_clamp_page(const dash_list_opts_t *o, int total, int *off, int *lim)
{
    *lim = o->limit <= 0 ? DASH_LIMIT_DEFAULT : o->limit > DASH_LIMIT_MAX ? DASH_LIMIT_MAX : o->limit;
    *off = o->offset < 0 ? 0 : o->offset > total ? total : o->offset;
}

json_t *dash_page_doc(int total, int off, int lim, json_t *items)
{
    return json_pack("{s:i, s:i, s:i, s:o}", "total", total, "offset", off, "limit", lim, "items", items);
}

int dash_cmp_keys(int64_t wa, int64_t wb, const char *qa, const char *qb, const char *pa, const char *pb,
                  const char *na, const char *nb, const char *ma, const char *mb, const dash_sort_ctx_t *c)
{
    int r = 0;
    switch (c->sort) {
    case DASH_SORT_WAIT: r = wa < wb ? -1 : wa > wb; break;
    case DASH_SORT_QUEUE: r = strcmp(qa, qb); break;
    case DASH_SORT_POOL: r = strcmp(pa, pb); break;
    case DASH_SORT_NAME: break;
    }
    if (c->desc)
        r = -r;
    if (r)
        return r;
    r = strcmp(na, nb);
    if (c->sort == DASH_SORT_NAME && c->desc)
        r = -r;
    if (r)
        return r;
    r = strcmp(ma, mb);
    return c->sort == DASH_SORT_NAME && c->desc ? -r : r;
}

char *dash_record_reason(json_t *rec, int *has)
{
    *has = rec != NULL;
    char *out = NULL;
    if (rec) {
        const char *h = json_string_value(json_object_get(rec, "hint"));
        const char *m = json_string_value(json_object_get(rec, "message"));
        if (h && h[0])
            out = util_strdup(h);
        else if (m && m[0])
            out = util_strdup(m);
        json_decref(rec);
    }
    return out;
}
