/* test_quantity.c -- resource.Quantity grammar, rounding, overflow, formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "api/quantity.h"

typedef struct {
    const char *s;
    int scale;
    int64_t want;
} qcase_t;

static void check_ok(const qcase_t *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t v = -12345;
        char err[128] = "";
        int rc = quantity_parse(c[i].s, c[i].scale, &v, err, sizeof err);
        if (rc != 0 || v != c[i].want)
            fail_msg("quantity \"%s\" scale %d: rc=%d v=%lld want %lld (%s)", c[i].s, c[i].scale, rc, (long long)v,
                     (long long)c[i].want, err);
    }
}

static void test_plain_and_suffixes(void **state)
{
    static const qcase_t c[] = {
        { "0", 0, 0 },
        { "0", 3, 0 },
        { "1", 0, 1 },
        { "1", 3, 1000 },
        { "+1", 0, 1 },
        { "-1", 0, -1 },
        { "1Ki", 0, 1024 },
        { "1Ki", 3, 1024000 },
        { "1Mi", 0, 1048576 },
        { "1Gi", 0, 1073741824LL },
        { "1Ti", 0, 1099511627776LL },
        { "1Pi", 0, 1125899906842624LL },
        { "1Ei", 0, 1152921504606846976LL },
        { "7Ei", 0, 7 * 1152921504606846976LL },
        { "1k", 0, 1000 },
        { "1M", 0, 1000000 },
        { "1G", 0, 1000000000LL },
        { "1T", 0, 1000000000000LL },
        { "1P", 0, 1000000000000000LL },
        { "1E", 0, 1000000000000000000LL },
        { "100m", 3, 100 },
        { "500m", 3, 500 },
        { "2", 3, 2000 },
        { "1u", 3, 1 },
        { "1000u", 3, 1 },
        { "1001u", 3, 2 },
        { "1e3", 0, 1000 },
        { "1E3", 0, 1000 },
        { "1e+3", 0, 1000 },
        { "1e0", 0, 1 },
        { "12e-1", 0, 2 },
        { "1.5e3", 0, 1500 },
        { "0e5", 0, 0 },
        { "0.0", 0, 0 },
        { "000123", 0, 123 },
        { "-0", 0, 0 },
        { "64Gi", 0, 68719476736LL },
        { "9223372036854775807", 0, INT64_MAX },
        { "9223372036854775807000m", 0, INT64_MAX },
    };
    check_ok(c, sizeof c / sizeof c[0]);
}

static void test_fractions_round_up(void **state)
{
    static const qcase_t c[] = {
        { "1.5", 0, 2 },
        { "1.5", 3, 1500 },
        { ".5", 0, 1 },
        { ".5", 3, 500 },
        { "5.", 0, 5 },
        { "100m", 0, 1 },
        { "0.1m", 3, 1 },
        { "100n", 3, 1 },
        { "1n", 0, 1 },
        { "1.5Gi", 0, 1610612736LL },
        { "0.5Ki", 0, 512 },
        { "1.5Ki", 0, 1536 },
        { "0.001Ki", 0, 2 }, /* 1.024 bytes */
        { "-1.5", 0, -2 },   /* away from zero, like ScaledValue */
        { "1.00000000000000000000001", 0, 2 },
        { "0.000000000000000000000000000001", 0, 1 },
        { "1e-30", 0, 1 },
        { "1e-100000000000", 0, 1 },
        { "123456789012345678901234567890e-20", 0, 1234567891LL },
        { "100000000000000000000000e-10", 0, 10000000000000LL },
        { "2.000", 0, 2 },
        { "1.0001", 3, 1001 },
    };
    check_ok(c, sizeof c / sizeof c[0]);
}

static void test_rejects(void **state)
{
    static const char *bad[] = {
        "",     "1.2.3", "abc", "1Gib",  "--1", "+-1",  "1e",    "1E+",  "1e-", "1 ",  " 1",
        ".",    "-",     "+",   "1KB",   "1K",  "1ki",  "1e3.5", "1ee3", "m",   "Ki",  "1mi",
        "0x10", "1_000", "1,5", "1e--3", "e3",  "1.5.", "1Ki1",  "1i",   "1.e", "NaN", "inf",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 777;
        char err[128] = "";
        if (quantity_parse(bad[i], 0, &v, err, sizeof err) == 0)
            fail_msg("quantity \"%s\" accepted as %lld", bad[i], (long long)v);
        assert_true(err[0] != '\0');
        assert_int_equal(v, 777); /* untouched on error */
    }
    int64_t v;
    assert_int_equal(quantity_parse(NULL, 0, &v, NULL, 0), -1);
}

static void test_overflow(void **state)
{
    static const qcase_t c[] = {
        { "9999999999999999999", 0, 0 },
        { "9223372036854775808", 0, 0 },
        { "8Ei", 0, 0 },
        { "1Ei", 3, 0 },
        { "1E", 3, 0 },
        { "10E", 0, 0 },
        { "1e19", 0, 0 },
        { "1e100000000000", 0, 0 },
        { "9223372036854775807", 3, 0 },
        { "9223372036854775807.5", 0, 0 },
        { "100000000000000000000000000000000000000000000", 0, 0 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int64_t v = 0;
        char err[128] = "";
        if (quantity_parse(c[i].s, c[i].scale, &v, err, sizeof err) == 0)
            fail_msg("quantity \"%s\" scale %d should overflow, got %lld", c[i].s, c[i].scale, (long long)v);
        assert_non_null(strstr(err, "range"));
    }
    int64_t v;
    assert_int_equal(quantity_parse("1e18", 0, &v, NULL, 0), 0);
    assert_int_equal(v, 1000000000000000000LL);
    assert_int_equal(quantity_parse("-9223372036854775807", 0, &v, NULL, 0), 0);
    assert_int_equal(v, -INT64_MAX);
}

static void test_long_input(void **state)
{
    /* A long but valid string must not be truncated or overflow a buffer. */
    char s[2100] = "0.";
    memset(s + 2, '0', 2000);
    strcpy(s + 2002, "1");
    int64_t v = 0;
    assert_int_equal(quantity_parse(s, 0, &v, NULL, 0), 0);
    assert_int_equal(v, 1);
    memset(s, '9', 2000);
    s[2000] = '\0';
    assert_int_equal(quantity_parse(s, 0, &v, NULL, 0), -1);
}

static void test_format_human(void **state)
{
    char b[32];
    quantity_format_bytes(0, b, sizeof b);
    assert_string_equal(b, "0");
    quantity_format_bytes(512, b, sizeof b);
    assert_string_equal(b, "512");
    quantity_format_bytes(1024, b, sizeof b);
    assert_string_equal(b, "1Ki");
    quantity_format_bytes(1536, b, sizeof b);
    assert_string_equal(b, "1.5Ki");
    quantity_format_bytes(13421772800LL, b, sizeof b);
    assert_string_equal(b, "12.5Gi");
    quantity_format_bytes(64LL << 30, b, sizeof b);
    assert_string_equal(b, "64Gi");
    quantity_format_bytes(INT64_MIN, b, sizeof b);
    assert_string_equal(b, "-8Ei");

    quantity_format_milli(0, b, sizeof b);
    assert_string_equal(b, "0");
    quantity_format_milli(250, b, sizeof b);
    assert_string_equal(b, "250m");
    quantity_format_milli(3500, b, sizeof b);
    assert_string_equal(b, "3.5");
    quantity_format_milli(4000, b, sizeof b);
    assert_string_equal(b, "4");
    quantity_format_milli(1250, b, sizeof b);
    assert_string_equal(b, "1.25");
    quantity_format_milli(1001, b, sizeof b);
    assert_string_equal(b, "1.001");
    quantity_format_milli(-500, b, sizeof b);
    assert_string_equal(b, "-500m");
}

static void test_format_k8s(void **state)
{
    char b[32];
    quantity_format_k8s_bytes(64LL << 30, b, sizeof b);
    assert_string_equal(b, "64Gi");
    quantity_format_k8s_bytes(1536, b, sizeof b);
    assert_string_equal(b, "1536");
    quantity_format_k8s_bytes(0, b, sizeof b);
    assert_string_equal(b, "0");
    quantity_format_k8s_bytes(2048 * 1024, b, sizeof b);
    assert_string_equal(b, "2Mi");
    quantity_format_k8s_bytes(3 * 1152921504606846976LL, b, sizeof b);
    assert_string_equal(b, "3Ei");
    quantity_format_k8s_milli(1500, b, sizeof b);
    assert_string_equal(b, "1500m");
    quantity_format_k8s_milli(8000, b, sizeof b);
    assert_string_equal(b, "8");
    quantity_format_k8s_milli(0, b, sizeof b);
    assert_string_equal(b, "0");
    quantity_format_k8s_milli(2000000, b, sizeof b);
    assert_string_equal(b, "2k");
    quantity_format_k8s_milli(-250, b, sizeof b);
    assert_string_equal(b, "-250m");

    /* Canonical strings parse back to the same value. */
    const int64_t bytes[] = { 1, 1023, 1024, 1536, 5LL << 40, 123456789, INT64_MAX };
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        int64_t v;
        quantity_format_k8s_bytes(bytes[i], b, sizeof b);
        assert_int_equal(quantity_parse(b, 0, &v, NULL, 0), 0);
        assert_int_equal(v, bytes[i]);
    }
    const int64_t milli[] = { 1, 999, 1000, 1500, 64000, 3000000000LL, 7000000 };
    for (size_t i = 0; i < sizeof milli / sizeof milli[0]; i++) {
        int64_t v;
        quantity_format_k8s_milli(milli[i], b, sizeof b);
        assert_int_equal(quantity_parse(b, 3, &v, NULL, 0), 0);
        assert_int_equal(v, milli[i]);
    }
}

/* Random strings over the grammar's alphabet: never crash, and whenever a
 * string parses at both scales the whole-unit value is the milli value
 * rounded away from zero. */
static void test_random_consistency(void **state)
{
    static const char alpha[] = "0123456789.+-eEKMGTPkmnuiax";
    unsigned seed = 42;
    int accepted = 0;
    for (int iter = 0; iter < 200000; iter++) {
        char s[16];
        seed = seed * 1103515245u + 12345u;
        int len = (int)((seed >> 16) % 10);
        for (int i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            s[i] = alpha[(seed >> 16) % (sizeof alpha - 1)];
        }
        s[len] = '\0';
        int64_t v0, v3;
        int r0 = quantity_parse(s, 0, &v0, NULL, 0);
        int r3 = quantity_parse(s, 3, &v3, NULL, 0);
        if (r3 == 0)
            assert_int_equal(r0, 0); /* fits at milli implies fits whole */
        if (r0 == 0 && r3 == 0) {
            accepted++;
            int64_t q = v3 / 1000, rem = v3 % 1000;
            int64_t want = rem == 0 ? q : (v3 > 0 ? q + 1 : q - 1);
            if (v0 != want)
                fail_msg("\"%s\": whole %lld milli %lld", s, (long long)v0, (long long)v3);
        }
    }
    assert_true(accepted > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_and_suffixes),
        cmocka_unit_test(test_fractions_round_up),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_long_input),
        cmocka_unit_test(test_format_human),
        cmocka_unit_test(test_format_k8s),
        cmocka_unit_test(test_random_consistency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
