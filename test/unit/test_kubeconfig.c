/* test_kubeconfig.c -- kubeconfig parsing, in-cluster config, base64. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/kubeconfig.h"
#include "tmpdir.h"

static char tmpdir[256];

static void write_file(const char *name, const char *text)
{
    char p[320];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *path_of(const char *name)
{
    static char p[320];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return p;
}

static int setup(void **state)
{
    tmp_template(tmpdir, sizeof tmpdir, "kcfgtest");
    assert_non_null(mkdtemp(tmpdir));
    unsetenv("KUBECONFIG");
    return 0;
}

static int teardown(void **state)
{
    assert_int_equal(tmp_rm_tree(tmpdir), 0);
    return 0;
}

/* ---- base64 ---- */

static void test_base64(void **state)
{
    size_t n = 0;
    char *s = kube_base64_decode("aGVsbG8=", &n);
    assert_string_equal(s, "hello");
    assert_int_equal(n, 5);
    free(s);
    s = kube_base64_decode("aGVsbG8", &n); /* padding optional */
    assert_string_equal(s, "hello");
    free(s);
    s = kube_base64_decode("aGVs\nbG8h\n", &n); /* folded lines */
    assert_string_equal(s, "hello!");
    assert_int_equal(n, 6);
    free(s);
    s = kube_base64_decode("aA==", &n);
    assert_string_equal(s, "h");
    assert_int_equal(n, 1);
    free(s);
    s = kube_base64_decode("", &n);
    assert_string_equal(s, "");
    assert_int_equal(n, 0);
    free(s);
    assert_null(kube_base64_decode("a", &n));        /* impossible length */
    assert_null(kube_base64_decode("ab$d", &n));     /* bad alphabet */
    assert_null(kube_base64_decode("aA==aA==", &n)); /* data after padding */
    /* Binary with NULs survives and the length says so. */
    s = kube_base64_decode("AAEC", &n);
    assert_int_equal(n, 3);
    assert_int_equal(s[0], 0);
    assert_int_equal(s[2], 2);
    free(s);
}

/* ---- files ---- */

#define HEAD "apiVersion: v1\nkind: Config\n"

static void test_inline_data(void **state)
{
    /* "-----BEGIN CA-----" etc. */
    write_file("config", HEAD "current-context: prod\n"
                              "contexts:\n"
                              "- name: dev\n  context: {cluster: devc, user: devu}\n"
                              "- name: prod\n  context:\n    cluster: prodc\n    user: produ\n    namespace: x\n"
                              "clusters:\n"
                              "- name: devc\n  cluster: {server: 'https://dev:6443'}\n"
                              "- name: prodc\n  cluster:\n    server: https://prod.example:6443//\n"
                              "    certificate-authority-data: LS0tLS1CRUdJTiBDQS0tLS0t\n"
                              "users:\n"
                              "- name: devu\n  user: {token: devtoken}\n"
                              "- name: produ\n  user:\n"
                              "    client-certificate-data: Y2VydA==\n"
                              "    client-key-data: a2V5\n"
                              "    token: s3cret\n");
    kube_config_t c;
    char err[256] = "";
    assert_int_equal(kube_config_load(&c, path_of("config"), err, sizeof err), 0);
    assert_string_equal(c.server, "https://prod.example:6443");
    assert_string_equal(c.ca_pem, "-----BEGIN CA-----");
    assert_null(c.ca_file);
    assert_string_equal(c.cert_pem, "cert");
    assert_string_equal(c.key_pem, "key");
    assert_string_equal(c.token, "s3cret");
    assert_null(c.token_file);
    assert_int_equal(c.insecure, 0);
    assert_string_equal(c.source, path_of("config"));

    kube_config_t d;
    assert_int_equal(kube_config_copy(&d, &c), 0);
    kube_config_free(&c);
    assert_string_equal(d.server, "https://prod.example:6443");
    assert_string_equal(d.key_pem, "key");
    kube_config_free(&d);
    assert_null(d.server);
}

/* From a buffer (a Secret's): inline credentials only. */
static void test_parse_buffer(void **state)
{
    (void)state;
    const char *ok =
        HEAD "current-context: c\n"
             "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
             "clusters:\n- name: k\n  cluster: {server: 'https://m:6443', certificate-authority-data: Y2E=}\n"
             "users:\n- name: u\n  user: {token: t0k}\n";
    kube_config_t c;
    char err[300] = "";
    assert_int_equal(kube_config_parse(&c, ok, strlen(ok), "in secret ns/s", err, sizeof err), 0);
    assert_string_equal(c.server, "https://m:6443");
    assert_string_equal(c.ca_pem, "ca");
    assert_string_equal(c.token, "t0k");
    assert_string_equal(c.source, "in secret ns/s");
    kube_config_free(&c);
    const char *steal =
        HEAD "current-context: c\n"
             "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
             "clusters:\n- name: k\n  cluster: {server: 'https://evil:6443'}\n"
             "users:\n- name: u\n  user: {tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}\n";
    assert_int_equal(kube_config_parse(&c, steal, strlen(steal), "in secret ns/s", err, sizeof err), -1);
    assert_non_null(strstr(err, "kubeconfig in secret ns/s: file references"));
    assert_null(c.server);
    const char *bad = "current-context: [";
    assert_int_equal(kube_config_parse(&c, bad, strlen(bad), "in secret ns/s", err, sizeof err), -1);
    assert_non_null(strstr(err, "kubeconfig in secret ns/s: YAML syntax error"));
    const char *none = HEAD "clusters: []\n";
    assert_int_equal(kube_config_parse(&c, none, strlen(none), "in secret ns/s", err, sizeof err), -1);
    assert_string_equal(err, "kubeconfig in secret ns/s: no current-context");
}

static void test_relative_paths(void **state)
{
    write_file("config", HEAD "current-context: c\n"
                              "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                              "clusters:\n- name: k\n  cluster:\n    server: https://10.0.0.1\n"
                              "    certificate-authority: pki/ca.crt\n    insecure-skip-tls-verify: true\n"
                              "users:\n- name: u\n  user:\n    client-certificate: /abs/c.crt\n    client-key: k.key\n"
                              "    tokenFile: tok\n");
    kube_config_t c;
    char err[256] = "", want[320];
    assert_int_equal(kube_config_load(&c, path_of("config"), err, sizeof err), 0);
    snprintf(want, sizeof want, "%s/pki/ca.crt", tmpdir);
    assert_string_equal(c.ca_file, want);
    assert_null(c.ca_pem);
    assert_string_equal(c.cert_file, "/abs/c.crt");
    snprintf(want, sizeof want, "%s/k.key", tmpdir);
    assert_string_equal(c.key_file, want);
    snprintf(want, sizeof want, "%s/tok", tmpdir);
    assert_string_equal(c.token_file, want);
    assert_null(c.token);
    assert_int_equal(c.insecure, 1);
    kube_config_free(&c);
}

/* JSON is YAML: kubectl writes either. */
static void test_json_kubeconfig(void **state)
{
    write_file("config.json",
               "{\"current-context\":\"c\",\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"k\"}}],"
               "\"clusters\":[{\"name\":\"k\",\"cluster\":{\"server\":\"http://127.0.0.1:8080\"}}]}");
    kube_config_t c;
    char err[256] = "";
    assert_int_equal(kube_config_load(&c, path_of("config.json"), err, sizeof err), 0);
    assert_string_equal(c.server, "http://127.0.0.1:8080");
    assert_null(c.token);
    assert_null(c.cert_pem);
    kube_config_free(&c);
}

static void expect_error(const char *text, const char *needle)
{
    write_file("bad", text);
    kube_config_t c;
    char err[256] = "";
    assert_int_equal(kube_config_load(&c, path_of("bad"), err, sizeof err), -1);
    if (!strstr(err, needle))
        fail_msg("error \"%s\" lacks \"%s\"", err, needle);
    if (!strstr(err, path_of("bad")))
        fail_msg("error \"%s\" does not name the file", err);
    assert_null(strchr(err, '\n'));
    assert_null(c.server);
}

static void test_errors(void **state)
{
    expect_error(HEAD "clusters: []\n", "no current-context");
    expect_error(HEAD "current-context: x\ncontexts: []\n", "context \"x\" not found");
    expect_error(HEAD "current-context: x\ncontexts: [{name: x, context: {cluster: k, user: u}}]\n",
                 "cluster \"k\" not found");
    expect_error(HEAD "current-context: x\ncontexts: [{name: x, context: {cluster: k, user: u}}]\n"
                      "clusters: [{name: k, cluster: {server: 'https://a'}}]\n",
                 "user \"u\" not found");
    expect_error(HEAD "current-context: x\ncontexts: [{name: x, context: {cluster: k}}]\n"
                      "clusters: [{name: k, cluster: {insecure-skip-tls-verify: true}}]\n",
                 "has no server");
    expect_error(HEAD "current-context: x\ncontexts: [{name: x, context: {cluster: k}}]\n"
                      "clusters: [{name: k, cluster: {server: 'https://a', certificate-authority-data: '#!'}}]\n",
                 "certificate-authority-data is not valid base64");
    expect_error("a: b\nc: [unclosed\n  d: e\n", "YAML syntax error at line");
    expect_error("", "empty");
    expect_error("- just\n- a list\n", "not a mapping");
    /* Wrong types where mappings are expected do not crash. */
    expect_error(HEAD "current-context: [x]\n", "no current-context");
    expect_error(HEAD "current-context: x\ncontexts: {x: y}\n", "context \"x\" not found");
    expect_error(HEAD "current-context: x\ncontexts: [7, {name: x, context: 3}]\n", "context \"x\" not found");

    kube_config_t c;
    char err[256] = "";
    assert_int_equal(kube_config_load(&c, path_of("missing"), err, sizeof err), -1);
    assert_non_null(strstr(err, path_of("missing")));
    assert_non_null(strstr(err, "No such file"));
}

static void test_yaml_line_number(void **state)
{
    write_file("bad", HEAD "current-context: x\nclusters:\n- name: a\n   bad: indent\n");
    kube_config_t c;
    char err[256] = "";
    assert_int_equal(kube_config_load(&c, path_of("bad"), err, sizeof err), -1);
    assert_non_null(strstr(err, "line 6"));
}

static void test_env_kubeconfig(void **state)
{
    write_file("second", HEAD "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
                              "clusters: [{name: k, cluster: {server: 'https://second'}}]\n");
    char env[600];
    snprintf(env, sizeof env, ":%s:/nonexistent", path_of("second"));
    setenv("KUBECONFIG", env, 1);
    kube_config_t c;
    char err[256] = "";
    assert_int_equal(kube_config_load(&c, NULL, err, sizeof err), 0);
    assert_string_equal(c.server, "https://second");
    kube_config_free(&c);
    unsetenv("KUBECONFIG");
}

static void test_in_cluster(void **state)
{
    char sa[320], home[320];
    snprintf(sa, sizeof sa, "%s/sa", tmpdir);
    snprintf(home, sizeof home, "%s/home", tmpdir); /* no .kube/config there */
    assert_int_equal(mkdir(sa, 0700), 0);
    setenv("HOME", home, 1);
    setenv("AISCHED_SA_DIR", sa, 1);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);

    kube_config_t c;
    char err[256] = "";
    assert_int_equal(kube_config_load(&c, NULL, err, sizeof err), -1); /* no token yet */
    assert_non_null(strstr(err, "sa/token"));

    write_file("sa/token", "tok\n");
    write_file("sa/ca.crt", "PEM");
    assert_int_equal(kube_config_load(&c, NULL, err, sizeof err), 0);
    assert_string_equal(c.server, "https://10.96.0.1:443");
    char want[400];
    snprintf(want, sizeof want, "%s/token", sa);
    assert_string_equal(c.token_file, want);
    snprintf(want, sizeof want, "%s/ca.crt", sa);
    assert_string_equal(c.ca_file, want);
    assert_string_equal(c.source, "in-cluster");
    kube_config_free(&c);

    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    assert_int_equal(kube_config_load(&c, NULL, err, sizeof err), 0);
    assert_string_equal(c.server, "https://[fd00::1]:443");
    kube_config_free(&c);

    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(kube_config_load(&c, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST"));
    unsetenv("AISCHED_SA_DIR");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_parse_buffer),
        cmocka_unit_test_setup_teardown(test_inline_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relative_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_kubeconfig, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_yaml_line_number, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_kubeconfig, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_cluster, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
