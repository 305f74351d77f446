/* row.h -- the minimum-runtime row of the scheduling cycle (row.c): how
 * long a running pod is safe from preemption or reclaim (a queue's or
 * pool's preemptMinRuntime / reclaimMinRuntime, lowered by the pod's
 * annotation) and an elastic gang's freezing window, as preemption's
 * victims point asks it (protect), with the note a waiting pod gets. The
 * row keeps no room: it reaches the core only through the services table
 * (framework/services.h); its note for a set is in the set's slot. */
#ifndef AISCHED_MINRUNTIME_ROW_H
#define AISCHED_MINRUNTIME_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "api/types.h"
#include "framework/services.h"
#include "minruntime/minruntime.h"
#include "scheduler/extension.h"

/* A pod's applicable minimum of kind (FS_MINRT_PREEMPT or
 * FS_MINRT_RECLAIM) in ms (0 none, -1 never): its queue's (or the nearest
 * ancestor's) field, else its home pool's default, lowered (never raised)
 * by its annotation; src says which. */
int64_t minrt_applicable(const sched_row_t *row, const pod_t *p, int kind, char *src, size_t srclen);
/* When running pod p stops being protected from kind (wall ms), -1 never,
 * 0 when it is not protected now: past its lifetime, or older than the
 * minimum (a gang member's age counts from its gang's last start), and
 * not an elastic surplus inside its gang's freezing window. */
int64_t minrt_protected_until(const sched_row_t *row, const pod_t *p, int kind, int64_t now_wall, char *src,
                              size_t srclen);
/* The end (wall ms) of gang ns/group's freezing window, 0 if none; member
 * is any member (its queue gives the default window). Published
 * (minrt_row_publish) for the services' freeze_end. */
int64_t minrt_freeze_end(const sched_row_t *row, const char *ns, const char *group, const pod_t *member, char *src,
                         size_t srclen);

/* publish: the freezing window's end, for the gang row (services). */
void minrt_row_publish(const sched_row_t *row, sched_published_t *pub);
/* protect: 1 when q's victim is protected from kind now (noted in
 * q->set's slot when there is a set). */
int minrt_row_protect(const sched_row_t *row, const sched_victim_q_t *q, int kind);
/* kept: the set's note (what protect kept) on the set when no room was
 * made, its text in *text; the note is forgotten. */
void minrt_row_kept(const sched_row_t *row, pod_set_t *set, int made, char **text);
/* victims_taken: an elastic gang whose surplus goes was resized (its
 * freezing window starts again). */
void minrt_row_victims_taken(const sched_row_t *row, pod_t *const *victims, int n);
/* end: a note no kept point said is freed. */
void minrt_row_end(const sched_row_t *row, pod_set_t *set);

#endif
