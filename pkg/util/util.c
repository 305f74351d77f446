/* util.c -- clocks, RFC 3339 times, aborting allocators, sbuf, URL escaping. */
#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The override (util_clock_override): read without a lock, set while no
 * other thread reads the clock (a sandbox runs on one thread). */
static util_clock_fn clock_mono_fn, clock_wall_fn;
static void *clock_ud;

void util_clock_override(util_clock_fn mono_ms, util_clock_fn wall_ms, void *ud)
{
    clock_ud = ud;
    clock_mono_fn = mono_ms;
    clock_wall_fn = wall_ms;
}

int64_t util_now_ms(void)
{
    if (clock_mono_fn)
        return clock_mono_fn(clock_ud);
    return clock_us(CLOCK_MONOTONIC) / 1000;
}
int64_t util_now_us(void)
{
    if (clock_mono_fn)
        return clock_mono_fn(clock_ud) * 1000;
    return clock_us(CLOCK_MONOTONIC);
}
int64_t util_wall_ms(void)
{
    if (clock_wall_fn)
        return clock_wall_fn(clock_ud);
    return clock_us(CLOCK_REALTIME) / 1000;
}

void util_rfc3339(int64_t wall_ms, char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    /* Floor division so times before 1970 still print the right second. */
    int64_t sec = wall_ms >= 0 ? wall_ms / 1000 : -((-wall_ms + 999) / 1000);
    time_t t = (time_t)sec;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        snprintf(buf, n, "1970-01-01T00:00:00Z");
        return;
    }
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void util_rfc3339_ms(int64_t wall_ms, char *buf, size_t n)
{
    char sec[40];
    util_rfc3339(wall_ms, sec, sizeof(sec));
    size_t len = strlen(sec); /* "...:SSZ": the fraction goes before the Z */
    int64_t frac = ((wall_ms % 1000) + 1000) % 1000;
    snprintf(buf, n, "%.*s.%03dZ", (int)(len - 1), sec, (int)frac);
}

/* Reads exactly `width` digits at *p; -1 if any is not a digit. */
static int read_digits(const char **p, int width)
{
    int v = 0;
    for (int i = 0; i < width; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += width;
    return v;
}

static int expect(const char **p, char c)
{
    if (**p != c)
        return -1;
    (*p)++;
    return 0;
}

int64_t util_parse_rfc3339(const char *s)
{
    if (!s)
        return -1;
    const char *p = s;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int year = read_digits(&p, 4);
    if (year < 0 || expect(&p, '-'))
        return -1;
    int mon = read_digits(&p, 2);
    if (mon < 1 || mon > 12 || expect(&p, '-'))
        return -1;
    int day = read_digits(&p, 2);
    if (day < 1 || day > 31)
        return -1;
    if (*p != 'T' && *p != 't')
        return -1;
    p++;
    int hh = read_digits(&p, 2);
    if (hh < 0 || hh > 23 || expect(&p, ':'))
        return -1;
    int mm = read_digits(&p, 2);
    if (mm < 0 || mm > 59 || expect(&p, ':'))
        return -1;
    int ss = read_digits(&p, 2);
    if (ss < 0 || ss > 60) /* 60: leap second, as RFC 3339 allows */
        return -1;

    int64_t ms = 0;
    if (*p == '.') {
        p++;
        int ndig = 0;
        while (*p >= '0' && *p <= '9') {
            if (ndig < 3)
                ms = ms * 10 + (*p - '0');
            ndig++;
            p++;
        }
        if (ndig == 0)
            return -1;
        for (int i = ndig; i < 3; i++)
            ms *= 10;
    }

    int64_t offset_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        p++;
        int oh = read_digits(&p, 2);
        if (oh < 0 || oh > 23 || expect(&p, ':'))
            return -1;
        int om = read_digits(&p, 2);
        if (om < 0 || om > 59)
            return -1;
        offset_s = sign * (int64_t)(oh * 3600 + om * 60);
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;

    tm.tm_year = year - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = day;
    tm.tm_hour = hh;
    tm.tm_min = mm;
    tm.tm_sec = ss;
    errno = 0;
    time_t t = timegm(&tm);
    if (t == (time_t)-1 && errno)
        return -1;
    /* timegm normalises 31 February; reject instead of silently rolling. */
    if (tm.tm_mday != day || tm.tm_mon != mon - 1)
        return -1;
    int64_t r = ((int64_t)t - offset_s) * 1000 + ms;
    return r < 0 ? -1 : r;
}

void util_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

void util_deadline(clockid_t clock, int64_t ms, struct timespec *ts)
{
    clock_gettime(clock, ts);
    if (ms < 0)
        ms = 0;
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

void util_cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

void util_thread_name(const char *fmt, ...)
{
    char name[16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    pthread_setname_np(pthread_self(), name);
}

static void oom(size_t n)
{
    fprintf(stderr, "out of memory allocating %zu bytes\n", n);
    abort();
}

void *util_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *util_xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (!p)
        oom(n * m);
    return p;
}

void *util_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *util_strdup(const char *s)
{
    return util_strndup(s ? s : "", s ? strlen(s) : 0);
}

char *util_strdup_or_null(const char *s)
{
    return s ? util_strdup(s) : NULL;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *util_urldecode(const char *s, size_t n, int plus_is_space)
{
    char *out = util_xmalloc(n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '+' && plus_is_space) {
            out[o++] = ' ';
        } else if (s[i] == '%' && i + 2 < n && (hi = hex_digit(s[i + 1])) >= 0 && (lo = hex_digit(s[i + 2])) >= 0 &&
                   (hi | lo) != 0) {
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return out;
}

char *util_strndup(const char *s, size_t n)
{
    size_t len = s ? strnlen(s, n) : 0;
    char *d = util_xmalloc(len + 1);
    if (len)
        memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

static void sbuf_reserve(sbuf_t *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    b->data = util_xrealloc(b->data, cap);
    b->cap = cap;
}

void sbuf_append(sbuf_t *b, const char *s, size_t n)
{
    sbuf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void sbuf_puts(sbuf_t *b, const char *s)
{
    sbuf_append(b, s, strlen(s));
}

void sbuf_printf(sbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    if ((size_t)n < sizeof tmp) {
        sbuf_append(b, tmp, (size_t)n);
    } else {
        sbuf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void sbuf_reset(sbuf_t *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void sbuf_free(sbuf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *util_urlencode(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t len = s ? strlen(s) : 0;
    char *out = util_xmalloc(len * 3 + 1);
    char *o = out;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        /* RFC 3986 unreserved characters pass through; the rest is escaped. */
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~') {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = '\0';
    return out;
}

int util_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

const char *util_opt_value(int argc, char **argv, int *i, const char *lng, const char *shrt, int *missing)
{
    const char *a = argv[*i];
    size_t l = strlen(lng);
    *missing = 0;
    if (!strncmp(a, lng, l) && a[l] == '=')
        return a + l + 1;
    if (!strcmp(a, lng) || (shrt && !strcmp(a, shrt))) {
        if (*i + 1 >= argc) {
            *missing = 1;
            return NULL;
        }
        return argv[++*i];
    }
    if (shrt && !strncmp(a, shrt, strlen(shrt)))
        return a + strlen(shrt);
    return NULL;
}

/* Go's time.ParseDuration units, as ns per unit; "µs" is two bytes. */
static int duration_unit(const char **p, int64_t *unit)
{
    static const struct {
        const char *name;
        int64_t ns;
    } units[] = { { "ns", 1 },
                  { "us", 1000 },
                  { "\xc2\xb5s", 1000 },
                  { "ms", 1000000 },
                  { "s", 1000000000LL },
                  { "m", 60LL * 1000000000LL },
                  { "h", 3600LL * 1000000000LL } };
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        size_t n = strlen(units[i].name);
        /* "m" must not take the "m" of "ms". */
        if (strncmp(*p, units[i].name, n) == 0 && !(n == 1 && (*p)[0] == 'm' && (*p)[1] == 's')) {
            *unit = units[i].ns;
            *p += n;
            return 0;
        }
    }
    return -1;
}

int util_parse_duration_ms(const char *s, int64_t *ms)
{
    if (!s || !*s || strlen(s) > 64)
        return -1;
    const char *p = s;
    int bare = 1;
    for (const char *c = s; *c; c++)
        bare &= (*c >= '0' && *c <= '9');
    if (bare) { /* a bare number: seconds */
        if (strlen(s) > 12)
            return -1;
        *ms = strtoll(s, NULL, 10) * 1000;
        return 0;
    }
    const int64_t max_ns = (int64_t)1000000000LL * 1000000000LL; /* ~31 years */
    int64_t total = 0;
    while (*p) {
        int64_t ip = 0, frac = 0, fscale = 1;
        int digits = 0;
        while (*p >= '0' && *p <= '9') {
            if (ip > max_ns / 10)
                return -1;
            ip = ip * 10 + (*p++ - '0');
            digits++;
        }
        if (*p == '.') {
            p++;
            while (*p >= '0' && *p <= '9') {
                if (fscale < 1000000000LL) {
                    frac = frac * 10 + (*p - '0');
                    fscale *= 10;
                }
                p++;
                digits++;
            }
        }
        int64_t unit;
        if (!digits || duration_unit(&p, &unit) != 0 || ip > max_ns / unit)
            return -1;
        int64_t part = ip * unit + (int64_t)((double)frac * (double)unit / (double)fscale);
        if (part > max_ns - total)
            return -1;
        total += part;
    }
    if (total % 1000000LL)
        return -1; /* finer than a millisecond */
    *ms = total / 1000000LL;
    return 0;
}

int util_parse_min_runtime(const char *s, int64_t *ms)
{
    if (s && strcmp(s, "-1") == 0) {
        *ms = -1;
        return 0;
    }
    return util_parse_duration_ms(s, ms);
}
