/* metrics.h -- a thread-safe Prometheus registry: counters, gauges and
 * histograms, each a family of series keyed by a preformatted label string
 * ('result="scheduled",pool="gpu"', or NULL/"" for none), rendered in the
 * Prometheus text exposition format (version 0.0.4).
 *
 *   metrics_t *r = metrics_new();
 *   metric_t *att = metrics_counter(r, "ai_scheduler_schedule_attempts_total", "Scheduling attempts by result.");
 *   metric_inc(att, "result=\"scheduled\"");
 *   char *text = metrics_render(r);   ... free(text);
 *
 * Ownership: the registry owns its families; metric_t handles stay valid
 * until metrics_free(). Label strings are copied. Every call is safe from
 * any thread. Values coming from users (pool names, namespaces) must be
 * escaped: build label strings with metrics_labels(). */
#ifndef AISCHED_METRICS_H
#define AISCHED_METRICS_H

#include <stddef.h>

typedef struct metrics metrics_t;
typedef struct metric metric_t;

typedef enum { METRIC_COUNTER = 0, METRIC_GAUGE = 1, METRIC_HISTOGRAM = 2 } metric_type_t;

metrics_t *metrics_new(void);
void metrics_free(metrics_t *r);

/* Registration. Registering a name again returns the existing family when
 * the type (and for histograms the buckets) match, else NULL; NULL also for
 * invalid names ([a-zA-Z_:][a-zA-Z0-9_:]*). Histogram buckets are upper
 * bounds, strictly increasing, +Inf implied; at most METRICS_MAX_BUCKETS. */
#define METRICS_MAX_BUCKETS 32
metric_t *metrics_counter(metrics_t *r, const char *name, const char *help);
metric_t *metrics_gauge(metrics_t *r, const char *name, const char *help);
metric_t *metrics_histogram(metrics_t *r, const char *name, const char *help, const double *buckets, int nbuckets);

/* Updates; m may be NULL (no-op) so callers need not check registration.
 * Counters ignore negative additions; observe only on histograms, set only
 * on gauges (mismatches are ignored). */
void metric_inc(metric_t *m, const char *labels);
void metric_add(metric_t *m, const char *labels, double v);
void metric_set(metric_t *m, const char *labels, double v);
void metric_observe(metric_t *m, const char *labels, double v);
/* Drops one series (e.g. a deleted pool); labels NULL is the unlabelled
 * series. metric_clear drops all of them. */
void metric_remove(metric_t *m, const char *labels);
void metric_clear(metric_t *m);

/* Current value (counter/gauge) or observation count (histogram); 0 for an
 * unknown series. For tests and for the scheduler's own decisions. */
double metric_value(metric_t *m, const char *labels);
/* Histogram sum of observations, 0 for an unknown series. */
double metric_sum(metric_t *m, const char *labels);

/* Called at the start of each metrics_render(), in registration order, to
 * refresh gauges computed on demand (queue lengths, pool usage). */
typedef void (*metrics_collect_fn)(metrics_t *r, void *ud);
void metrics_on_collect(metrics_t *r, metrics_collect_fn fn, void *ud);

/* The whole registry in text format; the caller frees. */
char *metrics_render(metrics_t *r);

/* Builds 'k1="v1",k2="v2"' into buf from NULL-terminated key, value pairs,
 * escaping \, " and newline in values. Returns buf; truncates safely (a
 * truncated result never leaves an open quote). */
char *metrics_labels(char *buf, size_t n, ...);

#endif
