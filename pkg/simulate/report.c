/* report.c -- the simulator's outputs: jobs.csv, result.json, report.html
 * (inline SVG, nothing fetched) and the text summary. Every number is
 * printed with a fixed format, and nothing comes from the host or the wall
 * clock, so the same run writes the same bytes. */
#include "simulate/internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/types.h"
#include "fairshare/fairshare.h"
#include "util/util.h"

#define HTML_MAX_JOBS   2000
#define HTML_MAX_CHARTS 32

static const char *job_queue(const sim_job_t *j)
{
    return j->queue ? j->queue : FS_DEFAULT_QUEUE;
}

static const char *job_pool(const sim_job_t *j)
{
    return j->pool ? j->pool : DEFAULT_POOL;
}

/* ms as seconds with 3 decimals, exactly (no floating point). */
static void secs(char *buf, size_t n, int64_t ms)
{
    const char *sign = ms < 0 ? "-" : "";
    int64_t a = ms < 0 ? -ms : ms;
    snprintf(buf, n, "%s%lld.%03lld", sign, (long long)(a / 1000), (long long)(a % 1000));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The distinct nodes the job's pods last ran on, sorted. */
static int job_nodes(const sim_t *s, int ji, const char ***out)
{
    const sim_job_t *j = &s->w->jobs[ji];
    const char **v = util_xcalloc((size_t)j->npods + 1, sizeof(*v));
    int n = 0;
    for (int k = 0; k < j->npods; k++) {
        const char *node = s->pods[s->first_pod[ji] + k].node;
        if (node)
            v[n++] = node;
    }
    qsort(v, (size_t)n, sizeof(*v), cmp_str);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!m || strcmp(v[m - 1], v[i]))
            v[m++] = v[i];
    *out = v;
    return m;
}

static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int sim_write_csv(sim_t *s, FILE *f)
{
    fputs("job,queue,pool,arrival,start,finish,wait,nodes,preempted\n", f);
    for (int i = 0; i < s->w->njobs; i++) {
        const sim_job_t *j = &s->w->jobs[i];
        const sim_job_state_t *js = &s->js[i];
        char name[600], a[32], st[32] = "", fi[32] = "", wt[32] = "";
        snprintf(name, sizeof name, "%s/%s", j->ns, j->name);
        secs(a, sizeof a, js->arrival_at - s->o.start_wall_ms);
        if (js->start_at) {
            secs(st, sizeof st, js->start_at - s->o.start_wall_ms);
            secs(wt, sizeof wt, js->start_at - js->arrival_at);
        }
        if (js->finish_at)
            secs(fi, sizeof fi, js->finish_at - s->o.start_wall_ms);
        csv_field(f, name);
        fputc(',', f);
        csv_field(f, job_queue(j));
        fputc(',', f);
        csv_field(f, job_pool(j));
        fprintf(f, ",%s,%s,%s,%s,", a, st, fi, wt);
        const char **nodes;
        int nn = job_nodes(s, i, &nodes);
        sbuf_t b = { 0 };
        for (int k = 0; k < nn; k++)
            sbuf_printf(&b, "%s%s", k ? " " : "", nodes[k]);
        csv_field(f, b.data ? b.data : "");
        sbuf_free(&b);
        free(nodes);
        fprintf(f, ",%d\n", js->preempted);
    }
    return ferror(f) ? -1 : 0;
}

/* ------------------------------------------------------------ waits */

typedef struct waits {
    char *queue;
    int64_t *w;
    int n;
} waits_t;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_waits(const void *a, const void *b)
{
    return strcmp(((const waits_t *)a)->queue, ((const waits_t *)b)->queue);
}

/* Started jobs' waits per queue, each sorted; queues sorted by name. */
static waits_t *collect_waits(const sim_t *s, int *nq)
{
    waits_t *q = NULL;
    int n = 0;
    for (int i = 0; i < s->w->njobs; i++) {
        const char *name = job_queue(&s->w->jobs[i]);
        int k = 0;
        while (k < n && strcmp(q[k].queue, name))
            k++;
        if (k == n) {
            q = util_xrealloc(q, sizeof(*q) * (size_t)(n + 1));
            q[n].queue = util_strdup(name);
            q[n].w = util_xcalloc((size_t)s->w->njobs, sizeof(int64_t));
            q[n].n = 0;
            n++;
        }
        if (s->js[i].start_at)
            q[k].w[q[k].n++] = s->js[i].start_at - s->js[i].arrival_at;
    }
    for (int k = 0; k < n; k++)
        qsort(q[k].w, (size_t)q[k].n, sizeof(int64_t), cmp_i64);
    qsort(q, (size_t)n, sizeof(*q), cmp_waits);
    *nq = n;
    return q;
}

static void free_waits(waits_t *q, int n)
{
    for (int k = 0; k < n; k++) {
        free(q[k].queue);
        free(q[k].w);
    }
    free(q);
}

/* Nearest rank: the smallest wait with at least p% of the waits at or below it. */
static int64_t pct(const waits_t *q, int p)
{
    if (!q->n)
        return 0;
    long r = ((long)p * q->n + 99) / 100;
    if (r < 1)
        r = 1;
    return q->w[r - 1];
}

/* ------------------------------------------------------------ JSON */

static json_t *num_s(int64_t ms)
{
    return json_real((double)ms / 1000.0);
}

static json_t *opt_s(int64_t ms, int64_t base)
{
    return ms ? num_s(ms - base) : json_null();
}

/* Values rounded to 6 significant digits, so a sum's last bits never
 * reach the file. */
static json_t *rnd(double v)
{
    if (v == 0 || !isfinite(v))
        return json_integer(0);
    if (v == floor(v) && fabs(v) < 1e15)
        return json_integer((json_int_t)v);
    char b[40];
    snprintf(b, sizeof b, "%.6g", v);
    return json_real(strtod(b, NULL));
}

static json_t *series_json(const sim_series_t *se, const char *const *names, int nv)
{
    json_t *o = json_object(), *t = json_array();
    for (int i = 0; i < se->n; i++)
        json_array_append_new(t, num_s(se->t[i]));
    json_object_set_new(o, "t", t);
    for (int k = 0; k < nv; k++) {
        json_t *a = json_array();
        for (int i = 0; i < se->n; i++)
            json_array_append_new(a, rnd(se->v[(size_t)i * se->nv + k]));
        json_object_set_new(o, names[k], a);
    }
    return o;
}

static json_t *jobs_json(sim_t *s)
{
    json_t *a = json_array();
    int64_t base = s->o.start_wall_ms;
    for (int i = 0; i < s->w->njobs; i++) {
        const sim_job_t *j = &s->w->jobs[i];
        const sim_job_state_t *js = &s->js[i];
        const char **nodes;
        int nn = job_nodes(s, i, &nodes);
        json_t *jn = json_array();
        for (int k = 0; k < nn; k++)
            json_array_append_new(jn, json_string(nodes[k]));
        free(nodes);
        json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:i,s:i,s:i}", "name", j->name,
                                           "namespace", j->ns, "queue", job_queue(j), "pool", job_pool(j), "pods",
                                           j->npods, "arrival", num_s(js->arrival_at - base), "start",
                                           opt_s(js->start_at, base), "finish", opt_s(js->finish_at, base), "wait",
                                           js->start_at ? num_s(js->start_at - js->arrival_at) : json_null(), "nodes",
                                           jn, "preempted", js->preempted, "evicted", js->evicted, "shortEvictions",
                                           js->short_evictions));
    }
    return a;
}

static json_t *summary_json(sim_t *s)
{
    int started = 0, finished = 0, preempted = 0, again = 0, most = 0;
    for (int i = 0; i < s->w->njobs; i++) {
        const sim_job_state_t *js = &s->js[i];
        started += js->start_at != 0;
        finished += js->finish_at != 0;
        preempted += js->preempted > 0;
        again += js->evicted > 1;
        if (js->evicted > most)
            most = js->evicted;
    }
    return json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:I,s:I,s:I,s:I,s:i,s:i,s:o}", "jobs", s->w->njobs, "started", started,
                     "finished", finished, "unstarted", s->w->njobs - started, "preempted", preempted, "pods", s->npods,
                     "binds", (json_int_t)s->binds, "evictions", (json_int_t)s->evictions, "otherEvictions",
                     (json_int_t)s->other_evictions, "shortEvictions", (json_int_t)s->short_evictions,
                     "jobsEvictedAgain", again, "mostEvictedJob", most, "makespan",
                     num_s(s->end_at - s->o.start_wall_ms));
}

static double pool_mean(const sim_t *s, const sim_pool_t *p, int r)
{
    int64_t span = s->end_at - s->o.start_wall_ms;
    if (span <= 0 || p->cap[r] <= 0)
        return 0;
    return p->area[r] / ((double)span * p->cap[r]);
}

json_t *sim_result(sim_t *s)
{
    static const char *const qnames[] = { "allocatedGpu", "allocatedCpu", "allocatedMemoryMB",
                                          "fairShareGpu", "fairShareCpu", "fairShareMemoryMB",
                                          "pending" };
    static const char *const pnames[] = { "usedGpu", "usedCpu", "usedMemoryMB" };
    char ts[40];
    json_t *doc = json_object();
    json_object_set_new(doc, "apiVersion", json_string("ai-scheduler.aibee.cn/v1"));
    json_object_set_new(doc, "kind", json_string("SimulationResult"));
    json_object_set_new(doc, "seed", json_integer((json_int_t)s->o.seed));
    util_rfc3339_ms(s->o.start_wall_ms, ts, sizeof ts);
    json_object_set_new(doc, "start", json_string(ts));
    util_rfc3339_ms(s->end_at, ts, sizeof ts);
    json_object_set_new(doc, "end", json_string(ts));
    json_object_set_new(doc, "units",
                        json_pack("{s:s,s:s,s:s,s:s}", "time", "seconds after start", "gpu", "GPUs", "cpu",
                                  "millicores", "memory", "MB"));
    json_object_set_new(doc, "summary", summary_json(s));
    int nq;
    waits_t *q = collect_waits(s, &nq);
    json_t *wj = json_object();
    for (int k = 0; k < nq; k++)
        json_object_set_new(wj, q[k].queue,
                            json_pack("{s:i,s:o,s:o,s:o}", "count", q[k].n, "p50", num_s(pct(&q[k], 50)), "p90",
                                      num_s(pct(&q[k], 90)), "p99", num_s(pct(&q[k], 99))));
    free_waits(q, nq);
    json_object_set_new(doc, "waitPercentiles", wj);
    json_t *qa = json_array();
    for (int i = 0; i < s->nqueues; i++)
        json_array_append_new(qa, json_pack("{s:s,s:s,s:o}", "queue", s->queues[i].name, "pool", s->queues[i].pool,
                                            "samples", series_json(&s->queues[i], qnames, 7)));
    json_object_set_new(doc, "queues", qa);
    json_t *pa = json_array();
    for (int i = 0; i < s->npools; i++) {
        const sim_pool_t *p = &s->pools[i];
        json_array_append_new(
            pa, json_pack("{s:s,s:{s:o,s:o,s:o},s:{s:o,s:o,s:o},s:o}", "pool", p->name, "capacity", "gpu",
                          rnd(p->cap[SIM_GPU]), "cpu", rnd(p->cap[SIM_CPU]), "memoryMB", rnd(p->cap[SIM_MEM]),
                          "meanUtilization", "gpu", rnd(pool_mean(s, p, SIM_GPU)), "cpu", rnd(pool_mean(s, p, SIM_CPU)),
                          "memory", rnd(pool_mean(s, p, SIM_MEM)), "samples", series_json(&p->series, pnames, 3)));
    }
    json_object_set_new(doc, "pools", pa);
    json_object_set_new(doc, "jobs", jobs_json(s));
    return doc;
}

/* ------------------------------------------------------------ summary */

int sim_write_summary(sim_t *s, FILE *f)
{
    json_t *sum = summary_json(s);
    char mk[32];
    secs(mk, sizeof mk, s->end_at - s->o.start_wall_ms);
    fprintf(f,
            "jobs %lld: %lld started, %lld finished, %lld never started, %lld preempted; %lld pods, %lld binds, "
            "%lld evictions; makespan %ss\n",
            (long long)json_integer_value(json_object_get(sum, "jobs")),
            (long long)json_integer_value(json_object_get(sum, "started")),
            (long long)json_integer_value(json_object_get(sum, "finished")),
            (long long)json_integer_value(json_object_get(sum, "unstarted")),
            (long long)json_integer_value(json_object_get(sum, "preempted")), (long long)s->npods, (long long)s->binds,
            (long long)s->evictions, mk);
    fprintf(f, "evictions of pods that ran under %ds: %lld; jobs evicted more than once: %lld (at most %lld times)\n",
            SIM_SHORT_RUN_MS / 1000, (long long)s->short_evictions,
            (long long)json_integer_value(json_object_get(sum, "jobsEvictedAgain")),
            (long long)json_integer_value(json_object_get(sum, "mostEvictedJob")));
    json_decref(sum);
    int nq;
    waits_t *q = collect_waits(s, &nq);
    fprintf(f, "%-24s %6s %12s %12s %12s\n", "QUEUE", "JOBS", "WAIT p50", "p90", "p99");
    for (int k = 0; k < nq; k++) {
        char a[32], b[32], c[32];
        secs(a, sizeof a, pct(&q[k], 50));
        secs(b, sizeof b, pct(&q[k], 90));
        secs(c, sizeof c, pct(&q[k], 99));
        fprintf(f, "%-24s %6d %11ss %11ss %11ss\n", q[k].queue, q[k].n, a, b, c);
    }
    free_waits(q, nq);
    fprintf(f, "%-24s %10s %10s\n", "POOL", "GPU USED", "CPU USED");
    for (int i = 0; i < s->npools; i++) {
        const sim_pool_t *p = &s->pools[i];
        if (p->cap[SIM_CPU] <= 0 && p->cap[SIM_GPU] <= 0)
            continue;
        fprintf(f, "%-24s %9.1f%% %9.1f%%\n", p->name, 100 * pool_mean(s, p, SIM_GPU), 100 * pool_mean(s, p, SIM_CPU));
    }
    int shown = 0;
    for (int i = 0; i < s->w->njobs; i++) {
        if (s->js[i].start_at)
            continue;
        if (shown++ < 20)
            fprintf(f, "never started: %s/%s\n", s->w->jobs[i].ns, s->w->jobs[i].name);
    }
    if (shown > 20)
        fprintf(f, "never started: %d more (jobs.csv)\n", shown - 20);
    return ferror(f) ? -1 : 0;
}

/* ------------------------------------------------------------ HTML */

static void html_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static const char *const palette[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                       "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22" };
#define NPALETTE ((int)(sizeof palette / sizeof palette[0]))

typedef struct line {
    const double *x; /* n points */
    const double *y;
    int n;
    const char *label;
    int color, dashed, step;
} line_t;

#define CW 640
#define CH 220
#define ML 60
#define MR 10
#define MT 24
#define MB 30

static double px(double x, double xmax)
{
    return ML + (xmax > 0 ? x / xmax : 0) * (CW - ML - MR);
}

static double py(double y, double ymax)
{
    return CH - MB - (ymax > 0 ? y / ymax : 0) * (CH - MT - MB);
}

/* One chart: lines of (x, y) points over [0, xmax] x [0, ymax], a legend. */
static void svg_chart(FILE *f, const char *title, const line_t *l, int nl, double xmax, double ymax, const char *xlabel)
{
    if (xmax <= 0)
        xmax = 1;
    if (ymax <= 0)
        ymax = 1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", CW,
            CH + 16 * ((nl + 2) / 3), CW, CH + 16 * ((nl + 2) / 3));
    fprintf(f, "<text x=\"%d\" y=\"14\" class=\"t\">", ML);
    html_text(f, title);
    fputs("</text>\n", f);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"frame\"/>\n", ML, MT, CW - ML - MR,
            CH - MT - MB);
    for (int i = 0; i <= 4; i++) {
        double yv = ymax * i / 4, xv = xmax * i / 4;
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"ya\">%.4g</text>\n", ML - 4, py(yv, ymax) + 4, yv);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"xa\">%.4g</text>\n", px(xv, xmax), CH - MB + 14, xv);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"xa\">", CW - MR, CH - 2);
    html_text(f, xlabel);
    fputs("</text>\n", f);
    for (int k = 0; k < nl; k++) {
        const line_t *L = &l[k];
        if (L->n == 0)
            continue;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"",
                palette[L->color % NPALETTE], L->dashed ? " stroke-dasharray=\"5,3\"" : "");
        for (int i = 0; i < L->n; i++) {
            if (L->step && i > 0)
                fprintf(f, "%.1f,%.1f ", px(L->x[i], xmax), py(L->y[i - 1], ymax));
            fprintf(f, "%.1f,%.1f ", px(L->x[i], xmax), py(L->y[i], ymax));
        }
        if (L->step)
            fprintf(f, "%.1f,%.1f", px(xmax, xmax), py(L->y[L->n - 1], ymax));
        fputs("\"/>\n", f);
        int lx = ML + (k % 3) * 190, ly = CH + 4 + 16 * (k / 3);
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>", lx, ly + 6,
                lx + 18, ly + 6, palette[L->color % NPALETTE], L->dashed ? " stroke-dasharray=\"5,3\"" : "");
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"lg\">", lx + 22, ly + 10);
        html_text(f, L->label);
        fputs("</text>\n", f);
    }
    fputs("</svg>\n", f);
}

/* A series' column as x (seconds) and y arrays. */
static void series_xy(const sim_series_t *se, int col, double scale, double **x, double **y)
{
    *x = util_xcalloc((size_t)se->n + 1, sizeof(double));
    *y = util_xcalloc((size_t)se->n + 1, sizeof(double));
    for (int i = 0; i < se->n; i++) {
        (*x)[i] = (double)se->t[i] / 1000.0;
        (*y)[i] = se->v[(size_t)i * se->nv + col] * scale;
    }
}

static void html_queues(sim_t *s, FILE *f, int res, double xmax)
{
    static const char *const rname[] = { "GPUs", "CPU millicores", "memory MB" };
    fprintf(f, "<h2>Allocation and fair share per queue (%s)</h2>\n", rname[res]);
    if (!s->nqueues)
        fputs("<p>No Queue in the snapshot: no fair share to show.</p>\n", f);
    for (int i = 0; i < s->nqueues && i < HTML_MAX_CHARTS; i++) {
        const sim_series_t *se = &s->queues[i];
        double *x, *ya, *yf, ymax = 0;
        series_xy(se, res, 1, &x, &ya);
        free(x);
        series_xy(se, 3 + res, 1, &x, &yf);
        for (int k = 0; k < se->n; k++)
            ymax = fmax(ymax, fmax(ya[k], yf[k]));
        line_t l[2] = { { x, ya, se->n, "allocated", 0, 0, 1 }, { x, yf, se->n, "fair share", 1, 1, 1 } };
        char title[400];
        snprintf(title, sizeof title, "queue %s, pool %s", se->name, se->pool);
        svg_chart(f, title, l, 2, xmax, ymax * 1.1, "seconds");
        free(x);
        free(ya);
        free(yf);
    }
    if (s->nqueues > HTML_MAX_CHARTS)
        fprintf(f, "<p>%d more queue and pool pairs in result.json.</p>\n", s->nqueues - HTML_MAX_CHARTS);
}

static void html_pools(sim_t *s, FILE *f, int res, double xmax)
{
    fprintf(f, "<h2>Utilization per pool (%s)</h2>\n", res == SIM_GPU ? "GPUs" : "CPU");
    line_t *l = util_xcalloc((size_t)s->npools + 1, sizeof(*l));
    int nl = 0;
    for (int i = 0; i < s->npools; i++) {
        const sim_pool_t *p = &s->pools[i];
        if (p->cap[res] <= 0)
            continue;
        double *x, *y;
        series_xy(&p->series, res, 100.0 / p->cap[res], &x, &y);
        l[nl] = (line_t){ x, y, p->series.n, p->name, i, 0, 1 };
        nl++;
    }
    svg_chart(f, "used / allocatable, %", l, nl, xmax, 100, "seconds");
    for (int i = 0; i < nl; i++) {
        free((void *)l[i].x);
        free((void *)l[i].y);
    }
    free(l);
}

static void html_waits(sim_t *s, FILE *f)
{
    int nq;
    waits_t *q = collect_waits(s, &nq);
    double xmax = 0;
    line_t *l = util_xcalloc((size_t)nq + 1, sizeof(*l));
    for (int k = 0; k < nq; k++) {
        double *x = util_xcalloc((size_t)q[k].n + 1, sizeof(double)),
               *y = util_xcalloc((size_t)q[k].n + 1, sizeof(double));
        for (int i = 0; i < q[k].n; i++) {
            x[i] = (double)q[k].w[i] / 1000.0;
            y[i] = 100.0 * (i + 1) / q[k].n;
            xmax = fmax(xmax, x[i]);
        }
        l[k] = (line_t){ x, y, q[k].n, q[k].queue, k, 0, 1 };
    }
    fputs("<h2>Wait distribution</h2>\n<table><tr><th>queue</th><th>jobs started</th><th>p50 s</th><th>p90 "
          "s</th><th>p99 s</th></tr>\n",
          f);
    for (int k = 0; k < nq; k++) {
        char a[32], b[32], c[32];
        secs(a, sizeof a, pct(&q[k], 50));
        secs(b, sizeof b, pct(&q[k], 90));
        secs(c, sizeof c, pct(&q[k], 99));
        fputs("<tr><td>", f);
        html_text(f, q[k].queue);
        fprintf(f, "</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", q[k].n, a, b, c);
    }
    fputs("</table>\n", f);
    svg_chart(f, "jobs started within the wait, % (per queue)", l, nq, xmax * 1.05, 100, "wait, seconds");
    for (int k = 0; k < nq; k++) {
        free((void *)l[k].x);
        free((void *)l[k].y);
    }
    free(l);
    free_waits(q, nq);
}

static void html_jobs(sim_t *s, FILE *f)
{
    fputs("<h2>Jobs</h2>\n<table><tr><th>job</th><th>queue</th><th>pool</th><th>arrival s</th><th>start "
          "s</th><th>finish s</th><th>wait s</th><th>nodes</th><th>preempted</th></tr>\n",
          f);
    for (int i = 0; i < s->w->njobs && i < HTML_MAX_JOBS; i++) {
        const sim_job_t *j = &s->w->jobs[i];
        const sim_job_state_t *js = &s->js[i];
        char a[32], st[32] = "-", fi[32] = "-", wt[32] = "-";
        secs(a, sizeof a, js->arrival_at - s->o.start_wall_ms);
        if (js->start_at) {
            secs(st, sizeof st, js->start_at - s->o.start_wall_ms);
            secs(wt, sizeof wt, js->start_at - js->arrival_at);
        }
        if (js->finish_at)
            secs(fi, sizeof fi, js->finish_at - s->o.start_wall_ms);
        fputs("<tr><td>", f);
        html_text(f, j->ns);
        fputc('/', f);
        html_text(f, j->name);
        fputs("</td><td>", f);
        html_text(f, job_queue(j));
        fputs("</td><td>", f);
        html_text(f, job_pool(j));
        fprintf(f, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>", a, st, fi, wt);
        const char **nodes;
        int nn = job_nodes(s, i, &nodes);
        for (int k = 0; k < nn && k < 8; k++) {
            html_text(f, nodes[k]);
            fputc(' ', f);
        }
        if (nn > 8)
            fprintf(f, "(+%d)", nn - 8);
        free(nodes);
        fprintf(f, "</td><td>%d</td></tr>\n", js->preempted);
    }
    fputs("</table>\n", f);
    if (s->w->njobs > HTML_MAX_JOBS)
        fprintf(f, "<p>%d more jobs in jobs.csv.</p>\n", s->w->njobs - HTML_MAX_JOBS);
}

int sim_write_html(sim_t *s, FILE *f)
{
    int res = s->has_gpu ? SIM_GPU : SIM_CPU;
    double xmax = (double)(s->end_at - s->o.start_wall_ms) / 1000.0;
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ai-scheduler simulation</title>\n"
          "<style>body{font-family:sans-serif;margin:1em 2em}table{border-collapse:collapse;font-size:12px}"
          "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}svg{display:block;margin:8px 0}"
          ".t{font-size:13px;font-weight:bold}.ya{font-size:10px;text-anchor:end}.xa{font-size:10px;"
          "text-anchor:middle}.lg{font-size:11px}.frame{fill:none;stroke:#999}pre{background:#f6f6f6;padding:8px}"
          "</style></head><body>\n<h1>ai-scheduler simulation</h1>\n<pre>",
          f);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m) {
        sim_write_summary(s, m);
        fclose(m);
        html_text(f, buf ? buf : "");
        free(buf);
    }
    fprintf(f, "seed %llu</pre>\n", (unsigned long long)s->o.seed);
    html_queues(s, f, res, xmax);
    html_pools(s, f, res, xmax);
    html_waits(s, f);
    html_jobs(s, f);
    fputs("</body></html>\n", f);
    return ferror(f) ? -1 : 0;
}

/* ------------------------------------------------------------ files */

static int write_one(sim_t *s, const char *dir, const char *name, int (*fn)(sim_t *, FILE *), char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return util_errf(err, errlen, "%s: %s", path, strerror(errno));
    int rc = fn(s, f);
    if (fclose(f) != 0 || rc < 0)
        return util_errf(err, errlen, "%s: write failed", path);
    return 0;
}

int sim_write_events(sim_t *s, FILE *f)
{
    fputs("time,action,pod,uid,node,reason\n", f);
    if (s->events.len)
        fwrite(s->events.data, 1, s->events.len, f);
    return ferror(f) ? -1 : 0;
}

static int write_json(sim_t *s, FILE *f)
{
    json_t *doc = sim_result(s);
    int rc = json_dumpf(doc, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(doc);
    fputc('\n', f);
    return rc;
}

int sim_write_dir(sim_t *s, const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return util_errf(err, errlen, "%s: %s", dir, strerror(errno));
    if (write_one(s, dir, "jobs.csv", sim_write_csv, err, errlen) < 0 ||
        write_one(s, dir, "result.json", write_json, err, errlen) < 0 ||
        write_one(s, dir, "events.csv", sim_write_events, err, errlen) < 0 ||
        write_one(s, dir, "report.html", sim_write_html, err, errlen) < 0)
        return -1;
    return 0;
}
