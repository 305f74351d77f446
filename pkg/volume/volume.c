/* volume.c -- the storage store and kube-scheduler v1.20's volume binder
 * logic on it (GetPodVolumes, FindPodVolumes, AssumePodVolumes,
 * checkBindings). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

#include "util/hashmap.h"

#define LABEL_HOSTNAME "kubernetes.io/hostname"
#include "util/util.h"
#include "volume/volume.h"
#include "util/lockorder.h"

/* An assumed claimRef on a PV, or an assumed selected-node on a claim: the
 * choice a reserved pod made, which every other pod must see. */
typedef struct assumed {
    char *pod_uid;
    char *claim_ns, *claim_name, *claim_uid; /* PV: the claim it is given to */
    char *node;                              /* PVC: the selected node */
} assumed_t;

struct volume_store {
    pthread_rwlock_t mu;
    hashmap_t *pvs;         /* name -> pv_t */
    hashmap_t *pvcs;        /* ns/name -> pvc_t */
    hashmap_t *classes;     /* name -> storage_class_t */
    hashmap_t *csinodes;    /* node name -> csinode_t */
    hashmap_t *assumed_pv;  /* PV name -> assumed_t */
    hashmap_t *assumed_pvc; /* claim key -> assumed_t */
    hashmap_t *plans;       /* pod uid -> vb_plan_t */
};

static void assumed_free(assumed_t *a)
{
    if (!a)
        return;
    free(a->pod_uid);
    free(a->claim_ns);
    free(a->claim_name);
    free(a->claim_uid);
    free(a->node);
    free(a);
}

volume_store_t *volume_store_new(void)
{
    volume_store_t *vs = util_xcalloc(1, sizeof(*vs));
    pthread_rwlock_init(&vs->mu, NULL);
    vs->pvs = hashmap_new(64);
    vs->pvcs = hashmap_new(64);
    vs->classes = hashmap_new(8);
    vs->csinodes = hashmap_new(64);
    vs->assumed_pv = hashmap_new(16);
    vs->assumed_pvc = hashmap_new(16);
    vs->plans = hashmap_new(16);
    return vs;
}

void volume_store_free(volume_store_t *vs)
{
    const char *k;
    void *v;
    if (!vs)
        return;
    for (size_t it = 0; hashmap_next(vs->pvs, &it, &k, &v);)
        pv_unref(v);
    for (size_t it = 0; hashmap_next(vs->pvcs, &it, &k, &v);)
        pvc_unref(v);
    for (size_t it = 0; hashmap_next(vs->classes, &it, &k, &v);)
        storage_class_unref(v);
    for (size_t it = 0; hashmap_next(vs->csinodes, &it, &k, &v);)
        csinode_unref(v);
    for (size_t it = 0; hashmap_next(vs->assumed_pv, &it, &k, &v);)
        assumed_free(v);
    for (size_t it = 0; hashmap_next(vs->assumed_pvc, &it, &k, &v);)
        assumed_free(v);
    for (size_t it = 0; hashmap_next(vs->plans, &it, &k, &v);)
        volume_plan_free(v);
    hashmap_free(vs->pvs);
    hashmap_free(vs->pvcs);
    hashmap_free(vs->classes);
    hashmap_free(vs->csinodes);
    hashmap_free(vs->assumed_pv);
    hashmap_free(vs->assumed_pvc);
    hashmap_free(vs->plans);
    pthread_rwlock_destroy(&vs->mu);
    free(vs);
}

void volume_store_rdlock(volume_store_t *vs)
{
    lo_rwlock_rdlock(&vs->mu, LO_VOLUME);
}
void volume_store_unlock(volume_store_t *vs)
{
    lo_rwlock_unlock(&vs->mu, LO_VOLUME);
}
static void wrlock(volume_store_t *vs)
{
    lo_rwlock_wrlock(&vs->mu, LO_VOLUME);
}

/* ---- informer side --------------------------------------------------------- */

void volume_store_put_pv(volume_store_t *vs, pv_t *pv)
{
    wrlock(vs);
    pv_t *old = hashmap_put(vs->pvs, pv->name, pv_ref(pv));
    volume_store_unlock(vs);
    pv_unref(old);
}

void volume_store_del_pv(volume_store_t *vs, const char *name)
{
    wrlock(vs);
    pv_t *old = hashmap_remove(vs->pvs, name);
    volume_store_unlock(vs);
    pv_unref(old);
}

void volume_store_put_pvc(volume_store_t *vs, pvc_t *pvc)
{
    wrlock(vs);
    pvc_t *old = hashmap_put(vs->pvcs, pvc->key, pvc_ref(pvc));
    volume_store_unlock(vs);
    pvc_unref(old);
}

void volume_store_del_pvc(volume_store_t *vs, const char *key)
{
    wrlock(vs);
    pvc_t *old = hashmap_remove(vs->pvcs, key);
    volume_store_unlock(vs);
    pvc_unref(old);
}

void volume_store_put_class(volume_store_t *vs, storage_class_t *sc)
{
    wrlock(vs);
    storage_class_t *old = hashmap_put(vs->classes, sc->name, storage_class_ref(sc));
    volume_store_unlock(vs);
    storage_class_unref(old);
}

void volume_store_del_class(volume_store_t *vs, const char *name)
{
    wrlock(vs);
    storage_class_t *old = hashmap_remove(vs->classes, name);
    volume_store_unlock(vs);
    storage_class_unref(old);
}

void volume_store_put_csinode(volume_store_t *vs, csinode_t *cn)
{
    wrlock(vs);
    csinode_t *old = hashmap_put(vs->csinodes, cn->name, csinode_ref(cn));
    volume_store_unlock(vs);
    csinode_unref(old);
}

void volume_store_del_csinode(volume_store_t *vs, const char *name)
{
    wrlock(vs);
    csinode_t *old = hashmap_remove(vs->csinodes, name);
    volume_store_unlock(vs);
    csinode_unref(old);
}

/* ---- lookups ---------------------------------------------------------------- */

const pvc_t *volume_pvc_locked(volume_store_t *vs, const char *ns, const char *name)
{
    char key[512];
    if (!vs)
        return NULL;
    lockorder_assert_held(LO_VOLUME);
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    return hashmap_get(vs->pvcs, key);
}

const pv_t *volume_pv_locked(volume_store_t *vs, const char *name)
{
    if (vs) /* no store: nothing known, nothing locked */
        lockorder_assert_held(LO_VOLUME);
    return vs ? hashmap_get(vs->pvs, name) : NULL;
}

const storage_class_t *volume_class_locked(volume_store_t *vs, const char *name)
{
    if (vs) /* no store: nothing known, nothing locked */
        lockorder_assert_held(LO_VOLUME);
    return vs ? hashmap_get(vs->classes, name) : NULL;
}

const csinode_t *volume_csinode_locked(volume_store_t *vs, const char *node)
{
    if (vs) /* no store: nothing known, nothing locked */
        lockorder_assert_held(LO_VOLUME);
    return vs ? hashmap_get(vs->csinodes, node) : NULL;
}

/* ---- GetPodVolumes ------------------------------------------------------------ */

void volume_claims_free(vb_claims_t *c)
{
    for (int i = 0; i < c->nbound; i++)
        pvc_unref(c->bound[i]);
    for (int i = 0; i < c->nto_bind; i++)
        pvc_unref(c->to_bind[i]);
    free(c->bound);
    free(c->to_bind);
    memset(c, 0, sizeof(*c));
}

static vb_rc_t claims_get_locked(volume_store_t *vs, const pod_t *pod, vb_claims_t *out, char *msg, size_t msglen)
{
    int npvc = 0, immediate = 0;
    memset(out, 0, sizeof(*out));
    /* podHasPVCs: every claim must exist and not be going away. */
    for (int i = 0; i < pod->nvolumes; i++) {
        const pod_volume_t *v = &pod->volumes[i];
        if (v->kind != PVOL_PVC)
            continue;
        npvc++;
        const pvc_t *c = volume_pvc_locked(vs, pod->ns, v->id);
        if (!c) {
            snprintf(msg, msglen, "persistentvolumeclaim \"%s\" not found", v->id);
            return VB_UNSCHEDULABLE;
        }
        if (c->deleting) {
            snprintf(msg, msglen, "persistentvolumeclaim \"%s\" is being deleted", v->id);
            return VB_UNSCHEDULABLE;
        }
    }
    if (npvc == 0) {
        out->skip = 1;
        return VB_OK;
    }
    out->bound = util_xcalloc((size_t)npvc, sizeof(pvc_t *));
    out->to_bind = util_xcalloc((size_t)npvc, sizeof(pvc_t *));
    for (int i = 0; i < pod->nvolumes; i++) {
        const pod_volume_t *v = &pod->volumes[i];
        if (v->kind != PVOL_PVC)
            continue;
        pvc_t *c = (pvc_t *)volume_pvc_locked(vs, pod->ns, v->id);
        if (pvc_is_fully_bound(c)) {
            out->bound[out->nbound++] = pvc_ref(c);
            continue;
        }
        /* IsDelayBindingMode: no class, or an unknown one, is Immediate. */
        int delay = 0;
        const storage_class_t *sc = c->class_name[0] ? volume_class_locked(vs, c->class_name) : NULL;
        if (sc && sc->mode == SC_BIND_UNSET) {
            snprintf(msg, msglen, "VolumeBindingMode not set for StorageClass \"%s\"", sc->name);
            volume_claims_free(out);
            return VB_ERROR;
        }
        delay = sc && sc->mode == SC_BIND_WAIT;
        if (delay && c->volume_name[0] == '\0') {
            /* Sorted by request, smallest first (byPVCSize), stable. */
            int j = out->nto_bind++;
            while (j > 0 && out->to_bind[j - 1]->request > c->request) {
                out->to_bind[j] = out->to_bind[j - 1];
                j--;
            }
            out->to_bind[j] = pvc_ref(c);
        } else {
            immediate++;
        }
    }
    if (immediate > 0) {
        snprintf(msg, msglen, "%s", VB_REASON_UNBOUND_IMMEDIATE);
        volume_claims_free(out);
        return VB_UNSCHEDULABLE;
    }
    return VB_OK;
}

vb_rc_t volume_claims_get(volume_store_t *vs, const pod_t *pod, vb_claims_t *out, char *msg, size_t msglen)
{
    if (vs)
        volume_store_rdlock(vs);
    vb_rc_t rc = claims_get_locked(vs, pod, out, msg, msglen);
    if (vs)
        volume_store_unlock(vs);
    return rc;
}

/* ---- FindPodVolumes ----------------------------------------------------------- */

/* The claimRef a PV has as the binder sees it: an assumed one wins. */
typedef struct claim_ref {
    int set;
    const char *ns, *name, *uid;
} claim_ref_t;

static claim_ref_t effective_ref(volume_store_t *vs, const pv_t *pv)
{
    claim_ref_t r = { 0, "", "", "" };
    const assumed_t *a = hashmap_get(vs->assumed_pv, pv->name);
    if (a) {
        r.set = 1;
        r.ns = a->claim_ns;
        r.name = a->claim_name;
        r.uid = a->claim_uid;
    } else if (pv->has_claim_ref) {
        r.set = 1;
        r.ns = pv->claim_ns;
        r.name = pv->claim_name;
        r.uid = pv->claim_uid;
    }
    return r;
}

/* IsVolumeBoundToClaim: same name and namespace, and uid when the ref has one. */
static int ref_is_claim(const claim_ref_t *r, const pvc_t *c)
{
    return r->set && strcmp(r->name, c->name) == 0 && strcmp(r->ns, c->ns) == 0 &&
           (r->uid[0] == '\0' || strcmp(r->uid, c->uid) == 0);
}

/* The selected-node of a claim as the binder sees it: an assumed one wins. */
static const char *effective_selected(volume_store_t *vs, const pvc_t *c)
{
    const assumed_t *a = hashmap_get(vs->assumed_pvc, c->key);
    if (a)
        return a->node;
    return c->has_selected_node ? c->selected_node : NULL;
}

static int chosen_has(const pv_t *const *chosen, int n, const pv_t *pv)
{
    for (int i = 0; i < n; i++)
        if (chosen[i] == pv)
            return 1;
    return 0;
}

/* FindMatchingVolume on the scheduler path (node set, delayed binding):
 * the PV pre-bound to the claim if its affinity fits, else the smallest
 * Available PV of the class that fits size, mode, selector, node affinity
 * and access modes. */
static const pv_t *find_matching(volume_store_t *vs, const pvc_t *c, const node_t *node, const pv_t *const *chosen,
                                 int nchosen)
{
    const pv_t *best = NULL;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(vs->pvs, &it, &k, &v);) {
        const pv_t *pv = v;
        if (strcmp(pv->class_name, c->class_name) != 0 || chosen_has(chosen, nchosen, pv))
            continue;
        claim_ref_t ref = effective_ref(vs, pv);
        int mine = ref_is_claim(&ref, c);
        if (ref.set && !mine)
            continue;
        if (pv->capacity < c->request || pv->block != c->block || pv->deleting)
            continue;
        int fits_node = pv_matches_node(pv, &node->labels, node->name);
        if (mine)
            return fits_node ? pv : NULL;
        if (!pv->available)
            continue;
        if (c->has_selector && !selector_matches(&c->selector, &pv->labels, NULL))
            continue;
        if (!fits_node)
            continue;
        if (c->access_modes & ~pv->access_modes)
            continue;
        if (!best || best->capacity > pv->capacity)
            best = pv;
    }
    return best;
}

/* The match for one node; when plan is set, also what to write. */
typedef struct match {
    const pv_t **pv; /* static bindings: PV i for claim[i] */
    const pvc_t **pv_claim;
    int npv;
    const pvc_t **prov; /* claims to provision */
    int nprov;
} match_t;

static void match_free(match_t *m)
{
    free(m->pv);
    free(m->pv_claim);
    free(m->prov);
}

static int find_locked(volume_store_t *vs, const vb_claims_t *c, const node_t *node, unsigned *reasons, match_t *m,
                       char *err, size_t errlen)
{
    *reasons = 0;
    memset(m, 0, sizeof(*m));
    if (c->skip)
        return 0;
    /* checkBoundClaims: the first missing PV or affinity miss decides. */
    for (int i = 0; i < c->nbound; i++) {
        const pv_t *pv = volume_pv_locked(vs, c->bound[i]->volume_name);
        if (!pv) {
            *reasons |= VB_PV_NOT_EXIST;
            break;
        }
        if (!pv_matches_node(pv, &node->labels, node->name)) {
            *reasons |= VB_NODE_CONFLICT;
            break;
        }
    }
    if (c->nto_bind == 0)
        return 0;
    size_t n = (size_t)c->nto_bind;
    m->pv = util_xcalloc(n, sizeof(*m->pv));
    m->pv_claim = util_xcalloc(n, sizeof(*m->pv_claim));
    m->prov = util_xcalloc(n, sizeof(*m->prov));
    const pvc_t **to_match = util_xcalloc(n, sizeof(*to_match));
    int nmatch = 0, unbound_ok = 1;
    for (int i = 0; i < c->nto_bind; i++) {
        const char *sel = effective_selected(vs, c->to_bind[i]);
        if (sel) {
            if (strcmp(sel, node->name) != 0) { /* fast path: provisioning elsewhere */
                *reasons |= VB_BIND_CONFLICT;
                free(to_match);
                return 0;
            }
            m->prov[m->nprov++] = c->to_bind[i];
        } else {
            to_match[nmatch++] = c->to_bind[i];
        }
    }
    for (int i = 0; i < nmatch; i++) {
        const pv_t *pv = find_matching(vs, to_match[i], node, m->pv, m->npv);
        if (!pv) {
            m->prov[m->nprov++] = to_match[i];
            unbound_ok = 0;
            continue;
        }
        m->pv[m->npv] = pv;
        m->pv_claim[m->npv++] = to_match[i];
    }
    free(to_match);
    /* checkVolumeProvisions: its answer replaces the matching's. */
    if (m->nprov > 0) {
        unbound_ok = 1;
        for (int i = 0; i < m->nprov; i++) {
            const pvc_t *cl = m->prov[i];
            if (!cl->class_name[0])
                return util_errf(err, errlen, "no class for claim \"%s\"", cl->key);
            const storage_class_t *sc = volume_class_locked(vs, cl->class_name);
            if (!sc)
                return util_errf(err, errlen, "failed to find storage class \"%s\"", cl->class_name);
            if (!sc->provisioner[0] || strcmp(sc->provisioner, NO_PROVISIONER) == 0 ||
                !storage_class_allows(sc, &node->labels)) {
                unbound_ok = 0;
                break;
            }
        }
    }
    if (!unbound_ok)
        *reasons |= VB_BIND_CONFLICT;
    return 0;
}

int volume_find_locked(volume_store_t *vs, const vb_claims_t *c, const node_t *node, unsigned *reasons, char *err,
                       size_t errlen)
{
    if (vs)
        lockorder_assert_held(LO_VOLUME);
    match_t m;
    int rc = find_locked(vs, c, node, reasons, &m, err, errlen);
    match_free(&m);
    return rc;
}

/* ---- the prepared view (PreFilter once, Filter per node without the lock) ---- */

void volume_prepared_free(vb_prepared_t *p)
{
    for (int i = 0; i < p->claims.nbound; i++)
        pv_unref(p->bound_pv ? p->bound_pv[i] : NULL);
    for (int i = 0; i < p->claims.nto_bind; i++) {
        free(p->selected ? p->selected[i] : NULL);
        storage_class_unref(p->cls ? p->cls[i] : NULL);
        for (int k = 0; p->cand && k < p->ncand[i]; k++)
            pv_unref(p->cand[i][k]);
        free(p->cand ? p->cand[i] : NULL);
        free(p->host ? p->host[i] : NULL);
    }
    free(p->host);
    free(p->bound_pv);
    free(p->selected);
    free(p->cls);
    free(p->cand);
    free(p->ncand);
    free(p->exclusive);
    volume_claims_free(&p->claims);
    memset(p, 0, sizeof(*p));
}

static int by_capacity(const void *a, const void *b)
{
    const pv_t *x = *(pv_t *const *)a, *y = *(pv_t *const *)b;
    return x->capacity < y->capacity ? -1 : x->capacity > y->capacity ? 1 : strcmp(x->name, y->name);
}

/* FindMatchingVolume's node-independent part for one claim. */
static void prepare_candidates(volume_store_t *vs, const pvc_t *c, vb_prepared_t *p, int i)
{
    const char *k;
    void *v;
    int cap = 0;
    for (size_t it = 0; hashmap_next(vs->pvs, &it, &k, &v);) {
        pv_t *pv = v;
        if (strcmp(pv->class_name, c->class_name) != 0)
            continue;
        claim_ref_t ref = effective_ref(vs, pv);
        int mine = ref_is_claim(&ref, c);
        if (ref.set && !mine)
            continue;
        if (pv->capacity < c->request || pv->block != c->block || pv->deleting)
            continue;
        if (mine) {
            /* Pre-bound to this claim: it decides alone. */
            for (int n = 0; n < p->ncand[i]; n++)
                pv_unref(p->cand[i][n]);
            p->ncand[i] = 0;
            p->exclusive[i] = 1;
        } else {
            if (p->exclusive[i] || !pv->available)
                continue;
            if (c->has_selector && !selector_matches(&c->selector, &pv->labels, NULL))
                continue;
            if (c->access_modes & ~pv->access_modes)
                continue;
        }
        if (p->ncand[i] == cap) {
            cap = cap ? 2 * cap : 8;
            p->cand[i] = util_xrealloc(p->cand[i], sizeof(pv_t *) * (size_t)cap);
        }
        p->cand[i][p->ncand[i]++] = pv_ref(pv);
        if (mine)
            break;
    }
    if (p->ncand[i] > 1)
        qsort(p->cand[i], (size_t)p->ncand[i], sizeof(pv_t *), by_capacity);
    /* Local PVs name one node: a string compare per node instead of a
     * selector match (Filter runs this for thousands of nodes). */
    p->host[i] = util_xcalloc((size_t)p->ncand[i] + 1, sizeof(char *));
    for (int n = 0; n < p->ncand[i]; n++) {
        const pv_t *pv = p->cand[i][n];
        const sel_req_t *r = pv->naffinity == 1 && pv->affinity[0].n == 1 ? &pv->affinity[0].reqs[0] : NULL;
        if (r && !r->on_field && r->op == SEL_IN && r->nvalues == 1 && strcmp(r->key, LABEL_HOSTNAME) == 0)
            p->host[i][n] = r->values[0];
    }
}

vb_rc_t volume_prepare(volume_store_t *vs, const pod_t *pod, vb_prepared_t *out, char *msg, size_t msglen)
{
    memset(out, 0, sizeof(*out));
    if (vs)
        volume_store_rdlock(vs);
    vb_rc_t rc = claims_get_locked(vs, pod, &out->claims, msg, msglen);
    if (rc == VB_OK && !out->claims.skip) {
        int nb = out->claims.nbound, nt = out->claims.nto_bind;
        out->bound_pv = util_xcalloc((size_t)nb + 1, sizeof(pv_t *));
        for (int i = 0; i < nb; i++)
            out->bound_pv[i] = pv_ref((pv_t *)volume_pv_locked(vs, out->claims.bound[i]->volume_name));
        out->selected = util_xcalloc((size_t)nt + 1, sizeof(char *));
        out->cls = util_xcalloc((size_t)nt + 1, sizeof(storage_class_t *));
        out->cand = util_xcalloc((size_t)nt + 1, sizeof(pv_t **));
        out->ncand = util_xcalloc((size_t)nt + 1, sizeof(int));
        out->host = util_xcalloc((size_t)nt + 1, sizeof(char **));
        out->exclusive = util_xcalloc((size_t)nt + 1, sizeof(int));
        for (int i = 0; i < nt; i++) {
            const pvc_t *c = out->claims.to_bind[i];
            const char *sel = effective_selected(vs, c);
            out->selected[i] = sel ? util_strdup(sel) : NULL;
            if (c->class_name[0])
                out->cls[i] = storage_class_ref((storage_class_t *)volume_class_locked(vs, c->class_name));
            if (!sel)
                prepare_candidates(vs, c, out, i);
        }
    }
    if (vs)
        volume_store_unlock(vs);
    return rc;
}

int volume_prepared_find(const vb_prepared_t *p, const node_t *node, unsigned *reasons, char *err, size_t errlen)
{
    const vb_claims_t *c = &p->claims;
    *reasons = 0;
    if (c->skip)
        return 0;
    for (int i = 0; i < c->nbound; i++) {
        if (!p->bound_pv[i]) {
            *reasons |= VB_PV_NOT_EXIST;
            break;
        }
        if (!pv_matches_node(p->bound_pv[i], &node->labels, node->name)) {
            *reasons |= VB_NODE_CONFLICT;
            break;
        }
    }
    if (c->nto_bind == 0)
        return 0;
    for (int i = 0; i < c->nto_bind; i++) {
        if (p->selected[i] && strcmp(p->selected[i], node->name) != 0) {
            *reasons |= VB_BIND_CONFLICT;
            return 0;
        }
    }
    const pv_t *chosen[64];
    const char *hostname = labels_get(&node->labels, LABEL_HOSTNAME);
    int nchosen = 0, unbound_ok = 1, nprov = 0;
    int *prov = util_xcalloc((size_t)c->nto_bind, sizeof(int));
    for (int i = 0; i < c->nto_bind; i++) {
        const pv_t *pick = NULL;
        if (p->selected[i]) {
            prov[nprov++] = i;
            continue;
        }
        for (int k = 0; k < p->ncand[i] && !pick; k++) {
            const pv_t *pv = p->cand[i][k];
            const char *host = p->host[i][k];
            int fits = host ? hostname && strcmp(host, hostname) == 0 : pv_matches_node(pv, &node->labels, node->name);
            if (fits && chosen_has(chosen, nchosen, pv))
                continue;
            if (fits)
                pick = pv;
            else if (p->exclusive[i])
                break;
        }
        if (!pick || nchosen >= (int)(sizeof(chosen) / sizeof(chosen[0]))) {
            prov[nprov++] = i;
            unbound_ok = 0;
        } else {
            chosen[nchosen++] = pick;
        }
    }
    int rc = 0;
    if (nprov > 0) {
        unbound_ok = 1;
        for (int n = 0; n < nprov; n++) {
            const pvc_t *cl = c->to_bind[prov[n]];
            const storage_class_t *sc = p->cls[prov[n]];
            if (!cl->class_name[0]) {
                rc = util_errf(err, errlen, "no class for claim \"%s\"", cl->key);
                break;
            }
            if (!sc) {
                rc = util_errf(err, errlen, "failed to find storage class \"%s\"", cl->class_name);
                break;
            }
            if (!sc->provisioner[0] || strcmp(sc->provisioner, NO_PROVISIONER) == 0 ||
                !storage_class_allows(sc, &node->labels)) {
                unbound_ok = 0;
                break;
            }
        }
    }
    free(prov);
    if (rc == 0 && !unbound_ok)
        *reasons |= VB_BIND_CONFLICT;
    return rc;
}

/* ---- plans: Reserve, Unreserve ---------------------------------------------- */

static void write_free(vb_write_t *w)
{
    free(w->name);
    free(w->ns);
    free(w->claim_name);
    free(w->claim_uid);
    free(w->rv);
    free(w->written_rv);
}

void volume_plan_free(vb_plan_t *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nw; i++)
        write_free(&p->w[i]);
    free(p->w);
    free(p->node);
    free(p->failed);
    free(p);
}

static vb_plan_t *plan_copy(const vb_plan_t *p)
{
    vb_plan_t *c = util_xcalloc(1, sizeof(*c));
    c->node = util_strdup(p->node);
    c->w = util_xcalloc((size_t)(p->nw ? p->nw : 1), sizeof(*c->w));
    c->nw = p->nw;
    for (int i = 0; i < p->nw; i++) {
        const vb_write_t *s = &p->w[i];
        c->w[i] = (vb_write_t){ s->is_pv,
                                util_strdup(s->name),
                                util_strdup(s->ns),
                                util_strdup_or_null(s->claim_name),
                                util_strdup_or_null(s->claim_uid),
                                util_strdup(s->rv),
                                util_strdup_or_null(s->written_rv),
                                s->bound_by_ctrl };
    }
    c->failed = util_strdup_or_null(p->failed);
    return c;
}

/* Drops what the pod assumed; write lock held. */
static void forget_locked(volume_store_t *vs, const char *pod_uid)
{
    lockorder_assert_held_excl(LO_VOLUME);
    vb_plan_t *p = hashmap_remove(vs->plans, pod_uid);
    if (!p)
        return;
    for (int i = 0; i < p->nw; i++) {
        const vb_write_t *w = &p->w[i];
        char key[512];
        if (w->is_pv)
            snprintf(key, sizeof(key), "%s", w->name);
        else
            snprintf(key, sizeof(key), "%s/%s", w->ns, w->name);
        hashmap_t *m = w->is_pv ? vs->assumed_pv : vs->assumed_pvc;
        assumed_t *a = hashmap_get(m, key);
        if (a && strcmp(a->pod_uid, pod_uid) == 0)
            assumed_free(hashmap_remove(m, key));
    }
    volume_plan_free(p);
}

static void reasons_text(unsigned r, char *out, size_t n)
{
    out[0] = '\0';
    const char *txt[] = { VB_REASON_NODE_CONFLICT, VB_REASON_BIND_CONFLICT, VB_REASON_PV_NOT_EXIST };
    for (int i = 0; i < 3; i++) {
        if (!(r & (1u << i)))
            continue;
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s", len ? ", " : "", txt[i]);
    }
}

int volume_assume(volume_store_t *vs, const pod_t *pod, const node_t *node, char *err, size_t errlen)
{
    vb_claims_t c;
    match_t m;
    unsigned reasons = 0;
    int rc = 0;
    wrlock(vs);
    forget_locked(vs, pod->uid);
    if (claims_get_locked(vs, pod, &c, err, errlen) != VB_OK) {
        volume_store_unlock(vs);
        return -1;
    }
    if (find_locked(vs, &c, node, &reasons, &m, err, errlen) < 0) {
        rc = -1;
    } else if (reasons) {
        reasons_text(reasons, err, errlen);
        rc = -1;
    } else if (c.nto_bind > 0) {
        vb_plan_t *p = util_xcalloc(1, sizeof(*p));
        p->node = util_strdup(node->name);
        p->w = util_xcalloc((size_t)(m.npv + m.nprov + 1), sizeof(*p->w));
        for (int i = 0; i < m.npv; i++) {
            const pv_t *pv = m.pv[i];
            const pvc_t *cl = m.pv_claim[i];
            claim_ref_t orig = { pv->has_claim_ref, pv->claim_ns, pv->claim_name, pv->claim_uid };
            p->w[p->nw++] = (vb_write_t){ 1,
                                          util_strdup(pv->name),
                                          util_strdup(cl->ns),
                                          util_strdup(cl->name),
                                          util_strdup(cl->uid),
                                          util_strdup(pv->resource_version),
                                          NULL,
                                          !ref_is_claim(&orig, cl) };
            assumed_t *a = util_xcalloc(1, sizeof(*a));
            a->pod_uid = util_strdup(pod->uid);
            a->claim_ns = util_strdup(cl->ns);
            a->claim_name = util_strdup(cl->name);
            a->claim_uid = util_strdup(cl->uid);
            assumed_free(hashmap_put(vs->assumed_pv, pv->name, a));
        }
        for (int i = 0; i < m.nprov; i++) {
            const pvc_t *cl = m.prov[i];
            p->w[p->nw++] = (vb_write_t){
                0, util_strdup(cl->name), util_strdup(cl->ns), NULL, NULL, util_strdup(cl->resource_version), NULL, 0
            };
            assumed_t *a = util_xcalloc(1, sizeof(*a));
            a->pod_uid = util_strdup(pod->uid);
            a->node = util_strdup(node->name);
            assumed_free(hashmap_put(vs->assumed_pvc, cl->key, a));
        }
        hashmap_put(vs->plans, pod->uid, p);
    }
    match_free(&m);
    volume_store_unlock(vs);
    volume_claims_free(&c);
    return rc;
}

void volume_forget(volume_store_t *vs, const char *pod_uid)
{
    if (!vs)
        return;
    wrlock(vs);
    forget_locked(vs, pod_uid);
    volume_store_unlock(vs);
}

int volume_has_plan(volume_store_t *vs, const char *pod_uid)
{
    if (!vs)
        return 0;
    volume_store_rdlock(vs);
    int has = hashmap_get(vs->plans, pod_uid) != NULL;
    volume_store_unlock(vs);
    return has;
}

vb_plan_t *volume_plan_copy(volume_store_t *vs, const char *pod_uid)
{
    if (!vs)
        return NULL;
    volume_store_rdlock(vs);
    const vb_plan_t *p = hashmap_get(vs->plans, pod_uid);
    vb_plan_t *c = p ? plan_copy(p) : NULL;
    volume_store_unlock(vs);
    return c;
}

void volume_plan_written(volume_store_t *vs, const char *pod_uid, int i, const char *rv)
{
    wrlock(vs);
    vb_plan_t *p = hashmap_get(vs->plans, pod_uid);
    if (p && i >= 0 && i < p->nw) {
        free(p->w[i].written_rv);
        p->w[i].written_rv = util_strdup(rv ? rv : "");
    }
    volume_store_unlock(vs);
}

void volume_plan_fail(volume_store_t *vs, const char *pod_uid, const char *msg)
{
    wrlock(vs);
    vb_plan_t *p = hashmap_get(vs->plans, pod_uid);
    if (p && !p->failed)
        p->failed = util_strdup(msg);
    volume_store_unlock(vs);
}

/* >0 when resourceVersion a is newer than b (etcd revisions are numbers). */
static int rv_cmp(const char *a, const char *b)
{
    char *ea, *eb;
    unsigned long long x = strtoull(a, &ea, 10), y = strtoull(b, &eb, 10);
    if (*a && *b && !*ea && !*eb)
        return x > y ? 1 : x < y ? -1 : 0;
    return strcmp(a, b);
}

static int check_locked(volume_store_t *vs, const vb_plan_t *p, const node_t *node, char *err, size_t errlen)
{
    for (int i = 0; i < p->nw; i++) {
        const vb_write_t *w = &p->w[i];
        const pvc_t *c = volume_pvc_locked(vs, w->ns, w->is_pv ? w->claim_name : w->name);
        if (w->is_pv) {
            const pv_t *pv = volume_pv_locked(vs, w->name);
            if (!pv)
                return util_errf(err, errlen, "failed to check binding: could not find v1.PersistentVolume \"%s\"",
                                 w->name);
            if (!c)
                return util_errf(err, errlen,
                                 "failed to check binding: could not find v1.PersistentVolumeClaim \"%s/%s\"", w->ns,
                                 w->claim_name);
            if (w->written_rv && rv_cmp(w->written_rv, pv->resource_version) > 0)
                return 0;
            if (node && !pv_matches_node(pv, &node->labels, node->name))
                return util_errf(err, errlen,
                                 "pv \"%s\" node affinity doesn't match node \"%s\": "
                                 "no matching NodeSelectorTerms",
                                 pv->name, node->name);
            if (!pv->has_claim_ref || !pv->claim_uid[0])
                return util_errf(err, errlen, "ClaimRef got reset for pv \"%s\"", pv->name);
            if (!pvc_is_fully_bound(c))
                return 0;
            continue;
        }
        if (!c)
            return util_errf(err, errlen,
                             "failed to check provisioning pvc: could not find v1.PersistentVolumeClaim \"%s/%s\"",
                             w->ns, w->name);
        if (w->written_rv && rv_cmp(w->written_rv, c->resource_version) > 0)
            return 0;
        if (!c->has_selected_node || strcmp(c->selected_node, p->node) != 0)
            return util_errf(err, errlen, "provisioning failed for PVC \"%s\"", c->name);
        if (c->volume_name[0]) {
            const pv_t *pv = volume_pv_locked(vs, c->volume_name);
            if (!pv)
                return 0; /* not seen yet */
            if (node && !pv_matches_node(pv, &node->labels, node->name))
                return util_errf(err, errlen,
                                 "pv \"%s\" node affinity doesn't match node \"%s\": "
                                 "no matching NodeSelectorTerms",
                                 pv->name, node->name);
        }
        if (!pvc_is_fully_bound(c))
            return 0;
    }
    return 1;
}

int volume_plan_check(volume_store_t *vs, const char *pod_uid, const node_t *node, char *err, size_t errlen)
{
    volume_store_rdlock(vs);
    const vb_plan_t *p = hashmap_get(vs->plans, pod_uid);
    int rc = p ? check_locked(vs, p, node, err, errlen) : 1;
    volume_store_unlock(vs);
    return rc;
}

/* ---- CSI limit keys ----------------------------------------------------------- */

#define CSI_LIMIT_PREFIX "attachable-volumes-csi-"

/* Names too long for a resource name keep 23 characters of the driver and
 * 16 hex digits of its SHA-1, as kube does. */
void volume_csi_limit_key(const char *driver, char *out, size_t n)
{
    size_t plen = strlen(CSI_LIMIT_PREFIX), dlen = strlen(driver);
    if (plen + dlen < 63) {
        snprintf(out, n, "%s%s", CSI_LIMIT_PREFIX, driver);
        return;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char hex[17];
    EVP_Digest(driver, dlen, md, &mdlen, EVP_sha1(), NULL);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    snprintf(out, n, "%s%.23s%s", CSI_LIMIT_PREFIX, driver, hex);
}
