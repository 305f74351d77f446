/* podwatch.h -- the dispatched pods of one member namespace, kept by a watch
 * on the job-uid label: a job's pod counts without a LIST per look, and a
 * kick to the controller when one of its pods changes.
 *
 * Thread-safe: the watch's thread updates, the controller's worker reads.
 * The kick runs on the watch's thread with no podwatch lock held. */
#ifndef AISCHED_DISPATCH_PODWATCH_H
#define AISCHED_DISPATCH_PODWATCH_H

#include <jansson.h>
#include "kube/client.h"

/* What a job's pods in a member say. */
typedef struct dsp_pods {
    int total, running, succeeded, failed; /* failed: bare pods (no controller) in phase Failed */
    int job_failed;                        /* a batch Job of ours has condition Failed=True */
    int watched;                           /* the pod counts came from the watch, not a LIST */
} dsp_pods_t;

/* Adds one pod (a v1 Pod object) to the counts: one rule for the LIST and
 * the watch. A pod being deleted is not counted. */
void dsp_pods_add(dsp_pods_t *p, json_t *pod);

typedef struct dsp_podwatch dsp_podwatch_t;
typedef void (*dsp_kick_fn)(void *ud, const char *job_uid);

/* Starts watching the labelled pods of ns through c (borrowed: it must
 * outlive the watch). kick may be NULL. Free with dsp_podwatch_free. */
dsp_podwatch_t *dsp_podwatch_new(kube_client_t *c, const char *ns, dsp_kick_fn kick, void *ud);
/* Stops the watch's thread, then frees. */
void dsp_podwatch_free(dsp_podwatch_t *w);

/* Adds job uid's pods to *out and sets out->watched: 0. -1 when the watch
 * is not current (not synced yet, or its LIST or WATCH failing: the member
 * is down, or watching pods is not allowed there): ask the member. */
int dsp_podwatch_count(dsp_podwatch_t *w, const char *uid, dsp_pods_t *out);

#endif
