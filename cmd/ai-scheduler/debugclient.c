/* debugclient.c -- GET the scheduler's /debug endpoints, directly or
 * through the API server's pod proxy to the leader. */
#include "debugclient.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>

#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "util/util.h"

#define TOKEN_MAX 16384

/* The kubeconfig's bearer token (static, or its tokenFile read now), or
 * NULL with err set. */
static char *config_token(const kube_config_t *cfg, char *err, size_t errlen)
{
    if (cfg->token && *cfg->token)
        return util_strdup(cfg->token);
    if (cfg->token_file) {
        FILE *f = fopen(cfg->token_file, "rb");
        char *buf = util_xmalloc(TOKEN_MAX + 1);
        size_t n = f ? fread(buf, 1, TOKEN_MAX, f) : 0;
        if (f)
            fclose(f);
        while (n && isspace((unsigned char)buf[n - 1]))
            n--;
        buf[n] = 0;
        if (n && !strpbrk(buf, "\r\n"))
            return buf;
        free(buf);
        util_errf(err, errlen, "cannot read the token file %s of %s", cfg->token_file,
                  cfg->source ? cfg->source : "the kubeconfig");
        return NULL;
    }
    util_errf(err, errlen,
              "%s has no bearer token%s: the scheduler authenticates /debug requests by bearer token (TokenReview); "
              "use a kubeconfig with a token (e.g. from `kubectl create token SERVICEACCOUNT`)",
              cfg->source ? cfg->source : "the kubeconfig",
              cfg->cert_file || cfg->cert_pem ? " (only a client certificate)" : "");
    return NULL;
}

/* Is the URL's host a loopback address or "localhost"? */
static int loopback_url(const char *url)
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    char host[256];
    size_t n;
    if (*h == '[') {
        n = strcspn(++h, "]");
    } else {
        n = strcspn(h, ":/?#");
    }
    if (n >= sizeof host)
        return 0;
    memcpy(host, h, n);
    host[n] = 0;
    struct in_addr a4;
    struct in6_addr a6;
    if (!strcmp(host, "localhost"))
        return 1;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* The answer as JSON, or -1 with a line that says what came back. */
static int decode(const kube_response_t *r, const char *where, json_t **out, char *err, size_t errlen)
{
    json_t *j = json_loadb(r->body, r->len, 0, NULL);
    if (r->status >= 200 && r->status < 300) {
        if (j) {
            *out = j;
            return 0;
        }
        util_errf(err, errlen, "%s: the answer (HTTP %ld) is not JSON: %.200s", where, r->status, r->body);
        return -1;
    }
    const char *msg = json_string_value(json_object_get(j, "message"));
    if (msg)
        util_errf(err, errlen, "%s: HTTP %ld: %s", where, r->status, msg);
    else {
        size_t n = strcspn(r->body, "\n");
        util_errf(err, errlen, "%s: HTTP %ld%s%.*s", where, r->status, n ? ": " : "", (int)(n > 300 ? 300 : n),
                  r->body);
    }
    json_decref(j);
    return -1;
}

int debug_holder_pod(const char *identity, const char *default_ns, char *ns, size_t nslen, char *name, size_t namelen)
{
    if (!identity || !*identity)
        return -1;
    const char *slash = strchr(identity, '/');
    const char *pod = slash ? slash + 1 : identity;
    size_t nsn = slash ? (size_t)(slash - identity) : strlen(default_ns);
    const char *nss = slash ? identity : default_ns;
    /* the "_PID" kube-style identities end with; pod names have no '_' */
    const char *us = strrchr(pod, '_');
    size_t podn = us ? (size_t)(us - pod) : strlen(pod);
    if (!nsn || nsn >= nslen || !podn || podn >= namelen)
        return -1;
    for (size_t i = 0; i < podn; i++)
        if (!(islower((unsigned char)pod[i]) || isdigit((unsigned char)pod[i]) || pod[i] == '-' || pod[i] == '.'))
            return -1;
    memcpy(ns, nss, nsn);
    ns[nsn] = 0;
    memcpy(name, pod, podn);
    name[podn] = 0;
    return 0;
}

#define BODY_MAX ((size_t)64 << 20) /* a decision record is KiBs; more is not an answer */

static size_t on_body(char *d, size_t sz, size_t n, void *ud)
{
    sbuf_t *b = ud;
    if (b->len + sz * n > BODY_MAX)
        return 0;
    sbuf_append(b, d, sz * n);
    return sz * n;
}

/* What to try when a direct GET of url failed with cc: a hint for the
 * scheduler's TLS (self-signed by default), or "". */
static const char *tls_hint(const char *url, CURLcode cc)
{
    if (cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE)
        return "; the scheduler's certificate is self-signed unless it was given one (its SHA-256 is in the "
               "scheduler's log): pass --certificate-authority FILE (the CA of its --tls-cert-file) or "
               "--insecure-skip-tls-verify";
    if (!strncmp(url, "http://", 7) && (cc == CURLE_GOT_NOTHING || cc == CURLE_RECV_ERROR))
        return "; the scheduler serves HTTPS unless it runs with --plain-http: use an https:// URL";
    if (!strncmp(url, "https://", 8) && cc == CURLE_SSL_CONNECT_ERROR)
        return "; a scheduler running with --plain-http serves http://";
    return "";
}

/* GET path from url with the token as Authorization. Plain libcurl, not
 * the kube client: this is not the API server (its certificate is checked
 * against --certificate-authority, else the system's CAs). */
static int get_direct(const cli_t *c, const kube_config_t *cfg, const char *url, const char *path, json_t **out,
                      char *err, size_t errlen)
{
    char *tok = config_token(cfg, err, errlen);
    /* No token, over https: the kubeconfig's client certificate, which a
     * scheduler running --client-ca-file takes. */
    int use_cert =
        !tok && !strncmp(url, "https://", 8) && (cfg->cert_file || cfg->cert_pem) && (cfg->key_file || cfg->key_pem);
    if (!tok && !use_cert)
        return -1;
    if (tok && !strncmp(url, "http://", 7) && !loopback_url(url))
        fprintf(c->errf, "warning: %s is plain HTTP: your bearer token travels unencrypted\n", url);
    sbuf_t u = { 0 }, h = { 0 }, b = { 0 };
    sbuf_printf(&u, "%.*s%s", (int)(strlen(url) - (url[strlen(url) - 1] == '/')), url, path);
    struct curl_slist *hs = NULL;
    if (tok) {
        sbuf_printf(&h, "Authorization: Bearer %s", tok);
        hs = curl_slist_append(hs, h.data);
    }
    hs = curl_slist_append(hs, "Accept: application/json");
    char ebuf[CURL_ERROR_SIZE] = "";
    CURL *ch = curl_easy_init();
    int rc = -1;
    if (!ch) {
        util_errf(err, errlen, "cannot create a curl handle");
        goto out;
    }
    if (use_cert)
        kube_curl_client_cert(ch, cfg);
    curl_easy_setopt(ch, CURLOPT_URL, u.data);
    curl_easy_setopt(ch, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(ch, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(ch, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(ch, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(ch, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(ch, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(ch, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(ch, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->server_ca)
        curl_easy_setopt(ch, CURLOPT_CAINFO, c->server_ca);
    if (c->server_insecure) {
        curl_easy_setopt(ch, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(ch, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    curl_easy_setopt(ch, CURLOPT_USERAGENT, c->cmd && c->cmd->user_agent ? c->cmd->user_agent : "ai-scheduler");
    CURLcode cc = curl_easy_perform(ch);
    kube_response_t r = { 0 };
    curl_easy_getinfo(ch, CURLINFO_RESPONSE_CODE, &r.status);
    curl_easy_cleanup(ch);
    if (cc != CURLE_OK) {
        util_errf(err, errlen, "GET %s: %s%s", u.data, ebuf[0] ? ebuf : curl_easy_strerror(cc), tls_hint(url, cc));
        goto out;
    }
    r.body = b.data ? b.data : "";
    r.len = b.len;
    rc = decode(&r, u.data, out, err, errlen);
    if (rc != 0 && use_cert && r.status == 401) {
        char *was = util_strdup(err);
        util_errf(err, errlen,
                  "%s (the kubeconfig's client certificate was sent: the scheduler takes one only with "
                  "--client-ca-file naming its CA; else use a kubeconfig with a bearer token)",
                  was);
        free(was);
    }
out:
    curl_slist_free_all(hs);
    if (h.data)
        memset(h.data, 0, h.len);
    if (tok)
        memset(tok, 0, strlen(tok));
    sbuf_free(&h);
    sbuf_free(&u);
    sbuf_free(&b);
    free(tok);
    return rc;
}

/* The leader's pod from its Lease. */
static int find_leader(kube_client_t *kc, const cli_t *c, char *ns, size_t nslen, char *pod, size_t podlen, char *err,
                       size_t errlen)
{
    char *ens = util_urlencode(c->lease_ns), *en = util_urlencode(c->lease_name), e[512];
    sbuf_t p = { 0 };
    sbuf_printf(&p, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", ens, en);
    free(ens);
    free(en);
    json_t *lease = NULL;
    long st = 0;
    int rc = kube_get_json(kc, p.data, &lease, &st, e, sizeof e);
    sbuf_free(&p);
    if (rc != 0) {
        util_errf(err, errlen, "cannot read the scheduler's Lease %s/%s (%s)%s", c->lease_ns, c->lease_name, e,
                  st == 404 ? "; is the scheduler running with leader election? else use --server URL" : "");
        return -1;
    }
    const char *id = json_string_value(json_object_get(json_object_get(lease, "spec"), "holderIdentity"));
    if (!id || !*id) {
        util_errf(err, errlen, "no scheduler holds the Lease %s/%s: no leader to ask (or use --server URL)",
                  c->lease_ns, c->lease_name);
        json_decref(lease);
        return -1;
    }
    rc = debug_holder_pod(id, c->lease_ns, ns, nslen, pod, podlen);
    if (rc != 0)
        util_errf(err, errlen,
                  "the Lease %s/%s is held by \"%s\", which names no pod (a scheduler outside the cluster?): use "
                  "--server URL",
                  c->lease_ns, c->lease_name, id);
    json_decref(lease);
    return rc;
}

/* GET path from pod ns/name's port through the API server's pod proxy,
 * scheme "https" or "http" to the pod: 0 with *r (any status), or -1. */
static int proxy_get(kube_client_t *kc, const char *ns, const char *pod, int port, const char *scheme, const char *path,
                     const char *const *hs, kube_response_t *r, char *err, size_t errlen)
{
    char e[512];
    char *ens = util_urlencode(ns), *epod = util_urlencode(pod);
    sbuf_t p = { 0 };
    sbuf_printf(&p, "/api/v1/namespaces/%s/pods/%s:%s:%d/proxy%s", ens, scheme, epod, port, path);
    free(ens);
    free(epod);
    int rc = kube_request_headers(kc, "GET", p.data, hs, r, e, sizeof e);
    if (rc != 0)
        util_errf(err, errlen, "leader %s/%s via the API server: %s", ns, pod, e);
    sbuf_free(&p);
    return rc;
}

/* Did the API server say the pod answered its TLS handshake with plain
 * HTTP (Go's messages for it)? */
static int spoke_plain_http(const kube_response_t *r)
{
    if (r->status < 500 || !r->body)
        return 0;
    return strstr(r->body, "server gave HTTP response to HTTPS client") != NULL ||
           strstr(r->body, "first record does not look like a TLS handshake") != NULL;
}

/* GET path from the leader through the API server's pod proxy: https to
 * the pod (the API server does not check a pod's certificate), plain http
 * only when the pod answered that way. */
static int get_proxied(const cli_t *c, const kube_config_t *cfg, const char *path, json_t **out, char *err,
                       size_t errlen)
{
    char *tok = config_token(cfg, err, errlen);
    if (!tok)
        return -1;
    char e[512], ns[64], pod[254];
    kube_client_opts_t o = { .timeout_s = 30, .user_agent = c->cmd ? c->cmd->user_agent : "ai-scheduler" };
    kube_client_t *kc = kube_client_new(cfg, &o, e, sizeof e);
    int rc = -1;
    if (!kc) {
        util_errf(err, errlen, "%s", e);
        free(tok);
        return -1;
    }
    if (find_leader(kc, c, ns, sizeof ns, pod, sizeof pod, err, errlen) == 0) {
        sbuf_t h = { 0 };
        sbuf_printf(&h, "%s: Bearer %s", "X-Ai-Scheduler-Authorization", tok);
        const char *hs[] = { h.data, NULL };
        kube_response_t r;
        int plain = 0;
        rc = proxy_get(kc, ns, pod, c->sched_port, "https", path, hs, &r, err, errlen);
        if (rc == 0 && spoke_plain_http(&r)) { /* a scheduler running --plain-http */
            kube_response_free(&r);
            plain = 1;
            rc = proxy_get(kc, ns, pod, c->sched_port, "http", path, hs, &r, err, errlen);
        }
        if (rc == 0) {
            sbuf_t w = { 0 };
            sbuf_printf(&w, "leader %s/%s (via the API server's pod proxy%s)", ns, pod, plain ? ", plain HTTP" : "");
            rc = decode(&r, w.data, out, err, errlen);
            sbuf_free(&w);
            kube_response_free(&r);
        }
        memset(h.data, 0, h.len);
        sbuf_free(&h);
    }
    kube_client_free(kc);
    memset(tok, 0, strlen(tok));
    free(tok);
    return rc;
}

int debug_get(const cli_t *c, const char *server_url, const char *path, json_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!path || path[0] != '/') {
        util_errf(err, errlen, "debug_get: the path must start with '/'");
        return -1;
    }
    kube_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    char e[512] = "";
    if (kube_config_load(&cfg, c->kubeconfig, e, sizeof e) < 0) {
        util_errf(err, errlen, "%s", e[0] ? e : "cannot load kubeconfig");
        return -1;
    }
    int rc = server_url && *server_url ? get_direct(c, &cfg, server_url, path, out, err, errlen)
                                       : get_proxied(c, &cfg, path, out, err, errlen);
    kube_config_free(&cfg);
    return rc;
}

/* ------------------------------------------------------------ command */

static void usage_text(FILE *f)
{
    fputs("Usage: ai-scheduler debug PATH [--server URL] [--kubeconfig FILE] [-o json|yaml]\n"
          "       [--lease-namespace NS] [--lease-name NAME] [--scheduler-port PORT]\n"
          "GETs one of the scheduler's authenticated /debug endpoints (e.g. /debug/whoami)\n"
          "and prints the answer. The kubeconfig's bearer token authenticates you (with\n"
          "--server https://..., its client certificate when it has no token); the\n"
          "scheduler asks the API server whether you may see it.\n"
          "  --server URL           the scheduler's HTTPS port (e.g. https://127.0.0.1:10261\n"
          "                         after kubectl port-forward); default: the leader\n"
          "                         named by its Lease, through the API server's pod proxy\n"
          "  --certificate-authority FILE  with --server: check the scheduler's certificate\n"
          "                         against FILE (default: the system's CAs)\n"
          "  --insecure-skip-tls-verify    with --server: do not check it (the scheduler's\n"
          "                         default certificate is self-signed)\n"
          "  --lease-namespace NS   the scheduler's Lease (kube-system)\n"
          "  --lease-name NAME      (ai-scheduler)\n"
          "  --scheduler-port PORT  the scheduler pod's metrics port (10261)\n"
          "  --kubeconfig FILE      default: $KUBECONFIG, ~/.kube/config, in-cluster\n"
          "  -o, --output FORMAT    json (default) or yaml\n"
          "  -h, --help             this text\n",
          f);
}

static int take_path(void *ctx, int argc, char **argv, int *i)
{
    const char **path = ctx;
    (void)argc;
    if (argv[*i][0] != '/' || *path)
        return 0;
    *path = argv[*i];
    return 1;
}

int debug_main(int argc, char **argv, FILE *out, FILE *errf)
{
    static const cli_cmd_t cmd = { "ai-scheduler/debug", CLI_YAML | CLI_SERVER, usage_text, take_path };
    cli_t c;
    const char *path = NULL;
    int rc = cli_parse(&c, &cmd, &path, argc, argv, 0, out, errf);
    if (rc != CLI_CONTINUE)
        return rc;
    if (!path) {
        fprintf(errf, "error: a PATH such as /debug/whoami is required\n");
        usage_text(errf);
        return 2;
    }
    if (c.fmt == CLI_OUT_TABLE)
        c.fmt = CLI_OUT_JSON;
    json_t *doc = NULL;
    char err[1024];
    if (debug_get(&c, c.server, path, &doc, err, sizeof err) != 0) {
        fprintf(errf, "error: %s\n", err);
        return 1;
    }
    rc = cli_emit(out, c.fmt, doc) == 0 ? 0 : 1;
    json_decref(doc);
    return rc;
}
