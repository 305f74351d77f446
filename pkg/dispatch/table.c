/* table.c -- the rows of `ai-scheduler mcjob get`: each MultiClusterJob's
 * phase, winner, wait and clusters. */
#include "dispatch/table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static void fmt_dur(int64_t ms, char *buf, size_t n)
{
    if (ms < 0)
        ms = 0;
    int64_t s = ms / 1000;
    if (s < 120)
        snprintf(buf, n, "%llds", (long long)s);
    else if (s < 7200)
        snprintf(buf, n, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
    else
        snprintf(buf, n, "%lldh%lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
}

static const char *str_or(json_t *v, const char *d)
{
    const char *s = json_string_value(v);
    return s && *s ? s : d;
}

/* How long the job waited: until its winner won, else until now. */
static void waited(json_t *job, int64_t now_ms, char *buf, size_t n)
{
    json_t *meta = json_object_get(job, "metadata"), *st = json_object_get(job, "status");
    int64_t created = util_parse_rfc3339(json_string_value(json_object_get(meta, "creationTimestamp")));
    if (created <= 0) {
        snprintf(buf, n, "-");
        return;
    }
    const char *winner = json_string_value(json_object_get(st, "winner"));
    int64_t end = now_ms;
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(st, "clusters"), i, c) {
        const char *nm = json_string_value(json_object_get(c, "name"));
        int64_t won = util_parse_rfc3339(json_string_value(json_object_get(c, "wonAt")));
        if (winner && nm && strcmp(nm, winner) == 0 && won > 0)
            end = won;
    }
    fmt_dur(end - created, buf, n);
}

static void clusters_cell(json_t *job, sbuf_t *b)
{
    json_t *st = json_object_get(job, "status");
    json_t *cl = json_object_get(st, "clusters");
    size_t i;
    json_t *c;
    if (json_array_size(cl) == 0) {
        /* not reconciled yet: the spec's list */
        json_array_foreach (json_object_get(json_object_get(job, "spec"), "clusters"), i, c)
            sbuf_printf(b, "%s%s=-", i ? "," : "", str_or(json_object_get(c, "name"), "?"));
        if (!b->len)
            sbuf_puts(b, "-");
        return;
    }
    json_array_foreach (cl, i, c)
        sbuf_printf(b, "%s%s(%lld)=%s", i ? "," : "", str_or(json_object_get(c, "name"), "?"),
                    (long long)json_integer_value(json_object_get(c, "priority")),
                    str_or(json_object_get(c, "state"), "?"));
}

char **dsp_table_cells(json_t *items, int64_t now_ms)
{
    size_t n = json_array_size(items);
    char **cells = util_xcalloc(n * DSP_TABLE_COLS + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        json_t *j = json_array_get(items, i), *meta = json_object_get(j, "metadata"),
               *st = json_object_get(j, "status");
        char **row = cells + i * DSP_TABLE_COLS, wt[32];
        row[0] = util_strdup(str_or(json_object_get(meta, "namespace"), "-"));
        row[1] = util_strdup(str_or(json_object_get(meta, "name"), "?"));
        row[2] = util_strdup(
            json_object_get(meta, "deletionTimestamp") ? "Deleting" : str_or(json_object_get(st, "phase"), "Pending"));
        row[3] = util_strdup(str_or(json_object_get(st, "winner"), "-"));
        waited(j, now_ms, wt, sizeof wt);
        row[4] = util_strdup(wt);
        sbuf_t b = { 0 };
        clusters_cell(j, &b);
        row[5] = b.data ? b.data : util_strdup("-");
    }
    return cells;
}
