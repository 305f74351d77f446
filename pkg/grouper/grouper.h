/* grouper.h -- gangs derived from the workload that owns the pods: a pod
 * of ours with no pod-group label is kept out of the scheduling queues
 * while its owners are read (ownerReferences, up to a bounded depth); when
 * the topmost gang row of the table (rules.h) is found, a PodGroup owned
 * by that owner is created (labelled app.kubernetes.io/managed-by:
 * ai-scheduler) and the pod is labelled to it; the gang machinery does the
 * rest. A pod under no gang row is let in as a pod of its own. The queue
 * label and the pool annotation of the top owner are copied onto a pod
 * that has none of its own.
 *
 * Threads: one worker thread does every API call; grouper_hold and
 * grouper_forget are called from informer and pool threads and only take
 * the grouper's mutex (a leaf: nothing is called out under it). */
#ifndef AISCHED_GROUPER_H
#define AISCHED_GROUPER_H

#include <stdint.h>

#include "api/types.h"
#include "grouper/rules.h"
#include "kube/client.h"

#define GROUPER_MANAGED_LABEL "app.kubernetes.io/managed-by"
#define GROUPER_MANAGED_VALUE "ai-scheduler"

typedef struct grouper grouper_t;

typedef struct grouper_hooks {
    void *ud;
    /* The pod is decided and needs no write: let it into the queues if it
     * is still pending (grouper_hold now returns 0 for it). Worker thread,
     * no grouper lock held. */
    void (*release)(void *ud, const char *uid);
    /* A Warning/Normal event on a pod (the scheduler's writer). */
    void (*pod_event)(void *ud, const char *ns, const char *name, const char *uid, const char *type, const char *reason,
                      const char *message);
    /* Not the leader: write nothing now (decisions wait). */
    int (*fenced)(void *ud);
} grouper_hooks_t;

typedef struct grouper_opts {
    int max_depth;    /* owners followed above the pod (8) */
    int owner_ttl_s;  /* a gang owner read is reused this long (10) */
    int single_ttl_s; /* an owner that leads to no gang: this long (300) */
    int refresh_s;    /* managed PodGroups' owners re-read (elastic resize) every (30; 0: each housekeep) */
    int max_owners;   /* owner cache bound, and the decision cache's (100000) */
} grouper_opts_t;
void grouper_opts_default(grouper_opts_t *o);

/* Takes table. kc is borrowed (outlives the grouper). */
grouper_t *grouper_new(kube_client_t *kc, wl_table_t *table, const grouper_opts_t *o, const grouper_hooks_t *h);
int grouper_start(grouper_t *g);
void grouper_stop(grouper_t *g);
void grouper_free(grouper_t *g);

/* PreEnqueue: 1 keeps a pending pod of ours out of the queues while it is
 * being grouped (the work is queued to the worker); 0 lets it in: it names
 * a pod group, has no controller, or its owner is decided and the pod
 * carries what the decision wrote. A pod let in is not held again until
 * grouper_forget, however old the decision grows: it waits in a queue
 * whose age and attempts it would lose. Cheap on the hot path: a pod
 * whose controller is known to lead to no gang costs a hash lookup (and
 * a record, once). */
int grouper_hold(grouper_t *g, const pod_t *pod);
/* The pod is gone, or bound: never pending again. */
void grouper_forget(grouper_t *g, const char *uid);
/* The PodGroup informer's view (obj NULL: deleted): a PodGroup labelled
 * managed by ai-scheduler whose controller is a gang row's kind is tracked
 * for refresh (so a restart keeps resizing the groups made before it). */
void grouper_podgroup(grouper_t *g, const char *ns, const char *name, json_t *obj);
/* Housekeeping, once a second: re-reads due owners of managed PodGroups
 * (queued to the worker) so a resized owner updates its PodGroup's
 * minMember. */
void grouper_housekeep(grouper_t *g);

typedef struct grouper_stats {
    unsigned long pods_grouped, pods_single, groups_created, groups_resized, owner_reads, errors;
    int owners_cached, pods_waiting;
    int work_queued; /* items queued to the worker or being done (0: idle) */
} grouper_stats_t;
void grouper_get_stats(grouper_t *g, grouper_stats_t *st);

#endif
