/* auth.c -- bearer tokens checked by TokenReview, access by
 * SubjectAccessReview, answers cached briefly under an HMAC of the token. */
#include "server/auth.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "kube/client.h"
#include "util/lockorder.h"
#include "util/log.h"
#include "util/util.h"

#define AUTH_MAX_TOKEN 8192 /* a projected service-account token is ~1 KiB */
#define AUTH_KEY_LEN   32
#define AUTH_WARN_MS   30000 /* one warning per this when the reviews fail */

static const char tokenreviews[] = "/apis/authentication.k8s.io/v1/tokenreviews";
static const char sars[] = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

typedef enum { ENTRY_FREE = 0, ENTRY_TOKEN, ENTRY_ACCESS } entry_kind_t;

/* One cached answer: a token's user (or its rejection), or one access
 * (allowed or denied) of one token. */
typedef struct entry {
    entry_kind_t kind;
    unsigned char key[AUTH_KEY_LEN];
    int64_t expires_ms;
    int ok;
    json_t *user; /* ENTRY_TOKEN and ok: the user, never handed out (copies are) */
    char *reason; /* ENTRY_ACCESS denied: the authorizer's reason, or NULL */
} entry_t;

struct auth {
    kube_client_t *kc;
    auth_opts_t o;
    unsigned char hkey[AUTH_KEY_LEN]; /* HMAC key, drawn at start */
    pthread_mutex_t mu;               /* LO_AUTH: below, nothing called out while held */
    entry_t *cache;
    int ncache;
    double tokens; /* rate bucket */
    int64_t refill_us;
    int inflight;
    int64_t warned_ms;
    auth_stats_t stats;
    struct auth_counters *counters; /* auth_metrics */
};

auth_t *auth_new(const kube_config_t *kcfg, const auth_opts_t *o, char *err, size_t errlen)
{
    auth_t *a = util_xcalloc(1, sizeof *a);
    if (o)
        a->o = *o;
    if (a->o.timeout_s <= 0)
        a->o.timeout_s = 5;
    if (a->o.ttl_ms == 0)
        a->o.ttl_ms = 10000;
    if (a->o.cache_max <= 0)
        a->o.cache_max = 1024;
    if (a->o.max_inflight <= 0)
        a->o.max_inflight = 8;
    if (a->o.rate <= 0)
        a->o.rate = 20;
    if (a->o.burst <= 0)
        a->o.burst = 40;
    if (RAND_bytes(a->hkey, sizeof a->hkey) != 1) {
        util_errf(err, errlen, "auth: no random bytes for the cache key");
        free(a);
        return NULL;
    }
    kube_client_opts_t ko = { .qps = 0,
                              .burst = 0,
                              .timeout_s = a->o.timeout_s,
                              .user_agent = a->o.user_agent ? a->o.user_agent : "ai-scheduler/auth" };
    a->kc = kube_client_new(kcfg, &ko, err, errlen);
    if (!a->kc) {
        free(a);
        return NULL;
    }
    a->o.user_agent = NULL; /* borrowed: not needed past the client */
    a->cache = util_xcalloc((size_t)a->o.cache_max, sizeof *a->cache);
    a->ncache = a->o.cache_max;
    a->tokens = a->o.burst;
    a->refill_us = util_now_us();
    pthread_mutex_init(&a->mu, NULL);
    return a;
}

static void entry_clear(entry_t *e)
{
    json_decref(e->user);
    free(e->reason);
    memset(e, 0, sizeof *e);
}

void auth_free(auth_t *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->ncache; i++)
        entry_clear(&a->cache[i]);
    free(a->cache);
    free(a->counters);
    pthread_mutex_destroy(&a->mu);
    kube_client_free(a->kc);
    OPENSSL_cleanse(a->hkey, sizeof a->hkey);
    free(a);
}

int auth_http_status(auth_result_t r)
{
    switch (r) {
    case AUTH_OK: return 200;
    case AUTH_UNAUTHENTICATED: return 401;
    case AUTH_FORBIDDEN: return 403;
    case AUTH_THROTTLED: return 429;
    default: return 503;
    }
}

void auth_get_stats(auth_t *a, auth_stats_t *s)
{
    lo_mutex_lock(&a->mu, LO_AUTH);
    *s = a->stats;
    lo_mutex_unlock(&a->mu, LO_AUTH);
}

typedef struct auth_counters {
    auth_t *a;
    metric_t *reviews, *hits, *throttled, *errors;
} auth_counters_t;

/* A counter raised to total (the registry keeps its own value); adding 0
 * makes the series, so a zero is shown rather than no line. */
static void raise_to(metric_t *m, const char *labels, unsigned long total)
{
    double cur = metric_value(m, labels);
    if ((double)total >= cur)
        metric_add(m, labels, (double)total - cur);
}

static void collect(metrics_t *r, void *ud)
{
    (void)r;
    auth_counters_t *c = ud;
    auth_stats_t s;
    auth_get_stats(c->a, &s);
    raise_to(c->reviews, "kind=\"token\"", s.token_reviews);
    raise_to(c->reviews, "kind=\"access\"", s.access_reviews);
    raise_to(c->hits, NULL, s.cache_hits);
    raise_to(c->throttled, NULL, s.throttled);
    raise_to(c->errors, NULL, s.review_errors);
}

void auth_metrics(auth_t *a, metrics_t *r)
{
    if (!a || !r || a->counters)
        return;
    auth_counters_t *c = a->counters = util_xcalloc(1, sizeof *c);
    c->a = a;
    c->reviews = metrics_counter(r, "ai_scheduler_http_auth_reviews_total",
                                 "TokenReviews (kind=token) and SubjectAccessReviews (kind=access) sent for /debug.");
    c->hits = metrics_counter(r, "ai_scheduler_http_auth_cache_hits_total", "Review answers served from the cache.");
    c->throttled = metrics_counter(r, "ai_scheduler_http_auth_throttled_total",
                                   "Authenticated requests refused with 429 (rate or reviews in flight).");
    c->errors = metrics_counter(r, "ai_scheduler_http_auth_review_errors_total",
                                "Reviews the API server did not answer (the request got 503).");
    metrics_on_collect(r, collect, c);
}

/* ------------------------------------------------------------ token */

/* The token of "Bearer TOKEN" (scheme case-insensitive), or NULL when the
 * header is missing, of another scheme, empty, too long, or has bytes a
 * token never has (spaces, controls). */
static const char *bearer_token(const char *h)
{
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    const char *t = h + 7;
    while (*t == ' ')
        t++;
    size_t n = strlen(t);
    while (n && t[n - 1] == ' ')
        n--;
    if (!n || n > AUTH_MAX_TOKEN)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
            return NULL;
    return t;
}

/* The token's length without trailing blanks (bearer_token checked it). */
static size_t token_len(const char *t)
{
    size_t n = strlen(t);
    while (n && t[n - 1] == ' ')
        n--;
    return n;
}

/* HMAC(key, kind || token || 0 || attrs...): a cache key that says nothing
 * about the token outside this process. */
static void cache_key(const auth_t *a, entry_kind_t kind, const char *tok, size_t toklen, const auth_attrs_t *at,
                      unsigned char out[AUTH_KEY_LEN])
{
    sbuf_t b = { 0 };
    char k = (char)('0' + kind);
    sbuf_append(&b, &k, 1);
    sbuf_append(&b, tok, toklen);
    if (kind == ENTRY_ACCESS) {
        const char *parts[] = { at->verb, at->group, at->resource, at->ns, at->path };
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            sbuf_append(&b, "", 1); /* the NUL separator */
            sbuf_puts(&b, parts[i] ? parts[i] : "");
        }
    }
    unsigned int len = AUTH_KEY_LEN;
    HMAC(EVP_sha256(), a->hkey, sizeof a->hkey, (const unsigned char *)b.data, b.len, out, &len);
    OPENSSL_cleanse(b.data, b.len);
    sbuf_free(&b);
}

/* ------------------------------------------------------------ cache */

/* mu held. The live entry of key, or NULL. */
static entry_t *cache_find_locked(auth_t *a, entry_kind_t kind, const unsigned char *key, int64_t now)
{
    for (int i = 0; i < a->ncache; i++) {
        entry_t *e = &a->cache[i];
        if (e->kind == kind && e->expires_ms > now && !memcmp(e->key, key, AUTH_KEY_LEN))
            return e;
    }
    return NULL;
}

/* mu held. A slot for key: its own, a free one, else the one that expires
 * (or expired) first. Cleared, key and kind set. */
static entry_t *cache_slot_locked(auth_t *a, entry_kind_t kind, const unsigned char *key)
{
    entry_t *best = NULL;
    for (int i = 0; i < a->ncache; i++) {
        entry_t *e = &a->cache[i];
        if (e->kind == kind && !memcmp(e->key, key, AUTH_KEY_LEN)) {
            best = e;
            break;
        }
        /* free first, then the one that expires (or expired) first */
        int64_t score = e->kind == ENTRY_FREE ? INT64_MIN : e->expires_ms;
        if (!best || score < (best->kind == ENTRY_FREE ? INT64_MIN : best->expires_ms))
            best = e;
    }
    entry_clear(best);
    best->kind = kind;
    memcpy(best->key, key, AUTH_KEY_LEN);
    return best;
}

/* ------------------------------------------------------------ load */

/* mu held. One token from the bucket: 0, or -1 when it is empty. */
static int take_rate_locked(auth_t *a)
{
    int64_t now = util_now_us();
    a->tokens += (double)(now - a->refill_us) / 1e6 * a->o.rate;
    if (a->tokens > a->o.burst)
        a->tokens = a->o.burst;
    a->refill_us = now;
    if (a->tokens < 1) {
        a->stats.throttled++;
        return -1;
    }
    a->tokens -= 1;
    return 0;
}

/* mu held. A review may go out: a place on the wire and a token from the
 * rate bucket: 0, or -1 when max_inflight or the rate says no. */
static int take_inflight_locked(auth_t *a)
{
    if (a->inflight >= a->o.max_inflight) {
        a->stats.throttled++;
        return -1;
    }
    if (take_rate_locked(a) != 0)
        return -1;
    a->inflight++;
    return 0;
}

static void put_inflight(auth_t *a)
{
    lo_mutex_lock(&a->mu, LO_AUTH);
    a->inflight--;
    lo_mutex_unlock(&a->mu, LO_AUTH);
}

/* A review that got no usable answer: one warning per AUTH_WARN_MS (what
 * failed, never the token), then debug lines. */
static void warn_failed(auth_t *a, const char *what, const char *err)
{
    lo_mutex_lock(&a->mu, LO_AUTH);
    a->stats.review_errors++;
    int64_t now = util_now_ms();
    int loud = !a->warned_ms || now - a->warned_ms >= AUTH_WARN_MS;
    if (loud)
        a->warned_ms = now;
    lo_mutex_unlock(&a->mu, LO_AUTH);
    if (loud)
        LOG_W("auth: %s failed, authenticated paths answer 503 until it works: %s", what, err);
    else
        LOG_D("auth: %s failed: %s", what, err);
}

/* ------------------------------------------------------------ reviews */

/* POSTs a review; 0 with *status_out the answer's status object, or -1
 * (logged, msg set) when no usable answer came. */
static int post_review(auth_t *a, const char *path, const char *kind, json_t *review, json_t **status_out, char *msg,
                       size_t msglen)
{
    char err[512];
    json_t *ans = NULL;
    long code = 0;
    int rc = kube_send_json(a->kc, "POST", path, NULL, review, &ans, &code, err, sizeof err);
    json_t *st = rc == 0 ? json_object_get(ans, "status") : NULL;
    if (rc == 0 && !json_is_object(st)) {
        snprintf(err, sizeof err, "POST %s: the answer has no status", path);
        rc = -1;
    }
    if (rc != 0) {
        warn_failed(a, kind, err);
        snprintf(msg, msglen, "the API server did not answer the %s (see the scheduler's log)", kind);
        json_decref(ans);
        return -1;
    }
    *status_out = json_incref(st);
    json_decref(ans);
    return 0;
}

/* The TokenReview's user, checked: {"username","uid","groups","extra"}
 * with the types a SubjectAccessReview takes, or NULL. */
static json_t *review_user(json_t *st)
{
    json_t *u = json_object_get(st, "user");
    const char *name = json_string_value(json_object_get(u, "username"));
    if (!json_is_true(json_object_get(st, "authenticated")) || !name || !*name)
        return NULL;
    json_t *out =
        json_pack("{s:s,s:s,s:[],s:{}}", "username", name, "uid",
                  json_string_value(json_object_get(u, "uid")) ? json_string_value(json_object_get(u, "uid")) : "",
                  "groups", "extra");
    json_t *groups = json_object_get(out, "groups"), *extra = json_object_get(out, "extra"), *v;
    size_t i;
    json_array_foreach (json_object_get(u, "groups"), i, v)
        if (json_is_string(v))
            json_array_append(groups, v);
    const char *k;
    json_object_foreach (json_object_get(u, "extra"), k, v) {
        if (!json_is_array(v))
            continue;
        json_t *vals = json_array(), *x;
        size_t j;
        json_array_foreach (v, j, x)
            if (json_is_string(x))
                json_array_append(vals, x);
        json_object_set_new(extra, k, vals);
    }
    return out;
}

/* The user of tok: AUTH_OK with *user (new reference), or a failure. */
static auth_result_t authenticate(auth_t *a, const char *tok, size_t toklen, json_t **user, char *msg, size_t msglen)
{
    unsigned char key[AUTH_KEY_LEN];
    cache_key(a, ENTRY_TOKEN, tok, toklen, NULL, key);
    lo_mutex_lock(&a->mu, LO_AUTH);
    entry_t *e = cache_find_locked(a, ENTRY_TOKEN, key, util_now_ms());
    if (e) {
        a->stats.cache_hits++;
        int ok = e->ok;
        *user = ok ? json_deep_copy(e->user) : NULL;
        lo_mutex_unlock(&a->mu, LO_AUTH);
        if (!ok)
            snprintf(msg, msglen, "invalid bearer token");
        return ok ? AUTH_OK : AUTH_UNAUTHENTICATED;
    }
    if (take_inflight_locked(a) != 0) {
        lo_mutex_unlock(&a->mu, LO_AUTH);
        snprintf(msg, msglen, "too many requests being authenticated; retry");
        return AUTH_THROTTLED;
    }
    a->stats.token_reviews++;
    lo_mutex_unlock(&a->mu, LO_AUTH);

    json_t *review = json_pack("{s:s,s:s,s:{s:s%}}", "apiVersion", "authentication.k8s.io/v1", "kind", "TokenReview",
                               "spec", "token", tok, toklen);
    json_t *st = NULL;
    int rc = review ? post_review(a, tokenreviews, "TokenReview", review, &st, msg, msglen) : -1;
    json_decref(review);
    put_inflight(a);
    if (rc != 0)
        return AUTH_UNAVAILABLE;
    json_t *u = review_user(st);
    json_decref(st);

    lo_mutex_lock(&a->mu, LO_AUTH);
    if (a->o.ttl_ms > 0) {
        int64_t now = util_now_ms();
        e = cache_slot_locked(a, ENTRY_TOKEN, key);
        e->expires_ms = now + a->o.ttl_ms;
        e->ok = u != NULL;
        e->user = u ? json_deep_copy(u) : NULL;
    }
    lo_mutex_unlock(&a->mu, LO_AUTH);
    *user = u;
    if (!u)
        snprintf(msg, msglen, "invalid bearer token");
    return u ? AUTH_OK : AUTH_UNAUTHENTICATED;
}

static void forbidden_msg(const json_t *user, const auth_attrs_t *at, const char *reason, char *msg, size_t msglen)
{
    const char *name = json_string_value(json_object_get(user, "username"));
    if (at->path) {
        snprintf(msg, msglen, "user \"%s\" cannot %s path \"%s\"%s%s", name ? name : "", at->verb, at->path,
                 reason && *reason ? ": " : "", reason && *reason ? reason : "");
        return;
    }
    const char *ns = at->ns && *at->ns ? at->ns : NULL;
    snprintf(msg, msglen, "user \"%s\" cannot %s resource \"%s\" in API group \"%s\" %s%s%s%s%s", name ? name : "",
             at->verb, at->resource ? at->resource : "", at->group ? at->group : "",
             ns ? "in the namespace \"" : "at the cluster scope", ns ? ns : "", ns ? "\"" : "",
             reason && *reason ? ": " : "", reason && *reason ? reason : "");
}

/* May user do at? AUTH_OK, AUTH_FORBIDDEN (msg says what), or a failure. */
static auth_result_t authorize(auth_t *a, const char *tok, size_t toklen, const json_t *user, const auth_attrs_t *at,
                               char *msg, size_t msglen)
{
    unsigned char key[AUTH_KEY_LEN];
    cache_key(a, ENTRY_ACCESS, tok, toklen, at, key);
    lo_mutex_lock(&a->mu, LO_AUTH);
    entry_t *e = cache_find_locked(a, ENTRY_ACCESS, key, util_now_ms());
    if (e) {
        a->stats.cache_hits++;
        int ok = e->ok;
        char *reason = e->reason ? util_strdup(e->reason) : NULL;
        lo_mutex_unlock(&a->mu, LO_AUTH);
        if (!ok)
            forbidden_msg(user, at, reason, msg, msglen);
        free(reason);
        return ok ? AUTH_OK : AUTH_FORBIDDEN;
    }
    if (take_inflight_locked(a) != 0) {
        lo_mutex_unlock(&a->mu, LO_AUTH);
        snprintf(msg, msglen, "too many requests being authorised; retry");
        return AUTH_THROTTLED;
    }
    a->stats.access_reviews++;
    lo_mutex_unlock(&a->mu, LO_AUTH);

    json_t *ra;
    if (at->path) {
        ra = json_pack("{s:s,s:s}", "path", at->path, "verb", at->verb);
    } else {
        ra = json_pack("{s:s,s:s,s:s}", "verb", at->verb, "group", at->group ? at->group : "", "resource",
                       at->resource ? at->resource : "");
        if (at->ns && *at->ns)
            json_object_set_new(ra, "namespace", json_string(at->ns));
    }
    json_t *review =
        json_pack("{s:s,s:s,s:{s:O,s:O,s:O,s:O,s:o}}", "apiVersion", "authorization.k8s.io/v1", "kind",
                  "SubjectAccessReview", "spec", "user", json_object_get(user, "username"), "uid",
                  json_object_get(user, "uid"), "groups", json_object_get(user, "groups"), "extra",
                  json_object_get(user, "extra"), at->path ? "nonResourceAttributes" : "resourceAttributes", ra);
    json_t *st = NULL;
    int rc = review ? post_review(a, sars, "SubjectAccessReview", review, &st, msg, msglen) : -1;
    json_decref(review);
    put_inflight(a);
    if (rc != 0)
        return AUTH_UNAVAILABLE;
    int ok = json_is_true(json_object_get(st, "allowed")) && !json_is_true(json_object_get(st, "denied"));
    const char *reason = json_string_value(json_object_get(st, "reason"));

    lo_mutex_lock(&a->mu, LO_AUTH);
    if (a->o.ttl_ms > 0) {
        int64_t now = util_now_ms();
        e = cache_slot_locked(a, ENTRY_ACCESS, key);
        e->expires_ms = now + a->o.ttl_ms;
        e->ok = ok;
        e->reason = !ok && reason && *reason ? util_strdup(reason) : NULL;
    }
    lo_mutex_unlock(&a->mu, LO_AUTH);
    if (!ok)
        forbidden_msg(user, at, reason, msg, msglen);
    json_decref(st);
    return ok ? AUTH_OK : AUTH_FORBIDDEN;
}

auth_result_t auth_check(auth_t *a, const char *authorization, const auth_attrs_t *attrs, json_t **user, char *msg,
                         size_t msglen)
{
    if (user)
        *user = NULL;
    if (msglen)
        msg[0] = 0;
    const char *tok = bearer_token(authorization);
    if (!tok) {
        snprintf(msg, msglen, "%s", authorization ? "invalid bearer token" : "a bearer token is required");
        return AUTH_UNAUTHENTICATED;
    }
    size_t toklen = token_len(tok);
    json_t *u = NULL;
    auth_result_t r = authenticate(a, tok, toklen, &u, msg, msglen);
    if (r == AUTH_OK && attrs && attrs->verb)
        r = authorize(a, tok, toklen, u, attrs, msg, msglen);
    if (user && (r == AUTH_OK || r == AUTH_FORBIDDEN))
        *user = u;
    else
        json_decref(u);
    return r;
}

auth_result_t auth_check_user(auth_t *a, const json_t *user, const auth_attrs_t *attrs, char *msg, size_t msglen)
{
    if (msglen)
        msg[0] = 0;
    const char *name = json_string_value(json_object_get(user, "username"));
    if (!name || !*name) {
        snprintf(msg, msglen, "no user");
        return AUTH_UNAUTHENTICATED;
    }
    if (!attrs || !attrs->verb)
        return AUTH_OK;
    /* The access cache's key material: a first byte no bearer token has
     * (bearer_token refuses controls), so no token shares a user's entries. */
    sbuf_t id = { 0 };
    sbuf_puts(&id, "\x01user");
    sbuf_append(&id, "", 1);
    sbuf_puts(&id, name);
    json_t *g;
    size_t i;
    json_array_foreach (json_object_get(user, "groups"), i, g) {
        sbuf_append(&id, "", 1);
        sbuf_puts(&id, json_string_value(g) ? json_string_value(g) : "");
    }
    auth_result_t r = authorize(a, id.data, id.len, user, attrs, msg, msglen);
    sbuf_free(&id);
    return r;
}
