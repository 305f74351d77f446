/* test_prioclass_row.c -- the priority-classes row alone
 * (pkg/prioclass/row.c), on a fake services table: the PriorityClass
 * watch it declares fills the lookup it publishes, a class that is not a
 * 32-bit integer or is deleted is forgotten, and a change wakes the
 * waiting pods. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "prioclass/row.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fixtures.h"

typedef struct fake {
    int woken;
    char event[64];
} fake_t;

static void f_wake_all(void *core, const char *event)
{
    fake_t *f = core;
    f->woken++;
    snprintf(f->event, sizeof(f->event), "%s", event);
}

static const sched_services_t fake_services = {
    .wake_all = f_wake_all,
};

static void test_watch_fills_published_lookup(void **state)
{
    (void)state;
    fake_t f = { 0 };
    sched_row_t row = { .svc = &fake_services, .core = &f };
    row.self = prioclass_row_init(&fake_services, &f);
    assert_string_equal(prioclass_row_watches[0].kind, "PriorityClass");
    assert_string_equal(prioclass_row_watches[0].path, "/apis/scheduling.k8s.io/v1/priorityclasses");
    assert_null(prioclass_row_watches[1].kind);

    sched_published_t pub = { 0 };
    prioclass_row_publish(&row, &pub);
    assert_non_null(pub.class_value);
    int32_t v = 0;
    assert_int_equal(pub.class_value(pub.classes, "high", &v), 0);

    json_t *pc = parse_sq("{'kind':'PriorityClass','metadata':{'name':'high'},'value':1000}");
    prioclass_row_watches[0].on_event(row.self, KUBE_ADDED, "high", pc);
    json_decref(pc);
    assert_int_equal(pub.class_value(pub.classes, "high", &v), 1);
    assert_int_equal(v, 1000);
    assert_int_equal(pub.class_value(pub.classes, "", &v), 0);
    assert_int_equal(f.woken, 1);
    assert_string_equal(f.event, "PriorityClassChanged");

    /* Not a 32-bit integer: forgotten, nothing woken. */
    pc = parse_sq("{'kind':'PriorityClass','metadata':{'name':'high'},'value':4294967296}");
    prioclass_row_on_event(row.self, KUBE_MODIFIED, "high", pc);
    json_decref(pc);
    assert_int_equal(pub.class_value(pub.classes, "high", &v), 0);
    assert_int_equal(f.woken, 1);

    pc = parse_sq("{'kind':'PriorityClass','metadata':{'name':'high'},'value':7}");
    prioclass_row_on_event(row.self, KUBE_MODIFIED, "high", pc);
    json_decref(pc);
    assert_int_equal(pub.class_value(pub.classes, "high", &v), 1);
    assert_int_equal(v, 7);
    prioclass_row_on_event(row.self, KUBE_DELETED, "high", NULL);
    assert_int_equal(pub.class_value(pub.classes, "high", &v), 0);
    prioclass_row_fini(row.self);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watch_fills_published_lookup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
