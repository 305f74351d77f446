/* ratelimit.c -- token bucket for the client's qps/burst. */
#include "kube/ratelimit.h"

void kube_rl_init(kube_ratelimit_t *rl, double qps, int burst, int64_t now_us)
{
    pthread_mutex_init(&rl->mu, NULL);
    rl->qps = qps;
    rl->burst = burst >= 1 ? burst : 1;
    rl->tokens = rl->burst;
    rl->last_us = now_us;
}

void kube_rl_destroy(kube_ratelimit_t *rl)
{
    pthread_mutex_destroy(&rl->mu);
}

/* Reservation style: the token is taken now even when the bucket is empty,
 * so concurrent callers queue up at 1/qps intervals instead of all waking
 * at once and racing for the same token. */
int64_t kube_rl_reserve(kube_ratelimit_t *rl, int64_t now_us)
{
    if (rl->qps <= 0)
        return 0;
    pthread_mutex_lock(&rl->mu);
    if (now_us > rl->last_us) {
        rl->tokens += (double)(now_us - rl->last_us) * rl->qps / 1e6;
        if (rl->tokens > rl->burst)
            rl->tokens = rl->burst;
        rl->last_us = now_us;
    }
    rl->tokens -= 1.0;
    int64_t wait = rl->tokens >= 0 ? 0 : (int64_t)(-rl->tokens / rl->qps * 1e6 + 0.5);
    pthread_mutex_unlock(&rl->mu);
    return wait;
}
