/* ratelimit.h -- the client's token bucket (qps refill, burst capacity).
 * Shared by every thread of one client; callers sleep outside the lock.
 * Exposed for unit tests; time is passed in so tests are deterministic. */
#ifndef AISCHED_KUBE_RATELIMIT_H
#define AISCHED_KUBE_RATELIMIT_H

#include <pthread.h>
#include <stdint.h>

typedef struct kube_ratelimit {
    pthread_mutex_t mu;
    double qps;      /* <= 0: unlimited */
    double burst;    /* bucket capacity, >= 1 */
    double tokens;   /* may go negative: reservations not yet due */
    int64_t last_us; /* last refill */
} kube_ratelimit_t;

void kube_rl_init(kube_ratelimit_t *rl, double qps, int burst, int64_t now_us);
void kube_rl_destroy(kube_ratelimit_t *rl);
/* Takes one token; returns how many microseconds the caller must wait before
 * sending (0 when a token was available). */
int64_t kube_rl_reserve(kube_ratelimit_t *rl, int64_t now_us);

#endif
