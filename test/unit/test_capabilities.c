/* test_capabilities.c -- the pod-parse and node-accounting extensions a
 * capability registers (api/podext.h, framework/nodeinfo.h): a made-up
 * capability beside GPU sharing, and the loud failure of a pod parsed
 * before capabilities_init. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "api/podext.h"
#include "gpu/gpu.h"
#include "scheduler/capabilities.h"

#include "fixtures.h"

/* "Widgets": a pod asks for some with an annotation; pods asking share
 * one board per node, which the node's requested "example.com/board"
 * counts once however many pods use it (as a shared GPU slot does). */
#define WIDGET_ANN "example.com/widgets"

static int widget_pod_ext, widget_node_ext;
static int widget_frees; /* pod data freed, to prove the free hook runs */

static void *widget_parse(const pod_t *p, json_t *obj)
{
    json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    const char *v = json_string_value(json_object_get(ann, WIDGET_ANN));
    if (!v)
        return NULL;
    int *n = malloc(sizeof(*n));
    *n = atoi(v);
    return n;
}

static void widget_free(void *data)
{
    widget_frees++;
    free(data);
}

/* Per node: how many pods use the board. */
static int64_t widget_account(void **data, const node_info_t *ni, const pod_t *p, int sign)
{
    int *users = *data;
    if (!users) {
        if (sign < 0)
            return 0;
        users = *data = calloc(1, sizeof(*users));
    }
    *users += sign;
    return (*users == 1 && sign > 0) || (*users == 0 && sign < 0) ? sign : 0;
}

static void *widget_clone(const void *data)
{
    int *c = malloc(sizeof(*c));
    *c = *(const int *)data;
    return c;
}

static const pod_ext_t widget_pod = { .name = "widgets", .parse = widget_parse, .free = widget_free };
static node_ext_t widget_node = { .name = "widgets", .account = widget_account, .clone = widget_clone, .free = free };

static pod_t *widget_pod_named(const char *name, const char *widgets)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','uid':'u-%s','annotations':{%s%s%s}},"
             "'spec':{'containers':[{'name':'c','resources':{'requests':{'cpu':'1'}}}]}}",
             name, name, widgets ? "'" WIDGET_ANN "':'" : "", widgets ? widgets : "", widgets ? "'" : "");
    return fx_pod(buf);
}

/* Runs fn in a child: whether it died, as an abort kills it (a sanitizer
 * may turn the abort into its own exit status). */
static int child_dies(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The abort's message would look like a failure in the log. */
        if (!freopen("/dev/null", "w", stderr))
            _exit(0);
        fn();
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* pod_from_json, not fx_pod: a cmocka failure must not run in the child. */
static void parse_a_pod(void)
{
    char err[128];
    json_t *j = parse_sq("{'metadata':{'name':'early','annotations':{'" WIDGET_ANN "':'3'}}}");
    pod_unref(pod_from_json(j, err, sizeof(err)));
    json_decref(j);
}

static void register_late(void)
{
    pod_ext_register(&widget_pod);
}

/* Before capabilities_init, no pod may be parsed: it would lack every
 * capability's data (GPU accounting dropped without a word). Runs first. */
static void test_pod_before_init_aborts(void **state)
{
    assert_false(pod_ext_sealed());
    assert_true(child_dies(parse_a_pod));
}

/* Registers widgets, then every real capability; seals. */
static void test_register_then_init(void **state)
{
    widget_pod_ext = pod_ext_register(&widget_pod);
    widget_node.pod_ext = widget_pod_ext;
    widget_node.resource = res_intern("example.com/board");
    widget_node_ext = node_ext_register(&widget_node);
    capabilities_init();
    assert_true(pod_ext_sealed());
    assert_int_equal(pod_ext_count(), 3); /* widgets, GPU sharing and DRA claims */
    /* After the seal a registration is a bug, not a silent no-op. */
    assert_true(child_dies(register_late));
}

static void test_pod_slots(void **state)
{
    int frees = widget_frees;
    pod_t *plain = widget_pod_named("plain", NULL);
    pod_t *w = widget_pod_named("w", "3");
    pod_t *g = fx_pod("{'metadata':{'name':'g','uid':'u-g','annotations':{'gpu-fraction':'0.5'}},"
                      "'spec':{'containers':[{'name':'c'}]}}");
    assert_int_equal(plain->ext_mask, 0);
    assert_null(plain->ext[widget_pod_ext]);
    assert_null(gpu_req_of(plain));
    assert_int_equal(*(int *)w->ext[widget_pod_ext], 3);
    assert_int_equal(w->ext_mask, 1u << widget_pod_ext);
    assert_null(gpu_req_of(w));
    assert_non_null(gpu_req_of(g));
    assert_null(g->ext[widget_pod_ext]);
    assert_int_equal(gpu_req_of(g)->frac_ppm, 500000);
    pod_unref(plain);
    pod_unref(w);
    pod_unref(g);
    assert_int_equal(widget_frees, frees + 1);
}

/* The accountant sees only pods with its data, corrects its scalar after
 * their requests, and its state is cloned and freed with the node. */
static void test_node_accounting(void **state)
{
    const char *board = res_intern("example.com/board");
    node_info_t *ni = fx_node_info("{'metadata':{'name':'n1'},'status':{'allocatable':{'cpu':'8','pods':'10'}}}");
    pod_t *plain = widget_pod_named("plain", NULL);
    pod_t *a = widget_pod_named("a", "1");
    pod_t *b = widget_pod_named("b", "2");

    node_info_add_pod(ni, plain);
    assert_null(ni->ext[widget_node_ext]); /* a plain pod makes no state */
    node_info_add_pod(ni, a);
    node_info_add_pod(ni, b);
    assert_int_equal(*(int *)ni->ext[widget_node_ext], 2);
    assert_int_equal(res_get_scalar(&ni->requested, board), 1); /* one board, two users */
    assert_int_equal(ni->requested.milli_cpu, 3000);

    node_info_t *c = node_info_clone(ni);
    assert_ptr_not_equal(c->ext[widget_node_ext], ni->ext[widget_node_ext]);
    assert_true(node_info_remove_pod(c, "u-a"));
    assert_true(node_info_remove_pod(c, "u-b"));
    assert_int_equal(res_get_scalar(&c->requested, board), 0);
    assert_int_equal(*(int *)ni->ext[widget_node_ext], 2); /* the original is untouched */
    assert_int_equal(res_get_scalar(&ni->requested, board), 1);
    node_info_free(c);

    assert_true(node_info_remove_pod(ni, "u-b"));
    assert_int_equal(res_get_scalar(&ni->requested, board), 1);
    assert_true(node_info_remove_pod(ni, "u-a"));
    assert_int_equal(res_get_scalar(&ni->requested, board), 0);
    node_info_free(ni);
    pod_unref(plain);
    pod_unref(a);
    pod_unref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_before_init_aborts),
        cmocka_unit_test(test_register_then_init),
        cmocka_unit_test(test_pod_slots),
        cmocka_unit_test(test_node_accounting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
