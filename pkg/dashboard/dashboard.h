/* dashboard.h -- the web dashboard's JSON routes (/api/v1/..., the
 * contract of issue 25) on the scheduler's HTTP server, and the queue
 * history they chart. The collectors are the scheduler's
 * (scheduler/dashboard.h); this module parses queries, answers followers
 * with the leader's name, adds "generation" and "now", and keeps history.
 *
 * Routes and what each asks of SubjectAccessReview (cluster-wide):
 *   /api/v1/info                authentication only
 *   /api/v1/overview            get resource.aibee.cn pools
 *   /api/v1/queues              get resource.aibee.cn pools
 *   /api/v1/queues/history      get resource.aibee.cn pools
 *   /api/v1/gangs               list scheduling.x-k8s.io podgroups
 *   /api/v1/pending             list "" pods
 *   /api/v1/nodes, /nodes/map   get resource.aibee.cn pools
 *   /api/v1/multicluster        list resource.aibee.cn multiclusterjobs
 *
 * History: every DASHBOARD_HISTORY_INTERVAL_MS the sampler (its own thread,
 * dashboard_start; or dashboard_history_tick from a test) records each
 * queue's allocated and fair share of gpu, cpu and memory, summed over
 * pools. Each queue keeps DASHBOARD_HISTORY_POINTS points (2 h); at most
 * DASHBOARD_HISTORY_QUEUES queues are kept, the least recently seen
 * dropped first. Memory bound: a queue's ring is POINTS x (8 bytes of time
 * + 3 resources x 2 values x 8 bytes) = 720 x 56 = 40,320 bytes, allocated
 * when the queue is first seen, so at most 1,000 x 40,320 = about 40 MB
 * (plus the names).
 *
 * Thread-safety: every function may be called from any thread; routes run
 * on the HTTP server's threads. */
#ifndef AISCHED_DASHBOARD_H
#define AISCHED_DASHBOARD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/scheduler.h"
#include "server/http.h"

#define DASHBOARD_HISTORY_INTERVAL_MS 10000
#define DASHBOARD_HISTORY_POINTS      720
#define DASHBOARD_HISTORY_QUEUES      1000

typedef struct dashboard_opts {
    /* The scheduler when this replica leads and its caches are synced,
     * else NULL (then every route but info answers 503). */
    scheduler_t *(*leading)(void *ud);
    /* The 503 Status a follower answers with, naming the leader (a new
     * reference); NULL: a generic one. */
    json_t *(*not_leading)(void *ud);
    /* The current leader's identity into buf ("" when unknown); NULL: this
     * replica's identity while it leads. */
    void (*leader)(void *ud, char *buf, size_t n);
    void *ud;
    const char *version;  /* borrowed, outlives the dashboard */
    const char *identity; /* this replica's (leader election identity) */
} dashboard_opts_t;

typedef struct dashboard dashboard_t;

dashboard_t *dashboard_new(const dashboard_opts_t *o);
/* Starts the history sampler thread; 0, or -1. */
int dashboard_start(dashboard_t *d);
/* Stops the sampler (joins) and frees. NULL is fine. Unregister the
 * routes first (stop the HTTP server). */
void dashboard_free(dashboard_t *d);
/* Adds the /api/v1 routes; 0, or -1 when one could not be added. */
int dashboard_routes_add(dashboard_t *d, http_server_t *http);

/* One history sample at wall ms now from the leading scheduler (nothing on
 * a follower). */
void dashboard_history_tick(dashboard_t *d, int64_t now);

/* The answer to GET path?query (path decoded, query raw), as a route
 * gives it: HTTP status, *body (malloc'd JSON) and *ctype. Unknown paths
 * are 404 Status objects. The routes call this; tests may too. */
int dashboard_serve(dashboard_t *d, const char *path, const char *query, char **body, const char **ctype);

#endif
