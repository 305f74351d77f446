/* minruntime.c -- the minimum runtime's note of the pods it kept from
 * being victims (with the time to retry), and durations as specs say them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minruntime/minruntime.h"
#include "util/util.h"

void minrt_format_duration(int64_t ms, char *out, size_t len)
{
    if (ms < 0)
        snprintf(out, len, "-1");
    else if (ms == 0)
        snprintf(out, len, "0");
    else if (ms % 3600000 == 0)
        snprintf(out, len, "%lldh", (long long)(ms / 3600000));
    else if (ms % 60000 == 0)
        snprintf(out, len, "%lldm", (long long)(ms / 60000));
    else if (ms % 1000 == 0)
        snprintf(out, len, "%llds", (long long)(ms / 1000));
    else
        snprintf(out, len, "%lldms", (long long)ms);
}

void minrt_note_add(minrt_note_t *n, const pod_t *p, int64_t until, const char *src)
{
    if (!n)
        return;
    for (int i = 0; i < n->n; i++)
        if (strcmp(n->uids[i], p->uid) == 0)
            return;
    if (n->n == n->cap) {
        n->cap = n->cap ? n->cap * 2 : 8;
        n->uids = util_xrealloc(n->uids, (size_t)n->cap * sizeof(*n->uids));
    }
    n->uids[n->n++] = util_strdup(p->uid);
    if (until < 0) {
        n->never++;
        if (!n->until)
            snprintf(n->src, sizeof(n->src), "%s", src);
    } else if (!n->until || until < n->until) {
        n->until = until;
        snprintf(n->src, sizeof(n->src), "%s", src);
    }
}

char *minrt_note_text(const minrt_note_t *n)
{
    if (!n || n->n == 0)
        return NULL;
    sbuf_t b = { 0 };
    int timed = n->n - n->never;
    if (timed > 0) {
        char t[40];
        util_rfc3339(n->until, t, sizeof(t));
        sbuf_printf(&b, "preemption: %d pod%s that could make room %s protected by a minimum runtime until %s (%s)",
                    n->n, n->n == 1 ? "" : "s", n->n == 1 ? "is" : "are", t, n->src);
        if (n->never)
            sbuf_printf(&b, ", %d of them never", n->never);
    } else {
        sbuf_printf(&b, "preemption: %d pod%s that could make room %s never preempted (%s)", n->n, n->n == 1 ? "" : "s",
                    n->n == 1 ? "is" : "are", n->src);
    }
    return b.data;
}

void minrt_note_clear(minrt_note_t *n)
{
    for (int i = 0; i < n->n; i++)
        free(n->uids[i]);
    free(n->uids);
    memset(n, 0, sizeof(*n));
}
