/* template.c -- MultiClusterJob template specialisation: `<% $mcc.NAME %>`
 * substitution, per-cluster names, namespace and ownership labels. */
#include "dispatch/template.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* One `<% $mcc.NAME %>` at s (which starts with "<%"). Sets the name span
 * and the token's length; 0 when s is not such a token (other `<% %>` text
 * is left alone), -1 when it opens one and never closes it. */
static int token_at(const char *s, const char **name, size_t *nlen, size_t *tlen)
{
    const char *p = s + 2;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "$mcc.", 5) != 0)
        return 0;
    p += 5;
    const char *n = p;
    while (isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.')
        p++;
    size_t len = (size_t)(p - n);
    while (*p == ' ' || *p == '\t')
        p++;
    if (len == 0 || strncmp(p, "%>", 2) != 0)
        return -1;
    *name = n;
    *nlen = len;
    *tlen = (size_t)(p + 2 - s);
    return 1;
}

static const json_t *param_value(const json_t *params, const char *name, size_t nlen, const char *cluster, char *err,
                                 size_t errlen)
{
    char key[256];
    if (nlen >= sizeof key) {
        util_errf(err, errlen, "param name too long");
        return NULL;
    }
    memcpy(key, name, nlen);
    key[nlen] = '\0';
    const json_t *byc = json_is_object(params) ? json_object_get(params, key) : NULL;
    if (!byc) {
        util_errf(err, errlen, "unknown param \"%s\"", key);
        return NULL;
    }
    const json_t *v = json_is_object(byc) ? json_object_get(byc, cluster) : NULL;
    if (!v) {
        util_errf(err, errlen, "param \"%s\" has no value for cluster \"%s\"", key, cluster);
        return NULL;
    }
    return v;
}

static void append_value_text(sbuf_t *b, const json_t *v)
{
    if (json_is_string(v)) {
        sbuf_append(b, json_string_value(v), json_string_length(v));
        return;
    }
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (t)
        sbuf_puts(b, t);
    free(t);
}

static json_t *subst_string(const char *s, const json_t *params, const char *cluster, char *err, size_t errlen)
{
    /* the whole string one token: the value keeps its type */
    const char *t = s;
    while (*t == ' ' || *t == '\t')
        t++;
    const char *name;
    size_t nlen, tlen;
    if (strncmp(t, "<%", 2) == 0 && token_at(t, &name, &nlen, &tlen) == 1) {
        const char *rest = t + tlen;
        while (*rest == ' ' || *rest == '\t')
            rest++;
        if (*rest == '\0') {
            const json_t *v = param_value(params, name, nlen, cluster, err, errlen);
            return v ? json_deep_copy(v) : NULL;
        }
    }
    if (!strstr(s, "<%"))
        return json_string(s);
    sbuf_t b = { 0 };
    sbuf_puts(&b, "");
    for (const char *p = s; *p;) {
        const char *open = strstr(p, "<%");
        if (!open) {
            sbuf_puts(&b, p);
            break;
        }
        sbuf_append(&b, p, (size_t)(open - p));
        int r = token_at(open, &name, &nlen, &tlen);
        if (r < 0) {
            util_errf(err, errlen, "unterminated <%% $mcc. in \"%.60s\"", s);
            sbuf_free(&b);
            return NULL;
        }
        if (r == 0) {
            sbuf_puts(&b, "<%");
            p = open + 2;
            continue;
        }
        const json_t *v = param_value(params, name, nlen, cluster, err, errlen);
        if (!v) {
            sbuf_free(&b);
            return NULL;
        }
        append_value_text(&b, v);
        p = open + tlen;
    }
    json_t *out = json_stringn(b.data, b.len);
    sbuf_free(&b);
    if (!out)
        util_errf(err, errlen, "substituted text is not valid UTF-8");
    return out;
}

json_t *dsp_substitute(const json_t *v, const json_t *params, const char *cluster, char *err, size_t errlen)
{
    if (json_is_string(v))
        return subst_string(json_string_value(v), params, cluster, err, errlen);
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        const json_t *e;
        json_array_foreach (v, i, e) {
            json_t *c = dsp_substitute(e, params, cluster, err, errlen);
            if (!c) {
                json_decref(out);
                return NULL;
            }
            json_array_append_new(out, c);
        }
        return out;
    }
    if (json_is_object(v)) {
        json_t *out = json_object();
        const char *k;
        json_t *e;
        json_object_foreach ((json_t *)v, k, e) {
            json_t *c = dsp_substitute(e, params, cluster, err, errlen);
            if (!c) {
                json_decref(out);
                return NULL;
            }
            json_object_set_new(out, k, c);
        }
        return out;
    }
    return json_deep_copy(v);
}

void dsp_param_refs(const json_t *v, json_t *names)
{
    if (json_is_string(v)) {
        for (const char *p = strstr(json_string_value(v), "<%"); p; p = strstr(p + 2, "<%")) {
            const char *name;
            size_t nlen, tlen;
            if (token_at(p, &name, &nlen, &tlen) != 1)
                continue;
            json_t *s = json_stringn(name, nlen);
            int seen = 0;
            size_t i;
            json_t *e;
            json_array_foreach (names, i, e)
                seen |= json_equal(e, s);
            if (!seen)
                json_array_append(names, s);
            json_decref(s);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach (v, i, e)
            dsp_param_refs(e, names);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *e;
        json_object_foreach ((json_t *)v, k, e)
            dsp_param_refs(e, names);
    }
}

int dsp_object_name(const char *name, const char *cluster, char *buf, size_t n)
{
    int w = snprintf(buf, n, "%s-%s", name, cluster);
    return (w < 0 || (size_t)w >= n || w > 253) ? -1 : 0;
}

static json_t *ensure_object(json_t *parent, const char *key)
{
    json_t *o = json_object_get(parent, key);
    if (!json_is_object(o)) {
        o = json_object();
        json_object_set_new(parent, key, o);
    }
    return o;
}

static void put_labels(json_t *meta, const char *job_name, const char *job_uid, const char *cluster)
{
    json_t *labels = ensure_object(meta, "labels");
    json_object_set_new(labels, DSP_LABEL_UID, json_string(job_uid));
    json_object_set_new(labels, DSP_LABEL_CLUSTER, json_string(cluster));
    /* a label value holds at most 63 characters; the uid is what counts */
    if (strlen(job_name) <= 63)
        json_object_set_new(labels, DSP_LABEL_JOB, json_string(job_name));
}

/* The pod templates a workload carries (Job, Deployment, ...; CronJob's
 * jobTemplate): their pods get the labels too, so Running is seen on them. */
static void label_pod_templates(json_t *obj, const char *job_name, const char *job_uid, const char *cluster)
{
    json_t *spec = json_object_get(obj, "spec");
    json_t *tpl = json_is_object(spec) ? json_object_get(spec, "template") : NULL;
    if (json_is_object(tpl))
        put_labels(ensure_object(tpl, "metadata"), job_name, job_uid, cluster);
    json_t *jt = json_is_object(spec) ? json_object_get(spec, "jobTemplate") : NULL;
    if (json_is_object(jt))
        label_pod_templates(jt, job_name, job_uid, cluster);
}

static const char *const group_keys[] = { "scheduling.x-k8s.io/pod-group", "pod-group.scheduling.sigs.k8s.io",
                                          "scheduling.k8s.io/group-name" };

/* Renames pod-group references in one labels/annotations map. */
static void rename_group_refs(json_t *map, const json_t *names, const char *cluster)
{
    if (!json_is_object(map))
        return;
    for (size_t i = 0; i < sizeof(group_keys) / sizeof(group_keys[0]); i++) {
        json_t *v = json_object_get(map, group_keys[i]);
        if (!json_is_string(v) || !json_object_get(names, json_string_value(v)))
            continue;
        char nb[300];
        if (dsp_object_name(json_string_value(v), cluster, nb, sizeof nb) == 0)
            json_object_set_new(map, group_keys[i], json_string(nb));
    }
}

static void rename_refs_in(json_t *meta, const json_t *names, const char *cluster)
{
    if (!json_is_object(meta))
        return;
    rename_group_refs(json_object_get(meta, "labels"), names, cluster);
    rename_group_refs(json_object_get(meta, "annotations"), names, cluster);
}

static const char *const server_fields[] = { "uid",         "resourceVersion", "creationTimestamp", "generation",
                                             "selfLink",    "managedFields",   "deletionTimestamp", "ownerReferences",
                                             "generateName" };

static int check_object(const json_t *o, size_t i, char *err, size_t errlen)
{
    if (!json_is_object(o))
        return util_errf(err, errlen, "template[%zu] is not an object", i);
    json_t *meta = json_object_get(o, "metadata");
    if (!json_is_string(json_object_get(o, "apiVersion")) || !json_is_string(json_object_get(o, "kind")))
        return util_errf(err, errlen, "template[%zu] has no apiVersion or kind", i);
    if (meta && !json_is_object(meta))
        return util_errf(err, errlen, "template[%zu]: metadata is not an object", i);
    json_t *name = json_object_get(meta, "name");
    if (name && (!json_is_string(name) || !json_string_length(name)))
        return util_errf(err, errlen, "template[%zu]: metadata.name is not a name", i);
    return 0;
}

json_t *dsp_specialise(const json_t *tmpl, const json_t *params, const char *cluster, const char *ns,
                       const char *job_name, const char *job_uid, char *err, size_t errlen)
{
    if (!json_is_array(tmpl) || json_array_size(tmpl) == 0) {
        util_errf(err, errlen, "template must be a non-empty list of objects");
        return NULL;
    }
    json_t *out = dsp_substitute(tmpl, params, cluster, err, errlen);
    if (!out)
        return NULL;
    /* the template's own names, for pod-group references */
    json_t *names = json_object();
    size_t i;
    json_t *o;
    json_array_foreach (out, i, o) {
        if (check_object(o, i, err, errlen) != 0) {
            json_decref(names);
            json_decref(out);
            return NULL;
        }
        /* no name: the job's own, so one object makes <job>-<cluster> */
        json_t *meta = json_object_get(o, "metadata");
        if (!meta) {
            meta = json_object();
            json_object_set_new(o, "metadata", meta);
        }
        if (!json_object_get(meta, "name"))
            json_object_set_new(meta, "name", json_string(job_name));
        const char *name = json_string_value(json_object_get(meta, "name"));
        if (json_object_get(names, name)) {
            util_errf(err, errlen, "template has two objects named \"%s\"", name);
            json_decref(names);
            json_decref(out);
            return NULL;
        }
        json_object_set_new(names, name, json_true());
    }
    json_array_foreach (out, i, o) {
        json_t *meta = json_object_get(o, "metadata");
        char nb[300];
        if (dsp_object_name(json_string_value(json_object_get(meta, "name")), cluster, nb, sizeof nb) != 0) {
            util_errf(err, errlen, "template[%zu]: name with cluster suffix exceeds 253 characters", i);
            json_decref(names);
            json_decref(out);
            return NULL;
        }
        for (size_t f = 0; f < sizeof(server_fields) / sizeof(server_fields[0]); f++)
            json_object_del(meta, server_fields[f]);
        json_object_del(o, "status");
        json_object_set_new(meta, "name", json_string(nb));
        json_object_set_new(meta, "namespace", json_string(ns));
        rename_refs_in(meta, names, cluster);
        put_labels(meta, job_name, job_uid, cluster);
        json_t *spec = json_object_get(o, "spec");
        json_t *tpl = json_is_object(spec) ? json_object_get(spec, "template") : NULL;
        if (json_is_object(tpl))
            rename_refs_in(json_object_get(tpl, "metadata"), names, cluster);
        label_pod_templates(o, job_name, job_uid, cluster);
    }
    json_decref(names);
    return out;
}
