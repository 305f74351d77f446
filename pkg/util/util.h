/* util.h -- small helpers shared by every module: time, strings, a growable
 * string buffer. No global state but the clock override. */
#ifndef AISCHED_UTIL_H
#define AISCHED_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <pthread.h>
#include <time.h>

int64_t util_now_ms(void);                                  /* CLOCK_MONOTONIC, milliseconds */
int64_t util_now_us(void);                                  /* CLOCK_MONOTONIC, microseconds */
int64_t util_wall_ms(void);                                 /* CLOCK_REALTIME, milliseconds */
void util_rfc3339(int64_t wall_ms, char *buf, size_t n);    /* "2026-11-23T04:20:01Z" */
void util_rfc3339_ms(int64_t wall_ms, char *buf, size_t n); /* "2026-11-23T04:20:01.250Z" */
/* Parses "2026-11-23T04:20:01Z" (fraction and offset allowed) to wall ms; -1 on error. */
int64_t util_parse_rfc3339(const char *s);
void util_sleep_ms(int64_t ms);
/* A virtual clock for the whole process (the sandbox's): util_now_ms,
 * util_now_us and util_wall_ms ask mono_ms and wall_ms (given ud) instead
 * of the system; NULLs restore the system clocks. Not thread-safe: set it
 * while no other thread reads the clock. util_deadline and util_sleep_ms
 * keep the system clock (they wait for real). */
typedef int64_t (*util_clock_fn)(void *ud);
void util_clock_override(util_clock_fn mono_ms, util_clock_fn wall_ms, void *ud);
/* A Go duration ("90s", "1m30s", "2h", "1500ms", or bare seconds "15") in
 * ms: 0, or -1 when malformed, negative, finer than a millisecond or over
 * about 31 years. */
int util_parse_duration_ms(const char *s, int64_t *ms);
/* A minimum runtime (KAI-Scheduler's preemptMinRuntime): a duration, "0"
 * (no protection) or "-1" (never a victim: *ms = -1). */
int util_parse_min_runtime(const char *s, int64_t *ms);
/* *ts = now on clock + ms: the deadline for pthread_cond_timedwait, whose
 * condition variable must use that clock (CLOCK_REALTIME unless set). */
void util_deadline(clockid_t clock, int64_t ms, struct timespec *ts);
/* A condition variable whose timed waits run on CLOCK_MONOTONIC (deadlines
 * from util_deadline(CLOCK_MONOTONIC, ...)): a wall clock that jumps
 * neither stretches nor cuts a wait. */
void util_cond_init_monotonic(pthread_cond_t *cv);

/* Allocators that abort on OOM, as does every util_x* and util_strdup (NULL
 * gives ""): the scheduler does not try to run on after its own allocation
 * failed. */
char *util_strdup(const char *s);
char *util_strndup(const char *s, size_t n);
/* The first n bytes of s with %XX escapes decoded (malloc'd), and '+' as a
 * space when plus_is_space (a query string's values). What is not a whole
 * escape of two hex digits, and %00 (a C string cannot hold it), is kept
 * as written. */
char *util_urldecode(const char *s, size_t n, int plus_is_space);
/* A copy of s, or NULL when s is NULL (where NULL means "absent"). */
char *util_strdup_or_null(const char *s);
void *util_xmalloc(size_t n);
void *util_xcalloc(size_t n, size_t m);
void *util_xrealloc(void *p, size_t n);

/* Growable NUL-terminated buffer. Zero-initialise, then append; the caller
 * frees ->data (or calls sbuf_free). */
typedef struct sbuf {
    char *data;
    size_t len, cap;
} sbuf_t;
void sbuf_append(sbuf_t *b, const char *s, size_t n);
void sbuf_puts(sbuf_t *b, const char *s);
void sbuf_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sbuf_reset(sbuf_t *b);
void sbuf_free(sbuf_t *b);

/* Names the calling thread for top -H, perf and gdb (cut to the kernel's
 * 15 characters); best effort. */
void util_thread_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* URL-escape for path segments and query values; caller frees. */
char *util_urlencode(const char *s);

/* Formats into a caller's error buffer; a no-op when err is NULL or errlen 0.
 * Always returns -1 so parsers can `return util_errf(err, errlen, ...)`. */
int util_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Command-line option argv[*i]: "--flag VALUE", "--flag=VALUE", "-o VALUE"
 * or "-oVALUE" (shrt may be NULL). Returns the value (advancing *i past a
 * separate one), or NULL when argv[*i] is not this option; *missing is set
 * when it is but no value follows. */
const char *util_opt_value(int argc, char **argv, int *i, const char *lng, const char *shrt, int *missing);

#endif
