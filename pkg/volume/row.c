/* row.c -- the volumes row (kube's VolumeBinding outside its Filter): the
 * PV, PVC, StorageClass and CSINode informers, Reserve (assume the pod's
 * volume choice) and PreBind (write claimRefs and selected-node
 * annotations, then wait for the claims to be bound, off the bind workers,
 * in one waiter thread). Its room holds the volume store the Filter
 * plugins read and the waiter. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/lockorder.h"
#include "util/log.h"
#include "util/util.h"
#include "volume/row.h"
#include "volume/volume.h"

/* A pod whose volume writes are done and whose claims are not bound yet. */
typedef struct vwait_entry {
    struct vwait_entry *next;
    queue_item_t *it; /* the bind's queue item, owned; it->pod is the pod */
    char *node;
    char *lender;
    int64_t deadline_ms;
} vwait_entry_t;

/* The row's room. */
typedef struct volume_row {
    const sched_services_t *svc;
    void *core;
    volume_store_t *store; /* PVs, PVCs, classes, CSINodes, volume choices in flight */
    /* The waiter: pods waiting at PreBind for their claims. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vwait_entry_t *head;
    int closing;
    int kicked;
    pthread_t thread;
    int started;
} volume_row_t;

void *volume_row_init(const sched_services_t *svc, void *core)
{
    volume_row_t *r = util_xcalloc(1, sizeof(*r));
    r->svc = svc;
    r->core = core;
    r->store = volume_store_new();
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    return r;
}

void volume_row_cluster(const sched_row_t *row, fw_cluster_t *cl)
{
    cl->volumes = ((volume_row_t *)row->self)->store;
}

/* ---- informers ------------------------------------------------------------ */

static void kick_waiter(volume_row_t *r)
{
    lo_mutex_lock(&r->mu, LO_VOLUME_WAIT);
    r->kicked = 1;
    pthread_cond_signal(&r->cv);
    lo_mutex_unlock(&r->mu, LO_VOLUME_WAIT);
}

/* Storage events may make pods schedulable (kube moves them on PV, PVC,
 * StorageClass and CSINode adds and updates). */
static void storage_changed(volume_row_t *r, kube_event_type_t type, const char *event)
{
    kick_waiter(r);
    if (type != KUBE_DELETED)
        r->svc->wake_all(r->core, event);
}

static void on_pv_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    volume_row_t *r = ud;
    char err[256];
    pv_t *v = type == KUBE_DELETED ? NULL : pv_from_json(obj, err, sizeof(err));
    if (type == KUBE_DELETED)
        volume_store_del_pv(r->store, key);
    else if (!v)
        LOG_W("PersistentVolume %s ignored: %s", key, err);
    else
        volume_store_put_pv(r->store, v);
    pv_unref(v);
    storage_changed(r, type, "PvChange");
}

static void on_pvc_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    volume_row_t *r = ud;
    char err[256];
    pvc_t *c = type == KUBE_DELETED ? NULL : pvc_from_json(obj, err, sizeof(err));
    if (type == KUBE_DELETED)
        volume_store_del_pvc(r->store, key);
    else if (!c)
        LOG_W("PersistentVolumeClaim %s ignored: %s", key, err);
    else
        volume_store_put_pvc(r->store, c);
    pvc_unref(c);
    storage_changed(r, type, "PvcChange");
}

static void on_storage_class_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    volume_row_t *r = ud;
    char err[256];
    storage_class_t *c = type == KUBE_DELETED ? NULL : storage_class_from_json(obj, err, sizeof(err));
    if (type == KUBE_DELETED)
        volume_store_del_class(r->store, key);
    else if (!c)
        LOG_W("StorageClass %s ignored: %s", key, err);
    else
        volume_store_put_class(r->store, c);
    storage_class_unref(c);
    storage_changed(r, type, "StorageClassChange");
}

static void on_csinode_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    volume_row_t *r = ud;
    char err[256];
    csinode_t *c = type == KUBE_DELETED ? NULL : csinode_from_json(obj, err, sizeof(err));
    if (type == KUBE_DELETED)
        volume_store_del_csinode(r->store, key);
    else if (!c)
        LOG_W("CSINode %s ignored: %s", key, err);
    else
        volume_store_put_csinode(r->store, c);
    csinode_unref(c);
    storage_changed(r, type, "CSINodeChange");
}

const sched_watch_t volume_row_watches[] = {
    { "PersistentVolume", "/api/v1/persistentvolumes", on_pv_event, 0 },
    { "PersistentVolumeClaim", "/api/v1/persistentvolumeclaims", on_pvc_event, 0 },
    { "StorageClass", "/apis/storage.k8s.io/v1/storageclasses", on_storage_class_event, 0 },
    { "CSINode", "/apis/storage.k8s.io/v1/csinodes", on_csinode_event, 0 },
    { 0 },
};

/* ---- Reserve ----------------------------------------------------------------- */

static void ref_node(void *ud, const node_info_t *ni)
{
    if (ni->node)
        *(node_t **)ud = node_ref(ni->node);
}

/* The node's object (a reference), or NULL when the cache has none. */
static node_t *node_get(volume_row_t *r, const char *name)
{
    node_t *n = NULL;
    r->svc->node_visit(r->core, name, ref_node, &n);
    return n;
}

int volume_row_reserve(const sched_row_t *row, const pod_t *pod, const char *node, char *err, size_t errlen)
{
    volume_row_t *r = row->self;
    if (pod->nvolumes == 0 || !r->svc->plugin_runs(r->core, pod, FW_PT_RESERVE, "VolumeBinding"))
        return 0;
    node_t *n = node_get(r, node);
    if (!n)
        return util_errf(err, errlen, "node \"%s\" not found", node);
    int rc = volume_assume(r->store, pod, n, err, errlen);
    node_unref(n);
    return rc;
}

void volume_row_unreserve(const sched_row_t *row, const pod_t *pod)
{
    volume_forget(((volume_row_t *)row->self)->store, pod->uid);
}

/* ---- PreBind: the API writes ------------------------------------------------- */

static int write_one(volume_row_t *r, const vb_plan_t *p, const vb_write_t *w, char **rv_out, char *err, size_t errlen)
{
    sbuf_t path = { 0 };
    json_t *body, *out = NULL;
    char *en = util_urlencode(w->name), *ens = util_urlencode(w->ns);
    if (w->is_pv) {
        sbuf_printf(&path, "/api/v1/persistentvolumes/%s", en);
        body = json_pack("{s:{s:s}, s:{s:{s:s, s:s, s:s, s:s, s:s}}}", "metadata", "resourceVersion", w->rv, "spec",
                         "claimRef", "kind", "PersistentVolumeClaim", "apiVersion", "v1", "namespace", w->ns, "name",
                         w->claim_name, "uid", w->claim_uid);
        if (w->bound_by_ctrl)
            json_object_set_new(json_object_get(body, "metadata"), "annotations",
                                json_pack("{s:s}", ANN_BOUND_BY_CTRL, "yes"));
    } else {
        sbuf_printf(&path, "/api/v1/namespaces/%s/persistentvolumeclaims/%s", ens, en);
        body = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "resourceVersion", w->rv, "annotations", ANN_SELECTED_NODE,
                         p->node);
    }
    long status = 0;
    int rc =
        r->svc->api_json(r->core, "PATCH", path.data, "application/merge-patch+json", body, &out, &status, err, errlen);
    if (rc == 0) {
        json_t *v = json_object_get(json_object_get(out, "metadata"), "resourceVersion");
        *rv_out = util_strdup(json_is_string(v) ? json_string_value(v) : "");
    }
    json_decref(out);
    json_decref(body);
    sbuf_free(&path);
    free(en);
    free(ens);
    return rc;
}

static void waiter_add(volume_row_t *r, queue_item_t *it, const char *node, const char *lender);

int volume_row_pre_bind(const sched_row_t *row, queue_item_t **itp, const char *node, const char *lender, json_t **ann,
                        char *err, size_t errlen)
{
    (void)ann;
    volume_row_t *r = row->self;
    const pod_t *pod = (*itp)->pod;
    vb_plan_t *p = volume_plan_copy(r->store, pod->uid);
    if (!p)
        return PREBIND_READY;
    int rc = PREBIND_WAITING;
    if (p->failed) {
        snprintf(err, errlen, "running PreBind plugin \"VolumeBinding\": %s", p->failed);
        rc = PREBIND_FAILED;
    }
    for (int i = 0; i < p->nw && rc == PREBIND_WAITING; i++) {
        char *rv = NULL, msg[200];
        if (p->w[i].written_rv)
            continue; /* done on an earlier visit */
        if (write_one(r, p, &p->w[i], &rv, msg, sizeof(msg)) < 0) {
            snprintf(err, errlen, "running PreBind plugin \"VolumeBinding\": %s", msg);
            rc = PREBIND_FAILED;
            break;
        }
        LOG_D("prebind pod=%s: %s %s written (rv %s)", pod->key, p->w[i].is_pv ? "PV" : "PVC", p->w[i].name, rv);
        volume_plan_written(r->store, pod->uid, i, rv);
        free(rv);
    }
    volume_plan_free(p);
    if (rc == PREBIND_FAILED) {
        r->svc->pod_event(r->core, pod, "Warning", "FailedScheduling", err);
        return rc;
    }
    waiter_add(r, *itp, node, lender);
    *itp = NULL;
    return PREBIND_WAITING;
}

/* ---- PreBind: the wait -------------------------------------------------------- */

static void entry_free(vwait_entry_t *e)
{
    queue_item_free(e->it);
    free(e->node);
    free(e->lender);
    free(e);
}

static void waiter_add(volume_row_t *r, queue_item_t *it, const char *node, const char *lender)
{
    vwait_entry_t *e = util_xcalloc(1, sizeof(*e));
    e->it = it;
    e->node = util_strdup(node);
    e->lender = lender ? util_strdup(lender) : NULL;
    int timeout = r->svc->opts(r->core)->volume_bind_timeout_s;
    if (timeout <= 0)
        timeout = 600;
    e->deadline_ms = util_now_ms() + (int64_t)timeout * 1000;
    lo_mutex_lock(&r->mu, LO_VOLUME_WAIT);
    if (r->closing) {
        /* Shutting down: the decision is dropped with the process. */
        lo_mutex_unlock(&r->mu, LO_VOLUME_WAIT);
        entry_free(e);
        return;
    }
    e->next = r->head;
    r->head = e;
    r->kicked = 1;
    pthread_cond_signal(&r->cv);
    lo_mutex_unlock(&r->mu, LO_VOLUME_WAIT);
}

/* 1: done (bound, failed or gone: the entry leaves), 0: still waiting. */
static int check_entry(volume_row_t *r, vwait_entry_t *e, int64_t now)
{
    char err[256] = "";
    const pod_t *pod = e->it->pod;
    if (!r->svc->pod_known(r->core, pod->uid)) {
        LOG_D("prebind pod=%s: pod is gone", pod->key);
        volume_forget(r->store, pod->uid);
        r->svc->forget_assumed(r->core, pod->uid);
        return 1;
    }
    node_t *n = node_get(r, e->node);
    int rc = volume_plan_check(r->store, pod->uid, n, err, sizeof(err));
    node_unref(n);
    if (rc == 0 && now < e->deadline_ms)
        return 0;
    if (rc == 1) {
        LOG_D("prebind pod=%s: claims bound", pod->key);
        volume_forget(r->store, pod->uid);
    } else {
        sbuf_t m = { 0 };
        sbuf_printf(&m, "binding volumes: %s", rc == 0 ? "timed out waiting for the condition" : err);
        LOG_I("prebind pod=%s node=%s: %s", pod->key, e->node, m.data);
        volume_plan_fail(r->store, pod->uid, m.data);
        sbuf_free(&m);
    }
    /* Back to the binder: it binds the pod, or reports the failure. */
    r->svc->bind(r->core, e->it, e->node, e->lender);
    e->it = NULL;
    return 1;
}

/* Checks every waiting entry once, r->mu dropped meanwhile (held on entry
 * and on return); the ones still waiting go back. */
static void sweep_locked(volume_row_t *r)
{
    vwait_entry_t *list = r->head;
    r->head = NULL;
    lo_mutex_unlock(&r->mu, LO_VOLUME_WAIT);
    vwait_entry_t *keep = NULL;
    int64_t now = util_now_ms();
    for (vwait_entry_t *e = list, *next; e; e = next) {
        next = e->next;
        if (check_entry(r, e, now)) {
            entry_free(e);
        } else {
            e->next = keep;
            keep = e;
        }
    }
    lo_mutex_lock(&r->mu, LO_VOLUME_WAIT);
    while (keep) {
        vwait_entry_t *e = keep;
        keep = e->next;
        e->next = r->head;
        r->head = e;
    }
}

static void *waiter_main(void *arg)
{
    volume_row_t *r = arg;
    util_thread_name("vol-waiter");
    lo_mutex_lock(&r->mu, LO_VOLUME_WAIT);
    while (!r->closing) {
        if (!r->kicked) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1; /* kube polls every second */
            pthread_cond_timedwait(&r->cv, &r->mu, &ts);
            if (r->closing)
                break;
        }
        r->kicked = 0;
        sweep_locked(r);
    }
    lo_mutex_unlock(&r->mu, LO_VOLUME_WAIT);
    return NULL;
}

int volume_row_start(const sched_row_t *row, char *err, size_t errlen)
{
    volume_row_t *r = row->self;
    if (r->started || r->closing)
        return 0;
    if (pthread_create(&r->thread, NULL, waiter_main, r) != 0) {
        snprintf(err, errlen, "cannot start the volume binding waiter");
        return -1;
    }
    r->started = 1;
    return 0;
}

int volume_row_drain(const sched_row_t *row)
{
    volume_row_t *r = row->self;
    lo_mutex_lock(&r->mu, LO_VOLUME_WAIT);
    int had = r->head != NULL;
    r->kicked = 0;
    if (had)
        sweep_locked(r);
    lo_mutex_unlock(&r->mu, LO_VOLUME_WAIT);
    return had;
}

/* Stops the thread; pods still waiting are dropped (their decisions die
 * with this scheduler; a successor starts from the API's state). */
static void waiter_close(volume_row_t *r)
{
    lo_mutex_lock(&r->mu, LO_VOLUME_WAIT);
    r->closing = 1;
    pthread_cond_broadcast(&r->cv);
    lo_mutex_unlock(&r->mu, LO_VOLUME_WAIT);
    if (r->started)
        pthread_join(r->thread, NULL);
    r->started = 0;
    lo_mutex_lock(&r->mu, LO_VOLUME_WAIT);
    for (vwait_entry_t *e = r->head, *n; e; e = n) {
        n = e->next;
        entry_free(e);
    }
    r->head = NULL;
    lo_mutex_unlock(&r->mu, LO_VOLUME_WAIT);
}

void volume_row_stop(const sched_row_t *row)
{
    waiter_close(row->self);
}

void volume_row_fini(void *self)
{
    volume_row_t *r = self;
    if (!r)
        return;
    waiter_close(r);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    volume_store_free(r->store);
    free(r);
}
