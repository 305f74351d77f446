/* workload.h -- the simulator's workload file: jobs with an arrival, a run
 * time, a queue, a priority and their pods (replicas of a template, or
 * listed), optionally a gang (a PodGroup). YAML or JSON; every field is
 * checked and an error names the job and the field. docs/operations.md,
 * "Simulate", describes the format. */
#ifndef AISCHED_SIMULATE_WORKLOAD_H
#define AISCHED_SIMULATE_WORKLOAD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_WORKLOAD_KIND "Workload"
#define SIM_MAX_JOBS      1000000
#define SIM_MAX_REPLICAS  100000

typedef struct sim_job {
    char *name, *ns;
    char *queue;     /* the pods' queue label, or NULL (the scheduler's default queue) */
    char *pool;      /* the pods' pool annotation, or NULL (the default pool) */
    int64_t arrival; /* ms after the start (arrival_abs 0), or wall ms (arrival_abs 1) */
    int arrival_abs;
    int64_t run_ms; /* each pod runs this long once bound */
    /* npods complete Pod objects without uid (a reference each). The
     * replicas of a template share one object, named by sim_pod_name:
     * whoever sends a pod copies it and sets that name. */
    json_t **pods;
    int npods;
    int templated;
    json_t *podgroup;           /* its PodGroup, or NULL (owned) */
    int min;                    /* pods that must run for the job to start: a gang's minMember, else 1 */
    const char *priority_class; /* borrowed from the pods: spec.priorityClassName, or NULL */
} sim_job_t;

typedef struct sim_workload {
    sim_job_t *jobs;
    int njobs;
    int64_t start_wall_ms; /* the file's "start" (RFC 3339), or 0 */
} sim_workload_t;

/* The document's jobs into w (zeroed first); scheduler_name is what the
 * pods get as spec.schedulerName unless their template says. 0, or -1 with
 * err ("jobs[3] (train-a): runTime: ..."). */
int sim_workload_from_json(sim_workload_t *w, json_t *doc, const char *scheduler_name, char *err, size_t errlen);
/* A YAML or JSON file. */
int sim_workload_load_file(sim_workload_t *w, const char *path, const char *scheduler_name, char *err, size_t errlen);
void sim_workload_free(sim_workload_t *w);
/* Pod i's name ("JOB-i" for a template's replicas) into buf; returns buf. */
const char *sim_pod_name(const sim_job_t *j, int i, char *buf, size_t n);
/* Pod i's name ("JOB-i" for a template's replicas) into buf; returns buf. */
const char *sim_pod_name(const sim_job_t *j, int i, char *buf, size_t n);

/* One YAML (or JSON) document as JSON, read as objfile_parse reads object
 * files (plain scalars typed as YAML 1.1 core says). NULL with "line N:
 * ..." in err. */
json_t *sim_yaml_load(const char *buf, size_t len, char *err, size_t errlen);
/* A whole file read (at most max bytes), NUL-terminated; NULL with err. */
char *sim_read_file(const char *path, size_t max, size_t *len, char *err, size_t errlen);

#endif
