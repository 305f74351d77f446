/* test_debugclient.c -- the CLI's way to the scheduler's /debug endpoints
 * (cmd/ai-scheduler/debugclient.c): --server directly with the kubeconfig's
 * token, the leader from its Lease through the API server's pod proxy (the
 * token in X-Ai-Scheduler-Authorization), and the errors a user sees. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake_api.h"
#include "tmpdir.h"
#include "ai-scheduler/cli.h"
#include "ai-scheduler/debugclient.h"
#include "server/auth.h"
#include "server/http.h"
#include "server/tls.h"
#include "tls_fixture.h"

/* One fake serves both roles: the scheduler's /debug (direct) and the API
 * server (Lease, pod proxy). It records the last request's headers. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char last_auth[256], last_fwd[256], last_url[512];
static const char *lease_holder = "sched-ns/sched-7d9f-abcde_42";

static void record(struct MHD_Connection *c, const char *url)
{
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *f = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Ai-Scheduler-Authorization");
    pthread_mutex_lock(&mu);
    snprintf(last_auth, sizeof last_auth, "%s", a ? a : "");
    snprintf(last_fwd, sizeof last_fwd, "%s", f ? f : "");
    snprintf(last_url, sizeof last_url, "%s", url);
    pthread_mutex_unlock(&mu);
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned code, const char *body)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *data, size_t *size, void **con_cls)
{
    const char *body = NULL;
    if (fake_api_gather(con_cls, data, size, &body))
        return MHD_YES;
    record(c, url);
    /* port 10262: a scheduler running --plain-http, as the API server's
     * proxy reports a TLS handshake answered in plain HTTP */
    if (!strcmp(url, "/api/v1/namespaces/sched-ns/pods/https:sched-7d9f-abcde:10262/proxy/debug/whoami"))
        return fake_api_status(c, 503,
                               "error trying to reach service: http: server gave HTTP response to HTTPS client");
    if (!strcmp(url, "/debug/whoami") ||
        !strcmp(url, "/api/v1/namespaces/sched-ns/pods/https:sched-7d9f-abcde:10261/proxy/debug/whoami") ||
        !strcmp(url, "/api/v1/namespaces/sched-ns/pods/http:sched-7d9f-abcde:10262/proxy/debug/whoami")) {
        json_t *j = json_pack("{s:s}", "username", "alice");
        enum MHD_Result rc = fake_api_json(c, 200, j);
        json_decref(j);
        return rc;
    }
    if (!strcmp(url, "/debug/forbidden"))
        return fake_api_status(c, 403, "user \"alice\" cannot get resource \"pods\" in the namespace \"x\"");
    if (!strcmp(url, "/debug/html"))
        return text(c, 200, "<html>hello</html>");
    if (!strcmp(url, "/debug/oops"))
        return text(c, 502, "Bad Gateway\nmore");
    if (!strcmp(url, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ai-scheduler")) {
        json_t *j = json_pack("{s:s,s:{s:s}}", "kind", "Lease", "spec", "holderIdentity", lease_holder);
        enum MHD_Result rc = fake_api_json(c, 200, j);
        json_decref(j);
        return rc;
    }
    return fake_api_status(c, 404, "not found");
}

static struct MHD_Daemon *d;
static int port;
static char dir[256], kc_token[300], kc_cert[300];

static void write_file(const char *path, const char *text_)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text_, f);
    fclose(f);
}

static int setup(void **st)
{
    d = fake_api_start(handler, fake_api_body_done, &port);
    if (!d || !mkdtemp(tmp_template(dir, sizeof dir, "test_debugclient.")))
        return -1;
    char buf[1024];
    snprintf(kc_token, sizeof kc_token, "%s/token.kubeconfig", dir);
    snprintf(buf, sizeof buf,
             "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:%d\n"
             "users:\n- name: u\n  user:\n    token: tok-alice\ncontexts:\n- name: x\n  context:\n    cluster: c\n"
             "    user: u\ncurrent-context: x\n",
             port);
    write_file(kc_token, buf);
    snprintf(kc_cert, sizeof kc_cert, "%s/cert.kubeconfig", dir);
    snprintf(buf, sizeof buf,
             "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:%d\n"
             "users:\n- name: u\n  user:\n    client-certificate-data: QUJD\n    client-key-data: QUJD\n"
             "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n",
             port);
    write_file(kc_cert, buf);
    return 0;
}

static int teardown(void **st)
{
    MHD_stop_daemon(d);
    tmp_rm_tree(dir);
    return 0;
}

static cli_t cli_for(const char *kubeconfig, FILE *errf)
{
    static const cli_cmd_t cmd = { .user_agent = "test", .flags = CLI_SERVER };
    cli_t c = { .cmd = &cmd, .out = stdout, .errf = errf, .kubeconfig = kubeconfig };
    c.lease_ns = "kube-system";
    c.lease_name = "ai-scheduler";
    c.sched_port = 10261;
    return c;
}

static void test_holder_pod(void **st)
{
    char ns[64], name[254];
    assert_int_equal(
        debug_holder_pod("sched-ns/ai-scheduler-5c7d-x2x_17", "kube-system", ns, sizeof ns, name, sizeof name), 0);
    assert_string_equal(ns, "sched-ns");
    assert_string_equal(name, "ai-scheduler-5c7d-x2x");
    /* hostname_pid: the pod in the Lease's namespace */
    assert_int_equal(debug_holder_pod("ai-scheduler-5c7d-x2x_17", "kube-system", ns, sizeof ns, name, sizeof name), 0);
    assert_string_equal(ns, "kube-system");
    assert_string_equal(name, "ai-scheduler-5c7d-x2x");
    /* no pid suffix: the whole identity */
    assert_int_equal(debug_holder_pod("pod-a", "ns", ns, sizeof ns, name, sizeof name), 0);
    assert_string_equal(name, "pod-a");
    /* not a pod name: an outside scheduler's host, empty parts */
    assert_int_equal(debug_holder_pod("My_Laptop_12", "ns", ns, sizeof ns, name, sizeof name), -1);
    assert_int_equal(debug_holder_pod("", "ns", ns, sizeof ns, name, sizeof name), -1);
    assert_int_equal(debug_holder_pod("/x_1", "ns", ns, sizeof ns, name, sizeof name), -1);
    assert_int_equal(debug_holder_pod("ns/_1", "ns", ns, sizeof ns, name, sizeof name), -1);
    assert_int_equal(debug_holder_pod(NULL, "ns", ns, sizeof ns, name, sizeof name), -1);
}

static void test_direct(void **st)
{
    char url[64], err[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port); /* a trailing slash is fine */
    cli_t c = cli_for(kc_token, stderr);
    json_t *out = NULL;
    assert_int_equal(debug_get(&c, url, "/debug/whoami", &out, err, sizeof err), 0);
    assert_string_equal(json_string_value(json_object_get(out, "username")), "alice");
    json_decref(out);
    pthread_mutex_lock(&mu);
    assert_string_equal(last_auth, "Bearer tok-alice");
    assert_string_equal(last_fwd, "");
    pthread_mutex_unlock(&mu);

    /* a Status body: its message */
    assert_int_equal(debug_get(&c, url, "/debug/forbidden", &out, err, sizeof err), -1);
    assert_null(out);
    char want[256];
    snprintf(want, sizeof want,
             "http://127.0.0.1:%d/debug/forbidden: HTTP 403: user \"alice\" cannot get resource \"pods\" in the "
             "namespace \"x\"",
             port);
    assert_string_equal(err, want);
    /* not JSON, other errors: what came back */
    assert_int_equal(debug_get(&c, url, "/debug/html", &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "the answer (HTTP 200) is not JSON: <html>hello</html>"));
    assert_int_equal(debug_get(&c, url, "/debug/oops", &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "/debug/oops: HTTP 502: Bad Gateway"));
    assert_null(strstr(err, "more"));
    /* nothing listening */
    assert_int_equal(debug_get(&c, "http://127.0.0.1:1", "/debug/whoami", &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "GET http://127.0.0.1:1/debug/whoami: "));
    /* a bad path */
    assert_int_equal(debug_get(&c, url, "debug/whoami", &out, err, sizeof err), -1);
}

static void test_cert_only(void **st)
{
    char url[64], err[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    cli_t c = cli_for(kc_cert, stderr);
    json_t *out = NULL;
    assert_int_equal(debug_get(&c, url, "/debug/whoami", &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "has no bearer token (only a client certificate): the scheduler authenticates"));
    assert_int_equal(debug_get(&c, NULL, "/debug/whoami", &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "has no bearer token"));
}

static void test_plain_http_warning(void **st)
{
    /* Not loopback: a warning; the request fails (nothing there), quickly. */
    char *w = NULL, err[512];
    size_t wl = 0;
    FILE *errf = open_memstream(&w, &wl);
    cli_t c = cli_for(kc_token, errf);
    json_t *out = NULL;
    assert_int_equal(debug_get(&c, "http://0.0.0.0:1", "/debug/whoami", &out, err, sizeof err), -1);
    assert_int_equal(debug_get(&c, "http://[::1]:1", "/debug/whoami", &out, err, sizeof err), -1);
    assert_int_equal(debug_get(&c, "http://localhost:1", "/debug/whoami", &out, err, sizeof err), -1);
    fclose(errf);
    assert_string_equal(w, "warning: http://0.0.0.0:1 is plain HTTP: your bearer token travels unencrypted\n");
    free(w);
}

static void test_leader_proxy(void **st)
{
    char err[512];
    cli_t c = cli_for(kc_token, stderr);
    json_t *out = NULL;
    assert_int_equal(debug_get(&c, NULL, "/debug/whoami", &out, err, sizeof err), 0);
    assert_string_equal(json_string_value(json_object_get(out, "username")), "alice");
    json_decref(out);
    pthread_mutex_lock(&mu);
    assert_string_equal(last_url, "/api/v1/namespaces/sched-ns/pods/https:sched-7d9f-abcde:10261/proxy/debug/whoami");
    assert_string_equal(last_auth, "Bearer tok-alice"); /* for the API server */
    assert_string_equal(last_fwd, "Bearer tok-alice");  /* for the scheduler */
    pthread_mutex_unlock(&mu);

    /* a leader that speaks plain HTTP: asked again over http */
    c.sched_port = 10262;
    assert_int_equal(debug_get(&c, NULL, "/debug/whoami", &out, err, sizeof err), 0);
    assert_string_equal(json_string_value(json_object_get(out, "username")), "alice");
    json_decref(out);
    pthread_mutex_lock(&mu);
    assert_string_equal(last_url, "/api/v1/namespaces/sched-ns/pods/http:sched-7d9f-abcde:10262/proxy/debug/whoami");
    pthread_mutex_unlock(&mu);

    /* another port: another proxy path (404 here, with the message) */
    c.sched_port = 9999;
    assert_int_equal(debug_get(&c, NULL, "/debug/whoami", &out, err, sizeof err), -1);
    assert_string_equal(err, "leader sched-ns/sched-7d9f-abcde (via the API server's pod proxy): HTTP 404: not found");
    c.sched_port = 10261;

    /* no Lease, an empty holder, a holder that names no pod */
    c.lease_name = "other";
    assert_int_equal(debug_get(&c, NULL, "/debug/whoami", &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot read the scheduler's Lease kube-system/other ("));
    assert_non_null(strstr(err, "else use --server URL"));
    c.lease_name = "ai-scheduler";
    lease_holder = "";
    assert_int_equal(debug_get(&c, NULL, "/debug/whoami", &out, err, sizeof err), -1);
    assert_string_equal(err, "no scheduler holds the Lease kube-system/ai-scheduler: no leader to ask (or use --server "
                             "URL)");
    lease_holder = "Laptop_99";
    assert_int_equal(debug_get(&c, NULL, "/debug/whoami", &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "is held by \"Laptop_99\", which names no pod"));
    lease_holder = "sched-ns/sched-7d9f-abcde_42";
}

static void test_flags(void **st)
{
    static const cli_cmd_t cmd = { .user_agent = "t", .flags = CLI_SERVER, .usage = NULL };
    cli_t c;
    char *argv[] = { (char *)"--server",     (char *)"http://h:1", (char *)"--lease-namespace=ns",
                     (char *)"--lease-name", (char *)"l",          (char *)"--scheduler-port=8080" };
    assert_int_equal(cli_parse(&c, &cmd, NULL, 6, argv, 0, stdout, stderr), CLI_CONTINUE);
    assert_string_equal(c.server, "http://h:1");
    assert_string_equal(c.lease_ns, "ns");
    assert_string_equal(c.lease_name, "l");
    assert_int_equal(c.sched_port, 8080);
    assert_int_equal(cli_parse(&c, &cmd, NULL, 0, argv, 0, stdout, stderr), CLI_CONTINUE);
    assert_null(c.server);
    assert_string_equal(c.lease_ns, "kube-system");
    assert_string_equal(c.lease_name, "ai-scheduler");
    assert_int_equal(c.sched_port, 10261);
    char *e;
    size_t el = 0;
    FILE *errf = open_memstream(&e, &el);
    char *bad1[] = { (char *)"--server", (char *)"h:1" }, *bad2[] = { (char *)"--scheduler-port", (char *)"0" },
         *bad3[] = { (char *)"--server" };
    assert_int_equal(cli_parse(&c, &cmd, NULL, 2, bad1, 0, stdout, errf), 2);
    assert_int_equal(cli_parse(&c, &cmd, NULL, 2, bad2, 0, stdout, errf), 2);
    assert_int_equal(cli_parse(&c, &cmd, NULL, 1, bad3, 0, stdout, errf), 2);
    fclose(errf);
    assert_string_equal(e, "error: --server wants an http:// or https:// URL, not \"h:1\"\n"
                           "error: --scheduler-port wants 1..65535, not \"0\"\n"
                           "error: --server needs a value\n");
    free(e);
}

static int alice(void *ud, const char *path, const char *query, char **body, const char **ctype)
{
    (void)ud;
    (void)path;
    (void)query;
    *body = strdup("{\"username\":\"alice\"}");
    *ctype = "application/json";
    return 200;
}

/* --server https://: the scheduler's self-signed certificate is refused
 * (with what to pass), taken with --certificate-authority or
 * --insecure-skip-tls-verify; http:// to it says to use https. */
static void test_direct_tls(void **st)
{
    const char *hosts[] = { "127.0.0.1" };
    tls_pair_t p;
    char err[1024], url[64], caf[300];
    assert_int_equal(tls_self_signed(hosts, 1, 1, &p, err, sizeof err), 0);
    snprintf(caf, sizeof caf, "%s/sched.crt", dir);
    write_file(caf, p.cert_pem);
    http_server_opts_t o = { .bind_address = "127.0.0.1", .tls_cert_pem = p.cert_pem, .tls_key_pem = p.key_pem };
    http_server_t *s = http_server_start(&o, err, sizeof err);
    assert_non_null(s);
    http_route_t r = { .prefix = "/debug/who", .fn = alice, .open = 1 };
    assert_int_equal(http_server_route(s, &r), 0);
    snprintf(url, sizeof url, "https://127.0.0.1:%d", http_server_port(s));
    cli_t c = cli_for(kc_token, stderr);
    json_t *out = NULL;
    assert_int_equal(debug_get(&c, url, "/debug/who", &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "; the scheduler's certificate is self-signed unless it was given one (its SHA-256 is "
                                "in the scheduler's log): pass --certificate-authority FILE (the CA of its "
                                "--tls-cert-file) or --insecure-skip-tls-verify"));
    c.server_ca = caf;
    assert_int_equal(debug_get(&c, url, "/debug/who", &out, err, sizeof err), 0);
    assert_string_equal(json_string_value(json_object_get(out, "username")), "alice");
    json_decref(out);
    c.server_ca = NULL;
    c.server_insecure = 1;
    assert_int_equal(debug_get(&c, url, "/debug/who", &out, err, sizeof err), 0);
    json_decref(out);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", http_server_port(s));
    assert_int_equal(debug_get(&c, url, "/debug/who", &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "; the scheduler serves HTTPS unless it runs with --plain-http: use an https:// URL"));
    http_server_stop(s);
    tls_pair_free(&p);

    /* the flags */
    static const cli_cmd_t cmd = { .user_agent = "t", .flags = CLI_SERVER, .usage = NULL };
    char *argv[] = { (char *)"--insecure-skip-tls-verify", (char *)"--certificate-authority", caf };
    assert_int_equal(cli_parse(&c, &cmd, NULL, 3, argv, 0, stdout, stderr), CLI_CONTINUE);
    assert_int_equal(c.server_insecure, 1);
    assert_string_equal(c.server_ca, caf);
}

/* A kubeconfig with a client certificate only: sent over https, where a
 * scheduler with --client-ca-file takes it; one without says why it fails. */
static void test_direct_client_cert(void **st)
{
    fx_cert_t ca = fx_make(NULL, "clients", NULL, NULL, NULL, -60);
    fx_cert_t carol = fx_make(&ca, "carol", "team-a", "clientAuth", NULL, -60);
    char kc[300], caf[300], err[1024], url[64];
    unsigned char c64[8192], k64[8192];
    EVP_EncodeBlock(c64, (const unsigned char *)carol.cert_pem, (int)strlen(carol.cert_pem));
    EVP_EncodeBlock(k64, (const unsigned char *)carol.key_pem, (int)strlen(carol.key_pem));
    char *buf = NULL;
    size_t bl = 0;
    FILE *f = open_memstream(&buf, &bl);
    fprintf(f,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:%d\n"
            "users:\n- name: u\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n"
            "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n",
            port, c64, k64);
    fclose(f);
    snprintf(kc, sizeof kc, "%s/carol.kubeconfig", dir);
    write_file(kc, buf);
    free(buf);
    snprintf(caf, sizeof caf, "%s/clients.crt", dir);
    write_file(caf, ca.cert_pem);

    const char *hosts[] = { "127.0.0.1" };
    tls_pair_t p;
    assert_int_equal(tls_self_signed(hosts, 1, 1, &p, err, sizeof err), 0);
    char *ca_pem = NULL;
    tls_client_ca_t *cca = tls_client_ca_load(caf, &ca_pem, err, sizeof err);
    assert_non_null(cca);
    char server[64];
    snprintf(server, sizeof server, "http://127.0.0.1:%d", port);
    kube_config_t acfg = { .server = server };
    auth_t *a = auth_new(&acfg, NULL, err, sizeof err); /* whoami asks no review of a certificate's user */
    assert_non_null(a);
    http_server_opts_t o = { .bind_address = "127.0.0.1",
                             .auth = a,
                             .tls_cert_pem = p.cert_pem,
                             .tls_key_pem = p.key_pem,
                             .client_ca = cca,
                             .client_ca_pem = ca_pem };
    http_server_t *s = http_server_start(&o, err, sizeof err);
    assert_non_null(s);
    snprintf(url, sizeof url, "https://127.0.0.1:%d", http_server_port(s));
    cli_t c = cli_for(kc, stderr);
    c.server_insecure = 1;
    json_t *out = NULL;
    assert_int_equal(debug_get(&c, url, "/debug/whoami", &out, err, sizeof err), 0);
    char *j = json_dumps(out, JSON_COMPACT);
    assert_string_equal(j, "{\"username\":\"carol\",\"uid\":\"\",\"groups\":[\"team-a\"],\"extra\":{}}");
    free(j);
    json_decref(out);
    http_server_stop(s);

    /* without --client-ca-file: 401, and the error says why */
    o.client_ca = NULL;
    o.client_ca_pem = NULL;
    s = http_server_start(&o, err, sizeof err);
    assert_non_null(s);
    snprintf(url, sizeof url, "https://127.0.0.1:%d", http_server_port(s));
    assert_int_equal(debug_get(&c, url, "/debug/whoami", &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "HTTP 401: a bearer token is required (the kubeconfig's client certificate was sent: "
                                "the scheduler takes one only with --client-ca-file naming its CA; else use a "
                                "kubeconfig with a bearer token)"));
    http_server_stop(s);
    auth_free(a);
    tls_client_ca_free(cca);
    free(ca_pem);
    tls_pair_free(&p);
    fx_free(&ca);
    fx_free(&carol);
}

static void test_debug_main(void **st)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    char *o = NULL, *e = NULL;
    size_t ol = 0, el = 0;
    FILE *out = open_memstream(&o, &ol), *errf = open_memstream(&e, &el);
    char *argv[] = { (char *)"/debug/whoami", (char *)"--server", url, (char *)"--kubeconfig", kc_token, (char *)"-o",
                     (char *)"yaml" };
    assert_int_equal(debug_main(7, argv, out, errf), 0);
    char *argv2[] = { (char *)"/debug/forbidden", (char *)"--server", url, (char *)"--kubeconfig", kc_token };
    assert_int_equal(debug_main(5, argv2, out, errf), 1);
    char *argv3[] = { (char *)"--server", url };
    assert_int_equal(debug_main(2, argv3, out, errf), 2);
    fclose(out);
    fclose(errf);
    assert_string_equal(o, "username: alice\n");
    assert_non_null(strstr(e, "error: http://127.0.0.1:"));
    assert_non_null(strstr(e, "/debug/forbidden: HTTP 403: user \"alice\" cannot get"));
    assert_non_null(strstr(e, "error: a PATH such as /debug/whoami is required\n"));
    free(o);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_holder_pod),         cmocka_unit_test(test_direct),
        cmocka_unit_test(test_cert_only),          cmocka_unit_test(test_plain_http_warning),
        cmocka_unit_test(test_leader_proxy),       cmocka_unit_test(test_flags),
        cmocka_unit_test(test_debug_main),         cmocka_unit_test(test_direct_tls),
        cmocka_unit_test(test_direct_client_cert),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
