/* metrics.c -- the Prometheus registry: families of labelled series behind a
 * lock each, rendered to the text exposition format. */
#include "server/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

typedef struct series {
    char *labels;      /* "" when unlabelled */
    double value;      /* counter, gauge; histogram: sum */
    uint64_t count;    /* histogram observations */
    uint64_t *buckets; /* histogram: per-bucket (non-cumulative) counts */
} series_t;

struct metric {
    char *name, *help;
    metric_type_t type;
    double *bounds;
    int nbounds;
    pthread_mutex_t mu;
    series_t *series;
    int nseries, cap;
};

typedef struct collector {
    metrics_collect_fn fn;
    void *ud;
} collector_t;

struct metrics {
    pthread_mutex_t mu;        /* families and collectors lists */
    pthread_mutex_t render_mu; /* one render (and its collectors) at a time */
    metric_t **fams;
    int nfams, cap;
    collector_t *colls;
    int ncolls, ccap;
};

metrics_t *metrics_new(void)
{
    metrics_t *r = util_xcalloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->render_mu, NULL);
    return r;
}

static void series_free(series_t *s)
{
    free(s->labels);
    free(s->buckets);
}

static void metric_free(metric_t *m)
{
    for (int i = 0; i < m->nseries; i++)
        series_free(&m->series[i]);
    free(m->series);
    free(m->bounds);
    free(m->name);
    free(m->help);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void metrics_free(metrics_t *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nfams; i++)
        metric_free(r->fams[i]);
    free(r->fams);
    free(r->colls);
    pthread_mutex_destroy(&r->mu);
    pthread_mutex_destroy(&r->render_mu);
    free(r);
}

static int valid_name(const char *s)
{
    if (!s || !*s)
        return 0;
    for (const char *p = s; *p; p++) {
        int alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == ':';
        if (!alpha && !(p > s && *p >= '0' && *p <= '9'))
            return 0;
    }
    return 1;
}

static int same_buckets(const metric_t *m, const double *b, int n)
{
    if (m->nbounds != n)
        return 0;
    for (int i = 0; i < n; i++)
        if (m->bounds[i] != b[i])
            return 0;
    return 1;
}

static metric_t *reg(metrics_t *r, const char *name, const char *help, metric_type_t t, const double *b, int nb)
{
    if (!r || !valid_name(name))
        return NULL;
    if (t == METRIC_HISTOGRAM) {
        if (!b || nb < 1 || nb > METRICS_MAX_BUCKETS)
            return NULL;
        for (int i = 0; i < nb; i++)
            if (!isfinite(b[i]) || (i && b[i] <= b[i - 1]))
                return NULL;
    }
    metric_t *m = NULL;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->nfams; i++) {
        if (strcmp(r->fams[i]->name, name))
            continue;
        metric_t *old = r->fams[i];
        m = old->type == t && (t != METRIC_HISTOGRAM || same_buckets(old, b, nb)) ? old : NULL;
        pthread_mutex_unlock(&r->mu);
        return m;
    }
    m = util_xcalloc(1, sizeof *m);
    m->name = util_strdup(name);
    m->help = util_strdup(help ? help : "");
    m->type = t;
    pthread_mutex_init(&m->mu, NULL);
    if (t == METRIC_HISTOGRAM) {
        m->bounds = util_xmalloc(sizeof(double) * (size_t)nb);
        memcpy(m->bounds, b, sizeof(double) * (size_t)nb);
        m->nbounds = nb;
    }
    if (r->nfams == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->fams = util_xrealloc(r->fams, sizeof *r->fams * (size_t)r->cap);
    }
    r->fams[r->nfams++] = m;
    pthread_mutex_unlock(&r->mu);
    return m;
}

metric_t *metrics_counter(metrics_t *r, const char *name, const char *help)
{
    return reg(r, name, help, METRIC_COUNTER, NULL, 0);
}

metric_t *metrics_gauge(metrics_t *r, const char *name, const char *help)
{
    return reg(r, name, help, METRIC_GAUGE, NULL, 0);
}

metric_t *metrics_histogram(metrics_t *r, const char *name, const char *help, const double *buckets, int nbuckets)
{
    return reg(r, name, help, METRIC_HISTOGRAM, buckets, nbuckets);
}

void metrics_on_collect(metrics_t *r, metrics_collect_fn fn, void *ud)
{
    if (!r || !fn)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->ncolls == r->ccap) {
        r->ccap = r->ccap ? r->ccap * 2 : 4;
        r->colls = util_xrealloc(r->colls, sizeof *r->colls * (size_t)r->ccap);
    }
    r->colls[r->ncolls].fn = fn;
    r->colls[r->ncolls].ud = ud;
    r->ncolls++;
    pthread_mutex_unlock(&r->mu);
}

/* ---- series ------------------------------------------------------------- */

static series_t *find(metric_t *m, const char *labels)
{
    if (!labels)
        labels = "";
    for (int i = 0; i < m->nseries; i++)
        if (!strcmp(m->series[i].labels, labels))
            return &m->series[i];
    return NULL;
}

/* Finds or creates; m->mu held. */
static series_t *get(metric_t *m, const char *labels)
{
    series_t *s = find(m, labels);
    if (s)
        return s;
    if (m->nseries == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 4;
        m->series = util_xrealloc(m->series, sizeof *m->series * (size_t)m->cap);
    }
    s = &m->series[m->nseries++];
    memset(s, 0, sizeof *s);
    s->labels = util_strdup(labels ? labels : "");
    if (m->type == METRIC_HISTOGRAM)
        s->buckets = util_xcalloc((size_t)m->nbounds, sizeof *s->buckets);
    return s;
}

void metric_add(metric_t *m, const char *labels, double v)
{
    if (!m || m->type == METRIC_HISTOGRAM || isnan(v))
        return;
    if (m->type == METRIC_COUNTER && v < 0)
        return;
    pthread_mutex_lock(&m->mu);
    get(m, labels)->value += v;
    pthread_mutex_unlock(&m->mu);
}

void metric_inc(metric_t *m, const char *labels)
{
    metric_add(m, labels, 1.0);
}

void metric_set(metric_t *m, const char *labels, double v)
{
    if (!m || m->type != METRIC_GAUGE)
        return;
    pthread_mutex_lock(&m->mu);
    get(m, labels)->value = v;
    pthread_mutex_unlock(&m->mu);
}

void metric_observe(metric_t *m, const char *labels, double v)
{
    if (!m || m->type != METRIC_HISTOGRAM || isnan(v))
        return;
    pthread_mutex_lock(&m->mu);
    series_t *s = get(m, labels);
    s->count++;
    s->value += v;
    for (int i = 0; i < m->nbounds; i++)
        if (v <= m->bounds[i]) {
            s->buckets[i]++;
            break;
        }
    pthread_mutex_unlock(&m->mu);
}

void metric_remove(metric_t *m, const char *labels)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    series_t *s = find(m, labels);
    if (s) {
        series_free(s);
        int i = (int)(s - m->series);
        memmove(s, s + 1, sizeof *s * (size_t)(m->nseries - i - 1));
        m->nseries--;
    }
    pthread_mutex_unlock(&m->mu);
}

void metric_clear(metric_t *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < m->nseries; i++)
        series_free(&m->series[i]);
    m->nseries = 0;
    pthread_mutex_unlock(&m->mu);
}

double metric_value(metric_t *m, const char *labels)
{
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    series_t *s = find(m, labels);
    double v = !s ? 0 : m->type == METRIC_HISTOGRAM ? (double)s->count : s->value;
    pthread_mutex_unlock(&m->mu);
    return v;
}

double metric_sum(metric_t *m, const char *labels)
{
    if (!m || m->type != METRIC_HISTOGRAM)
        return 0;
    pthread_mutex_lock(&m->mu);
    series_t *s = find(m, labels);
    double v = s ? s->value : 0;
    pthread_mutex_unlock(&m->mu);
    return v;
}

/* ---- rendering ------------------------------------------------------------ */

/* Shortest of %.15g/%.17g that reads back exactly; Prometheus spellings for
 * the special values. */
static void fmt_num(double v, char *buf, size_t n)
{
    if (isnan(v)) {
        snprintf(buf, n, "NaN");
    } else if (isinf(v)) {
        snprintf(buf, n, v > 0 ? "+Inf" : "-Inf");
    } else {
        snprintf(buf, n, "%.15g", v);
        if (strtod(buf, NULL) != v)
            snprintf(buf, n, "%.17g", v);
    }
}

static void put_help(sbuf_t *b, const char *name, const char *help)
{
    sbuf_printf(b, "# HELP %s ", name);
    for (const char *p = help; *p; p++) {
        if (*p == '\\')
            sbuf_puts(b, "\\\\");
        else if (*p == '\n')
            sbuf_puts(b, "\\n");
        else
            sbuf_append(b, p, 1);
    }
    sbuf_puts(b, "\n");
}

static void put_sample(sbuf_t *b, const char *name, const char *suffix, const char *labels, const char *extra, double v)
{
    char num[40];
    fmt_num(v, num, sizeof num);
    int has = labels && *labels, hasx = extra && *extra;
    sbuf_printf(b, "%s%s%s%s%s%s%s %s\n", name, suffix, has || hasx ? "{" : "", has ? labels : "",
                has && hasx ? "," : "", hasx ? extra : "", has || hasx ? "}" : "", num);
}

static void render_family(sbuf_t *b, metric_t *m)
{
    static const char *const tname[] = { "counter", "gauge", "histogram" };
    put_help(b, m->name, m->help);
    sbuf_printf(b, "# TYPE %s %s\n", m->name, tname[m->type]);
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < m->nseries; i++) {
        const series_t *s = &m->series[i];
        if (m->type != METRIC_HISTOGRAM) {
            put_sample(b, m->name, "", s->labels, NULL, s->value);
            continue;
        }
        uint64_t cum = 0;
        char le[64], num[40];
        for (int j = 0; j < m->nbounds; j++) {
            cum += s->buckets[j];
            fmt_num(m->bounds[j], num, sizeof num);
            snprintf(le, sizeof le, "le=\"%s\"", num);
            put_sample(b, m->name, "_bucket", s->labels, le, (double)cum);
        }
        put_sample(b, m->name, "_bucket", s->labels, "le=\"+Inf\"", (double)s->count);
        put_sample(b, m->name, "_sum", s->labels, NULL, s->value);
        put_sample(b, m->name, "_count", s->labels, NULL, (double)s->count);
    }
    pthread_mutex_unlock(&m->mu);
}

char *metrics_render(metrics_t *r)
{
    sbuf_t b = { 0 };
    sbuf_puts(&b, "");
    if (!r)
        return b.data;
    pthread_mutex_lock(&r->render_mu);
    /* Collectors run unlocked (r->mu) so they may register and update. */
    for (int i = 0;; i++) {
        pthread_mutex_lock(&r->mu);
        collector_t c = { NULL, NULL };
        if (i < r->ncolls)
            c = r->colls[i];
        pthread_mutex_unlock(&r->mu);
        if (!c.fn)
            break;
        c.fn(r, c.ud);
    }
    for (int i = 0;; i++) {
        pthread_mutex_lock(&r->mu);
        metric_t *m = i < r->nfams ? r->fams[i] : NULL;
        pthread_mutex_unlock(&r->mu);
        if (!m)
            break;
        render_family(&b, m);
    }
    pthread_mutex_unlock(&r->render_mu);
    return b.data;
}

char *metrics_labels(char *buf, size_t n, ...)
{
    if (!buf || !n)
        return buf;
    buf[0] = 0;
    size_t len = 0;
    va_list ap;
    va_start(ap, n);
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k)
            break;
        const char *v = va_arg(ap, const char *);
        if (!v)
            v = "";
        sbuf_t p = { 0 };
        sbuf_printf(&p, "%s%s=\"", len ? "," : "", k);
        for (const char *c = v; *c; c++) {
            if (*c == '\\')
                sbuf_puts(&p, "\\\\");
            else if (*c == '"')
                sbuf_puts(&p, "\\\"");
            else if (*c == '\n')
                sbuf_puts(&p, "\\n");
            else
                sbuf_append(&p, c, 1);
        }
        sbuf_puts(&p, "\"");
        int fits = len + p.len < n;
        if (fits) {
            memcpy(buf + len, p.data, p.len + 1);
            len += p.len;
        }
        sbuf_free(&p);
        if (!fits)
            break;
    }
    va_end(ap);
    return buf;
}
