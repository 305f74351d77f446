/* test_dashboard_assets.c -- the embedded single-page app (dashboard/assets.c):
 * the /ui/ route's files, content types and 404s, and over a live server
 * that it is open (no token) and that / and /ui redirect to /ui/. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <curl/curl.h>

#include "dashboard/assets.h"
#include "server/http.h"

static int get(const char *path, int *code, char **ctype)
{
    char *body = NULL;
    const char *ct = NULL;
    *code = dashboard_ui_route(NULL, path, "", &body, &ct);
    *ctype = (char *)ct;
    int len = body ? (int)strlen(body) : -1;
    free(body);
    return len;
}

static void test_route(void **state)
{
    (void)state;
    int code;
    char *ct;
    const dashboard_asset_t *index = dashboard_asset_find("index.html");
    assert_non_null(index);
    assert_int_equal(get("/ui/", &code, &ct), (int)strlen(index->data));
    assert_int_equal(code, 200);
    assert_string_equal(ct, "text/html; charset=utf-8");
    assert_int_equal(get("/ui/index.html", &code, &ct), (int)strlen(index->data));
    assert_int_equal(code, 200);
    assert_non_null(dashboard_asset_find("app.js"));
    get("/ui/app.js", &code, &ct);
    assert_int_equal(code, 200);
    assert_string_equal(ct, "text/javascript; charset=utf-8");
    get("/ui/style.css", &code, &ct);
    assert_int_equal(code, 200);
    assert_string_equal(ct, "text/css; charset=utf-8");
    const char *bad[] = { "/ui/nope.js",   "/ui/../Makefile", "/ui/web/index.html", "/ui//index.html",
                          "/uiindex.html", "/ui/index.html/", "/ui/INDEX.HTML" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        get(bad[i], &code, &ct);
        assert_int_equal(code, 404);
    }
}

/* Every embedded file is one the page loads with a real type (a stray file
 * in web/ would be served as text/plain and is probably a mistake). */
static void test_every_asset_typed(void **state)
{
    (void)state;
    int n = 0;
    for (const dashboard_asset_t *a = dashboard_assets; a->name; a++, n++) {
        assert_string_not_equal(dashboard_content_type(a->name), "text/plain; charset=utf-8");
        assert_true(strlen(a->data) > 0);
    }
    assert_true(n >= 3);
    assert_string_equal(dashboard_content_type("x.svg"), "image/svg+xml");
    assert_string_equal(dashboard_content_type("x"), "text/plain; charset=utf-8");
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    *(size_t *)ud += sz * n;
    return sz * n;
}

/* The last fetch's response headers (the test runs on one thread). */
static char hdrs[4096];
static size_t hdrs_len;

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    (void)ud;
    size_t k = sz * n;
    if (hdrs_len + k < sizeof hdrs) {
        memcpy(hdrs + hdrs_len, p, k);
        hdrs_len += k;
        hdrs[hdrs_len] = 0;
    }
    return k;
}

static long fetch(int port, const char *path, char *location, size_t loclen, size_t *bytes)
{
    hdrs_len = 0;
    hdrs[0] = 0;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    *bytes = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, bytes);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    long code = 0;
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    char *loc = NULL;
    curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc);
    snprintf(location, loclen, "%s", loc ? loc : "");
    curl_easy_cleanup(c);
    return code;
}

/* No auth configured: authenticated routes fail closed (503), but /ui/ is
 * open and / redirects to it. */
static void test_served_open(void **state)
{
    (void)state;
    char err[256];
    http_server_opts_t o = { .bind_address = "127.0.0.1", .port = 0 };
    http_server_t *s = http_server_start(&o, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(dashboard_ui_add(s), 0);
    int port = http_server_port(s);
    char loc[256];
    size_t n;
    assert_int_equal(fetch(port, "/", loc, sizeof loc, &n), 302);
    char want[128];
    snprintf(want, sizeof want, "http://127.0.0.1:%d/ui/", port);
    assert_string_equal(loc, want);
    assert_int_equal(fetch(port, "/ui", loc, sizeof loc, &n), 302);
    assert_string_equal(loc, want);
    assert_int_equal(fetch(port, "/ui/", loc, sizeof loc, &n), 200);
    assert_int_equal(n, strlen(dashboard_asset_find("index.html")->data));
    /* The page is locked to this port: scripts and requests from it only,
     * no frames around it, no sniffing. */
    assert_non_null(strstr(hdrs, "Content-Security-Policy: default-src 'self'; script-src 'self';"));
    assert_non_null(strstr(hdrs, "frame-ancestors 'none'"));
    assert_non_null(strstr(hdrs, "X-Frame-Options: DENY"));
    assert_non_null(strstr(hdrs, "X-Content-Type-Options: nosniff"));
    assert_int_equal(fetch(port, "/ui/app.js", loc, sizeof loc, &n), 200);
    assert_null(strstr(hdrs, "Content-Security-Policy")); /* a page's policy, not a script's */
    assert_non_null(strstr(hdrs, "X-Content-Type-Options: nosniff"));
    assert_int_equal(fetch(port, "/ui/nope", loc, sizeof loc, &n), 404);
    assert_int_equal(fetch(port, "/debug/whoami", loc, sizeof loc, &n), 503);
    http_server_stop(s);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route),
        cmocka_unit_test(test_every_asset_typed),
        cmocka_unit_test(test_served_open),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
