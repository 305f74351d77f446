/* owners.c -- selectors of the objects that own or select pods (Services,
 * RCs, ReplicaSets, StatefulSets), for default topology spreading. */
#include "owners/owners.h"
#include "util/hashmap.h"
#include "util/util.h"
#include "util/lockorder.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct owner_entry {
    char *ns;
    selector_t sel; /* never empty: empty ones are not stored */
} owner_entry_t;

struct owners {
    pthread_mutex_t mu;
    hashmap_t *by_key[OWNER_NKINDS]; /* "ns/name" -> owner_entry_t */
    int count;
};

owners_t *owners_new(void)
{
    owners_t *o = util_xcalloc(1, sizeof(*o));
    pthread_mutex_init(&o->mu, NULL);
    for (int k = 0; k < OWNER_NKINDS; k++)
        o->by_key[k] = hashmap_new(64);
    return o;
}

static void entry_free(owner_entry_t *e)
{
    if (!e)
        return;
    free(e->ns);
    selector_free(&e->sel);
    free(e);
}

void owners_free(owners_t *o)
{
    if (!o)
        return;
    for (int k = 0; k < OWNER_NKINDS; k++) {
        const char *key;
        void *v;
        for (size_t it = 0; hashmap_next(o->by_key[k], &it, &key, &v);)
            entry_free(v);
        hashmap_free(o->by_key[k]);
    }
    pthread_mutex_destroy(&o->mu);
    free(o);
}

static void put(owners_t *o, owner_kind_t kind, const char *key, owner_entry_t *e)
{
    lo_mutex_lock(&o->mu, LO_OWNERS);
    owner_entry_t *old = e ? hashmap_put(o->by_key[kind], key, e) : hashmap_remove(o->by_key[kind], key);
    o->count += (e ? 1 : 0) - (old ? 1 : 0);
    lo_mutex_unlock(&o->mu, LO_OWNERS);
    entry_free(old);
}

int owners_update(owners_t *o, owner_kind_t kind, const char *key, json_t *obj, char *err, size_t errlen)
{
    json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    json_t *ns = json_object_get(meta, "namespace");
    json_t *sel = json_is_object(spec) ? json_object_get(spec, "selector") : NULL;
    owner_entry_t *e = util_xcalloc(1, sizeof(*e));
    int rc = 0;
    if (!json_is_object(obj) || !json_is_string(ns)) {
        rc = util_errf(err, errlen, "no metadata.namespace");
    } else if (sel && !json_is_null(sel)) {
        /* Services and RCs have map selectors; RSs and StatefulSets
         * LabelSelectors. */
        if (kind == OWNER_SERVICE || kind == OWNER_RC)
            rc = selector_from_map(&e->sel, sel, err, errlen);
        else
            rc = selector_from_label_selector(&e->sel, sel, err, errlen);
    }
    if (rc < 0 || e->sel.n == 0) {
        /* Nothing stored: an empty selector matches nothing. */
        entry_free(e);
        put(o, kind, key, NULL);
        return rc;
    }
    e->ns = util_strdup(json_string_value(ns));
    put(o, kind, key, e);
    return 0;
}

void owners_delete(owners_t *o, owner_kind_t kind, const char *key)
{
    put(o, kind, key, NULL);
}

int owners_count(owners_t *o)
{
    lo_mutex_lock(&o->mu, LO_OWNERS);
    int n = o->count;
    lo_mutex_unlock(&o->mu, LO_OWNERS);
    return n;
}

/* Appends src's requirements to dst (a conjunction of both). */
static void selector_append(selector_t *dst, const selector_t *src)
{
    selector_t tmp;
    selector_copy(&tmp, src);
    if (tmp.n == 0)
        return;
    dst->reqs = util_xrealloc(dst->reqs, (size_t)(dst->n + tmp.n) * sizeof(*dst->reqs));
    memcpy(dst->reqs + dst->n, tmp.reqs, (size_t)tmp.n * sizeof(*tmp.reqs));
    dst->n += tmp.n;
    free(tmp.reqs);
}

int owners_default_selector(owners_t *o, const char *ns, const labels_t *pod_labels, selector_t *out)
{
    int matched = 0;
    out->reqs = NULL;
    out->n = 0;
    lo_mutex_lock(&o->mu, LO_OWNERS);
    for (int k = 0; o->count > 0 && k < OWNER_NKINDS; k++) {
        /* kube's GetPodControllers/ReplicaSets/StatefulSets give up on a
         * pod without labels; GetPodServices does not, but a non-empty
         * selector cannot match such a pod anyway. */
        if (pod_labels->n == 0)
            break;
        const char *key;
        void *v;
        for (size_t it = 0; hashmap_next(o->by_key[k], &it, &key, &v);) {
            const owner_entry_t *e = v;
            if (strcmp(e->ns, ns) != 0 || !selector_matches(&e->sel, pod_labels, NULL))
                continue;
            selector_append(out, &e->sel);
            matched++;
        }
    }
    lo_mutex_unlock(&o->mu, LO_OWNERS);
    return matched;
}
