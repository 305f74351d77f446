/* minruntime.h -- the minimum runtime's pure parts (minruntime.c): the
 * note a waiting pod gets of the pods a minimum runtime kept from being
 * its victims, and how a duration is said. The row that judges pods is
 * row.c. */
#ifndef AISCHED_MINRUNTIME_H
#define AISCHED_MINRUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "api/types.h"

/* Pods kept from being victims by a minimum runtime or a freezing window,
 * during one preemption. */
typedef struct minrt_note {
    int n;       /* distinct pods kept from being victims */
    char **uids; /* theirs (owned) */
    int cap;
    int never;     /* of them, never victims ("-1") */
    int64_t until; /* earliest wall ms one stops being protected; 0: none timed */
    char src[300]; /* what protects that one, e.g. queue "a": preemptMinRuntime 10m */
} minrt_note_t;

/* p is kept until until (wall ms; -1 never) by src; a pod noted twice counts once. */
void minrt_note_add(minrt_note_t *n, const pod_t *p, int64_t until, const char *src);
/* "preemption: 2 pods that could make room are protected by a minimum
 * runtime until <RFC 3339> (<src>)", or NULL when nothing was noted. */
char *minrt_note_text(const minrt_note_t *n);
void minrt_note_clear(minrt_note_t *n);
/* ms as a Queue or Pool spells it: "-1", "0", "2h", "10m", "30s", "1500ms". */
void minrt_format_duration(int64_t ms, char *out, size_t len);

#endif
