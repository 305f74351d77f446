/* minruntime.c -- minimum runtime and the freezing window: how long a
 * running pod is safe from priority preemption or reclaim, and the note
 * (with the time to retry) a pod gets that waits only for such pods. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"

static const char *const kind_field[2] = { "preemptMinRuntime", "reclaimMinRuntime" };

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

/* The pool default, read under pools_mu as pools_flags reads the flags. */
static int64_t pool_default(scheduler_t *s, int pool_id, int kind, char *name, size_t len)
{
    int64_t v = 0;
    pools_lock(s);
    if (pool_id >= 0 && pool_id < s->npools && s->pools[pool_id] && !s->pools[pool_id]->dead) {
        const pool_spec_t *sp = &s->pools[pool_id]->spec;
        v = kind == FS_MINRT_RECLAIM ? sp->reclaim_min_runtime_ms : sp->preempt_min_runtime_ms;
        snprintf(name, len, "%s", s->pools[pool_id]->name);
    }
    pools_unlock(s);
    return v;
}

int64_t minrt_applicable(scheduler_t *s, const pod_t *p, int kind, char *src, size_t srclen)
{
    char pool[256] = "";
    char d[32];
    int64_t pd = pool_default(s, pools_home_id(s, p), kind, pool, sizeof(pool));
    char *from = NULL;
    int64_t v = s->queues.ops->min_runtime(s->queues.self, sched_pod_tenant(s, p), kind, pd, &from);
    minrt_format_duration(v, d, sizeof(d));
    if (from)
        snprintf(src, srclen, "queue \"%s\": %s %s", from, kind_field[kind], d);
    else
        snprintf(src, srclen, "pool \"%s\": %s %s", pool, kind_field[kind], d);
    free(from);
    /* The pod may ask for less, never more; its "-1" is no request (types.h). */
    int64_t a = kind == FS_MINRT_RECLAIM ? p->reclaim_min_runtime_ms : p->preempt_min_runtime_ms;
    if (a >= 0 && (v < 0 || a < v)) {
        v = a;
        minrt_format_duration(v, d, sizeof(d));
        snprintf(src, srclen, "annotation %s: %s",
                 kind == FS_MINRT_RECLAIM ? RECLAIM_MIN_RUNTIME_ANNOTATION : PREEMPT_MIN_RUNTIME_ANNOTATION, d);
    }
    return v;
}

/* The freezing window's end for a surplus member of an elastic gang, or 0. */
static int64_t frozen_until(scheduler_t *s, const pod_t *p, int64_t now_wall, char *src, size_t srclen)
{
    if (!gang_of(p) || gang_member_class(s->gangs, p) != GANG_MEMBER_SURPLUS)
        return 0;
    int64_t end = minrt_freeze_end(s, p->ns, gang_of(p), p, src, srclen);
    return end > now_wall ? end : 0;
}

int64_t minrt_freeze_end(scheduler_t *s, const char *ns, const char *group, const pod_t *member, char *src,
                         size_t srclen)
{
    int64_t win = DURATION_UNSET;
    int64_t start = gang_resize_start(s->gangs, ns, group, &win);
    if (start == 0)
        return 0;
    char d[32];
    if (win < 0) { /* unset or malformed (said once by the gang row): the queue's reclaim minimum */
        char qsrc[300];
        pod_t q = *member;
        q.reclaim_min_runtime_ms = DURATION_UNSET; /* the queue's, not one pod's */
        win = minrt_applicable(s, &q, FS_MINRT_RECLAIM, qsrc, sizeof(qsrc));
        if (win <= 0)
            return 0; /* "-1" protects pods, it does not freeze a gang forever */
        minrt_format_duration(win, d, sizeof(d));
        snprintf(src, srclen, "pod group %s/%s: freezing window %s (the %s)", ns, group, d, qsrc);
    } else {
        minrt_format_duration(win, d, sizeof(d));
        snprintf(src, srclen, "pod group %s/%s: " GANG_FREEZING_WINDOW_ANNOTATION " %s", ns, group, d);
    }
    return start + win;
}

int64_t minrt_protected_until(scheduler_t *s, const pod_t *p, int kind, int64_t now_wall, char *src, size_t srclen)
{
    src[0] = '\0';
    /* Past its lifetime a pod became preemptible: the minimum protects the young only. */
    if (p->lifetime_s > 0 && p->started_ms > 0 && now_wall - p->started_ms >= p->lifetime_s * 1000)
        return 0;
    int64_t frozen = frozen_until(s, p, now_wall, src, srclen);
    if (frozen)
        return frozen;
    /* Nothing configured: a pod's annotation only lowers, so no minimum
     * (and no lock taken, no string made, per candidate victim). */
    if (!__atomic_load_n(&s->minrt_pools, __ATOMIC_ACQUIRE) && !s->queues.ops->any_min_runtime(s->queues.self))
        return 0;
    int64_t min = minrt_applicable(s, p, kind, src, srclen);
    if (min == 0)
        return 0;
    if (min < 0)
        return -1;
    int64_t start = gang_of(p) ? gang_last_start(s->gangs, p) : p->started_ms;
    if (start <= 0)
        start = now_wall; /* no start known: it has just started */
    return start + min > now_wall ? start + min : 0;
}

/* ------------------------------------------------------------ the note */

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

int minrt_check(scheduler_t *s, const pod_t *p, int kind, int64_t now_wall, minrt_note_t *note)
{
    char src[300];
    int64_t until = minrt_protected_until(s, p, kind, now_wall, src, sizeof(src));
    if (until == 0)
        return 0;
    minrt_note_add(note, p, until, src);
    return 1;
}

void minrt_note_to_set(pod_set_t *set, const minrt_note_t *n)
{
    char *text = minrt_note_text(n);
    if (!text)
        return;
    free(set->wait_note);
    set->wait_note = text;
    if (n->until > 0 && (!set->wake_wall_ms || n->until < set->wake_wall_ms))
        set->wake_wall_ms = n->until;
}

void minrt_victims_taken(scheduler_t *s, pod_t *const *victims, int n)
{
    int64_t now = util_wall_ms();
    for (int i = 0; i < n; i++)
        if (gang_of(victims[i]) && gang_member_class(s->gangs, victims[i]) == GANG_MEMBER_SURPLUS)
            gang_resized(s->gangs, victims[i]->ns, gang_of(victims[i]), now);
}
