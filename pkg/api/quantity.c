/* quantity.c -- exact resource.Quantity parsing (rounded up to the unit asked)
 * and formatting for tables and status. */
#include "api/quantity.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exponents beyond this are clamped: with any non-zero mantissa the result is
 * already either an overflow or a sub-unit fraction that rounds up to 1. */
#define EXP_CLAMP 100000

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Maps a suffix to a power of ten and a power of two; 0 or -1 if unknown. */
static int parse_suffix(const char *suf, int64_t *exp10, int *exp2)
{
    static const struct {
        const char *s;
        int e10, e2;
    } tab[] = {
        { "", 0, 0 },    { "n", -9, 0 },  { "u", -6, 0 },  { "m", -3, 0 },  { "k", 3, 0 },   { "M", 6, 0 },
        { "G", 9, 0 },   { "T", 12, 0 },  { "P", 15, 0 },  { "E", 18, 0 },  { "Ki", 0, 10 }, { "Mi", 0, 20 },
        { "Gi", 0, 30 }, { "Ti", 0, 40 }, { "Pi", 0, 50 }, { "Ei", 0, 60 },
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (strcmp(suf, tab[i].s) == 0) {
            *exp10 = tab[i].e10;
            *exp2 = tab[i].e2;
            return 0;
        }
    }
    /* Decimal exponent: e<int> or E<int> ("E" alone is exa, matched above). */
    if (suf[0] != 'e' && suf[0] != 'E')
        return -1;
    const char *p = suf + 1;
    int neg = 0;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (!is_digit(*p))
        return -1;
    int64_t e = 0;
    for (; is_digit(*p); p++) {
        if (e < EXP_CLAMP)
            e = e * 10 + (*p - '0');
    }
    if (*p)
        return -1;
    if (e > EXP_CLAMP)
        e = EXP_CLAMP;
    *exp10 = neg ? -e : e;
    *exp2 = 0;
    return 0;
}

/* Multiplies the little-endian decimal digits in d (length *n, room for 20
 * more) by 2^k. */
static void mul_pow2(unsigned char *d, size_t *n, int k)
{
    for (int r = 0; r < k; r++) {
        int carry = 0;
        for (size_t i = 0; i < *n; i++) {
            int v = d[i] * 2 + carry;
            d[i] = (unsigned char)(v % 10);
            carry = v / 10;
        }
        if (carry)
            d[(*n)++] = (unsigned char)carry;
    }
}

/* Value of the big-endian-ordered digits d[hi-1..lo] (little-endian array),
 * or -1 when it does not fit in int64. */
static int digits_to_u64(const unsigned char *d, size_t lo, size_t hi, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = hi; i > lo; i--) {
        unsigned dig = d[i - 1];
        if (v > ((uint64_t)INT64_MAX - dig) / 10)
            return -1;
        v = v * 10 + dig;
    }
    *out = v;
    return 0;
}

int quantity_parse(const char *s, int scale, int64_t *out, char *err, size_t errlen)
{
    if (!s || !*s)
        return util_errf(err, errlen, "empty quantity");
    if (scale < 0 || scale > 9)
        return util_errf(err, errlen, "unsupported scale %d", scale);

    const char *p = s;
    int neg = 0;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    const char *ip = p;
    while (is_digit(*p))
        p++;
    size_t ilen = (size_t)(p - ip);
    const char *fp = p;
    size_t flen = 0;
    if (*p == '.') {
        fp = ++p;
        while (is_digit(*p))
            p++;
        flen = (size_t)(p - fp);
    }
    if (ilen + flen == 0)
        return util_errf(err, errlen, "quantity %.64s: no digits", s);

    int64_t exp10;
    int exp2;
    if (parse_suffix(p, &exp10, &exp2) < 0)
        return util_errf(err, errlen, "quantity %.64s: bad suffix", s);

    /* Mantissa digits, little-endian, with room for the 2^60 multiplier. */
    size_t n = ilen + flen;
    unsigned char *d = util_xmalloc(n + 21);
    for (size_t i = 0; i < flen; i++)
        d[i] = (unsigned char)(fp[flen - 1 - i] - '0');
    for (size_t i = 0; i < ilen; i++)
        d[flen + i] = (unsigned char)(ip[ilen - 1 - i] - '0');
    while (n > 0 && d[n - 1] == 0) /* leading zeros */
        n--;
    int64_t e = exp10 - (int64_t)flen + scale;
    size_t lo = 0;
    while (lo < n && d[lo] == 0) { /* trailing zeros become exponent */
        lo++;
        e++;
    }
    if (n == 0) {
        free(d);
        *out = 0;
        return 0;
    }
    if (lo) {
        memmove(d, d + lo, n - lo);
        n -= lo;
    }
    mul_pow2(d, &n, exp2);

    uint64_t mag;
    int rc = 0;
    if (e >= 0) {
        if ((int64_t)n + e > 19 || digits_to_u64(d, 0, n, &mag) < 0) {
            rc = -1;
        } else {
            for (int64_t i = 0; i < e && rc == 0; i++) {
                if (mag > (uint64_t)INT64_MAX / 10)
                    rc = -1;
                else
                    mag *= 10;
            }
        }
    } else if ((uint64_t)-e >= n) {
        mag = 1; /* a non-zero fraction below one unit rounds up to one */
    } else {
        size_t cut = (size_t)-e;
        int frac = 0;
        for (size_t i = 0; i < cut; i++)
            frac |= d[i];
        if (digits_to_u64(d, cut, n, &mag) < 0 || (frac && mag == (uint64_t)INT64_MAX))
            rc = -1;
        else if (frac)
            mag++; /* round away from zero, as Quantity.ScaledValue does */
    }
    free(d);
    if (rc < 0)
        return util_errf(err, errlen, "quantity %.64s: out of range", s);
    *out = neg ? -(int64_t)mag : (int64_t)mag;
    return 0;
}

/* Splits v into a sign and an unsigned magnitude without overflowing on INT64_MIN. */
static uint64_t magnitude(int64_t v, const char **sign)
{
    *sign = v < 0 ? "-" : "";
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

void quantity_format_bytes(int64_t bytes, char *buf, size_t n)
{
    static const char *units[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
    const char *sign;
    uint64_t m = magnitude(bytes, &sign);
    int u = 0;
    while (u < 6 && m >= ((uint64_t)1 << (10 * (u + 1))))
        u++;
    if (u == 0) {
        snprintf(buf, n, "%s%" PRIu64, sign, m);
        return;
    }
    /* One decimal is enough for a table; whole values drop the ".0". */
    uint64_t unit = (uint64_t)1 << (10 * u);
    uint64_t whole = m / unit;
    uint64_t tenth = (uint64_t)((double)(m % unit) * 10.0 / (double)unit + 0.5);
    if (tenth >= 10) {
        whole++;
        tenth = 0;
    }
    if (tenth)
        snprintf(buf, n, "%s%" PRIu64 ".%" PRIu64 "%s", sign, whole, tenth, units[u]);
    else
        snprintf(buf, n, "%s%" PRIu64 "%s", sign, whole, units[u]);
}

void quantity_format_milli(int64_t milli, char *buf, size_t n)
{
    const char *sign;
    uint64_t m = magnitude(milli, &sign);
    if (m < 1000 && m != 0) {
        snprintf(buf, n, "%s%" PRIu64 "m", sign, m);
        return;
    }
    uint64_t frac = m % 1000;
    if (frac == 0) {
        snprintf(buf, n, "%s%" PRIu64, sign, m / 1000);
        return;
    }
    char f[4];
    snprintf(f, sizeof f, "%03" PRIu64, frac);
    for (int i = 2; i > 0 && f[i] == '0'; i--)
        f[i] = '\0';
    snprintf(buf, n, "%s%" PRIu64 ".%s", sign, m / 1000, f);
}

void quantity_format_k8s_bytes(int64_t bytes, char *buf, size_t n)
{
    static const char *units[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
    const char *sign;
    uint64_t m = magnitude(bytes, &sign);
    int u = 0;
    /* Largest binary suffix that divides exactly; otherwise plain bytes. */
    while (m != 0 && u < 6 && m % ((uint64_t)1 << (10 * (u + 1))) == 0)
        u++;
    snprintf(buf, n, "%s%" PRIu64 "%s", sign, m >> (10 * u), units[u]);
}

void quantity_format_k8s_milli(int64_t milli, char *buf, size_t n)
{
    static const char *units[] = { "", "k", "M", "G", "T", "P", "E" };
    const char *sign;
    uint64_t m = magnitude(milli, &sign);
    if (m % 1000 != 0) {
        snprintf(buf, n, "%s%" PRIu64 "m", sign, m);
        return;
    }
    uint64_t v = m / 1000;
    int u = 0;
    while (v != 0 && u < 6 && v % 1000 == 0) {
        v /= 1000;
        u++;
    }
    snprintf(buf, n, "%s%" PRIu64 "%s", sign, v, units[u]);
}
