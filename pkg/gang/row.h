/* row.h -- the gang row of the scheduling cycle (pkg/gang/row.c): a gang
 * member's set becomes the gang's minimum, placed all or nothing; the
 * backfill gate; victims taken a gang whole; PodGroup events, status,
 * timeouts and stale gangs. Its room is made by gang_row_init; it reaches
 * the core only through the services table (framework/services.h). */
#ifndef AISCHED_GANG_ROW_H
#define AISCHED_GANG_ROW_H

#include "gang/gang.h"
#include "scheduler/extension.h"

void *gang_row_init(const sched_services_t *svc, void *core);
void gang_row_fini(void *self);
/* publish: the gang store (PodGroups and members) the core reads. */
void gang_row_publish(const sched_row_t *row, sched_published_t *pub);
/* gate: a gang member's set becomes the gang's pending members (its turn
 * taken), the first of them its minimum; a lone pod or an elastic member
 * is held behind a waiting gang (the backfill gate). */
ext_rc_t gang_row_gate(const sched_row_t *row, pod_set_t *set);
/* pre_place: the gang's minResources must be free in its pool. */
ext_rc_t gang_row_pre_place(const sched_row_t *row, pod_set_t *set);
/* commit: the gang's placement said (events, stats) and its clock stopped. */
void gang_row_commit(const sched_row_t *row, pod_set_t *set);
/* post_filter, last: the minimum waits, holding back backfill. */
ext_rc_t gang_row_post_filter(const sched_row_t *row, pod_set_t *set);
/* report: the reason on the PodGroup too; a held minimum gives back room. */
void gang_row_report(const sched_row_t *row, pod_set_t *set, const char *msg);
/* end: the gang's turn and snapshot let go. */
void gang_row_end(const sched_row_t *row, pod_set_t *set);
/* nominee: a gang's nominated room is free for its own members. */
int gang_row_nominee(const sched_row_t *row, const pod_t *nominee, const pod_t *pod, int pool, int same_side);
/* housekeep: PodGroup status, timeouts, stale gangs. */
void gang_row_housekeep(const sched_row_t *row);
/* expand: a candidate's gang victims bring their whole gang. */
int gang_row_expand(const sched_row_t *row, void *vc, const pod_t *preemptor, preempt_candidate_t *cands, int n);
/* mates: a victim's gang goes whole (a surplus member alone);
 * minimum_member: a bound member among its gang's minimum. */
int gang_row_mates(const sched_row_t *row, const pod_t *victim, pod_t ***out);
int gang_row_minimum_member(const sched_row_t *row, const pod_t *pod);
/* group_class: the class a member's PodGroup preempts with (owned), or NULL. */
char *gang_row_group_class(const sched_row_t *row, const pod_t *pod);
/* preempting: a gang's preemption was committed (log, event, stat). */
void gang_row_preempting(const sched_row_t *row, const pod_set_t *set, const char *pool, int nvictims, int need);
json_t *gang_row_record(const sched_row_t *row, const pod_set_t *set, const char *behind);
/* absent: why a PodGroup has no decision record (kind "podgroup"). */
char *gang_row_absent(const sched_row_t *row, const char *kind, const char *ns, const char *name);
/* The set's PodGroup as the row keeps it in its slot (published:
 * sched_published_t.set_gang), or NULL. gang_row_hold puts g there (the
 * gate does; a test may): owned, it is freed by gang_row_end. */
const gang_snap_t *gang_row_set_gang(const sched_row_t *row, const pod_set_t *set);
void gang_row_hold(const sched_row_t *row, pod_set_t *set, gang_snap_t *g, int owned);
/* timed: a stale gang waits out its grace. */
int gang_row_timed(const sched_row_t *row);
/* pod_seen, pod_deleted: the store follows the members (every pod
 * event, before the queues hear of it). */
void gang_row_pod_seen(const sched_row_t *row, pod_t *pod);
void gang_row_pod_deleted(const sched_row_t *row, const pod_t *pod);
/* The PodGroup watch's handler (ud: the row's room). */
void gang_row_on_podgroup(void *ud, kube_event_type_t type, const char *key, json_t *obj);

#endif
