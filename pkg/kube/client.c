/* client.c -- Kubernetes REST client over libcurl: pooled reused handles,
 * TLS/bearer auth, token-file rotation, qps/burst limiting, JSON helpers and
 * streaming WATCH (paginated LIST: list.c; many writes in flight: async.c). */
#include "kube/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kube/client_internal.h"
#include "kube/ratelimit.h"
#include "kube/watchparse.h"
#include "util/log.h"
#include "util/util.h"

#define MAX_RESPONSE     ((size_t)1 << 30) /* a LIST page beyond 1 GiB is an attack or a bug */
#define MAX_ERROR_BODY   (64 * 1024)
#define MAX_TOKEN_FILE   (64 * 1024)
#define TOKEN_RECHECK_MS 1000

typedef struct api_seen {
    char *gv;
    int present;
    struct api_seen *next;
} api_seen_t;

struct kube_client {
    kube_config_t cfg;
    int timeout_s;
    char *user_agent;
    kube_ratelimit_t rl;

    /* Idle curl handles, each keeping its connection: a request takes one
     * and gives it back, whichever thread it runs on. */
    pthread_mutex_t idle_mu;
    CURL **idle;
    int nidle, cap_idle;

    pthread_mutex_t tok_mu; /* the token read from cfg.token_file */
    char *file_token;
    struct timespec tok_mtime;
    off_t tok_size;
    ino_t tok_ino;
    int64_t tok_checked_ms;

    pthread_mutex_t mu; /* stats and the API cache */
    kube_client_stats_t stats;
    api_seen_t *apis;

    /* In-process (kube_client_new_inproc): requests go to inproc, no curl. */
    kube_inproc_fn inproc;
    void *inproc_ud;
};

/* ---- handles ---------------------------------------------------------- */

static CURL *handle_get(kube_client_t *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->idle_mu);
    if (c->nidle)
        h = c->idle[--c->nidle];
    pthread_mutex_unlock(&c->idle_mu);
    return h ? h : curl_easy_init();
}

static void handle_put(kube_client_t *c, CURL *h)
{
    pthread_mutex_lock(&c->idle_mu);
    if (c->nidle == c->cap_idle) {
        c->cap_idle = c->cap_idle ? c->cap_idle * 2 : 8;
        c->idle = util_xrealloc(c->idle, (size_t)c->cap_idle * sizeof(*c->idle));
    }
    c->idle[c->nidle++] = h;
    pthread_mutex_unlock(&c->idle_mu);
}

/* ---- client lifecycle ------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

kube_client_t *kube_client_new(const kube_config_t *cfg, const kube_client_opts_t *o, char *err, size_t errlen)
{
    if (!cfg || !cfg->server || strncmp(cfg->server, "http", 4) != 0) {
        util_errf(err, errlen, "kube client: server URL missing or not http(s): %s",
                  cfg && cfg->server ? cfg->server : "(none)");
        return NULL;
    }
    /* Loud at every verbosity: without verification anyone on the path can
     * pose as the API server and collect this client's credentials. */
    if (!strncmp(cfg->server, "http://", 7))
        LOG_W("INSECURE: %s is plain HTTP (%s): requests and credentials travel unencrypted", cfg->server,
              cfg->source ? cfg->source : "kubeconfig");
    else if (cfg->insecure)
        LOG_W("INSECURE: TLS verification is OFF for %s (%s): the server's certificate is not checked, so anyone "
              "on the path can pose as the API server and read this client's credentials",
              cfg->server, cfg->source ? cfg->source : "kubeconfig");
    pthread_once(&curl_once, curl_init_once);
    kube_client_t *c = util_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->idle_mu, NULL);
    kube_config_copy(&c->cfg, cfg);
    c->timeout_s = o && o->timeout_s > 0 ? o->timeout_s : 30;
    c->user_agent = util_strdup(o && o->user_agent ? o->user_agent : "ai-scheduler");
    kube_rl_init(&c->rl, o ? o->qps : 0, o ? o->burst : 0, util_now_us());
    pthread_mutex_init(&c->tok_mu, NULL);
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

kube_client_t *kube_client_new_inproc(kube_inproc_fn fn, void *ud)
{
    kube_client_t *c = util_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->idle_mu, NULL);
    c->cfg.server = util_strdup("inproc:");
    c->timeout_s = 30;
    c->user_agent = util_strdup("ai-scheduler");
    kube_rl_init(&c->rl, 0, 0, 0);
    pthread_mutex_init(&c->tok_mu, NULL);
    pthread_mutex_init(&c->mu, NULL);
    c->inproc = fn;
    c->inproc_ud = ud;
    return c;
}

int kube_client_is_inproc(const kube_client_t *c)
{
    return c && c->inproc != NULL;
}

/* Callers must have finished their requests (from any thread). */
void kube_client_free(kube_client_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nidle; i++)
        curl_easy_cleanup(c->idle[i]);
    free(c->idle);
    pthread_mutex_destroy(&c->idle_mu);
    for (api_seen_t *a = c->apis, *n; a; a = n) {
        n = a->next;
        free(a->gv);
        free(a);
    }
    kube_rl_destroy(&c->rl);
    pthread_mutex_destroy(&c->tok_mu);
    pthread_mutex_destroy(&c->mu);
    free(c->file_token);
    free(c->user_agent);
    kube_config_free(&c->cfg);
    free(c);
}

const char *kube_client_server(const kube_client_t *c)
{
    return c->cfg.server;
}

void kube_client_get_stats(kube_client_t *c, kube_client_stats_t *s)
{
    pthread_mutex_lock(&c->mu);
    *s = c->stats;
    pthread_mutex_unlock(&c->mu);
}

/* ---- auth ------------------------------------------------------------- */

static char *read_token_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = util_xmalloc(MAX_TOKEN_FILE + 1);
    size_t n = fread(buf, 1, MAX_TOKEN_FILE, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    buf[n] = '\0';
    if (n == 0 || strpbrk(buf, "\r\n")) {
        free(buf);
        return NULL;
    } /* would split the header */
    return buf;
}

/* The service-account token rotates; re-read the file when it changes
 * (checked at most once a second). Keeps the last good token on errors. */
static void refresh_file_token_locked(kube_client_t *c)
{
    int64_t now = util_now_ms();
    if (c->file_token && now - c->tok_checked_ms < TOKEN_RECHECK_MS)
        return;
    c->tok_checked_ms = now;
    struct stat st;
    if (stat(c->cfg.token_file, &st) != 0)
        return;
    if (c->file_token && st.st_mtim.tv_sec == c->tok_mtime.tv_sec && st.st_mtim.tv_nsec == c->tok_mtime.tv_nsec &&
        st.st_size == c->tok_size && st.st_ino == c->tok_ino)
        return;
    char *t = read_token_file(c->cfg.token_file);
    if (!t) {
        LOG_W("cannot read token file %s", c->cfg.token_file);
        return;
    }
    free(c->file_token);
    c->file_token = t;
    c->tok_mtime = st.st_mtim;
    c->tok_size = st.st_size;
    c->tok_ino = st.st_ino;
}

static struct curl_slist *build_headers(kube_client_t *c, const char *ctype, int has_body)
{
    struct curl_slist *hs = NULL;
    hs = curl_slist_append(hs, "Accept: application/json");
    hs = curl_slist_append(hs, "Expect:"); /* no 100-continue round trip */
    if (has_body) {
        sbuf_t b = { 0 };
        sbuf_printf(&b, "Content-Type: %s", ctype ? ctype : "application/json");
        hs = curl_slist_append(hs, b.data);
        sbuf_free(&b);
    }
    sbuf_t a = { 0 };
    if (c->cfg.token) {
        sbuf_printf(&a, "Authorization: Bearer %s", c->cfg.token);
    } else if (c->cfg.token_file) {
        pthread_mutex_lock(&c->tok_mu);
        refresh_file_token_locked(c);
        if (c->file_token)
            sbuf_printf(&a, "Authorization: Bearer %s", c->file_token);
        pthread_mutex_unlock(&c->tok_mu);
    }
    if (a.data)
        hs = curl_slist_append(hs, a.data);
    sbuf_free(&a);
    return hs;
}

/* ---- request plumbing ------------------------------------------------- */

static void set_blob(CURL *h, CURLoption opt, const char *pem)
{
    struct curl_blob b = { .data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY };
    curl_easy_setopt(h, opt, &b);
}

void kube_curl_client_cert(CURL *h, const kube_config_t *k)
{
    if (k->cert_pem)
        set_blob(h, CURLOPT_SSLCERT_BLOB, k->cert_pem);
    else if (k->cert_file)
        curl_easy_setopt(h, CURLOPT_SSLCERT, k->cert_file);
    if (k->cert_pem || k->cert_file)
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    if (k->key_pem)
        set_blob(h, CURLOPT_SSLKEY_BLOB, k->key_pem);
    else if (k->key_file)
        curl_easy_setopt(h, CURLOPT_SSLKEY, k->key_file);
    if (k->key_pem || k->key_file)
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
}

static void setup_tls(kube_client_t *c, CURL *h)
{
    const kube_config_t *k = &c->cfg;
    if (k->ca_pem)
        set_blob(h, CURLOPT_CAINFO_BLOB, k->ca_pem);
    else if (k->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, k->ca_file);
    kube_curl_client_cert(h, k);
    if (k->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

static int setup_method(CURL *h, const char *method, const char *body)
{
    if (!strcmp(method, "GET")) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        return 0;
    }
    if (strcmp(method, "POST") && strcmp(method, "PUT") && strcmp(method, "PATCH") && strcmp(method, "DELETE"))
        return -1;
    if (body || strcmp(method, "DELETE")) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? strlen(body) : 0));
    }
    if (strcmp(method, "POST"))
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    return 0;
}

/* Options every request shares. The handle is reset, which keeps its
 * connection cache: reuse is the point of per-thread handles. */
static void setup_common(kube_client_t *c, CURL *h, const char *url, struct curl_slist *hs, char *ebuf)
{
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    ebuf[0] = '\0';
    setup_tls(c, h);
}

static void rate_wait(kube_client_t *c)
{
    int64_t us = kube_client_reserve(c);
    if (us > 0)
        util_sleep_ms((us + 999) / 1000);
}

static void count(kube_client_t *c, int64_t start_us, int failed)
{
    pthread_mutex_lock(&c->mu);
    c->stats.requests++;
    if (failed)
        c->stats.errors++;
    c->stats.latency_sum_s += (double)(util_now_us() - start_us) / 1e6;
    pthread_mutex_unlock(&c->mu);
}

static char *make_url(kube_client_t *c, const char *path)
{
    sbuf_t u = { 0 };
    sbuf_printf(&u, "%s%s%s", c->cfg.server, path[0] == '/' ? "" : "/", path);
    return u.data;
}

void kube_client_transport_error(char *err, size_t errlen, const char *method, const char *path, CURLcode rc,
                                 const char *ebuf, size_t overflow_cap)
{
    if (overflow_cap)
        util_errf(err, errlen, "%s %s: response larger than %zu bytes", method, path, overflow_cap);
    else
        util_errf(err, errlen, "%s %s: %s", method, path, ebuf[0] ? ebuf : curl_easy_strerror(rc));
}

/* ---- for async.c (client_internal.h) --------------------------------- */

int kube_client_prepare(kube_client_t *c, CURL *h, const char *method, const char *path, const char *content_type,
                        const char *body, struct curl_slist **hs, char **url, char *ebuf)
{
    *url = make_url(c, path);
    *hs = build_headers(c, content_type, body != NULL);
    setup_common(c, h, *url, *hs, ebuf);
    if (setup_method(h, method, body) != 0)
        return -1;
    curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)c->timeout_s);
    return 0;
}

int64_t kube_client_reserve(kube_client_t *c)
{
    int64_t us = kube_rl_reserve(&c->rl, util_now_us());
    if (us > 0) {
        pthread_mutex_lock(&c->mu);
        c->stats.throttled_ms += (unsigned long)((us + 999) / 1000);
        pthread_mutex_unlock(&c->mu);
    }
    return us > 0 ? us : 0;
}

void kube_client_count(kube_client_t *c, int64_t start_us, CURLcode rc, long status)
{
    count(c, start_us, rc != CURLE_OK || status >= 500 || status == 429);
}

/* ---- kube_request ----------------------------------------------------- */

typedef struct body_sink {
    sbuf_t b;
    size_t cap;
    int overflow;
} body_sink_t;

static size_t sink_write(char *p, size_t sz, size_t n, void *ud)
{
    body_sink_t *s = ud;
    size_t len = sz * n;
    if (s->b.len + len > s->cap) {
        s->overflow = 1;
        return 0;
    }
    sbuf_append(&s->b, p, len);
    return len;
}

/* kube_request with extra request headers (NULL-terminated, may be NULL). */
static int request_extra(kube_client_t *c, const char *method, const char *path, const char *content_type,
                         const char *body, const char *const *extra, kube_response_t *resp, char *err, size_t errlen);

int kube_request(kube_client_t *c, const char *method, const char *path, const char *content_type, const char *body,
                 kube_response_t *resp, char *err, size_t errlen)
{
    return request_extra(c, method, path, content_type, body, NULL, resp, err, errlen);
}

int kube_request_headers(kube_client_t *c, const char *method, const char *path, const char *const *headers,
                         kube_response_t *resp, char *err, size_t errlen)
{
    return request_extra(c, method, path, NULL, NULL, headers, resp, err, errlen);
}

static int request_extra(kube_client_t *c, const char *method, const char *path, const char *content_type,
                         const char *body, const char *const *extra, kube_response_t *resp, char *err, size_t errlen)
{
    memset(resp, 0, sizeof *resp);
    if (c->inproc) {
        if (!method || !path) {
            util_errf(err, errlen, "request without a method or path");
            return -1;
        }
        c->inproc(c->inproc_ud, method, path, content_type, body, resp);
        if (!resp->body)
            resp->body = util_strdup("");
        resp->len = strlen(resp->body);
        return 0;
    }
    CURL *h = handle_get(c);
    if (!h) {
        util_errf(err, errlen, "%s %s: cannot create a curl handle", method, path);
        return -1;
    }
    char *url;
    char ebuf[CURL_ERROR_SIZE];
    struct curl_slist *hs;
    if (kube_client_prepare(c, h, method, path, content_type, body, &hs, &url, ebuf) != 0) {
        util_errf(err, errlen, "%s %s: unsupported method", method, path);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        handle_put(c, h);
        curl_slist_free_all(hs);
        free(url);
        return -1;
    }
    for (; extra && *extra; extra++)
        hs = curl_slist_append(hs, *extra);
    if (extra)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
    body_sink_t sink = { .cap = MAX_RESPONSE };
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); /* big LISTs come gzip'd */
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    rate_wait(c);
    int64_t t0 = util_now_us();
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    handle_put(c, h);
    curl_slist_free_all(hs);
    free(url);
    kube_client_count(c, t0, rc, resp->status);
    if (rc != CURLE_OK) {
        kube_client_transport_error(err, errlen, method, path, rc, ebuf, sink.overflow ? sink.cap : 0);
        sbuf_free(&sink.b);
        resp->status = 0;
        return -1;
    }
    if (!sink.b.data)
        sink.b.data = util_strdup("");
    resp->body = sink.b.data;
    resp->len = sink.b.len;
    return 0;
}

void kube_response_free(kube_response_t *r)
{
    if (!r)
        return;
    free(r->body);
    r->body = NULL;
    r->len = 0;
    json_decref(r->doc);
    r->doc = NULL;
}

/* ---- error messages from Status objects ------------------------------- */

/* Copies at most max bytes of s, replacing control characters: the text is
 * the server's and ends up in one log line. */
static void clean_copy(char *dst, size_t dstlen, const char *s, size_t n, size_t max)
{
    size_t j = 0;
    for (size_t i = 0; i < n && i < max && j + 1 < dstlen; i++)
        dst[j++] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? ' ' : s[i];
    if (dstlen)
        dst[j] = '\0';
}

static void status_error(long status, const char *body, size_t len, char *err, size_t errlen)
{
    char msg[512] = "";
    json_t *j = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *m = json_string_value(json_object_get(j, "message"));
    if (m)
        clean_copy(msg, sizeof msg, m, strlen(m), 400);
    else if (body && len && !j)
        clean_copy(msg, sizeof msg, body, len, 160);
    json_decref(j);
    if (status == 401)
        util_errf(err, errlen, "unauthorized (401): check the token/client certificate%s%s", msg[0] ? ": " : "", msg);
    else if (status == 403)
        util_errf(err, errlen, "forbidden (403): %s", msg[0] ? msg : "check the RBAC permissions of this user");
    else if (msg[0])
        util_errf(err, errlen, "%s (%ld)", msg, status);
    else
        util_errf(err, errlen, "HTTP status %ld", status);
}

/* ---- JSON helpers ----------------------------------------------------- */

int kube_client_decode(kube_response_t *r, const char *method, const char *path, json_t **out, long *status, char *err,
                       size_t errlen)
{
    if (status)
        *status = r->status;
    if (r->status < 200 || r->status > 299) {
        status_error(r->status, r->body, r->len, err, errlen);
        return -1;
    }
    if (!out)
        return 0;
    if (r->doc) {
        /* A copy: the caller may change it, the in-process store's may not. */
        *out = json_deep_copy(r->doc);
        return 0;
    }
    json_error_t je;
    *out = json_loadb(r->body, r->len, 0, &je);
    if (!*out) {
        util_errf(err, errlen, "%s %s: bad JSON in answer: %s", method, path, je.text);
        return -1;
    }
    return 0;
}

int kube_get_json(kube_client_t *c, const char *path, json_t **out, long *status, char *err, size_t errlen)
{
    kube_response_t r;
    *out = NULL;
    if (status)
        *status = 0;
    if (kube_request(c, "GET", path, NULL, NULL, &r, err, errlen) != 0)
        return -1;
    int rc = kube_client_decode(&r, "GET", path, out, status, err, errlen);
    kube_response_free(&r);
    return rc;
}

char *kube_pod_path(const char *ns, const char *name, const char *sub)
{
    char *ens = util_urlencode(ns), *en = util_urlencode(name);
    sbuf_t path = { 0 };
    sbuf_printf(&path, "/api/v1/namespaces/%s/pods/%s%s%s", ens, en, sub ? "/" : "", sub ? sub : "");
    free(ens);
    free(en);
    return path.data;
}

int kube_send_json(kube_client_t *c, const char *method, const char *path, const char *content_type, json_t *body,
                   json_t **out, long *status, char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    if (status)
        *status = 0;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !text) {
        util_errf(err, errlen, "%s %s: cannot encode the body", method, path);
        return -1;
    }
    kube_response_t r;
    int rc = kube_request(c, method, path, content_type, text, &r, err, errlen);
    free(text);
    if (rc != 0)
        return -1;
    rc = kube_client_decode(&r, method, path, r.len || r.doc ? out : NULL, status, err, errlen);
    kube_response_free(&r);
    return rc;
}

/* ---- WATCH ------------------------------------------------------------ */

typedef struct watch_ctx {
    kube_watch_parser_t p;
    CURL *h;
    long code;
    body_sink_t errbody; /* a non-2xx answer is a Status, not a stream */
    const volatile int *stop;
    int stopped;
} watch_ctx_t;

static size_t watch_write(char *data, size_t sz, size_t n, void *ud)
{
    watch_ctx_t *w = ud;
    size_t len = sz * n;
    if (!w->code)
        curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->code);
    if (w->code < 200 || w->code > 299)
        return sink_write(data, 1, len, &w->errbody) == len ? len : 0;
    return kube_watch_parser_feed(&w->p, data, len) == 0 ? len : 0;
}

/* curl calls this about once a second even on an idle stream. */
static int watch_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c_, curl_off_t d)
{
    watch_ctx_t *w = ud;
    if (w->stop && __atomic_load_n(w->stop, __ATOMIC_RELAXED)) {
        w->stopped = 1;
        return 1;
    }
    return 0;
}

static char *watch_path(const char *path, const char *rv, int timeout_s)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, "%s%cwatch=1&allowWatchBookmarks=true&timeoutSeconds=%d", path, strchr(path, '?') ? '&' : '?',
                timeout_s > 0 ? timeout_s : 300);
    if (rv && *rv) {
        char *e = util_urlencode(rv);
        sbuf_printf(&b, "&resourceVersion=%s", e);
        free(e);
    }
    return b.data;
}

static int watch_result(watch_ctx_t *w, CURLcode rc, const char *path, const char *ebuf, long *status, char *err,
                        size_t errlen)
{
    *status = w->code;
    if (w->p.failed) {
        if (w->p.status)
            *status = w->p.status;
        util_errf(err, errlen, "WATCH %s: %s", path, w->p.err);
        return -1;
    }
    if (w->p.done || w->stopped)
        return 0;
    if (rc != CURLE_OK) {
        if (w->errbody.overflow)
            util_errf(err, errlen, "WATCH %s: error answer too large", path);
        else
            kube_client_transport_error(err, errlen, "WATCH", path, rc, ebuf, 0);
        return -1;
    }
    if (w->code < 200 || w->code > 299) {
        status_error(w->code, w->errbody.b.data, w->errbody.b.len, err, errlen);
        return -1;
    }
    if (kube_watch_parser_finish(&w->p) != 0 && w->p.failed) {
        if (w->p.status)
            *status = w->p.status;
        util_errf(err, errlen, "WATCH %s: %s", path, w->p.err);
        return -1;
    }
    return 0;
}

int kube_watch(kube_client_t *c, const char *path, char *rv_io, size_t rvlen, int timeout_s, kube_event_cb cb, void *ud,
               const volatile int *stop, long *status, char *err, size_t errlen)
{
    long st_dummy;
    if (!status)
        status = &st_dummy;
    *status = 0;
    CURL *h = handle_get(c);
    if (!h) {
        util_errf(err, errlen, "WATCH %s: cannot create a curl handle", path);
        return -1;
    }
    char *wp = watch_path(path, rv_io, timeout_s);
    char *url = make_url(c, wp);
    free(wp);
    char ebuf[CURL_ERROR_SIZE];
    struct curl_slist *hs = build_headers(c, NULL, 0);
    setup_common(c, h, url, hs, ebuf);
    watch_ctx_t w = { .h = h, .stop = stop, .errbody = { .cap = MAX_ERROR_BODY } };
    kube_watch_parser_init(&w.p, cb, ud, rv_io, rvlen, KUBE_WATCH_MAX_LINE);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    /* The server ends the stream at timeoutSeconds; our own limit only
     * catches a connection that died silently. */
    curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)(timeout_s > 0 ? timeout_s : 300) + 60L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, watch_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &w);
    rate_wait(c);
    int64_t t0 = util_now_us();
    CURLcode rc = curl_easy_perform(h);
    if (!w.code)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &w.code);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    handle_put(c, h);
    curl_slist_free_all(hs);
    free(url);
    int ret = watch_result(&w, rc, path, ebuf, status, err, errlen);
    count(c, t0, ret != 0 && *status != 410 && (*status == 0 || *status >= 500));
    kube_watch_parser_free(&w.p);
    sbuf_free(&w.errbody.b);
    return ret;
}

/* ---- discovery -------------------------------------------------------- */

static int gv_served(kube_client_t *c, const char *gv, int *known)
{
    const char *slash = strchr(gv, '/');
    sbuf_t p = { 0 };
    if (slash)
        sbuf_printf(&p, "/apis/%.*s", (int)(slash - gv), gv);
    else
        sbuf_puts(&p, "/api");
    json_t *j = NULL;
    long st = 0;
    char err[256];
    int rc = kube_get_json(c, p.data, &j, &st, err, sizeof err);
    sbuf_free(&p);
    *known = rc == 0 || st == 404; /* transport errors are not cached */
    if (rc != 0) {
        if (!*known)
            LOG_W("API discovery for %s: %s", gv, err);
        return 0;
    }
    int found = 0;
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(j, "versions"), i, v) {
        const char *s =
            json_is_string(v) ? json_string_value(v) : json_string_value(json_object_get(v, "groupVersion"));
        if (s && !strcmp(s, gv))
            found = 1;
    }
    json_decref(j);
    return found;
}

int kube_has_api(kube_client_t *c, const char *group_version)
{
    pthread_mutex_lock(&c->mu);
    for (api_seen_t *a = c->apis; a; a = a->next)
        if (!strcmp(a->gv, group_version)) {
            int present = a->present;
            pthread_mutex_unlock(&c->mu);
            return present;
        }
    pthread_mutex_unlock(&c->mu);
    int known = 0, present = gv_served(c, group_version, &known);
    if (known) {
        api_seen_t *a = util_xcalloc(1, sizeof *a);
        a->gv = util_strdup(group_version);
        a->present = present;
        pthread_mutex_lock(&c->mu);
        a->next = c->apis;
        c->apis = a;
        pthread_mutex_unlock(&c->mu);
    }
    return present;
}
