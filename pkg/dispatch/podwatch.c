/* podwatch.c -- a member namespace's dispatched pods, by watch (see
 * podwatch.h). */
#include "dispatch/podwatch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/template.h"
#include "kube/informer.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/util.h"

/* What is kept of a pod: no more than the counts need. */
typedef struct seen {
    char *uid;      /* its job-uid label */
    dsp_pods_t add; /* what it adds to its job's counts (dsp_pods_add) */
} seen_t;

struct dsp_podwatch {
    informer_t *inf;
    dsp_kick_fn kick;
    void *kick_ud;
    pthread_mutex_t mu; /* pods, by_uid */
    hashmap_t *pods;    /* "ns/name" -> seen_t, owned */
    hashmap_t *by_uid;  /* job uid -> hashmap "ns/name" -> seen_t (borrowed), owned */
};

static int has_controller(json_t *pod)
{
    json_t *refs = json_object_get(json_object_get(pod, "metadata"), "ownerReferences");
    size_t i;
    json_t *r;
    json_array_foreach (refs, i, r)
        if (json_is_true(json_object_get(r, "controller")))
            return 1;
    return 0;
}

void dsp_pods_add(dsp_pods_t *p, json_t *pod)
{
    if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
        return;
    const char *ph = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    p->total++;
    if (!ph)
        return;
    if (strcmp(ph, "Running") == 0)
        p->running++;
    else if (strcmp(ph, "Succeeded") == 0)
        p->succeeded++;
    else if (strcmp(ph, "Failed") == 0 && !has_controller(pod))
        p->failed++;
}

/* Takes key out of the maps; the caller holds mu. */
static void forget(dsp_podwatch_t *w, const char *key)
{
    seen_t *s = hashmap_remove(w->pods, key);
    if (!s)
        return;
    hashmap_t *set = hashmap_get(w->by_uid, s->uid);
    if (set) {
        hashmap_remove(set, key);
        if (hashmap_len(set) == 0)
            hashmap_free(hashmap_remove(w->by_uid, s->uid));
    }
    free(s->uid);
    free(s);
}

static void on_pod(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    dsp_podwatch_t *w = ud;
    const char *uid =
        json_string_value(json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), DSP_LABEL_UID));
    char *old_uid = NULL;
    pthread_mutex_lock(&w->mu);
    seen_t *prev = hashmap_get(w->pods, key);
    if (prev && (!uid || strcmp(prev->uid, uid) != 0))
        old_uid = util_strdup(prev->uid); /* its old job hears of it too */
    forget(w, key);
    if (type != KUBE_DELETED && obj && uid && uid[0]) {
        seen_t *s = util_xcalloc(1, sizeof(*s));
        s->uid = util_strdup(uid);
        dsp_pods_add(&s->add, obj);
        hashmap_put(w->pods, key, s);
        hashmap_t *set = hashmap_get(w->by_uid, uid);
        if (!set) {
            set = hashmap_new(8);
            hashmap_put(w->by_uid, uid, set);
        }
        hashmap_put(set, key, s);
    }
    pthread_mutex_unlock(&w->mu);
    if (w->kick) {
        if (uid && uid[0])
            w->kick(w->kick_ud, uid);
        if (old_uid)
            w->kick(w->kick_ud, old_uid);
    }
    free(old_uid);
}

dsp_podwatch_t *dsp_podwatch_new(kube_client_t *c, const char *ns, dsp_kick_fn kick, void *ud)
{
    dsp_podwatch_t *w = util_xcalloc(1, sizeof(*w));
    w->kick = kick;
    w->kick_ud = ud;
    pthread_mutex_init(&w->mu, NULL);
    w->pods = hashmap_new(64);
    w->by_uid = hashmap_new(16);
    char *ens = util_urlencode(ns), *esel = util_urlencode(DSP_LABEL_UID);
    sbuf_t p = { 0 };
    sbuf_printf(&p, "/api/v1/namespaces/%s/pods?labelSelector=%s", ens, esel);
    free(ens);
    free(esel);
    w->inf = informer_new(c, p.data, NULL, on_pod, w);
    sbuf_free(&p);
    if (w->inf && informer_start(w->inf) != 0) {
        informer_free(w->inf);
        w->inf = NULL;
    }
    if (!w->inf)
        LOG_W("dispatch: cannot watch the pods of namespace %s in %s; asking each time", ns, kube_client_server(c));
    return w;
}

void dsp_podwatch_free(dsp_podwatch_t *w)
{
    if (!w)
        return;
    informer_free(w->inf); /* joins: no handler runs after this */
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(w->pods, &it, &k, &v);) {
        seen_t *s = v;
        free(s->uid);
        free(s);
    }
    hashmap_free(w->pods);
    for (size_t it = 0; hashmap_next(w->by_uid, &it, &k, &v);)
        hashmap_free(v);
    hashmap_free(w->by_uid);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

int dsp_podwatch_count(dsp_podwatch_t *w, const char *uid, dsp_pods_t *out)
{
    if (!w->inf || !informer_healthy(w->inf))
        return -1;
    pthread_mutex_lock(&w->mu);
    hashmap_t *set = hashmap_get(w->by_uid, uid);
    const char *k;
    void *v;
    for (size_t it = 0; set && hashmap_next(set, &it, &k, &v);) {
        const seen_t *s = v;
        out->total += s->add.total;
        out->running += s->add.running;
        out->succeeded += s->add.succeeded;
        out->failed += s->add.failed;
    }
    pthread_mutex_unlock(&w->mu);
    out->watched = 1;
    return 0;
}
