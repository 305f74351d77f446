/* test_cli.c -- the table commands' shared front-end (cmd/ai-scheduler/cli.c):
 * common flags and their per-command differences, table alignment, JSON
 * and YAML; and `mcjob get`'s arguments. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ai-scheduler/cli.h"
#include "ai-scheduler/mcjob.h"
#include "scheduler/capabilities.h"

static void usage_stub(FILE *f)
{
    fputs("usage: stub\n", f);
}

/* --name VALUE: 1; a bare --name: -1; anything else: 0. */
static int stub_arg(void *ctx, int argc, char **argv, int *i)
{
    const char **name = ctx;
    if (strcmp(argv[*i], "--name") != 0)
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *name = argv[++*i];
    return 1;
}

typedef struct parsed {
    int rc;
    cli_t c;
    const char *name;
    char *out, *err;
} parsed_t;

static void parse(parsed_t *p, unsigned flags, int argc, char **argv)
{
    cli_cmd_t cmd = { .user_agent = "test", .flags = flags, .usage = usage_stub, .arg = stub_arg };
    size_t olen = 0, elen = 0;
    memset(p, 0, sizeof(*p));
    FILE *out = open_memstream(&p->out, &olen), *errf = open_memstream(&p->err, &elen);
    p->rc = cli_parse(&p->c, &cmd, &p->name, argc, argv, 0, out, errf);
    fclose(out);
    fclose(errf);
}

static void parsed_free(parsed_t *p)
{
    free(p->out);
    free(p->err);
}

static void test_parse_common(void **st)
{
    parsed_t p;
    char *ok[] = { (char *)"--kubeconfig=/k", (char *)"-ojson", (char *)"--name", (char *)"x" };
    parse(&p, CLI_YAML, 4, ok);
    assert_int_equal(p.rc, CLI_CONTINUE);
    assert_string_equal(p.c.kubeconfig, "/k");
    assert_int_equal(p.c.fmt, CLI_OUT_JSON);
    assert_string_equal(p.name, "x");
    assert_null(p.c.ns);
    assert_string_equal(p.err, "");
    parsed_free(&p);

    char *help[] = { (char *)"-o", (char *)"xml", (char *)"-h" };
    parse(&p, 0, 3, help); /* an error before -h wins */
    assert_int_equal(p.rc, 2);
    assert_string_equal(p.err, "error: unknown output format \"xml\" (table, json)\n");
    parsed_free(&p);

    char *help2[] = { (char *)"--help", (char *)"--bogus" };
    parse(&p, 0, 2, help2);
    assert_int_equal(p.rc, 0);
    assert_string_equal(p.out, "usage: stub\n");
    parsed_free(&p);

    char *bogus[] = { (char *)"--bogus" };
    parse(&p, 0, 1, bogus);
    assert_int_equal(p.rc, 2);
    assert_string_equal(p.err, "error: unknown argument \"--bogus\"\nusage: stub\n");
    parsed_free(&p);

    char *noname[] = { (char *)"--name" };
    parse(&p, 0, 1, noname);
    assert_int_equal(p.rc, 2);
    assert_string_equal(p.err, "error: --name needs a value\n");
    parsed_free(&p);

    char *yaml[] = { (char *)"--output", (char *)"yaml" };
    parse(&p, 0, 2, yaml);
    assert_int_equal(p.rc, 2);
    parsed_free(&p);
    parse(&p, CLI_YAML, 2, yaml);
    assert_int_equal(p.rc, CLI_CONTINUE);
    assert_int_equal(p.c.fmt, CLI_OUT_YAML);
    parsed_free(&p);

    char *wide[] = { (char *)"-o", (char *)"wide" };
    parse(&p, 0, 2, wide);
    assert_int_equal(p.c.fmt, CLI_OUT_TABLE);
    parsed_free(&p);
}

/* `-o ""`: a missing value, or with CLI_EMPTY_OUTPUT (pools) an unknown format. */
static void test_parse_empty_output(void **st)
{
    parsed_t p;
    char *empty[] = { (char *)"--output=" };
    parse(&p, CLI_YAML, 1, empty);
    assert_int_equal(p.rc, 2);
    assert_string_equal(p.err, "error: --output= needs a value\n");
    parsed_free(&p);
    parse(&p, CLI_YAML | CLI_EMPTY_OUTPUT, 1, empty);
    assert_int_equal(p.rc, 2);
    assert_string_equal(p.err, "error: unknown output format \"\" (table, json, yaml)\n");
    parsed_free(&p);

    char *nokc[] = { (char *)"--kubeconfig", (char *)"" };
    parse(&p, CLI_EMPTY_OUTPUT, 2, nokc);
    assert_int_equal(p.rc, 2);
    assert_string_equal(p.err, "error: --kubeconfig needs a value\n");
    parsed_free(&p);
}

static void test_parse_namespace(void **st)
{
    parsed_t p;
    char *none[] = { (char *)"-o", (char *)"table" };
    parse(&p, CLI_NAMESPACE, 2, none);
    assert_int_equal(p.rc, CLI_CONTINUE);
    assert_string_equal(p.c.ns, "default");
    parsed_free(&p);

    char *n[] = { (char *)"-nml" };
    parse(&p, CLI_NAMESPACE, 1, n);
    assert_string_equal(p.c.ns, "ml");
    parsed_free(&p);

    char *all[] = { (char *)"--namespace", (char *)"ml", (char *)"--all-namespaces" };
    parse(&p, CLI_NAMESPACE, 3, all);
    assert_null(p.c.ns);
    parsed_free(&p);

    /* without CLI_NAMESPACE -n and -A are not known */
    char *a[] = { (char *)"-A" };
    parse(&p, 0, 1, a);
    assert_int_equal(p.rc, 2);
    assert_string_equal(p.err, "error: unknown argument \"-A\"\nusage: stub\n");
    parsed_free(&p);

    char *nov[] = { (char *)"-n" };
    parse(&p, CLI_NAMESPACE, 1, nov);
    assert_int_equal(p.rc, 2);
    assert_string_equal(p.err, "error: -n needs a value\n");
    parsed_free(&p);
}

static char *print(const cli_table_t *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(cli_table_print(f, t), 0);
    fclose(f);
    return buf;
}

/* Widths by code point or byte, the gap, trailing empty cells, hidden columns. */
static void test_table(void **st)
{
    static const char *const hdr[3] = { "A", "B", "C" };
    char *cells[] = { (char *)"\xe2\x9c\x93", (char *)"", (char *)"", (char *)"xy", NULL, (char *)"z" };
    cli_table_t t = { .header = hdr, .cells = cells, .rows = 2, .cols = 3, .gap = 2 };
    char *s = print(&t);
    assert_string_equal(s, "A   B  C\n"
                           "\xe2\x9c\x93\n"
                           "xy     z\n");
    free(s);

    t.bytes = 1;
    t.gap = 3;
    s = print(&t);
    assert_string_equal(s, "A     B   C\n"
                           "\xe2\x9c\x93\n"
                           "xy        z\n");
    free(s);

    t.first = 1;
    s = print(&t);
    assert_string_equal(s, "B   C\n"
                           "\n"
                           "    z\n");
    free(s);
}

static void test_emit(void **st)
{
    json_t *doc = json_pack("[{s:s, s:s, s:i, s:b, s:n}]", "name", "123", "plain", "a-b", "n", 3, "ok", 1, "none");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(cli_emit(f, CLI_OUT_YAML, doc), 0);
    fclose(f);
    /* "123" and the key "n" would read back as a number and a boolean */
    assert_string_equal(buf, "- name: \"123\"\n  plain: a-b\n  \"n\": 3\n  ok: true\n  none: null\n");
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    assert_int_equal(cli_emit(f, CLI_OUT_JSON, doc), 0);
    fclose(f);
    assert_string_equal(buf, "[\n  {\n    \"name\": \"123\",\n    \"plain\": \"a-b\",\n    \"n\": 3,\n"
                             "    \"ok\": true,\n    \"none\": null\n  }\n]\n");
    free(buf);
    json_decref(doc);
}

static int run_mcjob(int argc, char **argv, char **out_s, char **err_s)
{
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(out_s, &olen), *errf = open_memstream(err_s, &elen);
    int rc = mcjob_main(argc, argv, out, errf);
    fclose(out);
    fclose(errf);
    return rc;
}

/* `mcjob get`'s arguments: everything that is decided before the API server. */
static void test_mcjob_args(void **st)
{
    char *o, *e;
    assert_int_equal(run_mcjob(0, NULL, &o, &e), 2);
    assert_string_equal(o, "");
    assert_non_null(strstr(e, "usage: ai-scheduler mcjob get"));
    free(o);
    free(e);

    char *help[] = { (char *)"--help" };
    assert_int_equal(run_mcjob(1, help, &o, &e), 0);
    assert_non_null(strstr(o, "usage: ai-scheduler mcjob get"));
    free(o);
    free(e);

    char *yaml[] = { (char *)"get", (char *)"-o", (char *)"yaml" };
    assert_int_equal(run_mcjob(3, yaml, &o, &e), 2);
    assert_string_equal(e, "error: unknown output format \"yaml\" (table, json)\n");
    free(o);
    free(e);

    char *two[] = { (char *)"get", (char *)"a", (char *)"b" };
    assert_int_equal(run_mcjob(3, two, &o, &e), 2);
    assert_non_null(strstr(e, "error: unknown argument \"b\"\n"));
    free(o);
    free(e);

    char *all[] = { (char *)"get", (char *)"x", (char *)"-A" };
    assert_int_equal(run_mcjob(3, all, &o, &e), 2);
    assert_string_equal(e, "error: a NAME needs one namespace (-n), not -A\n");
    free(o);
    free(e);

    char *nokc[] = { (char *)"get", (char *)"--kubeconfig=/nonexistent/kubeconfig" };
    assert_int_equal(run_mcjob(2, nokc, &o, &e), 1);
    assert_string_equal(o, "");
    assert_memory_equal(e, "error: ", 7);
    free(o);
    free(e);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_common),
        cmocka_unit_test(test_parse_empty_output),
        cmocka_unit_test(test_parse_namespace),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_emit),
        cmocka_unit_test(test_mcjob_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
