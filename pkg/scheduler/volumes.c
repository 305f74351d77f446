/* volumes.c -- the scheduler's side of volumes: the PV, PVC, StorageClass
 * and CSINode informers, Reserve (assume the pod's volume choice) and
 * PreBind (write claimRefs and selected-node annotations, then wait for the
 * claims to be bound, off the bind workers, in one waiter thread). */
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"
#include "volume/volume.h"
#include "util/lockorder.h"

/* A pod whose volume writes are done and whose claims are not bound yet. */
typedef struct vwait_entry {
    struct vwait_entry *next;
    queue_item_t *it; /* the bind's queue item, owned; it->pod is the pod */
    char *node;
    char *lender;
    int64_t deadline_ms;
} vwait_entry_t;

struct volume_waiter {
    scheduler_t *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vwait_entry_t *head;
    int closing;
    int kicked;
    pthread_t thread;
    int started;
};

/* ---- informers ------------------------------------------------------------ */

static void kick_waiter(scheduler_t *s)
{
    volume_waiter_t *w = s->vwait;
    if (!w)
        return;
    lo_mutex_lock(&w->mu, LO_VOLUME_WAIT);
    w->kicked = 1;
    pthread_cond_signal(&w->cv);
    lo_mutex_unlock(&w->mu, LO_VOLUME_WAIT);
}

/* Storage events may make pods schedulable (kube moves them on PV, PVC,
 * StorageClass and CSINode adds and updates). */
static void storage_changed(scheduler_t *s, kube_event_type_t type, const char *event)
{
    kick_waiter(s);
    if (type != KUBE_DELETED)
        sched_event(s, SCHED_EV_OBJECT, NULL, NULL, event);
}

void on_pv_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    scheduler_t *s = ud;
    char err[256];
    pv_t *v = type == KUBE_DELETED ? NULL : pv_from_json(obj, err, sizeof(err));
    if (type == KUBE_DELETED)
        volume_store_del_pv(s->volumes, key);
    else if (!v)
        LOG_W("PersistentVolume %s ignored: %s", key, err);
    else
        volume_store_put_pv(s->volumes, v);
    pv_unref(v);
    storage_changed(s, type, "PvChange");
}

void on_pvc_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    scheduler_t *s = ud;
    char err[256];
    pvc_t *c = type == KUBE_DELETED ? NULL : pvc_from_json(obj, err, sizeof(err));
    if (type == KUBE_DELETED)
        volume_store_del_pvc(s->volumes, key);
    else if (!c)
        LOG_W("PersistentVolumeClaim %s ignored: %s", key, err);
    else
        volume_store_put_pvc(s->volumes, c);
    pvc_unref(c);
    storage_changed(s, type, "PvcChange");
}

void on_storage_class_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    scheduler_t *s = ud;
    char err[256];
    storage_class_t *c = type == KUBE_DELETED ? NULL : storage_class_from_json(obj, err, sizeof(err));
    if (type == KUBE_DELETED)
        volume_store_del_class(s->volumes, key);
    else if (!c)
        LOG_W("StorageClass %s ignored: %s", key, err);
    else
        volume_store_put_class(s->volumes, c);
    storage_class_unref(c);
    storage_changed(s, type, "StorageClassChange");
}

void on_csinode_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    scheduler_t *s = ud;
    char err[256];
    csinode_t *c = type == KUBE_DELETED ? NULL : csinode_from_json(obj, err, sizeof(err));
    if (type == KUBE_DELETED)
        volume_store_del_csinode(s->volumes, key);
    else if (!c)
        LOG_W("CSINode %s ignored: %s", key, err);
    else
        volume_store_put_csinode(s->volumes, c);
    csinode_unref(c);
    storage_changed(s, type, "CSINodeChange");
}

/* ---- Reserve ----------------------------------------------------------------- */

static node_t *node_get(scheduler_t *s, const char *name)
{
    cache_rdlock(s->cache);
    node_info_t *ni = cache_node_locked(s->cache, name);
    node_t *n = ni && ni->node ? node_ref(ni->node) : NULL;
    cache_unlock(s->cache);
    return n;
}

static int volumes_reserve(scheduler_t *s, const pod_t *pod, const char *node, char *err, size_t errlen)
{
    if (pod->nvolumes == 0 || !framework_runs(sched_pod_fw(s, pod), FW_PT_RESERVE, "VolumeBinding"))
        return 0;
    node_t *n = node_get(s, node);
    if (!n)
        return util_errf(err, errlen, "node \"%s\" not found", node);
    int rc = volume_assume(s->volumes, pod, n, err, errlen);
    node_unref(n);
    return rc;
}

/* ---- PreBind: the API writes ------------------------------------------------- */

static int write_one(scheduler_t *s, const vb_plan_t *p, const vb_write_t *w, char **rv_out, char *err, size_t errlen)
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
        kube_send_json(s->kc, "PATCH", path.data, "application/merge-patch+json", body, &out, &status, err, errlen);
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

static void waiter_add(scheduler_t *s, queue_item_t *it, const char *node, const char *lender);

static int volumes_prebind(scheduler_t *s, queue_item_t **itp, const char *node, const char *lender, char *err,
                           size_t errlen)
{
    const pod_t *pod = (*itp)->pod;
    vb_plan_t *p = volume_plan_copy(s->volumes, pod->uid);
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
        if (write_one(s, p, &p->w[i], &rv, msg, sizeof(msg)) < 0) {
            snprintf(err, errlen, "running PreBind plugin \"VolumeBinding\": %s", msg);
            rc = PREBIND_FAILED;
            break;
        }
        LOG_D("prebind pod=%s: %s %s written (rv %s)", pod->key, p->w[i].is_pv ? "PV" : "PVC", p->w[i].name, rv);
        volume_plan_written(s->volumes, pod->uid, i, rv);
        free(rv);
    }
    volume_plan_free(p);
    if (rc == PREBIND_FAILED) {
        writer_pod_event(s->writer, pod, "Warning", "FailedScheduling", err);
        return rc;
    }
    waiter_add(s, *itp, node, lender);
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

static void waiter_add(scheduler_t *s, queue_item_t *it, const char *node, const char *lender)
{
    volume_waiter_t *w = s->vwait;
    vwait_entry_t *e = util_xcalloc(1, sizeof(*e));
    e->it = it;
    e->node = util_strdup(node);
    e->lender = lender ? util_strdup(lender) : NULL;
    int timeout = s->opts.volume_bind_timeout_s > 0 ? s->opts.volume_bind_timeout_s : 600;
    e->deadline_ms = util_now_ms() + (int64_t)timeout * 1000;
    lo_mutex_lock(&w->mu, LO_VOLUME_WAIT);
    if (w->closing) {
        /* Shutting down: the decision is dropped with the process. */
        lo_mutex_unlock(&w->mu, LO_VOLUME_WAIT);
        entry_free(e);
        return;
    }
    e->next = w->head;
    w->head = e;
    w->kicked = 1;
    pthread_cond_signal(&w->cv);
    lo_mutex_unlock(&w->mu, LO_VOLUME_WAIT);
}

/* 1: done (bound, failed or gone: the entry leaves), 0: still waiting. */
static int check_entry(scheduler_t *s, vwait_entry_t *e, int64_t now)
{
    char err[256] = "";
    cache_pod_state_t st;
    pod_t *cur = cache_get_pod(s->cache, e->it->pod->uid, &st);
    pod_unref(cur);
    if (!cur || st == CPOD_NONE) {
        LOG_D("prebind pod=%s: pod is gone", e->it->pod->key);
        volume_forget(s->volumes, e->it->pod->uid);
        cache_forget(s->cache, e->it->pod->uid);
        return 1;
    }
    node_t *n = node_get(s, e->node);
    int rc = volume_plan_check(s->volumes, e->it->pod->uid, n, err, sizeof(err));
    node_unref(n);
    if (rc == 0 && now < e->deadline_ms)
        return 0;
    if (rc == 1) {
        LOG_D("prebind pod=%s: claims bound", e->it->pod->key);
        volume_forget(s->volumes, e->it->pod->uid);
    } else {
        sbuf_t m = { 0 };
        sbuf_printf(&m, "binding volumes: %s", rc == 0 ? "timed out waiting for the condition" : err);
        LOG_I("prebind pod=%s node=%s: %s", e->it->pod->key, e->node, m.data);
        volume_plan_fail(s->volumes, e->it->pod->uid, m.data);
        sbuf_free(&m);
    }
    /* Back to the binder: it binds the pod, or reports the failure. */
    binder_submit(s->binder, e->it, e->node, e->lender);
    e->it = NULL;
    return 1;
}

/* Checks every waiting entry once, w->mu dropped meanwhile (held on entry
 * and on return); the ones still waiting go back. */
static void sweep_locked(volume_waiter_t *w)
{
    vwait_entry_t *list = w->head;
    w->head = NULL;
    lo_mutex_unlock(&w->mu, LO_VOLUME_WAIT);
    vwait_entry_t *keep = NULL;
    int64_t now = util_now_ms();
    for (vwait_entry_t *e = list, *next; e; e = next) {
        next = e->next;
        if (check_entry(w->s, e, now)) {
            entry_free(e);
        } else {
            e->next = keep;
            keep = e;
        }
    }
    lo_mutex_lock(&w->mu, LO_VOLUME_WAIT);
    while (keep) {
        vwait_entry_t *e = keep;
        keep = e->next;
        e->next = w->head;
        w->head = e;
    }
}

static void *waiter_main(void *arg)
{
    volume_waiter_t *w = arg;
    util_thread_name("vol-waiter");
    lo_mutex_lock(&w->mu, LO_VOLUME_WAIT);
    while (!w->closing) {
        if (!w->kicked) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1; /* kube polls every second */
            pthread_cond_timedwait(&w->cv, &w->mu, &ts);
            if (w->closing)
                break;
        }
        w->kicked = 0;
        sweep_locked(w);
    }
    lo_mutex_unlock(&w->mu, LO_VOLUME_WAIT);
    return NULL;
}

volume_waiter_t *volume_waiter_new_offline(scheduler_t *s)
{
    volume_waiter_t *w = util_xcalloc(1, sizeof(*w));
    w->s = s;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    return w;
}

int volume_waiter_drain(volume_waiter_t *w)
{
    lo_mutex_lock(&w->mu, LO_VOLUME_WAIT);
    int had = w->head != NULL;
    w->kicked = 0;
    if (had)
        sweep_locked(w);
    lo_mutex_unlock(&w->mu, LO_VOLUME_WAIT);
    return had;
}

volume_waiter_t *volume_waiter_new(scheduler_t *s)
{
    volume_waiter_t *w = util_xcalloc(1, sizeof(*w));
    w->s = s;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, waiter_main, w) == 0)
        w->started = 1;
    return w;
}

/* Stops the thread; pods still waiting are dropped (their decisions die
 * with this scheduler; a successor starts from the API's state). */
void volume_waiter_close(volume_waiter_t *w)
{
    if (!w)
        return;
    lo_mutex_lock(&w->mu, LO_VOLUME_WAIT);
    w->closing = 1;
    pthread_cond_broadcast(&w->cv);
    lo_mutex_unlock(&w->mu, LO_VOLUME_WAIT);
    if (w->started)
        pthread_join(w->thread, NULL);
    w->started = 0;
    lo_mutex_lock(&w->mu, LO_VOLUME_WAIT);
    for (vwait_entry_t *e = w->head, *n; e; e = n) {
        n = e->next;
        entry_free(e);
    }
    w->head = NULL;
    lo_mutex_unlock(&w->mu, LO_VOLUME_WAIT);
}

void volume_waiter_free(volume_waiter_t *w)
{
    if (!w)
        return;
    volume_waiter_close(w);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* ------------------------------------------------ the VolumeBinding row */

int volumes_ext_reserve(sched_pool_t *P, const pod_t *pod, const char *node, char *err, size_t errlen)
{
    return volumes_reserve(P->s, pod, node, err, errlen);
}

void volumes_ext_unreserve(sched_pool_t *P, const pod_t *pod)
{
    volume_forget(P->s->volumes, pod->uid);
}

int volumes_ext_pre_bind(scheduler_t *s, queue_item_t **it, const char *node, const char *lender, json_t **ann,
                         char *err, size_t errlen)
{
    (void)ann;
    return volumes_prebind(s, it, node, lender, err, errlen);
}
