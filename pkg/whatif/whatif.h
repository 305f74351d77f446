/* whatif.h -- "would these pods fit?", answered by the scheduler's own
 * cycle on a copy of the cluster (pkg/sandbox): the copy is edited first
 * (nodes added from a template or removed, queue quotas set), the pods are
 * submitted to it, the sandbox runs until they are placed or nothing more
 * can happen within a virtual horizon, and its actions become the answer.
 * Nothing is ever written: the sandbox has no API server.
 *
 * The edits and the answer are pure functions on jansson values, tested
 * without a sandbox. */
#ifndef AISCHED_WHATIF_H
#define AISCHED_WHATIF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "sandbox/sandbox.h"
#include "scheduler/scheduler.h"

/* --set-quota QUEUE=gpu:12,cpu:8,memory:64Gi: a queue's deserved quota per
 * resource. gpu in GPUs, cpu and memory as Kubernetes quantities ("8" is 8
 * cores, "500m", "64Gi"), written in the Queue API's units (GPUs,
 * millicores, MB). */
typedef struct whatif_quota {
    char *queue;
    json_t *val[3]; /* gpu, cpu, memory: the new quota, or NULL to leave */
} whatif_quota_t;

int whatif_parse_quota(const char *arg, whatif_quota_t *out, char *err, size_t errlen);
void whatif_quota_free(whatif_quota_t *q);

/* --- edits of the copy's items (an array of objects, as a snapshot's) --- */

/* Node name gone. Pods bound there: a controller's (ownerReferences with
 * controller: true, not a DaemonSet) come back pending as the replacement
 * its controller would create; the others go with the node. Its CSINode
 * goes too. *requeued and *dropped count them. -1 when there is no such
 * node. */
int whatif_remove_node(json_t *items, const char *name, int *requeued, int *dropped, char *err, size_t errlen);

/* n copies of the Node tmpl (borrowed), named "<template name>-whatif-<i>"
 * (or "whatif-node-<i>") with kubernetes.io/hostname set to that name,
 * without the template's uid, resourceVersion and taint of being new. -1
 * when tmpl is not a Node with status.allocatable, or a name is taken. */
int whatif_add_nodes(json_t *items, const json_t *tmpl, int n, char *err, size_t errlen);

/* The Queue's spec.resources.<r>.quota (and every spec.pools.*.resources.<r>.quota
 * it sets, which would win) replaced. -1 when no Queue has that name, or
 * when its limit would be below the new quota (the Queue would be invalid). */
int whatif_set_quota(json_t *items, const whatif_quota_t *q, char *err, size_t errlen);

/* The leader's /debug/state over a LIST: each assumed pod bound to its
 * node, each nomination in status.nominatedNodeName. Pods no longer listed
 * are skipped. Returns how many pods it changed, -1 for a malformed state. */
int whatif_overlay(json_t *items, const json_t *state, char *err, size_t errlen);

/* The file's objects (borrowed) made submissions, a new array: Pods and
 * PodGroups, a MultiClusterJob rendered for member (NULL: its first
 * cluster) through pkg/dispatch/template.c. Each gets a namespace
 * ("default" when none), a name (generateName completed), a uid, a
 * creation time (now_ms), and, for a Pod without one, scheduler_name; a
 * Pod's spec.priority (and preemptionPolicy) comes from its PriorityClass
 * among items, or the global default, as admission would set it.
 * PodGroups come first. -1 for another kind, a name the copy already
 * has or a PriorityClass it does not (the API server would refuse those). */
json_t *whatif_submissions(const json_t *objs, const json_t *items, const char *member, const char *scheduler_name,
                           int64_t now_ms, char *err, size_t errlen);

/* --- the answer --- */

typedef struct whatif_result whatif_result_t;

/* subs: the submissions (borrowed; must outlive the result). */
whatif_result_t *whatif_result_new(const json_t *subs);
void whatif_result_free(whatif_result_t *r);
/* A sandbox action (an sb_action_fn's argument). */
void whatif_result_action(whatif_result_t *r, const sb_action_t *a);
/* Whether every submitted pod is bound (the run may stop). */
int whatif_result_done(const whatif_result_t *r);
/* The decision record of a pending submission (scheduler_explain's), for
 * waitingBehind; stolen. */
void whatif_result_explain(whatif_result_t *r, const char *ns, const char *name, json_t *record);

/* The answer: {state, fits, placements [{pod, node, borrowedFrom}],
 * pending [{pod, reason, message}], victims [{pod, node, why, by}],
 * borrowedFrom [pools], waitingBehind, reason, virtualSeconds, notes}.
 * fits: every submitted pod bound, or for a submitted PodGroup at least its
 * minMember of its pods. reason: the FailedScheduling message of the first
 * pending pod (null when it fits). A new reference. */
json_t *whatif_result_json(const whatif_result_t *r, const char *state, double virtual_s, const json_t *notes);

/* The answer as text. 0, or -1 if writing failed. */
int whatif_print_text(FILE *out, const json_t *answer);

/* --- the run --- */

typedef struct whatif_run_opts {
    const scheduler_opts_t *sched; /* from the config */
    int64_t horizon_ms;            /* virtual time the run may take after the first pass (default 120 s) */
    uint64_t seed;
} whatif_run_opts_t;

/* items (borrowed) into a sandbox, then subs, run and advanced until every
 * submitted pod is bound, nothing is due or the horizon is passed. The
 * answer as whatif_result_json, or NULL with err. */
json_t *whatif_run(const json_t *items, const json_t *subs, const whatif_run_opts_t *o, const char *state,
                   const json_t *notes, char *err, size_t errlen);

#endif
