/* controller.h -- the MultiClusterJob controller (`ai-scheduler dispatch`):
 * watches multiclusterjobs.resource.aibee.cn in the hub, submits each job to
 * every member cluster, observes where it runs, applies the first-available
 * rule (decide.h), cancels the losers, and cleans every member up before the
 * hub object goes (finalizer). Everything it knows is in the job's .status,
 * so a restarted or failed-over controller continues where the last one was.
 *
 * One informer thread and opts.workers worker threads, each taking the job
 * due first; reconciles of one job never overlap, those of different jobs
 * do, so a member that is slow to answer holds up one worker, not every
 * job. Member requests are bounded by opts.member_timeout_s.
 *
 * Ownership: hub and metrics are borrowed and must outlive the controller. */
#ifndef AISCHED_DISPATCH_CONTROLLER_H
#define AISCHED_DISPATCH_CONTROLLER_H

#include <stddef.h>
#include <jansson.h>
#include "kube/client.h"
#include "server/metrics.h"

#define DSP_GROUP     "resource.aibee.cn"
#define DSP_VERSION   "v1alpha1"
#define DSP_FINALIZER "resource.aibee.cn/multiclusterjob-cleanup"

typedef struct dsp_controller dsp_controller_t;

#define DSP_DEFAULT_WORKERS 4
/* A job being deleted whose member has no credentials left (its Secret is
 * gone and none are kept, e.g. after a restart) keeps its finalizer this
 * long after deletionTimestamp, then loses it with a Warning. */
#define DSP_DEFAULT_CLEANUP_GRACE_S 60
#define DSP_MAX_WORKERS             64

typedef struct dsp_opts {
    double poll_s;        /* how often a racing job's members are looked at (1) */
    int workers;          /* reconciles at once (DSP_DEFAULT_WORKERS; at most DSP_MAX_WORKERS) */
    int member_timeout_s; /* per member request (10) */
    int cleanup_grace_s;  /* DSP_DEFAULT_CLEANUP_GRACE_S when 0 */
    const char *identity; /* for events */
    metrics_t *metrics;   /* optional */
    /* Fencing: asked before every write; 0 stops writes (lease lost). */
    int (*may_act)(void *ud);
    void *may_act_ud;
} dsp_opts_t;

dsp_controller_t *dsp_controller_new(kube_client_t *hub, const dsp_opts_t *o, char *err, size_t errlen);
int dsp_controller_start(dsp_controller_t *c, char *err, size_t errlen);
/* 1 once the first LIST of jobs has been seen. */
int dsp_controller_synced(dsp_controller_t *c);
/* Refreshes ai_scheduler_dispatch_jobs{phase} (a count over every job):
 * for a metrics_on_collect hook, so it costs nothing between scrapes. */
void dsp_controller_collect(dsp_controller_t *c);
/* The dashboard's /api/v1/multicluster answer (a new reference):
 * {"served":true,"jobs":[{"namespace","name","phase","winner","members":
 * [{"cluster","state","message"}]}]} from the jobs' .status as last seen,
 * in namespace/name order; names, states and messages only. */
json_t *dsp_controller_dashboard(dsp_controller_t *c);
void dsp_controller_stop(dsp_controller_t *c); /* joins the threads */
void dsp_controller_free(dsp_controller_t *c);

#endif
