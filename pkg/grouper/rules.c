/* rules.c -- the workload table: default and loaded rows, minMember expressions, verdicts, names. */
#include "grouper/rules.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "fairshare/fairshare.h"
#include "util/util.h"

#define WL_API_VERSION "ai-scheduler.aibee.cn/v1alpha1"
#define WL_DOC_KIND    "WorkloadGroups"
#define WL_MAX_ROWS    256 /* rows in a file */
#define WL_MAX_LIST    16  /* entries of minMember, when, queue, priorityClass, members */
#define WL_MAX_TEXT    512 /* an expression, condition or path */
#define WL_MAX_NEST    32  /* parentheses and sum() inside each other */
#define WL_FILE_MAX    (1 << 20)
#define WL_YAML_NODES  100000 /* nodes converted (aliases count each time they are expanded) */
#define WL_YAML_DEPTH  64
#define WL_NAME_MAX    63
#define WL_HASHED_BASE (WL_NAME_MAX - 9) /* "-" and 8 hex digits follow */

/* ------------------------------------------------------------ expressions */

typedef enum { X_INT, X_PATH, X_SUM, X_ADD, X_MUL } xkind_t;

typedef struct xnode {
    xkind_t k;
    int64_t v; /* X_INT; X_PATH: the default */
    int has_def;
    char *path;          /* X_PATH, X_SUM */
    struct xnode *a, *b; /* X_ADD, X_MUL; X_SUM: b evaluated per element, or NULL */
} xnode_t;

typedef struct xparse {
    const char *s, *p;
    int depth;
    char *err;
    size_t errlen;
} xparse_t;

static void xfree(xnode_t *n)
{
    if (!n)
        return;
    xfree(n->a);
    xfree(n->b);
    free(n->path);
    free(n);
}

static xnode_t *xnew(xkind_t k)
{
    xnode_t *n = util_xcalloc(1, sizeof *n);
    n->k = k;
    return n;
}

static int xfail(xparse_t *x, const char *what)
{
    return util_errf(x->err, x->errlen, "syntax error at column %d: %s", (int)(x->p - x->s) + 1, what);
}

static int is_segch(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
}

static void skip_ws(xparse_t *x)
{
    while (*x->p == ' ' || *x->p == '\t')
        x->p++;
}

/* seg ('.' seg)*, seg := [A-Za-z0-9_-]+ | '*'. */
static int parse_path(xparse_t *x, int allow_star, char **out)
{
    const char *start = x->p;
    for (;;) {
        if (*x->p == '*') {
            if (!allow_star)
                return xfail(x, "'*' is only allowed in sum()'s path");
            x->p++;
        } else if (is_segch(*x->p)) {
            while (is_segch(*x->p))
                x->p++;
        } else {
            return xfail(x, "expected a path");
        }
        if (x->p[0] != '.')
            break;
        x->p++;
    }
    *out = util_strndup(start, (size_t)(x->p - start));
    return 0;
}

static int parse_int(xparse_t *x, int64_t *out)
{
    if (!isdigit((unsigned char)*x->p))
        return xfail(x, "expected an integer");
    int64_t v = 0;
    const char *start = x->p;
    while (isdigit((unsigned char)*x->p)) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *x->p - '0', &v)) {
            x->p = start;
            return xfail(x, "integer too large");
        }
        x->p++;
    }
    *out = v;
    return 0;
}

static int parse_expr(xparse_t *x, xnode_t **out);

/* sum(path [, expr]); x->p is past "sum". */
static int parse_sum(xparse_t *x, xnode_t **out)
{
    skip_ws(x);
    x->p++; /* '(' */
    skip_ws(x);
    xnode_t *n = xnew(X_SUM);
    if (parse_path(x, 1, &n->path) < 0)
        goto fail;
    skip_ws(x);
    if (*x->p == ',') {
        x->p++;
        if (parse_expr(x, &n->b) < 0)
            goto fail;
        skip_ws(x);
    }
    if (*x->p != ')') {
        xfail(x, "expected ')' closing sum(");
        goto fail;
    }
    x->p++;
    *out = n;
    return 0;
fail:
    xfree(n);
    return -1;
}

/* A path factor with its optional '|' default. */
static int parse_path_factor(xparse_t *x, xnode_t **out)
{
    xnode_t *n = xnew(X_PATH);
    if (parse_path(x, 0, &n->path) < 0) {
        xfree(n);
        return -1;
    }
    const char *save = x->p;
    skip_ws(x);
    if (*x->p == '|') {
        x->p++;
        skip_ws(x);
        if (parse_int(x, &n->v) < 0) {
            xfree(n);
            return -1;
        }
        n->has_def = 1;
    } else {
        x->p = save;
    }
    *out = n;
    return 0;
}

/* "sum" followed (after blanks) by '(' is the function; else a path. */
static int at_sum(const char *p)
{
    if (strncmp(p, "sum", 3) != 0 || is_segch(p[3]) || p[3] == '.')
        return 0;
    p += 3;
    while (*p == ' ' || *p == '\t')
        p++;
    return *p == '(';
}

/* An integer is a run of digits that is not the start of a path. */
static int at_int(const char *p)
{
    const char *q = p;
    while (isdigit((unsigned char)*q))
        q++;
    return q > p && !is_segch(*q) && *q != '.';
}

static int parse_factor(xparse_t *x, xnode_t **out)
{
    skip_ws(x);
    if (x->depth >= WL_MAX_NEST)
        return xfail(x, "nested too deep");
    int rc;
    x->depth++;
    if (*x->p == '(') {
        x->p++;
        rc = parse_expr(x, out);
        skip_ws(x);
        if (rc == 0 && *x->p != ')') {
            xfree(*out);
            *out = NULL;
            rc = xfail(x, "expected ')'");
        } else if (rc == 0) {
            x->p++;
        }
    } else if (at_sum(x->p)) {
        x->p += 3;
        rc = parse_sum(x, out);
    } else if (at_int(x->p)) {
        xnode_t *n = xnew(X_INT);
        if ((rc = parse_int(x, &n->v)) < 0)
            xfree(n);
        else
            *out = n;
    } else {
        rc = parse_path_factor(x, out);
    }
    x->depth--;
    return rc;
}

/* One level of a left-associative binary chain: term := factor ('*' factor)*, expr := term ('+' term)*. */
static int parse_chain(xparse_t *x, xnode_t **out, char op)
{
    xnode_t *l = NULL;
    int rc = op == '+' ? parse_chain(x, &l, '*') : parse_factor(x, &l);
    while (rc == 0) {
        skip_ws(x);
        if (*x->p != op)
            break;
        x->p++;
        xnode_t *r = NULL;
        rc = op == '+' ? parse_chain(x, &r, '*') : parse_factor(x, &r);
        if (rc == 0) {
            xnode_t *n = xnew(op == '+' ? X_ADD : X_MUL);
            n->a = l;
            n->b = r;
            l = n;
        }
    }
    if (rc < 0) {
        xfree(l);
        return -1;
    }
    *out = l;
    return 0;
}

static int parse_expr(xparse_t *x, xnode_t **out)
{
    return parse_chain(x, out, '+');
}

static xnode_t *expr_parse(const char *s, char *err, size_t errlen)
{
    if (strlen(s) > WL_MAX_TEXT) {
        util_errf(err, errlen, "longer than %d characters", WL_MAX_TEXT);
        return NULL;
    }
    xparse_t x = { s, s, 0, err, errlen };
    xnode_t *n = NULL;
    if (parse_expr(&x, &n) < 0)
        return NULL;
    skip_ws(&x);
    if (*x.p) {
        xfail(&x, "unexpected character");
        xfree(n);
        return NULL;
    }
    return n;
}

/* The child of cur named by the n bytes at seg: an object's key, an array's index. */
static json_t *seg_child(json_t *cur, const char *seg, size_t n)
{
    if (json_is_object(cur))
        return json_object_getn(cur, seg, n);
    if (!json_is_array(cur) || n > 9)
        return NULL;
    size_t i = 0;
    for (size_t k = 0; k < n; k++) {
        if (!isdigit((unsigned char)seg[k]))
            return NULL;
        i = i * 10 + (size_t)(seg[k] - '0');
    }
    return json_array_get(cur, i);
}

typedef int (*match_fn)(json_t *v, void *ctx);

/* Calls fn on every value at path p under cur ('*' fans out); stops at fn's first -1. */
static int path_walk(json_t *cur, const char *p, match_fn fn, void *ctx)
{
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (n == 1 && p[0] == '*') {
        size_t i;
        const char *k;
        json_t *v;
        if (json_is_array(cur)) {
            json_array_foreach (cur, i, v)
                if ((dot ? path_walk(v, dot + 1, fn, ctx) : fn(v, ctx)) < 0)
                    return -1;
        } else if (json_is_object(cur)) {
            json_object_foreach (cur, k, v)
                if ((dot ? path_walk(v, dot + 1, fn, ctx) : fn(v, ctx)) < 0)
                    return -1;
        }
        return 0;
    }
    json_t *child = seg_child(cur, p, n);
    if (!child)
        return 0;
    return dot ? path_walk(child, dot + 1, fn, ctx) : fn(child, ctx);
}

static int take_one(json_t *v, void *ctx)
{
    *(json_t **)ctx = v;
    return 0;
}

/* The value at a path without '*', or NULL (a JSON null counts as missing). */
static json_t *path_get(json_t *obj, const char *path)
{
    json_t *v = NULL;
    path_walk(obj, path, take_one, &v);
    return json_is_null(v) ? NULL : v;
}

static int xeval(const xnode_t *n, json_t *obj, int64_t *out, char *err, size_t errlen);

typedef struct sum_ctx {
    const xnode_t *n;
    int64_t total;
    int found;
    char *err;
    size_t errlen;
} sum_ctx_t;

static int sum_add(sum_ctx_t *c, int64_t v)
{
    if (__builtin_add_overflow(c->total, v, &c->total))
        return util_errf(c->err, c->errlen, "sum(%s): overflow", c->n->path);
    return 0;
}

/* One element of a list or map the sum's path found: an integer, or the per-element expression on it. */
static int sum_elem(sum_ctx_t *c, json_t *e)
{
    int64_t x;
    if (c->n->b)
        return xeval(c->n->b, e, &x, c->err, c->errlen) < 0 ? -1 : sum_add(c, x);
    if (json_is_null(e))
        return 0;
    if (!json_is_integer(e))
        return util_errf(c->err, c->errlen, "sum(%s): a value is not an integer", c->n->path);
    return sum_add(c, json_integer_value(e));
}

/* A value at the sum's path: sum(path) adds it (an integer) or its elements; sum(path, expr) evaluates expr on each element. */
static int sum_one(json_t *v, void *ctx)
{
    sum_ctx_t *c = ctx;
    if (json_is_null(v))
        return 0;
    c->found++;
    if (!c->n->b && json_is_integer(v))
        return sum_add(c, json_integer_value(v));
    if (!c->n->b && !json_is_array(v) && !json_is_object(v))
        return util_errf(c->err, c->errlen, "sum(%s): a value is not an integer", c->n->path);
    if (!json_is_array(v) && !json_is_object(v))
        return util_errf(c->err, c->errlen, "sum(%s, ...): %s is not a list or map", c->n->path, c->n->path);
    size_t i;
    const char *k;
    json_t *e;
    if (json_is_array(v)) {
        json_array_foreach (v, i, e)
            if (sum_elem(c, e) < 0)
                return -1;
    } else {
        json_object_foreach (v, k, e)
            if (sum_elem(c, e) < 0)
                return -1;
    }
    return 0;
}

static int xeval(const xnode_t *n, json_t *obj, int64_t *out, char *err, size_t errlen)
{
    int64_t a, b;
    switch (n->k) {
    case X_INT: *out = n->v; return 0;
    case X_PATH: {
        json_t *v = path_get(obj, n->path);
        if (!v && n->has_def) {
            *out = n->v;
            return 0;
        }
        if (!v)
            return util_errf(err, errlen, "%s missing", n->path);
        if (!json_is_integer(v))
            return util_errf(err, errlen, "%s is not an integer", n->path);
        *out = json_integer_value(v);
        return 0;
    }
    case X_SUM: {
        sum_ctx_t c = { n, 0, 0, err, errlen };
        if (path_walk(obj, n->path, sum_one, &c) < 0)
            return -1;
        if (!c.found)
            return util_errf(err, errlen, "%s missing", n->path);
        *out = c.total;
        return 0;
    }
    case X_ADD:
    case X_MUL:
        if (xeval(n->a, obj, &a, err, errlen) < 0 || xeval(n->b, obj, &b, err, errlen) < 0)
            return -1;
        if (n->k == X_ADD ? __builtin_add_overflow(a, b, out) : __builtin_mul_overflow(a, b, out))
            return util_errf(err, errlen, "overflow");
        return 0;
    }
    return util_errf(err, errlen, "bad expression");
}

int wl_expr_eval(const char *expr, json_t *obj, int64_t *out, char *err, size_t errlen)
{
    if (!expr)
        return util_errf(err, errlen, "no expression");
    xnode_t *n = expr_parse(expr, err, errlen);
    if (!n)
        return -1;
    int rc = xeval(n, obj, out, err, errlen);
    xfree(n);
    return rc;
}

/* A plain path (queue, priorityClass, a when operand): no '*', no default. */
static int path_check(const char *s, char *err, size_t errlen)
{
    if (strlen(s) > WL_MAX_TEXT)
        return util_errf(err, errlen, "longer than %d characters", WL_MAX_TEXT);
    xparse_t x = { s, s, 0, err, errlen };
    char *p = NULL;
    if (parse_path(&x, 0, &p) < 0)
        return -1;
    free(p);
    if (*x.p)
        return xfail(&x, "unexpected character after the path");
    return 0;
}

/* ------------------------------------------------------------ conditions */

typedef struct wl_operand {
    char *path; /* or */
    json_t *lit;
} wl_operand_t;

typedef struct wl_cond {
    char *text;
    wl_operand_t l, r;
    int ne;
} wl_cond_t;

/* "…" with \" and \\ escapes. */
static int parse_strlit(xparse_t *x, json_t **out)
{
    sbuf_t b = { 0 };
    sbuf_puts(&b, "");
    for (x->p++; *x->p && *x->p != '"'; x->p++) {
        if (*x->p == '\\' && (x->p[1] == '"' || x->p[1] == '\\'))
            x->p++;
        sbuf_append(&b, x->p, 1);
    }
    if (*x->p != '"') {
        sbuf_free(&b);
        return xfail(x, "unterminated string");
    }
    x->p++;
    *out = json_string(b.data);
    sbuf_free(&b);
    return *out ? 0 : xfail(x, "string is not UTF-8");
}

static int at_word(const char *p, const char *w)
{
    size_t n = strlen(w);
    return strncmp(p, w, n) == 0 && !is_segch(p[n]) && p[n] != '.';
}

/* "string", an integer (may be negative), true, false, or a path. */
static int parse_operand(xparse_t *x, wl_operand_t *o)
{
    skip_ws(x);
    if (*x->p == '"')
        return parse_strlit(x, &o->lit);
    if (at_word(x->p, "true") || at_word(x->p, "false")) {
        o->lit = json_boolean(*x->p == 't');
        x->p += *x->p == 't' ? 4 : 5;
        return 0;
    }
    int neg = *x->p == '-' && isdigit((unsigned char)x->p[1]);
    if (at_int(x->p + neg)) {
        x->p += neg;
        int64_t v;
        if (parse_int(x, &v) < 0)
            return -1;
        o->lit = json_integer(neg ? -v : v);
        return 0;
    }
    return parse_path(x, 0, &o->path);
}

static void cond_clear(wl_cond_t *c)
{
    free(c->text);
    free(c->l.path);
    free(c->r.path);
    json_decref(c->l.lit);
    json_decref(c->r.lit);
    memset(c, 0, sizeof *c);
}

static int cond_parse(const char *s, wl_cond_t *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (strlen(s) > WL_MAX_TEXT)
        return util_errf(err, errlen, "longer than %d characters", WL_MAX_TEXT);
    xparse_t x = { s, s, 0, err, errlen };
    int rc = parse_operand(&x, &c->l);
    if (rc == 0) {
        skip_ws(&x);
        if ((x.p[0] == '=' || x.p[0] == '!') && x.p[1] == '=') {
            c->ne = x.p[0] == '!';
            x.p += 2;
            rc = parse_operand(&x, &c->r);
        } else {
            rc = xfail(&x, "expected == or !=");
        }
    }
    if (rc == 0) {
        skip_ws(&x);
        if (*x.p)
            rc = xfail(&x, "unexpected character");
        else if (!c->l.path && !c->r.path)
            rc = util_errf(err, errlen, "compares two constants");
    }
    if (rc < 0) {
        cond_clear(c);
        return -1;
    }
    c->text = util_strdup(s);
    return 0;
}

/* How an operand reads in a why: a path's last segment, a string unquoted. */
static void operand_say(sbuf_t *b, const wl_operand_t *o)
{
    if (o->path) {
        const char *dot = strrchr(o->path, '.');
        sbuf_puts(b, dot ? dot + 1 : o->path);
    } else if (json_is_string(o->lit)) {
        sbuf_puts(b, json_string_value(o->lit));
    } else {
        char *s = json_dumps(o->lit, JSON_ENCODE_ANY);
        sbuf_puts(b, s ? s : "?");
        free(s);
    }
}

/* 1 when c holds on owner; else 0 and *why. */
static int cond_holds(const wl_cond_t *c, json_t *owner, char **why)
{
    json_t *l = c->l.path ? path_get(owner, c->l.path) : c->l.lit;
    json_t *r = c->r.path ? path_get(owner, c->r.path) : c->r.lit;
    if (l && r && (json_equal(l, r) ? !c->ne : c->ne))
        return 1;
    sbuf_t b = { 0 };
    if ((!l || !r) && c->ne) {
        sbuf_printf(&b, "%s is not set", !l ? c->l.path : c->r.path);
    } else if (c->ne) {
        operand_say(&b, &c->l);
        sbuf_puts(&b, " is ");
        operand_say(&b, &c->r);
    } else {
        operand_say(&b, &c->l);
        sbuf_puts(&b, " is not ");
        operand_say(&b, &c->r);
        if (!l || !r) {
            sbuf_printf(&b, " (%s is not set)", !l ? c->l.path : c->r.path);
        } else if (c->l.path && c->r.path) {
            char *ls = json_dumps(l, JSON_ENCODE_ANY | JSON_COMPACT);
            char *rs = json_dumps(r, JSON_ENCODE_ANY | JSON_COMPACT);
            sbuf_printf(&b, " (%.64s vs %.64s)", ls ? ls : "?", rs ? rs : "?");
            free(ls);
            free(rs);
        }
    }
    *why = b.data;
    return 0;
}

/* ------------------------------------------------------------ rows */

typedef struct wl_expr {
    char *text;
    xnode_t *ast;
} wl_expr_t;

struct wl_row {
    char *group, *kind, *resource, *group_by;
    wl_expr_t *mins;
    int nmins;
    wl_cond_t *whens;
    int nwhens;
    char **queues, **prios;
    int nqueues, nprios;
    label_t *members;
    int nmembers;
};

struct wl_table {
    wl_row_t **rows;
    int n;
};

static void strv_free(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void row_free(wl_row_t *r)
{
    if (!r)
        return;
    free(r->group);
    free(r->kind);
    free(r->resource);
    free(r->group_by);
    for (int i = 0; i < r->nmins; i++) {
        free(r->mins[i].text);
        xfree(r->mins[i].ast);
    }
    free(r->mins);
    for (int i = 0; i < r->nwhens; i++)
        cond_clear(&r->whens[i]);
    free(r->whens);
    strv_free(r->queues, r->nqueues);
    strv_free(r->prios, r->nprios);
    for (int i = 0; i < r->nmembers; i++) {
        free(r->members[i].key);
        free(r->members[i].value);
    }
    free(r->members);
    free(r);
}

/* Where a row's error is: "kinds[I].KEY" or "kinds[I].KEY[J]". */
typedef struct rowctx {
    int idx;
    char *err;
    size_t errlen;
} rowctx_t;

static int rfail(rowctx_t *c, const char *key, int j, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int rfail(rowctx_t *c, const char *key, int j, const char *fmt, ...)
{
    char at[96], msg[512];
    if (j >= 0)
        snprintf(at, sizeof at, "kinds[%d].%s[%d]", c->idx, key, j);
    else if (key)
        snprintf(at, sizeof at, "kinds[%d].%s", c->idx, key);
    else
        snprintf(at, sizeof at, "kinds[%d]", c->idx);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return util_errf(c->err, c->errlen, "%s: %s", at, msg);
}

static int all_chars(const char *s, const char *extra, int upper_ok)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (!(isdigit(ch) || islower(ch) || (upper_ok && isupper(ch)) || strchr(extra, ch)))
            return 0;
    }
    return 1;
}

static int ends_alnum(const char *s)
{
    size_t n = strlen(s);
    return n && isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

static int valid_group(const char *s)
{
    return !*s || (strlen(s) <= 253 && all_chars(s, "-.", 0) && ends_alnum(s));
}

static int valid_kind(const char *s)
{
    return *s && strlen(s) <= WL_NAME_MAX && isalpha((unsigned char)s[0]) && all_chars(s, "", 1);
}

static int valid_resource(const char *s)
{
    return strlen(s) <= WL_NAME_MAX && all_chars(s, "-", 0) && ends_alnum(s);
}

static int valid_label_key(const char *s)
{
    return *s && strlen(s) <= 317 && all_chars(s, "-._/", 1) && ends_alnum(s);
}

static int get_str(rowctx_t *c, const char *key, json_t *v, char **out)
{
    if (!json_is_string(v))
        return rfail(c, key, -1, "not a string");
    if (strlen(json_string_value(v)) > WL_MAX_TEXT)
        return rfail(c, key, -1, "too long");
    free(*out);
    *out = util_strdup(json_string_value(v));
    return 0;
}

/* A list of strings (minMember also takes integers) into strv. */
static int get_list(rowctx_t *c, const char *key, json_t *v, int ints_ok, char ***out, int *n)
{
    if (!json_is_array(v))
        return rfail(c, key, -1, "not a list");
    if (json_array_size(v) > WL_MAX_LIST)
        return rfail(c, key, -1, "more than 16 entries");
    size_t i;
    json_t *e;
    json_array_foreach (v, i, e) {
        char buf[32];
        const char *s = json_string_value(e);
        if (ints_ok && json_is_integer(e)) {
            snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(e));
            s = buf;
        }
        if (!s)
            return rfail(c, key, (int)i, "%s", ints_ok ? "not a string or integer" : "not a string");
        if (!*s)
            return rfail(c, key, (int)i, "empty");
        *out = util_xrealloc(*out, (size_t)(*n + 1) * sizeof **out);
        (*out)[(*n)++] = util_strdup(s);
    }
    return 0;
}

static int get_mins(rowctx_t *c, json_t *v, wl_row_t *r)
{
    char **texts = NULL;
    int n = 0, rc = get_list(c, "minMember", v, 1, &texts, &n);
    if (rc == 0 && n == 0)
        rc = rfail(c, "minMember", -1, "empty (leave it out for a pass-through row)");
    r->mins = util_xcalloc((size_t)n + 1, sizeof *r->mins);
    for (int i = 0; rc == 0 && i < n; i++) {
        char e[256];
        xnode_t *ast = expr_parse(texts[i], e, sizeof e);
        if (!ast) {
            rc = rfail(c, "minMember", i, "\"%.200s\": %s", texts[i], e);
            break;
        }
        r->mins[i].text = texts[i];
        r->mins[i].ast = ast;
        texts[i] = NULL;
        r->nmins++;
    }
    strv_free(texts, n);
    return rc;
}

static int get_whens(rowctx_t *c, json_t *v, wl_row_t *r)
{
    char **texts = NULL;
    int n = 0, rc = get_list(c, "when", v, 0, &texts, &n);
    r->whens = util_xcalloc((size_t)n + 1, sizeof *r->whens);
    for (int i = 0; rc == 0 && i < n; i++) {
        char e[256];
        if (cond_parse(texts[i], &r->whens[i], e, sizeof e) < 0) {
            rc = rfail(c, "when", i, "\"%.200s\": %s", texts[i], e);
            break;
        }
        r->nwhens++;
    }
    strv_free(texts, n);
    return rc;
}

static int get_paths(rowctx_t *c, const char *key, json_t *v, char ***out, int *n)
{
    if (get_list(c, key, v, 0, out, n) < 0)
        return -1;
    for (int i = 0; i < *n; i++) {
        char e[256];
        if (path_check((*out)[i], e, sizeof e) < 0) {
            return rfail(c, key, i, "\"%.200s\": %s", (*out)[i], e);
        }
    }
    return 0;
}

static int get_members(rowctx_t *c, json_t *v, wl_row_t *r)
{
    if (!json_is_object(v))
        return rfail(c, "members", -1, "not a map of label to value");
    if (json_object_size(v) > WL_MAX_LIST)
        return rfail(c, "members", -1, "more than 16 labels");
    r->members = util_xcalloc(json_object_size(v) + 1, sizeof *r->members);
    const char *k;
    json_t *e;
    json_object_foreach (v, k, e) {
        if (!valid_label_key(k))
            return rfail(c, "members", -1, "\"%.200s\" is not a label key", k);
        if (!json_is_string(e) || strlen(json_string_value(e)) > WL_NAME_MAX)
            return rfail(c, "members", -1, "the value of %.200s is not a label value", k);
        r->members[r->nmembers].key = util_strdup(k);
        r->members[r->nmembers++].value = util_strdup(json_string_value(e));
    }
    return 0;
}

/* One key of a row; *gang_only: a key that needs minMember was seen. */
static int row_key(rowctx_t *c, const char *key, json_t *v, wl_row_t *r, int *disabled, int *gang_only)
{
    if (!strcmp(key, "group"))
        return get_str(c, key, v, &r->group);
    if (!strcmp(key, "kind"))
        return get_str(c, key, v, &r->kind);
    if (!strcmp(key, "resource"))
        return get_str(c, key, v, &r->resource);
    if (!strcmp(key, "minMember"))
        return get_mins(c, v, r);
    if (!strcmp(key, "disabled")) {
        if (!json_is_boolean(v))
            return rfail(c, key, -1, "not true or false");
        *disabled = json_is_true(v);
        return 0;
    }
    *gang_only = 1;
    if (!strcmp(key, "groupBy")) {
        if (get_str(c, key, v, &r->group_by) < 0)
            return -1;
        return valid_label_key(r->group_by) ? 0 : rfail(c, key, -1, "\"%.200s\" is not a label key", r->group_by);
    }
    if (!strcmp(key, "when"))
        return get_whens(c, v, r);
    if (!strcmp(key, "queue"))
        return get_paths(c, key, v, &r->queues, &r->nqueues);
    if (!strcmp(key, "priorityClass"))
        return get_paths(c, key, v, &r->prios, &r->nprios);
    if (!strcmp(key, "members"))
        return get_members(c, v, r);
    return rfail(c, NULL, -1,
                 "unknown key \"%.100s\" (group, kind, resource, minMember, when, queue, priorityClass, groupBy, "
                 "members, disabled)",
                 key);
}

/* What a row needs once all its keys are read. */
static int row_check(rowctx_t *c, const wl_row_t *r, int disabled, int gang_only)
{
    if (!r->group)
        return rfail(c, "group", -1, "missing (\"\" for the core group)");
    if (!valid_group(r->group))
        return rfail(c, "group", -1, "\"%.200s\" is not an API group", r->group);
    if (!r->kind)
        return rfail(c, "kind", -1, "missing");
    if (!valid_kind(r->kind))
        return rfail(c, "kind", -1, "\"%.200s\" is not a kind", r->kind);
    if (disabled)
        return 0;
    if (!r->resource)
        return rfail(c, "resource", -1, "missing (the plural resource, e.g. pytorchjobs)");
    if (!valid_resource(r->resource))
        return rfail(c, "resource", -1, "\"%.200s\" is not a lowercase resource name", r->resource);
    if (gang_only && !r->nmins)
        return rfail(c, NULL, -1, "when, queue, priorityClass, groupBy and members need minMember");
    return 0;
}

/* A row checked whole; NULL with a message. *disabled: the row removes its kind. */
static wl_row_t *row_from_json(json_t *o, int idx, int *disabled, char *err, size_t errlen)
{
    rowctx_t c = { idx, err, errlen };
    *disabled = 0;
    if (!json_is_object(o)) {
        rfail(&c, NULL, -1, "not a map");
        return NULL;
    }
    wl_row_t *r = util_xcalloc(1, sizeof *r);
    int gang_only = 0, rc = 0;
    const char *key;
    json_t *v;
    json_object_foreach (o, key, v)
        if ((rc = row_key(&c, key, v, r, disabled, &gang_only)) < 0)
            break;
    if (rc < 0 || row_check(&c, r, *disabled, gang_only) < 0) {
        row_free(r);
        return NULL;
    }
    return r;
}

const char *wl_row_group(const wl_row_t *r)
{
    return r ? r->group : NULL;
}

const char *wl_row_kind(const wl_row_t *r)
{
    return r ? r->kind : NULL;
}

const char *wl_row_resource(const wl_row_t *r)
{
    return r ? r->resource : NULL;
}

int wl_row_is_gang(const wl_row_t *r)
{
    return r && r->nmins > 0;
}

const char *wl_row_group_by(const wl_row_t *r)
{
    return r ? r->group_by : NULL;
}

int wl_row_admits(const wl_row_t *r, const labels_t *pod_labels)
{
    for (int i = 0; r && i < r->nmembers; i++) {
        const char *v = pod_labels ? labels_get(pod_labels, r->members[i].key) : NULL;
        if (!v || strcmp(v, r->members[i].value) != 0)
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ the table */

/* The default rows: NULL-terminated lists. */
typedef struct row_spec {
    const char *group, *kind, *resource;
    const char *min[3], *when[3], *queue[2], *prio[2];
    const char *group_by, *member_key, *member_val;
} row_spec_t;

/* Kubeflow's training operator: schedulingPolicy's minimum, else every replica. */
#define KF_POLICY "spec.runPolicy.schedulingPolicy."
#define KF_ROW(K, R, SPECS)                                                                                            \
    {                                                                                                                  \
        .group = "kubeflow.org", .kind = K, .resource = R, .queue = { KF_POLICY "queue" },                             \
        .prio = { KF_POLICY "priorityClass" }, .min = {                                                                \
            KF_POLICY "minAvailable",                                                                                  \
            "sum(" SPECS ", replicas|1)"                                                                               \
        }                                                                                                              \
    }

static const row_spec_t default_rows[] = {
    /* pass-through */
    { .group = "apps", .kind = "ReplicaSet", .resource = "replicasets" },
    { .group = "apps", .kind = "StatefulSet", .resource = "statefulsets" },
    { .group = "apps", .kind = "Deployment", .resource = "deployments" },
    { .group = "batch", .kind = "CronJob", .resource = "cronjobs" },
    { .group = "", .kind = "Pod", .resource = "pods" },
    /* gangs */
    KF_ROW("PyTorchJob", "pytorchjobs", "spec.pytorchReplicaSpecs"),
    KF_ROW("TFJob", "tfjobs", "spec.tfReplicaSpecs"),
    KF_ROW("MPIJob", "mpijobs", "spec.mpiReplicaSpecs"),
    KF_ROW("XGBoostJob", "xgboostjobs", "spec.xgbReplicaSpecs"),
    KF_ROW("PaddleJob", "paddlejobs", "spec.paddleReplicaSpecs"),
    { .group = "trainer.kubeflow.org",
      .kind = "TrainJob",
      .resource = "trainjobs",
      .min = { "spec.trainer.numNodes|1" }, /* the trainer nodes; initializer pods are not members */
      .member_key = "jobset.sigs.k8s.io/replicatedjob-name",
      .member_val = "node" },
    { .group = "jobset.x-k8s.io",
      .kind = "JobSet",
      .resource = "jobsets",
      .min = { "sum(spec.replicatedJobs, replicas|1 * template.spec.parallelism|1)" } },
    /* also walked through: a JobSet's Jobs group under the JobSet (the topmost gang row) */
    { .group = "batch",
      .kind = "Job",
      .resource = "jobs",
      .min = { "spec.parallelism|1" },
      .when = { "spec.completionMode == \"Indexed\"", "spec.parallelism == spec.completions" } },
    { .group = "leaderworkerset.x-k8s.io",
      .kind = "LeaderWorkerSet",
      .resource = "leaderworkersets",
      .min = { "spec.leaderWorkerTemplate.size|1" },
      .group_by = "leaderworkerset.sigs.k8s.io/group-index" },
    { .group = "ray.io",
      .kind = "RayCluster",
      .resource = "rayclusters",
      .min = { "1 + sum(spec.workerGroupSpecs, minReplicas|0)" } },
    { .group = "ray.io",
      .kind = "RayJob",
      .resource = "rayjobs",
      .min = { "1 + sum(spec.rayClusterSpec.workerGroupSpecs, minReplicas|0)" } },
};

static json_t *strv_json(const char *const *v)
{
    json_t *a = json_array();
    for (; *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

/* A default row in the file format, so it goes through the loader's checks. */
static json_t *spec_json(const row_spec_t *s)
{
    json_t *o = json_pack("{s:s, s:s, s:s}", "group", s->group, "kind", s->kind, "resource", s->resource);
    if (s->min[0])
        json_object_set_new(o, "minMember", strv_json(s->min));
    if (s->when[0])
        json_object_set_new(o, "when", strv_json(s->when));
    if (s->queue[0])
        json_object_set_new(o, "queue", strv_json(s->queue));
    if (s->prio[0])
        json_object_set_new(o, "priorityClass", strv_json(s->prio));
    if (s->group_by)
        json_object_set_new(o, "groupBy", json_string(s->group_by));
    if (s->member_key)
        json_object_set_new(o, "members", json_pack("{s:s}", s->member_key, s->member_val));
    return o;
}

wl_table_t *wl_table_new_default(void)
{
    wl_table_t *t = util_xcalloc(1, sizeof *t);
    int n = (int)(sizeof default_rows / sizeof default_rows[0]);
    t->rows = util_xcalloc((size_t)n, sizeof *t->rows);
    for (int i = 0; i < n; i++) {
        char err[512];
        int disabled;
        json_t *o = spec_json(&default_rows[i]);
        t->rows[i] = o ? row_from_json(o, i, &disabled, err, sizeof err) : NULL;
        json_decref(o);
        if (!t->rows[i]) {
            fprintf(stderr, "rules.c: default row %d: %s\n", i, o ? err : "out of memory");
            abort();
        }
        t->n++;
    }
    return t;
}

void wl_table_free(wl_table_t *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        row_free(t->rows[i]);
    free(t->rows);
    free(t);
}

int wl_table_nrows(const wl_table_t *t)
{
    return t ? t->n : 0;
}

const wl_row_t *wl_table_row(const wl_table_t *t, int i)
{
    return t && i >= 0 && i < t->n ? t->rows[i] : NULL;
}

static int row_index(wl_row_t *const *rows, int n, const char *group, size_t glen, const char *kind)
{
    for (int i = 0; i < n; i++)
        if (strlen(rows[i]->group) == glen && !strncmp(rows[i]->group, group, glen) && !strcmp(rows[i]->kind, kind))
            return i;
    return -1;
}

const wl_row_t *wl_table_find(const wl_table_t *t, const char *api_version, const char *kind)
{
    if (!t || !api_version || !kind)
        return NULL;
    const char *slash = strchr(api_version, '/');
    int i = row_index(t->rows, t->n, api_version, slash ? (size_t)(slash - api_version) : 0, kind);
    return i < 0 ? NULL : t->rows[i];
}

/* The rows of a document applied to a copy of t's row list; t is changed only when all are good.
 * made: every row parsed (a disabling one too: off[i]); dropped: t's rows replaced or removed. */
typedef struct load_state {
    wl_row_t **cur;
    int n;
    wl_row_t **made, **dropped;
    int *off;
    int nmade, ndropped;
} load_state_t;

static int apply_row(load_state_t *s, wl_row_t *r, int disabled, int idx, char *err, size_t errlen)
{
    int i = row_index(s->cur, s->n, r->group, strlen(r->group), r->kind);
    int twice = row_index(s->made, s->nmade, r->group, strlen(r->group), r->kind) >= 0;
    if (twice || (disabled && i < 0)) {
        util_errf(err, errlen,
                  twice ? "kinds[%d]: %s/%s is in the file twice"
                        : "kinds[%d]: disables %s/%s, which is not in the table",
                  idx, r->group, r->kind);
        row_free(r);
        return -1;
    }
    s->off[s->nmade] = disabled;
    s->made[s->nmade++] = r;
    if (i >= 0)
        s->dropped[s->ndropped++] = s->cur[i];
    if (disabled) {
        memmove(&s->cur[i], &s->cur[i + 1], (size_t)(s->n - i - 1) * sizeof *s->cur);
        s->n--;
    } else if (i >= 0) {
        s->cur[i] = r;
    } else {
        s->cur[s->n++] = r;
    }
    return 0;
}

static int load_rows(load_state_t *s, json_t *kinds, char *err, size_t errlen)
{
    size_t idx;
    json_t *o;
    json_array_foreach (kinds, idx, o) {
        int disabled;
        wl_row_t *r = row_from_json(o, (int)idx, &disabled, err, errlen);
        if (!r || apply_row(s, r, disabled, (int)idx, err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int check_doc(json_t *doc, char *err, size_t errlen)
{
    if (!json_is_object(doc))
        return util_errf(err, errlen, "expected a map with apiVersion: %s, kind: %s and kinds", WL_API_VERSION,
                         WL_DOC_KIND);
    const char *key;
    json_t *v;
    json_object_foreach (doc, key, v) {
        if (strcmp(key, "apiVersion") && strcmp(key, "kind") && strcmp(key, "kinds"))
            return util_errf(err, errlen, "unknown key \"%.100s\" (apiVersion, kind, kinds)", key);
    }
    const char *av = json_string_value(json_object_get(doc, "apiVersion"));
    const char *k = json_string_value(json_object_get(doc, "kind"));
    json_t *kinds = json_object_get(doc, "kinds");
    if (!av || strcmp(av, WL_API_VERSION))
        return util_errf(err, errlen, "apiVersion: want %s", WL_API_VERSION);
    if (!k || strcmp(k, WL_DOC_KIND))
        return util_errf(err, errlen, "kind: want %s", WL_DOC_KIND);
    if (!json_is_array(kinds))
        return util_errf(err, errlen, "kinds: %s", kinds ? "not a list" : "missing");
    if (json_array_size(kinds) > WL_MAX_ROWS)
        return util_errf(err, errlen, "kinds: more than %d rows", WL_MAX_ROWS);
    return 0;
}

int wl_table_load_json(wl_table_t *t, json_t *doc, const char *name, char *err, size_t errlen)
{
    char e[768] = "";
    if (!name)
        name = "<workload groups>";
    if (!t)
        return util_errf(err, errlen, "%s: no table", name);
    if (check_doc(doc, e, sizeof e) < 0)
        return util_errf(err, errlen, "%s: %s", name, e);
    json_t *kinds = json_object_get(doc, "kinds");
    size_t nk = json_array_size(kinds);
    load_state_t s = { 0 };
    s.cur = util_xcalloc((size_t)t->n + nk + 1, sizeof *s.cur);
    s.made = util_xcalloc(nk + 1, sizeof *s.made);
    s.dropped = util_xcalloc(nk + 1, sizeof *s.dropped);
    s.off = util_xcalloc(nk + 1, sizeof *s.off);
    memcpy(s.cur, t->rows, (size_t)t->n * sizeof *s.cur);
    s.n = t->n;
    int rc = load_rows(&s, kinds, e, sizeof e);
    if (rc < 0) {
        util_errf(err, errlen, "%s: %s", name, e);
        for (int i = 0; i < s.nmade; i++)
            row_free(s.made[i]);
        free(s.cur);
    } else {
        for (int i = 0; i < s.ndropped; i++)
            row_free(s.dropped[i]);
        for (int i = 0; i < s.nmade; i++)
            if (s.off[i])
                row_free(s.made[i]);
        free(t->rows);
        t->rows = s.cur;
        t->n = s.n;
    }
    free(s.made);
    free(s.dropped);
    free(s.off);
    return rc;
}

/* ------------------------------------------------------------ YAML */

typedef struct yconv {
    yaml_document_t *doc;
    int nodes;
    char *err;
    size_t errlen;
} yconv_t;

static int yfail(yconv_t *c, const yaml_node_t *n, const char *what)
{
    return util_errf(c->err, c->errlen, "line %lu: %s", (unsigned long)n->start_mark.line + 1, what);
}

/* Scalars stay strings, but for plain true/false (booleans) and null, ~ or nothing (null). */
static json_t *yscalar(yconv_t *c, const yaml_node_t *n)
{
    const char *s = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (memchr(s, '\0', len)) {
        yfail(c, n, "a NUL character in a scalar");
        return NULL;
    }
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
            return json_true();
        if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
            return json_false();
        if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
            return json_null();
    }
    json_t *j = json_stringn(s, len);
    if (!j)
        yfail(c, n, "a scalar is not UTF-8");
    return j;
}

static json_t *yconv(yconv_t *c, yaml_node_t *n, int depth);

static json_t *ymapping(yconv_t *c, yaml_node_t *n, int depth)
{
    json_t *o = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
        if (!k || !v || k->type != YAML_SCALAR_NODE || memchr(k->data.scalar.value, '\0', k->data.scalar.length)) {
            yfail(c, k ? k : n, "a map key is not a string");
            goto fail;
        }
        const char *ks = (const char *)k->data.scalar.value;
        if (json_object_get(o, ks)) {
            char m[160];
            snprintf(m, sizeof m, "key \"%.100s\" twice", ks);
            yfail(c, k, m);
            goto fail;
        }
        json_t *jv = yconv(c, v, depth + 1);
        if (!jv || json_object_set_new(o, ks, jv) < 0) {
            if (jv)
                yfail(c, k, "a map key is not UTF-8");
            goto fail;
        }
    }
    return o;
fail:
    json_decref(o);
    return NULL;
}

static json_t *yconv(yconv_t *c, yaml_node_t *n, int depth)
{
    if (depth > WL_YAML_DEPTH) {
        yfail(c, n, "nested too deep");
        return NULL;
    }
    if (++c->nodes > WL_YAML_NODES) {
        yfail(c, n, "too many nodes");
        return NULL;
    }
    if (n->type == YAML_SCALAR_NODE)
        return yscalar(c, n);
    if (n->type == YAML_MAPPING_NODE)
        return ymapping(c, n, depth);
    if (n->type != YAML_SEQUENCE_NODE) {
        yfail(c, n, "an empty node");
        return NULL;
    }
    json_t *a = json_array();
    for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
        yaml_node_t *e = yaml_document_get_node(c->doc, *i);
        json_t *je = e ? yconv(c, e, depth + 1) : NULL;
        if (!je) {
            json_decref(a);
            return NULL;
        }
        json_array_append_new(a, je);
    }
    return a;
}

static int yaml_error(const yaml_parser_t *p, char *err, size_t errlen)
{
    return util_errf(err, errlen, "line %lu: YAML: %s", (unsigned long)p->problem_mark.line + 1,
                     p->problem ? p->problem : "parse error");
}

/* One YAML document as JSON; NULL with a message. */
static json_t *yaml_load(const char *buf, size_t len, char *err, size_t errlen)
{
    yaml_parser_t p;
    yaml_document_t doc, next;
    if (!yaml_parser_initialize(&p)) {
        util_errf(err, errlen, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
    json_t *j = NULL;
    if (!yaml_parser_load(&p, &doc)) {
        yaml_error(&p, err, errlen);
        yaml_parser_delete(&p);
        return NULL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    yconv_t c = { &doc, 0, err, errlen };
    if (!root)
        util_errf(err, errlen, "empty document");
    else
        j = yconv(&c, root, 0);
    yaml_document_delete(&doc);
    if (j && !yaml_parser_load(&p, &next)) {
        yaml_error(&p, err, errlen);
        json_decref(j);
        j = NULL;
    } else if (j) {
        if (yaml_document_get_root_node(&next)) {
            util_errf(err, errlen, "only one YAML document is allowed");
            json_decref(j);
            j = NULL;
        }
        yaml_document_delete(&next);
    }
    yaml_parser_delete(&p);
    return j;
}

/* The file's text, NUL-terminated; NULL with a message. */
static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        util_errf(err, errlen, "%s", strerror(errno));
        return NULL;
    }
    char *buf = util_xmalloc(WL_FILE_MAX + 1);
    *len = fread(buf, 1, WL_FILE_MAX + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || *len > WL_FILE_MAX) {
        util_errf(err, errlen, bad ? "read error" : "larger than %d bytes", WL_FILE_MAX);
        free(buf);
        return NULL;
    }
    buf[*len] = '\0';
    return buf;
}

int wl_table_load_string(wl_table_t *t, const char *text, size_t len, const char *name, char *err, size_t errlen)
{
    char e[768] = "";
    json_t *doc = NULL;
    size_t i = 0;
    if (!name)
        name = "<workload groups>";
    if (!text)
        return util_errf(err, errlen, "%s: no text", name);
    if (len > WL_FILE_MAX)
        return util_errf(err, errlen, "%s: larger than %d bytes", name, WL_FILE_MAX);
    while (i < len && isspace((unsigned char)text[i]))
        i++;
    if (i < len && text[i] == '{') {
        json_error_t je;
        doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (!doc)
            snprintf(e, sizeof e, "line %d: JSON: %s", je.line, je.text);
    } else {
        doc = yaml_load(text, len, e, sizeof e);
    }
    if (!doc)
        return util_errf(err, errlen, "%s: %s", name, e);
    int rc = wl_table_load_json(t, doc, name, err, errlen);
    json_decref(doc);
    return rc;
}

int wl_table_load_file(wl_table_t *t, const char *path, char *err, size_t errlen)
{
    char e[768] = "";
    size_t len;
    if (!path)
        return util_errf(err, errlen, "no file");
    char *buf = read_file(path, &len, e, sizeof e);
    if (!buf)
        return util_errf(err, errlen, "%s: %s", path, e);
    int rc = wl_table_load_string(t, buf, len, path, err, errlen);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------ verdicts */

/* The first non-empty string at paths. */
static char *first_string(json_t *owner, char **paths, int n)
{
    for (int i = 0; i < n; i++) {
        const char *s = json_string_value(path_get(owner, paths[i]));
        if (s && *s)
            return util_strdup(s);
    }
    return NULL;
}

static char *owner_queue(const wl_row_t *r, json_t *owner)
{
    json_t *labels = json_object_get(json_object_get(owner, "metadata"), "labels");
    const char *keys[] = { FS_QUEUE_LABEL, FS_KAI_QUEUE_LABEL };
    for (int i = 0; i < 2; i++) {
        const char *s = json_string_value(json_object_get(labels, keys[i]));
        if (s && *s)
            return util_strdup(s);
    }
    return first_string(owner, r->queues, r->nqueues);
}

/* The first minMember alternative that reads; gang or why. */
static void read_min(const wl_row_t *r, json_t *owner, wl_verdict_t *out)
{
    sbuf_t why = { 0 };
    sbuf_puts(&why, "no minMember could be read: ");
    for (int i = 0; i < r->nmins; i++) {
        char e[256];
        int64_t v;
        if (xeval(r->mins[i].ast, owner, &v, e, sizeof e) < 0) {
            sbuf_printf(&why, "%s%s", i ? "; " : "", e);
            continue;
        }
        sbuf_free(&why);
        if (v >= 1 && v <= INT32_MAX) {
            out->gang = 1;
            out->min_member = (int32_t)v;
        } else {
            sbuf_printf(&why, "minMember %lld%s", (long long)v, v < 1 ? "" : " is too large");
            out->why = why.data;
        }
        return;
    }
    out->why = why.data;
}

int wl_row_eval(const wl_row_t *r, json_t *owner, wl_verdict_t *out)
{
    if (!out)
        return -1;
    memset(out, 0, sizeof *out);
    if (!r)
        return -1;
    if (!json_is_object(owner)) {
        out->why = util_strdup("the owner is not an object");
        return 0;
    }
    out->queue = owner_queue(r, owner);
    out->priority_class = first_string(owner, r->prios, r->nprios);
    if (!r->nmins) {
        sbuf_t b = { 0 };
        sbuf_printf(&b, "%s is not a gang kind", r->kind);
        out->why = b.data;
        return 0;
    }
    for (int i = 0; i < r->nwhens; i++)
        if (!cond_holds(&r->whens[i], owner, &out->why)) {
            out->unmet = 1;
            return 0;
        }
    read_min(r, owner, out);
    return 0;
}

void wl_verdict_clear(wl_verdict_t *v)
{
    if (!v)
        return;
    free(v->queue);
    free(v->priority_class);
    free(v->why);
    memset(v, 0, sizeof *v);
}

/* ------------------------------------------------------------ names */

static int bad_segment(const char *s)
{
    return !s || !*s || strchr(s, '/') || !strcmp(s, ".") || !strcmp(s, "..");
}

char *wl_object_path(const wl_row_t *r, const char *api_version, const char *ns, const char *name)
{
    if (!r || !api_version || bad_segment(ns) || bad_segment(name))
        return NULL;
    const char *slash = strchr(api_version, '/');
    const char *version = slash ? slash + 1 : api_version;
    size_t glen = slash ? (size_t)(slash - api_version) : 0;
    if (bad_segment(version) || strlen(r->group) != glen || strncmp(r->group, api_version, glen))
        return NULL;
    char *ev = util_urlencode(version), *ens = util_urlencode(ns), *en = util_urlencode(name);
    sbuf_t b = { 0 };
    if (glen)
        sbuf_printf(&b, "/apis/%s/%s/namespaces/%s/%s/%s", r->group, ev, ens, r->resource, en);
    else
        sbuf_printf(&b, "/api/%s/namespaces/%s/%s/%s", ev, ens, r->resource, en);
    free(ev);
    free(ens);
    free(en);
    return b.data;
}

static uint32_t fnv1a(const char *s, uint32_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

/* "KIND-NAME[-SUFFIX]" lowercased, each character outside [a-z0-9-] a '-', no '-' at
 * either end. When that changed more than the case of the kind (two names could meet:
 * "a.b" and "a-b"), or is longer than 63, it is cut to 54 and ends in "-" and the
 * FNV-1a 32 of "KIND/NAME[/SUFFIX]" in 8 hex digits. */
char *wl_group_name(const char *kind, const char *name, const char *suffix)
{
    if (!kind || !*kind || !name || !*name)
        return NULL;
    int has_suffix = suffix && *suffix;
    sbuf_t raw = { 0 };
    sbuf_printf(&raw, "%s-%s%s%s", kind, name, has_suffix ? "-" : "", has_suffix ? suffix : "");
    for (size_t i = 0; kind[i]; i++)
        raw.data[i] = (char)tolower((unsigned char)raw.data[i]);
    char *out = util_xmalloc(raw.len + WL_NAME_MAX + 1);
    size_t n = 0;
    for (size_t i = 0; i < raw.len; i++) {
        unsigned char ch = (unsigned char)tolower((unsigned char)raw.data[i]);
        char o = (char)(isdigit(ch) || (ch >= 'a' && ch <= 'z') ? ch : '-');
        if (o == '-' && n == 0)
            continue;
        out[n++] = o;
    }
    while (n && out[n - 1] == '-')
        n--;
    out[n] = '\0';
    int same = !strcmp(out, raw.data);
    sbuf_free(&raw);
    if (n <= WL_NAME_MAX && same)
        return out;
    uint32_t h = fnv1a(name, fnv1a("/", fnv1a(kind, 2166136261u)));
    if (has_suffix)
        h = fnv1a(suffix, fnv1a("/", h));
    if (n > WL_HASHED_BASE)
        n = WL_HASHED_BASE;
    while (n && out[n - 1] == '-')
        n--;
    sprintf(out + n, "%s%08x", n ? "-" : "", (unsigned)h);
    return out;
}
