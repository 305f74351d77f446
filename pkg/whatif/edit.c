/* edit.c -- the option changes of `whatif` applied to the copy's objects:
 * nodes removed or added from a template, queue quotas set, the leader's
 * assumed pods and nominations laid over a LIST. */
#include "whatif/whatif.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "util/util.h"

static const char *const res_names[3] = { "gpu", "cpu", "memory" };

static const char *kind_of(const json_t *o)
{
    return json_string_value(json_object_get(o, "kind"));
}

static const char *name_of(const json_t *o)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
}

static int is_kind(const json_t *o, const char *kind)
{
    const char *k = kind_of(o);
    return k && !strcmp(k, kind);
}

/* ------------------------------------------------------------ quota */

void whatif_quota_free(whatif_quota_t *q)
{
    free(q->queue);
    for (int r = 0; r < 3; r++)
        json_decref(q->val[r]);
    memset(q, 0, sizeof *q);
}

int whatif_parse_quota(const char *arg, whatif_quota_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return util_errf(err, errlen, "--set-quota %s: want QUEUE=gpu:N[,cpu:Q][,memory:Q]", arg);
    out->queue = util_strndup(arg, (size_t)(eq - arg));
    char *list = util_strdup(eq + 1), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(list, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        int r = -1;
        if (colon) {
            *colon = '\0';
            for (int k = 0; k < 3; k++)
                if (!strcmp(tok, res_names[k]))
                    r = k;
        }
        if (r < 0) {
            rc = util_errf(err, errlen, "--set-quota %s: \"%s\" is not gpu:N, cpu:Q or memory:Q", arg, tok);
            break;
        }
        const char *v = colon + 1;
        int64_t q = 0;
        char e[120] = "";
        if (out->val[r]) {
            rc = util_errf(err, errlen, "--set-quota %s: %s given twice", arg, res_names[r]);
        } else if (!strcmp(v, "-1")) {
            out->val[r] = json_integer(-1); /* no quota, as the Queue API says */
        } else if (quantity_parse(v, r == 1 ? 3 : 0, &q, e, sizeof e) != 0 || q < 0) {
            rc = util_errf(err, errlen, "--set-quota %s: %s: %s", arg, res_names[r], e[0] ? e : "negative");
        } else if (r == 0) {
            /* GPUs are counted: 1.5 GPUs is no quota anyone means */
            int64_t whole = 0;
            quantity_parse(v, 3, &whole, NULL, 0);
            if (whole % 1000)
                rc = util_errf(err, errlen, "--set-quota %s: gpu must be a whole number", arg);
            else
                out->val[r] = json_integer(q);
        } else if (r == 1) {
            out->val[r] = json_integer(q); /* the Queue API's unit: millicores */
        } else if (q % 1000000 == 0) {
            out->val[r] = json_integer(q / 1000000); /* MB (10^6 bytes) */
        } else {
            out->val[r] = json_real((double)q / 1e6);
        }
    }
    free(list);
    if (rc == 0 && !out->val[0] && !out->val[1] && !out->val[2])
        rc = util_errf(err, errlen, "--set-quota %s: no resource given", arg);
    if (rc != 0)
        whatif_quota_free(out);
    return rc;
}

/* A quota or limit field as the Queue parser reads it, in its units; -1 none. */
static double queue_num(const json_t *v, int r)
{
    if (json_is_number(v))
        return json_number_value(v);
    if (json_is_string(v)) {
        int64_t q = 0;
        if (quantity_parse(json_string_value(v), r == 1 ? 3 : 0, &q, NULL, 0) != 0)
            return -1;
        return r == 2 ? (double)q / 1e6 : (double)q;
    }
    return -1;
}

static int set_res_quota(json_t *resources, int r, json_t *val, int only_if_set, const char *queue, char *err,
                         size_t errlen)
{
    json_t *o = json_object_get(resources, res_names[r]);
    if (only_if_set && !json_object_get(o, "quota"))
        return 0;
    if (!json_is_object(o)) {
        o = json_object();
        json_object_set_new(resources, res_names[r], o);
    }
    double limit = queue_num(json_object_get(o, "limit"), r), q = queue_num(val, r);
    if (limit >= 0 && q > limit)
        return util_errf(err, errlen, "--set-quota: queue %s: %s limit %g is below the new quota %g", queue,
                         res_names[r], limit, q);
    json_object_set(o, "quota", val);
    return 0;
}

int whatif_set_quota(json_t *items, const whatif_quota_t *q, char *err, size_t errlen)
{
    size_t i;
    json_t *o;
    json_array_foreach (items, i, o) {
        if (!is_kind(o, "Queue") || !name_of(o) || strcmp(name_of(o), q->queue))
            continue;
        json_t *spec = json_object_get(o, "spec");
        if (!json_is_object(spec)) {
            spec = json_object();
            json_object_set_new(o, "spec", spec);
        }
        json_t *res = json_object_get(spec, "resources");
        if (!json_is_object(res)) {
            res = json_object();
            json_object_set_new(spec, "resources", res);
        }
        for (int r = 0; r < 3; r++) {
            if (!q->val[r])
                continue;
            if (set_res_quota(res, r, q->val[r], 0, q->queue, err, errlen) < 0)
                return -1;
            const char *pool;
            json_t *pv;
            json_object_foreach (json_object_get(spec, "pools"), pool, pv) {
                json_t *pres = json_object_get(pv, "resources");
                if (json_is_object(pres) && set_res_quota(pres, r, q->val[r], 1, q->queue, err, errlen) < 0)
                    return -1;
            }
        }
        return 0;
    }
    return util_errf(err, errlen, "--set-quota: no Queue named %s", q->queue);
}

/* ------------------------------------------------------------ nodes */

/* Owned by a controller that would make a replacement elsewhere. */
static int replaced_by_controller(const json_t *pod)
{
    size_t i;
    json_t *ref;
    json_array_foreach (json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i, ref) {
        const char *kind = json_string_value(json_object_get(ref, "kind"));
        if (json_is_true(json_object_get(ref, "controller")))
            return !kind || strcmp(kind, "DaemonSet") != 0;
    }
    return 0;
}

static int terminal(const json_t *pod)
{
    const char *ph = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"));
}

int whatif_remove_node(json_t *items, const char *name, int *requeued, int *dropped, char *err, size_t errlen)
{
    int found = 0;
    *requeued = *dropped = 0;
    for (size_t i = 0; i < json_array_size(items);) {
        json_t *o = json_array_get(items, i);
        if ((is_kind(o, "Node") || is_kind(o, "CSINode")) && name_of(o) && !strcmp(name_of(o), name)) {
            found += is_kind(o, "Node");
            json_array_remove(items, i);
            continue;
        }
        json_t *spec = json_object_get(o, "spec");
        const char *nn = json_string_value(json_object_get(spec, "nodeName"));
        if (!is_kind(o, "Pod") || !nn || strcmp(nn, name)) {
            i++;
            continue;
        }
        if (terminal(o) || !replaced_by_controller(o)) {
            ++*dropped;
            json_array_remove(items, i);
            continue;
        }
        /* the replacement: pending, never started, a uid of its own */
        json_t *meta = json_object_get(o, "metadata");
        const char *uid = json_string_value(json_object_get(meta, "uid"));
        sbuf_t u = { 0 };
        sbuf_printf(&u, "%s-whatif", uid ? uid : name_of(o) ? name_of(o) : "pod");
        json_object_set_new(meta, "uid", json_string(u.data));
        sbuf_free(&u);
        json_object_del(spec, "nodeName");
        json_object_set_new(o, "status", json_pack("{s:s}", "phase", "Pending"));
        ++*requeued;
        i++;
    }
    if (!found)
        return util_errf(err, errlen, "--remove-node: no node named %s", name);
    return 0;
}

static int node_exists(const json_t *items, const char *name)
{
    size_t i;
    json_t *o;
    json_array_foreach (items, i, o)
        if (is_kind(o, "Node") && name_of(o) && !strcmp(name_of(o), name))
            return 1;
    return 0;
}

int whatif_add_nodes(json_t *items, const json_t *tmpl, int n, char *err, size_t errlen)
{
    if (!is_kind(tmpl, "Node"))
        return util_errf(err, errlen, "--node-template: not a Node (kind %s)",
                         kind_of(tmpl) ? kind_of(tmpl) : "missing");
    json_t *alloc = json_object_get(json_object_get(tmpl, "status"), "allocatable");
    if (!json_is_object(alloc) || json_object_size(alloc) == 0)
        return util_errf(err, errlen, "--node-template: the Node has no status.allocatable (what it offers)");
    const char *base = name_of(tmpl);
    char ts[40];
    util_rfc3339(util_wall_ms(), ts, sizeof ts);
    for (int k = 1; k <= n; k++) {
        sbuf_t nm = { 0 };
        if (base && *base)
            sbuf_printf(&nm, "%s-whatif-%d", base, k);
        else
            sbuf_printf(&nm, "whatif-node-%d", k);
        if (node_exists(items, nm.data)) {
            util_errf(err, errlen, "--add-nodes: a node named %s exists already", nm.data);
            sbuf_free(&nm);
            return -1;
        }
        json_t *node = json_deep_copy(tmpl);
        json_object_set_new(node, "apiVersion", json_string("v1"));
        json_t *meta = json_object_get(node, "metadata");
        if (!json_is_object(meta)) {
            meta = json_object();
            json_object_set_new(node, "metadata", meta);
        }
        static const char *const drop[] = { "uid",          "resourceVersion", "managedFields",    "selfLink",
                                            "generateName", "namespace",       "deletionTimestamp" };
        for (size_t d = 0; d < sizeof drop / sizeof drop[0]; d++)
            json_object_del(meta, drop[d]);
        json_object_set_new(meta, "name", json_string(nm.data));
        sbuf_t uid = { 0 };
        sbuf_printf(&uid, "whatif-node-%s", nm.data);
        json_object_set_new(meta, "uid", json_string(uid.data));
        sbuf_free(&uid);
        json_object_set_new(meta, "creationTimestamp", json_string(ts));
        json_t *labels = json_object_get(meta, "labels");
        if (!json_is_object(labels)) {
            labels = json_object();
            json_object_set_new(meta, "labels", labels);
        }
        json_object_set_new(labels, "kubernetes.io/hostname", json_string(nm.data));
        /* a fresh node: the template's own taints stay (they are its
         * configuration), but not one saying it is unready or new */
        json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
        for (size_t t = 0; t < json_array_size(taints);) {
            const char *key = json_string_value(json_object_get(json_array_get(taints, t), "key"));
            if (key &&
                (!strcmp(key, "node.kubernetes.io/not-ready") || !strcmp(key, "node.kubernetes.io/unreachable") ||
                 !strcmp(key, "node.kubernetes.io/unschedulable")))
                json_array_remove(taints, t);
            else
                t++;
        }
        json_object_del(json_object_get(node, "status"), "images"); /* a new node has pulled nothing */
        json_array_append_new(items, node);
        sbuf_free(&nm);
    }
    return 0;
}

/* ------------------------------------------------------------ overlay */

int whatif_overlay(json_t *items, const json_t *state, char *err, size_t errlen)
{
    json_t *assumed = json_object_get(state, "assumed"), *nominated = json_object_get(state, "nominated");
    if (!json_is_object(state) || !json_is_array(assumed) || !json_is_array(nominated))
        return util_errf(err, errlen, "the leader's state has no assumed and nominated lists");
    json_t *by_uid = json_object(); /* uid -> pod (borrowed) */
    size_t i;
    json_t *o;
    json_array_foreach (items, i, o) {
        const char *uid = json_string_value(json_object_get(json_object_get(o, "metadata"), "uid"));
        if (is_kind(o, "Pod") && uid)
            json_object_set_new(by_uid, uid, json_pack("{s:O}", "p", o)); /* wrapped: no cycle */
    }
    int changed = 0;
    for (int pass = 0; pass < 2; pass++) {
        json_array_foreach (pass ? nominated : assumed, i, o) {
            const char *uid = json_string_value(json_object_get(o, "uid"));
            const char *node = json_string_value(json_object_get(o, "node"));
            json_t *pod = uid ? json_object_get(json_object_get(by_uid, uid), "p") : NULL;
            if (!pod || !node || !*node)
                continue;
            if (pass == 0) {
                json_t *spec = json_object_get(pod, "spec");
                const char *nn = json_string_value(json_object_get(spec, "nodeName"));
                if (json_is_object(spec) && (!nn || !*nn)) {
                    json_object_set_new(spec, "nodeName", json_string(node));
                    changed++;
                }
            } else {
                json_t *st = json_object_get(pod, "status");
                if (!json_is_object(st)) {
                    st = json_object();
                    json_object_set_new(pod, "status", st);
                }
                json_object_set_new(st, "nominatedNodeName", json_string(node));
                changed++;
            }
        }
    }
    json_decref(by_uid);
    return changed;
}
