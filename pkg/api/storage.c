/* storage.c -- parsing of pod volumes, PVs, PVCs, StorageClasses and
 * CSINodes; every shape is checked, bad input gives an error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "api/storage.h"
#include "util/util.h"

/* ---- small typed getters: absent is fine, a wrong type is an error ---- */

static int st_str(json_t *obj, const char *key, const char *def, char **out, const char *what, char *err, size_t errlen)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (v && !json_is_null(v) && !json_is_string(v))
        return util_errf(err, errlen, "%s.%s: not a string", what, key);
    *out = util_strdup(json_is_string(v) ? json_string_value(v) : def);
    return 0;
}

static int st_obj(json_t *obj, const char *key, json_t **out, const char *what, char *err, size_t errlen)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    *out = NULL;
    if (v && !json_is_null(v) && !json_is_object(v))
        return util_errf(err, errlen, "%s.%s: not an object", what, key);
    *out = json_is_object(v) ? v : NULL;
    return 0;
}

static int st_bool(json_t *obj, const char *key, int *out, const char *what, char *err, size_t errlen)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    *out = 0;
    if (v && !json_is_null(v) && !json_is_boolean(v))
        return util_errf(err, errlen, "%s.%s: not a boolean", what, key);
    *out = json_is_true(v);
    return 0;
}

static const char *ann_get(json_t *meta, const char *key)
{
    json_t *v = json_object_get(json_object_get(meta, "annotations"), key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* metadata: name (required), namespace, uid, resourceVersion, deletion. */
static int st_meta(json_t *obj, json_t **meta, char **ns, char **name, char **uid, char **rv, int *deleting,
                   const char *what, char *err, size_t errlen)
{
    if (!json_is_object(obj))
        return util_errf(err, errlen, "%s: not an object", what);
    if (st_obj(obj, "metadata", meta, what, err, errlen) < 0)
        return -1;
    if (!*meta)
        return util_errf(err, errlen, "%s: no metadata", what);
    json_t *ann = json_object_get(*meta, "annotations");
    if (ann && !json_is_null(ann) && !json_is_object(ann))
        return util_errf(err, errlen, "%s: metadata.annotations: not an object", what);
    if (st_str(*meta, "name", "", name, what, err, errlen) < 0)
        return -1;
    if (!(*name)[0])
        return util_errf(err, errlen, "%s: no metadata.name", what);
    if ((ns && st_str(*meta, "namespace", "", ns, what, err, errlen) < 0) ||
        st_str(*meta, "uid", "", uid, what, err, errlen) < 0 ||
        st_str(*meta, "resourceVersion", "", rv, what, err, errlen) < 0)
        return -1;
    json_t *del = json_object_get(*meta, "deletionTimestamp");
    *deleting = del && !json_is_null(del);
    return 0;
}

static int st_access_modes(json_t *spec, unsigned *out, const char *what, char *err, size_t errlen)
{
    json_t *a = json_object_get(spec, "accessModes"), *m;
    size_t i;
    *out = 0;
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a))
        return util_errf(err, errlen, "%s.accessModes: not a list", what);
    json_array_foreach (a, i, m) {
        const char *s = json_string_value(m);
        if (!s)
            return util_errf(err, errlen, "%s.accessModes: not a string", what);
        if (strcmp(s, "ReadWriteOnce") == 0)
            *out |= AM_RWO;
        else if (strcmp(s, "ReadOnlyMany") == 0)
            *out |= AM_ROX;
        else if (strcmp(s, "ReadWriteMany") == 0)
            *out |= AM_RWX;
        else
            return util_errf(err, errlen, "%s.accessModes: unknown mode %.40s", what, s);
    }
    return 0;
}

static int st_storage(json_t *list, int64_t *out, const char *what, char *err, size_t errlen)
{
    json_t *v = json_object_get(list, "storage");
    *out = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return util_errf(err, errlen, "%s.storage: not a quantity", what);
    char qerr[128];
    if (quantity_parse(json_string_value(v), 0, out, qerr, sizeof(qerr)) < 0)
        return util_errf(err, errlen, "%s.storage: %s", what, qerr);
    if (*out < 0)
        return util_errf(err, errlen, "%s.storage: negative", what);
    return 0;
}

static int st_block(json_t *spec, int *block, const char *what, char *err, size_t errlen)
{
    char *mode = NULL;
    if (st_str(spec, "volumeMode", "Filesystem", &mode, what, err, errlen) < 0)
        return -1;
    *block = strcmp(mode, "Block") == 0;
    free(mode);
    return 0;
}

/* GetPersistentVolume(Claim)Class: the beta annotation wins. */
static int st_class(json_t *meta, json_t *spec, char **out, const char *what, char *err, size_t errlen)
{
    const char *beta = ann_get(meta, ANN_BETA_CLASS);
    if (beta) {
        *out = util_strdup(beta);
        return 0;
    }
    return st_str(spec, "storageClassName", "", out, what, err, errlen);
}

/* ---- pod volumes --------------------------------------------------------- */

static void vol_free(pod_volume_t *v)
{
    free(v->name);
    free(v->id);
    for (int i = 0; i < v->nmonitors; i++)
        free(v->monitors[i]);
    free(v->monitors);
    free(v->pool);
}

void pod_volumes_free(pod_volume_t *v, int n)
{
    for (int i = 0; i < n; i++)
        vol_free(&v[i]);
    free(v);
}

typedef struct vol_kind {
    const char *field;
    pod_volume_kind_t kind;
    const char *id;
} vol_kind_t;

static const vol_kind_t VOL_KINDS[] = {
    { "persistentVolumeClaim", PVOL_PVC, "claimName" },
    { "gcePersistentDisk", PVOL_GCE_PD, "pdName" },
    { "awsElasticBlockStore", PVOL_AWS_EBS, "volumeID" },
    { "rbd", PVOL_RBD, "image" },
    { "iscsi", PVOL_ISCSI, "iqn" },
    { "azureDisk", PVOL_AZURE_DISK, "diskName" },
    { "cinder", PVOL_CINDER, "volumeID" },
    { "csi", PVOL_CSI, "driver" },
    { "ephemeral", PVOL_EPHEMERAL, NULL },
};

static int parse_volume(json_t *jv, pod_volume_t *v, char *err, size_t errlen)
{
    if (!json_is_object(jv))
        return util_errf(err, errlen, "spec.volumes: entry not an object");
    if (st_str(jv, "name", "", &v->name, "spec.volumes[]", err, errlen) < 0)
        return -1;
    for (size_t k = 0; k < sizeof(VOL_KINDS) / sizeof(VOL_KINDS[0]); k++) {
        json_t *src;
        if (st_obj(jv, VOL_KINDS[k].field, &src, "spec.volumes[]", err, errlen) < 0)
            return -1;
        if (!src)
            continue;
        v->kind = VOL_KINDS[k].kind;
        if (VOL_KINDS[k].id && st_str(src, VOL_KINDS[k].id, "", &v->id, VOL_KINDS[k].field, err, errlen) < 0)
            return -1;
        if (st_bool(src, "readOnly", &v->read_only, VOL_KINDS[k].field, err, errlen) < 0)
            return -1;
        if (v->kind == PVOL_RBD) {
            json_t *mons = json_object_get(src, "monitors"), *m;
            size_t i;
            if (st_str(src, "pool", "rbd", &v->pool, "rbd", err, errlen) < 0)
                return -1;
            if (mons && !json_is_null(mons) && !json_is_array(mons))
                return util_errf(err, errlen, "rbd.monitors: not a list");
            if (json_array_size(mons) > 0)
                v->monitors = util_xcalloc(json_array_size(mons), sizeof(char *));
            json_array_foreach (mons, i, m) {
                if (!json_is_string(m))
                    return util_errf(err, errlen, "rbd.monitors: not a string");
                v->monitors[v->nmonitors++] = util_strdup(json_string_value(m));
            }
        }
        break;
    }
    if (!v->id)
        v->id = util_strdup("");
    if (v->kind == PVOL_PVC && !v->id[0])
        return util_errf(err, errlen, "spec.volumes[%.60s]: persistentVolumeClaim without claimName", v->name);
    return 0;
}

int pod_volumes_from_json(json_t *spec, pod_volume_t **out, int *n, char *err, size_t errlen)
{
    json_t *vols = spec ? json_object_get(spec, "volumes") : NULL, *jv;
    size_t i;
    *out = NULL;
    *n = 0;
    if (!vols || json_is_null(vols))
        return 0;
    if (!json_is_array(vols))
        return util_errf(err, errlen, "spec.volumes: not a list");
    if (json_array_size(vols) == 0)
        return 0;
    pod_volume_t *v = util_xcalloc(json_array_size(vols), sizeof(*v));
    json_array_foreach (vols, i, jv) {
        if (parse_volume(jv, &v[i], err, errlen) < 0) {
            pod_volumes_free(v, (int)i + 1);
            return -1;
        }
    }
    *out = v;
    *n = (int)json_array_size(vols);
    return 0;
}

/* ---- PersistentVolume ---------------------------------------------------- */

static void pv_free(pv_t *v)
{
    free(v->name);
    free(v->uid);
    free(v->resource_version);
    labels_free(&v->labels);
    free(v->class_name);
    free(v->claim_ns);
    free(v->claim_name);
    free(v->claim_uid);
    for (int i = 0; i < v->naffinity; i++)
        selector_free(&v->affinity[i]);
    free(v->affinity);
    free(v->csi_driver);
    free(v->csi_handle);
    free(v->intree_id);
    free(v);
}

static int pv_parse_affinity(pv_t *v, json_t *spec, char *err, size_t errlen)
{
    json_t *na, *req, *terms, *t;
    size_t i;
    if (st_obj(spec, "nodeAffinity", &na, "pv.spec", err, errlen) < 0 ||
        st_obj(na, "required", &req, "pv.spec.nodeAffinity", err, errlen) < 0)
        return -1;
    if (!req)
        return 0;
    v->has_affinity = 1;
    terms = json_object_get(req, "nodeSelectorTerms");
    if (terms && !json_is_null(terms) && !json_is_array(terms))
        return util_errf(err, errlen, "pv.spec.nodeAffinity.required.nodeSelectorTerms: not a list");
    if (json_array_size(terms) == 0)
        return 0;
    v->affinity = util_xcalloc(json_array_size(terms), sizeof(selector_t));
    json_array_foreach (terms, i, t) {
        if (selector_from_node_term(&v->affinity[i], t, err, errlen) < 0)
            return -1;
        v->naffinity++;
    }
    return 0;
}

pv_t *pv_from_json(json_t *obj, char *err, size_t errlen)
{
    pv_t *v = util_xcalloc(1, sizeof(*v));
    json_t *meta, *spec, *status, *claim, *csi, *cap;
    char *phase = NULL;
    v->refs = 1;
    if (st_meta(obj, &meta, NULL, &v->name, &v->uid, &v->resource_version, &v->deleting, "pv", err, errlen) < 0 ||
        labels_from_json(&v->labels, json_object_get(meta, "labels"), err, errlen) < 0 ||
        st_obj(obj, "spec", &spec, "pv", err, errlen) < 0 || st_obj(obj, "status", &status, "pv", err, errlen) < 0 ||
        st_obj(spec, "capacity", &cap, "pv.spec", err, errlen) < 0 ||
        st_storage(cap, &v->capacity, "pv.spec.capacity", err, errlen) < 0 ||
        st_access_modes(spec, &v->access_modes, "pv.spec", err, errlen) < 0 ||
        st_class(meta, spec, &v->class_name, "pv.spec", err, errlen) < 0 ||
        st_block(spec, &v->block, "pv.spec", err, errlen) < 0 ||
        st_obj(spec, "claimRef", &claim, "pv.spec", err, errlen) < 0 ||
        st_str(claim, "namespace", "", &v->claim_ns, "pv.spec.claimRef", err, errlen) < 0 ||
        st_str(claim, "name", "", &v->claim_name, "pv.spec.claimRef", err, errlen) < 0 ||
        st_str(claim, "uid", "", &v->claim_uid, "pv.spec.claimRef", err, errlen) < 0 ||
        st_obj(spec, "csi", &csi, "pv.spec", err, errlen) < 0 ||
        st_str(csi, "driver", "", &v->csi_driver, "pv.spec.csi", err, errlen) < 0 ||
        st_str(csi, "volumeHandle", "", &v->csi_handle, "pv.spec.csi", err, errlen) < 0 ||
        st_str(status, "phase", "", &phase, "pv.status", err, errlen) < 0 ||
        pv_parse_affinity(v, spec, err, errlen) < 0) {
        free(phase);
        pv_free(v);
        return NULL;
    }
    v->has_claim_ref = claim != NULL;
    v->available = strcmp(phase, "Available") == 0;
    free(phase);
    /* The in-tree sources the volume-limit filters count (VOL_KINDS order). */
    for (size_t k = 1; k < sizeof(VOL_KINDS) / sizeof(VOL_KINDS[0]) && !v->intree_id; k++) {
        pod_volume_kind_t kind = VOL_KINDS[k].kind;
        json_t *src;
        if (kind != PVOL_AWS_EBS && kind != PVOL_GCE_PD && kind != PVOL_AZURE_DISK && kind != PVOL_CINDER)
            continue;
        if (st_obj(spec, VOL_KINDS[k].field, &src, "pv.spec", err, errlen) < 0) {
            pv_free(v);
            return NULL;
        }
        if (!src)
            continue;
        if (st_str(src, VOL_KINDS[k].id, "", &v->intree_id, VOL_KINDS[k].field, err, errlen) < 0) {
            pv_free(v);
            return NULL;
        }
        v->intree = kind;
    }
    if (!v->intree_id)
        v->intree_id = util_strdup("");
    return v;
}

pv_t *pv_ref(pv_t *v)
{
    if (v)
        __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED);
    return v;
}

void pv_unref(pv_t *v)
{
    if (v && __atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) == 0)
        pv_free(v);
}

int pv_matches_node(const pv_t *pv, const labels_t *node_labels, const char *node_name)
{
    if (!pv->has_affinity)
        return 1;
    for (int i = 0; i < pv->naffinity; i++)
        if (!selector_is_empty(&pv->affinity[i]) && selector_matches(&pv->affinity[i], node_labels, node_name))
            return 1;
    return 0;
}

/* ---- PersistentVolumeClaim ----------------------------------------------- */

static void pvc_free(pvc_t *c)
{
    free(c->ns);
    free(c->name);
    free(c->uid);
    free(c->key);
    free(c->resource_version);
    free(c->class_name);
    free(c->volume_name);
    free(c->selected_node);
    selector_free(&c->selector);
    free(c);
}

pvc_t *pvc_from_json(json_t *obj, char *err, size_t errlen)
{
    pvc_t *c = util_xcalloc(1, sizeof(*c));
    json_t *meta, *spec, *res, *req, *sel;
    c->refs = 1;
    if (st_meta(obj, &meta, &c->ns, &c->name, &c->uid, &c->resource_version, &c->deleting, "pvc", err, errlen) < 0 ||
        st_obj(obj, "spec", &spec, "pvc", err, errlen) < 0 ||
        st_class(meta, spec, &c->class_name, "pvc.spec", err, errlen) < 0 ||
        st_str(spec, "volumeName", "", &c->volume_name, "pvc.spec", err, errlen) < 0 ||
        st_obj(spec, "resources", &res, "pvc.spec", err, errlen) < 0 ||
        st_obj(res, "requests", &req, "pvc.spec.resources", err, errlen) < 0 ||
        st_storage(req, &c->request, "pvc.spec.resources.requests", err, errlen) < 0 ||
        st_access_modes(spec, &c->access_modes, "pvc.spec", err, errlen) < 0 ||
        st_block(spec, &c->block, "pvc.spec", err, errlen) < 0 ||
        st_obj(spec, "selector", &sel, "pvc.spec", err, errlen) < 0 ||
        (sel && selector_from_label_selector(&c->selector, sel, err, errlen) < 0)) {
        pvc_free(c);
        return NULL;
    }
    c->has_selector = sel != NULL;
    const char *node = ann_get(meta, ANN_SELECTED_NODE);
    c->has_selected_node = node != NULL;
    c->selected_node = util_strdup(node ? node : "");
    c->bind_completed = ann_get(meta, ANN_BIND_COMPLETED) != NULL;
    sbuf_t k = { 0 };
    sbuf_printf(&k, "%s/%s", c->ns, c->name);
    c->key = k.data;
    return c;
}

pvc_t *pvc_ref(pvc_t *c)
{
    if (c)
        __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
    return c;
}

void pvc_unref(pvc_t *c)
{
    if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
        pvc_free(c);
}

int pvc_is_fully_bound(const pvc_t *c)
{
    return c->volume_name[0] != '\0' && c->bind_completed;
}

/* ---- StorageClass -------------------------------------------------------- */

static void sc_free(storage_class_t *c)
{
    free(c->name);
    free(c->provisioner);
    for (int i = 0; i < c->ntopologies; i++)
        selector_free(&c->topologies[i]);
    free(c->topologies);
    free(c);
}

/* A TopologySelectorTerm: matchLabelExpressions [{key, values}], each an In. */
static int sc_parse_term(selector_t *out, json_t *term, char *err, size_t errlen)
{
    json_t *exprs = json_is_object(term) ? json_object_get(term, "matchLabelExpressions") : NULL, *e;
    size_t i;
    if (!json_is_object(term) || (exprs && !json_is_null(exprs) && !json_is_array(exprs)))
        return util_errf(err, errlen, "storageclass.allowedTopologies: bad term");
    /* Reuse the node-term parser: {key, operator In, values}. */
    json_t *conv = json_array();
    json_array_foreach (exprs, i, e) {
        json_t *k = json_object_get(e, "key"), *vals = json_object_get(e, "values");
        /* The API requires values; a term without any could match nothing. */
        if (!json_is_string(k) || !json_is_array(vals) || json_array_size(vals) == 0) {
            json_decref(conv);
            return util_errf(err, errlen, "storageclass.allowedTopologies: bad expression");
        }
        json_array_append_new(conv, json_pack("{s:O, s:s, s:O}", "key", k, "operator", "In", "values", vals));
    }
    json_t *t = json_pack("{s:o}", "matchExpressions", conv);
    int rc = selector_from_node_term(out, t, err, errlen);
    json_decref(t);
    return rc;
}

storage_class_t *storage_class_from_json(json_t *obj, char *err, size_t errlen)
{
    storage_class_t *c = util_xcalloc(1, sizeof(*c));
    json_t *meta, *topo, *t;
    char *uid = NULL, *rv = NULL, *mode = NULL;
    int deleting;
    size_t i;
    c->refs = 1;
    if (st_meta(obj, &meta, NULL, &c->name, &uid, &rv, &deleting, "storageclass", err, errlen) < 0 ||
        st_str(obj, "provisioner", "", &c->provisioner, "storageclass", err, errlen) < 0 ||
        st_str(obj, "volumeBindingMode", "", &mode, "storageclass", err, errlen) < 0)
        goto fail;
    if (strcmp(mode, "Immediate") == 0)
        c->mode = SC_BIND_IMMEDIATE;
    else if (strcmp(mode, "WaitForFirstConsumer") == 0)
        c->mode = SC_BIND_WAIT;
    else
        c->mode = SC_BIND_UNSET;
    topo = json_object_get(obj, "allowedTopologies");
    if (topo && !json_is_null(topo) && !json_is_array(topo)) {
        util_errf(err, errlen, "storageclass.allowedTopologies: not a list");
        goto fail;
    }
    if (json_array_size(topo) > 0)
        c->topologies = util_xcalloc(json_array_size(topo), sizeof(selector_t));
    json_array_foreach (topo, i, t) {
        if (sc_parse_term(&c->topologies[i], t, err, errlen) < 0)
            goto fail;
        c->ntopologies++;
    }
    free(uid);
    free(rv);
    free(mode);
    return c;
fail:
    free(uid);
    free(rv);
    free(mode);
    sc_free(c);
    return NULL;
}

storage_class_t *storage_class_ref(storage_class_t *c)
{
    if (c)
        __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
    return c;
}

void storage_class_unref(storage_class_t *c)
{
    if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
        sc_free(c);
}

/* A term matches when each of its expressions does; an empty term matches. */
int storage_class_allows(const storage_class_t *sc, const labels_t *node_labels)
{
    if (sc->ntopologies == 0)
        return 1;
    for (int i = 0; i < sc->ntopologies; i++) {
        if (selector_matches(&sc->topologies[i], node_labels, NULL))
            return 1;
    }
    return 0;
}

/* ---- CSINode --------------------------------------------------------------- */

static void csinode_free(csinode_t *c)
{
    free(c->name);
    for (int i = 0; i < c->ndrivers; i++)
        free(c->drivers[i].name);
    free(c->drivers);
    free(c);
}

csinode_t *csinode_from_json(json_t *obj, char *err, size_t errlen)
{
    csinode_t *c = util_xcalloc(1, sizeof(*c));
    json_t *meta, *spec, *drivers, *d;
    char *uid = NULL, *rv = NULL;
    int deleting;
    size_t i;
    c->refs = 1;
    if (st_meta(obj, &meta, NULL, &c->name, &uid, &rv, &deleting, "csinode", err, errlen) < 0 ||
        st_obj(obj, "spec", &spec, "csinode", err, errlen) < 0)
        goto fail;
    drivers = json_object_get(spec, "drivers");
    if (drivers && !json_is_null(drivers) && !json_is_array(drivers)) {
        util_errf(err, errlen, "csinode.spec.drivers: not a list");
        goto fail;
    }
    if (json_array_size(drivers) > 0)
        c->drivers = util_xcalloc(json_array_size(drivers), sizeof(*c->drivers));
    json_array_foreach (drivers, i, d) {
        csi_driver_limit_t *dl = &c->drivers[c->ndrivers];
        json_t *alloc, *count;
        if (!json_is_object(d)) {
            util_errf(err, errlen, "csinode.spec.drivers: entry not an object");
            goto fail;
        }
        if (st_str(d, "name", "", &dl->name, "csinode.spec.drivers[]", err, errlen) < 0)
            goto fail;
        c->ndrivers++;
        if (st_obj(d, "allocatable", &alloc, "csinode.spec.drivers[]", err, errlen) < 0)
            goto fail;
        count = json_object_get(alloc, "count");
        if (count && !json_is_null(count)) {
            if (!json_is_integer(count) || json_integer_value(count) < 0 || json_integer_value(count) > INT32_MAX) {
                util_errf(err, errlen, "csinode.spec.drivers[].allocatable.count: not a count");
                goto fail;
            }
            dl->has_count = 1;
            dl->count = json_integer_value(count);
        }
    }
    free(uid);
    free(rv);
    return c;
fail:
    free(uid);
    free(rv);
    csinode_free(c);
    return NULL;
}

csinode_t *csinode_ref(csinode_t *c)
{
    if (c)
        __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
    return c;
}

void csinode_unref(csinode_t *c)
{
    if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
        csinode_free(c);
}
