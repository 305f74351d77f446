/* workload.c -- parses and checks the simulator's workload file. */
#include "simulate/workload.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/types.h"
#include "fairshare/fairshare.h"
#include "gang/gang.h"
#include "scheduler/capabilities.h"
#include "snapshot/objfile.h"
#include "util/hashmap.h"
#include "util/util.h"

#define FILE_MAX (512u << 20)

/* The YAML reader is the snapshot's (objfile.c), so object files, snapshots
 * and workloads read alike; a workload is one document. */
json_t *sim_yaml_load(const char *buf, size_t len, char *err, size_t errlen)
{
    json_t *docs = objfile_parse(buf, len, err, errlen);
    if (!docs)
        return NULL;
    if (json_array_size(docs) != 1) {
        util_errf(err, errlen, json_array_size(docs) ? "only one YAML document is allowed" : "empty document");
        json_decref(docs);
        return NULL;
    }
    json_t *j = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return j;
}

char *sim_read_file(const char *path, size_t max, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        util_errf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    sbuf_t b = { 0 };
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n > max) {
            fclose(f);
            sbuf_free(&b);
            util_errf(err, errlen, "%s: larger than %zu MB", path, max >> 20);
            return NULL;
        }
        sbuf_append(&b, chunk, n);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        sbuf_free(&b);
        util_errf(err, errlen, "%s: read error", path);
        return NULL;
    }
    if (!b.data)
        sbuf_append(&b, "", 0);
    *len = b.len;
    return b.data;
}

/* ------------------------------------------------------------ jobs */

/* Where an error is: "jobs[3] (train-a): ". */
typedef struct jctx {
    char where[160];
    char *err;
    size_t errlen;
} jctx_t;

static int jfail(jctx_t *c, const char *fmt, const char *a)
{
    return util_errf(c->err, c->errlen, "%s%s%s", c->where, fmt, a ? a : "");
}

/* A DNS-1123 label-ish name, short enough for "-NNNNN" after it. */
static int name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' || s[i] == '.'))
            return 0;
    return 1;
}

static const char *const job_keys[] = { "name",     "namespace",         "arrival",  "runTime",  "queue", "pool",
                                        "priority", "priorityClassName", "replicas", "template", "pods",  "gang",
                                        NULL };

static int check_keys(jctx_t *c, json_t *o, const char *const *keys, const char *what)
{
    const char *k;
    json_t *v;
    json_object_foreach (o, k, v) {
        int known = 0;
        for (int i = 0; keys[i] && !known; i++)
            known = !strcmp(k, keys[i]);
        if (!known) {
            char m[200];
            snprintf(m, sizeof m, "unknown field \"%.100s\" in %s", k, what);
            return jfail(c, m, NULL);
        }
    }
    return 0;
}

/* An optional string field: *out borrowed, NULL when absent. */
static int opt_str(jctx_t *c, json_t *o, const char *key, const char **out)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || !json_string_length(v)) {
        char m[120];
        snprintf(m, sizeof m, "%s: want a non-empty string", key);
        return jfail(c, m, NULL);
    }
    *out = json_string_value(v);
    return 0;
}

/* "90s" after the start, or an RFC 3339 time. */
static int parse_arrival(jctx_t *c, json_t *v, sim_job_t *j)
{
    if (!v || json_is_null(v)) {
        j->arrival = 0;
        return 0;
    }
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        j->arrival = json_integer_value(v) * 1000; /* bare seconds */
        return 0;
    }
    const char *s = json_string_value(v);
    if (!s)
        return jfail(c, "arrival: want a duration after the start (\"90s\") or an RFC 3339 time", NULL);
    if (strchr(s, 'T')) {
        int64_t t = util_parse_rfc3339(s);
        if (t <= 0)
            return jfail(c, "arrival: not an RFC 3339 time: ", s);
        j->arrival = t;
        j->arrival_abs = 1;
        return 0;
    }
    if (util_parse_duration_ms(s, &j->arrival) < 0)
        return jfail(c, "arrival: not a duration (\"90s\", \"1h30m\") nor an RFC 3339 time: ", s);
    return 0;
}

static int parse_run_time(jctx_t *c, json_t *v, sim_job_t *j)
{
    if (!v)
        return jfail(c, "runTime: missing (how long each pod runs once bound, e.g. \"10m\")", NULL);
    if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 1000000000) {
        j->run_ms = json_integer_value(v) * 1000;
        return 0;
    }
    const char *s = json_string_value(v);
    if (!s || util_parse_duration_ms(s, &j->run_ms) < 0 || j->run_ms <= 0)
        return jfail(c, "runTime: want a positive duration (\"10m\")", NULL);
    return 0;
}

/* The object at key of o, created when absent; NULL if it is not one. */
static json_t *obj_at(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        v = json_object();
        json_object_set_new(o, key, v);
    }
    return json_is_object(v) ? v : NULL;
}

/* What every pod of the job gets: names, queue, pool, gang, priority. */
static int finish_pod(jctx_t *c, const sim_job_t *j, json_t *pod, json_t *prio, const char *pclass,
                      const char *scheduler_name)
{
    json_object_set_new(pod, "apiVersion", json_string("v1"));
    json_object_set_new(pod, "kind", json_string("Pod"));
    json_t *meta = obj_at(pod, "metadata"), *spec = obj_at(pod, "spec");
    json_t *labels = meta ? obj_at(meta, "labels") : NULL, *ann = meta ? obj_at(meta, "annotations") : NULL;
    if (!meta || !spec || !labels || !ann)
        return jfail(c, "a pod's metadata, labels, annotations or spec is not an object", NULL);
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    if (ns && strcmp(ns, j->ns))
        return jfail(c, "a pod's namespace differs from the job's: ", ns);
    json_object_set_new(meta, "namespace", json_string(j->ns));
    json_object_del(meta, "uid");
    json_object_del(meta, "resourceVersion");
    json_object_del(meta, "creationTimestamp");
    if (j->queue)
        json_object_set_new(labels, FS_QUEUE_LABEL, json_string(j->queue));
    if (j->podgroup)
        json_object_set_new(labels, GANG_LABEL, json_string(j->name));
    if (j->pool)
        json_object_set_new(ann, POOL_ANNOTATION, json_string(j->pool));
    if (!json_object_get(spec, "schedulerName"))
        json_object_set_new(spec, "schedulerName", json_string(scheduler_name));
    if (json_object_get(spec, "nodeName"))
        return jfail(c, "a pod sets spec.nodeName: the simulator places every pod itself", NULL);
    if (prio)
        json_object_set(spec, "priority", prio);
    if (pclass)
        json_object_set_new(spec, "priorityClassName", json_string(pclass));
    json_object_set_new(pod, "status", json_pack("{s:s}", "phase", "Pending"));
    /* Parsed as the scheduler will parse it: a bad request or field is said
     * here, with the job's name, rather than as a pod the copy refuses. */
    json_object_set_new(meta, "uid", json_string("check"));
    char perr[256];
    pod_t *p = pod_from_json(pod, perr, sizeof perr);
    json_object_del(meta, "uid");
    if (!p)
        return jfail(c, "pod: ", perr);
    pod_unref(p);
    return 0;
}

static int parse_gang(jctx_t *c, json_t *g, sim_job_t *j, int npods, const char *pclass)
{
    static const char *const keys[] = { "minMember", "annotations", "scheduleTimeoutSeconds", NULL };
    if (!g || json_is_false(g) || json_is_null(g))
        return 0;
    json_t *ann = NULL, *timeout = NULL;
    j->min = npods;
    if (json_is_object(g)) {
        if (check_keys(c, g, keys, "gang") < 0)
            return -1;
        json_t *m = json_object_get(g, "minMember");
        if (m && (!json_is_integer(m) || json_integer_value(m) < 1 || json_integer_value(m) > npods))
            return jfail(c, "gang.minMember: want a whole number from 1 to the job's pod count", NULL);
        if (m)
            j->min = (int)json_integer_value(m);
        ann = json_object_get(g, "annotations");
        if (ann && !json_is_object(ann))
            return jfail(c, "gang.annotations: want a map of strings", NULL);
        const char *k;
        json_t *v;
        json_object_foreach (ann, k, v)
            if (!json_is_string(v))
                return jfail(c, "gang.annotations: not a string: ", k);
        timeout = json_object_get(g, "scheduleTimeoutSeconds");
        if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) < 1))
            return jfail(c, "gang.scheduleTimeoutSeconds: want a positive whole number", NULL);
    } else if (!json_is_true(g)) {
        return jfail(c, "gang: want true or a map (minMember, annotations, scheduleTimeoutSeconds)", NULL);
    }
    json_t *meta = json_pack("{s:s,s:s}", "name", j->name, "namespace", j->ns);
    if (j->queue)
        json_object_set_new(meta, "labels", json_pack("{s:s}", FS_QUEUE_LABEL, j->queue));
    if (ann)
        json_object_set_new(meta, "annotations", json_deep_copy(ann));
    json_t *spec = json_pack("{s:i}", "minMember", j->min);
    if (timeout)
        json_object_set(spec, "scheduleTimeoutSeconds", timeout);
    if (pclass)
        json_object_set_new(spec, "priorityClassName", json_string(pclass));
    j->podgroup = json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", PODGROUP_VERSION, "kind", "PodGroup", "metadata", meta,
                            "spec", spec);
    return 0;
}

/* The job's pods: replicas of template, or pods as listed. */
static int build_pods(jctx_t *c, json_t *jo, sim_job_t *j, json_t *prio, const char *pclass, const char *sname)
{
    json_t *tmpl = json_object_get(jo, "template"), *pods = json_object_get(jo, "pods");
    json_t *rep = json_object_get(jo, "replicas");
    if (!!tmpl == !!pods)
        return jfail(c, "want either template (with replicas) or pods", NULL);
    if (pods) {
        if (rep)
            return jfail(c, "replicas goes with template, not with pods", NULL);
        if (!json_is_array(pods) || !json_array_size(pods) || json_array_size(pods) > SIM_MAX_REPLICAS)
            return jfail(c, "pods: want a non-empty list of Pod objects", NULL);
        j->npods = (int)json_array_size(pods);
    } else {
        if (!json_is_object(tmpl))
            return jfail(c, "template: want a pod template (metadata, spec)", NULL);
        if (rep && (!json_is_integer(rep) || json_integer_value(rep) < 1 || json_integer_value(rep) > SIM_MAX_REPLICAS))
            return jfail(c, "replicas: want a whole number from 1 to 100000", NULL);
        j->npods = rep ? (int)json_integer_value(rep) : 1;
    }
    /* Pods that are no gang start on their own: the job has started when
     * its first pod runs (a gang: when its minMember do). */
    j->min = 1;
    if (parse_gang(c, json_object_get(jo, "gang"), j, j->npods, pclass) < 0)
        return -1;
    j->pods = util_xcalloc((size_t)j->npods, sizeof(*j->pods));
    j->templated = !pods;
    for (int i = 0; i < j->npods; i++) {
        json_t *src = pods ? json_array_get(pods, (size_t)i) : tmpl;
        if (!json_is_object(src))
            return jfail(c, "pods: an item is not an object", NULL);
        if (!pods && i > 0) { /* one template check stands for its identical replicas */
            j->pods[i] = json_incref(j->pods[0]);
            continue;
        }
        json_t *pod = json_deep_copy(src);
        j->pods[i] = pod;
        json_t *meta = obj_at(pod, "metadata");
        if (!meta)
            return jfail(c, "metadata: not an object", NULL);
        if (!pods) {
            char name[300];
            json_object_set_new(meta, "name", json_string(sim_pod_name(j, 0, name, sizeof name)));
        } else {
            const char *n = json_string_value(json_object_get(meta, "name"));
            if (!n || !name_ok(n, 253))
                return jfail(c, "pods: an item has no valid metadata.name", NULL);
        }
        if (finish_pod(c, j, pod, prio, pclass, sname) < 0)
            return -1;
    }
    return 0;
}

const char *sim_pod_name(const sim_job_t *j, int i, char *buf, size_t n)
{
    if (j->templated)
        snprintf(buf, n, "%s-%d", j->name, i);
    else
        snprintf(buf, n, "%s", json_string_value(json_object_get(json_object_get(j->pods[i], "metadata"), "name")));
    return buf;
}

static int parse_job(jctx_t *c, json_t *jo, sim_job_t *j, const char *sname)
{
    if (!json_is_object(jo))
        return jfail(c, "a job is not a map", NULL);
    if (check_keys(c, jo, job_keys, "the job") < 0)
        return -1;
    const char *name, *ns, *queue, *pool, *pclass;
    if (opt_str(c, jo, "name", &name) < 0 || opt_str(c, jo, "namespace", &ns) < 0 ||
        opt_str(c, jo, "queue", &queue) < 0 || opt_str(c, jo, "pool", &pool) < 0 ||
        opt_str(c, jo, "priorityClassName", &pclass) < 0)
        return -1;
    if (!name || !name_ok(name, 200))
        return jfail(c, "name: want a lower-case DNS name of at most 200 characters", NULL);
    size_t at = strlen(c->where) - 2; /* over "jobs[i]: "'s ": " */
    snprintf(c->where + at, sizeof c->where - at, " (%.60s): ", name);
    if (ns && !name_ok(ns, 63))
        return jfail(c, "namespace: not a valid namespace name: ", ns);
    j->name = util_strdup(name);
    j->ns = util_strdup(ns ? ns : "default");
    j->queue = queue ? util_strdup(queue) : NULL;
    j->pool = pool ? util_strdup(pool) : NULL;
    json_t *prio = json_object_get(jo, "priority");
    if (prio &&
        (!json_is_integer(prio) || json_integer_value(prio) < -2147483648LL || json_integer_value(prio) > 1000000000LL))
        return jfail(c, "priority: want a whole number up to 1000000000", NULL);
    if (prio && pclass)
        return jfail(c, "priority and priorityClassName: give one", NULL);
    if (parse_arrival(c, json_object_get(jo, "arrival"), j) < 0 ||
        parse_run_time(c, json_object_get(jo, "runTime"), j) < 0)
        return -1;
    if (build_pods(c, jo, j, prio, pclass, sname) < 0)
        return -1;
    j->priority_class = json_string_value(json_object_get(json_object_get(j->pods[0], "spec"), "priorityClassName"));
    return 0;
}

/* Pod and job names are unique in their namespace (they are the keys of the
 * copy and of the report). */
static int check_unique(sim_workload_t *w, char *err, size_t errlen)
{
    hashmap_t *jobs = hashmap_new(1024), *pods = hashmap_new(4096);
    int rc = 0;
    char key[600];
    for (int i = 0; i < w->njobs && !rc; i++) {
        sim_job_t *j = &w->jobs[i];
        snprintf(key, sizeof key, "%s/%s", j->ns, j->name);
        if (hashmap_put(jobs, key, j))
            rc = util_errf(err, errlen, "jobs[%d]: job %s twice", i, key);
        for (int k = 0; k < j->npods && !rc; k++) {
            char name[300];
            snprintf(key, sizeof key, "%s/%s", j->ns, sim_pod_name(j, k, name, sizeof name));
            if (hashmap_put(pods, key, j))
                rc = util_errf(err, errlen, "jobs[%d] (%s): pod %s is in the workload twice", i, j->name, key);
        }
    }
    hashmap_free(jobs);
    hashmap_free(pods);
    return rc;
}

int sim_workload_from_json(sim_workload_t *w, json_t *doc, const char *scheduler_name, char *err, size_t errlen)
{
    capabilities_init(); /* its jobs' pods are parsed to check them */
    memset(w, 0, sizeof(*w));
    json_t *jobs = doc;
    if (json_is_object(doc)) {
        static const char *const keys[] = { "apiVersion", "kind", "start", "jobs", NULL };
        jctx_t c = { "", err, errlen };
        if (check_keys(&c, doc, keys, "the workload") < 0)
            return -1;
        const char *kind = json_string_value(json_object_get(doc, "kind"));
        if (kind && strcmp(kind, SIM_WORKLOAD_KIND))
            return util_errf(err, errlen, "kind: want %s, not %s", SIM_WORKLOAD_KIND, kind);
        json_t *start = json_object_get(doc, "start");
        if (start) {
            const char *s = json_string_value(start);
            w->start_wall_ms = s ? util_parse_rfc3339(s) : -1;
            if (w->start_wall_ms <= 0)
                return util_errf(err, errlen, "start: want an RFC 3339 time after 1970");
        }
        jobs = json_object_get(doc, "jobs");
    }
    if (!json_is_array(jobs))
        return util_errf(err, errlen, "want a list of jobs, or a map with jobs: [...]");
    size_t n = json_array_size(jobs);
    if (n == 0 || n > SIM_MAX_JOBS)
        return util_errf(err, errlen, "jobs: want 1 to %d jobs, not %zu", SIM_MAX_JOBS, n);
    w->jobs = util_xcalloc(n, sizeof(*w->jobs));
    for (size_t i = 0; i < n; i++) {
        jctx_t c = { "", err, errlen };
        snprintf(c.where, sizeof c.where, "jobs[%zu]: ", i);
        w->njobs = (int)i + 1;
        if (parse_job(&c, json_array_get(jobs, i), &w->jobs[i], scheduler_name) < 0) {
            sim_workload_free(w);
            return -1;
        }
    }
    if (check_unique(w, err, errlen) < 0) {
        sim_workload_free(w);
        return -1;
    }
    return 0;
}

int sim_workload_load_file(sim_workload_t *w, const char *path, const char *scheduler_name, char *err, size_t errlen)
{
    size_t len;
    char *buf = sim_read_file(path, FILE_MAX, &len, err, errlen);
    memset(w, 0, sizeof(*w));
    if (!buf)
        return -1;
    char e[400];
    json_t *doc = sim_yaml_load(buf, len, e, sizeof e);
    free(buf);
    if (!doc)
        return util_errf(err, errlen, "%s: %s", path, e);
    int rc = sim_workload_from_json(w, doc, scheduler_name, e, sizeof e);
    json_decref(doc);
    if (rc < 0)
        return util_errf(err, errlen, "%s: %s", path, e);
    return 0;
}

void sim_workload_free(sim_workload_t *w)
{
    for (int i = 0; i < w->njobs; i++) {
        sim_job_t *j = &w->jobs[i];
        for (int k = 0; j->pods && k < j->npods; k++)
            json_decref(j->pods[k]);
        free(j->pods);
        json_decref(j->podgroup);
        free(j->name);
        free(j->ns);
        free(j->queue);
        free(j->pool);
    }
    free(w->jobs);
    memset(w, 0, sizeof(*w));
}
