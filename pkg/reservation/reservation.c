/* reservation.c -- reservation for large gangs: the pure rules
 * (reservation.h), apart from the row's state (row.c) so they are tested
 * alone (test_reservation). */
#include <stdlib.h>
#include <string.h>

#include "reservation/reservation.h"

int64_t resv_pod_runtime(const pod_t *p)
{
    if (p->expected_runtime_ms > 0)
        return p->expected_runtime_ms;
    if (p->lifetime_s > 0)
        return p->lifetime_s * 1000;
    return -1;
}

int64_t resv_pod_done(const pod_t *p)
{
    int64_t rt = resv_pod_runtime(p);
    return rt > 0 ? p->started_ms + rt : -1;
}

int resv_may_backfill(const pod_t *pod, int64_t now, int64_t expect_ms, int32_t gang_prio, int preempts)
{
    /* The room is held against work the gang outranks, never against a pod
     * that outranks it: such a pod would take (or preempt) the room were
     * the gang placed, so it takes the held room now too. */
    if (pod->priority > gang_prio)
        return 1;
    if (preempts && pod->priority < gang_prio)
        return 1;
    int64_t rt = resv_pod_runtime(pod);
    return rt > 0 && now + rt <= expect_ms;
}

static int cand_cmp(const void *a, const void *b)
{
    const resv_cand_t *x = a, *y = b;
    int dx = x->domain != NULL, dy = y->domain != NULL;
    if (dx != dy)
        return dx - dy;
    if (dx) {
        int c = strcmp(x->domain, y->domain);
        if (c)
            return c;
    }
    if (x->done_ms != y->done_ms)
        return x->done_ms < y->done_ms ? -1 : 1;
    if (x->free != y->free)
        return x->free > y->free ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int same_domain(const resv_cand_t *a, const resv_cand_t *b)
{
    if (!a->domain || !b->domain)
        return a->domain == b->domain;
    return strcmp(a->domain, b->domain) == 0;
}

int resv_choose(resv_cand_t *c, int n, int64_t want, int64_t now, int *out, int64_t *expect_ms, double *lost)
{
    qsort(c, (size_t)n, sizeof(*c), cand_cmp);
    int best = -1, best_n = 0;
    double best_lost = 0;
    int64_t best_d = 0;
    for (int lo = 0; lo < n;) {
        int hi = lo;
        while (hi < n && same_domain(&c[lo], &c[hi]))
            hi++;
        /* Soonest free first, so the prefix that covers want is also the
         * one that completes earliest with the fewest nodes of that kind. */
        int64_t sum = 0, d = now;
        int k = lo;
        for (; k < hi && sum < want; k++) {
            sum += c[k].alloc;
            if (c[k].done_ms > d)
                d = c[k].done_ms;
        }
        if (sum >= want && want > 0) {
            double l = (double)want * (double)(d - now); /* the gang's own wait */
            for (int i = lo; i < k; i++) {
                int64_t done = c[i].done_ms > now ? c[i].done_ms : now;
                l += (double)c[i].free * (double)(d - now) + (double)(c[i].alloc - c[i].free) * (double)(d - done);
            }
            if (best < 0 || l < best_lost || (l == best_lost && d < best_d)) {
                best = lo;
                best_n = k - lo;
                best_lost = l;
                best_d = d;
            }
        }
        lo = hi;
    }
    if (best < 0)
        return 0;
    for (int i = 0; i < best_n; i++)
        out[i] = best + i;
    *expect_ms = best_d;
    *lost = best_lost;
    return best_n;
}
