/* dashlist.h -- the dashboard's list rules (filters, paging, sort keys,
 * a decision record's reason), shared by the core's pages
 * (scheduler/dashboard.c) and the pages a row serves (gang/dash.c) so that
 * every list of the dashboard filters, sorts and pages alike. Pure. */
#ifndef AISCHED_FRAMEWORK_DASHLIST_H
#define AISCHED_FRAMEWORK_DASHLIST_H

#include <jansson.h>
#include <stdint.h>

typedef enum { DASH_SORT_WAIT = 0, DASH_SORT_NAME, DASH_SORT_QUEUE, DASH_SORT_POOL } dash_sort_t;

#define DASH_LIMIT_DEFAULT 100
#define DASH_LIMIT_MAX     500

typedef struct dash_list_opts {
    int offset, limit; /* limit 1..DASH_LIMIT_MAX */
    dash_sort_t sort;
    int desc;          /* sort order; ties always by namespace/name ascending */
    const char *queue; /* exact queue, NULL: any */
    const char *pool;  /* exact pool, NULL: any */
    const char *q;     /* substring of "namespace/name", NULL: any */
} dash_list_opts_t;

/* A list's order: o's sort key and direction; now (wall ms) for waits. */
typedef struct dash_sort_ctx {
    dash_sort_t sort;
    int desc;
    int64_t now;
} dash_sort_ctx_t;

/* A row passes o's filters: its pool and queue exactly, o->q within
 * "namespace/name". */
int dash_row_passes(const dash_list_opts_t *o, const char *pool, const char *queue, const char *ns, const char *name);
/* The page of total rows o asks for: *off and *lim. */
void dash_clamp_page(const dash_list_opts_t *o, int total, int *off, int *lim);
/* {"total","offset","limit","items"} (items taken). */
json_t *dash_page_doc(int total, int off, int lim, json_t *items);
/* Two rows in c's order: wait w, queue q, pool p, then namespace n and
 * name m (ties always ascending unless the order is by name). */
int dash_cmp_keys(int64_t wa, int64_t wb, const char *qa, const char *qb, const char *pa, const char *pb,
                  const char *na, const char *nb, const char *ma, const char *mb, const dash_sort_ctx_t *c);
/* The reason a decision record rec gives (taken; NULL: none): its hint,
 * else its message (caller frees; NULL when neither). *has: rec was one. */
char *dash_record_reason(json_t *rec, int *has);

#endif
