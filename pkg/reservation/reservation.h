/* reservation.h -- reservation for large gangs: the pure rules (which nodes to
 * hold, when the held room is expected to be free, who may backfill onto
 * it), apart from the row's state in row.c so they can be tested
 * alone. Times are wall-clock milliseconds. */
#ifndef AISCHED_RESERVATION_H
#define AISCHED_RESERVATION_H

#include <stdint.h>

#include "api/types.h"

/* One node a reservation could hold, in units of the gang's main resource
 * (GPUs when its minimum asks for GPUs, else CPU millicores). */
typedef struct resv_cand {
    const char *name;
    const char *domain; /* topology domain value (NULL: no topology) */
    int64_t free;       /* free now */
    int64_t alloc;      /* allocatable: a held node is held whole */
    int64_t done_ms;    /* when what runs there is expected to finish */
} resv_cand_t;

/* When a running pod is expected to finish: started + its
 * expected-runtime, else started + its lifetime-seconds (past which the
 * gang may preempt it anyway); -1 when unknown. */
int64_t resv_pod_done(const pod_t *p);

/* How long a pending pod is expected to run (expected-runtime, else its
 * lifetime-seconds); -1 when unknown. */
int64_t resv_pod_runtime(const pod_t *p);

/* May pod (pending) be placed on room held for a gang of priority
 * gang_prio that is expected to start at expect_ms? Yes when its priority
 * is above the gang's (it outranks the gang: the room is not held against
 * it), when it will be done by then, or when the gang could evict it
 * (preempts: the pool allows preemption and the gang may preempt; pod's
 * priority below the gang's). */
int resv_may_backfill(const pod_t *pod, int64_t now, int64_t expect_ms, int32_t gang_prio, int preempts);

/* The nodes to hold for a minimum of want: per domain (all candidates are
 * one domain when their domain is NULL), the nodes soonest to be free, then
 * with most free, until their allocatable covers want; of the domains that
 * can, the one with least lost opportunity: resource-ms that do no work
 * while the gang waits, the held room sitting idle (sum over its nodes of
 * free * (D - now) + (alloc - free) * (D - done)) plus the gang's own
 * want * (D - now), D being the latest done of its nodes. Fills out[] with
 * indices into c (which it reorders: callers index the reordered array)
 * and returns their count, 0 when no domain can hold want; *expect_ms is D
 * (now when all is free), *lost the measure. */
int resv_choose(resv_cand_t *c, int n, int64_t want, int64_t now, int *out, int64_t *expect_ms, double *lost);

#endif
