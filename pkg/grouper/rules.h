/* rules.h -- the workload table: which owner kinds make one gang of the
 * pods under them, and where each reads its minimum, queue and priority
 * class. Pure: objects in, verdicts out; no I/O but loading a file.
 *
 * A row names an owner kind by API group and kind (any version), and the
 * plural resource to GET it by. A row with no minMember is a pass-through:
 * the grouper walks through it to its own controller (ReplicaSet,
 * StatefulSet, Deployment, Job, CronJob, a Pod that owns a StatefulSet as
 * LeaderWorkerSet's leader does). A row with minMember is a gang kind.
 *
 * The file format (YAML or JSON), loaded over the defaults: a row of the
 * same group and kind replaces the default one, other rows are added, a
 * row with `disabled: true` removes one.
 *
 *   apiVersion: ai-scheduler.aibee.cn/v1alpha1
 *   kind: WorkloadGroups
 *   kinds:
 *   - group: kubeflow.org            # "" for the core group
 *     kind: PyTorchJob
 *     resource: pytorchjobs
 *     minMember:                      # the first alternative that reads wins
 *     - spec.runPolicy.schedulingPolicy.minAvailable
 *     - sum(spec.pytorchReplicaSpecs, replicas|1)
 *     when: ['spec.completionMode == "Indexed"', 'spec.parallelism == spec.completions']
 *     queue: [spec.runPolicy.schedulingPolicy.queue]        # string paths
 *     priorityClass: [spec.runPolicy.schedulingPolicy.priorityClass]
 *     groupBy: leaderworkerset.sigs.k8s.io/group-index   # one gang per value of this pod label
 *     members: {jobset.sigs.k8s.io/replicatedjob-name: node}  # only pods with these labels join
 *
 * minMember expressions (integers):
 *   expr   := term ('+' term)*          term := factor ('*' factor)*
 *   factor := INT | path ['|' INT] | 'sum(' path [',' expr] ')' | '(' expr ')'
 *   path   := seg ('.' seg)*            seg  := [A-Za-z0-9_-]+ | '*'
 * A path reads an integer (a missing one takes its '|' default, else the
 * alternative fails); '*' is every key of an object or element of an
 * array; sum(path) adds the integers found; sum(path, expr) evaluates expr
 * on each element of the array (or value of the object) at path. */
#ifndef AISCHED_GROUPER_RULES_H
#define AISCHED_GROUPER_RULES_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "api/labels.h"

typedef struct wl_table wl_table_t;
typedef struct wl_row wl_row_t;

/* The default rows (docs/design.md's table plus the pass-through kinds). */
wl_table_t *wl_table_new_default(void);
void wl_table_free(wl_table_t *t);
/* Loads a file (YAML or JSON) over t. 0, or -1 with "FILE: message" in
 * err and t unchanged. */
int wl_table_load_file(wl_table_t *t, const char *path, char *err, size_t errlen);
/* Same from a file's text (len bytes, YAML or JSON); name for messages. */
int wl_table_load_string(wl_table_t *t, const char *text, size_t len, const char *name, char *err, size_t errlen);
/* Same from a parsed document ({kinds: [...]}); name for messages. */
int wl_table_load_json(wl_table_t *t, json_t *doc, const char *name, char *err, size_t errlen);

int wl_table_nrows(const wl_table_t *t);
const wl_row_t *wl_table_row(const wl_table_t *t, int i);
/* The row for an ownerReference (apiVersion "group/version" or "v1"; kind),
 * or NULL: a kind the walk stops at. */
const wl_row_t *wl_table_find(const wl_table_t *t, const char *api_version, const char *kind);

const char *wl_row_group(const wl_row_t *r);
const char *wl_row_kind(const wl_row_t *r);
const char *wl_row_resource(const wl_row_t *r);
/* 1: a gang kind (has minMember); 0: pass-through. */
int wl_row_is_gang(const wl_row_t *r);
/* The pod label whose value splits the owner's pods into gangs, or NULL. */
const char *wl_row_group_by(const wl_row_t *r);
/* Whether a pod with these labels joins the row's gang (members). */
int wl_row_admits(const wl_row_t *r, const labels_t *pod_labels);

/* What a gang row reads from its owner object. */
typedef struct wl_verdict {
    int gang;             /* 1: the pods form a gang of min_member */
    int32_t min_member;   /* > 0 when gang */
    char *queue;          /* owner's queue label, else a queue path; NULL */
    char *priority_class; /* a priorityClass path's value; NULL */
    char *why;            /* gang 0 on a gang row: why not (a when failed, no minimum read) */
    int unmet;            /* gang 0 because a `when` does not hold: the kind's ordinary
                           * non-gang case (a Job that is not Indexed), said in no event */
} wl_verdict_t;
/* Evaluates r (a gang row) on owner. Returns 0 (out filled; free with
 * wl_verdict_clear). The queue label is read from owner's labels
 * (resource.aibee.cn/queue, then kai.scheduler/queue) before the row's
 * paths. */
int wl_row_eval(const wl_row_t *r, json_t *owner, wl_verdict_t *out);
void wl_verdict_clear(wl_verdict_t *v);

/* The API path of an object of row r's kind: /apis/GROUP/VERSION/namespaces/NS/RESOURCE/NAME,
 * or /api/v1/... for the core group (version from api_version). Names are
 * path-escaped. Caller frees. */
char *wl_object_path(const wl_row_t *r, const char *api_version, const char *ns, const char *name);

/* The PodGroup name for a gang: "KIND-NAME" or "KIND-NAME-SUFFIX" in
 * lowercase, a valid label value and DNS label (at most 63 characters;
 * longer ones are cut and end in a hash of the whole). Caller frees. */
char *wl_group_name(const char *kind, const char *name, const char *suffix);

/* Evaluates one minMember expression on obj (for tests and the row
 * loader): 0 and *out, or -1 (missing path, bad syntax: err says which). */
int wl_expr_eval(const char *expr, json_t *obj, int64_t *out, char *err, size_t errlen);

#endif
