/* test_labels.c -- label sets and the three selector flavours. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/labels.h"

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &e);
    if (!j)
        fail_msg("bad test JSON: %s: %s", text, e.text);
    return j;
}

static void mklabels(labels_t *l, const char *text)
{
    json_t *j = J(text);
    assert_int_equal(labels_from_json(l, j, NULL, 0), 0);
    json_decref(j);
}

static void test_labels_basic(void **state)
{
    labels_t l, c;
    mklabels(&l, "{\"zone\":\"a\",\"app\":\"web\",\"gpu\":\"\"}");
    assert_int_equal(l.n, 3);
    assert_string_equal(l.items[0].key, "app"); /* sorted */
    assert_string_equal(l.items[2].key, "zone");
    assert_string_equal(labels_get(&l, "zone"), "a");
    assert_string_equal(labels_get(&l, "gpu"), "");
    assert_null(labels_get(&l, "missing"));
    assert_int_equal(labels_copy(&c, &l), 0);
    labels_free(&l);
    assert_int_equal(l.n, 0);
    assert_string_equal(labels_get(&c, "app"), "web");
    labels_free(&c);

    assert_int_equal(labels_from_json(&l, NULL, NULL, 0), 0);
    assert_int_equal(l.n, 0);
    assert_null(labels_get(&l, "x"));
    labels_free(&l);
}

static void test_labels_bad(void **state)
{
    const char *bad[] = { "[]", "\"x\"", "{\"a\":\"b\",\"c\":1}", "{\"a\":null}", "{\"a\":{}}" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        labels_t l;
        char err[128] = "";
        json_t *j = J(bad[i]);
        assert_int_equal(labels_from_json(&l, j, err, sizeof err), -1);
        assert_true(err[0] != '\0');
        json_decref(j);
    }
}

static int ls_match(const char *sel, const char *labels)
{
    selector_t s;
    labels_t l;
    json_t *j = J(sel);
    char err[128];
    if (selector_from_label_selector(&s, j, err, sizeof err) != 0)
        fail_msg("selector %s: %s", sel, err);
    json_decref(j);
    mklabels(&l, labels);
    int m = selector_matches(&s, &l, "node1");
    selector_free(&s);
    labels_free(&l);
    return m;
}

static void test_label_selector(void **state)
{
    assert_true(ls_match("{}", "{}")); /* empty selects all */
    assert_true(ls_match("{}", "{\"a\":\"b\"}"));
    assert_true(ls_match("{\"matchLabels\":{\"app\":\"web\"}}", "{\"app\":\"web\",\"x\":\"y\"}"));
    assert_false(ls_match("{\"matchLabels\":{\"app\":\"web\"}}", "{\"app\":\"db\"}"));
    assert_false(ls_match("{\"matchLabels\":{\"app\":\"web\"}}", "{}"));

    const char *in = "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]}]}";
    assert_true(ls_match(in, "{\"tier\":\"b\"}"));
    assert_false(ls_match(in, "{\"tier\":\"c\"}"));
    assert_false(ls_match(in, "{}"));

    const char *notin = "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}";
    assert_true(ls_match(notin, "{\"tier\":\"b\"}"));
    assert_false(ls_match(notin, "{\"tier\":\"a\"}"));
    assert_true(ls_match(notin, "{}")); /* absent key satisfies NotIn */

    const char *ex = "{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]}";
    assert_true(ls_match(ex, "{\"gpu\":\"\"}"));
    assert_false(ls_match(ex, "{}"));
    const char *dne = "{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":\"DoesNotExist\",\"values\":[]}]}";
    assert_false(ls_match(dne, "{\"gpu\":\"1\"}"));
    assert_true(ls_match(dne, "{}"));

    /* matchLabels and matchExpressions are ANDed. */
    const char *both = "{\"matchLabels\":{\"app\":\"web\"},"
                       "\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]}";
    assert_true(ls_match(both, "{\"app\":\"web\",\"gpu\":\"x\"}"));
    assert_false(ls_match(both, "{\"app\":\"web\"}"));
    assert_false(ls_match(both, "{\"gpu\":\"x\"}"));
}

static void test_label_selector_bad(void **state)
{
    const char *bad[] = {
        "[]",
        "{\"matchLabels\":[]}",
        "{\"matchLabels\":{\"a\":1}}",
        "{\"matchExpressions\":{}}",
        "{\"matchExpressions\":[1]}",
        "{\"matchExpressions\":[{\"operator\":\"Exists\"}]}",
        "{\"matchExpressions\":[{\"key\":\"\",\"operator\":\"Exists\"}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Lt\",\"values\":[\"1\"]}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Like\",\"values\":[\"1\"]}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[]}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[1]}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":\"x\"}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":5}]}",
        /* a good requirement followed by a bad one must not leak the first */
        "{\"matchLabels\":{\"x\":\"y\"},\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\"},{\"key\":\"b\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        selector_t s;
        char err[128] = "";
        json_t *j = J(bad[i]);
        if (selector_from_label_selector(&s, j, err, sizeof err) != -1)
            fail_msg("accepted bad selector %s", bad[i]);
        assert_true(err[0] != '\0');
        assert_int_equal(s.n, 0);
        json_decref(j);
    }
    selector_t s;
    assert_int_equal(selector_from_label_selector(&s, NULL, NULL, 0), 0);
    assert_true(selector_is_empty(&s));
}

static int term_match(const char *term, const char *labels, const char *name)
{
    selector_t s;
    labels_t l;
    json_t *j = J(term);
    char err[128];
    if (selector_from_node_term(&s, j, err, sizeof err) != 0)
        fail_msg("term %s: %s", term, err);
    json_decref(j);
    mklabels(&l, labels);
    /* Copies must behave identically. */
    selector_t c;
    selector_copy(&c, &s);
    int m = selector_matches(&s, &l, name);
    assert_int_equal(selector_matches(&c, &l, name), m);
    selector_free(&c);
    selector_free(&s);
    labels_free(&l);
    return m;
}

static void test_node_term(void **state)
{
    const char *gt = "{\"matchExpressions\":[{\"key\":\"cores\",\"operator\":\"Gt\",\"values\":[\"8\"]}]}";
    assert_true(term_match(gt, "{\"cores\":\"16\"}", "n"));
    assert_false(term_match(gt, "{\"cores\":\"8\"}", "n"));
    assert_false(term_match(gt, "{\"cores\":\"-3\"}", "n"));
    assert_false(term_match(gt, "{\"cores\":\"16x\"}", "n")); /* fail closed */
    assert_false(term_match(gt, "{\"cores\":\"\"}", "n"));
    assert_false(term_match(gt, "{\"cores\":\"99999999999999999999\"}", "n"));
    assert_false(term_match(gt, "{}", "n"));
    const char *lt = "{\"matchExpressions\":[{\"key\":\"cores\",\"operator\":\"Lt\",\"values\":[\"8\"]}]}";
    assert_true(term_match(lt, "{\"cores\":\"-1\"}", "n"));
    assert_true(term_match(lt, "{\"cores\":\"+7\"}", "n"));
    assert_false(term_match(lt, "{\"cores\":\"8\"}", "n"));
    assert_false(term_match(lt, "{}", "n"));
    /* A non-integer requirement value parses but never matches. */
    const char *gtbad = "{\"matchExpressions\":[{\"key\":\"cores\",\"operator\":\"Gt\",\"values\":[\"eight\"]}]}";
    assert_false(term_match(gtbad, "{\"cores\":\"16\"}", "n"));

    const char *field =
        "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\",\"n2\"]}]}";
    assert_true(term_match(field, "{}", "n2"));
    assert_false(term_match(field, "{}", "n3"));
    const char *nfield = "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"n1\"]}]}";
    assert_true(term_match(nfield, "{}", "n2"));
    assert_false(term_match(nfield, "{}", "n1"));

    /* Expressions and fields are ANDed. */
    const char *mix = "{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}],"
                      "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}";
    assert_true(term_match(mix, "{\"zone\":\"a\"}", "n1"));
    assert_false(term_match(mix, "{\"zone\":\"b\"}", "n1"));
    assert_false(term_match(mix, "{\"zone\":\"a\"}", "n2"));

    /* No requirements: the caller treats it as matching nothing. */
    selector_t s;
    json_t *j = J("{\"matchExpressions\":[]}");
    assert_int_equal(selector_from_node_term(&s, j, NULL, 0), 0);
    assert_true(selector_is_empty(&s));
    selector_free(&s);
    json_decref(j);
    j = J("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\"}]}");
    assert_int_equal(selector_from_node_term(&s, j, NULL, 0), 0);
    assert_false(selector_is_empty(&s));
    selector_free(&s);
    json_decref(j);
}

static void test_node_term_bad(void **state)
{
    const char *bad[] = {
        "null",
        "[]",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\",\"values\":[\"1\",\"2\"]}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Lt\",\"values\":[]}]}",
        "{\"matchFields\":[{\"key\":\"metadata.uid\",\"operator\":\"In\",\"values\":[\"x\"]}]}",
        "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"Exists\"}]}",
        "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}",
        "{\"matchFields\":\"x\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        selector_t s;
        char err[128] = "";
        json_t *j = J(bad[i]);
        if (selector_from_node_term(&s, j, err, sizeof err) != -1)
            fail_msg("accepted bad term %s", bad[i]);
        assert_true(err[0] != '\0');
        json_decref(j);
    }
}

static void test_selector_from_map(void **state)
{
    selector_t s;
    labels_t l;
    json_t *j = J("{\"disk\":\"ssd\",\"zone\":\"a\"}");
    assert_int_equal(selector_from_map(&s, j, NULL, 0), 0);
    json_decref(j);
    assert_int_equal(s.n, 2);
    mklabels(&l, "{\"disk\":\"ssd\",\"zone\":\"a\",\"x\":\"1\"}");
    assert_true(selector_matches(&s, &l, "n"));
    labels_free(&l);
    mklabels(&l, "{\"disk\":\"hdd\",\"zone\":\"a\"}");
    assert_false(selector_matches(&s, &l, "n"));
    labels_free(&l);
    selector_free(&s);

    assert_int_equal(selector_from_map(&s, NULL, NULL, 0), 0);
    assert_true(selector_is_empty(&s));
    assert_true(selector_matches(&s, NULL, NULL));

    char err[64] = "";
    j = J("{\"disk\":true}");
    assert_int_equal(selector_from_map(&s, j, err, sizeof err), -1);
    assert_true(err[0] != '\0');
    json_decref(j);
    j = J("[\"disk\"]");
    assert_int_equal(selector_from_map(&s, j, err, sizeof err), -1);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labels_basic),      cmocka_unit_test(test_labels_bad),
        cmocka_unit_test(test_label_selector),    cmocka_unit_test(test_label_selector_bad),
        cmocka_unit_test(test_node_term),         cmocka_unit_test(test_node_term_bad),
        cmocka_unit_test(test_selector_from_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
