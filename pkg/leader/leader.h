/* leader.h -- leader election on a coordination.k8s.io/v1 Lease, as
 * client-go's leaderelection does it for kube-scheduler.
 *
 * One thread per elector. As a follower it tries every retry period (with
 * jitter) to take the lease: creates it when absent, takes it when its
 * holder is empty or it expired (renewTime + leaseDurationSeconds in the
 * past, or the record did not change for a lease duration as seen from
 * here, which tolerates clock skew). As the leader it renews every retry
 * period. Updates are PUTs carrying the read resourceVersion, so a 409 means
 * someone else wrote first. Leadership is lost when renewing has not
 * succeeded for renew_deadline_s or another holder is seen; the elector then
 * stops for good (the scheduler is expected to exit, like kube-scheduler).
 *
 *   leader_t *le = leader_new(kc, &opts, err, sizeof err);
 *   leader_start(le, err, sizeof err);
 *   if (leader_wait_until_leading(le, -1, &stop) == 1) run();
 *   leader_stop(le);           -- releases the lease if held
 *   leader_free(le);
 *
 * Ownership: opts strings are copied; kc is borrowed and must outlive the
 * elector (until leader_stop/leader_free return). Give the elector a client
 * of its own with a request timeout well under the lease duration, so
 * renewals never queue behind the scheduler's requests. */
#ifndef AISCHED_LEADER_H
#define AISCHED_LEADER_H

#include <stddef.h>
#include "kube/client.h"

typedef struct leader leader_t;

/* Called from the election thread, without locks held. */
typedef void (*leader_cb)(void *ud);

typedef struct leader_opts {
    const char *lease_name;      /* "ai-scheduler" */
    const char *lease_namespace; /* "kube-system" */
    const char *identity;        /* unique per replica: "<hostname>_<pid>" */
    int lease_duration_s;        /* 15 */
    int renew_deadline_s;        /* 10 */
    int retry_period_s;          /* 2 */
    leader_cb on_started;        /* became leader; runs before leader_is_leader() turns true (optional) */
    leader_cb on_lost;           /* lost leadership; not called by leader_stop (optional) */
    void *ud;
} leader_opts_t;

/* Checks the options (names set, lease > renew > retry > 0). NULL + err. */
leader_t *leader_new(kube_client_t *kc, const leader_opts_t *o, char *err, size_t errlen);
/* Starts the election thread. 0, or -1 + err. Only once. */
int leader_start(leader_t *le, char *err, size_t errlen);
/* Blocks until leading (1), timeout_ms passed (0; -1 waits forever), *stop
 * became nonzero (0; checked every 100ms; stop may be NULL), or leadership
 * was lost / the elector stopped (-1). */
int leader_wait_until_leading(leader_t *le, int timeout_ms, const volatile int *stop);
int leader_is_leader(leader_t *le);
/* Fencing: nonzero while leading and the last successful renewal started
 * less than renew_deadline_s ago (monotonic clock). Unlike
 * leader_is_leader it turns false by itself when the election thread is
 * late, e.g. after the process was stopped (SIGSTOP) past its lease: check
 * it before every decision and write. */
int leader_holds_lease(leader_t *le);
/* Nonzero once leadership was lost (renew deadline passed or taken over). */
int leader_lost(leader_t *le);
/* The holder last seen on the lease ("" when none); for logs and /readyz. */
void leader_holder(leader_t *le, char *buf, size_t n);
/* Stops the thread (waits for an in-flight request) and, when leading,
 * releases the lease (empty holder, leaseDurationSeconds 1) so a follower
 * takes over at its next retry. Idempotent. */
void leader_stop(leader_t *le);
/* Stops if needed and frees. NULL is fine. */
void leader_free(leader_t *le);

#endif
