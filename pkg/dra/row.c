/* row.c -- the dynamic-resources row: DRA's informers feed the store
 * (store.c); a pod whose claims cannot be allocated anywhere now is kept
 * out of the queues, saying why, until a DRA object changes; Reserve holds
 * the pod's devices; PreBind writes each claim's allocation and
 * reservedFor through its /status (with the claim's resourceVersion), and
 * a bind that does not happen has what was written undone by the
 * housekeeper. A pod's extended resources a DeviceClass serves on a node
 * that does not advertise them (KEP-5004) get a claim PreBind creates,
 * and the pod's status.extendedResourceClaimStatus names it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dra/claims.h"
#include "dra/row.h"
#include "dra/store.h"
#include "util/hashmap.h"
#include "util/lockorder.h"
#include "util/log.h"
#include "util/util.h"

#define DRA_API         "/apis/resource.k8s.io/v1"
#define DRA_GROUP       "/apis/resource.k8s.io"
#define DRA_VERSION     "resource.k8s.io/v1"
#define DRA_FINALIZER   "resource.kubernetes.io/delete-protection"
#define SERVED_EVERY_MS 10000

typedef struct dra_row {
    const sched_services_t *svc;
    void *core;
    dra_store_t *store;
    pthread_mutex_t mu; /* rank DRA_ROW: held and undo */
    hashmap_t *held;    /* uids of pods pre_enqueue keeps out */
    dra_undo_t *undo;   /* claims to undo (a bind that did not happen) */
    int online;         /* started: its informers list the objects */
    int listed;         /* claims, classes and slices listed */
    int64_t served_checked_ms;
    /* --dra-queue-resources: the classes whose devices Queues count as GPUs. */
    dra_qmap_t *qmaps;
    int nqmaps;
} dra_row_t;

int dra_row_check(const scheduler_opts_t *o, char *err, size_t errlen)
{
    dra_qmap_t *m = NULL;
    int n = 0, rc = dra_qmap_parse(o->dra_queue_resources, &m, &n, err, errlen);
    dra_qmap_free(m, n);
    return rc;
}

static double queue_devices(void *self, const pod_t *pod)
{
    dra_row_t *r = self;
    return dra_store_queue_count(r->store, pod, r->qmaps, r->nqmaps);
}

static void device_attr_nodes(void *self, const char *attr, sched_node_value_fn fn, void *ud)
{
    dra_store_node_attr(((dra_row_t *)self)->store, attr, fn, ud);
}

void dra_row_publish(const sched_row_t *row, sched_published_t *pub)
{
    pub->queue_devices = queue_devices;
    pub->queue_devices_self = row->self;
    pub->device_attr_nodes = device_attr_nodes;
    pub->device_attr_self = row->self;
}

void *dra_row_init(const sched_services_t *svc, void *core)
{
    dra_row_t *r = util_xcalloc(1, sizeof(*r));
    r->svc = svc;
    r->core = core;
    r->store = dra_store_new();
    r->held = hashmap_new(16);
    r->listed = 1;
    pthread_mutex_init(&r->mu, NULL);
    char err[256];
    if (dra_qmap_parse(svc->opts(core)->dra_queue_resources, &r->qmaps, &r->nqmaps, err, sizeof(err)) < 0)
        LOG_W("dra: %s", err); /* dra_row_check refused it before */
    return r;
}

void dra_row_fini(void *self)
{
    dra_row_t *r = self;
    if (!r)
        return;
    dra_store_free(r->store);
    hashmap_free(r->held);
    dra_undo_free(r->undo);
    dra_qmap_free(r->qmaps, r->nqmaps);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

void dra_row_cluster(const sched_row_t *row, fw_cluster_t *cl)
{
    cl->dra = ((dra_row_t *)row->self)->store;
}

/* ---- waking what waits ------------------------------------------------------ */

/* Every pod pre_enqueue keeps out is asked again (it is kept out again if
 * nothing it waits for changed). */
static void release_held(dra_row_t *r)
{
    lo_mutex_lock(&r->mu, LO_DRA_ROW);
    hashmap_t *held = r->held;
    r->held = hashmap_new(16);
    lo_mutex_unlock(&r->mu, LO_DRA_ROW);
    const char *uid;
    void *v;
    for (size_t it = 0; hashmap_next(held, &it, &uid, &v);)
        r->svc->release(r->core, uid);
    hashmap_free(held);
}

/* And every pool's waiting pods move (devices came or were freed). */
static void release_all(dra_row_t *r, const char *event)
{
    release_held(r);
    r->svc->wake_all(r->core, event);
}

static void on_object(dra_row_t *r, const char *kind, int rc, const char *key, const char *err, const char *event)
{
    if (rc < 0)
        LOG_W("dra: %s %s ignored: %s", kind, key, err);
    else if (rc == DRA_CHANGE_NEW)
        release_held(r);
    else if (rc == DRA_CHANGE_MORE)
        release_all(r, event);
}

static void on_class(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    dra_row_t *r = ud;
    char err[256] = "";
    on_object(r, "DeviceClass", dra_store_class(r->store, type, key, obj, err, sizeof(err)), key, err,
              "DeviceClassChanged");
}

static void on_slice(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    dra_row_t *r = ud;
    char err[256] = "";
    on_object(r, "ResourceSlice", dra_store_slice(r->store, type, key, obj, err, sizeof(err)), key, err,
              "ResourceSliceChanged");
}

static void on_claim(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    dra_row_t *r = ud;
    char err[256] = "";
    on_object(r, "ResourceClaim", dra_store_claim(r->store, type, key, obj, err, sizeof(err)), key, err,
              "ResourceClaimChanged");
    /* Pods charged to their queues before this claim was known (listed
     * after them at a start) or allocated count its devices now. */
    size_t i;
    json_t *e;
    json_array_foreach (json_object_get(json_object_get(obj, "status"), "reservedFor"), i, e) {
        const char *uid = json_string_value(json_object_get(e, "uid"));
        if (uid && r->svc->queue_refresh)
            r->svc->queue_refresh(r->core, uid);
    }
}

static void on_template(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    dra_row_t *r = ud;
    dra_store_template(r->store, type, key, obj);
}

const sched_watch_t dra_row_watches[] = {
    { "DeviceClass", DRA_API "/deviceclasses", on_class, 0 },
    { "ResourceSlice", DRA_API "/resourceslices", on_slice, 0 },
    { "ResourceClaim", DRA_API "/resourceclaims", on_claim, 0 },
    { "ResourceClaimTemplate", DRA_API "/resourceclaimtemplates", on_template, 0 },
    { 0 },
};

/* A pod decided before the claims are listed would see their devices
 * free: pods with claims wait (kept out, below) until they are. */
const sched_watch_wait_t dra_row_wait = {
    .kind = "ResourceClaim",
    .ms = 5000,
    .served_path = DRA_GROUP,
    .served_list = "versions",
    .served_field = "groupVersion",
    .served_value = DRA_VERSION,
    .unserved = "DRA (" DRA_VERSION ") is not served by the API server: pods with resourceClaims stay pending, "
                "saying so, until it is",
    .late = "ResourceClaims not listed yet (RBAC for resource.k8s.io?): pods with resourceClaims wait until they are",
};

/* ---- served and listed -------------------------------------------------------- */

/* 1 served, 0 not, -1 unknown (no answer). */
static int api_serves_dra(dra_row_t *r)
{
    long status = 0;
    json_t *out = NULL;
    char err[256];
    if (r->svc->api_json(r->core, "GET", DRA_GROUP, NULL, NULL, &out, &status, err, sizeof(err)) != 0) {
        json_decref(out);
        return status == 404 ? 0 : -1;
    }
    int found = 0;
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(out, "versions"), i, v) {
        const char *gv = json_string_value(json_object_get(v, "groupVersion"));
        found |= gv && !strcmp(gv, DRA_VERSION);
    }
    json_decref(out);
    return found;
}

static void check_served(dra_row_t *r)
{
    int served = api_serves_dra(r);
    r->served_checked_ms = util_now_ms();
    if (served < 0 || served == dra_store_served(r->store))
        return;
    dra_store_set_served(r->store, served);
    if (served) {
        LOG_I("dra: %s is served now: pods with resourceClaims are scheduled", DRA_VERSION);
        release_all(r, "DRAServed");
    } else {
        LOG_W("dra: %s is not served by the API server: pods with resourceClaims stay pending, saying so", DRA_VERSION);
    }
}

static int lists_done(dra_row_t *r)
{
    static const char *const kinds[] = { "ResourceClaim", "DeviceClass", "ResourceSlice" };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!r->svc->watch_synced(r->core, kinds[i]))
            return 0;
    return 1;
}

static void check_listed(dra_row_t *r)
{
    lo_mutex_lock(&r->mu, LO_DRA_ROW);
    int was = r->listed;
    lo_mutex_unlock(&r->mu, LO_DRA_ROW);
    if (was || !lists_done(r))
        return;
    lo_mutex_lock(&r->mu, LO_DRA_ROW);
    r->listed = 1;
    lo_mutex_unlock(&r->mu, LO_DRA_ROW);
    dra_store_set_listed(r->store, 1);
    release_all(r, "ResourceClaimsListed");
}

int dra_row_start(const sched_row_t *row, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    dra_row_t *r = row->self;
    r->online = 1;
    lo_mutex_lock(&r->mu, LO_DRA_ROW);
    r->listed = 0;
    lo_mutex_unlock(&r->mu, LO_DRA_ROW);
    dra_store_set_listed(r->store, 0);
    check_served(r);
    return 0;
}

/* ---- PreEnqueue ------------------------------------------------------------------- */

int dra_row_pre_enqueue(const sched_row_t *row, const pod_t *pod, enqueue_hold_t *hold)
{
    dra_row_t *r = row->self;
    if (!dra_pod(pod))
        return 0;
    dra_prep_t *p = NULL;
    char why[1024];
    dra_prep_rc_t rc = dra_prepare(r->store, pod, &p, why, sizeof(why));
    dra_prep_free(p);
    lo_mutex_lock(&r->mu, LO_DRA_ROW);
    if (rc == DRA_PREP_OK)
        hashmap_remove(r->held, pod->uid);
    else
        hashmap_put(r->held, pod->uid, (void *)1);
    lo_mutex_unlock(&r->mu, LO_DRA_ROW);
    if (rc == DRA_PREP_OK)
        return 0;
    hold->reason = "Unschedulable";
    hold->message = util_strdup(why);
    hold->event = 1;
    return 1;
}

void dra_row_post_bind(const sched_row_t *row, const pod_t *pod, const char *node, const char *lender)
{
    (void)node;
    (void)lender;
    if (dra_pod(pod) || dra_pod_ext(pod))
        dra_store_bound(((dra_row_t *)row->self)->store, pod->uid);
}

void dra_row_pod_deleted(const sched_row_t *row, const pod_t *pod)
{
    dra_row_t *r = row->self;
    lo_mutex_lock(&r->mu, LO_DRA_ROW);
    hashmap_remove(r->held, pod->uid);
    lo_mutex_unlock(&r->mu, LO_DRA_ROW);
}

/* ---- Reserve ------------------------------------------------------------------------ */

typedef struct node_labels {
    labels_t labels;
    resources_t alloc; /* what the node advertises: KEP-5004 serves the rest */
    int found;
} node_labels_t;

static void copy_labels(void *ud, const node_info_t *ni)
{
    node_labels_t *nl = ud;
    if (ni && ni->node && labels_copy(&nl->labels, &ni->node->labels) == 0) {
        nl->alloc = ni->node->allocatable;
        nl->found = 1;
    }
}

int dra_row_reserve(const sched_row_t *row, const pod_t *pod, const char *node, char *err, size_t errlen)
{
    dra_row_t *r = row->self;
    if (!dra_pod(pod) && !dra_pod_ext(pod))
        return 0;
    node_labels_t nl = { 0 };
    r->svc->node_visit(r->core, node, copy_labels, &nl);
    int rc =
        dra_store_reserve(r->store, pod, node, nl.found ? &nl.labels : NULL, nl.found ? &nl.alloc : NULL, err, errlen);
    labels_free(&nl.labels);
    return rc;
}

void dra_row_unreserve(const sched_row_t *row, const pod_t *pod)
{
    dra_row_t *r = row->self;
    if (!dra_pod(pod) && !dra_pod_ext(pod))
        return;
    dra_undo_t *u = dra_store_unreserve(r->store, pod->uid);
    if (!u)
        return;
    dra_undo_t *last = u;
    while (last->next)
        last = last->next;
    lo_mutex_lock(&r->mu, LO_DRA_ROW);
    last->next = r->undo;
    r->undo = u;
    lo_mutex_unlock(&r->mu, LO_DRA_ROW);
}

/* ---- PreBind --------------------------------------------------------------------------- */

static char *claim_path(const char *ns, const char *name, const char *sub)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, DRA_API "/namespaces/%s/resourceclaims/%s%s", ns, name, sub ? sub : "");
    return b.data;
}

/* GET the claim: 0 with *out, or -1 with err (404: *gone). */
static int claim_get(dra_row_t *r, const char *ns, const char *name, json_t **out, int *gone, char *err, size_t errlen)
{
    char *path = claim_path(ns, name, NULL);
    long status = 0;
    int rc = r->svc->api_json(r->core, "GET", path, NULL, NULL, out, &status, err, errlen);
    free(path);
    if (gone)
        *gone = status == 404;
    return rc;
}

static int has_finalizer(json_t *claim)
{
    size_t i;
    json_t *f;
    json_array_foreach (json_object_get(json_object_get(claim, "metadata"), "finalizers"), i, f)
        if (json_is_string(f) && !strcmp(json_string_value(f), DRA_FINALIZER))
            return 1;
    return 0;
}

static int reserved_for(json_t *claim, const char *uid)
{
    size_t i;
    json_t *e;
    json_array_foreach (json_object_get(json_object_get(claim, "status"), "reservedFor"), i, e) {
        const char *u = json_string_value(json_object_get(e, "uid"));
        if (u && !strcmp(u, uid))
            return 1;
    }
    return 0;
}

/* PUT claim (sub: NULL or "/status"): 0 with *claim the answer, 1 on a
 * conflict (409), -1 with err. */
static int claim_put(dra_row_t *r, json_t **claim, const char *ns, const char *name, const char *sub, char *err,
                     size_t errlen)
{
    char *path = claim_path(ns, name, sub);
    long status = 0;
    json_t *out = NULL;
    int rc = r->svc->api_json(r->core, "PUT", path, NULL, *claim, &out, &status, err, errlen);
    free(path);
    if (rc != 0) {
        json_decref(out);
        return status == 409 ? 1 : -1;
    }
    json_decref(*claim);
    *claim = out;
    return 0;
}

/* One try of the claim's writes on claim (taken): 0 done, 1 conflict
 * (try again from a fresh GET), -1 err. */
static int write_once(dra_row_t *r, const pod_t *pod, const dra_write_t *w, json_t *claim, char *err, size_t errlen)
{
    json_t *status = json_object_get(claim, "status");
    json_t *have = json_object_get(status, "allocation");
    int rc = 0;
    if (w->allocation && json_is_object(have) &&
        !json_equal(json_object_get(have, "devices"), json_object_get(w->allocation, "devices"))) {
        util_errf(err, errlen, "resourceclaim %s/%s was allocated by someone else meanwhile", w->ns, w->name);
        rc = -1;
        goto out;
    }
    if (!w->allocation && !json_is_object(have)) {
        util_errf(err, errlen, "resourceclaim %s/%s: its allocation by another pod is not written yet", w->ns, w->name);
        rc = -1;
        goto out;
    }
    if (w->allocation && !json_is_object(have) && !has_finalizer(claim)) {
        json_t *meta = json_object_get(claim, "metadata");
        json_t *fin = json_object_get(meta, "finalizers");
        if (!json_is_array(fin)) {
            fin = json_array();
            json_object_set_new(meta, "finalizers", fin);
        }
        json_array_append_new(fin, json_string(DRA_FINALIZER));
        if ((rc = claim_put(r, &claim, w->ns, w->name, NULL, err, errlen)) != 0)
            goto out;
        status = json_object_get(claim, "status");
    }
    if (reserved_for(claim, pod->uid) && json_is_object(json_object_get(status, "allocation")))
        goto out;
    if (!json_is_object(status)) {
        status = json_object();
        json_object_set_new(claim, "status", status);
    }
    if (w->allocation && !json_is_object(json_object_get(status, "allocation")))
        json_object_set(status, "allocation", w->allocation);
    json_t *rf = json_object_get(status, "reservedFor");
    if (!json_is_array(rf)) {
        rf = json_array();
        json_object_set_new(status, "reservedFor", rf);
    }
    if (!reserved_for(claim, pod->uid))
        json_array_append_new(rf, json_pack("{s:s, s:s, s:s}", "resource", "pods", "name", pod->name, "uid", pod->uid));
    rc = claim_put(r, &claim, w->ns, w->name, "/status", err, errlen);
out:
    json_decref(claim);
    return rc;
}

static int write_claim(dra_row_t *r, const pod_t *pod, const dra_write_t *w, char *err, size_t errlen)
{
    json_t *claim = w->claim ? json_incref(w->claim) : NULL;
    for (int attempt = 0; attempt < 4; attempt++) {
        int gone = 0;
        if (!claim && claim_get(r, w->ns, w->name, &claim, &gone, err, errlen) != 0)
            return gone ? util_errf(err, errlen, "resourceclaim %s/%s is gone", w->ns, w->name) : -1;
        int rc = write_once(r, pod, w, claim, err, errlen);
        claim = NULL;
        if (rc <= 0)
            return rc;
    }
    return util_errf(err, errlen, "resourceclaim %s/%s: conflicts on every write", w->ns, w->name);
}

/* KEP-5004: POST the pod's extended-resource claim (w->create) and tell the
 * store its generated name before its status is written, so the undo of a
 * bind that does not happen deletes it; w then names the created claim. */
static int create_ext_claim(dra_row_t *r, const pod_t *pod, dra_write_t *w, char *err, size_t errlen)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, DRA_API "/namespaces/%s/resourceclaims", pod->ns);
    json_t *out = NULL;
    long status = 0;
    int rc = r->svc->api_json(r->core, "POST", b.data, NULL, w->create, &out, &status, err, errlen);
    sbuf_free(&b);
    const char *name = json_string_value(json_object_get(json_object_get(out, "metadata"), "name"));
    if (rc != 0 || !name) {
        json_decref(out);
        return rc != 0 ? -1 : util_errf(err, errlen, "the created extended-resource claim has no name");
    }
    if (dra_store_ext_created(r->store, pod->uid, name) != 0) {
        /* Unreserved meanwhile: no undo will know the claim, so it goes now. */
        char *path = claim_path(pod->ns, name, NULL);
        char derr[256];
        if (r->svc->api_json(r->core, "DELETE", path, NULL, NULL, NULL, &status, derr, sizeof(derr)) != 0)
            LOG_W("dra: resourceclaim %s/%s (extended resources) not deleted: %s", pod->ns, name, derr);
        free(path);
        json_decref(out);
        return util_errf(err, errlen, "the pod's DRA reservation is gone");
    }
    free(w->name);
    w->name = util_strdup(name);
    json_decref(w->claim);
    w->claim = out;
    return 0;
}

/* The pod's status.extendedResourceClaimStatus, as kube's PreBind patches
 * it after the claim's status (patchPodExtendedResourceClaimStatus). */
static int patch_pod_ext(dra_row_t *r, const pod_t *pod, const dra_write_t *w, char *err, size_t errlen)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, "/api/v1/namespaces/%s/pods/%s/status", pod->ns, pod->name);
    json_t *body = json_pack("{s:{s:{s:O, s:s}}}", "status", "extendedResourceClaimStatus", "requestMappings",
                             w->mappings, "resourceClaimName", w->name);
    long status = 0;
    int rc =
        r->svc->api_json(r->core, "PATCH", b.data, "application/merge-patch+json", body, NULL, &status, err, errlen);
    json_decref(body);
    sbuf_free(&b);
    return rc;
}

int dra_row_pre_bind(const sched_row_t *row, queue_item_t **it, const char *node, const char *lender, json_t **ann,
                     char *err, size_t errlen)
{
    (void)node;
    (void)lender;
    (void)ann;
    dra_row_t *r = row->self;
    const pod_t *pod = (*it)->pod;
    /* A pod with extended resources only has a hold when a class serves
     * one on its node (KEP-5004): else nothing to write, fenced or not. */
    if (!dra_pod(pod) && !(dra_pod_ext(pod) && dra_store_has_hold(r->store, pod->uid)))
        return PREBIND_READY;
    if (r->svc->fenced(r->core)) {
        util_errf(err, errlen, "fenced: no claim is written");
        return PREBIND_FAILED;
    }
    dra_write_t *w = NULL;
    if (dra_store_writes(r->store, pod, &w, err, errlen) != 0)
        return PREBIND_FAILED;
    int rc = PREBIND_READY;
    for (dra_write_t *x = w; x && rc == PREBIND_READY; x = x->next) {
        if ((x->create && create_ext_claim(r, pod, x, err, errlen) != 0) || write_claim(r, pod, x, err, errlen) != 0 ||
            (x->mappings && patch_pod_ext(r, pod, x, err, errlen) != 0)) {
            rc = PREBIND_FAILED;
            break;
        }
        dra_store_written(r->store, pod->uid, x->ns, x->name);
    }
    dra_write_free(w);
    return rc;
}

/* ---- undo -------------------------------------------------------------------------------- */

/* Whether the pod is bound (the API says so) or holds a new reservation:
 * then what its PreBind wrote stays (a Binding answered 409 may have
 * taken, and a retried pod reuses its claims). Unknown counts as bound. */
/* The pod u names as the API has it now: 1 it is bound and still the pod
 * of u's uid (*pod its object, the caller's), 0 not (gone, replaced, not
 * bound), -1 unknown (no answer). */
static int pod_bound_now(dra_row_t *r, const dra_undo_t *u, json_t **pod)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, "/api/v1/namespaces/%s/pods/%s", u->ns, u->pod_name);
    long status = 0;
    char err[256];
    *pod = NULL;
    int rc = r->svc->api_json(r->core, "GET", b.data, NULL, NULL, pod, &status, err, sizeof(err));
    sbuf_free(&b);
    if (rc != 0)
        return status == 404 ? 0 : -1;
    const char *uid = json_string_value(json_object_get(json_object_get(*pod, "metadata"), "uid"));
    const char *node = json_string_value(json_object_get(json_object_get(*pod, "spec"), "nodeName"));
    return uid && !strcmp(uid, u->pod_uid) && node && *node;
}

/* Whether the pod is bound (the API says so) or holds a new reservation:
 * then what its PreBind wrote stays (a Binding answered 409 may have
 * taken, and a retried pod reuses its claims). Unknown counts as bound. */
static int pod_keeps(dra_row_t *r, const dra_undo_t *u)
{
    if (dra_store_has_hold(r->store, u->pod_uid))
        return 1;
    json_t *pod;
    int bound = pod_bound_now(r, u, &pod);
    json_decref(pod);
    return bound != 0;
}

/* Whether the pod is bound and its status names the extended-resource
 * claim u (unknown counts as yes): then the claim stays. A pod placed
 * again makes a claim of its own, so a hold does not keep this one. */
static int pod_uses_ext(dra_row_t *r, const dra_undo_t *u)
{
    json_t *pod;
    int bound = pod_bound_now(r, u, &pod);
    const char *cn = json_string_value(json_object_get(
        json_object_get(json_object_get(pod, "status"), "extendedResourceClaimStatus"), "resourceClaimName"));
    int uses = bound < 0 || (bound > 0 && cn && !strcmp(cn, u->name));
    json_decref(pod);
    return uses;
}

/* The extended-resource claim of a bind that did not happen goes, its
 * finalizer first (kube's deleteClaim): 0 done, 1 conflict, 2 kept, -1 err. */
static int undo_delete(dra_row_t *r, const dra_undo_t *u, char *err, size_t errlen)
{
    json_t *claim = NULL;
    int gone = 0;
    if (pod_uses_ext(r, u))
        return 2;
    if (claim_get(r, u->ns, u->name, &claim, &gone, err, errlen) != 0)
        return gone ? 0 : -1;
    json_t *fin = json_object_get(json_object_get(claim, "metadata"), "finalizers");
    size_t i;
    json_t *f;
    int rc = 0;
    json_array_foreach (fin, i, f)
        if (json_is_string(f) && !strcmp(json_string_value(f), DRA_FINALIZER)) {
            json_array_remove(fin, i);
            rc = claim_put(r, &claim, u->ns, u->name, NULL, err, errlen);
            break;
        }
    json_decref(claim);
    if (rc != 0)
        return rc;
    char *path = claim_path(u->ns, u->name, NULL);
    long status = 0;
    rc = r->svc->api_json(r->core, "DELETE", path, NULL, NULL, NULL, &status, err, errlen);
    free(path);
    return rc == 0 || status == 404 ? 0 : -1;
}

/* Takes the pod off the claim's reservedFor, and its allocation off when
 * the pod made it and no one else is reserved: 0 done (or nothing left
 * to do), 1 conflict, 2 kept (the pod is bound or placed again), -1 err. */
static int undo_once(dra_row_t *r, const dra_undo_t *u, char *err, size_t errlen)
{
    json_t *claim = NULL;
    int gone = 0;
    if (u->delete_claim)
        return undo_delete(r, u, err, errlen);
    if (pod_keeps(r, u))
        return 2;
    if (claim_get(r, u->ns, u->name, &claim, &gone, err, errlen) != 0)
        return gone ? 0 : -1;
    json_t *status = json_object_get(claim, "status");
    json_t *rf = json_object_get(status, "reservedFor");
    size_t i;
    json_t *e;
    int changed = 0;
    json_array_foreach (rf, i, e) {
        const char *uid = json_string_value(json_object_get(e, "uid"));
        if (uid && !strcmp(uid, u->pod_uid)) {
            json_array_remove(rf, i);
            changed = 1;
            break;
        }
    }
    if (u->deallocate && json_array_size(rf) == 0 && json_object_get(status, "allocation")) {
        json_object_del(status, "allocation");
        changed = 1;
    }
    int rc = changed ? claim_put(r, &claim, u->ns, u->name, "/status", err, errlen) : 0;
    json_decref(claim);
    return rc;
}

static int undo_pending(dra_row_t *r)
{
    lo_mutex_lock(&r->mu, LO_DRA_ROW);
    dra_undo_t *u = r->undo;
    r->undo = NULL;
    lo_mutex_unlock(&r->mu, LO_DRA_ROW);
    int n = 0;
    for (dra_undo_t *x = u; x; x = x->next, n++) {
        char err[256] = "";
        int rc = 1;
        for (int attempt = 0; attempt < 4 && rc == 1; attempt++)
            rc = undo_once(r, x, err, sizeof(err));
        if (rc == 2)
            LOG_I("dra: resourceclaim %s/%s: pod %s is bound or placed again; its reservation stays", x->ns, x->name,
                  x->pod_uid);
        else if (rc != 0)
            LOG_W("dra: resourceclaim %s/%s: pod %s's reservation not undone: %s", x->ns, x->name, x->pod_uid,
                  rc == 1 ? "conflicts on every write" : err);
        else
            LOG_I("dra: resourceclaim %s/%s: pod %s's reservation undone (its bind did not happen)", x->ns, x->name,
                  x->pod_uid);
    }
    dra_undo_free(u);
    return n;
}

void dra_row_housekeep(const sched_row_t *row)
{
    dra_row_t *r = row->self;
    undo_pending(r);
    if (!r->online)
        return;
    check_listed(r);
    if (!dra_store_served(r->store) && util_now_ms() - r->served_checked_ms >= SERVED_EVERY_MS)
        check_served(r);
}

void dra_row_node_doc(const sched_row_t *row, const node_info_t *ni, json_t *item)
{
    dra_row_t *r = row->self;
    int devices = 0, used = 0;
    if (ni && ni->node)
        dra_store_node_counts(r->store, ni->node->name, &ni->node->labels, &devices, &used);
    json_object_set_new(item, "draDevices", json_pack("{s:i, s:i}", "total", devices, "used", used));
}

int dra_row_drain(const sched_row_t *row)
{
    return undo_pending(row->self) > 0;
}

void dra_row_node_use(const sched_row_t *row, const node_info_t *ni, sched_node_use_t *u)
{
    dra_row_t *r = row->self;
    dra_store_node_counts(r->store, ni->node->name, &ni->node->labels, &u->dra_devices, &u->dra_used);
}
