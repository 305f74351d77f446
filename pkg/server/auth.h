/* auth.h -- delegated authentication and authorisation of HTTP requests by
 * the API server, as kube-scheduler's secure port does it: the request's
 * bearer token goes to a TokenReview (authentication.k8s.io/v1), the user
 * it names and the access asked to a SubjectAccessReview
 * (authorization.k8s.io/v1). The reviews are created with the auth's own
 * client, i.e. the scheduler's credentials (RBAC: create tokenreviews and
 * subjectaccessreviews).
 *
 * Fail closed: no token, a token the API server does not accept, a denial,
 * an API server that cannot be reached or answers an error: never allowed.
 * Answers (acceptances and denials alike) are cached for ttl_ms, keyed by
 * an HMAC of the token under a key drawn at start, so neither the token nor
 * a hash that could be compared elsewhere is kept; errors are not cached.
 * Nothing here logs a token or its hash.
 *
 * Load: at most rate reviews a second (burst) are sent per auth object,
 * and at most max_inflight are on the wire at once; beyond either the
 * answer is AUTH_THROTTLED (HTTP 429). Answers from the cache and requests
 * without credentials send nothing and are not counted, so a page polling
 * every second with one token costs a review per ttl. Thread-safe. */
#ifndef AISCHED_SERVER_AUTH_H
#define AISCHED_SERVER_AUTH_H

#include <stddef.h>
#include <jansson.h>

#include "kube/kubeconfig.h"
#include "server/metrics.h"

typedef struct auth auth_t;

typedef struct auth_opts {
    int timeout_s;    /* per review; 0: 5 */
    int ttl_ms;       /* cache lifetime of an answer; 0: 10000, <0: no cache */
    int cache_max;    /* entries; 0: 1024 */
    int max_inflight; /* reviews on the wire at once; 0: 8 */
    double rate;      /* checks a second (token bucket); 0: 20 */
    int burst;        /* 0: 40 */
    const char *user_agent;
} auth_opts_t;

/* What a request asks, as a SubjectAccessReview's resourceAttributes, or
 * with path set its nonResourceAttributes {path, verb} (group, resource
 * and ns ignored). verb NULL: authentication only (any user the API server
 * knows). */
typedef struct auth_attrs {
    const char *verb, *group, *resource, *ns; /* ns NULL or "": cluster-wide */
    const char *path;                         /* e.g. "/metrics": a non-resource URL */
} auth_attrs_t;

typedef enum {
    AUTH_OK = 0,
    AUTH_UNAUTHENTICATED = 1, /* 401: no bearer token, or not a valid one */
    AUTH_FORBIDDEN = 2,       /* 403: the user may not do what the route asks */
    AUTH_UNAVAILABLE = 3,     /* 503: the API server did not give an answer */
    AUTH_THROTTLED = 4,       /* 429: over the rate or the reviews in flight */
} auth_result_t;

/* kcfg (the scheduler's credentials) is copied; o may be NULL. NULL with
 * err set when the client cannot be made. */
auth_t *auth_new(const kube_config_t *kcfg, const auth_opts_t *o, char *err, size_t errlen);
void auth_free(auth_t *a);

/* Checks one request. authorization: the request's Authorization header
 * (NULL when absent). On AUTH_OK and AUTH_FORBIDDEN *user (may be NULL) gets
 * {"username","uid","groups":[...],"extra":{...}} (a new reference). msg
 * gets a line for the answer's body: never the token. */
auth_result_t auth_check(auth_t *a, const char *authorization, const auth_attrs_t *attrs, json_t **user, char *msg,
                         size_t msglen);

/* Authorises a user the caller authenticated otherwise (a verified client
 * certificate: {"username","uid","groups","extra"}) for attrs (verb NULL:
 * AUTH_OK at once). Cached and rate-limited as auth_check's reviews, keyed
 * by the user's name and groups. */
auth_result_t auth_check_user(auth_t *a, const json_t *user, const auth_attrs_t *attrs, char *msg, size_t msglen);

/* The HTTP status of a result (200, 401, 403, 503, 429). */
int auth_http_status(auth_result_t r);

/* Counters for tests and /metrics: reviews sent (token and access), answers
 * served from the cache, requests throttled, reviews without an answer. */
typedef struct auth_stats {
    unsigned long token_reviews, access_reviews, cache_hits, throttled, review_errors;
} auth_stats_t;
void auth_get_stats(auth_t *a, auth_stats_t *s);

/* Registers the counters above in r (ai_scheduler_http_auth_*, refreshed
 * at each scrape); a must outlive r's last render. */
void auth_metrics(auth_t *a, metrics_t *r);

#endif
