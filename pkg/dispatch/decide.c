/* decide.c -- the first-available-cluster decision (see decide.h). */
#include "dispatch/decide.h"

double dsp_deadline(int p_member, int p_winner, double t, double time_scale)
{
    return t + (double)(p_member - p_winner) * time_scale;
}

static double win_time(const dsp_member_t *m, double guard)
{
    return m->running_since < 0 ? -1 : m->running_since + guard;
}

/* a before b: the earlier win, then the higher priority, then the first
 * listed (a < b by index when the caller scans in order). */
static int earlier(const dsp_member_t *a, const dsp_member_t *b, double guard)
{
    double wa = win_time(a, guard), wb = win_time(b, guard);
    if (wa != wb)
        return wa < wb;
    return a->priority > b->priority;
}

static void wake_at(dsp_decision_t *d, double t)
{
    if (t >= 0 && (d->next_wake < 0 || t < d->next_wake))
        d->next_wake = t;
}

void dsp_decide(const dsp_member_t *m, int n, int prev_winner, double prev_at, double guard, double time_scale,
                double now, int *cancel, dsp_decision_t *out)
{
    for (int i = 0; i < n; i++)
        cancel[i] = 0;
    out->winner = -1;
    out->decided_at = 0;
    out->final = 0;
    out->next_wake = -1;
    int w = (prev_winner >= 0 && prev_winner < n && m[prev_winner].in_race) ? prev_winner : -1;
    double t = prev_at;
    if (w < 0) {
        for (int i = 0; i < n; i++) {
            double wi = win_time(&m[i], guard);
            if (!m[i].in_race || wi < 0)
                continue;
            if (wi > now) {
                wake_at(out, wi);
                continue;
            }
            if (w < 0 || earlier(&m[i], &m[w], guard))
                w = i;
        }
        if (w < 0)
            return;
        t = win_time(&m[w], guard);
        out->next_wake = -1;
    }
    /* higher-priority members that won within their window take over */
    for (;;) {
        int c = -1;
        for (int j = 0; j < n; j++) {
            double wj = win_time(&m[j], guard);
            if (j == w || !m[j].in_race || m[j].priority <= m[w].priority || wj < 0 || wj > now)
                continue;
            if (wj > dsp_deadline(m[j].priority, m[w].priority, t, time_scale))
                continue;
            if (c < 0 || earlier(&m[j], &m[c], guard))
                c = j;
        }
        if (c < 0)
            break;
        cancel[w] = 1;
        double wc = win_time(&m[c], guard);
        t = wc > t ? wc : t;
        w = c;
    }
    int open = 0;
    for (int j = 0; j < n; j++) {
        if (j == w || !m[j].in_race || cancel[j])
            continue;
        if (m[j].priority <= m[w].priority) {
            cancel[j] = 1;
            continue;
        }
        double dl = dsp_deadline(m[j].priority, m[w].priority, t, time_scale);
        double wj = win_time(&m[j], guard);
        if (dl <= now) {
            cancel[j] = 1;
            continue;
        }
        open = 1;
        wake_at(out, dl);
        if (wj >= 0 && wj <= dl)
            wake_at(out, wj);
    }
    out->winner = w;
    out->decided_at = t;
    out->final = !open;
}
