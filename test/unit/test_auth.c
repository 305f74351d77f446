/* test_auth.c -- delegated authentication and authorisation (server/auth.c)
 * and the HTTP server's authenticated routes (server/http.c), against a fake
 * API server that answers TokenReviews and SubjectAccessReviews. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <curl/curl.h>

#include "fake_api.h"
#include "server/auth.h"
#include "server/http.h"
#include "server/tls.h"
#include "util/log.h"
#include "tls_fixture.h"

/* ------------------------------------------------------------ fake API */

/* Tokens the fake knows: alice (groups dev, an extra), bob; "slow-token" is
 * bob after 1.5 s. bob (and carol, a client certificate's user) may get pods
 * in namespace team; bob may get the non-resource path /metrics; nobody
 * else may do anything. fail_code != 0: every review answers that status. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int n_token, n_access, fail_code;
static json_t *last_sar; /* the last SubjectAccessReview's spec */

static json_t *user_of(const char *tok)
{
    if (!strcmp(tok, "alice-token"))
        return json_pack("{s:s,s:s,s:[s,s],s:{s:[s]}}", "username", "alice", "uid", "u-1", "groups", "dev",
                         "system:authenticated", "extra", "scopes", "x");
    if (!strcmp(tok, "bob-token") || !strcmp(tok, "slow-token"))
        return json_pack("{s:s,s:[s]}", "username", "bob", "groups", "system:authenticated");
    return NULL;
}

static enum MHD_Result api(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *data, size_t *size, void **con_cls)
{
    const char *body = NULL;
    if (fake_api_gather(con_cls, data, size, &body))
        return MHD_YES;
    json_t *in = body ? json_loads(body, 0, NULL) : NULL;
    json_t *spec = json_object_get(in, "spec");
    pthread_mutex_lock(&mu);
    int fc = fail_code;
    pthread_mutex_unlock(&mu);
    enum MHD_Result rc;
    if (strcmp(method, "POST") != 0 || !spec) {
        rc = fake_api_status(c, 400, "bad request");
    } else if (fc) {
        rc = fake_api_status(c, (unsigned)fc, "reviews fail");
    } else if (!strcmp(url, "/apis/authentication.k8s.io/v1/tokenreviews")) {
        const char *tok = json_string_value(json_object_get(spec, "token"));
        pthread_mutex_lock(&mu);
        n_token++;
        pthread_mutex_unlock(&mu);
        if (tok && !strcmp(tok, "slow-token"))
            usleep(1500 * 1000);
        json_t *u = tok ? user_of(tok) : NULL;
        json_t *out = json_pack("{s:s,s:s,s:{s:b}}", "apiVersion", "authentication.k8s.io/v1", "kind", "TokenReview",
                                "status", "authenticated", u != NULL);
        if (u)
            json_object_set_new(json_object_get(out, "status"), "user", u);
        else
            json_object_set_new(json_object_get(out, "status"), "error", json_string("invalid bearer token"));
        rc = fake_api_json(c, 201, out);
        json_decref(out);
    } else if (!strcmp(url, "/apis/authorization.k8s.io/v1/subjectaccessreviews")) {
        json_t *ra = json_object_get(spec, "resourceAttributes");
        json_t *nra = json_object_get(spec, "nonResourceAttributes");
        const char *user = json_string_value(json_object_get(spec, "user"));
        const char *ns = json_string_value(json_object_get(ra, "namespace"));
        const char *verb = json_string_value(json_object_get(ra ? ra : nra, "verb"));
        const char *res = json_string_value(json_object_get(ra, "resource"));
        const char *path = json_string_value(json_object_get(nra, "path"));
        /* bob and carol (a client certificate) may get pods in team; bob may get /metrics */
        int ok = user && (!strcmp(user, "bob") || !strcmp(user, "carol")) && verb && !strcmp(verb, "get") &&
                 ((ra && ns && !strcmp(ns, "team") && res && !strcmp(res, "pods")) ||
                  (nra && !ra && !strcmp(user, "bob") && path && !strcmp(path, "/metrics")));
        pthread_mutex_lock(&mu);
        n_access++;
        json_decref(last_sar);
        last_sar = json_incref(spec);
        pthread_mutex_unlock(&mu);
        json_t *out = json_pack("{s:s,s:s,s:{s:b,s:s}}", "apiVersion", "authorization.k8s.io/v1", "kind",
                                "SubjectAccessReview", "status", "allowed", ok, "reason", ok ? "bound" : "");
        rc = fake_api_json(c, 201, out);
        json_decref(out);
    } else {
        rc = fake_api_status(c, 404, "not found");
    }
    json_decref(in);
    return rc;
}

static struct MHD_Daemon *apid;
static int api_port;

static int setup(void **st)
{
    apid = fake_api_start(api, fake_api_body_done, &api_port);
    return apid ? 0 : -1;
}

static int teardown(void **st)
{
    MHD_stop_daemon(apid);
    json_decref(last_sar);
    last_sar = NULL;
    return 0;
}

static void reset_counts(void)
{
    pthread_mutex_lock(&mu);
    n_token = n_access = fail_code = 0;
    pthread_mutex_unlock(&mu);
}

static int count(const int *v)
{
    return fake_api_read_int(&mu, v);
}

/* An auth object pointed at port (the fake, or nothing). */
static auth_t *new_auth(int port, const auth_opts_t *o)
{
    char server[64], err[256];
    snprintf(server, sizeof server, "http://127.0.0.1:%d", port);
    kube_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.server = server;
    auth_t *a = auth_new(&cfg, o, err, sizeof err);
    if (!a)
        fail_msg("auth_new: %s", err);
    return a;
}

/* A loopback port nothing listens on. */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t l = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* ------------------------------------------------------------ auth_check */

static void test_authenticate_and_cache(void **st)
{
    reset_counts();
    auth_t *a = new_auth(api_port, NULL);
    char msg[256];
    json_t *u = NULL;
    /* No header, another scheme, an empty token: no review at all. */
    assert_int_equal(auth_check(a, NULL, NULL, &u, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    assert_string_equal(msg, "a bearer token is required");
    assert_int_equal(auth_check(a, "Basic YWxpY2U6eA==", NULL, &u, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    assert_int_equal(auth_check(a, "Bearer ", NULL, &u, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    assert_int_equal(auth_check(a, "Bearer a b", NULL, &u, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    assert_int_equal(count(&n_token), 0);

    assert_int_equal(auth_check(a, "Bearer alice-token", NULL, &u, msg, sizeof msg), AUTH_OK);
    assert_string_equal(json_string_value(json_object_get(u, "username")), "alice");
    assert_string_equal(json_string_value(json_object_get(u, "uid")), "u-1");
    assert_int_equal(json_array_size(json_object_get(u, "groups")), 2);
    json_decref(u);
    /* Cached: the scheme is case-insensitive, the answer the same, no review. */
    assert_int_equal(auth_check(a, "bearer alice-token", NULL, &u, msg, sizeof msg), AUTH_OK);
    assert_string_equal(json_string_value(json_object_get(u, "username")), "alice");
    json_decref(u);
    assert_int_equal(count(&n_token), 1);

    /* A rejection is cached too. */
    assert_int_equal(auth_check(a, "Bearer nobody", NULL, &u, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    assert_null(u);
    assert_string_equal(msg, "invalid bearer token");
    assert_int_equal(auth_check(a, "Bearer nobody", NULL, &u, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    assert_int_equal(count(&n_token), 2);
    auth_stats_t s;
    auth_get_stats(a, &s);
    assert_int_equal(s.token_reviews, 2);
    assert_int_equal(s.cache_hits, 2);
    auth_free(a);
}

static void test_cache_expires(void **st)
{
    reset_counts();
    auth_opts_t o = { .ttl_ms = 200 };
    auth_t *a = new_auth(api_port, &o);
    char msg[256];
    assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    assert_int_equal(count(&n_token), 1);
    util_sleep_ms(300);
    assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    assert_int_equal(count(&n_token), 2);
    auth_free(a);

    /* A cache of 2 entries holds the 2 latest tokens, not more. */
    reset_counts();
    o = (auth_opts_t){ .cache_max = 2 };
    a = new_auth(api_port, &o);
    assert_int_equal(auth_check(a, "Bearer alice-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    assert_int_equal(auth_check(a, "Bearer carol", NULL, NULL, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    assert_int_equal(count(&n_token), 3);
    assert_int_equal(auth_check(a, "Bearer carol", NULL, NULL, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    assert_int_equal(count(&n_token), 3);
    assert_int_equal(auth_check(a, "Bearer alice-token", NULL, NULL, msg, sizeof msg), AUTH_OK); /* evicted */
    assert_int_equal(count(&n_token), 4);
    auth_free(a);
}

static void test_authorize(void **st)
{
    reset_counts();
    auth_t *a = new_auth(api_port, NULL);
    char msg[256];
    json_t *u = NULL;
    auth_attrs_t pods_team = { "get", "", "pods", "team", NULL };
    assert_int_equal(auth_check(a, "Bearer bob-token", &pods_team, &u, msg, sizeof msg), AUTH_OK);
    assert_string_equal(json_string_value(json_object_get(u, "username")), "bob");
    json_decref(u);

    /* alice: forbidden, the message says who and what; the review carried
     * her uid, groups and extra. */
    assert_int_equal(auth_check(a, "Bearer alice-token", &pods_team, &u, msg, sizeof msg), AUTH_FORBIDDEN);
    assert_string_equal(json_string_value(json_object_get(u, "username")), "alice");
    json_decref(u);
    assert_string_equal(msg, "user \"alice\" cannot get resource \"pods\" in API group \"\" in the namespace \"team\"");
    pthread_mutex_lock(&mu);
    char *spec = json_dumps(last_sar, JSON_COMPACT | JSON_SORT_KEYS);
    pthread_mutex_unlock(&mu);
    assert_string_equal(spec, "{\"extra\":{\"scopes\":[\"x\"]},\"groups\":[\"dev\",\"system:authenticated\"],"
                              "\"resourceAttributes\":{\"group\":\"\",\"namespace\":\"team\",\"resource\":\"pods\","
                              "\"verb\":\"get\"},\"uid\":\"u-1\",\"user\":\"alice\"}");
    free(spec);
    assert_int_equal(count(&n_access), 2);

    /* Both answers cached, per token and per access asked. */
    assert_int_equal(auth_check(a, "Bearer alice-token", &pods_team, NULL, msg, sizeof msg), AUTH_FORBIDDEN);
    assert_non_null(strstr(msg, "cannot get resource \"pods\""));
    assert_int_equal(auth_check(a, "Bearer bob-token", &pods_team, NULL, msg, sizeof msg), AUTH_OK);
    assert_int_equal(count(&n_access), 2);
    auth_attrs_t pods_other = { "get", "", "pods", "other", NULL }, cluster = { "list", "", "pods", NULL, NULL };
    assert_int_equal(auth_check(a, "Bearer bob-token", &pods_other, NULL, msg, sizeof msg), AUTH_FORBIDDEN);
    assert_int_equal(auth_check(a, "Bearer bob-token", &cluster, NULL, msg, sizeof msg), AUTH_FORBIDDEN);
    assert_string_equal(msg, "user \"bob\" cannot list resource \"pods\" in API group \"\" at the cluster scope");
    assert_int_equal(count(&n_access), 4);
    assert_int_equal(count(&n_token), 2);
    auth_free(a);
}

static void test_unavailable(void **st)
{
    /* Nothing listening: 503, and nothing cached (the next try asks again). */
    auth_opts_t o = { .timeout_s = 2 };
    auth_t *a = new_auth(dead_port(), &o);
    char msg[256];
    json_t *u = NULL;
    assert_int_equal(auth_check(a, "Bearer bob-token", NULL, &u, msg, sizeof msg), AUTH_UNAVAILABLE);
    assert_null(u);
    assert_int_equal(auth_http_status(AUTH_UNAVAILABLE), 503);
    assert_string_equal(msg, "the API server did not answer the TokenReview (see the scheduler's log)");
    assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_UNAVAILABLE);
    auth_stats_t s;
    auth_get_stats(a, &s);
    assert_int_equal(s.token_reviews, 2);
    assert_int_equal(s.cache_hits, 0);
    auth_free(a);

    /* The API server refuses the reviews (the scheduler lacks the RBAC) or
     * fails: 503 as well, never allowed. */
    int codes[] = { 403, 500 };
    for (size_t i = 0; i < 2; i++) {
        reset_counts();
        pthread_mutex_lock(&mu);
        fail_code = codes[i];
        pthread_mutex_unlock(&mu);
        a = new_auth(api_port, NULL);
        assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_UNAVAILABLE);
        auth_free(a);
    }
    reset_counts();
    /* The token is accepted but the access review fails: 503. */
    a = new_auth(api_port, NULL);
    auth_attrs_t pods_team = { "get", "", "pods", "team", NULL };
    assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    pthread_mutex_lock(&mu);
    fail_code = 500;
    pthread_mutex_unlock(&mu);
    assert_int_equal(auth_check(a, "Bearer bob-token", &pods_team, NULL, msg, sizeof msg), AUTH_UNAVAILABLE);
    assert_string_equal(msg, "the API server did not answer the SubjectAccessReview (see the scheduler's log)");
    reset_counts();
    auth_free(a);
}

static void test_rate_limit(void **st)
{
    reset_counts();
    auth_opts_t o = { .rate = 2, .burst = 3 };
    auth_t *a = new_auth(api_port, &o);
    char msg[256];
    /* Three reviews: the burst. */
    assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    assert_int_equal(auth_check(a, "Bearer alice-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    assert_int_equal(auth_check(a, "Bearer forged-1", NULL, NULL, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    /* A fourth review waits for the bucket... */
    assert_int_equal(auth_check(a, "Bearer forged-2", NULL, NULL, msg, sizeof msg), AUTH_THROTTLED);
    assert_string_equal(msg, "too many requests being authenticated; retry");
    assert_int_equal(auth_http_status(AUTH_THROTTLED), 429);
    /* ...but answers from the cache send nothing and are not throttled: a
     * page polling with one token every second from a few tabs. */
    for (int i = 0; i < 20; i++) {
        assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
        assert_int_equal(auth_check(a, "Bearer forged-1", NULL, NULL, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    }
    /* No credentials: no review, 401 at once. */
    assert_int_equal(auth_check(a, NULL, NULL, NULL, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    assert_int_equal(count(&n_token), 3);
    util_sleep_ms(600); /* one more token */
    assert_int_equal(auth_check(a, "Bearer forged-2", NULL, NULL, msg, sizeof msg), AUTH_UNAUTHENTICATED);
    auth_stats_t s;
    auth_get_stats(a, &s);
    assert_int_equal(s.throttled, 1);
    assert_int_equal(s.token_reviews, 4);
    assert_int_equal(s.cache_hits, 40);
    auth_free(a);
}

typedef struct slow_arg {
    auth_t *a;
    auth_result_t r;
} slow_arg_t;

static void *slow_check(void *p)
{
    slow_arg_t *x = p;
    char msg[128];
    x->r = auth_check(x->a, "Bearer slow-token", NULL, NULL, msg, sizeof msg);
    return NULL;
}

static void test_inflight_limit(void **st)
{
    /* One review on the wire at most: while the slow one is there, another
     * token gets 429; a cached token still passes. */
    reset_counts();
    auth_opts_t o = { .max_inflight = 1 };
    auth_t *a = new_auth(api_port, &o);
    char msg[256];
    assert_int_equal(auth_check(a, "Bearer alice-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    slow_arg_t x = { a, -1 };
    pthread_t t;
    pthread_create(&t, NULL, slow_check, &x);
    for (int i = 0; i < 100 && count(&n_token) < 2; i++)
        util_sleep_ms(10);
    assert_int_equal(count(&n_token), 2);
    assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_THROTTLED);
    assert_string_equal(msg, "too many requests being authenticated; retry");
    assert_int_equal(auth_check(a, "Bearer alice-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    pthread_join(t, NULL);
    assert_int_equal(x.r, AUTH_OK);
    assert_int_equal(auth_check(a, "Bearer bob-token", NULL, NULL, msg, sizeof msg), AUTH_OK);
    auth_free(a);
}

static void test_metrics(void **st)
{
    reset_counts();
    auth_t *a = new_auth(api_port, NULL);
    metrics_t *r = metrics_new();
    auth_metrics(a, r);
    char msg[256];
    auth_attrs_t pods_team = { "get", "", "pods", "team", NULL };
    assert_int_equal(auth_check(a, "Bearer bob-token", &pods_team, NULL, msg, sizeof msg), AUTH_OK);
    assert_int_equal(auth_check(a, "Bearer bob-token", &pods_team, NULL, msg, sizeof msg), AUTH_OK);
    pthread_mutex_lock(&mu);
    fail_code = 500;
    pthread_mutex_unlock(&mu);
    assert_int_equal(auth_check(a, "Bearer alice-token", NULL, NULL, msg, sizeof msg), AUTH_UNAVAILABLE);
    reset_counts();
    char *text = metrics_render(r);
    assert_non_null(strstr(text, "ai_scheduler_http_auth_reviews_total{kind=\"token\"} 2\n"));
    assert_non_null(strstr(text, "ai_scheduler_http_auth_reviews_total{kind=\"access\"} 1\n"));
    assert_non_null(strstr(text, "ai_scheduler_http_auth_cache_hits_total 2\n"));
    assert_non_null(strstr(text, "ai_scheduler_http_auth_throttled_total 0\n"));
    assert_non_null(strstr(text, "ai_scheduler_http_auth_review_errors_total 1\n"));
    free(text);
    metrics_free(r);
    auth_free(a);
}

/* ------------------------------------------------------------ HTTP */

typedef struct got {
    long code;
    char body[4096];
    char www[256], retry[32], location[256];
    size_t len;
} got_t;

static size_t on_body(char *d, size_t sz, size_t n, void *ud)
{
    got_t *g = ud;
    size_t k = sz * n;
    if (g->len + k < sizeof g->body) {
        memcpy(g->body + g->len, d, k);
        g->len += k;
        g->body[g->len] = 0;
    }
    return sz * n;
}

static size_t on_header(char *d, size_t sz, size_t n, void *ud)
{
    got_t *g = ud;
    size_t k = sz * n;
    if (k > 18 && !strncasecmp(d, "WWW-Authenticate: ", 18))
        snprintf(g->www, sizeof g->www, "%.*s", (int)(k - 18 - 2), d + 18);
    if (k > 10 && !strncasecmp(d, "Location: ", 10))
        snprintf(g->location, sizeof g->location, "%.*s", (int)(k - 10 - 2), d + 10);
    if (k > 13 && !strncasecmp(d, "Retry-After: ", 13))
        snprintf(g->retry, sizeof g->retry, "%.*s", (int)(k - 13 - 2), d + 13);
    return k;
}

/* Performs c (its URL and transport set) with "Authorization: Bearer
 * token" when token is set, the answer in g; cleans c up. -1 when no HTTP
 * answer came (e.g. the handshake failed). */
static int perform(CURL *c, const char *token, got_t *g)
{
    memset(g, 0, sizeof *g);
    char h[256];
    struct curl_slist *hs = NULL;
    if (token) {
        snprintf(h, sizeof h, "Authorization: Bearer %s", token);
        hs = curl_slist_append(hs, h);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, g);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, g);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &g->code);
    curl_slist_free_all(hs);
    curl_easy_cleanup(c);
    return rc == CURLE_OK ? 0 : -1;
}

/* GET (or method) path with "Authorization: Bearer token" when token is
 * set; body: a request body to send. */
static int fetch(int port, const char *method, const char *path, const char *token, const char *body, got_t *g)
{
    char url[8192];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (method)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    return perform(c, token, g);
}

/* GET https://127.0.0.1:port/path, trusting ca_pem, with a client
 * certificate when cert is set and "Authorization: Bearer token" when
 * token is. -1 when no HTTP answer came (e.g. the handshake failed). */
static int fetch_tls(int port, const char *path, const char *ca_pem, const fx_cert_t *cert, const char *token, got_t *g)
{
    char url[512];
    snprintf(url, sizeof url, "https://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    struct curl_blob ca = { (void *)ca_pem, strlen(ca_pem), CURL_BLOB_COPY };
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
    if (cert) {
        struct curl_blob cb = { cert->cert_pem, strlen(cert->cert_pem), CURL_BLOB_COPY };
        struct curl_blob kb = { cert->key_pem, strlen(cert->key_pem), CURL_BLOB_COPY };
        curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    }
    return perform(c, token, g);
}

/* A route that echoes what it was given. */
static int echo(void *ud, const char *path, const char *query, char **body, const char **ctype)
{
    const json_t *u = http_request_user();
    json_t *j = json_pack("{s:s,s:s,s:s,s:s?}", "ud", (const char *)ud, "path", path, "query", query, "user",
                          json_string_value(json_object_get(u, "username")));
    *body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    *ctype = "application/json";
    return 200;
}

static http_server_t *start_server(auth_t *a)
{
    char err[256];
    http_server_opts_t o = { .bind_address = "127.0.0.1", .auth = a };
    http_server_t *s = http_server_start(&o, err, sizeof err);
    if (!s)
        fail_msg("http_server_start: %s", err);
    return s;
}

static void test_http_routes(void **st)
{
    reset_counts();
    auth_t *a = new_auth(api_port, NULL);
    http_server_t *s = start_server(a);
    int port = http_server_port(s);
    http_route_t pods = { "/debug/pods/", echo, "pods", "get", "", "pods", 1, 0, 0 };
    assert_int_equal(http_server_route(s, &pods), 0);
    got_t g;

    /* Probes stay open (the default always-allow paths). */
    assert_int_equal(fetch(port, NULL, "/healthz", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_int_equal(fetch(port, NULL, "/readyz", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_int_equal(fetch(port, NULL, "/livez", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_int_equal(count(&n_token), 0);

    /* /metrics: get on the non-resource path. */
    assert_int_equal(fetch(port, NULL, "/metrics", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 401);
    assert_string_equal(g.www, "Bearer realm=\"ai-scheduler\"");
    assert_int_equal(fetch(port, NULL, "/metrics", "alice-token", NULL, &g), 0);
    assert_int_equal(g.code, 403);
    assert_string_equal(g.body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                                "\"message\":\"user \\\"alice\\\" cannot get path \\\"/metrics\\\"\",\"reason\":"
                                "\"Forbidden\",\"code\":403}");
    pthread_mutex_lock(&mu);
    char *sar = json_dumps(last_sar, JSON_COMPACT | JSON_SORT_KEYS);
    pthread_mutex_unlock(&mu);
    assert_string_equal(sar, "{\"extra\":{\"scopes\":[\"x\"]},\"groups\":[\"dev\",\"system:authenticated\"],"
                             "\"nonResourceAttributes\":{\"path\":\"/metrics\",\"verb\":\"get\"},\"uid\":\"u-1\","
                             "\"user\":\"alice\"}");
    free(sar);
    assert_int_equal(fetch(port, NULL, "/metrics", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_int_equal(count(&n_access), 2);

    /* / sends a browser to the dashboard, naming nothing. */
    assert_int_equal(fetch(port, NULL, "/", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 302);
    assert_string_equal(g.location, "/ui/");
    assert_int_equal(g.len, 0);
    reset_counts();

    /* whoami: 401 without a token or with a bad one, the user with a good one. */
    assert_int_equal(fetch(port, NULL, "/debug/whoami", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 401);
    assert_string_equal(g.www, "Bearer realm=\"ai-scheduler\"");
    assert_string_equal(g.body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                                "\"message\":\"a bearer token is required\",\"reason\":\"Unauthorized\",\"code\":401}");
    assert_int_equal(fetch(port, NULL, "/debug/whoami", "forged", NULL, &g), 0);
    assert_int_equal(g.code, 401);
    assert_non_null(strstr(g.body, "\"message\":\"invalid bearer token\""));
    assert_int_equal(fetch(port, NULL, "/debug/whoami", "alice-token", NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_string_equal(g.body, "{\"username\":\"alice\",\"uid\":\"u-1\",\"groups\":[\"dev\",\"system:authenticated\"],"
                                "\"extra\":{\"scopes\":[\"x\"]}}");
    assert_int_equal(count(&n_access), 0); /* authentication only */

    /* Unknown paths under /debug: 401 first, 404 only once authenticated. */
    assert_int_equal(fetch(port, NULL, "/debug/secret", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 401);
    assert_int_equal(fetch(port, NULL, "/debug", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 401);
    assert_int_equal(fetch(port, NULL, "/debug/secret", "alice-token", NULL, &g), 0);
    assert_int_equal(g.code, 404);
    assert_int_equal(fetch(port, NULL, "/debug/whoamix", "alice-token", NULL, &g), 0);
    assert_int_equal(g.code, 404);

    /* The route: the namespace in the path is what the review asks. */
    assert_int_equal(fetch(port, NULL, "/debug/pods/team/p1?x=1&y=%2F", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_string_equal(g.body, "{\"ud\":\"pods\",\"path\":\"/debug/pods/team/p1\",\"query\":\"x=1&y=%2F\",\"user\":"
                                "\"bob\"}");
    assert_int_equal(fetch(port, NULL, "/debug/pods/other/p1", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 403);
    assert_string_equal(g.body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                                "\"message\":\"user \\\"bob\\\" cannot get resource \\\"pods\\\" in API group \\\"\\\" "
                                "in the namespace \\\"other\\\"\",\"reason\":\"Forbidden\",\"code\":403}");
    assert_int_equal(fetch(port, NULL, "/debug/pods/team/p1", "alice-token", NULL, &g), 0);
    assert_int_equal(g.code, 403);
    assert_int_equal(fetch(port, NULL, "/debug/pods/team/p1", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 401);
    /* No namespace: a cluster-wide review (bob has none). */
    assert_int_equal(fetch(port, NULL, "/debug/pods/", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 403);
    assert_non_null(strstr(g.body, "at the cluster scope"));
    /* Not a namespace: 404 after authentication, no access review. */
    int before = count(&n_access);
    assert_int_equal(fetch(port, NULL, "/debug/pods/Team_1/p", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 404);
    assert_int_equal(fetch(port, NULL, "/debug/pods/..%2Fx/p", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 404);
    assert_int_equal(fetch(port, NULL, "/debug/pods/Team_1/p", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 401);
    assert_int_equal(count(&n_access), before);

    /* Bounds: methods, bodies, URL length. */
    assert_int_equal(fetch(port, "POST", "/debug/whoami", "alice-token", NULL, &g), 0);
    assert_int_equal(g.code, 405);
    assert_int_equal(fetch(port, "GET", "/debug/whoami", "alice-token", "{\"a\":1}", &g), 0);
    assert_int_equal(g.code, 413);
    char *longp = util_xmalloc(HTTP_MAX_URL + 64);
    strcpy(longp, "/debug/pods/team/");
    memset(longp + 17, 'a', HTTP_MAX_URL);
    longp[HTTP_MAX_URL + 17] = 0;
    assert_int_equal(fetch(port, NULL, longp, "bob-token", NULL, &g), 0);
    assert_true(g.code == 414 || g.code == 431);
    free(longp);
    /* Still serving. */
    assert_int_equal(fetch(port, NULL, "/debug/whoami", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 200);

    /* Registration: a route must say what it asks unless authn_only. */
    http_route_t bad = { "/debug/x/", echo, "x", NULL, "", "pods", 0, 0, 0 };
    assert_int_equal(http_server_route(s, &bad), -1);
    bad.verb = "get";
    bad.resource = NULL;
    assert_int_equal(http_server_route(s, &bad), -1);
    bad.prefix = "debug/x/";
    bad.authn_only = 1;
    assert_int_equal(http_server_route(s, &bad), -1);
    bad.prefix = "/debug/x/";
    assert_int_equal(http_server_route(s, &bad), 0);
    /* A route outside /debug is authenticated just the same. */
    http_route_t ui = { "/ui/", echo, "ui", "get", "", "pods", 1, 0, 0 };
    assert_int_equal(http_server_route(s, &ui), 0);
    assert_int_equal(fetch(port, NULL, "/ui/team", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 401);
    assert_int_equal(fetch(port, NULL, "/ui/team", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_int_equal(http_server_route(NULL, &ui), -1);

    http_server_stop(s);
    auth_free(a);
}

static void test_http_fail_closed(void **st)
{
    got_t g;
    /* No auth configured: 503, not open. */
    http_server_t *s = start_server(NULL);
    int port = http_server_port(s);
    assert_int_equal(fetch(port, NULL, "/debug/whoami", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 503);
    assert_int_equal(fetch(port, NULL, "/healthz", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 200);
    http_server_stop(s);

    /* The API server away: 503; /healthz answers meanwhile. */
    auth_opts_t o = { .timeout_s = 2 };
    auth_t *a = new_auth(dead_port(), &o);
    s = start_server(a);
    port = http_server_port(s);
    assert_int_equal(fetch(port, NULL, "/debug/whoami", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 503);
    assert_non_null(strstr(g.body, "\"reason\":\"ServiceUnavailable\""));
    http_server_stop(s);
    auth_free(a);

    /* Over the rate: 429 with Retry-After. */
    reset_counts();
    o = (auth_opts_t){ .rate = 0.5, .burst = 1 };
    a = new_auth(api_port, &o);
    s = start_server(a);
    port = http_server_port(s);
    assert_int_equal(fetch(port, NULL, "/debug/whoami", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_int_equal(fetch(port, NULL, "/debug/whoami", "alice-token", NULL, &g), 0);
    assert_int_equal(g.code, 429);
    assert_string_equal(g.retry, "1");
    /* bob's answer is cached: served, not throttled. */
    assert_int_equal(fetch(port, NULL, "/debug/whoami", "bob-token", NULL, &g), 0);
    assert_int_equal(g.code, 200);
    http_server_stop(s);
    auth_free(a);
}

/* HTTPS with a client CA: a verified client certificate authenticates
 * (user CN, groups O) and is authorised by SubjectAccessReview like a
 * token's user; a stranger's is not; a token still works; plain HTTP gets
 * no answer. always_allow given: /metrics open, /readyz not. */
static void test_http_tls(void **st)
{
    reset_counts();
    const char *hosts[] = { "127.0.0.1" };
    tls_pair_t sp;
    char err[256], caf[64];
    assert_int_equal(tls_self_signed(hosts, 1, 1, &sp, err, sizeof err), 0);
    fx_cert_t ca = fx_make(NULL, "clients", NULL, NULL, NULL, -60);
    fx_cert_t other = fx_make(NULL, "other", NULL, NULL, NULL, -60);
    fx_cert_t carol = fx_make(&ca, "carol", "team-a", "clientAuth", NULL, -60);
    fx_cert_t mallory = fx_make(&other, "carol", "system:masters", "clientAuth", NULL, -60);
    fx_write(caf, ca.cert_pem);
    char *ca_pem = NULL;
    tls_client_ca_t *cca = tls_client_ca_load(caf, &ca_pem, err, sizeof err);
    assert_non_null(cca);
    auth_t *a = new_auth(api_port, NULL);
    http_server_opts_t o = { .bind_address = "127.0.0.1",
                             .auth = a,
                             .tls_cert_pem = sp.cert_pem,
                             .tls_key_pem = sp.key_pem,
                             .client_ca = cca,
                             .client_ca_pem = ca_pem,
                             .always_allow = "/healthz, /metrics" };
    http_server_t *s = http_server_start(&o, err, sizeof err);
    assert_non_null(s);
    int port = http_server_port(s);
    http_route_t pods = { "/debug/pods/", echo, "pods", "get", "", "pods", 1, 0, 0 };
    assert_int_equal(http_server_route(s, &pods), 0);
    got_t g;

    assert_int_equal(fetch_tls(port, "/healthz", sp.cert_pem, NULL, NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_int_equal(fetch_tls(port, "/metrics", sp.cert_pem, NULL, NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_int_equal(fetch_tls(port, "/readyz", sp.cert_pem, NULL, NULL, &g), 0);
    assert_int_equal(g.code, 401);
    assert_int_equal(count(&n_token), 0);

    /* carol's certificate: no TokenReview; the SAR names her and her group. */
    assert_int_equal(fetch_tls(port, "/debug/whoami", sp.cert_pem, &carol, NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_string_equal(g.body, "{\"username\":\"carol\",\"uid\":\"\",\"groups\":[\"team-a\"],\"extra\":{}}");
    assert_int_equal(fetch_tls(port, "/debug/pods/team/p", sp.cert_pem, &carol, NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_string_equal(g.body, "{\"ud\":\"pods\",\"path\":\"/debug/pods/team/p\",\"query\":\"\",\"user\":\"carol\"}");
    pthread_mutex_lock(&mu);
    char *sar = json_dumps(last_sar, JSON_COMPACT | JSON_SORT_KEYS);
    pthread_mutex_unlock(&mu);
    assert_string_equal(sar, "{\"extra\":{},\"groups\":[\"team-a\"],\"resourceAttributes\":{\"group\":\"\","
                             "\"namespace\":\"team\",\"resource\":\"pods\",\"verb\":\"get\"},\"uid\":\"\","
                             "\"user\":\"carol\"}");
    free(sar);
    assert_int_equal(fetch_tls(port, "/debug/pods/other/p", sp.cert_pem, &carol, NULL, &g), 0);
    assert_int_equal(g.code, 403);
    /* Cached: the same answer again sends no review. */
    int before = count(&n_access);
    assert_int_equal(fetch_tls(port, "/debug/pods/team/p", sp.cert_pem, &carol, NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_int_equal(count(&n_access), before);
    assert_int_equal(count(&n_token), 0);

    /* Signed by another CA: not carol; 401 saying why. */
    assert_int_equal(fetch_tls(port, "/debug/whoami", sp.cert_pem, &mallory, NULL, &g), 0);
    assert_int_equal(g.code, 401);
    assert_non_null(strstr(g.body, "the client certificate does not verify"));
    /* ...while a token still works, with or without a certificate. */
    assert_int_equal(fetch_tls(port, "/debug/pods/team/p", sp.cert_pem, &mallory, "bob-token", &g), 0);
    assert_int_equal(g.code, 200);
    assert_non_null(strstr(g.body, "\"user\":\"bob\""));
    assert_int_equal(fetch_tls(port, "/debug/whoami", sp.cert_pem, NULL, "alice-token", &g), 0);
    assert_int_equal(g.code, 200);

    /* Plain HTTP to the TLS port: no HTTP answer. */
    assert_int_equal(fetch(port, NULL, "/healthz", NULL, NULL, &g), -1);
    assert_int_equal(fetch_tls(port, "/healthz", sp.cert_pem, NULL, NULL, &g), 0); /* still serving */

    http_server_stop(s);
    /* Without a client CA, certificates are ignored: a token is needed. */
    o.client_ca = NULL;
    o.client_ca_pem = NULL;
    s = http_server_start(&o, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(fetch_tls(http_server_port(s), "/debug/whoami", sp.cert_pem, &carol, NULL, &g), 0);
    assert_int_equal(g.code, 401);
    assert_non_null(strstr(g.body, "a bearer token is required"));
    http_server_stop(s);
    /* A certificate without its key: refused at start. */
    o.tls_key_pem = NULL;
    assert_null(http_server_start(&o, err, sizeof err));
    assert_string_equal(err, "http: a TLS certificate needs its key and the other way round");

    auth_free(a);
    tls_client_ca_free(cca);
    free(ca_pem);
    unlink(caf);
    tls_pair_free(&sp);
    fx_free(&ca);
    fx_free(&other);
    fx_free(&carol);
    fx_free(&mallory);
}

/* An open route is served to anyone, without a review; a path beside it is
 * not. */
static void test_http_open_route(void **st)
{
    reset_counts();
    auth_t *a = new_auth(api_port, NULL);
    http_server_t *s = start_server(a);
    int port = http_server_port(s);
    http_route_t ui = { .prefix = "/ui/", .fn = echo, .ud = "ui", .open = 1 };
    assert_int_equal(http_server_route(s, &ui), 0);
    got_t g;
    assert_int_equal(fetch(port, NULL, "/ui/app.js", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_string_equal(g.body, "{\"ud\":\"ui\",\"path\":\"/ui/app.js\",\"query\":\"\",\"user\":null}");
    assert_int_equal(fetch(port, NULL, "/uix", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 404);
    assert_int_equal(fetch(port, "GET", "/ui/x", NULL, "{}", &g), 0); /* bounded like the rest */
    assert_int_equal(g.code, 413);
    assert_int_equal(count(&n_token) + count(&n_access), 0);
    http_server_stop(s);
    auth_free(a);
}

typedef struct slow_get {
    int port;
    got_t g;
} slow_get_t;

static void *slow_get(void *p)
{
    slow_get_t *x = p;
    fetch(x->port, NULL, "/debug/whoami", "slow-token", NULL, &x->g);
    return NULL;
}

static void test_http_review_does_not_block_probes(void **st)
{
    reset_counts();
    auth_t *a = new_auth(api_port, NULL);
    http_server_t *s = start_server(a);
    slow_get_t x = { http_server_port(s), { 0 } };
    pthread_t t;
    pthread_create(&t, NULL, slow_get, &x);
    for (int i = 0; i < 100 && count(&n_token) < 1; i++)
        util_sleep_ms(10);
    int64_t t0 = util_now_ms();
    got_t g;
    assert_int_equal(fetch(x.port, NULL, "/healthz", NULL, NULL, &g), 0);
    assert_int_equal(g.code, 200);
    assert_true(util_now_ms() - t0 < 500); /* the review takes 1.5 s */
    pthread_join(t, NULL);
    assert_int_equal(x.g.code, 200);
    http_server_stop(s);
    auth_free(a);
}

/* Every failure path with the log at its most verbose: neither token
 * reaches stderr. */
static void test_no_token_in_logs(void **st)
{
    char path[] = "/tmp/test_auth_log.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    int v = log_get_verbosity();
    log_set_verbosity(10);

    reset_counts();
    auth_opts_t o = { .timeout_s = 1 };
    auth_t *dead = new_auth(dead_port(), &o), *a = new_auth(api_port, NULL);
    http_server_t *s1 = start_server(dead), *s2 = start_server(a);
    http_route_t pods = { "/debug/pods/", echo, "pods", "get", "", "pods", 1, 0, 0 };
    http_server_route(s2, &pods);
    got_t g;
    fetch(http_server_port(s1), NULL, "/debug/whoami", "sekrit-one", NULL, &g);
    assert_int_equal(g.code, 503);
    fetch(http_server_port(s2), NULL, "/debug/whoami", "sekrit-two", NULL, &g);
    assert_int_equal(g.code, 401);
    fetch(http_server_port(s2), NULL, "/debug/pods/team/x", "alice-token", NULL, &g);
    assert_int_equal(g.code, 403);
    pthread_mutex_lock(&mu);
    fail_code = 500;
    pthread_mutex_unlock(&mu);
    fetch(http_server_port(s2), NULL, "/debug/pods/team/x", "sekrit-three", NULL, &g);
    assert_int_equal(g.code, 503);
    reset_counts();
    http_server_stop(s1);
    http_server_stop(s2);
    auth_free(dead);
    auth_free(a);

    log_set_verbosity(v);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "r");
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    close(fd);
    unlink(path);
    assert_non_null(strstr(buf, "TokenReview failed")); /* the log did get lines */
    assert_null(strstr(buf, "sekrit"));
    assert_null(strstr(buf, "alice-token"));
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_authenticate_and_cache),
        cmocka_unit_test(test_cache_expires),
        cmocka_unit_test(test_authorize),
        cmocka_unit_test(test_unavailable),
        cmocka_unit_test(test_rate_limit),
        cmocka_unit_test(test_inflight_limit),
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_http_routes),
        cmocka_unit_test(test_http_fail_closed),
        cmocka_unit_test(test_http_tls),
        cmocka_unit_test(test_http_open_route),
        cmocka_unit_test(test_http_review_does_not_block_probes),
        cmocka_unit_test(test_no_token_in_logs),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    return rc;
}
