/* fake_services.h -- a fake services table (framework/services.h) for the
 * row unit tests, as kube's plugin tests fake the framework handle: a core
 * of answers the test sets and records of what the row did, with default
 * calls for what most rows ask. A row test embeds fake_core_t first in its
 * own fixture (so its overrides cast the core back), fills fc.svc's
 * entries its row needs beyond the defaults, and hands the row &fc.svc and
 * the fixture as the core.
 *
 * The defaults cover the calls several rows ask (set_gang: the sets
 * fake_set_gang names); any other entry stays NULL, so a call added to
 * services.h needs nothing here: a row that makes one its test did not
 * fill crashes there, the trace naming the call.
 * Include after cmocka.h. */
#ifndef AISCHED_TEST_FAKE_SERVICES_H
#define AISCHED_TEST_FAKE_SERVICES_H

#include <jansson.h>

#include "framework/services.h"
#include "scheduler/extension.h"

#define FAKE_MAX_REQS  8
#define FAKE_MAX_GANGS 4

/* One request to the API server (api, api_json) or queued to the writer
 * (patch: method "PATCH"). */
typedef struct fake_req {
    char *method, *path, *content_type, *body;
    json_t *json; /* api_json's body (a copy; NULL for the others) */
} fake_req_t;

typedef struct fake_core {
    sched_services_t svc; /* the defaults after fake_core_init: override per call */

    /* Answers (zero unless said). */
    scheduler_opts_t opts; /* scheduler_opts_default's */
    const char *name;      /* "ai-scheduler" */
    int fenced;
    framework_t *fw;            /* pod_fw's, for every pod */
    node_info_t **nodes;        /* the cache's nodes (the test's): node_visit, */
    int nnodes;                 /* nodes_visit, nodes_frozen, pool_views */
    int home_pool;              /* every pod's */
    int may_evict;              /* for every set */
    int min_runtime;            /* whether one protects every pod */
    long status[FAKE_MAX_REQS]; /* the API's answer to request i (0: 201 to a POST, 200 else) */

    /* Records. */
    scheduler_stats_t st; /* what stats' callers wrote */
    int frozen;           /* inside nodes_frozen now */
    int nreqs;
    fake_req_t req[FAKE_MAX_REQS];
    int nevents;                /* pod_event, pod_event_by_name, object_event, object_event_ref */
    char event[1024];           /* the last: "who type reason message", who the pod's
                       * key or "Kind ns/name" */
    char event_api_version[64]; /* the last event's object's apiVersion ("v1" for a pod) */
    int nwakes;                 /* wake_all and pool_wake */
    int wake_pool;              /* the last one's pool (-1: wake_all; -2: none yet) */
    char wake[64];              /* and its event */
    int nactivated;             /* pod_activate */
    char nominated[64];         /* the last nominate's node */
    int nstatus;                /* status_changed */

    /* The sets a test formed as the gang row would, with their PodGroups
     * (set_gang's answers; fake_set_gang fills them). */
    struct {
        const struct pod_set *set;
        const gang_snap_t *g;
    } gangs[FAKE_MAX_GANGS];
} fake_core_t;

/* The defaults in fc->svc and the answers above; fake_core_free frees
 * what the records hold (never the test's nodes or framework). */
void fake_core_init(fake_core_t *fc);
void fake_core_free(fake_core_t *fc);

/* The row of a table and core: its room is the test's to set. */
static inline sched_row_t fake_row(fake_core_t *fc, void *self)
{
    return (sched_row_t){ .self = self, .svc = &fc->svc, .core = fc };
}

/* The defaults, for an override that adds a check and then records. */
void fake_pool_wake(void *core, int pool, const char *event);
void fake_pod_activate(void *core, int pool, const char *uid);
void fake_object_event(void *core, const char *ns, json_t *involved, const char *type, const char *reason,
                       const char *message, const char *base_name);
void fake_object_event_ref(void *core, const char *kind, const char *api_version, const char *ns, const char *name,
                           const char *uid, const char *type, const char *reason, const char *message);
int fake_min_runtime(void *core, const pod_t *pod, int kind, int64_t now_wall);

/* A lone set of one (pool "default") holding the test's item it, which
 * now names pod; fake_set_done lets go of the test's items and clears the
 * set. */
void fake_lone_set(pod_set_t *set, queue_item_t *it, pod_t *pod);
void fake_set_done(pod_set_t *set);

/* set's PodGroup, as set_gang answers it (g NULL: set has none any more). */
void fake_set_gang(fake_core_t *fc, const struct pod_set *set, const gang_snap_t *g);

#endif
