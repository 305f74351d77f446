/* store.c -- DRA's objects, the devices they make, and the devices held in
 * flight between Reserve and the claim's watch event. One rwlock (rank
 * DRA, a leaf) guards everything here. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "dra/cel.h"
#include "dra/claims.h"
#include "dra/store.h"
#include "util/hashmap.h"
#include "util/lockorder.h"
#include "util/util.h"

#define DRA_FINALIZER      "resource.kubernetes.io/delete-protection"
#define DRA_RESERVED_MAX   256 /* v1 ResourceClaimReservedForMaxSize */
#define DRA_MAX_EXPR       10240
#define DRA_EXT_ANNOTATION "resource.kubernetes.io/extended-resource-claim"

/* Where a device may be used: one node, all nodes, or the nodes a
 * selector (terms ORed) picks. */
typedef struct placement {
    char *node;
    int all;
    selector_t *terms;
    int nterms;
} placement_t;

/* A device of a slice, with its identity key (driver, pool, name). The
 * dra_device_t is first: the allocator's pointer is the device's. */
typedef struct sdev {
    dra_device_t d;
    char *key;
    placement_t place;
    int tainted; /* spec.devices[].taints: never chosen (tolerations are not matched) */
    /* While its slice is in the store: its counts in used and held (kept
     * by use_add, set by slice_link), so Filter reads them instead of
     * hashing the key for every device of every node it checks. */
    int nused, nheld;
    struct sdev *same_key; /* the next stored device with this key */
    /* first_fit's last verdict on the device: a request's selector
     * signature (req_sig) with bit 1 set, and bit 0 the verdict; 0 none.
     * Read and written atomically under the read lock (Filter threads). */
    uint64_t verdict;
    struct devlist *list; /* the node's list in the index it is in, or NULL */
} sdev_t;

typedef struct slice {
    struct slice *retired_next; /* replaced or deleted, kept until the index is rebuilt */
    char *name, *driver, *pool, *pool_key;
    int64_t gen, count;
    sdev_t *devs;
    int ndevs;
} slice_t;

typedef struct dclass {
    char *name;
    json_t *spec;  /* selectors and config (a reference) */
    char *ext;     /* spec.extendedResourceName, or NULL */
    char *created; /* metadata.creationTimestamp (RFC 3339 sorts as text), or "" */
} dclass_t;

typedef struct claim {
    char *ns, *name, *key, *uid, *rv;
    int deleting, finalizer;
    char *owner_uid; /* the controller ownerReference's uid, or NULL */
    json_t *obj;     /* the object as last seen (a reference) */
    int allocated;
    char **devkeys; /* allocated devices (non-admin), counted in used */
    int ndev;
    int pinned; /* the allocation's nodeSelector */
    selector_t *pin;
    int npin;
    char **reserved; /* status.reservedFor[].uid */
    int nreserved;
} claim_t;

/* One claim a pod's reservation covers. */
typedef struct hold_claim {
    char *key, *ns, *name;
    json_t *allocation; /* the allocation this pod makes, or NULL: the claim
                         * was allocated already (reserve only) */
    char **devkeys;     /* devices counted in held until the watch shows them */
    int ndev, counted;
    int written;
    /* KEP-5004: the extended-resource claim PreBind creates (the object to
     * POST and the pod's status.extendedResourceClaimStatus.requestMappings);
     * created: the POST took (name is then the generated name). */
    json_t *create, *mappings;
    int created;
} hold_claim_t;

typedef struct hold {
    char *uid, *node;
    char *pod_name; /* the pod is in the claims' namespace */
    int bound;      /* the pod's Binding took: the hold goes once nothing
                     * of it is counted (the claims' watch showed them) */
    hold_claim_t *c;
    int n;
} hold_t;

typedef struct devlist {
    const sdev_t **d;
    int n, cap;
    int nfree; /* a node's list: its devices free now (sdev_free), kept
                * by use_add, so a full node is refused without a walk */
} devlist_t;

struct dra_store {
    pthread_rwlock_t lock;
    hashmap_t *classes, *slices, *claims, *templates;
    hashmap_t *used;     /* device key -> (intptr_t) claims allocating it */
    hashmap_t *held;     /* device key -> (intptr_t) holds not seen yet */
    hashmap_t *holds;    /* pod uid -> hold_t */
    hashmap_t *inflight; /* claim key -> hold_t allocating it */
    /* The index of complete pools' devices: per node, and the others. */
    hashmap_t *by_node; /* node -> devlist_t */
    devlist_t global;
    hashmap_t *devs; /* device key -> a stored slice's sdev_t (same_key: others) */
    int served;
    int listed; /* claims, classes and slices listed: devices' use is known */
    /* Slices changed since the index was built (read atomically): the
     * index is rebuilt once, by the next reader (index_fresh), not once per
     * slice event (a start listing 10,000 slices would rebuild it 10,000
     * times). Until then it points into the slices it was built from: the
     * ones replaced or deleted wait in retired. */
    int dirty;
    slice_t *retired;
};

/* ---- small helpers ----------------------------------------------------- */

static const char *str_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void strv_free(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void terms_free(selector_t *t, int n)
{
    for (int i = 0; i < n; i++)
        selector_free(&t[i]);
    free(t);
}

/* A NodeSelector's terms; -1 with err. */
static int terms_parse(json_t *sel, selector_t **out, int *n, char *err, size_t errlen)
{
    json_t *terms = json_object_get(sel, "nodeSelectorTerms"), *t;
    size_t i;
    *out = NULL;
    *n = 0;
    if (!json_is_array(terms))
        return util_errf(err, errlen, "nodeSelector without nodeSelectorTerms");
    *out = util_xcalloc(json_array_size(terms) + 1, sizeof(selector_t));
    json_array_foreach (terms, i, t) {
        if (selector_from_node_term(&(*out)[*n], t, err, errlen) < 0)
            return -1;
        (*n)++;
    }
    return 0;
}

static int terms_match(const selector_t *t, int n, const char *node, const labels_t *labels)
{
    static const labels_t none = { 0 };
    for (int i = 0; i < n; i++)
        if (!selector_is_empty(&t[i]) && selector_matches(&t[i], labels ? labels : &none, node))
            return 1;
    return 0;
}

static int place_match(const placement_t *p, const char *node, const labels_t *labels)
{
    if (p->all)
        return 1;
    if (p->node)
        return !strcmp(p->node, node);
    return terms_match(p->terms, p->nterms, node, labels);
}

static void count_add(hashmap_t *m, const char *key, intptr_t d)
{
    intptr_t v = (intptr_t)hashmap_get(m, key) + d;
    if (v <= 0)
        hashmap_remove(m, key);
    else
        hashmap_put(m, key, (void *)v);
}

static intptr_t count_of(const hashmap_t *m, const char *key)
{
    return (intptr_t)hashmap_get(m, key);
}

/* Counts one more (d 1) or one less (d -1) claim or hold on a device, in
 * used (held 0) or held, and in the stored devices' copies. */
/* Whether Filter may give the device to a request now. */
static int sdev_free(const sdev_t *d)
{
    return !d->tainted && (d->d.multi || (d->nused == 0 && d->nheld == 0));
}

static void use_add(dra_store_t *s, int held, const char *key, intptr_t d)
{
    hashmap_t *m = held ? s->held : s->used;
    count_add(m, key, d);
    int v = (int)count_of(m, key);
    for (sdev_t *sd = hashmap_get(s->devs, key); sd; sd = sd->same_key) {
        int was = sdev_free(sd);
        *(held ? &sd->nheld : &sd->nused) = v;
        if (sd->list)
            sd->list->nfree += sdev_free(sd) - was;
    }
}

static char *dev_key(const char *driver, const char *pool, const char *name)
{
    sbuf_t b = { 0 };
    sbuf_printf(&b, "%s\x1f%s\x1f%s", driver, pool, name);
    return b.data;
}

/* ---- the store ---------------------------------------------------------- */

dra_store_t *dra_store_new(void)
{
    dra_store_t *s = util_xcalloc(1, sizeof(*s));
    pthread_rwlock_init(&s->lock, NULL);
    s->classes = hashmap_new(16);
    s->slices = hashmap_new(64);
    s->claims = hashmap_new(256);
    s->templates = hashmap_new(16);
    s->used = hashmap_new(256);
    s->held = hashmap_new(64);
    s->holds = hashmap_new(64);
    s->inflight = hashmap_new(64);
    s->by_node = hashmap_new(64);
    s->devs = hashmap_new(256);
    s->served = 1;
    s->listed = 1;
    return s;
}

static void class_free(dclass_t *c)
{
    if (!c)
        return;
    free(c->name);
    free(c->ext);
    free(c->created);
    json_decref(c->spec);
    free(c);
}

static void sdev_clear(sdev_t *d)
{
    for (int i = 0; i < d->d.nattrs; i++) {
        free(d->d.attrs[i].name);
        free(d->d.attrs[i].s);
    }
    free(d->d.attrs);
    for (int i = 0; i < d->d.ncaps; i++) {
        free(d->d.caps[i].name);
        free(d->d.caps[i].text);
    }
    free(d->d.caps);
    free((char *)d->d.name);
    free(d->key);
    free(d->place.node);
    terms_free(d->place.terms, d->place.nterms);
}

static void slice_free(slice_t *sl)
{
    if (!sl)
        return;
    for (int i = 0; i < sl->ndevs; i++)
        sdev_clear(&sl->devs[i]);
    free(sl->devs);
    free(sl->name);
    free(sl->driver);
    free(sl->pool);
    free(sl->pool_key);
    free(sl);
}

static void claim_free(claim_t *c)
{
    if (!c)
        return;
    free(c->ns);
    free(c->name);
    free(c->key);
    free(c->uid);
    free(c->rv);
    free(c->owner_uid);
    json_decref(c->obj);
    strv_free(c->devkeys, c->ndev);
    terms_free(c->pin, c->npin);
    strv_free(c->reserved, c->nreserved);
    free(c);
}

static void hold_free(hold_t *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->n; i++) {
        free(h->c[i].key);
        free(h->c[i].ns);
        free(h->c[i].name);
        json_decref(h->c[i].allocation);
        json_decref(h->c[i].create);
        json_decref(h->c[i].mappings);
        strv_free(h->c[i].devkeys, h->c[i].ndev);
    }
    free(h->c);
    free(h->uid);
    free(h->pod_name);
    free(h->node);
    free(h);
}

static void index_clear(dra_store_t *s)
{
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(s->by_node, &it, &k, &v);) {
        devlist_t *l = v;
        free(l->d);
        free(l);
    }
    hashmap_free(s->by_node);
    s->by_node = hashmap_new(64);
    free(s->global.d);
    memset(&s->global, 0, sizeof(s->global));
}

void dra_store_free(dra_store_t *s)
{
    if (!s)
        return;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(s->classes, &it, &k, &v);)
        class_free(v);
    for (size_t it = 0; hashmap_next(s->slices, &it, &k, &v);)
        slice_free(v);
    for (size_t it = 0; hashmap_next(s->claims, &it, &k, &v);)
        claim_free(v);
    for (size_t it = 0; hashmap_next(s->holds, &it, &k, &v);)
        hold_free(v);
    index_clear(s);
    while (s->retired) {
        slice_t *next = s->retired->retired_next;
        slice_free(s->retired);
        s->retired = next;
    }
    hashmap_free(s->by_node);
    hashmap_free(s->devs);
    hashmap_free(s->classes);
    hashmap_free(s->slices);
    hashmap_free(s->claims);
    hashmap_free(s->templates);
    hashmap_free(s->used);
    hashmap_free(s->held);
    hashmap_free(s->holds);
    hashmap_free(s->inflight);
    pthread_rwlock_destroy(&s->lock);
    free(s);
}

void dra_store_set_served(dra_store_t *s, int served)
{
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    s->served = served;
    lo_rwlock_unlock(&s->lock, LO_DRA);
}

void dra_store_set_listed(dra_store_t *s, int listed)
{
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    s->listed = listed;
    lo_rwlock_unlock(&s->lock, LO_DRA);
}

int dra_store_served(dra_store_t *s)
{
    lo_rwlock_rdlock(&s->lock, LO_DRA);
    int v = s->served;
    lo_rwlock_unlock(&s->lock, LO_DRA);
    return v;
}

/* ---- slices and the index ---------------------------------------------- */

static void devlist_add(devlist_t *l, const sdev_t *d)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->d = util_xrealloc(l->d, (size_t)l->cap * sizeof(*l->d));
    }
    l->d[l->n++] = d;
}

/* A pool counts when every slice of its highest generation is known. */
typedef struct pool_count {
    int64_t gen, count;
    int n, bad;
} pool_count_t;

static int slice_cmp(const void *a, const void *b)
{
    const slice_t *x = *(slice_t *const *)a, *y = *(slice_t *const *)b;
    int c = strcmp(x->pool_key, y->pool_key);
    return c ? c : strcmp(x->name, y->name);
}

static void index_rebuild(dra_store_t *s)
{
    index_clear(s);
    hashmap_t *pools = hashmap_new(64);
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(s->slices, &it, &k, &v);) {
        slice_t *sl = v;
        pool_count_t *p = hashmap_get(pools, sl->pool_key);
        if (!p) {
            p = util_xcalloc(1, sizeof(*p));
            p->gen = -1;
            hashmap_put(pools, sl->pool_key, p);
        }
        if (sl->gen > p->gen) {
            p->gen = sl->gen;
            p->count = sl->count;
            p->n = 0;
            p->bad = 0;
        }
        if (sl->gen == p->gen) {
            p->n++;
            p->bad |= sl->count != p->count;
        }
    }
    /* Slices in name order (kube's allocator tries pools and slices in a
     * stable order; first fit depends on it). */
    size_t ns = hashmap_len(s->slices), at = 0;
    slice_t **sorted = util_xcalloc(ns + 1, sizeof(*sorted));
    for (size_t it = 0; hashmap_next(s->slices, &it, &k, &v);)
        sorted[at++] = v;
    qsort(sorted, ns, sizeof(*sorted), slice_cmp);
    for (size_t j = 0; j < ns; j++)
        for (int i = 0; i < sorted[j]->ndevs; i++)
            sorted[j]->devs[i].list = NULL; /* the lists they were in are gone */
    for (size_t j = 0; j < ns; j++) {
        slice_t *sl = sorted[j];
        pool_count_t *p = hashmap_get(pools, sl->pool_key);
        if (sl->gen != p->gen || p->bad || p->n != p->count)
            continue;
        for (int i = 0; i < sl->ndevs; i++) {
            sdev_t *d = &sl->devs[i];
            if (d->place.node && !d->place.all) {
                devlist_t *l = hashmap_get(s->by_node, d->place.node);
                if (!l) {
                    l = util_xcalloc(1, sizeof(*l));
                    hashmap_put(s->by_node, d->place.node, l);
                }
                devlist_add(l, d);
                d->list = l;
                l->nfree += sdev_free(d);
            } else {
                devlist_add(&s->global, d);
            }
        }
    }
    free(sorted);
    for (size_t it = 0; hashmap_next(pools, &it, &k, &v);)
        free(v);
    hashmap_free(pools);
}

/* attributes / capacity of one device; names unqualified in the slice
 * belong to the driver's domain. */
static char *qualify(const char *driver, const char *name)
{
    if (strchr(name, '/'))
        return util_strdup(name);
    sbuf_t b = { 0 };
    sbuf_printf(&b, "%s/%s", driver, name);
    return b.data;
}

static int parse_attrs(sdev_t *d, const char *driver, json_t *attrs, char *err, size_t errlen)
{
    const char *name;
    json_t *a;
    if (!attrs)
        return 0;
    if (!json_is_object(attrs))
        return util_errf(err, errlen, "device %s: attributes is not a map", d->d.name);
    d->d.attrs = util_xcalloc(json_object_size(attrs) + 1, sizeof(dra_attr_t));
    json_object_foreach (attrs, name, a) {
        dra_attr_t *x = &d->d.attrs[d->d.nattrs];
        json_t *v;
        if ((v = json_object_get(a, "string")) && json_is_string(v)) {
            x->kind = DRA_ATTR_STRING;
            x->s = util_strdup(json_string_value(v));
        } else if ((v = json_object_get(a, "version")) && json_is_string(v)) {
            x->kind = DRA_ATTR_VERSION;
            x->s = util_strdup(json_string_value(v));
        } else if ((v = json_object_get(a, "int")) && json_is_integer(v)) {
            x->kind = DRA_ATTR_INT;
            x->i = json_integer_value(v);
        } else if ((v = json_object_get(a, "bool")) && json_is_boolean(v)) {
            x->kind = DRA_ATTR_BOOL;
            x->b = json_is_true(v);
        } else {
            return util_errf(err, errlen, "device %s: attribute %s has no string, int, bool or version", d->d.name,
                             name);
        }
        x->name = qualify(driver, name);
        d->d.nattrs++;
    }
    return 0;
}

static int parse_caps(sdev_t *d, const char *driver, json_t *caps, char *err, size_t errlen)
{
    const char *name;
    json_t *c;
    if (!caps)
        return 0;
    if (!json_is_object(caps))
        return util_errf(err, errlen, "device %s: capacity is not a map", d->d.name);
    d->d.caps = util_xcalloc(json_object_size(caps) + 1, sizeof(dra_capacity_t));
    json_object_foreach (caps, name, c) {
        const char *val = str_of(c, "value");
        char qerr[128];
        int64_t milli;
        if (!val || quantity_parse(val, 3, &milli, qerr, sizeof(qerr)) < 0)
            return util_errf(err, errlen, "device %s: capacity %s: %s", d->d.name, name, val ? qerr : "no value");
        dra_capacity_t *x = &d->d.caps[d->d.ncaps++];
        x->name = qualify(driver, name);
        x->text = util_strdup(val);
        x->milli = milli;
    }
    return 0;
}

/* The placement fields of o (a slice's spec, or a device with
 * perDeviceNodeSelection); 0 with none given. */
static int parse_place(placement_t *p, json_t *o, int *given, char *err, size_t errlen)
{
    const char *node = str_of(o, "nodeName");
    json_t *sel = json_object_get(o, "nodeSelector"), *all = json_object_get(o, "allNodes");
    *given = 1;
    if (node && *node)
        p->node = util_strdup(node);
    else if (json_is_true(all))
        p->all = 1;
    else if (json_is_object(sel))
        return terms_parse(sel, &p->terms, &p->nterms, err, errlen);
    else
        *given = 0;
    return 0;
}

static int place_copy(placement_t *dst, const placement_t *src)
{
    dst->node = util_strdup_or_null(src->node);
    dst->all = src->all;
    if (src->nterms) {
        dst->terms = util_xcalloc((size_t)src->nterms, sizeof(selector_t));
        for (int i = 0; i < src->nterms; i++)
            selector_copy(&dst->terms[i], &src->terms[i]);
        dst->nterms = src->nterms;
    }
    return 0;
}

static slice_t *slice_parse(json_t *obj, char *err, size_t errlen)
{
    json_t *spec = json_object_get(obj, "spec"), *pool = json_object_get(spec, "pool");
    const char *name = str_of(json_object_get(obj, "metadata"), "name"), *driver = str_of(spec, "driver");
    const char *pname = str_of(pool, "name");
    if (!name || !driver || !pname) {
        util_errf(err, errlen, "ResourceSlice %s: spec.driver and spec.pool.name are required", name ? name : "?");
        return NULL;
    }
    slice_t *sl = util_xcalloc(1, sizeof(*sl));
    sl->name = util_strdup(name);
    sl->driver = util_strdup(driver);
    sl->pool = util_strdup(pname);
    sl->pool_key = dev_key(driver, pname, "");
    json_t *g = json_object_get(pool, "generation"), *c = json_object_get(pool, "resourceSliceCount");
    sl->gen = json_is_integer(g) ? json_integer_value(g) : 0;
    sl->count = json_is_integer(c) ? json_integer_value(c) : 1;
    placement_t place = { 0 };
    int given = 0, per_dev = json_is_true(json_object_get(spec, "perDeviceNodeSelection"));
    json_t *devs = json_object_get(spec, "devices"), *dj;
    size_t i;
    if (parse_place(&place, spec, &given, err, errlen) < 0 || (!given && !per_dev)) {
        if (!given && !per_dev)
            util_errf(err, errlen, "ResourceSlice %s: none of nodeName, nodeSelector, allNodes", name);
        goto fail;
    }
    sl->devs = util_xcalloc(json_array_size(devs) + 1, sizeof(sdev_t));
    json_array_foreach (devs, i, dj) {
        const char *dn = str_of(dj, "name");
        if (!dn) {
            util_errf(err, errlen, "ResourceSlice %s: a device without a name", name);
            goto fail;
        }
        sdev_t *d = &sl->devs[sl->ndevs++];
        d->d.driver = sl->driver;
        d->d.pool = sl->pool;
        d->d.name = util_strdup(dn);
        d->key = dev_key(driver, pname, dn);
        d->d.multi = json_is_true(json_object_get(dj, "allowMultipleAllocations"));
        d->tainted = json_array_size(json_object_get(dj, "taints")) > 0;
        if (parse_attrs(d, driver, json_object_get(dj, "attributes"), err, errlen) < 0 ||
            parse_caps(d, driver, json_object_get(dj, "capacity"), err, errlen) < 0)
            goto fail;
        int dgiven = 0;
        if (per_dev && parse_place(&d->place, dj, &dgiven, err, errlen) < 0)
            goto fail;
        if (!dgiven)
            place_copy(&d->place, &place);
    }
    free(place.node);
    terms_free(place.terms, place.nterms);
    return sl;
fail:
    free(place.node);
    terms_free(place.terms, place.nterms);
    slice_free(sl);
    return NULL;
}

/* The slice's devices into devs, with their counts (store lock held). */
static void slice_link(dra_store_t *s, slice_t *sl)
{
    for (int i = 0; sl && i < sl->ndevs; i++) {
        sdev_t *d = &sl->devs[i];
        d->nused = (int)count_of(s->used, d->key);
        d->nheld = (int)count_of(s->held, d->key);
        d->same_key = hashmap_put(s->devs, d->key, d);
    }
}

/* The slice's devices out of devs (store lock held). */
static void slice_unlink(dra_store_t *s, slice_t *sl)
{
    for (int i = 0; sl && i < sl->ndevs; i++) {
        sdev_t *d = &sl->devs[i], *head = hashmap_get(s->devs, d->key);
        if (head == d) {
            if (d->same_key)
                hashmap_put(s->devs, d->key, d->same_key);
            else
                hashmap_remove(s->devs, d->key);
            continue;
        }
        for (sdev_t *p = head; p; p = p->same_key)
            if (p->same_key == d) {
                p->same_key = d->same_key;
                break;
            }
    }
}

/* The index as the slices now are (write lock held). */
static void index_refresh_locked(dra_store_t *s)
{
    if (!__atomic_load_n(&s->dirty, __ATOMIC_ACQUIRE))
        return;
    index_rebuild(s);
    while (s->retired) {
        slice_t *next = s->retired->retired_next;
        slice_free(s->retired);
        s->retired = next;
    }
    __atomic_store_n(&s->dirty, 0, __ATOMIC_RELEASE);
}

/* Rebuilds the index if slices changed since (no lock held). */
static void index_fresh(dra_store_t *s)
{
    if (!__atomic_load_n(&s->dirty, __ATOMIC_ACQUIRE))
        return;
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    index_refresh_locked(s);
    lo_rwlock_unlock(&s->lock, LO_DRA);
}

int dra_store_slice(dra_store_t *s, kube_event_type_t type, const char *key, json_t *obj, char *err, size_t errlen)
{
    slice_t *sl = NULL;
    int rc = 0;
    if (type != KUBE_DELETED && obj) {
        sl = slice_parse(obj, err, errlen);
        rc = sl ? 0 : -1;
    }
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    slice_t *old = sl ? hashmap_put(s->slices, key, sl) : hashmap_remove(s->slices, key);
    slice_unlink(s, old);
    slice_link(s, sl);
    /* The index points into the slices: the old one goes with its rebuild. */
    if (old) {
        old->retired_next = s->retired;
        s->retired = old;
    }
    __atomic_store_n(&s->dirty, 1, __ATOMIC_RELEASE);
    lo_rwlock_unlock(&s->lock, LO_DRA);
    if (rc < 0)
        return rc;
    return sl ? DRA_CHANGE_MORE : DRA_CHANGE_NONE;
}

/* ---- classes and templates ----------------------------------------------- */

int dra_store_class(dra_store_t *s, kube_event_type_t type, const char *key, json_t *obj, char *err, size_t errlen)
{
    dclass_t *c = NULL;
    if (type != KUBE_DELETED && obj) {
        json_t *spec = json_object_get(obj, "spec");
        if (spec && !json_is_object(spec)) {
            util_errf(err, errlen, "DeviceClass %s: spec is not an object", key);
            type = KUBE_DELETED;
        } else {
            c = util_xcalloc(1, sizeof(*c));
            c->name = util_strdup(key);
            c->spec = spec ? json_incref(spec) : json_object();
            const char *ext = str_of(c->spec, "extendedResourceName"),
                       *ts = str_of(json_object_get(obj, "metadata"), "creationTimestamp");
            c->ext = ext && *ext ? util_strdup(ext) : NULL;
            c->created = util_strdup(ts ? ts : "");
        }
    }
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    dclass_t *old = c ? hashmap_put(s->classes, key, c) : hashmap_remove(s->classes, key);
    lo_rwlock_unlock(&s->lock, LO_DRA);
    class_free(old);
    return c ? DRA_CHANGE_MORE : DRA_CHANGE_NONE;
}

int dra_store_template(dra_store_t *s, kube_event_type_t type, const char *key, json_t *obj)
{
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    if (type == KUBE_DELETED || !obj)
        hashmap_remove(s->templates, key);
    else
        hashmap_put(s->templates, key, (void *)1);
    lo_rwlock_unlock(&s->lock, LO_DRA);
    return DRA_CHANGE_NONE;
}

/* The class serving extended resource res (lock held), as kube's
 * DeviceClassResolver picks it: the classes whose spec.extendedResourceName
 * is res, the one created last, on a tie the first by name (the API's doc
 * of DeviceClassSpec.extendedResourceName); else the class an implicit
 * deviceclass.resource.kubernetes.io/<class> names. */
static dclass_t *ext_class_locked(dra_store_t *s, const char *res)
{
    dclass_t *best = NULL;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(s->classes, &it, &k, &v);) {
        dclass_t *c = v;
        if (!c->ext || strcmp(c->ext, res) != 0)
            continue;
        int cmp = best ? strcmp(c->created, best->created) : 1;
        if (cmp > 0 || (cmp == 0 && strcmp(c->name, best->name) < 0))
            best = c;
    }
    size_t np = strlen(DRA_IMPLICIT_PREFIX);
    if (!best && !strncmp(res, DRA_IMPLICIT_PREFIX, np))
        best = hashmap_get(s->classes, res + np);
    return best;
}

int dra_store_ext_class(dra_store_t *s, const char *res, char *cls, size_t len)
{
    lo_rwlock_rdlock(&s->lock, LO_DRA);
    dclass_t *c = s->served && s->listed ? ext_class_locked(s, res) : NULL;
    if (c && cls && len)
        snprintf(cls, len, "%s", c->name);
    lo_rwlock_unlock(&s->lock, LO_DRA);
    return c != NULL;
}

/* ---- claims ---------------------------------------------------------------- */

static int claim_parse_status(claim_t *c, json_t *status, char *err, size_t errlen)
{
    json_t *alloc = json_object_get(status, "allocation"), *r;
    size_t i;
    json_t *rf = json_object_get(status, "reservedFor");
    c->reserved = util_xcalloc(json_array_size(rf) + 1, sizeof(char *));
    json_array_foreach (rf, i, r) {
        const char *uid = str_of(r, "uid");
        if (uid)
            c->reserved[c->nreserved++] = util_strdup(uid);
    }
    if (!json_is_object(alloc))
        return 0;
    c->allocated = 1;
    json_t *results = json_object_get(json_object_get(alloc, "devices"), "results");
    c->devkeys = util_xcalloc(json_array_size(results) + 1, sizeof(char *));
    json_array_foreach (results, i, r) {
        const char *drv = str_of(r, "driver"), *pool = str_of(r, "pool"), *dev = str_of(r, "device");
        if (!drv || !pool || !dev)
            return util_errf(err, errlen, "ResourceClaim %s: an allocation result without driver, pool or device",
                             c->key);
        if (json_is_true(json_object_get(r, "adminAccess")))
            continue;
        c->devkeys[c->ndev++] = dev_key(drv, pool, dev);
    }
    json_t *ns = json_object_get(alloc, "nodeSelector");
    if (json_is_object(ns)) {
        c->pinned = 1;
        if (terms_parse(ns, &c->pin, &c->npin, err, errlen) < 0)
            return -1;
    }
    return 0;
}

static claim_t *claim_parse(const char *key, json_t *obj, char *err, size_t errlen)
{
    json_t *meta = json_object_get(obj, "metadata"), *f, *o;
    size_t i;
    const char *ns = str_of(meta, "namespace"), *name = str_of(meta, "name");
    if (!ns || !name) {
        util_errf(err, errlen, "ResourceClaim %s: no namespace or name", key);
        return NULL;
    }
    claim_t *c = util_xcalloc(1, sizeof(*c));
    c->ns = util_strdup(ns);
    c->name = util_strdup(name);
    c->key = util_strdup(key);
    c->uid = util_strdup(str_of(meta, "uid") ? str_of(meta, "uid") : "");
    c->rv = util_strdup(str_of(meta, "resourceVersion") ? str_of(meta, "resourceVersion") : "");
    c->deleting =
        json_object_get(meta, "deletionTimestamp") && !json_is_null(json_object_get(meta, "deletionTimestamp"));
    json_array_foreach (json_object_get(meta, "finalizers"), i, f)
        if (json_is_string(f) && !strcmp(json_string_value(f), DRA_FINALIZER))
            c->finalizer = 1;
    json_array_foreach (json_object_get(meta, "ownerReferences"), i, o)
        if (json_is_true(json_object_get(o, "controller")) && str_of(o, "uid"))
            c->owner_uid = util_strdup(str_of(o, "uid"));
    c->obj = json_incref(obj);
    if (claim_parse_status(c, json_object_get(obj, "status"), err, errlen) < 0) {
        claim_free(c);
        return NULL;
    }
    return c;
}

static void claim_count(dra_store_t *s, const claim_t *c, int sign)
{
    for (int i = 0; c && i < c->ndev; i++)
        use_add(s, 0, c->devkeys[i], sign);
}

/* A bound pod's hold with nothing left counted is done (lock held): out
 * of the store, freed. Returns 1 when it went. */
static int hold_done(dra_store_t *s, hold_t *h)
{
    if (!h->bound)
        return 0;
    for (int i = 0; i < h->n; i++)
        if (h->c[i].counted)
            return 0;
    for (int i = 0; i < h->n; i++)
        if (hashmap_get(s->inflight, h->c[i].key) == h)
            hashmap_remove(s->inflight, h->c[i].key);
    if (hashmap_get(s->holds, h->uid) == h)
        hashmap_remove(s->holds, h->uid);
    hold_free(h);
    return 1;
}

/* The claim's allocation is seen: a pod's hold of it stops counting. */
static void inflight_seen(dra_store_t *s, const claim_t *c)
{
    hold_t *h = hashmap_get(s->inflight, c->key);
    if (!h || !c->allocated)
        return;
    for (int i = 0; i < h->n; i++) {
        hold_claim_t *hc = &h->c[i];
        if (strcmp(hc->key, c->key) != 0 || !hc->counted)
            continue;
        for (int j = 0; j < hc->ndev; j++)
            use_add(s, 1, hc->devkeys[j], -1);
        hc->counted = 0;
    }
    hashmap_remove(s->inflight, c->key);
    hold_done(s, h);
}

/* Whether the change from old to c frees devices or room: a claim gone,
 * an allocation dropped, reservedFor shrunk. */
static int claim_frees(const claim_t *old, const claim_t *c)
{
    if (!old || !c)
        return old != NULL;
    return (old->allocated && !c->allocated) || c->nreserved < old->nreserved;
}

int dra_store_has_hold(dra_store_t *s, const char *pod_uid)
{
    lo_rwlock_rdlock(&s->lock, LO_DRA);
    int has = hashmap_get(s->holds, pod_uid) != NULL;
    lo_rwlock_unlock(&s->lock, LO_DRA);
    return has;
}

int dra_store_claim(dra_store_t *s, kube_event_type_t type, const char *key, json_t *obj, char *err, size_t errlen)
{
    claim_t *c = NULL;
    int rc = 0;
    if (type != KUBE_DELETED && obj) {
        c = claim_parse(key, obj, err, errlen);
        rc = c ? 0 : -1;
    }
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    claim_t *old = c ? hashmap_put(s->claims, key, c) : hashmap_remove(s->claims, key);
    claim_count(s, old, -1);
    claim_count(s, c, +1);
    if (c)
        inflight_seen(s, c);
    int change = !old && c ? DRA_CHANGE_NEW : claim_frees(old, c) ? DRA_CHANGE_MORE : DRA_CHANGE_NONE;
    lo_rwlock_unlock(&s->lock, LO_DRA);
    claim_free(old);
    return rc < 0 ? rc : change;
}

/* ---- a pod's claims, prepared --------------------------------------------- */

typedef struct pclaim {
    char *key, *ns, *name;
    int allocated;       /* allocated, or being allocated by another pod's hold */
    char *inflight_node; /* that hold's node */
    int pinned;
    selector_t *pin;
    int npin;
    dra_request_t *reqs;
    int nreqs;
    uint64_t *sigs; /* reqs[i]'s selector signature (req_sig), for first_fit */
    dra_constraint_t *cons;
    int ncons;
    json_t *config; /* spec.devices.config (a reference) */
} pclaim_t;

/* One extended-resource request of the pod a class serves (KEP-5004). */
typedef struct pext {
    dra_request_t r; /* "container-<i>-request-<j>": count devices of the class */
    char *resource, *container;
} pext_t;

struct dra_prep {
    dra_store_t *store; /* Filter reads it (no cluster view needed: a
                         * preemption's copies are filtered without one) */
    pclaim_t *c;
    int n;
    /* The requests of the claim the scheduler makes for the pod's extended
     * resources (by request name, as kube sorts them); each is allocated
     * only on a node whose allocatable lacks its resource (kube's
     * filterExtendedResources). xkey: "ns/<extended-resources>", kube's
     * in-memory name, for messages. */
    pext_t *x;
    int nx;
    char *xkey;
    dra_claim_req_t *areq; /* the claims to allocate, in c's order */
    int *aidx;             /* areq[i] is c[aidx[i]] */
    int nareq;
    int first_fit;      /* every request a plain ExactCount (see first_fit) */
    int first_fit_need; /* the devices those requests ask, together */
    /* Preemption's simulation: pods gone from the node copy, and the
     * claims they use. */
    char **gone;
    int ngone;
    char **gone_claims;
    int ngone_claims;
    /* Pods added to a node's view that are not victims coming back: pods
     * nominated there (room a preemption made for them), a gang's members
     * placed on the copies. Their unallocated claims' devices are taken
     * from that node's free ones (a count: which devices they would get is
     * their own allocation's). */
    struct added_pod {
        char *uid, *node;
        int need;
    } * added;
    int nadded;
};

static void request_clear(dra_request_t *r)
{
    free(r->name);
    free(r->class_name);
    for (int i = 0; i < r->nsel; i++) {
        dra_cel_free(r->sel[i]);
        free(r->sel_text[i]);
    }
    free(r->sel);
    free(r->sel_text);
    for (int i = 0; i < r->nsubs; i++)
        request_clear(&r->subs[i]);
    free(r->subs);
}

static void pclaim_clear(pclaim_t *c)
{
    free(c->key);
    free(c->ns);
    free(c->name);
    free(c->inflight_node);
    terms_free(c->pin, c->npin);
    for (int i = 0; i < c->nreqs; i++)
        request_clear(&c->reqs[i]);
    free(c->reqs);
    free(c->sigs);
    for (int i = 0; i < c->ncons; i++) {
        strv_free(c->cons[i].requests, c->cons[i].nrequests);
        free(c->cons[i].attr);
    }
    free(c->cons);
    json_decref(c->config);
}

void dra_prep_free(dra_prep_t *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n; i++)
        pclaim_clear(&p->c[i]);
    free(p->c);
    for (int i = 0; i < p->nx; i++) {
        request_clear(&p->x[i].r);
        free(p->x[i].resource);
        free(p->x[i].container);
    }
    free(p->x);
    free(p->xkey);
    free(p->areq);
    free(p->aidx);
    strv_free(p->gone, p->ngone);
    strv_free(p->gone_claims, p->ngone_claims);
    for (int i = 0; i < p->nadded; i++) {
        free(p->added[i].uid);
        free(p->added[i].node);
    }
    free(p->added);
    free(p);
}

/* Adds the selectors of list (a [{cel:{expression}}]) to r. */
static dra_prep_rc_t add_selectors(dra_request_t *r, json_t *list, const char *whose, char *why, size_t whylen)
{
    size_t i;
    json_t *sel;
    size_t n = json_array_size(list);
    if (!n)
        return DRA_PREP_OK;
    r->sel = util_xrealloc(r->sel, (size_t)(r->nsel + (int)n) * sizeof(*r->sel));
    r->sel_text = util_xrealloc(r->sel_text, (size_t)(r->nsel + (int)n) * sizeof(*r->sel_text));
    json_array_foreach (list, i, sel) {
        const char *expr = str_of(json_object_get(sel, "cel"), "expression");
        if (!expr) {
            snprintf(why, whylen, "%s: a selector without cel.expression", whose);
            return DRA_PREP_INVALID;
        }
        char err[256];
        dra_cel_t *c = strlen(expr) > DRA_MAX_EXPR ? NULL : dra_cel_compile(expr, err, sizeof(err));
        if (!c) {
            if (strlen(expr) > DRA_MAX_EXPR)
                snprintf(err, sizeof(err), "longer than %d characters", DRA_MAX_EXPR);
            snprintf(why, whylen, "%s: selector \"%s\" is not supported by ai-scheduler's CEL: %s", whose, expr, err);
            return DRA_PREP_INVALID;
        }
        r->sel[r->nsel] = c;
        r->sel_text[r->nsel++] = util_strdup(expr);
    }
    return DRA_PREP_OK;
}

/* One exactly (or firstAvailable alternative) o into r, named name. */
static dra_prep_rc_t parse_exact(dra_store_t *s, const char *claim, const char *name, json_t *o, dra_request_t *r,
                                 char *why, size_t whylen)
{
    char whose[384];
    snprintf(whose, sizeof(whose), "claim %s, request %s", claim, name);
    r->name = util_strdup(name);
    const char *cls = str_of(o, "deviceClassName"), *mode = str_of(o, "allocationMode");
    if (!cls) {
        snprintf(why, whylen, "%s: no deviceClassName", whose);
        return DRA_PREP_INVALID;
    }
    r->class_name = util_strdup(cls);
    if (json_object_get(o, "capacity")) {
        snprintf(why, whylen, "%s: capacity requests (consumable capacity) are not supported by ai-scheduler", whose);
        return DRA_PREP_INVALID;
    }
    if (mode && !strcmp(mode, "All"))
        r->mode = DRA_MODE_ALL;
    else if (mode && *mode && strcmp(mode, "ExactCount") != 0) {
        snprintf(why, whylen, "%s: allocationMode %s is not ExactCount or All", whose, mode);
        return DRA_PREP_INVALID;
    }
    json_t *cnt = json_object_get(o, "count");
    r->count = json_is_integer(cnt) ? json_integer_value(cnt) : 1;
    if (r->mode == DRA_MODE_EXACT && (r->count < 1 || r->count > 128)) {
        snprintf(why, whylen, "%s: count %lld is not in 1..128", whose, (long long)r->count);
        return DRA_PREP_INVALID;
    }
    r->admin = json_is_true(json_object_get(o, "adminAccess"));
    dclass_t *dc = hashmap_get(s->classes, cls);
    if (!dc) {
        snprintf(why, whylen, "%s: device class %s does not exist", whose, cls);
        return DRA_PREP_WAIT;
    }
    char cwhose[384];
    snprintf(cwhose, sizeof(cwhose), "device class %s", cls);
    dra_prep_rc_t rc = add_selectors(r, json_object_get(dc->spec, "selectors"), cwhose, why, whylen);
    if (rc == DRA_PREP_OK)
        rc = add_selectors(r, json_object_get(o, "selectors"), whose, why, whylen);
    return rc;
}

static dra_prep_rc_t parse_request(dra_store_t *s, const char *claim, json_t *rq, dra_request_t *r, char *why,
                                   size_t whylen)
{
    const char *name = str_of(rq, "name");
    json_t *exact = json_object_get(rq, "exactly"), *first = json_object_get(rq, "firstAvailable"), *sub;
    size_t i;
    if (!name) {
        snprintf(why, whylen, "claim %s: a request without a name", claim);
        return DRA_PREP_INVALID;
    }
    if (json_is_object(exact))
        return parse_exact(s, claim, name, exact, r, why, whylen);
    if (!json_is_array(first) || json_array_size(first) == 0) {
        snprintf(why, whylen, "claim %s, request %s: neither exactly nor firstAvailable", claim, name);
        return DRA_PREP_INVALID;
    }
    r->name = util_strdup(name);
    r->subs = util_xcalloc(json_array_size(first), sizeof(*r->subs));
    json_array_foreach (first, i, sub) {
        const char *sn = str_of(sub, "name");
        char full[256];
        snprintf(full, sizeof(full), "%s/%s", name, sn ? sn : "?");
        dra_prep_rc_t rc = parse_exact(s, claim, full, sub, &r->subs[r->nsubs++], why, whylen);
        if (rc != DRA_PREP_OK)
            return rc;
    }
    return DRA_PREP_OK;
}

static dra_prep_rc_t parse_constraints(pclaim_t *pc, json_t *list, char *why, size_t whylen)
{
    size_t i, j;
    json_t *c, *r;
    pc->cons = util_xcalloc(json_array_size(list) + 1, sizeof(*pc->cons));
    json_array_foreach (list, i, c) {
        const char *attr = str_of(c, "matchAttribute");
        if (!attr) {
            snprintf(why, whylen,
                     "claim %s: a constraint other than matchAttribute (%s) is not supported by "
                     "ai-scheduler",
                     pc->key, json_object_get(c, "distinctAttribute") ? "distinctAttribute" : "empty");
            return DRA_PREP_INVALID;
        }
        dra_constraint_t *x = &pc->cons[pc->ncons++];
        x->attr = util_strdup(attr);
        json_t *reqs = json_object_get(c, "requests");
        x->requests = util_xcalloc(json_array_size(reqs) + 1, sizeof(char *));
        json_array_foreach (reqs, j, r)
            if (json_is_string(r))
                x->requests[x->nrequests++] = util_strdup(json_string_value(r));
    }
    return DRA_PREP_OK;
}

static int has_uid(char *const *v, int n, const char *uid)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i], uid))
            return 1;
    return 0;
}

/* One of the pod's claims into pc (store lock held). */
static dra_prep_rc_t prep_claim(dra_store_t *s, const pod_t *pod, const dra_pod_claim_t *pcl, pclaim_t *pc, char *why,
                                size_t whylen)
{
    if (pcl->waiting) {
        snprintf(why, whylen,
                 "waiting for the ResourceClaim of pod claim %s (from a template) to be created by the resourceclaim "
                 "controller",
                 pcl->name);
        return DRA_PREP_WAIT;
    }
    pc->ns = util_strdup(pod->ns);
    pc->name = util_strdup(pcl->claim);
    sbuf_t b = { 0 };
    sbuf_printf(&b, "%s/%s", pod->ns, pcl->claim);
    pc->key = b.data;
    claim_t *c = hashmap_get(s->claims, pc->key);
    if (!c) {
        snprintf(why, whylen, "resourceclaim %s not found", pc->key);
        return DRA_PREP_WAIT;
    }
    if (c->deleting) {
        snprintf(why, whylen, "resourceclaim %s is being deleted", pc->key);
        return DRA_PREP_WAIT;
    }
    if (pcl->from_template && (!c->owner_uid || strcmp(c->owner_uid, pod->uid) != 0)) {
        snprintf(why, whylen, "resourceclaim %s was not created for the pod", pc->key);
        return DRA_PREP_INVALID;
    }
    if (c->allocated) {
        pc->allocated = 1;
        if (c->nreserved >= DRA_RESERVED_MAX && !has_uid(c->reserved, c->nreserved, pod->uid)) {
            snprintf(why, whylen, "resourceclaim %s is in use by %d pods, the most it may be", pc->key,
                     DRA_RESERVED_MAX);
            return DRA_PREP_WAIT;
        }
        if (c->pinned) {
            pc->pinned = 1;
            pc->pin = util_xcalloc((size_t)c->npin + 1, sizeof(selector_t));
            for (int i = 0; i < c->npin; i++)
                selector_copy(&pc->pin[i], &c->pin[i]);
            pc->npin = c->npin;
        }
        return DRA_PREP_OK;
    }
    hold_t *h = hashmap_get(s->inflight, pc->key);
    if (h && strcmp(h->uid, pod->uid) != 0) {
        pc->allocated = 1;
        pc->inflight_node = util_strdup(h->node);
        return DRA_PREP_OK;
    }
    json_t *devs = json_object_get(json_object_get(c->obj, "spec"), "devices"), *rq;
    json_t *reqs = json_object_get(devs, "requests");
    size_t i;
    pc->reqs = util_xcalloc(json_array_size(reqs) + 1, sizeof(*pc->reqs));
    json_array_foreach (reqs, i, rq) {
        dra_prep_rc_t rc = parse_request(s, pc->key, rq, &pc->reqs[pc->nreqs++], why, whylen);
        if (rc != DRA_PREP_OK)
            return rc;
    }
    if (pc->nreqs == 0) {
        snprintf(why, whylen, "claim %s has no device request", pc->key);
        return DRA_PREP_INVALID;
    }
    pc->config = json_incref(json_object_get(devs, "config"));
    return parse_constraints(pc, json_object_get(devs, "constraints"), why, whylen);
}

#define FIRST_FIT_MAX 64 /* devices first_fit picks at most */

/* Whether Filter may try first_fit: no constraint, and every request
 * ExactCount of count devices without admin access or alternatives, within
 * the claim limit (the allocator refuses more). Returns the devices the
 * requests ask together, or 0 when first_fit does not apply. */
static int first_fit_applies(const dra_prep_t *p)
{
    int64_t total = 0;
    if (p->nx) /* extended resources: each node's own claim (node_req_make) */
        return 0;
    for (int i = 0; i < p->nareq; i++) {
        const dra_claim_req_t *c = &p->areq[i];
        int64_t n = 0;
        if (c->ncons)
            return 0;
        for (int j = 0; j < c->nreqs; j++) {
            const dra_request_t *r = &c->reqs[j];
            if (r->nsubs || r->mode != DRA_MODE_EXACT || r->admin || r->count < 1)
                return 0;
            n += r->count;
        }
        if (n > DRA_RESULTS_MAX)
            return 0;
        total += n;
    }
    return total <= FIRST_FIT_MAX ? (int)total : 0;
}

/* FNV-1a 64 of text and a separator, on from h. */
static uint64_t sig_add(uint64_t h, const char *text)
{
    for (const char *c = text ? text : ""; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    return (h ^ 0xffu) * 1099511628211ULL; /* a separator no text holds */
}

/* A request's selectors as one 64-bit FNV-1a hash of the class name and
 * the selectors' texts (the class's, then the request's), low two bits
 * clear: pods whose requests select alike share first_fit's verdicts on a
 * device. Compiling is deterministic, so the same texts judge a device the
 * same. A collision (odds 2^-62 a pair) could only mislead Filter: Reserve
 * chooses again with every selector evaluated, and a wrong "no" falls back
 * to the allocator. */
static uint64_t req_sig(const dra_request_t *r)
{
    uint64_t h = sig_add(1469598103934665603ULL, r->class_name);
    for (int i = 0; i < r->nsel; i++)
        h = sig_add(h, r->sel_text[i]);
    return h & ~(uint64_t)3;
}

static int pext_cmp(const void *a, const void *b)
{
    return strcmp(((const pext_t *)a)->r.name, ((const pext_t *)b)->r.name);
}

/* The pod's extended-resource requests some class serves into p->x (lock
 * held); a request no class serves stays the device plugin's. */
static dra_prep_rc_t prep_ext(dra_store_t *s, const pod_t *pod, const dra_pod_t *x, dra_prep_t *p, char *why,
                              size_t whylen)
{
    if (!x)
        return DRA_PREP_OK;
    p->x = util_xcalloc((size_t)x->nx + 1, sizeof(*p->x));
    for (int i = 0; i < x->nx; i++) {
        dclass_t *dc = ext_class_locked(s, x->x[i].resource);
        if (!dc)
            continue;
        pext_t *e = &p->x[p->nx++];
        e->resource = util_strdup(x->x[i].resource);
        e->container = util_strdup(x->x[i].container);
        e->r.name = util_strdup(x->x[i].request);
        e->r.class_name = util_strdup(dc->name);
        e->r.count = x->x[i].count;
        char whose[384];
        snprintf(whose, sizeof(whose), "device class %s (serving %s)", dc->name, e->resource);
        dra_prep_rc_t rc = add_selectors(&e->r, json_object_get(dc->spec, "selectors"), whose, why, whylen);
        if (rc != DRA_PREP_OK)
            return rc;
    }
    qsort(p->x, (size_t)p->nx, sizeof(*p->x), pext_cmp);
    sbuf_t b = { 0 };
    sbuf_printf(&b, "%s/<extended-resources>", pod->ns);
    p->xkey = b.data;
    return DRA_PREP_OK;
}

static dra_prep_rc_t prepare_locked(dra_store_t *s, const pod_t *pod, dra_prep_t **out, char *why, size_t whylen)
{
    const dra_pod_t *d = dra_pod(pod), *x = dra_pod_ext(pod);
    *out = NULL;
    if (!d && !x)
        return DRA_PREP_OK;
    /* A pod with extended resources only is DRA's when a class serves one. */
    if (!d && (!s->served || !s->listed))
        return DRA_PREP_OK;
    if (d && d->invalid) {
        snprintf(why, whylen, "%s", d->invalid);
        return DRA_PREP_INVALID;
    }
    if (!s->served) {
        snprintf(why, whylen,
                 "the pod uses DRA resource claims (%s) and the API server does not serve "
                 "resource.k8s.io/v1",
                 pod->claims ? pod->claims : "");
        return DRA_PREP_WAIT;
    }
    if (!s->listed) {
        snprintf(why, whylen, "waiting for the ResourceClaims, DeviceClasses and ResourceSlices to be listed");
        return DRA_PREP_WAIT;
    }
    dra_prep_t *p = util_xcalloc(1, sizeof(*p));
    p->store = s;
    int nc = d ? d->n : 0;
    p->c = util_xcalloc((size_t)nc + 1, sizeof(*p->c));
    p->areq = util_xcalloc((size_t)nc + 1, sizeof(*p->areq));
    p->aidx = util_xcalloc((size_t)nc + 1, sizeof(*p->aidx));
    for (int i = 0; i < nc; i++) {
        if (d->c[i].skip)
            continue;
        /* The same claim named twice is one claim. */
        int dup = 0;
        for (int j = 0; j < p->n; j++)
            dup |= d->c[i].claim && !strcmp(p->c[j].name, d->c[i].claim);
        if (dup)
            continue;
        pclaim_t *pc = &p->c[p->n++];
        dra_prep_rc_t rc = prep_claim(s, pod, &d->c[i], pc, why, whylen);
        if (rc != DRA_PREP_OK) {
            dra_prep_free(p);
            return rc;
        }
        if (!pc->allocated) {
            p->aidx[p->nareq] = p->n - 1;
            p->areq[p->nareq++] = (dra_claim_req_t){
                .key = pc->key, .reqs = pc->reqs, .nreqs = pc->nreqs, .cons = pc->cons, .ncons = pc->ncons
            };
        }
    }
    dra_prep_rc_t rc = prep_ext(s, pod, x, p, why, whylen);
    if (rc != DRA_PREP_OK || (!d && p->nx == 0)) {
        dra_prep_free(p);
        return rc;
    }
    p->first_fit_need = first_fit_applies(p);
    p->first_fit = p->first_fit_need > 0;
    for (int i = 0; p->first_fit && i < p->n; i++) {
        pclaim_t *pc = &p->c[i];
        pc->sigs = util_xcalloc((size_t)pc->nreqs + 1, sizeof(*pc->sigs));
        for (int j = 0; j < pc->nreqs; j++)
            pc->sigs[j] = req_sig(&pc->reqs[j]);
    }
    *out = p;
    return DRA_PREP_OK;
}

dra_prep_rc_t dra_prepare(dra_store_t *s, const pod_t *pod, dra_prep_t **out, char *why, size_t whylen)
{
    index_fresh(s);
    lo_rwlock_rdlock(&s->lock, LO_DRA);
    dra_prep_rc_t rc = prepare_locked(s, pod, out, why, whylen);
    lo_rwlock_unlock(&s->lock, LO_DRA);
    return rc;
}

/* An added pod leaves the view (lock not needed: p is the caller's). */
static int added_drop(dra_prep_t *p, const char *uid)
{
    for (int i = 0; i < p->nadded; i++)
        if (!strcmp(p->added[i].uid, uid)) {
            free(p->added[i].uid);
            free(p->added[i].node);
            p->added[i] = p->added[--p->nadded];
            return 1;
        }
    return 0;
}

/* The devices other's claims would still take: ExactCount's count of the
 * claims neither allocated nor held for another pod (All: none known). */
static int pod_need(dra_store_t *s, const pod_t *other)
{
    const dra_pod_t *d = dra_pod(other);
    int need = 0;
    lo_rwlock_rdlock(&s->lock, LO_DRA);
    for (int i = 0; d && i < d->n; i++) {
        if (!d->c[i].claim)
            continue;
        char key[512];
        snprintf(key, sizeof(key), "%s/%s", other->ns, d->c[i].claim);
        claim_t *c = hashmap_get(s->claims, key);
        if (!c || c->allocated || hashmap_get(s->inflight, key))
            continue;
        size_t j;
        json_t *rq;
        json_array_foreach (json_object_get(json_object_get(json_object_get(c->obj, "spec"), "devices"), "requests"), j,
                            rq) {
            json_t *ex = json_object_get(rq, "exactly");
            if (!json_is_object(ex))
                ex = json_array_get(json_object_get(rq, "firstAvailable"), 0);
            const char *mode = str_of(ex, "allocationMode");
            json_t *cnt = json_object_get(ex, "count");
            if (!mode || strcmp(mode, "All") != 0)
                need += json_is_integer(cnt) && json_integer_value(cnt) > 0 ? (int)json_integer_value(cnt) : 1;
        }
    }
    lo_rwlock_unlock(&s->lock, LO_DRA);
    return need;
}

/* The devices pods added to node's view take (added_pod). */
static int added_need(const dra_prep_t *p, const char *node)
{
    int need = 0;
    for (int i = 0; i < p->nadded; i++)
        if (!strcmp(p->added[i].node, node))
            need += p->added[i].need;
    return need;
}

void dra_prep_remove_pod(dra_prep_t *p, const pod_t *other)
{
    const dra_pod_t *d = dra_pod(other);
    if (!p || !d || added_drop(p, other->uid) || has_uid(p->gone, p->ngone, other->uid))
        return;
    p->gone = util_xrealloc(p->gone, (size_t)(p->ngone + 1) * sizeof(char *));
    p->gone[p->ngone++] = util_strdup(other->uid);
    p->gone_claims = util_xrealloc(p->gone_claims, (size_t)(p->ngone_claims + d->n) * sizeof(char *));
    for (int i = 0; i < d->n; i++) {
        if (!d->c[i].claim)
            continue;
        sbuf_t b = { 0 };
        sbuf_printf(&b, "%s/%s", other->ns, d->c[i].claim);
        p->gone_claims[p->ngone_claims++] = b.data;
    }
}

void dra_prep_add_pod(dra_prep_t *p, const pod_t *other, const char *node)
{
    if (!p || !dra_pod(other))
        return;
    for (int i = 0; i < p->ngone; i++)
        if (!strcmp(p->gone[i], other->uid)) {
            free(p->gone[i]);
            p->gone[i] = p->gone[--p->ngone];
            /* Its claims stay listed: freed only while all their users are gone. */
            return;
        }
    int need = node ? pod_need(p->store, other) : 0;
    if (need <= 0)
        return;
    added_drop(p, other->uid); /* added again: the newest counts */
    p->added = util_xrealloc(p->added, (size_t)(p->nadded + 1) * sizeof(*p->added));
    p->added[p->nadded++] = (struct added_pod){ util_strdup(other->uid), util_strdup(node), need };
}

/* ---- allocation on one node ------------------------------------------------ */

static int eligible(void *ud, const dra_request_t *req, const dra_device_t *dev, char *err, size_t errlen)
{
    (void)ud;
    for (int i = 0; i < req->nsel; i++) {
        char e[200];
        int rc = dra_cel_eval(req->sel[i], dev, e, sizeof(e));
        if (rc < 0) {
            snprintf(err, errlen, "selector \"%.120s\" on device %s: %s", req->sel_text[i], dev->name, e);
            return -1;
        }
        if (rc == 0)
            return 0;
    }
    return 1;
}

/* The devices the gone pods' claims free (each count: claims that go). */
static hashmap_t *freed_devices(dra_store_t *s, const dra_prep_t *p)
{
    if (!p->ngone_claims)
        return NULL;
    hashmap_t *m = hashmap_new(16);
    for (int i = 0; i < p->ngone_claims; i++) {
        claim_t *c = hashmap_get(s->claims, p->gone_claims[i]);
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= !strcmp(p->gone_claims[j], p->gone_claims[i]);
        if (!c || dup || !c->allocated || c->nreserved == 0)
            continue;
        int all_gone = 1;
        for (int j = 0; j < c->nreserved; j++)
            all_gone &= has_uid(p->gone, p->ngone, c->reserved[j]);
        for (int j = 0; all_gone && j < c->ndev; j++)
            count_add(m, c->devkeys[j], 1);
    }
    return m;
}

/* The candidates on node (store lock held): caller frees. */
static dra_candidate_t *candidates(dra_store_t *s, const dra_prep_t *p, const char *node, const labels_t *labels,
                                   int *n)
{
    devlist_t *l = hashmap_get(s->by_node, node);
    int cap = (l ? l->n : 0) + s->global.n;
    dra_candidate_t *c = util_xcalloc((size_t)cap + 1, sizeof(*c));
    hashmap_t *freed = p ? freed_devices(s, p) : NULL;
    *n = 0;
    for (int pass = 0; pass < 2; pass++) {
        const devlist_t *src = pass == 0 ? l : &s->global;
        for (int i = 0; src && i < src->n; i++) {
            const sdev_t *d = src->d[i];
            if (d->tainted || (pass == 1 && !place_match(&d->place, node, labels)))
                continue;
            intptr_t used = d->nused - (freed ? count_of(freed, d->key) : 0);
            c[*n].dev = &d->d;
            c[*n].in_use = used > 0 || d->nheld > 0;
            (*n)++;
        }
    }
    hashmap_free(freed);
    /* What pods added to the view take: the first free devices. */
    for (int i = 0, take = p ? added_need(p, node) : 0; i < *n && take > 0; i++)
        if (!c[i].in_use && !c[i].dev->multi) {
            c[i].in_use = 1;
            take--;
        }
    return c;
}

/* Whether d may go to a request now: never a tainted device; one that
 * allows multiple allocations always; else not in use, not picked. */
static int first_fit_usable(const sdev_t *d, const sdev_t *const *picks, int npicks)
{
    if (d->tainted)
        return 0;
    if (d->d.multi)
        return 1;
    if (d->nused > 0 || d->nheld > 0)
        return 0;
    for (int i = 0; i < npicks; i++)
        if (picks[i] == d)
            return 0;
    return 1;
}

/* Whether the device matches the request (eligible()), from the device's
 * last verdict when it was for the same signature: 1, 0, or -1 a
 * selector's error (never remembered). */
static int first_fit_eligible(const sdev_t *d, const dra_request_t *r, uint64_t sig)
{
    /* The verdict is a memo beside the device, not part of the store's
     * state: Filter threads share it under the read lock, atomically. */
    uint64_t *memo = (uint64_t *)&d->verdict, want = sig | 2;
    uint64_t v = __atomic_load_n(memo, __ATOMIC_RELAXED);
    if ((v & ~(uint64_t)1) == want)
        return (int)(v & 1);
    char e[64];
    int rc = eligible(NULL, r, &d->d, e, sizeof(e));
    if (rc >= 0)
        __atomic_store_n(memo, want | (uint64_t)rc, __ATOMIC_RELAXED);
    return rc;
}

/* One request's count devices in candidate order (the node's, then the
 * others placed on it, as candidates() lists them): 1 found, 0 not (or
 * more than half the allocator's step budget taken), -1 a selector's
 * error. */
static int first_fit_request(dra_store_t *s, const dra_request_t *r, uint64_t sig, const devlist_t *l, const char *node,
                             const labels_t *labels, const sdev_t **picks, int *npicks, int64_t *steps)
{
    int earlier = *npicks;
    int64_t got = 0;
    for (int pass = 0; pass < 2 && got < r->count; pass++) {
        const devlist_t *src = pass == 0 ? l : &s->global;
        for (int i = 0; src && i < src->n && got < r->count; i++) {
            const sdev_t *d = src->d[i];
            if ((pass == 1 && !place_match(&d->place, node, labels)) || !first_fit_usable(d, picks, earlier))
                continue;
            /* A device tried and a selector judged: a step each, as the allocator counts them. */
            if ((*steps += 2) > DRA_ALLOC_BUDGET / 2)
                return 0;
            int rc = first_fit_eligible(d, r, sig);
            if (rc < 0)
                return -1;
            if (rc > 0) {
                picks[(*npicks)++] = d;
                got++;
            }
        }
    }
    return got == r->count;
}

/* Filter's fast path (store lock held): 1 when taking each request's first
 * usable matching devices in candidate order allocates every claim. That
 * is the allocator's own first try (dra_allocate fills requests in order,
 * devices in candidate order, judging the same devices in the same order
 * on the way), so when this fits, the allocator fits too, within its
 * budget and without a selector's error (verdicts are remembered per
 * selector set: see req_sig). On 0 (no first fit, a selector's
 * error, too many steps) the allocator decides, searching further and
 * saying why. This takes no candidate list, no search state and no hash
 * lookup per device. -2: the node's free devices (*list) are fewer than
 * the pod asks and nothing beyond the node's own could serve: no
 * allocation exists. */
static int first_fit(dra_store_t *s, const dra_prep_t *p, const char *node, const labels_t *labels,
                     const devlist_t **list)
{
    const devlist_t *l = hashmap_get(s->by_node, node);
    const sdev_t *picks[FIRST_FIT_MAX];
    int npicks = 0;
    int64_t steps = 0;
    *list = l;
    /* Fewer devices free on the node than the pod asks, and none beyond
     * its own (no allNodes or selected slices): no allocation exists. */
    if (s->global.n == 0 && (!l || l->nfree < p->first_fit_need))
        return -2;
    for (int i = 0; i < p->nareq; i++)
        for (int j = 0; j < p->areq[i].nreqs; j++)
            if (first_fit_request(s, &p->areq[i].reqs[j], p->c[p->aidx[i]].sigs[j], l, node, labels, picks, &npicks,
                                  &steps) != 1)
                return 0;
    return 1;
}

/* Allocated claims are placed already: node must be where they are. */
static int pins_fit(const dra_prep_t *p, const char *node, const labels_t *labels, char *why, size_t whylen)
{
    for (int i = 0; i < p->n; i++) {
        const pclaim_t *c = &p->c[i];
        int ok = !c->allocated || (c->inflight_node ? !strcmp(c->inflight_node, node)
                                                    : !c->pinned || terms_match(c->pin, c->npin, node, labels));
        if (!ok) {
            snprintf(why, whylen, "resourceclaim %s is allocated on other nodes", c->key);
            return 0;
        }
    }
    return 1;
}

/* The claims to allocate on one node: the pod's own (p->areq), then the
 * extended-resource claim with the requests whose resource the node's
 * allocatable lacks (claims[nareq] when xn > 0; xr: shallow copies of
 * p->x[xi[k]].r). A node advertising the resource leaves it to
 * NodeResourcesFit and the device plugin, as kube does. */
typedef struct node_req {
    dra_claim_req_t *claims;
    int n;
    dra_request_t *xr;
    int *xi, xn;
} node_req_t;

static void node_req_make(const dra_prep_t *p, const resources_t *alloc, node_req_t *nr)
{
    memset(nr, 0, sizeof(*nr));
    nr->claims = util_xcalloc((size_t)p->nareq + 1, sizeof(*nr->claims));
    memcpy(nr->claims, p->areq, (size_t)p->nareq * sizeof(*nr->claims));
    nr->n = p->nareq;
    nr->xr = util_xcalloc((size_t)p->nx + 1, sizeof(*nr->xr));
    nr->xi = util_xcalloc((size_t)p->nx + 1, sizeof(*nr->xi));
    for (int i = 0; i < p->nx; i++) {
        if (alloc && res_get_scalar(alloc, p->x[i].resource) > 0)
            continue;
        nr->xi[nr->xn] = i;
        nr->xr[nr->xn++] = p->x[i].r;
    }
    if (nr->xn)
        nr->claims[nr->n++] = (dra_claim_req_t){ .key = p->xkey, .reqs = nr->xr, .nreqs = nr->xn };
}

static void node_req_free(node_req_t *nr)
{
    free(nr->claims);
    free(nr->xr);
    free(nr->xi);
}

/* A failed request of the extended-resource claim is named by the
 * resource the pod asked ("example.com/gpu: 5 devices of class ...; the
 * node has 4"): the claim does not exist yet, and a node's reason is short
 * (FW_REASON_LEN). */
static void ext_why(const dra_prep_t *p, const node_req_t *nr, char *why, size_t whylen)
{
    for (int k = 0; k < nr->xn; k++) {
        char pre[512];
        int np = snprintf(pre, sizeof(pre), "claim %s, request %s:", p->xkey, nr->xr[k].name);
        if (np <= 0 || (size_t)np >= sizeof(pre) || strncmp(why, pre, (size_t)np) != 0)
            continue;
        char *rest = util_strdup(why + np);
        snprintf(why, whylen, "%s:%s", p->x[nr->xi[k]].resource, rest);
        free(rest);
        return;
    }
}

int dra_prep_fits(const dra_prep_t *p, const char *node, const labels_t *labels, const resources_t *alloc, char *why,
                  size_t whylen)
{
    if (!p)
        return 0;
    dra_store_t *s = p->store;
    if (!pins_fit(p, node, labels, why, whylen))
        return 1;
    /* Filter runs on every node for every pod: a pod without extended
     * resources allocates its own claims with nothing made per node. */
    node_req_t nr = { .claims = p->areq, .n = p->nareq };
    if (p->nx)
        node_req_make(p, alloc, &nr);
    int rc = 0;
    if (nr.n == 0)
        goto out;
    lo_rwlock_rdlock(&s->lock, LO_DRA);
    /* Preemption's copies (devices freed by victims) take the full path. */
    const devlist_t *l = NULL;
    int ff = p->first_fit && p->ngone_claims == 0 && (!p->nadded || !added_need(p, node))
                 ? first_fit(s, p, node, labels, &l)
                 : 0;
    if (ff == 1 || ff == -2) {
        if (ff == -2) {
            const dra_claim_req_t *c = &p->areq[0];
            if (p->nareq == 1 && c->nreqs == 1)
                snprintf(why, whylen, "claim %s, request %s: %d device%s of class %s; %d of %d free", c->key,
                         c->reqs[0].name, p->first_fit_need, p->first_fit_need == 1 ? "" : "s", c->reqs[0].class_name,
                         l ? l->nfree : 0, l ? l->n : 0);
            else
                snprintf(why, whylen, "the pod's claims: %d devices; %d of %d free", p->first_fit_need,
                         l ? l->nfree : 0, l ? l->n : 0);
            rc = 1;
        }
        lo_rwlock_unlock(&s->lock, LO_DRA);
        goto out;
    }
    int n = 0;
    dra_candidate_t *cands = candidates(s, p, node, labels, &n);
    dra_alloc_t a = { 0 };
    rc = dra_allocate(nr.claims, nr.n, cands, n, eligible, NULL, &a, why, whylen);
    lo_rwlock_unlock(&s->lock, LO_DRA);
    if (rc == 1)
        ext_why(p, &nr, why, whylen);
    dra_alloc_free(&a);
    free(cands);
out:
    if (p->nx)
        node_req_free(&nr);
    return rc;
}

/* ---- reservations ------------------------------------------------------------ */

/* The request (or alternative) a result names. */
static const dra_request_t *request_named(const pclaim_t *c, const char *name)
{
    for (int i = 0; i < c->nreqs; i++) {
        if (!strcmp(c->reqs[i].name, name))
            return &c->reqs[i];
        for (int j = 0; j < c->reqs[i].nsubs; j++)
            if (!strcmp(c->reqs[i].subs[j].name, name))
                return &c->reqs[i].subs[j];
    }
    return NULL;
}

/* status.allocation for one claim's results (store lock held). */
static json_t *allocation_json(dra_store_t *s, const pclaim_t *c, const dra_result_t *res, int n, const char *node)
{
    json_t *results = json_array(), *config = json_array();
    int node_local = 0;
    for (int i = 0; i < n; i++) {
        const sdev_t *d = (const sdev_t *)res[i].dev;
        json_t *r = json_pack("{s:s, s:s, s:s, s:s}", "request", res[i].request, "driver", d->d.driver, "pool",
                              d->d.pool, "device", d->d.name);
        if (res[i].admin)
            json_object_set_new(r, "adminAccess", json_true());
        json_array_append_new(results, r);
        node_local |= !d->place.all;
        /* The class's config, for the requests of that class. */
        const dra_request_t *rq = request_named(c, res[i].request);
        dclass_t *dc = rq ? hashmap_get(s->classes, rq->class_name) : NULL;
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= !strcmp(res[j].request, res[i].request);
        size_t k;
        json_t *cfg;
        json_array_foreach (dc && !seen ? json_object_get(dc->spec, "config") : NULL, k, cfg) {
            json_t *e = json_deep_copy(cfg);
            json_object_set_new(e, "source", json_string("FromClass"));
            json_object_set_new(e, "requests", json_pack("[s]", res[i].request));
            json_array_append_new(config, e);
        }
    }
    size_t k;
    json_t *cfg;
    json_array_foreach (c->config, k, cfg) {
        json_t *e = json_deep_copy(cfg);
        json_object_set_new(e, "source", json_string("FromClaim"));
        json_array_append_new(config, e);
    }
    json_t *devices = json_pack("{s:o}", "results", results);
    if (json_array_size(config))
        json_object_set_new(devices, "config", config);
    else
        json_decref(config);
    json_t *a = json_pack("{s:o}", "devices", devices);
    if (node_local)
        json_object_set_new(a, "nodeSelector",
                            json_pack("{s:[{s:[{s:s, s:s, s:[s]}]}]}", "nodeSelectorTerms", "matchFields", "key",
                                      "metadata.name", "operator", "In", "values", node));
    return a;
}

static void hold_uncount(dra_store_t *s, hold_t *h)
{
    for (int i = 0; i < h->n; i++) {
        hold_claim_t *hc = &h->c[i];
        if (hc->counted)
            for (int j = 0; j < hc->ndev; j++)
                use_add(s, 1, hc->devkeys[j], -1);
        hc->counted = 0;
        if (hc->allocation && hashmap_get(s->inflight, hc->key) == h)
            hashmap_remove(s->inflight, hc->key);
    }
}

/* The claim kube's PreBind creates for the pod's extended resources
 * (extendeddynamicresources.go, preFilterExtendedResources and
 * createRequestsAndMappings): generateName "<pod>-extended-resources-", the
 * annotation resource.kubernetes.io/extended-resource-claim: "true", the
 * pod as controlling owner, one ExactCount request per container and
 * resource. */
static json_t *ext_claim_json(const pod_t *pod, const node_req_t *nr)
{
    sbuf_t gen = { 0 };
    sbuf_printf(&gen, "%s-extended-resources-", pod->name);
    json_t *reqs = json_array();
    for (int i = 0; i < nr->xn; i++)
        json_array_append_new(reqs, json_pack("{s:s, s:{s:s, s:s, s:I}}", "name", nr->xr[i].name, "exactly",
                                              "deviceClassName", nr->xr[i].class_name, "allocationMode", "ExactCount",
                                              "count", (json_int_t)nr->xr[i].count));
    json_t *c =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b}]}, s:{s:{s:o}}}", "apiVersion",
                  "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata", "generateName", gen.data, "namespace",
                  pod->ns, "annotations", DRA_EXT_ANNOTATION, "true", "ownerReferences", "apiVersion", "v1", "kind",
                  "Pod", "name", pod->name, "uid", pod->uid, "controller", 1, "spec", "devices", "requests", reqs);
    sbuf_free(&gen);
    return c;
}

/* status.extendedResourceClaimStatus.requestMappings: which request serves
 * which container's resource. */
static json_t *ext_mappings_json(const dra_prep_t *p, const node_req_t *nr)
{
    json_t *m = json_array();
    for (int i = 0; i < nr->xn; i++) {
        const pext_t *e = &p->x[nr->xi[i]];
        json_array_append_new(m, json_pack("{s:s, s:s, s:s}", "containerName", e->container, "resourceName",
                                           e->resource, "requestName", e->r.name));
    }
    return m;
}

/* The hold's extended-resource claim (claims[nareq] of the allocation). */
static void hold_ext(dra_store_t *s, hold_claim_t *hc, const pod_t *pod, const char *node, const dra_prep_t *p,
                     const node_req_t *nr, const dra_alloc_t *a)
{
    int k = p->nareq;
    pclaim_t xpc = { .reqs = nr->xr, .nreqs = nr->xn };
    hc->key = util_strdup(p->xkey);
    hc->ns = util_strdup(pod->ns);
    hc->name = util_strdup("<extended-resources>");
    hc->allocation = allocation_json(s, &xpc, a->claim[k].results, a->claim[k].n, node);
    hc->create = ext_claim_json(pod, nr);
    hc->mappings = ext_mappings_json(p, nr);
    hc->devkeys = util_xcalloc((size_t)a->claim[k].n + 1, sizeof(char *));
    for (int j = 0; j < a->claim[k].n; j++) {
        hc->devkeys[hc->ndev] = util_strdup(((const sdev_t *)a->claim[k].results[j].dev)->key);
        use_add(s, 1, hc->devkeys[hc->ndev++], 1);
    }
    hc->counted = 1;
}

static hold_t *hold_make(dra_store_t *s, const pod_t *pod, const char *node, const dra_prep_t *p, const node_req_t *nr,
                         const dra_alloc_t *a)
{
    hold_t *h = util_xcalloc(1, sizeof(*h));
    h->uid = util_strdup(pod->uid);
    h->pod_name = util_strdup(pod->name);
    h->node = util_strdup(node);
    h->c = util_xcalloc((size_t)p->n + 2, sizeof(*h->c));
    for (int i = 0; i < p->n; i++) {
        hold_claim_t *hc = &h->c[h->n++];
        hc->key = util_strdup(p->c[i].key);
        hc->ns = util_strdup(p->c[i].ns);
        hc->name = util_strdup(p->c[i].name);
    }
    for (int k = 0; k < p->nareq; k++) {
        hold_claim_t *hc = &h->c[p->aidx[k]];
        const pclaim_t *pc = &p->c[p->aidx[k]];
        hc->allocation = allocation_json(s, pc, a->claim[k].results, a->claim[k].n, node);
        hc->devkeys = util_xcalloc((size_t)a->claim[k].n + 1, sizeof(char *));
        for (int j = 0; j < a->claim[k].n; j++) {
            if (a->claim[k].results[j].admin)
                continue;
            hc->devkeys[hc->ndev] = util_strdup(((const sdev_t *)a->claim[k].results[j].dev)->key);
            use_add(s, 1, hc->devkeys[hc->ndev++], 1);
        }
        hc->counted = 1;
        hashmap_put(s->inflight, hc->key, h);
    }
    if (nr->xn)
        hold_ext(s, &h->c[h->n++], pod, node, p, nr, a);
    return h;
}

/* Whether a class serves one of the pod's extended resources (lock held). */
static int ext_served_locked(dra_store_t *s, const dra_pod_t *x)
{
    for (int i = 0; x && s->served && s->listed && i < x->nx; i++)
        if (ext_class_locked(s, x->x[i].resource))
            return 1;
    return 0;
}

int dra_store_reserve(dra_store_t *s, const pod_t *pod, const char *node, const labels_t *labels,
                      const resources_t *alloc, char *err, size_t errlen)
{
    if (!dra_pod(pod)) {
        /* Extended resources no class serves (every GPU pod of a cluster
         * without DRA): no hold, and no write lock taken. */
        lo_rwlock_rdlock(&s->lock, LO_DRA);
        int served = ext_served_locked(s, dra_pod_ext(pod));
        lo_rwlock_unlock(&s->lock, LO_DRA);
        if (!served)
            return 0;
    }
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    index_refresh_locked(s);
    hold_t *old = hashmap_remove(s->holds, pod->uid);
    if (old) {
        hold_uncount(s, old);
        hold_free(old);
    }
    dra_prep_t *p = NULL;
    int rc = -1;
    if (prepare_locked(s, pod, &p, err, errlen) != DRA_PREP_OK)
        goto out;
    if (!p) {
        rc = 0;
        goto out;
    }
    if (!pins_fit(p, node, labels, err, errlen))
        goto out;
    int n = 0;
    dra_candidate_t *cands = candidates(s, NULL, node, labels, &n);
    dra_alloc_t a = { 0 };
    node_req_t nr;
    node_req_make(p, alloc, &nr);
    if (nr.n == 0 && p->n == 0) {
        rc = 0; /* extended resources the node advertises: the device plugin's */
    } else if (nr.n == 0 || dra_allocate(nr.claims, nr.n, cands, n, eligible, NULL, &a, err, errlen) == 0) {
        hashmap_put(s->holds, pod->uid, hold_make(s, pod, node, p, &nr, &a));
        rc = 0;
    }
    node_req_free(&nr);
    dra_alloc_free(&a);
    free(cands);
out:
    lo_rwlock_unlock(&s->lock, LO_DRA);
    dra_prep_free(p);
    return rc;
}

void dra_undo_free(dra_undo_t *u)
{
    while (u) {
        dra_undo_t *next = u->next;
        free(u->ns);
        free(u->name);
        free(u->pod_uid);
        free(u->pod_name);
        free(u);
        u = next;
    }
}

dra_undo_t *dra_store_unreserve(dra_store_t *s, const char *pod_uid)
{
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    hold_t *h = hashmap_remove(s->holds, pod_uid);
    if (h)
        hold_uncount(s, h);
    lo_rwlock_unlock(&s->lock, LO_DRA);
    dra_undo_t *head = NULL;
    for (int i = 0; h && i < h->n; i++) {
        if (!h->c[i].written && !h->c[i].created)
            continue;
        dra_undo_t *u = util_xcalloc(1, sizeof(*u));
        u->ns = util_strdup(h->c[i].ns);
        u->name = util_strdup(h->c[i].name);
        u->pod_uid = util_strdup(pod_uid);
        u->pod_name = util_strdup(h->pod_name);
        u->deallocate = h->c[i].allocation != NULL;
        u->delete_claim = h->c[i].created;
        u->next = head;
        head = u;
    }
    hold_free(h);
    return head;
}

void dra_write_free(dra_write_t *w)
{
    while (w) {
        dra_write_t *next = w->next;
        free(w->ns);
        free(w->name);
        json_decref(w->claim);
        json_decref(w->allocation);
        json_decref(w->create);
        json_decref(w->mappings);
        free(w);
        w = next;
    }
}

int dra_store_writes(dra_store_t *s, const pod_t *pod, dra_write_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!dra_pod(pod) && !dra_pod_ext(pod))
        return 0;
    lo_rwlock_rdlock(&s->lock, LO_DRA);
    hold_t *h = hashmap_get(s->holds, pod->uid);
    dra_write_t **tail = out;
    for (int i = 0; h && i < h->n; i++) {
        claim_t *c = hashmap_get(s->claims, h->c[i].key);
        dra_write_t *w = util_xcalloc(1, sizeof(*w));
        w->ns = util_strdup(h->c[i].ns);
        w->name = util_strdup(h->c[i].name);
        w->claim = c ? json_deep_copy(c->obj) : NULL;
        w->allocation = h->c[i].allocation ? json_deep_copy(h->c[i].allocation) : NULL;
        if (h->c[i].create && !h->c[i].created)
            w->create = json_deep_copy(h->c[i].create);
        if (h->c[i].mappings)
            w->mappings = json_deep_copy(h->c[i].mappings);
        *tail = w;
        tail = &w->next;
    }
    lo_rwlock_unlock(&s->lock, LO_DRA);
    if (!h && !dra_pod(pod))
        return 0; /* extended resources only, none served from DRA here */
    if (!h) {
        util_errf(err, errlen, "the pod's DRA reservation is gone");
        return -1;
    }
    return 0;
}

int dra_store_ext_created(dra_store_t *s, const char *pod_uid, const char *name)
{
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    hold_t *h = hashmap_get(s->holds, pod_uid);
    int found = 0;
    for (int i = 0; h && i < h->n && !found; i++) {
        hold_claim_t *hc = &h->c[i];
        if (!hc->create || hc->created)
            continue;
        found = 1;
        hc->created = 1;
        free(hc->name);
        hc->name = util_strdup(name);
        free(hc->key);
        sbuf_t b = { 0 };
        sbuf_printf(&b, "%s/%s", hc->ns, name);
        hc->key = b.data;
        /* From now the claim's watch event ends the hold's count. */
        hashmap_put(s->inflight, hc->key, h);
    }
    lo_rwlock_unlock(&s->lock, LO_DRA);
    return found ? 0 : -1;
}

void dra_store_bound(dra_store_t *s, const char *pod_uid)
{
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    hold_t *h = hashmap_get(s->holds, pod_uid);
    if (h) {
        h->bound = 1;
        hold_done(s, h);
    }
    lo_rwlock_unlock(&s->lock, LO_DRA);
}

void dra_store_written(dra_store_t *s, const char *pod_uid, const char *ns, const char *name)
{
    lo_rwlock_wrlock(&s->lock, LO_DRA);
    hold_t *h = hashmap_get(s->holds, pod_uid);
    for (int i = 0; h && i < h->n; i++)
        if (!strcmp(h->c[i].ns, ns) && !strcmp(h->c[i].name, name))
            h->c[i].written = 1;
    lo_rwlock_unlock(&s->lock, LO_DRA);
}

/* ---- counts ------------------------------------------------------------------- */

/* Device d's attribute attr as text into buf, or NULL. */
static const char *attr_text(const dra_device_t *d, const char *attr, char *buf, size_t len)
{
    for (int i = 0; i < d->nattrs; i++) {
        const dra_attr_t *a = &d->attrs[i];
        if (strcmp(a->name, attr) != 0)
            continue;
        if (a->kind == DRA_ATTR_INT)
            snprintf(buf, len, "%lld", (long long)a->i);
        else if (a->kind == DRA_ATTR_BOOL)
            snprintf(buf, len, "%s", a->b ? "true" : "false");
        else
            snprintf(buf, len, "%s", a->s ? a->s : "");
        return buf;
    }
    return NULL;
}

void dra_store_node_attr(dra_store_t *s, const char *attr, void (*fn)(void *ud, const char *node, const char *value),
                         void *ud)
{
    index_fresh(s);
    lo_rwlock_rdlock(&s->lock, LO_DRA);
    const char *node;
    void *v;
    for (size_t it = 0; hashmap_next(s->by_node, &it, &node, &v);) {
        const devlist_t *l = v;
        char first[256] = "", buf[256];
        int seen = 0, agree = 1;
        for (int i = 0; i < l->n && agree; i++) {
            const char *t = attr_text(&l->d[i]->d, attr, buf, sizeof(buf));
            if (!t)
                continue;
            if (!seen++)
                snprintf(first, sizeof(first), "%s", t);
            else
                agree = strcmp(first, t) == 0;
        }
        if (seen && agree && first[0])
            fn(ud, node, first);
    }
    lo_rwlock_unlock(&s->lock, LO_DRA);
}

void dra_store_node_counts(dra_store_t *s, const char *node, const labels_t *labels, int *devices, int *used)
{
    index_fresh(s);
    lo_rwlock_rdlock(&s->lock, LO_DRA);
    int n = 0;
    dra_candidate_t *c = candidates(s, NULL, node, labels, &n);
    int u = 0;
    for (int i = 0; i < n; i++)
        u += c[i].in_use;
    free(c);
    *devices = n;
    *used = u;
    lo_rwlock_unlock(&s->lock, LO_DRA);
}

/* ---- what queues count ----------------------------------------------------------- */

void dra_qmap_free(dra_qmap_t *m, int n)
{
    for (int i = 0; i < n; i++) {
        free(m[i].cls);
        free(m[i].cap);
    }
    free(m);
}

/* One "CLASS=gpu[:CAPACITY/QUANTITY]" into m: 0, or -1 with err. */
static int qmap_one(char *tok, dra_qmap_t *m, char *err, size_t errlen)
{
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok)
        return -1;
    *eq = 0;
    char *res = eq + 1, *colon = strchr(res, ':');
    if (colon)
        *colon = 0;
    /* A Queue's gpu is nvidia.com/gpu: either name says it. */
    if (strcmp(res, "gpu") != 0 && strcmp(res, "nvidia.com/gpu") != 0)
        return -1;
    m->cls = util_strdup(tok);
    if (!colon)
        return 0;
    char *slash = strrchr(colon + 1, '/');
    char qerr[128];
    if (!slash || slash == colon + 1 || quantity_parse(slash + 1, 3, &m->unit, qerr, sizeof(qerr)) < 0 || m->unit <= 0)
        return util_errf(err, errlen, "--dra-queue-resources: %s: \"%s\" is not CAPACITY/QUANTITY (memory/80Gi)", tok,
                         colon + 1);
    *slash = 0;
    m->cap = util_strdup(colon + 1);
    return 0;
}

int dra_qmap_parse(const char *spec, dra_qmap_t **out, int *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!spec || !*spec)
        return 0;
    char *copy = util_strdup(spec), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        char shown[256];
        snprintf(shown, sizeof(shown), "%s", tok);
        *out = util_xrealloc(*out, (size_t)(*n + 1) * sizeof(**out));
        memset(&(*out)[*n], 0, sizeof(**out));
        err[0] = 0;
        rc = qmap_one(tok, &(*out)[(*n)++], err, errlen);
        if (rc < 0 && !err[0])
            util_errf(err, errlen,
                      "--dra-queue-resources: \"%s\" is not CLASS=gpu or CLASS=gpu:CAPACITY/QUANTITY (devices of a "
                      "class count as GPUs, one each or by a capacity)",
                      shown);
    }
    free(copy);
    if (rc < 0) {
        dra_qmap_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

static const dra_qmap_t *qmap_of(const char *cls, const dra_qmap_t *m, int n)
{
    for (int i = 0; cls && i < n; i++)
        if (!strcmp(m[i].cls, cls))
            return &m[i];
    return NULL;
}

/* The class of request name ("gpus" or "gpus/alt") in a claim's spec. */
static const char *class_of_request(json_t *reqs, const char *name)
{
    size_t i, j;
    json_t *rq, *sub;
    json_array_foreach (reqs, i, rq) {
        const char *rn = str_of(rq, "name");
        if (!rn)
            continue;
        if (!strcmp(rn, name))
            return str_of(json_object_get(rq, "exactly"), "deviceClassName");
        size_t l = strlen(rn);
        if (strncmp(name, rn, l) != 0 || name[l] != '/')
            continue;
        json_array_foreach (json_object_get(rq, "firstAvailable"), j, sub) {
            const char *sn = str_of(sub, "name");
            if (sn && !strcmp(sn, name + l + 1))
                return str_of(sub, "deviceClassName");
        }
    }
    return NULL;
}

/* A device's capacity of name m->cap (qualified, or in its driver's
 * domain), or -1 when it has none. */
static int64_t device_cap(const sdev_t *d, const char *cap)
{
    for (int i = 0; i < d->d.ncaps; i++) {
        const char *n = d->d.caps[i].name, *slash = strchr(n, '/');
        if (!strcmp(n, cap) || (!strchr(cap, '/') && slash && !strcmp(slash + 1, cap)))
            return d->d.caps[i].milli;
    }
    return -1;
}

/* The most of capacity cap any stored device has (-1: none has it). */
static int64_t max_cap(dra_store_t *s, const char *cap)
{
    int64_t best = -1;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(s->devs, &it, &k, &v);) {
        int64_t c = device_cap(v, cap);
        if (c > best)
            best = c;
    }
    return best;
}

/* GPUs one device of map m counts as: 1, or its capacity over m's unit (a
 * device not known, or without the capacity: the most any device has,
 * else 1). */
static double per_device(dra_store_t *s, const dra_qmap_t *m, const sdev_t *d)
{
    if (!m->cap)
        return 1;
    int64_t c = d ? device_cap(d, m->cap) : -1;
    if (c < 0)
        c = max_cap(s, m->cap);
    return c < 0 ? 1 : (double)c / (double)m->unit;
}

/* What results (status.allocation.devices.results) count under maps. */
static double count_results(dra_store_t *s, json_t *reqs, json_t *results, const dra_qmap_t *maps, int n)
{
    size_t i;
    json_t *x;
    double sum = 0;
    json_array_foreach (results, i, x) {
        const char *rq = str_of(x, "request");
        const dra_qmap_t *m = rq ? qmap_of(class_of_request(reqs, rq), maps, n) : NULL;
        if (!m)
            continue;
        char *key = dev_key(str_of(x, "driver") ? str_of(x, "driver") : "", str_of(x, "pool") ? str_of(x, "pool") : "",
                            str_of(x, "device") ? str_of(x, "device") : "");
        sum += per_device(s, m, hashmap_get(s->devs, key));
        free(key);
    }
    return sum;
}

/* What an unallocated request asks (All: nothing known before allocation;
 * by a capacity: the most any device has, so a queue is never passed). */
static double asked(dra_store_t *s, json_t *o, const dra_qmap_t *maps, int n)
{
    const dra_qmap_t *m = qmap_of(str_of(o, "deviceClassName"), maps, n);
    if (!m)
        return 0;
    const char *mode = str_of(o, "allocationMode");
    if (mode && !strcmp(mode, "All"))
        return 0;
    json_t *c = json_object_get(o, "count");
    double count = json_is_integer(c) && json_integer_value(c) > 0 ? (double)json_integer_value(c) : 1;
    return count * per_device(s, m, NULL);
}

/* The allocation a hold of pod_uid makes for claim key, or NULL. */
static json_t *held_allocation(dra_store_t *s, const char *pod_uid, const char *key)
{
    hold_t *h = hashmap_get(s->holds, pod_uid);
    for (int i = 0; h && i < h->n; i++)
        if (!strcmp(h->c[i].key, key))
            return h->c[i].allocation;
    return NULL;
}

static double claim_count_mapped(dra_store_t *s, const claim_t *c, const char *pod_uid, const dra_qmap_t *maps, int n)
{
    json_t *reqs = json_object_get(json_object_get(json_object_get(c->obj, "spec"), "devices"), "requests"), *x;
    json_t *alloc = c->allocated ? json_object_get(json_object_get(c->obj, "status"), "allocation")
                                 : held_allocation(s, pod_uid, c->key);
    if (alloc)
        return count_results(s, reqs, json_object_get(json_object_get(alloc, "devices"), "results"), maps, n);
    size_t i;
    double sum = 0;
    json_array_foreach (reqs, i, x) {
        json_t *ex = json_object_get(x, "exactly");
        if (json_is_object(ex))
            sum += asked(s, ex, maps, n);
        else
            sum += asked(s, json_array_get(json_object_get(x, "firstAvailable"), 0), maps, n);
    }
    return sum;
}

double dra_store_queue_count(dra_store_t *s, const pod_t *pod, const dra_qmap_t *maps, int n)
{
    const dra_pod_t *d = dra_pod(pod);
    if (!d || n == 0)
        return 0;
    double sum = 0;
    lo_rwlock_rdlock(&s->lock, LO_DRA);
    for (int i = 0; i < d->n; i++) {
        if (!d->c[i].claim)
            continue;
        char key[512];
        snprintf(key, sizeof(key), "%s/%s", pod->ns, d->c[i].claim);
        claim_t *c = hashmap_get(s->claims, key);
        if (c)
            sum += claim_count_mapped(s, c, pod->uid, maps, n);
    }
    lo_rwlock_unlock(&s->lock, LO_DRA);
    return sum;
}
