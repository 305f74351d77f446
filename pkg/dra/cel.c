/* cel.c -- the bounded CEL evaluator for DRA device selectors (cel.h): a
 * recursive-descent parser into a flat node array with static types, and a
 * tree walk over it that allocates nothing. */
#include "dra/cel.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"

/* Types: static (DYN: an attribute value, known at run time) and of values
 * (ERR: an error whose message is in the evaluation's buffer). */
typedef enum {
    CT_ERR = 0,
    CT_DYN,
    CT_BOOL,
    CT_INT,
    CT_STR,
    CT_QTY,
    CT_SEMVER,
    CT_LIST,
    CT_DEVICE,
    CT_ATTRS,       /* device.attributes: domain -> map */
    CT_ATTR_DOMAIN, /* device.attributes["d"]: name -> value */
    CT_CAPS,        /* device.capacity */
    CT_CAP_DOMAIN,  /* device.capacity["d"]: name -> quantity */
} cel_type_t;

static const char *type_name(int t)
{
    switch (t) {
    case CT_DYN: return "dyn";
    case CT_BOOL: return "bool";
    case CT_INT: return "int";
    case CT_STR: return "string";
    case CT_QTY: return "quantity";
    case CT_SEMVER: return "semver";
    case CT_LIST: return "list";
    case CT_DEVICE: return "device";
    default: return "map";
    }
}

static int is_map(int t)
{
    return t == CT_ATTRS || t == CT_ATTR_DOMAIN || t == CT_CAPS || t == CT_CAP_DOMAIN;
}

typedef struct {
    int64_t maj, min, pat;
    const char *pre; /* pre-release identifiers (no build metadata), or NULL */
    size_t npre;
} cel_semver_t;

typedef struct {
    int t;
    union {
        int b;
        int64_t i; /* INT; QTY in milli-units */
        struct {
            const char *p;
            size_t n;
        } s; /* STR; the domain of ATTR_DOMAIN and CAP_DOMAIN */
        cel_semver_t v;
        int node; /* LIST: its list literal */
    } u;
} cel_val_t;

typedef enum {
    K_BOOL,
    K_INT,
    K_STR,
    K_QTY,
    K_SEMVER,
    K_LIST,   /* a: first element (chained by next) */
    K_DEVICE, /* the variable */
    K_FIELD,  /* a: device; op: the field */
    K_KEY,    /* a: map; b: key expression, or -1 for .name (s, n) */
    K_HAS,    /* a: a K_KEY or K_FIELD in select form */
    K_CALL,   /* op: fn; a: receiver or -1; b: first argument (chained) */
    K_NOT,
    K_NEG,
    K_CMP, /* op: the operator; a, b */
    K_IN,  /* a in b */
    K_AND, /* a: first operand (chained) */
    K_OR,
    K_COND, /* a ? b : c */
    K_BIND, /* cel.bind(name, a, b): i is the variable's slot */
    K_VAR,  /* a variable of cel.bind: i is its slot */
} cel_kind_t;

enum { F_DRIVER, F_ATTRS, F_CAPS, F_MULTI };
enum { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };
static const char *const op_text[] = { "==", "!=", "<", "<=", ">", ">=" };

typedef struct {
    unsigned char kind, op, type, height;
    int col; /* 1-based, for messages */
    int a, b, c, next;
    int64_t i;
    const char *s; /* in the pool */
    size_t n;
    cel_semver_t v;
} cel_node_t;

struct dra_cel {
    int nnodes;
    int root;
    char *pool; /* unescaped string literals */
    cel_node_t *nodes;
};

/* --- functions and methods ---------------------------------------------- */

enum {
    FN_QUANTITY,
    FN_IS_QUANTITY,
    FN_SEMVER,
    FN_IS_SEMVER,
    FN_SIZE,
    M_COMPARE,
    M_GT,
    M_LT,
    M_MAJOR,
    M_MINOR,
    M_PATCH,
    M_SIGN,
    M_IS_INTEGER,
    M_AS_INTEGER,
    M_STARTS,
    M_ENDS,
    M_CONTAINS,
    M_SIZE,
};

#define R_STR    (1u << CT_STR)
#define R_QTY    (1u << CT_QTY)
#define R_SEMVER (1u << CT_SEMVER)
#define R_SIZED                                                                                                        \
    ((1u << CT_STR) | (1u << CT_LIST) | (1u << CT_ATTRS) | (1u << CT_ATTR_DOMAIN) | (1u << CT_CAPS) |                  \
     (1u << CT_CAP_DOMAIN))

typedef struct {
    const char *name;
    int method; /* 1: receiver.name(args), 0: name(args) */
    int nargs;
    int result;
    unsigned recv; /* receiver types (methods) or argument types (functions) */
} cel_fn_t;

static const cel_fn_t fns[] = {
    [FN_QUANTITY] = { "quantity", 0, 1, CT_QTY, R_STR },
    [FN_IS_QUANTITY] = { "isQuantity", 0, 1, CT_BOOL, R_STR },
    [FN_SEMVER] = { "semver", 0, 1, CT_SEMVER, R_STR },
    [FN_IS_SEMVER] = { "isSemver", 0, 1, CT_BOOL, R_STR },
    [FN_SIZE] = { "size", 0, 1, CT_INT, R_SIZED },
    [M_COMPARE] = { "compareTo", 1, 1, CT_INT, R_QTY | R_SEMVER },
    [M_GT] = { "isGreaterThan", 1, 1, CT_BOOL, R_QTY | R_SEMVER },
    [M_LT] = { "isLessThan", 1, 1, CT_BOOL, R_QTY | R_SEMVER },
    [M_MAJOR] = { "major", 1, 0, CT_INT, R_SEMVER },
    [M_MINOR] = { "minor", 1, 0, CT_INT, R_SEMVER },
    [M_PATCH] = { "patch", 1, 0, CT_INT, R_SEMVER },
    [M_SIGN] = { "sign", 1, 0, CT_INT, R_QTY },
    [M_IS_INTEGER] = { "isInteger", 1, 0, CT_BOOL, R_QTY },
    [M_AS_INTEGER] = { "asInteger", 1, 0, CT_INT, R_QTY },
    [M_STARTS] = { "startsWith", 1, 1, CT_BOOL, R_STR },
    [M_ENDS] = { "endsWith", 1, 1, CT_BOOL, R_STR },
    [M_CONTAINS] = { "contains", 1, 1, CT_BOOL, R_STR },
    [M_SIZE] = { "size", 1, 0, CT_INT, R_SIZED },
};
#define NFNS ((int)(sizeof fns / sizeof fns[0]))

static int fn_find(const char *name, size_t n, int method)
{
    for (int i = 0; i < NFNS; i++)
        if (fns[i].method == method && strlen(fns[i].name) == n && memcmp(fns[i].name, name, n) == 0)
            return i;
    return -1;
}

/* CEL's macros besides has(): they iterate, which the bound excludes. */
static int is_macro(const char *name, size_t n)
{
    static const char *const m[] = { "all", "exists", "exists_one", "map", "filter" };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (strlen(m[i]) == n && memcmp(m[i], name, n) == 0)
            return 1;
    return 0;
}

/* --- semver (semver.org 2.0, strict as blang/semver's Parse) ------------- */

static int semver_num(const char *p, size_t n, size_t *pos, int64_t *out)
{
    size_t i = *pos, start = i;
    int64_t v = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        if (v > (INT64_MAX - (p[i] - '0')) / 10)
            return -1;
        v = v * 10 + (p[i] - '0');
        i++;
    }
    if (i == start || (p[start] == '0' && i - start > 1))
        return -1;
    *pos = i;
    *out = v;
    return 0;
}

static int ident_char(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '-';
}

/* Dot-separated identifiers from *pos up to a stop character or the end;
 * numeric: a numeric identifier may not have a leading zero. */
static int semver_idents(const char *p, size_t n, size_t *pos, char stop, int numeric)
{
    size_t i = *pos;
    for (;;) {
        size_t start = i;
        int digits = 1;
        while (i < n && ident_char(p[i])) {
            if (p[i] < '0' || p[i] > '9')
                digits = 0;
            i++;
        }
        if (i == start)
            return -1;
        if (numeric && digits && p[start] == '0' && i - start > 1)
            return -1;
        if (i < n && p[i] == '.') {
            i++;
            continue;
        }
        if (i == n || p[i] == stop)
            break;
        return -1;
    }
    *pos = i;
    return 0;
}

static int semver_parse(const char *p, size_t n, cel_semver_t *v)
{
    size_t i = 0;
    memset(v, 0, sizeof *v);
    if (semver_num(p, n, &i, &v->maj) || i >= n || p[i++] != '.' || semver_num(p, n, &i, &v->min) || i >= n ||
        p[i++] != '.' || semver_num(p, n, &i, &v->pat))
        return -1;
    if (i < n && p[i] == '-') {
        size_t start = ++i;
        if (semver_idents(p, n, &i, '+', 1))
            return -1;
        v->pre = p + start;
        v->npre = i - start;
    }
    if (i < n && p[i] == '+') {
        i++;
        if (semver_idents(p, n, &i, '\0', 0))
            return -1;
    }
    return i == n ? 0 : -1;
}

static int cmp_i64(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b;
}

/* One pre-release identifier against another: numeric ones numerically
 * (no leading zeros, so by length first), below alphanumeric ones, which
 * compare in ASCII order. */
static int semver_ident_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    int da = 1, db = 1;
    for (size_t i = 0; i < na; i++)
        da &= a[i] >= '0' && a[i] <= '9';
    for (size_t i = 0; i < nb; i++)
        db &= b[i] >= '0' && b[i] <= '9';
    if (da != db)
        return da ? -1 : 1;
    if (da && na != nb)
        return na < nb ? -1 : 1;
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c)
        return c < 0 ? -1 : 1;
    return cmp_i64((int64_t)na, (int64_t)nb);
}

static int semver_cmp(const cel_semver_t *a, const cel_semver_t *b)
{
    int c = cmp_i64(a->maj, b->maj);
    if (!c)
        c = cmp_i64(a->min, b->min);
    if (!c)
        c = cmp_i64(a->pat, b->pat);
    if (c)
        return c;
    if (!a->pre || !b->pre) /* a release is above its pre-releases */
        return a->pre ? -1 : b->pre ? 1 : 0;
    size_t i = 0, j = 0;
    while (i < a->npre && j < b->npre) {
        size_t ei = i, ej = j;
        while (ei < a->npre && a->pre[ei] != '.')
            ei++;
        while (ej < b->npre && b->pre[ej] != '.')
            ej++;
        c = semver_ident_cmp(a->pre + i, ei - i, b->pre + j, ej - j);
        if (c)
            return c;
        i = ei + 1;
        j = ej + 1;
    }
    /* the one with identifiers left is higher */
    return (i < a->npre) ? 1 : (j < b->npre) ? -1 : 0;
}

/* --- lexer --------------------------------------------------------------- */

typedef enum {
    T_EOF,
    T_IDENT,
    T_INT,
    T_STR,
    T_PUNCT, /* p holds the operator's text */
} tok_kind_t;

typedef struct {
    tok_kind_t kind;
    size_t start, end; /* byte offsets in the source */
    uint64_t u;        /* INT: the magnitude (negation folds -2^63) */
    const char *s;     /* STR: the unescaped text in the pool; IDENT: source */
    size_t n;
    char p[3];
} tok_t;

typedef struct {
    const char *src;
    size_t len, pos;
    tok_t tok;
    char *err;
    size_t errlen;
    int failed;
    int depth;
    char *pool;
    size_t pool_used;
    cel_node_t *nodes;
    int nnodes;
    /* the cel.bind variables in scope, innermost last */
    const char *bind_name[DRA_CEL_MAX_BINDS];
    size_t bind_len[DRA_CEL_MAX_BINDS];
    int bind_type[DRA_CEL_MAX_BINDS];
    int nbinds;
} parser_t;

static void perr(parser_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perr(parser_t *p, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = 1;
    if (!p->err || !p->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
}

static int col_of(const parser_t *p, size_t off)
{
    return (int)off + 1;
}

static int is_ident_start(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static int hexval(char ch)
{
    if (is_digit(ch))
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static void pool_put(parser_t *p, char ch)
{
    p->pool[p->pool_used++] = ch; /* the pool is as long as the source */
}

/* A code point as UTF-8 into the pool; it never grows past the escape
 * that wrote it (\xHH: 4 bytes for at most 2, \u: 6 for 3, \U: 10 for 4). */
static int pool_utf8(parser_t *p, uint32_t cp)
{
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    if (cp < 0x80) {
        pool_put(p, (char)cp);
    } else if (cp < 0x800) {
        pool_put(p, (char)(0xC0 | (cp >> 6)));
        pool_put(p, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        pool_put(p, (char)(0xE0 | (cp >> 12)));
        pool_put(p, (char)(0x80 | ((cp >> 6) & 0x3F)));
        pool_put(p, (char)(0x80 | (cp & 0x3F)));
    } else {
        pool_put(p, (char)(0xF0 | (cp >> 18)));
        pool_put(p, (char)(0x80 | ((cp >> 12) & 0x3F)));
        pool_put(p, (char)(0x80 | ((cp >> 6) & 0x3F)));
        pool_put(p, (char)(0x80 | (cp & 0x3F)));
    }
    return 0;
}

/* One escape after the backslash at p->pos; 0 or -1 (reported). */
static int lex_escape(parser_t *p)
{
    size_t at = p->pos - 1;
    char ch = p->src[p->pos++];
    static const char simple_in[] = "\\\"'`?abfnrtv";
    static const char simple_out[] = "\\\"'`?\a\b\f\n\r\t\v";
    const char *hit = ch ? strchr(simple_in, ch) : NULL;
    if (hit) {
        pool_put(p, simple_out[hit - simple_in]);
        return 0;
    }
    int digits = ch == 'x' || ch == 'X' ? 2 : ch == 'u' ? 4 : ch == 'U' ? 8 : 0;
    uint32_t cp = 0;
    if (digits) {
        for (int k = 0; k < digits; k++) {
            int h = p->pos < p->len ? hexval(p->src[p->pos]) : -1;
            if (h < 0) {
                perr(p, "syntax error at column %d: invalid escape sequence", col_of(p, at));
                return -1;
            }
            cp = cp * 16 + (uint32_t)h;
            p->pos++;
        }
    } else if (ch >= '0' && ch <= '3') {
        cp = (uint32_t)(ch - '0');
        for (int k = 0; k < 2; k++) {
            char o = p->pos < p->len ? p->src[p->pos] : 0;
            if (o < '0' || o > '7') {
                perr(p, "syntax error at column %d: invalid escape sequence", col_of(p, at));
                return -1;
            }
            cp = cp * 8 + (uint32_t)(o - '0');
            p->pos++;
        }
    } else {
        perr(p, "syntax error at column %d: invalid escape sequence", col_of(p, at));
        return -1;
    }
    if (pool_utf8(p, cp)) {
        perr(p, "syntax error at column %d: invalid code point in escape", col_of(p, at));
        return -1;
    }
    return 0;
}

static int lex_string(parser_t *p, tok_t *t)
{
    char q = p->src[p->pos];
    if (p->pos + 2 < p->len && p->src[p->pos + 1] == q && p->src[p->pos + 2] == q) {
        perr(p, "triple-quoted string literals are not supported (column %d)", col_of(p, p->pos));
        return -1;
    }
    p->pos++;
    t->kind = T_STR;
    t->s = p->pool + p->pool_used;
    while (p->pos < p->len && p->src[p->pos] != q) {
        char ch = p->src[p->pos++];
        if (ch == '\n' || ch == '\r') {
            perr(p, "syntax error at column %d: newline in string literal", col_of(p, p->pos - 1));
            return -1;
        }
        if (ch == '\\') {
            if (p->pos >= p->len)
                break;
            if (lex_escape(p))
                return -1;
        } else {
            pool_put(p, ch);
        }
    }
    if (p->pos >= p->len) {
        perr(p, "syntax error at column %d: unterminated string literal", col_of(p, t->start));
        return -1;
    }
    p->pos++;
    t->n = (size_t)(p->pool + p->pool_used - t->s);
    pool_put(p, '\0');
    return 0;
}

static int lex_number(parser_t *p, tok_t *t)
{
    size_t i = p->pos;
    uint64_t v = 0;
    int over = 0;
    t->kind = T_INT;
    if (p->src[i] == '0' && i + 1 < p->len && (p->src[i + 1] == 'x' || p->src[i + 1] == 'X')) {
        i += 2;
        size_t start = i;
        while (i < p->len && hexval(p->src[i]) >= 0) {
            over |= v > (UINT64_MAX >> 4);
            v = v * 16 + (uint64_t)hexval(p->src[i++]);
        }
        if (i == start) {
            perr(p, "syntax error at column %d: hexadecimal literal without digits", col_of(p, p->pos));
            return -1;
        }
    } else {
        while (i < p->len && is_digit(p->src[i])) {
            uint64_t d = (uint64_t)(p->src[i++] - '0');
            over |= v > (UINT64_MAX - d) / 10;
            v = v * 10 + d;
        }
        if (i < p->len && (p->src[i] == '.' || p->src[i] == 'e' || p->src[i] == 'E') &&
            (p->src[i] != '.' || (i + 1 < p->len && is_digit(p->src[i + 1])))) {
            perr(p, "double literals are not supported (column %d)", col_of(p, p->pos));
            return -1;
        }
    }
    if (i < p->len && (p->src[i] == 'u' || p->src[i] == 'U')) {
        perr(p, "unsigned integer literals are not supported (column %d)", col_of(p, p->pos));
        return -1;
    }
    if (over || v > (uint64_t)INT64_MAX + 1) {
        perr(p, "integer literal out of range at column %d (int64)", col_of(p, p->pos));
        return -1;
    }
    t->u = v;
    p->pos = i;
    return 0;
}

/* The next token into p->tok; -1 on an error (reported). */
static int lex(parser_t *p)
{
    tok_t *t = &p->tok;
    while (p->pos < p->len && strchr(" \t\r\n\f\v", p->src[p->pos]))
        p->pos++;
    memset(t, 0, sizeof *t);
    t->start = p->pos;
    if (p->pos >= p->len) {
        t->kind = T_EOF;
        return 0;
    }
    char ch = p->src[p->pos];
    int rc = 0;
    if (is_ident_start(ch)) {
        size_t i = p->pos;
        while (i < p->len && (is_ident_start(p->src[i]) || is_digit(p->src[i])))
            i++;
        if (i < p->len && (p->src[i] == '"' || p->src[i] == '\'') && i - p->pos == 1 && strchr("rRbB", ch)) {
            perr(p, "%s literals are not supported (column %d)", (ch == 'r' || ch == 'R') ? "raw string" : "bytes",
                 col_of(p, p->pos));
            return -1;
        }
        t->kind = T_IDENT;
        t->s = p->src + p->pos;
        t->n = i - p->pos;
        p->pos = i;
    } else if (is_digit(ch)) {
        rc = lex_number(p, t);
    } else if (ch == '"' || ch == '\'') {
        rc = lex_string(p, t);
    } else {
        static const char *const two[] = { "==", "!=", "<=", ">=", "&&", "||" };
        t->kind = T_PUNCT;
        for (size_t k = 0; k < sizeof two / sizeof two[0]; k++)
            if (p->pos + 1 < p->len && p->src[p->pos] == two[k][0] && p->src[p->pos + 1] == two[k][1]) {
                memcpy(t->p, two[k], 2);
                p->pos += 2;
                t->end = p->pos;
                return 0;
            }
        if (!strchr("()[]{}.,?:!-+*/%<>", ch) || ch == '\0') {
            perr(p, "syntax error at column %d: unexpected character '%c'", col_of(p, p->pos),
                 (ch > 32 && ch < 127) ? ch : '?');
            return -1;
        }
        t->p[0] = ch;
        p->pos++;
    }
    t->end = p->pos;
    return rc;
}

static int tok_is(const parser_t *p, const char *punct)
{
    return p->tok.kind == T_PUNCT && strcmp(p->tok.p, punct) == 0;
}

static int tok_ident(const parser_t *p, const char *name)
{
    return p->tok.kind == T_IDENT && p->tok.n == strlen(name) && memcmp(p->tok.s, name, p->tok.n) == 0;
}

static void unexpected(parser_t *p, const char *want)
{
    const tok_t *t = &p->tok;
    int c = col_of(p, t->start);
    if (t->kind == T_EOF)
        perr(p, "syntax error at column %d: unexpected end of expression%s%s", c, want ? ", expected " : "",
             want ? want : "");
    else
        perr(p, "syntax error at column %d: unexpected '%.*s'%s%s", c,
             (int)(t->end - t->start > 20 ? 20 : t->end - t->start), p->src + t->start, want ? ", expected " : "",
             want ? want : "");
}

static int expect(parser_t *p, const char *punct)
{
    if (!tok_is(p, punct)) {
        char want[8];
        snprintf(want, sizeof want, "'%s'", punct);
        unexpected(p, want);
        return -1;
    }
    return lex(p);
}

/* --- nodes --------------------------------------------------------------- */

static int height(const parser_t *p, int n)
{
    return n < 0 ? 0 : p->nodes[n].height;
}

/* A new node over children a, b, c (-1: none) at column col. */
static int node(parser_t *p, int kind, int col, int a, int b, int c)
{
    if (p->failed)
        return -1;
    if (p->nnodes >= DRA_CEL_MAX_NODES) {
        perr(p, "the expression has more than %d nodes", DRA_CEL_MAX_NODES);
        return -1;
    }
    int h = height(p, a);
    if (height(p, b) > h)
        h = height(p, b);
    if (height(p, c) > h)
        h = height(p, c);
    if (h + 1 > DRA_CEL_MAX_DEPTH) {
        perr(p, "the expression is nested deeper than %d levels (column %d)", DRA_CEL_MAX_DEPTH, col);
        return -1;
    }
    int i = p->nnodes++;
    cel_node_t *nd = &p->nodes[i];
    memset(nd, 0, sizeof *nd);
    nd->kind = (unsigned char)kind;
    nd->col = col;
    nd->a = a;
    nd->b = b;
    nd->c = c;
    nd->next = -1;
    nd->height = (unsigned char)(h + 1);
    nd->type = CT_DYN;
    return i;
}

/* A chained child's height counts for its parent (lists, args, &&, ||). */
static int raise_height(parser_t *p, int parent, int child)
{
    int h = height(p, child) + 1;
    if (h > p->nodes[parent].height) {
        if (h > DRA_CEL_MAX_DEPTH) {
            perr(p, "the expression is nested deeper than %d levels (column %d)", DRA_CEL_MAX_DEPTH,
                 p->nodes[child].col);
            return -1;
        }
        p->nodes[parent].height = (unsigned char)h;
    }
    return 0;
}

static int ntype(const parser_t *p, int n)
{
    return p->nodes[n].type;
}

static int want_bool(parser_t *p, int n, const char *what)
{
    int t = ntype(p, n);
    if (t != CT_BOOL && t != CT_DYN) {
        perr(p, "%s needs a bool, not %s (column %d)", what, type_name(t), p->nodes[n].col);
        return -1;
    }
    return 0;
}

/* --- parser -------------------------------------------------------------- */

static int parse_expr(parser_t *p);

static int enter(parser_t *p)
{
    if (++p->depth > DRA_CEL_MAX_DEPTH) {
        perr(p, "the expression is nested deeper than %d levels (column %d)", DRA_CEL_MAX_DEPTH,
             col_of(p, p->tok.start));
        return -1;
    }
    return 0;
}

/* Comma-separated expressions up to close, chained; *first gets the
 * first (-1 for none); returns the count or -1. */
static int parse_seq(parser_t *p, const char *close, int parent, int *first)
{
    int count = 0, last = -1;
    *first = -1;
    while (!tok_is(p, close)) {
        int e = parse_expr(p);
        if (e < 0 || raise_height(p, parent, e))
            return -1;
        if (last < 0)
            *first = e;
        else
            p->nodes[last].next = e;
        last = e;
        count++;
        if (tok_is(p, ",")) {
            if (lex(p))
                return -1;
            continue;
        }
        if (!tok_is(p, close)) {
            char want[16];
            snprintf(want, sizeof want, "',' or '%s'", close);
            unexpected(p, want);
            return -1;
        }
    }
    return lex(p) ? -1 : count;
}

/* quantity("..") and semver("..") of a literal: checked and folded now. */
static int fold_literal_call(parser_t *p, int call, int fn, int arg)
{
    cel_node_t *a = &p->nodes[arg];
    cel_node_t *c = &p->nodes[call];
    if (fn == FN_QUANTITY || fn == FN_IS_QUANTITY) {
        char qerr[128] = "";
        int64_t v;
        int ok = quantity_parse(a->s, 3, &v, qerr, sizeof qerr) == 0 && strlen(a->s) == a->n;
        if (fn == FN_QUANTITY && !ok) {
            perr(p, "invalid quantity \"%s\" at column %d: %s", a->s, a->col, qerr[0] ? qerr : "not a quantity");
            return -1;
        }
        c->kind = fn == FN_QUANTITY ? K_QTY : K_BOOL;
        c->i = fn == FN_QUANTITY ? v : ok;
    } else {
        cel_semver_t v;
        int ok = semver_parse(a->s, a->n, &v) == 0;
        if (fn == FN_SEMVER && !ok) {
            perr(p, "invalid semver \"%s\" at column %d", a->s, a->col);
            return -1;
        }
        c->kind = fn == FN_SEMVER ? K_SEMVER : K_BOOL;
        c->v = v;
        c->i = ok;
    }
    c->b = -1;
    return call;
}

/* Type checks of a call: receiver and argument types where known. */
static int check_call(parser_t *p, int call, int fn, int recv, int first, int nargs)
{
    const cel_fn_t *f = &fns[fn];
    if (nargs != f->nargs) {
        perr(p, "'%s' takes %d argument%s, not %d (column %d)", f->name, f->nargs, f->nargs == 1 ? "" : "s", nargs,
             p->nodes[call].col);
        return -1;
    }
    int subject = f->method ? recv : first;
    int st = ntype(p, subject);
    if (st != CT_DYN && !(f->recv & (1u << st))) {
        perr(p, "no matching overload for '%s' on %s (column %d)", f->name, type_name(st), p->nodes[call].col);
        return -1;
    }
    if (f->method && nargs == 1) {
        int at = ntype(p, first);
        int want = fn == M_STARTS || fn == M_ENDS || fn == M_CONTAINS ? CT_STR : st;
        if (at != CT_DYN && want != CT_DYN && at != want) {
            perr(p, "no matching overload for '%s' on %s with a %s argument (column %d)", f->name, type_name(st),
                 type_name(at), p->nodes[call].col);
            return -1;
        }
    }
    p->nodes[call].type = (unsigned char)f->result;
    if (!f->method && fn != FN_SIZE && p->nodes[first].kind == K_STR)
        return fold_literal_call(p, call, fn, first);
    return call;
}

/* name(args) or recv.name(args), the current token '('. */
static int parse_call(parser_t *p, const char *name, size_t n, int col, int recv)
{
    int method = recv >= 0;
    if (!method && n == 3 && memcmp(name, "has", 3) == 0)
        return -2; /* the caller parses the macro */
    if (is_macro(name, n)) {
        perr(p, "macro '%.*s' is not supported (column %d)", (int)n, name, col);
        return -1;
    }
    int fn = fn_find(name, n, method);
    if (fn < 0 && !method && n == 4 && memcmp(name, "size", 4) == 0)
        fn = FN_SIZE;
    if (fn < 0) {
        perr(p, "the function '%.*s' is not supported (column %d)", (int)n, name, col);
        return -1;
    }
    int call = node(p, K_CALL, col, recv, -1, -1);
    if (call < 0 || lex(p))
        return -1;
    p->nodes[call].op = (unsigned char)fn;
    int first;
    int nargs = parse_seq(p, ")", call, &first);
    if (nargs < 0)
        return -1;
    p->nodes[call].b = first;
    return check_call(p, call, fn, recv, first, nargs);
}

/* has(m.name): presence of a key in a map, or of a device field. */
static int parse_has(parser_t *p, int col)
{
    if (lex(p))
        return -1;
    int arg = parse_expr(p);
    if (arg < 0 || expect(p, ")"))
        return -1;
    const cel_node_t *a = &p->nodes[arg];
    if (!((a->kind == K_KEY && a->b < 0) || a->kind == K_FIELD)) {
        perr(p, "invalid argument to has() macro at column %d: it takes a field selection (x.name)", col);
        return -1;
    }
    int h = node(p, K_HAS, col, arg, -1, -1);
    if (h >= 0)
        p->nodes[h].type = CT_BOOL;
    return h;
}

static int select_field(parser_t *p, int operand, const char *name, size_t n, int col)
{
    int t = ntype(p, operand);
    if (t == CT_DEVICE) {
        static const char *const f[] = { [F_DRIVER] = "driver",
                                         [F_ATTRS] = "attributes",
                                         [F_CAPS] = "capacity",
                                         [F_MULTI] = "allowMultipleAllocations" };
        static const int ft[] = { CT_STR, CT_ATTRS, CT_CAPS, CT_BOOL };
        for (int k = 0; k < 4; k++)
            if (strlen(f[k]) == n && memcmp(f[k], name, n) == 0) {
                int nd = node(p, K_FIELD, col, operand, -1, -1);
                if (nd >= 0) {
                    p->nodes[nd].op = (unsigned char)k;
                    p->nodes[nd].type = (unsigned char)ft[k];
                }
                return nd;
            }
        perr(p, "undefined field '%.*s' of device (column %d)", (int)n, name, col);
        return -1;
    }
    if (!is_map(t)) {
        perr(p, "type '%s' has no field '%.*s' (column %d)", type_name(t), (int)n, name, col);
        return -1;
    }
    int nd = node(p, K_KEY, col, operand, -1, -1);
    if (nd < 0)
        return -1;
    /* the name is in the source; the pool has room for it (each source
     * byte becomes at most one pool byte, and identifiers are not escaped) */
    char *s = p->pool + p->pool_used;
    memcpy(s, name, n);
    s[n] = '\0';
    p->pool_used += n + 1;
    p->nodes[nd].s = s;
    p->nodes[nd].n = n;
    p->nodes[nd].type = (unsigned char)(t == CT_ATTRS         ? CT_ATTR_DOMAIN
                                        : t == CT_CAPS        ? CT_CAP_DOMAIN
                                        : t == CT_ATTR_DOMAIN ? CT_DYN
                                                              : CT_QTY);
    return nd;
}

static int index_map(parser_t *p, int operand, int col)
{
    int t = ntype(p, operand);
    if (t == CT_LIST) {
        perr(p, "list index is not supported (column %d)", col);
        return -1;
    }
    if (!is_map(t)) {
        perr(p, "index on type '%s' is not supported (column %d)", type_name(t), col);
        return -1;
    }
    if (lex(p))
        return -1;
    int key = parse_expr(p);
    if (key < 0 || expect(p, "]"))
        return -1;
    int kt = ntype(p, key);
    if (kt != CT_STR && kt != CT_DYN) {
        perr(p, "a map key must be a string, not %s (column %d)", type_name(kt), col);
        return -1;
    }
    int nd = node(p, K_KEY, col, operand, key, -1);
    if (nd >= 0)
        p->nodes[nd].type = (unsigned char)(t == CT_ATTRS         ? CT_ATTR_DOMAIN
                                            : t == CT_CAPS        ? CT_CAP_DOMAIN
                                            : t == CT_ATTR_DOMAIN ? CT_DYN
                                                                  : CT_QTY);
    return nd;
}

/* A cel.bind variable in scope by that name: its slot, or -1. */
static int bind_find(const parser_t *p, const char *name, size_t n)
{
    for (int k = p->nbinds - 1; k >= 0; k--)
        if (p->bind_len[k] == n && memcmp(p->bind_name[k], name, n) == 0)
            return k;
    return -1;
}

/* cel.bind(name, init, body), kube's recommended way to name a domain once
 * (cel.bind(d, device.attributes["dra.example.com"], d.a && d.b)); the
 * current token is the '.' after "cel". */
static int parse_bind(parser_t *p, int col)
{
    if (lex(p))
        return -1;
    if (!tok_ident(p, "bind")) {
        if (p->tok.kind == T_IDENT)
            perr(p, "the function 'cel.%.*s' is not supported (column %d)", (int)p->tok.n, p->tok.s, col);
        else
            unexpected(p, "'bind'");
        return -1;
    }
    if (lex(p) || expect(p, "("))
        return -1;
    tok_t name = p->tok;
    if (name.kind != T_IDENT) {
        unexpected(p, "a variable name");
        return -1;
    }
    if (p->nbinds >= DRA_CEL_MAX_BINDS) {
        perr(p, "cel.bind is nested deeper than %d (column %d)", DRA_CEL_MAX_BINDS, col);
        return -1;
    }
    if (lex(p) || expect(p, ","))
        return -1;
    int init = parse_expr(p);
    if (init < 0 || expect(p, ","))
        return -1;
    int slot = p->nbinds++;
    p->bind_name[slot] = name.s;
    p->bind_len[slot] = name.n;
    p->bind_type[slot] = ntype(p, init);
    int body = parse_expr(p);
    p->nbinds--;
    if (body < 0 || expect(p, ")"))
        return -1;
    int nd = node(p, K_BIND, col, init, body, -1);
    if (nd >= 0) {
        p->nodes[nd].i = slot;
        p->nodes[nd].type = (unsigned char)ntype(p, body);
    }
    return nd;
}

static int parse_primary(parser_t *p)
{
    tok_t t = p->tok;
    int col = col_of(p, t.start);
    if (tok_is(p, ".")) { /* a leading dot: the root scope */
        if (lex(p))
            return -1;
        if (p->tok.kind != T_IDENT) {
            unexpected(p, "an identifier");
            return -1;
        }
        t = p->tok;
    }
    if (t.kind == T_IDENT) {
        if (lex(p))
            return -1;
        if (tok_is(p, "(")) {
            int r = parse_call(p, t.s, t.n, col, -1);
            return r == -2 ? parse_has(p, col) : r;
        }
        int slot = bind_find(p, t.s, t.n);
        if (slot >= 0) {
            int nd = node(p, K_VAR, col, -1, -1, -1);
            if (nd >= 0) {
                p->nodes[nd].i = slot;
                p->nodes[nd].type = (unsigned char)p->bind_type[slot];
            }
            return nd;
        }
        if (t.n == 3 && memcmp(t.s, "cel", 3) == 0 && tok_is(p, "."))
            return parse_bind(p, col);
        if (t.n == 6 && memcmp(t.s, "device", 6) == 0) {
            int nd = node(p, K_DEVICE, col, -1, -1, -1);
            if (nd >= 0)
                p->nodes[nd].type = CT_DEVICE;
            return nd;
        }
        int is_true = t.n == 4 && memcmp(t.s, "true", 4) == 0;
        if (is_true || (t.n == 5 && memcmp(t.s, "false", 5) == 0)) {
            int nd = node(p, K_BOOL, col, -1, -1, -1);
            if (nd >= 0) {
                p->nodes[nd].i = is_true;
                p->nodes[nd].type = CT_BOOL;
            }
            return nd;
        }
        if (t.n == 4 && memcmp(t.s, "null", 4) == 0)
            perr(p, "null is not supported (column %d)", col);
        else
            perr(p, "undeclared reference to '%.*s' (column %d)", (int)t.n, t.s, col);
        return -1;
    }
    if (t.kind == T_INT || t.kind == T_STR) {
        if (t.kind == T_INT && t.u > (uint64_t)INT64_MAX) {
            perr(p, "integer literal out of range at column %d (int64)", col);
            return -1;
        }
        int nd = node(p, t.kind == T_INT ? K_INT : K_STR, col, -1, -1, -1);
        if (nd < 0)
            return -1;
        p->nodes[nd].i = (int64_t)t.u;
        p->nodes[nd].s = t.s;
        p->nodes[nd].n = t.n;
        p->nodes[nd].type = t.kind == T_INT ? CT_INT : CT_STR;
        return lex(p) ? -1 : nd;
    }
    if (tok_is(p, "(")) {
        if (lex(p))
            return -1;
        int e = parse_expr(p);
        return e < 0 || expect(p, ")") ? -1 : e;
    }
    if (tok_is(p, "[")) {
        int nd = node(p, K_LIST, col, -1, -1, -1);
        if (nd < 0 || lex(p))
            return -1;
        int first;
        int count = parse_seq(p, "]", nd, &first);
        if (count < 0)
            return -1;
        p->nodes[nd].a = first;
        p->nodes[nd].type = CT_LIST;
        return nd;
    }
    if (tok_is(p, "{")) {
        perr(p, "map literals are not supported (column %d)", col);
        return -1;
    }
    unexpected(p, NULL);
    return -1;
}

static int parse_member(parser_t *p)
{
    int n = parse_primary(p);
    while (n >= 0) {
        int col = col_of(p, p->tok.start);
        if (tok_is(p, ".")) {
            if (lex(p))
                return -1;
            if (tok_is(p, "?")) {
                perr(p, "optional field selection is not supported (column %d)", col);
                return -1;
            }
            if (p->tok.kind != T_IDENT) {
                unexpected(p, "a field name");
                return -1;
            }
            tok_t name = p->tok;
            if (lex(p))
                return -1;
            if (tok_is(p, "(")) {
                n = parse_call(p, name.s, name.n, col_of(p, name.start), n);
            } else {
                n = select_field(p, n, name.s, name.n, col_of(p, name.start));
            }
        } else if (tok_is(p, "[")) {
            if (p->pos < p->len && p->src[p->pos] == '?') {
                perr(p, "optional index is not supported (column %d)", col);
                return -1;
            }
            n = index_map(p, n, col);
        } else {
            break;
        }
    }
    return n;
}

static int parse_unary(parser_t *p)
{
    int col = col_of(p, p->tok.start);
    if (tok_is(p, "!") || tok_is(p, "-")) {
        int neg = tok_is(p, "-");
        if (lex(p) || enter(p))
            return -1;
        int e;
        if (neg && p->tok.kind == T_INT) { /* -9223372036854775808 is a literal */
            e = node(p, K_INT, col, -1, -1, -1);
            if (e >= 0) {
                p->nodes[e].i = (int64_t)(0 - p->tok.u);
                p->nodes[e].type = CT_INT;
                if (lex(p))
                    e = -1;
            }
            p->depth--;
            /* a member access binds tighter than the sign: -1.x is -(1.x) */
            if (e >= 0 && (tok_is(p, ".") || tok_is(p, "["))) {
                perr(p, "member access on a negative literal is not supported (column %d)", col);
                return -1;
            }
            return e;
        }
        int operand = parse_unary(p);
        p->depth--;
        if (operand < 0)
            return -1;
        int t = ntype(p, operand);
        if (neg ? (t != CT_INT && t != CT_DYN) : (t != CT_BOOL && t != CT_DYN)) {
            perr(p, "no matching overload for '%c' on %s (column %d)", neg ? '-' : '!', type_name(t), col);
            return -1;
        }
        int nd = node(p, neg ? K_NEG : K_NOT, col, operand, -1, -1);
        if (nd >= 0)
            p->nodes[nd].type = neg ? CT_INT : CT_BOOL;
        return nd;
    }
    return parse_member(p);
}

/* + - * / %: arithmetic is outside the subset; named, never guessed. */
static int parse_arith(parser_t *p)
{
    int l = parse_unary(p);
    if (l >= 0 && (tok_is(p, "+") || tok_is(p, "-") || tok_is(p, "*") || tok_is(p, "/") || tok_is(p, "%"))) {
        perr(p, "operator '%s' is not supported (column %d)", p->tok.p, col_of(p, p->tok.start));
        return -1;
    }
    return l;
}

static int check_compare(parser_t *p, int op, int l, int r, int col)
{
    int lt = ntype(p, l), rt = ntype(p, r);
    int bad = lt == CT_LIST || rt == CT_LIST || lt == CT_DEVICE || rt == CT_DEVICE || is_map(lt) || is_map(rt);
    if (bad) {
        perr(p, "comparing a %s with '%s' is not supported (column %d)",
             type_name(bad && (lt == CT_LIST || lt == CT_DEVICE || is_map(lt)) ? lt : rt), op_text[op], col);
        return -1;
    }
    if (op >= OP_LT && (lt == CT_QTY || rt == CT_QTY || lt == CT_SEMVER || rt == CT_SEMVER)) {
        perr(p, "operator '%s' is not defined for %s; use compareTo, isLessThan or isGreaterThan (column %d)",
             op_text[op], type_name(lt == CT_QTY || lt == CT_SEMVER ? lt : rt), col);
        return -1;
    }
    if (lt != CT_DYN && rt != CT_DYN && lt != rt) {
        perr(p, "no matching overload for '%s' applied to (%s, %s) (column %d)", op_text[op], type_name(lt),
             type_name(rt), col);
        return -1;
    }
    return 0;
}

static int check_in(parser_t *p, int l, int r, int col)
{
    int lt = ntype(p, l), rt = ntype(p, r);
    if (rt != CT_LIST && !is_map(rt)) {
        perr(p, "'in' needs a list or a map on its right, not %s (column %d)", type_name(rt), col);
        return -1;
    }
    if (is_map(rt) && lt != CT_STR && lt != CT_DYN) {
        perr(p, "a map key must be a string, not %s (column %d)", type_name(lt), col);
        return -1;
    }
    if (lt == CT_LIST || lt == CT_DEVICE || is_map(lt)) {
        perr(p, "'in' of a %s is not supported (column %d)", type_name(lt), col);
        return -1;
    }
    return 0;
}

static int rel_op(const parser_t *p)
{
    for (int k = 0; k < 6; k++)
        if (tok_is(p, op_text[k]))
            return k;
    return tok_ident(p, "in") ? 6 : -1;
}

static int parse_relation(parser_t *p)
{
    int l = parse_arith(p);
    int op;
    while (l >= 0 && (op = rel_op(p)) >= 0) {
        int col = col_of(p, p->tok.start);
        if (lex(p))
            return -1;
        int r = parse_arith(p);
        if (r < 0)
            return -1;
        if (op == 6 ? check_in(p, l, r, col) : check_compare(p, op, l, r, col))
            return -1;
        int nd = node(p, op == 6 ? K_IN : K_CMP, col, l, r, -1);
        if (nd < 0)
            return -1;
        p->nodes[nd].op = (unsigned char)op;
        p->nodes[nd].type = CT_BOOL;
        l = nd;
    }
    return l;
}

/* a && b && c as one node over a chain: a long chain is not deep. */
static int parse_logic(parser_t *p, int and)
{
    const char *op = and? "&&" : "||";
    int first = and? parse_relation(p) : parse_logic(p, 1);
    if (first < 0 || !tok_is(p, op))
        return first;
    int nd = node(p, and? K_AND : K_OR, col_of(p, p->tok.start), first, -1, -1);
    if (nd < 0 || want_bool(p, first, op))
        return -1;
    p->nodes[nd].type = CT_BOOL;
    int last = first;
    while (tok_is(p, op)) {
        if (lex(p))
            return -1;
        int e = and? parse_relation(p) : parse_logic(p, 1);
        if (e < 0 || want_bool(p, e, op) || raise_height(p, nd, e))
            return -1;
        p->nodes[last].next = e;
        last = e;
    }
    return nd;
}

static int parse_expr(parser_t *p)
{
    if (enter(p))
        return -1;
    int c = parse_logic(p, 0);
    if (c >= 0 && tok_is(p, "?")) {
        int col = col_of(p, p->tok.start);
        int a = -1, b = -1;
        if (want_bool(p, c, "the condition of ?:") == 0 && lex(p) == 0 && (a = parse_logic(p, 0)) >= 0 &&
            expect(p, ":") == 0)
            b = parse_expr(p);
        if (b < 0) {
            p->depth--;
            return -1;
        }
        int at = ntype(p, a), bt = ntype(p, b);
        int nd = node(p, K_COND, col, c, a, b);
        if (nd >= 0)
            p->nodes[nd].type = (unsigned char)(at == bt ? at : CT_DYN);
        c = nd;
    }
    p->depth--;
    return c;
}

dra_cel_t *dra_cel_compile(const char *expr, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    parser_t p = { .src = expr, .err = err, .errlen = errlen };
    if (!expr) {
        perr(&p, "no expression");
        return NULL;
    }
    p.len = strlen(expr);
    if (p.len > DRA_CEL_MAX_LEN) {
        perr(&p, "the expression is %zu bytes long, more than %d", p.len, DRA_CEL_MAX_LEN);
        return NULL;
    }
    dra_cel_t *c = calloc(1, sizeof *c);
    p.pool = malloc(p.len + 1);
    p.nodes = malloc(DRA_CEL_MAX_NODES * sizeof *p.nodes);
    if (!c || !p.pool || !p.nodes) {
        perr(&p, "out of memory");
        goto fail;
    }
    int root = lex(&p) ? -1 : parse_expr(&p);
    if (root >= 0 && p.tok.kind != T_EOF)
        unexpected(&p, "the end");
    if (!p.failed && ntype(&p, root) != CT_BOOL && ntype(&p, root) != CT_DYN)
        perr(&p, "the selector returns %s, not bool", type_name(ntype(&p, root)));
    if (p.failed || root < 0) {
        if (!p.failed)
            perr(&p, "syntax error");
        goto fail;
    }
    c->root = root;
    c->nnodes = p.nnodes;
    c->pool = p.pool;
    cel_node_t *shrunk = realloc(p.nodes, (size_t)p.nnodes * sizeof *p.nodes);
    c->nodes = shrunk ? shrunk : p.nodes;
    return c;
fail:
    free(p.pool);
    free(p.nodes);
    free(c);
    return NULL;
}

void dra_cel_free(dra_cel_t *c)
{
    if (!c)
        return;
    free(c->nodes);
    free(c->pool);
    free(c);
}

int dra_cel_nodes(const dra_cel_t *c)
{
    return c ? c->nnodes : 0;
}

/* --- evaluation ---------------------------------------------------------- */

typedef struct {
    const dra_cel_t *c;
    const dra_device_t *d;
    char *err;
    size_t errlen;
    /* cel.bind's variables, and the message of one that is an error */
    cel_val_t vars[DRA_CEL_MAX_BINDS];
    char var_err[DRA_CEL_MAX_BINDS][160];
} ectx_t;

static cel_val_t verr(ectx_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cel_val_t verr(ectx_t *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err, e->errlen, fmt, ap);
    va_end(ap);
    return (cel_val_t){ .t = CT_ERR };
}

static cel_val_t vbool(int b)
{
    return (cel_val_t){ .t = CT_BOOL, .u.b = b != 0 };
}

static cel_val_t vint(int64_t i)
{
    return (cel_val_t){ .t = CT_INT, .u.i = i };
}

static cel_val_t ev(ectx_t *e, int n);

/* Does q start with the n bytes at p? (p may hold a NUL from an escape:
 * then it does not, and q is never read past its end.) */
static int starts(const char *q, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (q[i] == '\0' || q[i] != p[i])
            return 0;
    return 1;
}

/* Does the qualified name "domain/key" match? */
static int qname_is(const char *q, const char *dom, size_t nd, const char *key, size_t nk)
{
    return starts(q, dom, nd) && q[nd] == '/' && starts(q + nd + 1, key, nk) && q[nd + 1 + nk] == '\0';
}

static int qname_in_domain(const char *q, const char *dom, size_t nd)
{
    return starts(q, dom, nd) && q[nd] == '/';
}

static const dra_attr_t *find_attr(const dra_device_t *d, const char *dom, size_t nd, const char *key, size_t nk)
{
    for (int i = 0; i < d->nattrs; i++)
        if (d->attrs[i].name && qname_is(d->attrs[i].name, dom, nd, key, nk))
            return &d->attrs[i];
    return NULL;
}

static const dra_capacity_t *find_cap(const dra_device_t *d, const char *dom, size_t nd, const char *key, size_t nk)
{
    for (int i = 0; i < d->ncaps; i++)
        if (d->caps[i].name && qname_is(d->caps[i].name, dom, nd, key, nk))
            return &d->caps[i];
    return NULL;
}

/* The attribute or capacity name at index i of the map type t. */
static const char *map_name(const dra_device_t *d, int t, int i)
{
    return (t == CT_ATTRS || t == CT_ATTR_DOMAIN) ? d->attrs[i].name : d->caps[i].name;
}

static int map_len(const dra_device_t *d, int t)
{
    return (t == CT_ATTRS || t == CT_ATTR_DOMAIN) ? d->nattrs : d->ncaps;
}

static int domain_len(const char *q)
{
    const char *slash = q ? strchr(q, '/') : NULL;
    return slash ? (int)(slash - q) : -1;
}

/* Is key in map m (a domain of the device, a name of a domain)? */
static int map_has(const dra_device_t *d, const cel_val_t *m, const char *key, size_t nk)
{
    int len = map_len(d, m->t);
    for (int i = 0; i < len; i++) {
        const char *q = map_name(d, m->t, i);
        if (!q)
            continue;
        if (m->t == CT_ATTRS || m->t == CT_CAPS) {
            if (qname_in_domain(q, key, nk) && (size_t)domain_len(q) == nk)
                return 1;
        } else if (qname_is(q, m->u.s.p, m->u.s.n, key, nk)) {
            return 1;
        }
    }
    return 0;
}

/* size() of a map: its names in a domain, or its distinct domains (a
 * device has at most 32 attributes and capacities, so the quadratic scan
 * is bounded). */
static int64_t map_size(const dra_device_t *d, const cel_val_t *m)
{
    int len = map_len(d, m->t), count = 0;
    for (int i = 0; i < len; i++) {
        const char *q = map_name(d, m->t, i);
        int dl = domain_len(q);
        if (dl < 0)
            continue;
        if (m->t == CT_ATTR_DOMAIN || m->t == CT_CAP_DOMAIN) {
            count += (size_t)dl == m->u.s.n && starts(q, m->u.s.p, m->u.s.n);
            continue;
        }
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) {
            const char *o = map_name(d, m->t, j);
            seen = domain_len(o) == dl && strncmp(o, q, (size_t)dl) == 0;
        }
        count += !seen;
    }
    return count;
}

static cel_val_t attr_value(ectx_t *e, const dra_attr_t *a)
{
    cel_val_t v = { 0 };
    switch (a->kind) {
    case DRA_ATTR_STRING:
        v.t = CT_STR;
        v.u.s.p = a->s ? a->s : "";
        v.u.s.n = strlen(v.u.s.p);
        return v;
    case DRA_ATTR_INT: return vint(a->i);
    case DRA_ATTR_BOOL: return vbool(a->b);
    case DRA_ATTR_VERSION:
        v.t = CT_SEMVER;
        if (!a->s || semver_parse(a->s, strlen(a->s), &v.u.v))
            return verr(e, "attribute %s: \"%s\" is not a semantic version", a->name, a->s ? a->s : "");
        return v;
    }
    return verr(e, "attribute %s: unknown kind", a->name);
}

/* The key of a K_KEY node: its literal name or its key expression. */
static cel_val_t key_of(ectx_t *e, const cel_node_t *nd)
{
    if (nd->b < 0)
        return (cel_val_t){ .t = CT_STR, .u.s = { nd->s, nd->n } };
    cel_val_t k = ev(e, nd->b);
    if (k.t != CT_STR && k.t != CT_ERR)
        return verr(e, "no such overload: map index by %s", type_name(k.t));
    return k;
}

static cel_val_t ev_key(ectx_t *e, const cel_node_t *nd)
{
    cel_val_t m = ev(e, nd->a);
    if (m.t == CT_ERR)
        return m;
    cel_val_t k = key_of(e, nd);
    if (k.t == CT_ERR)
        return k;
    if (m.t == CT_ATTRS || m.t == CT_CAPS) /* a domain the device lacks is an empty map */
        return (cel_val_t){ .t = m.t == CT_ATTRS ? CT_ATTR_DOMAIN : CT_CAP_DOMAIN, .u.s = k.u.s };
    if (m.t == CT_ATTR_DOMAIN) {
        const dra_attr_t *a = find_attr(e->d, m.u.s.p, m.u.s.n, k.u.s.p, k.u.s.n);
        if (!a)
            return verr(e, "no such key: %.*s/%.*s", (int)m.u.s.n, m.u.s.p, (int)k.u.s.n, k.u.s.p);
        return attr_value(e, a);
    }
    const dra_capacity_t *cap = find_cap(e->d, m.u.s.p, m.u.s.n, k.u.s.p, k.u.s.n);
    if (!cap)
        return verr(e, "no such key: %.*s/%.*s", (int)m.u.s.n, m.u.s.p, (int)k.u.s.n, k.u.s.p);
    return (cel_val_t){ .t = CT_QTY, .u.i = cap->milli };
}

static cel_val_t ev_has(ectx_t *e, const cel_node_t *nd)
{
    const cel_node_t *sel = &e->c->nodes[nd->a];
    if (sel->kind == K_FIELD) { /* a device always has its fields */
        cel_val_t dev = ev(e, sel->a);
        return dev.t == CT_ERR ? dev : vbool(1);
    }
    cel_val_t m = ev(e, sel->a);
    if (m.t == CT_ERR)
        return m;
    /* kube's device.attributes and device.capacity find every domain
     * (an unknown one as an empty map), and has() asks them to find it */
    if (m.t == CT_ATTRS || m.t == CT_CAPS)
        return vbool(1);
    return vbool(map_has(e->d, &m, sel->s, sel->n));
}

/* CEL equality: values of different types are not equal. */
static int val_eq(const cel_val_t *a, const cel_val_t *b)
{
    if (a->t != b->t)
        return 0;
    switch (a->t) {
    case CT_BOOL: return a->u.b == b->u.b;
    case CT_INT:
    case CT_QTY: return a->u.i == b->u.i;
    case CT_STR: return a->u.s.n == b->u.s.n && memcmp(a->u.s.p, b->u.s.p, a->u.s.n) == 0;
    case CT_SEMVER: return semver_cmp(&a->u.v, &b->u.v) == 0;
    default: return 0;
    }
}

static int str_cmp(const cel_val_t *a, const cel_val_t *b)
{
    size_t n = a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n;
    int c = memcmp(a->u.s.p, b->u.s.p, n);
    if (c)
        return c < 0 ? -1 : 1;
    return cmp_i64((int64_t)a->u.s.n, (int64_t)b->u.s.n);
}

static cel_val_t ev_cmp(ectx_t *e, const cel_node_t *nd)
{
    cel_val_t l = ev(e, nd->a);
    if (l.t == CT_ERR)
        return l;
    cel_val_t r = ev(e, nd->b);
    if (r.t == CT_ERR)
        return r;
    if (nd->op == OP_EQ || nd->op == OP_NE)
        return vbool(val_eq(&l, &r) == (nd->op == OP_EQ));
    if (l.t != r.t || (l.t != CT_INT && l.t != CT_STR && l.t != CT_BOOL))
        return verr(e, "no such overload: %s %s %s", type_name(l.t), op_text[nd->op], type_name(r.t));
    int c = l.t == CT_STR ? str_cmp(&l, &r) : l.t == CT_INT ? cmp_i64(l.u.i, r.u.i) : cmp_i64(l.u.b, r.u.b);
    switch (nd->op) {
    case OP_LT: return vbool(c < 0);
    case OP_LE: return vbool(c <= 0);
    case OP_GT: return vbool(c > 0);
    default: return vbool(c >= 0);
    }
}

static cel_val_t ev_in(ectx_t *e, const cel_node_t *nd)
{
    cel_val_t x = ev(e, nd->a);
    if (x.t == CT_ERR)
        return x;
    cel_val_t in = ev(e, nd->b);
    if (in.t == CT_ERR)
        return in;
    if (in.t == CT_LIST) { /* the list is evaluated whole, as CEL does */
        int found = 0;
        for (int k = e->c->nodes[in.u.node].a; k >= 0; k = e->c->nodes[k].next) {
            cel_val_t el = ev(e, k);
            if (el.t == CT_ERR)
                return el;
            found |= val_eq(&x, &el);
        }
        return vbool(found);
    }
    if (x.t != CT_STR)
        return vbool(0);
    return vbool(map_has(e->d, &in, x.u.s.p, x.u.s.n));
}

/* && and ||: the first operand that decides wins, even over an error
 * before it; otherwise the first error, else the other value. After the
 * first error the message buffer is frozen (errlen 0) until this node
 * returns, so the message reported is that error's. */
static cel_val_t ev_logic(ectx_t *e, const cel_node_t *nd, int and)
{
    size_t saved = e->errlen;
    cel_val_t out = vbool(and);
    int have_err = 0;
    for (int k = nd->a; k >= 0; k = e->c->nodes[k].next) {
        cel_val_t v = ev(e, k);
        if (v.t == CT_BOOL) {
            if (v.u.b != and) {
                out = v;
                have_err = 0;
                break;
            }
            continue;
        }
        if (v.t != CT_ERR)
            v = verr(e, "no such overload: %s %s", and? "&&" : "||", type_name(v.t));
        if (!have_err) {
            out = v;
            have_err = 1;
            e->errlen = 0;
        }
    }
    e->errlen = saved;
    return out;
}

static cel_val_t ev_string_method(ectx_t *e, int fn, const cel_val_t *s, const cel_val_t *a)
{
    if (a->t != CT_STR)
        return verr(e, "no such overload: string.%s(%s)", fns[fn].name, type_name(a->t));
    size_t n = s->u.s.n, m = a->u.s.n;
    if (fn == M_STARTS)
        return vbool(m <= n && memcmp(s->u.s.p, a->u.s.p, m) == 0);
    if (fn == M_ENDS)
        return vbool(m <= n && memcmp(s->u.s.p + n - m, a->u.s.p, m) == 0);
    if (m == 0)
        return vbool(1);
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(s->u.s.p + i, a->u.s.p, m) == 0)
            return vbool(1);
    return vbool(0);
}

static cel_val_t ev_size(ectx_t *e, const cel_val_t *v)
{
    if (v->t == CT_STR) { /* CEL counts code points */
        int64_t count = 0;
        for (size_t i = 0; i < v->u.s.n; i++)
            count += ((unsigned char)v->u.s.p[i] & 0xC0) != 0x80;
        return vint(count);
    }
    if (v->t == CT_LIST) {
        int64_t count = 0;
        for (int k = e->c->nodes[v->u.node].a; k >= 0; k = e->c->nodes[k].next)
            count++;
        return vint(count);
    }
    if (is_map(v->t))
        return vint(map_size(e->d, v));
    return verr(e, "no such overload: size(%s)", type_name(v->t));
}

/* quantity(s), semver(s) and the is* checks of a string known at run time. */
static cel_val_t ev_parse_fn(ectx_t *e, int fn, const cel_val_t *s)
{
    if (s->t != CT_STR)
        return verr(e, "no such overload: %s(%s)", fns[fn].name, type_name(s->t));
    if (fn == FN_SEMVER || fn == FN_IS_SEMVER) {
        cel_val_t v = { .t = CT_SEMVER };
        int ok = semver_parse(s->u.s.p, s->u.s.n, &v.u.v) == 0;
        if (fn == FN_IS_SEMVER)
            return vbool(ok);
        return ok ? v : verr(e, "invalid semver \"%.*s\"", (int)s->u.s.n, s->u.s.p);
    }
    char buf[64], qerr[96] = "";
    int64_t milli = 0;
    int ok = s->u.s.n < sizeof buf;
    if (ok) {
        memcpy(buf, s->u.s.p, s->u.s.n);
        buf[s->u.s.n] = '\0';
        ok = strlen(buf) == s->u.s.n && quantity_parse(buf, 3, &milli, qerr, sizeof qerr) == 0;
    }
    if (fn == FN_IS_QUANTITY)
        return vbool(ok);
    if (!ok)
        return verr(e, "invalid quantity \"%.*s\"%s%s", (int)(s->u.s.n > 64 ? 64 : s->u.s.n), s->u.s.p,
                    qerr[0] ? ": " : "", qerr);
    return (cel_val_t){ .t = CT_QTY, .u.i = milli };
}

static cel_val_t ev_ordered_method(ectx_t *e, int fn, const cel_val_t *r, const cel_val_t *a)
{
    if (a->t != r->t)
        return verr(e, "no such overload: %s.%s(%s)", type_name(r->t), fns[fn].name, type_name(a->t));
    int c = r->t == CT_QTY ? cmp_i64(r->u.i, a->u.i) : semver_cmp(&r->u.v, &a->u.v);
    if (fn == M_COMPARE)
        return vint(c);
    return vbool(fn == M_GT ? c > 0 : c < 0);
}

static cel_val_t ev_call(ectx_t *e, const cel_node_t *nd)
{
    int fn = nd->op;
    cel_val_t r = { .t = CT_DYN }, a = { .t = CT_DYN };
    if (nd->a >= 0 && (r = ev(e, nd->a)).t == CT_ERR)
        return r;
    if (nd->b >= 0 && (a = ev(e, nd->b)).t == CT_ERR)
        return a;
    if (!fns[fn].method)
        return fn == FN_SIZE ? ev_size(e, &a) : ev_parse_fn(e, fn, &a);
    if (!(fns[fn].recv & (1u << r.t)))
        return verr(e, "no such overload: %s.%s()", type_name(r.t), fns[fn].name);
    switch (fn) {
    case M_COMPARE:
    case M_GT:
    case M_LT: return ev_ordered_method(e, fn, &r, &a);
    case M_MAJOR: return vint(r.u.v.maj);
    case M_MINOR: return vint(r.u.v.min);
    case M_PATCH: return vint(r.u.v.pat);
    case M_SIGN: return vint(cmp_i64(r.u.i, 0));
    case M_IS_INTEGER: return vbool(r.u.i % 1000 == 0);
    case M_AS_INTEGER:
        if (r.u.i % 1000)
            return verr(e, "cannot convert value to integer: the quantity has a fraction");
        return vint(r.u.i / 1000);
    case M_SIZE: return ev_size(e, &r);
    default: return ev_string_method(e, fn, &r, &a);
    }
}

static cel_val_t ev(ectx_t *e, int n)
{
    const cel_node_t *nd = &e->c->nodes[n];
    switch ((cel_kind_t)nd->kind) {
    case K_BOOL: return vbool((int)nd->i);
    case K_INT: return vint(nd->i);
    case K_STR: return (cel_val_t){ .t = CT_STR, .u.s = { nd->s, nd->n } };
    case K_QTY: return (cel_val_t){ .t = CT_QTY, .u.i = nd->i };
    case K_SEMVER: return (cel_val_t){ .t = CT_SEMVER, .u.v = nd->v };
    case K_LIST: return (cel_val_t){ .t = CT_LIST, .u.node = n };
    case K_DEVICE: return (cel_val_t){ .t = CT_DEVICE };
    case K_FIELD:
        switch (nd->op) {
        case F_DRIVER: {
            const char *s = e->d->driver ? e->d->driver : "";
            return (cel_val_t){ .t = CT_STR, .u.s = { s, strlen(s) } };
        }
        case F_ATTRS: return (cel_val_t){ .t = CT_ATTRS };
        case F_CAPS: return (cel_val_t){ .t = CT_CAPS };
        default: return vbool(e->d->multi);
        }
    case K_KEY: return ev_key(e, nd);
    case K_HAS: return ev_has(e, nd);
    case K_CALL: return ev_call(e, nd);
    case K_NOT: {
        cel_val_t v = ev(e, nd->a);
        if (v.t == CT_ERR)
            return v;
        return v.t == CT_BOOL ? vbool(!v.u.b) : verr(e, "no such overload: !%s", type_name(v.t));
    }
    case K_NEG: {
        cel_val_t v = ev(e, nd->a);
        if (v.t == CT_ERR)
            return v;
        if (v.t != CT_INT)
            return verr(e, "no such overload: -%s", type_name(v.t));
        return v.u.i == INT64_MIN ? verr(e, "integer overflow: -(%lld)", (long long)v.u.i) : vint(-v.u.i);
    }
    case K_CMP: return ev_cmp(e, nd);
    case K_IN: return ev_in(e, nd);
    case K_AND: return ev_logic(e, nd, 1);
    case K_OR: return ev_logic(e, nd, 0);
    case K_BIND: { /* the value is computed once, before the body, as CEL's bind does */
        int slot = (int)nd->i;
        e->vars[slot] = ev(e, nd->a);
        if (e->vars[slot].t == CT_ERR)
            snprintf(e->var_err[slot], sizeof e->var_err[slot], "%s", e->errlen ? e->err : "");
        return ev(e, nd->b);
    }
    case K_VAR: {
        int slot = (int)nd->i;
        if (e->vars[slot].t == CT_ERR && e->errlen)
            snprintf(e->err, e->errlen, "%s", e->var_err[slot]);
        return e->vars[slot];
    }
    case K_COND: {
        cel_val_t v = ev(e, nd->a);
        if (v.t == CT_ERR)
            return v;
        if (v.t != CT_BOOL)
            return verr(e, "no such overload: %s ? _ : _", type_name(v.t));
        return ev(e, v.u.b ? nd->b : nd->c);
    }
    }
    return verr(e, "internal error: node kind %d", nd->kind);
}

/* Evaluations since the start (dra_cel_evals): relaxed, one add per call,
 * so the count is cheap enough to keep on in production. */
static uint64_t cel_evals;

uint64_t dra_cel_evals(void)
{
    return __atomic_load_n(&cel_evals, __ATOMIC_RELAXED);
}

int dra_cel_eval(const dra_cel_t *c, const dra_device_t *dev, char *err, size_t errlen)
{
    __atomic_add_fetch(&cel_evals, 1, __ATOMIC_RELAXED);
    char scratch[1];
    ectx_t e; /* not zeroed: vars are written by their cel.bind before any read */
    e.c = c;
    e.d = dev;
    e.err = err && errlen ? err : scratch;
    e.errlen = err && errlen ? errlen : 1;
    e.err[0] = '\0';
    if (!c || !dev) {
        verr(&e, "no selector or no device");
        return -1;
    }
    cel_val_t v = ev(&e, c->root);
    if (v.t == CT_ERR)
        return -1;
    if (v.t != CT_BOOL) {
        verr(&e, "selector did not return a bool (it returned %s)", type_name(v.t));
        return -1;
    }
    return v.u.b;
}
