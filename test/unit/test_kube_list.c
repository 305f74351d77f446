/* test_kube_list.c -- kube_list's pages against a fake API server
 * (libmicrohttpd): every item once and in order while the next page is
 * fetched ahead, whatever the order of a page's fields; an error on a later
 * page and a callback that stops both end the LIST with -1 and free all. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_api.h"

#include "kube/client.h"
#include "util/util.h"

#define ITEMS 7

static struct {
    pthread_mutex_t mu;
    int items_first; /* write "items" before "metadata" (no peeking) */
    int fail_page;   /* 1-based page answered 500; 0 none */
    int gets;
} srv = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };

/* GET /api/v1/things?limit=L[&continue=c<K>]: items K..K+L-1 of ITEMS, the
 * list's resourceVersion "42", continue "c<K+L>" while items are left. */
static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *data, size_t *size, void **con_cls)
{
    const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    const char *cont = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "continue");
    int limit = lim ? atoi(lim) : ITEMS, from = cont && cont[0] == 'c' ? atoi(cont + 1) : 0;
    pthread_mutex_lock(&srv.mu);
    int page = ++srv.gets, items_first = srv.items_first, fail = srv.fail_page == page;
    pthread_mutex_unlock(&srv.mu);
    sbuf_t b = { 0 }, items = { 0 }, meta = { 0 };
    for (int i = from; i < from + limit && i < ITEMS; i++)
        sbuf_printf(&items, "%s{\"metadata\":{\"name\":\"t%d\"}}", i > from ? "," : "", i);
    sbuf_printf(&meta, "\"metadata\":{\"resourceVersion\":\"42\"");
    if (from + limit < ITEMS)
        sbuf_printf(&meta, ",\"continue\":\"c%d\"", from + limit);
    sbuf_puts(&meta, "}");
    if (items_first)
        sbuf_printf(&b, "{\"kind\":\"ThingList\",\"items\":[%s],%s}", items.data ? items.data : "", meta.data);
    else
        sbuf_printf(&b, "{\"kind\":\"ThingList\",%s,\"items\":[%s]}", meta.data, items.data ? items.data : "");
    if (fail) {
        sbuf_reset(&b);
        sbuf_puts(&b, "{\"kind\":\"Status\",\"message\":\"etcd is sad\",\"code\":500}");
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(b.len, b.data, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc = MHD_queue_response(c, fail ? 500 : 200, r);
    MHD_destroy_response(r);
    sbuf_free(&b);
    sbuf_free(&items);
    sbuf_free(&meta);
    return rc;
}

static struct MHD_Daemon *daemon_;
static kube_client_t *kc;

static int setup(void **st)
{
    int port;
    daemon_ = fake_api_start(handler, NULL, &port);
    kc = daemon_ ? fake_api_client(port, 0, 0, "test_kube_list") : NULL;
    return kc ? 0 : -1;
}

static int teardown(void **st)
{
    kube_client_free(kc);
    MHD_stop_daemon(daemon_);
    return 0;
}

static void server_mode(int items_first, int fail_page)
{
    pthread_mutex_lock(&srv.mu);
    srv.items_first = items_first;
    srv.fail_page = fail_page;
    srv.gets = 0;
    pthread_mutex_unlock(&srv.mu);
}

typedef struct seen {
    int n;
    int order_ok;
    int stop_at; /* return nonzero at this item; -1 never */
} seen_t;

static int on_item(json_t *item, void *ud)
{
    seen_t *s = ud;
    char want[16];
    snprintf(want, sizeof want, "t%d", s->n);
    if (strcmp(json_string_value(json_object_get(json_object_get(item, "metadata"), "name")), want) != 0)
        s->order_ok = 0;
    return s->n++ == s->stop_at;
}

static void list_all(int items_first)
{
    server_mode(items_first, 0);
    for (int limit = 1; limit <= ITEMS + 1; limit++) {
        seen_t s = { 0, 1, -1 };
        char rv[16], err[256];
        long status = 0;
        assert_int_equal(kube_list(kc, "/api/v1/things", limit, on_item, &s, rv, sizeof rv, &status, err, sizeof err),
                         0);
        assert_int_equal(s.n, ITEMS);
        assert_true(s.order_ok);
        assert_string_equal(rv, "42");
        assert_int_equal(status, 200);
    }
}

static void test_pages_in_order(void **st)
{
    list_all(0);
}

static void test_pages_without_peeking(void **st)
{
    list_all(1);
}

static void test_error_on_third_page(void **st)
{
    server_mode(0, 3);
    seen_t s = { 0, 1, -1 };
    char rv[16], err[256];
    long status = 0;
    assert_int_equal(kube_list(kc, "/api/v1/things", 2, on_item, &s, rv, sizeof rv, &status, err, sizeof err), -1);
    assert_int_equal(s.n, 4);
    assert_int_equal(status, 500);
    assert_non_null(strstr(err, "etcd is sad"));
}

static void test_stopped_by_callback(void **st)
{
    server_mode(0, 0);
    seen_t s = { 0, 1, 2 };
    char rv[16], err[256];
    long status = 0;
    assert_int_equal(kube_list(kc, "/api/v1/things", 2, on_item, &s, rv, sizeof rv, &status, err, sizeof err), -1);
    assert_int_equal(s.n, 3); /* nothing after the item that said stop */
    assert_non_null(strstr(err, "stopped"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_in_order),
        cmocka_unit_test(test_pages_without_peeking),
        cmocka_unit_test(test_error_on_third_page),
        cmocka_unit_test(test_stopped_by_callback),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
