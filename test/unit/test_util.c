/* test_util.c -- util helpers, hashmap and log formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/hashmap.h"
#include "util/log.h"
#include "util/util.h"
#include "tmpdir.h"

static void test_rfc3339_roundtrip(void **state)
{
    char buf[64];
    util_rfc3339(0, buf, sizeof buf);
    assert_string_equal(buf, "1970-01-01T00:00:00Z");
    int64_t t = util_parse_rfc3339("2026-11-23T04:20:01Z");
    assert_true(t > 0);
    util_rfc3339(t, buf, sizeof buf);
    assert_string_equal(buf, "2026-11-23T04:20:01Z");
    assert_int_equal(util_parse_rfc3339("1970-01-01T00:00:01Z"), 1000);
    assert_int_equal(util_parse_rfc3339("1970-01-01T00:00:01.5Z"), 1500);
    assert_int_equal(util_parse_rfc3339("1970-01-01T00:00:01.123456789Z"), 1123);
    /* An offset is subtracted to get UTC. */
    assert_int_equal(util_parse_rfc3339("1970-01-01T02:00:00+02:00"), 0);
    assert_int_equal(util_parse_rfc3339("1970-01-01T00:00:00-00:30"), 1800 * 1000);
    /* with milliseconds (the dispatch controller's .status times) */
    util_rfc3339_ms(t + 250, buf, sizeof buf);
    assert_string_equal(buf, "2026-11-23T04:20:01.250Z");
    assert_int_equal(util_parse_rfc3339(buf), t + 250);
    util_rfc3339_ms(-1, buf, sizeof buf);
    assert_string_equal(buf, "1969-12-31T23:59:59.999Z");
}

static void test_rfc3339_rejects(void **state)
{
    const char *bad[] = { "",
                          "2026-11-23",
                          "2026-11-23T04:20:01",
                          "2026-13-01T00:00:00Z",
                          "2026-02-30T00:00:00Z",
                          "2026-11-23T24:00:00Z",
                          "2026-11-23T04:20:01.Z",
                          "2026-11-23T04:20:01Zjunk",
                          "x026-11-23T04:20:01Z",
                          "2026-11-23T04:20:01+0200" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(util_parse_rfc3339(bad[i]), -1);
    assert_int_equal(util_parse_rfc3339(NULL), -1);
}

static void test_clocks(void **state)
{
    int64_t a = util_now_ms(), au = util_now_us();
    util_sleep_ms(5);
    assert_true(util_now_ms() - a >= 4);
    assert_true(util_now_us() - au >= 4000);
    assert_true(util_wall_ms() > 1600000000000LL);
}

static int64_t fixed_clock(void *ud)
{
    return *(int64_t *)ud;
}

/* The override: all three clocks read it; NULLs give the system's back. */
static void test_clock_override(void **state)
{
    (void)state;
    int64_t v = 1800000000000LL;
    util_clock_override(fixed_clock, fixed_clock, &v);
    assert_int_equal(util_now_ms(), v);
    assert_int_equal(util_now_us(), v * 1000);
    assert_int_equal(util_wall_ms(), v);
    v += 1500;
    assert_int_equal(util_wall_ms(), 1800000001500LL);
    util_clock_override(NULL, NULL, NULL);
    assert_true(util_wall_ms() < 1800000000000LL || util_wall_ms() > 1800000001500LL + 60000);
    assert_true(util_now_ms() != 1800000001500LL);
}

static void test_sbuf(void **state)
{
    sbuf_t b = { 0 };
    sbuf_puts(&b, "hello");
    sbuf_append(&b, ", world", 7);
    assert_string_equal(b.data, "hello, world");
    assert_int_equal(b.len, 12);
    sbuf_reset(&b);
    assert_string_equal(b.data, "");
    for (int i = 0; i < 1000; i++)
        sbuf_printf(&b, "%d,", i);
    assert_int_equal(b.len, strlen(b.data));
    assert_memory_equal(b.data, "0,1,2,", 6);
    assert_non_null(strstr(b.data, ",999,"));
    /* A single printf larger than the internal stack buffer. */
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sbuf_reset(&b);
    sbuf_printf(&b, "<%s>", big);
    assert_int_equal(b.len, 601);
    assert_int_equal(b.data[600], '>');
    sbuf_free(&b);
    assert_null(b.data);
}

static void test_strings(void **state)
{
    char *s = util_strndup("abcdef", 3);
    assert_string_equal(s, "abc");
    free(s);
    s = util_strdup(NULL);
    assert_string_equal(s, "");
    free(s);
    s = util_urlencode("a b/c?d=é~._-");
    assert_string_equal(s, "a%20b%2Fc%3Fd%3D%C3%A9~._-");
    free(s);
    /* decoding: a path's segment ('+' is itself), a query's value ('+' a
     * space); broken escapes and %00 stay as written */
    static const char enc[] = "a%20b%2fc+d%C3%A9%4%zz%00% 1%";
    s = util_urldecode(enc, strlen(enc), 0);
    assert_string_equal(s, "a b/c+d\xc3\xa9%4%zz%00% 1%");
    free(s);
    s = util_urldecode(enc, strlen(enc), 1);
    assert_string_equal(s, "a b/c d\xc3\xa9%4%zz%00% 1%");
    free(s);
    s = util_urldecode("%41%42", 5, 1); /* n bounds it: a cut escape stays */
    assert_string_equal(s, "A%4");
    free(s);
    char err[16];
    assert_int_equal(util_errf(err, sizeof err, "x=%d and a long tail", 42), -1);
    assert_string_equal(err, "x=42 and a long");
    assert_int_equal(util_errf(NULL, 0, "ignored"), -1);
}

static void test_hashmap_basic(void **state)
{
    hashmap_t *m = hashmap_new(0);
    int a = 1, b = 2;
    assert_null(hashmap_get(m, "a"));
    assert_null(hashmap_put(m, "a", &a));
    assert_ptr_equal(hashmap_get(m, "a"), &a);
    assert_ptr_equal(hashmap_put(m, "a", &b), &a); /* replace returns old */
    assert_ptr_equal(hashmap_get(m, "a"), &b);
    assert_int_equal(hashmap_len(m), 1);
    assert_ptr_equal(hashmap_remove(m, "a"), &b);
    assert_null(hashmap_remove(m, "a"));
    assert_int_equal(hashmap_len(m), 0);
    assert_null(hashmap_get(m, "a"));
    /* Keys are copied: the caller's buffer can change. */
    char key[8] = "k1";
    hashmap_put(m, key, &a);
    strcpy(key, "k2");
    assert_ptr_equal(hashmap_get(m, "k1"), &a);
    assert_null(hashmap_get(m, "k2"));
    hashmap_free(m);
}

static void test_hashmap_growth_and_removal(void **state)
{
    enum { N = 5000 };
    hashmap_t *m = hashmap_new(4);
    static int vals[N];
    char key[32];
    for (int i = 0; i < N; i++) {
        vals[i] = i;
        snprintf(key, sizeof key, "ns/pod-%d", i);
        assert_null(hashmap_put(m, key, &vals[i]));
    }
    assert_int_equal(hashmap_len(m), N);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "ns/pod-%d", i);
        int *v = hashmap_get(m, key);
        assert_non_null(v);
        assert_int_equal(*v, i);
    }
    /* Remove every odd key; the evens must stay reachable across the shifts. */
    for (int i = 1; i < N; i += 2) {
        snprintf(key, sizeof key, "ns/pod-%d", i);
        assert_ptr_equal(hashmap_remove(m, key), &vals[i]);
    }
    assert_int_equal(hashmap_len(m), N / 2);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "ns/pod-%d", i);
        if (i % 2)
            assert_null(hashmap_get(m, key));
        else
            assert_ptr_equal(hashmap_get(m, key), &vals[i]);
    }
    /* Iteration visits each remaining entry exactly once. */
    static char seen[N];
    memset(seen, 0, sizeof seen);
    size_t count = 0;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(m, &it, &k, &v);) {
        int i = *(int *)v;
        snprintf(key, sizeof key, "ns/pod-%d", i);
        assert_string_equal(k, key);
        assert_int_equal(seen[i], 0);
        seen[i] = 1;
        count++;
    }
    assert_int_equal(count, N / 2);
    /* Reinsert after removal. */
    for (int i = 1; i < N; i += 2) {
        snprintf(key, sizeof key, "ns/pod-%d", i);
        assert_null(hashmap_put(m, key, &vals[i]));
    }
    assert_int_equal(hashmap_len(m), N);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "ns/pod-%d", i);
        assert_ptr_equal(hashmap_get(m, key), &vals[i]);
    }
    hashmap_free(m);
}

static void test_hashmap_churn(void **state)
{
    /* Random put/remove against a reference array, to exercise wrap-around
     * backward shifts in a small table. */
    enum { K = 64 };
    int present[K] = { 0 };
    int vals[K];
    hashmap_t *m = hashmap_new(2);
    unsigned seed = 12345;
    char key[16];
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 16) % K);
        snprintf(key, sizeof key, "%d", k);
        vals[k] = k;
        if ((seed >> 8) & 1) {
            hashmap_put(m, key, &vals[k]);
            present[k] = 1;
        } else {
            void *r = hashmap_remove(m, key);
            assert_true(present[k] ? r == &vals[k] : r == NULL);
            present[k] = 0;
        }
        if (step % 997 == 0) {
            size_t n = 0;
            for (int i = 0; i < K; i++) {
                snprintf(key, sizeof key, "%d", i);
                assert_true(present[i] ? hashmap_get(m, key) == &vals[i] : hashmap_get(m, key) == NULL);
                n += (size_t)present[i];
            }
            assert_int_equal(hashmap_len(m), n);
        }
    }
    hashmap_free(m);
}

/* Runs fn with stderr redirected to a temp file; returns what it wrote. */
static char *capture_stderr(void (*fn)(void))
{
    char path[256];
    tmp_template(path, sizeof path, "test_util_log");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    static char out[4096];
    ssize_t n = pread(fd, out, sizeof out - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return out;
}

static void emit_logs(void)
{
    LOG_I("hello %s", "world");
    LOG_D("debug hidden at v0");
    LOG_E("trailing newline\n");
}

static void emit_debug(void)
{
    LOG_D("debug shown %d", 4);
    LOG_T("trace hidden at v4");
}

static void test_log_format_and_levels(void **state)
{
    log_set_verbosity(0);
    assert_int_equal(log_get_verbosity(), 0);
    assert_true(log_enabled(LOG_LVL_INFO));
    assert_false(log_enabled(LOG_LVL_DEBUG));
    char *out = capture_stderr(emit_logs);
    /* I1123 04:20:01.123456 test_util.c:NN] hello world */
    assert_int_equal(out[0], 'I');
    assert_int_equal(out[5], ' ');
    assert_int_equal(out[8], ':');
    assert_int_equal(out[14], '.');
    assert_int_equal(out[21], ' ');
    assert_memory_equal(out + 22, "test_util.c:", 12);
    assert_non_null(strstr(out, "] hello world\n"));
    assert_null(strstr(out, "debug hidden"));
    assert_non_null(strstr(out, "\nE"));
    assert_non_null(strstr(out, "] trailing newline\n"));
    assert_null(strstr(out, "newline\n\n"));

    /* -v 3 is still info only; debug from 4, trace from 6 (as --help says). */
    log_set_verbosity(3);
    assert_false(log_enabled(LOG_LVL_DEBUG));
    out = capture_stderr(emit_debug);
    assert_null(strstr(out, "debug shown"));

    log_set_verbosity(4);
    assert_true(log_enabled(LOG_LVL_DEBUG));
    assert_false(log_enabled(LOG_LVL_TRACE));
    out = capture_stderr(emit_debug);
    assert_non_null(strstr(out, "] debug shown 4\n"));
    assert_null(strstr(out, "trace hidden"));

    log_set_verbosity(6);
    assert_true(log_enabled(LOG_LVL_TRACE));
    assert_true(log_enabled(LOG_LVL_ERROR));
    log_set_verbosity(0);
}

/* Go's ParseDuration grammar, in ms, and the minimum runtime's "-1". */
static void test_duration(void **state)
{
    (void)state;
    int64_t ms = 0;
    assert_int_equal(util_parse_duration_ms("10m", &ms), 0);
    assert_int_equal(ms, 600000);
    assert_int_equal(util_parse_duration_ms("1h30m", &ms), 0);
    assert_int_equal(ms, 5400000);
    assert_int_equal(util_parse_duration_ms("1500ms", &ms), 0);
    assert_int_equal(ms, 1500);
    assert_int_equal(util_parse_duration_ms("2.5s", &ms), 0);
    assert_int_equal(ms, 2500);
    assert_int_equal(util_parse_duration_ms("120", &ms), 0);
    assert_int_equal(ms, 120000);
    assert_int_equal(util_parse_duration_ms("0", &ms), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(util_parse_duration_ms("0s", &ms), 0);
    assert_int_equal(ms, 0);
    const char *bad[] = { "", "-1", "-5s", "10x", "m", "1.5", "1us", "s10", "10m-", "99999999999999h" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(util_parse_duration_ms(bad[i], &ms), -1);
    assert_int_equal(util_parse_duration_ms(NULL, &ms), -1);
    assert_int_equal(util_parse_min_runtime("-1", &ms), 0);
    assert_int_equal(ms, -1);
    assert_int_equal(util_parse_min_runtime("-2", &ms), -1);
    assert_int_equal(util_parse_min_runtime("5m", &ms), 0);
    assert_int_equal(ms, 300000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc3339_roundtrip),
        cmocka_unit_test(test_rfc3339_rejects),
        cmocka_unit_test(test_clocks),
        cmocka_unit_test(test_clock_override),
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_sbuf),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_hashmap_basic),
        cmocka_unit_test(test_hashmap_growth_and_removal),
        cmocka_unit_test(test_hashmap_churn),
        cmocka_unit_test(test_log_format_and_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
