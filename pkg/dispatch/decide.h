/* decide.h -- OpenPAI's first-available-cluster rule with priorities, as a
 * pure function of what has been observed (design 003):
 *
 *  - a member wins when it has been Running for the guard time without a
 *    break; the first to do so (the earliest to enter Running; on a tie the
 *    higher priority, then the first listed) becomes the winner at that
 *    moment T;
 *  - every other member of priority <= the winner's is cancelled at once;
 *  - a member j of higher priority keeps until T + (p_j - p_w) * timeScale:
 *    if it wins its own guard time by then it becomes the winner (at its win
 *    time, and the rule is applied again from there), else it is cancelled.
 *
 * Times are seconds on any one clock (the controller uses wall time, so a
 * restarted controller continues from .status). */
#ifndef AISCHED_DISPATCH_DECIDE_H
#define AISCHED_DISPATCH_DECIDE_H

typedef struct dsp_member {
    int priority;         /* 0..100 */
    int in_race;          /* 0: failed, cancelled or invalid: never wins, never cancelled again */
    double running_since; /* < 0: not Running now */
} dsp_member_t;

typedef struct dsp_decision {
    int winner;        /* index, or -1 */
    double decided_at; /* the winner's win time (runningSince + guard) */
    int final;         /* a winner and no member left that could still take over */
    double next_wake;  /* when the outcome can change without new observations; < 0: never */
} dsp_decision_t;

/* m[n]: the members. prev_winner/prev_at: the last decision (-1 / ignored
 * when none; a previous winner that is no longer in the race is dropped).
 * cancel[n] is set to 1 for each member to cancel now (in-race members only;
 * a replaced winner included). */
void dsp_decide(const dsp_member_t *m, int n, int prev_winner, double prev_at, double guard, double time_scale,
                double now, int *cancel, dsp_decision_t *out);

/* The window a higher-priority member keeps against a winner decided at t:
 * t + (p_member - p_winner) * time_scale. */
double dsp_deadline(int p_member, int p_winner, double t, double time_scale);

#endif
