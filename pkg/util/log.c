/* log.c -- klog-style leveled logging to stderr, one write per line. */
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

/* The one process-wide setting; atomic so a reader never sees a torn int. */
static int verbosity;

void log_set_verbosity(int v)
{
    __atomic_store_n(&verbosity, v < 0 ? 0 : v, __ATOMIC_RELAXED);
}

static int quiet;

void log_set_quiet(int q)
{
    __atomic_store_n(&quiet, q != 0, __ATOMIC_RELAXED);
}

int log_get_verbosity(void)
{
    return __atomic_load_n(&verbosity, __ATOMIC_RELAXED);
}

static char level_char(int level)
{
    switch (level) {
    case LOG_LVL_ERROR: return 'E';
    case LOG_LVL_WARN: return 'W';
    default: return 'I'; /* klog prints V-levels as info */
    }
}

static const char *base_name(const char *file)
{
    const char *slash = file ? strrchr(file, '/') : NULL;
    return slash ? slash + 1 : (file ? file : "?");
}

void log_msg(int level, const char *file, int line, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    if (level == LOG_LVL_INFO && __atomic_load_n(&quiet, __ATOMIC_RELAXED))
        return;

    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    time_t secs = tv.tv_sec;
    localtime_r(&secs, &tm);

    char stack[1024];
    char *msg = stack;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(stack, sizeof stack, fmt, ap);
    va_end(ap);
    if (n < 0) {
        stack[0] = '\0';
        n = 0;
    } else if ((size_t)n >= sizeof stack) {
        /* A long message (a big selector, a JSON dump): format again on the heap
         * rather than truncate it. */
        char *heap = malloc((size_t)n + 1);
        if (heap) {
            va_start(ap, fmt);
            vsnprintf(heap, (size_t)n + 1, fmt, ap);
            va_end(ap);
            msg = heap;
        } else {
            n = (int)sizeof stack - 1;
        }
    }
    /* Callers sometimes end with '\n'; the line terminator is ours. */
    while (n > 0 && msg[n - 1] == '\n')
        n--;

    /* One fprintf: stdio locks the stream per call, so lines never interleave. */
    fprintf(stderr, "%c%02d%02d %02d:%02d:%02d.%06ld %s:%d] %.*s\n", level_char(level), tm.tm_mon + 1, tm.tm_mday,
            tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec, base_name(file), line, n, msg);
    if (msg != stack)
        free(msg);
}
