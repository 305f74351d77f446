/* row.c -- the minimum-runtime row (extension.h): a running pod younger
 * than its applicable minimum, or an elastic gang's surplus inside its
 * freezing window, is kept from being a victim of the kind its rule
 * decided, and noted; a set that waits only for such pods is told until
 * when and retried then. Pools, queues and gangs are asked through the
 * services; the row keeps nothing but the note in a set's slot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fairshare/fairshare.h"
#include "gang/gang.h"
#include "minruntime/row.h"
#include "util/util.h"

static const char *const kind_field[2] = { "preemptMinRuntime", "reclaimMinRuntime" };

int64_t minrt_applicable(const sched_row_t *row, const pod_t *p, int kind, char *src, size_t srclen)
{
    const sched_services_t *svc = row->svc;
    char pool[256] = "";
    char d[32];
    int64_t pd = svc->pool_min_runtime(row->core, svc->home_pool(row->core, p), kind, pool, sizeof(pool));
    char *from = NULL;
    int64_t v = svc->queue_min_runtime(row->core, svc->tenant_of(row->core, p), kind, pd, &from);
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

int64_t minrt_freeze_end(const sched_row_t *row, const char *ns, const char *group, const pod_t *member, char *src,
                         size_t srclen)
{
    int64_t win = DURATION_UNSET;
    int64_t start = row->svc->gang_resize_start(row->core, ns, group, &win);
    if (start == 0)
        return 0;
    char d[32];
    if (win < 0) { /* unset or malformed (said once by the gang row): the queue's reclaim minimum */
        char qsrc[300];
        pod_t q = *member;
        q.reclaim_min_runtime_ms = DURATION_UNSET; /* the queue's, not one pod's */
        win = minrt_applicable(row, &q, FS_MINRT_RECLAIM, qsrc, sizeof(qsrc));
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

/* The freezing window's end for a surplus member of an elastic gang, or 0. */
static int64_t frozen_until(const sched_row_t *row, const pod_t *p, int64_t now_wall, char *src, size_t srclen)
{
    if (!gang_of(p) || row->svc->gang_member_class(row->core, p) != GANG_MEMBER_SURPLUS)
        return 0;
    int64_t end = minrt_freeze_end(row, p->ns, gang_of(p), p, src, srclen);
    return end > now_wall ? end : 0;
}

int64_t minrt_protected_until(const sched_row_t *row, const pod_t *p, int kind, int64_t now_wall, char *src,
                              size_t srclen)
{
    const sched_services_t *svc = row->svc;
    src[0] = '\0';
    /* Past its lifetime a pod became preemptible: the minimum protects the young only. */
    if (p->lifetime_s > 0 && p->started_ms > 0 && now_wall - p->started_ms >= p->lifetime_s * 1000)
        return 0;
    int64_t frozen = frozen_until(row, p, now_wall, src, srclen);
    if (frozen)
        return frozen;
    /* Nothing configured: a pod's annotation only lowers, so no minimum
     * (and no lock taken, no string made, per candidate victim). */
    if (!svc->any_pool_min_runtime(row->core) && !svc->any_queue_min_runtime(row->core))
        return 0;
    int64_t min = minrt_applicable(row, p, kind, src, srclen);
    if (min == 0)
        return 0;
    if (min < 0)
        return -1;
    int64_t start = gang_of(p) ? svc->gang_last_start(row->core, p) : p->started_ms;
    if (start <= 0)
        start = now_wall; /* no start known: it has just started */
    return start + min > now_wall ? start + min : 0;
}

void minrt_row_publish(const sched_row_t *row, sched_published_t *pub)
{
    pub->freeze_end = minrt_freeze_end;
    pub->freeze_row = row;
}

/* The set's note, made on demand in the row's slot (freed by kept or end). */
static minrt_note_t *set_note(const sched_row_t *row, pod_set_t *set)
{
    if (!set->slot[row->index])
        set->slot[row->index] = util_xcalloc(1, sizeof(minrt_note_t));
    return set->slot[row->index];
}

int minrt_row_protect(const sched_row_t *row, const sched_victim_q_t *q, int kind)
{
    char src[300];
    int64_t now = q->now_wall ? q->now_wall : util_wall_ms();
    int64_t until = minrt_protected_until(row, q->victim, kind, now, src, sizeof(src));
    if (until == 0)
        return 0;
    if (q->set)
        minrt_note_add(set_note(row, q->set), q->victim, until, src);
    return 1;
}

/* The set waits for the note: its text is said after why, and the set is
 * retried at the earliest time (set->wait_note, set->wake_wall_ms). */
static void note_to_set(pod_set_t *set, const minrt_note_t *n)
{
    char *text = minrt_note_text(n);
    if (!text)
        return;
    free(set->wait_note);
    set->wait_note = text;
    if (n->until > 0 && (!set->wake_wall_ms || n->until < set->wake_wall_ms))
        set->wake_wall_ms = n->until;
}

void minrt_row_end(const sched_row_t *row, pod_set_t *set)
{
    minrt_note_t *n = set->slot[row->index];
    if (!n)
        return;
    minrt_note_clear(n);
    free(n);
    set->slot[row->index] = NULL;
}

void minrt_row_kept(const sched_row_t *row, pod_set_t *set, int made, char **text)
{
    minrt_note_t *n = set->slot[row->index];
    if (!n)
        return;
    if (!made)
        note_to_set(set, n);
    if (text && !*text)
        *text = minrt_note_text(n);
    minrt_row_end(row, set);
}

void minrt_row_victims_taken(const sched_row_t *row, pod_t *const *victims, int n)
{
    int64_t now = util_wall_ms();
    for (int i = 0; i < n; i++)
        if (gang_of(victims[i]) && row->svc->gang_member_class(row->core, victims[i]) == GANG_MEMBER_SURPLUS)
            row->svc->gang_resized(row->core, victims[i]->ns, gang_of(victims[i]), now);
}
