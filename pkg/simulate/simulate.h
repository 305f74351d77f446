/* simulate.h -- a workload run through the scheduler in virtual time: the
 * clock jumps to the next arrival, pod finish or scheduler wake; arrivals
 * are applied (PodGroup, then pods), finished pods deleted, evicted pods
 * recreated pending as their controller would, and every decision is the
 * scheduler's own, made on a copy of the cluster (pkg/sandbox).
 *
 *   sim_t *s = sim_new(&opts, &w);       workload borrowed for s's life
 *   sim_load(s, snapshot)                the cluster (pools, nodes, ...)
 *   sim_run(s)                           until every job finished, or until
 *   sim_write_*(s, ...)                  jobs.csv, result.json, report.html
 *
 * The scheduler is reached through sim_backend_t: the sandbox in the
 * command (sim_backend_sandbox), a fake in the unit tests. Deterministic:
 * the same inputs give the same calls in the same order, and the outputs
 * hold no wall-clock time and format every number the same way. */
#ifndef AISCHED_SIMULATE_H
#define AISCHED_SIMULATE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "sandbox/sandbox.h"
#include "scheduler/scheduler.h"
#include "simulate/workload.h"

/* What the loop needs of the scheduler on its copy (sandbox.h's calls). */
typedef struct sim_backend {
    void *ctx;
    int (*apply)(void *ctx, const char *type, json_t *obj, char *err, size_t errlen);
    int (*run)(void *ctx);
    void (*advance)(void *ctx, int64_t wall_ms);
    int64_t (*next_due)(void *ctx);
    json_t *(*get)(void *ctx, const char *kind, const char *ns, const char *name);
    void (*each_queue)(void *ctx, scheduler_queue_fn fn, void *ud);
} sim_backend_t;

typedef struct sim_opts {
    int64_t start_wall_ms; /* the virtual clock's start (> 0) */
    int64_t until_ms;      /* stop this long after the start (0: no limit) */
    int64_t idle_ms;       /* with nothing running and nothing to arrive, stop after this long with no bind (600 s) */
    int max_samples;       /* per series (queue or pool) kept over time (512) */
    uint64_t seed;         /* reported only: the backend was made with it */
} sim_opts_t;

typedef struct sim sim_t;

sim_t *sim_new(const sim_opts_t *o, const sim_workload_t *w, const sim_backend_t *b);
void sim_free(sim_t *s);

/* The backend's action callback: the loop's record of binds and evictions.
 * Called from inside the backend's calls (sandbox on_action). */
void sim_on_action(void *sim, const sb_action_t *a);

/* The snapshot's objects that the report needs (nodes to pools and their
 * capacity, priority classes for the pods' priorities). The backend loads
 * the snapshot itself. 0, or -1 with err. */
int sim_load(sim_t *s, json_t *snapshot, char *err, size_t errlen);

/* Runs the workload to its end. 0, or -1 with err when the backend refused
 * an object (the workload was checked, so that is a bug or a bad snapshot). */
int sim_run(sim_t *s, char *err, size_t errlen);

/* Outputs. Each returns 0, or -1 if writing failed. */
int sim_write_csv(sim_t *s, FILE *f);
json_t *sim_result(sim_t *s); /* result.json's document (new reference) */
int sim_write_html(sim_t *s, FILE *f);
int sim_write_summary(sim_t *s, FILE *f);
/* events.csv: time,action,pod,uid,node,reason: every bind, eviction and
 * finish of a pod, in the order the scheduler decided them. */
int sim_write_events(sim_t *s, FILE *f);
/* jobs.csv, events.csv, result.json and report.html into dir (created if
 * missing). */
int sim_write_dir(sim_t *s, const char *dir, char *err, size_t errlen);

/* The sandbox as a backend (the sandbox is borrowed). */
void sim_backend_sandbox(sim_backend_t *b, sandbox_t *sb);

#endif
