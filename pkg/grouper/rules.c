/* rules.c -- TEMPORARY stub of the workload table (rules.h) so the grouper links and its tests run until the
 * real rules.c (branch i27-rules) lands; drop this file at merge. Hard-coded rows, no file loading. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grouper/rules.h"
#include "util/util.h"

enum { K_PASS, K_PYTORCH, K_JOB, K_LWS };

struct wl_row {
    const char *group, *kind, *resource;
    int how;
};

static const struct wl_row rows[] = {
    { "apps", "ReplicaSet", "replicasets", K_PASS },
    { "apps", "StatefulSet", "statefulsets", K_PASS },
    { "apps", "Deployment", "deployments", K_PASS },
    { "batch", "CronJob", "cronjobs", K_PASS },
    { "", "Pod", "pods", K_PASS },
    { "kubeflow.org", "PyTorchJob", "pytorchjobs", K_PYTORCH },
    { "batch", "Job", "jobs", K_JOB },
    { "leaderworkerset.x-k8s.io", "LeaderWorkerSet", "leaderworkersets", K_LWS },
};
#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

struct wl_table {
    int unused;
};

wl_table_t *wl_table_new_default(void)
{
    return util_xcalloc(1, sizeof(wl_table_t));
}

void wl_table_free(wl_table_t *t)
{
    free(t);
}

int wl_table_load_file(wl_table_t *t, const char *path, char *err, size_t errlen)
{
    return util_errf(err, errlen, "%s: not supported by the stub", path);
}

int wl_table_load_json(wl_table_t *t, json_t *doc, const char *name, char *err, size_t errlen)
{
    return util_errf(err, errlen, "%s: not supported by the stub", name);
}

int wl_table_nrows(const wl_table_t *t)
{
    return NROWS;
}

const wl_row_t *wl_table_row(const wl_table_t *t, int i)
{
    return i >= 0 && i < NROWS ? &rows[i] : NULL;
}

const wl_row_t *wl_table_find(const wl_table_t *t, const char *api_version, const char *kind)
{
    if (!api_version || !kind)
        return NULL;
    const char *slash = strchr(api_version, '/');
    size_t glen = slash ? (size_t)(slash - api_version) : 0;
    for (int i = 0; i < NROWS; i++)
        if (!strcmp(rows[i].kind, kind) && strlen(rows[i].group) == glen && !strncmp(rows[i].group, api_version, glen))
            return &rows[i];
    return NULL;
}

const char *wl_row_group(const wl_row_t *r)
{
    return r->group;
}

const char *wl_row_kind(const wl_row_t *r)
{
    return r->kind;
}

const char *wl_row_resource(const wl_row_t *r)
{
    return r->resource;
}

int wl_row_is_gang(const wl_row_t *r)
{
    return r->how != K_PASS;
}

const char *wl_row_group_by(const wl_row_t *r)
{
    return r->how == K_LWS ? "leaderworkerset.sigs.k8s.io/group-index" : NULL;
}

int wl_row_admits(const wl_row_t *r, const labels_t *pod_labels)
{
    return 1;
}

static json_t *at(json_t *obj, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *seg = strtok_r(buf, ".", &save); seg && obj; seg = strtok_r(NULL, ".", &save))
        obj = json_object_get(obj, seg);
    return obj;
}

static const char *str_at(json_t *obj, const char *path)
{
    json_t *v = at(obj, path);
    return json_is_string(v) && json_string_value(v)[0] ? json_string_value(v) : NULL;
}

static int int_at(json_t *obj, const char *path, int dflt)
{
    json_t *v = at(obj, path);
    return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

static void eval_pytorch(json_t *o, wl_verdict_t *v)
{
    v->min_member = int_at(o, "spec.runPolicy.schedulingPolicy.minAvailable", 0);
    if (v->min_member == 0) {
        const char *k;
        json_t *spec;
        json_object_foreach (at(o, "spec.pytorchReplicaSpecs"), k, spec)
            v->min_member += int_at(spec, "replicas", 1);
    }
    const char *q = str_at(o, "spec.runPolicy.schedulingPolicy.queue");
    const char *pc = str_at(o, "spec.runPolicy.schedulingPolicy.priorityClass");
    if (!v->queue && q)
        v->queue = util_strdup(q);
    if (pc)
        v->priority_class = util_strdup(pc);
}

static void eval_job(json_t *o, wl_verdict_t *v)
{
    const char *mode = str_at(o, "spec.completionMode");
    if (!mode || strcmp(mode, "Indexed")) {
        v->why = util_strdup("completionMode is not Indexed");
        v->unmet = 1;
        return;
    }
    if (int_at(o, "spec.parallelism", -1) != int_at(o, "spec.completions", -2)) {
        v->why = util_strdup("parallelism is not completions");
        v->unmet = 1;
        return;
    }
    v->min_member = int_at(o, "spec.parallelism", 1);
}

int wl_row_eval(const wl_row_t *r, json_t *owner, wl_verdict_t *out)
{
    memset(out, 0, sizeof(*out));
    json_t *labels = at(owner, "metadata.labels");
    json_t *lq = json_object_get(labels, "resource.aibee.cn/queue");
    if (!json_is_string(lq))
        lq = json_object_get(labels, "kai.scheduler/queue");
    if (json_is_string(lq) && json_string_value(lq)[0])
        out->queue = util_strdup(json_string_value(lq));
    if (r->how == K_PYTORCH)
        eval_pytorch(owner, out);
    else if (r->how == K_JOB)
        eval_job(owner, out);
    else if (r->how == K_LWS)
        out->min_member = int_at(owner, "spec.leaderWorkerTemplate.size", 1);
    if (out->unmet)
        return 0;
    if (out->min_member >= 1)
        out->gang = 1;
    else if (!out->why)
        out->why = util_strdup("minMember 0");
    return 0;
}

void wl_verdict_clear(wl_verdict_t *v)
{
    free(v->queue);
    free(v->priority_class);
    free(v->why);
    memset(v, 0, sizeof(*v));
}

char *wl_object_path(const wl_row_t *r, const char *api_version, const char *ns, const char *name)
{
    if (!name || !name[0] || strchr(name, '/') || !ns || !ns[0])
        return NULL;
    const char *slash = strchr(api_version, '/');
    const char *version = slash ? slash + 1 : api_version;
    char *ens = util_urlencode(ns), *en = util_urlencode(name);
    sbuf_t b = { 0 };
    if (r->group[0])
        sbuf_printf(&b, "/apis/%s/%s/namespaces/%s/%s/%s", r->group, version, ens, r->resource, en);
    else
        sbuf_printf(&b, "/api/%s/namespaces/%s/%s/%s", version, ens, r->resource, en);
    free(ens);
    free(en);
    return b.data;
}

char *wl_group_name(const char *kind, const char *name, const char *suffix)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, "%s-%s%s%s", kind, name, suffix ? "-" : "", suffix ? suffix : "");
    for (char *p = b.data; *p; p++) {
        *p = (char)tolower((unsigned char)*p);
        if (!isalnum((unsigned char)*p) && *p != '-')
            *p = '-';
    }
    if (b.len > 63)
        b.data[63] = '\0';
    return b.data;
}

int wl_expr_eval(const char *expr, json_t *obj, int64_t *out, char *err, size_t errlen)
{
    return util_errf(err, errlen, "%s: not supported by the stub", expr);
}
