/* submit.c -- what the user would submit, made objects the copy takes:
 * Pods and PodGroups with the fields the API server would fill, a
 * MultiClusterJob rendered for one member cluster. */
#include "whatif/whatif.h"

#include <stdio.h>
#include <string.h>

#include "dispatch/template.h"
#include "util/util.h"

static const char *kind_of(const json_t *o)
{
    return json_string_value(json_object_get(o, "kind"));
}

static int exists(const json_t *items, const json_t *subs, const char *kind, const char *ns, const char *name)
{
    const json_t *lists[2] = { items, subs };
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *o;
        json_array_foreach (lists[l], i, o) {
            json_t *m = json_object_get(o, "metadata");
            const char *k = kind_of(o), *n = json_string_value(json_object_get(m, "name"));
            const char *s = json_string_value(json_object_get(m, "namespace"));
            if (k && n && !strcmp(k, kind) && !strcmp(n, name) && !strcmp(s ? s : "", ns))
                return 1;
        }
    }
    return 0;
}

/* spec.priority from the PriorityClass named (or the global default), as
 * the API server's Priority admission plugin sets it: a pod submitted from
 * a file carries only the name. -1 when the class does not exist. */
static int admit_priority(json_t *spec, const json_t *items, char *err, size_t errlen)
{
    const char *want = json_string_value(json_object_get(spec, "priorityClassName"));
    const json_t *cls = NULL;
    size_t i;
    json_t *o;
    json_array_foreach (items, i, o) {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        const char *name = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
        if (!kind || strcmp(kind, "PriorityClass") || !name)
            continue;
        if (want ? !strcmp(name, want) : json_is_true(json_object_get(o, "globalDefault")))
            cls = o;
    }
    if (want && !cls)
        return util_errf(err, errlen, "no PriorityClass named %s (the API server would refuse the pod)", want);
    if (!cls) {
        if (!json_object_get(spec, "priority"))
            json_object_set_new(spec, "priority", json_integer(0));
        return 0;
    }
    json_t *v = json_object_get(cls, "value");
    json_object_set_new(spec, "priority", json_integer(json_is_integer(v) ? json_integer_value(v) : 0));
    if (!want)
        json_object_set_new(spec, "priorityClassName",
                            json_string(json_string_value(json_object_get(json_object_get(cls, "metadata"), "name"))));
    json_t *pp = json_object_get(cls, "preemptionPolicy");
    if (json_is_string(pp) && !json_object_get(spec, "preemptionPolicy"))
        json_object_set(spec, "preemptionPolicy", pp);
    return 0;
}

/* Fills what the API server would; appends to subs. -1 with err. */
static int add_one(json_t *subs, const json_t *items, const json_t *in, const char *sched, const char *ts, int seq,
                   char *err, size_t errlen)
{
    const char *kind = kind_of(in);
    int pod = !strcmp(kind, "Pod");
    json_t *o = json_deep_copy(in);
    json_t *meta = json_object_get(o, "metadata");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(o, "metadata", meta);
    }
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    if (!ns || !*ns)
        json_object_set_new(meta, "namespace", json_string(ns = "default"));
    ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *gen = json_string_value(json_object_get(meta, "generateName"));
    if ((!name || !*name) && gen && *gen) {
        sbuf_t b = { 0 };
        sbuf_printf(&b, "%swhatif%d", gen, seq);
        json_object_set_new(meta, "name", json_string(b.data));
        sbuf_free(&b);
    } else if (!name || !*name) {
        json_decref(o);
        return util_errf(err, errlen, "a %s without metadata.name or generateName", kind);
    }
    name = json_string_value(json_object_get(meta, "name"));
    if (exists(items, subs, kind, ns, name)) {
        util_errf(err, errlen, "%s %s/%s already exists (the API server would refuse it)", kind, ns, name);
        json_decref(o);
        return -1;
    }
    sbuf_t uid = { 0 };
    sbuf_printf(&uid, "whatif-%d-%s", seq, name);
    json_object_set_new(meta, "uid", json_string(uid.data));
    sbuf_free(&uid);
    json_object_set_new(meta, "creationTimestamp", json_string(ts));
    json_object_set_new(meta, "resourceVersion", json_string("1"));
    if (pod) {
        json_t *spec = json_object_get(o, "spec");
        if (!json_is_object(spec)) {
            util_errf(err, errlen, "Pod %s/%s has no spec", ns, name);
            json_decref(o);
            return -1;
        }
        if (!json_is_string(json_object_get(spec, "schedulerName")))
            json_object_set_new(spec, "schedulerName", json_string(sched));
        if (admit_priority(spec, items, err, errlen) < 0) {
            json_decref(o);
            return -1;
        }
        json_object_set_new(o, "status", json_pack("{s:s}", "phase", "Pending"));
    } else {
        json_object_del(o, "status");
    }
    json_array_append_new(subs, o);
    return 0;
}

/* spec.template rendered for member (NULL: the first cluster). */
static json_t *render_mcjob(const json_t *job, const char *member, char *err, size_t errlen)
{
    json_t *meta = json_object_get(job, "metadata"), *spec = json_object_get(job, "spec");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    json_t *clusters = json_object_get(spec, "clusters");
    if (!name || !json_is_array(clusters) || json_array_size(clusters) == 0) {
        util_errf(err, errlen, "MultiClusterJob: needs metadata.name and spec.clusters");
        return NULL;
    }
    json_t *c = NULL;
    size_t i;
    json_t *x;
    json_array_foreach (clusters, i, x) {
        const char *cn = json_string_value(json_object_get(x, "name"));
        if (cn && (!member || !strcmp(cn, member))) {
            c = x;
            break;
        }
    }
    if (!c) {
        util_errf(err, errlen, "MultiClusterJob %s: no member cluster %s", name, member ? member : "with a name");
        return NULL;
    }
    const char *cns = json_string_value(json_object_get(c, "namespace"));
    if (!cns || !*cns)
        cns = ns && *ns ? ns : "default";
    char e[300] = "";
    json_t *objs =
        dsp_specialise(json_object_get(spec, "template"), json_object_get(spec, "params"),
                       json_string_value(json_object_get(c, "name")), cns, name, "whatif-mcjob", e, sizeof e);
    if (!objs)
        util_errf(err, errlen, "MultiClusterJob %s: %s", name, e);
    return objs;
}

static int add_all(json_t *subs, const json_t *items, const json_t *objs, const char *member, const char *sched,
                   const char *ts, int want_groups, int depth, char *err, size_t errlen)
{
    size_t i;
    json_t *o;
    json_array_foreach (objs, i, o) {
        const char *kind = kind_of(o);
        if (!json_is_object(o) || !kind)
            return util_errf(err, errlen, "object %zu has no kind", i + 1);
        if (!strcmp(kind, "MultiClusterJob")) {
            if (depth > 0)
                return util_errf(err, errlen, "a MultiClusterJob inside a MultiClusterJob");
            json_t *r = render_mcjob(o, member, err, errlen);
            if (!r)
                return -1;
            int rc = add_all(subs, items, r, member, sched, ts, want_groups, depth + 1, err, errlen);
            json_decref(r);
            if (rc < 0)
                return -1;
        } else if (!strcmp(kind, "Pod") || !strcmp(kind, "PodGroup")) {
            int is_group = strcmp(kind, "PodGroup") == 0;
            if (is_group == want_groups &&
                add_one(subs, items, o, sched, ts, (int)json_array_size(subs) + 1, err, errlen) < 0)
                return -1;
        } else {
            return util_errf(err, errlen,
                             "%s: whatif takes Pods, PodGroups and MultiClusterJobs rendering to them "
                             "(a controller's pods: submit the pods it would create)",
                             kind);
        }
    }
    return 0;
}

json_t *whatif_submissions(const json_t *objs, const json_t *items, const char *member, const char *scheduler_name,
                           int64_t now_ms, char *err, size_t errlen)
{
    char ts[40];
    util_rfc3339(now_ms, ts, sizeof ts);
    json_t *subs = json_array();
    /* PodGroups first: a gang's pods are told of their group on arrival */
    if (add_all(subs, items, objs, member, scheduler_name, ts, 1, 0, err, errlen) < 0 ||
        add_all(subs, items, objs, member, scheduler_name, ts, 0, 0, err, errlen) < 0) {
        json_decref(subs);
        return NULL;
    }
    if (json_array_size(subs) == 0 || !strcmp(kind_of(json_array_get(subs, json_array_size(subs) - 1)), "PodGroup")) {
        util_errf(err, errlen, "no Pod to place");
        json_decref(subs);
        return NULL;
    }
    return subs;
}
