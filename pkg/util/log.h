/* log.h -- leveled, thread-safe logging to stderr, one line per event.
 *
 * Lines look like: I1123 04:20:01.123456 sched.c:42] bound pod=ns/name node=n1
 * The level is process-wide (set once from -v at start); everything else is
 * per call. There is no rate limiting here: callers keep repeats quiet (a pod
 * that stays unschedulable logs at info once per new reason, then at debug). */
#ifndef AISCHED_LOG_H
#define AISCHED_LOG_H

#include <stdarg.h>

enum { LOG_LVL_ERROR = 0, LOG_LVL_WARN = 1, LOG_LVL_INFO = 2, LOG_LVL_DEBUG = 4, LOG_LVL_TRACE = 6 };

void log_set_verbosity(int v); /* -v N: errors, warnings and info always; 4+ debug, 6+ trace */
int log_get_verbosity(void);
/* Quiet: info lines dropped too (warnings and errors stay). For commands
 * that run the scheduler's code on a copy (whatif), where its info lines
 * describe the copy, not the cluster. */
void log_set_quiet(int quiet);
void log_msg(int level, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define log_enabled(lvl) ((lvl) <= LOG_LVL_INFO || (lvl) <= log_get_verbosity())
#define LOG_E(...)       log_msg(LOG_LVL_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define LOG_W(...)       log_msg(LOG_LVL_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define LOG_I(...)       log_msg(LOG_LVL_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define LOG_D(...)                                                                                                     \
    do {                                                                                                               \
        if (log_enabled(LOG_LVL_DEBUG))                                                                                \
            log_msg(LOG_LVL_DEBUG, __FILE__, __LINE__, __VA_ARGS__);                                                   \
    } while (0)
#define LOG_T(...)                                                                                                     \
    do {                                                                                                               \
        if (log_enabled(LOG_LVL_TRACE))                                                                                \
            log_msg(LOG_LVL_TRACE, __FILE__, __LINE__, __VA_ARGS__);                                                   \
    } while (0)

#endif
