/* row.c -- the gpu-sharing row: GpuSharing's PreBind side, the reservation pods that hold
 * each shared GPU for kubelet and every other scheduler, the slots written on
 * a fraction at bind, and the collection of reservations no fraction uses.
 *
 * A slot's reservation pod is found in the cache (after a restart, too) or
 * created here before the first fraction on the slot binds. The store below
 * remembers creations in flight (so two binds never create two pods for one
 * slot) and deletions: while a DELETE is in flight a bind for the slot waits
 * for its answer; once the API accepted it the bind makes a new reservation
 * rather than name a pod that is going away, and when it failed the mark is
 * undone and the existing reservation is reused (never a second pod
 * holding a second GPU for one slot). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/row.h"
#include "kube/client.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/util.h"
#include "util/lockorder.h"

/* RES_DELETING: the DELETE is in flight; RES_GONE: the API accepted it. */
enum { RES_CREATING = 1, RES_LIVE, RES_DELETING, RES_GONE };

typedef struct res_entry {
    int state;
    char *name;         /* owned */
    int64_t created_ms; /* RES_LIVE: when the API accepted it */
} res_entry_t;

/* A reservation created here is trusted to exist this long before the
 * watch shows it; after that, the cache is the truth. */
#define GPU_RES_TRUST_MS 30000

/* The row's room. */
typedef struct gpu_res {
    const sched_services_t *svc;
    void *core;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    hashmap_t *slots;      /* "node/slot" -> res_entry_t (creations, deletions) */
    hashmap_t *idle_since; /* reservation pod uid -> int64_t* wall ms; housekeeper only */
    unsigned long seq;     /* name suffixes */
} gpu_res_t;

/* Forgets the slot's entry e (key key). r->mu held. */
static void slot_drop(gpu_res_t *r, const char *key, res_entry_t *e)
{
    lockorder_assert_held(LO_GPU_RES);
    hashmap_remove(r->slots, key);
    free(e->name);
    free(e);
}

void *gpu_row_init(const sched_services_t *svc, void *core)
{
    /* Made with the scheduler, before any pod reaches its cache: only the
     * pods in this namespace may be trusted as reservation pods. */
    gpu_set_reservation_namespace(svc->opts(core)->gpu_namespace);
    gpu_res_t *r = util_xcalloc(1, sizeof(*r));
    r->svc = svc;
    r->core = core;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->slots = hashmap_new(64);
    r->idle_since = hashmap_new(64);
    r->seq = (unsigned long)util_wall_ms();
    return r;
}

void gpu_row_fini(void *self)
{
    gpu_res_t *r = self;
    if (!r)
        return;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(r->slots, &it, &k, &v);) {
        res_entry_t *e = v;
        free(e->name);
        free(e);
    }
    for (size_t it = 0; hashmap_next(r->idle_since, &it, &k, &v);)
        free(v);
    hashmap_free(r->slots);
    hashmap_free(r->idle_since);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static void slot_key(sbuf_t *b, const char *node, int slot)
{
    sbuf_printf(b, "%s/%d", node, slot);
}

/* ------------------------------------------------- finding reservations */

typedef struct find {
    gpu_res_t *r;
    const char *node;
    int slot;
    char *name; /* a live reservation pod of the slot (owned), or NULL */
    uint64_t mask;
    const char *uid;
} find_t;

/* A reservation of the slot in the cache that is not being collected. */
static void find_reservation(void *ud, const node_info_t *ni)
{
    find_t *f = ud;
    for (int i = 0; i < ni->npods && !f->name; i++) {
        const pod_t *p = ni->pods[i];
        if (!gpu_is_reservation(p) || gpu_req_of(p)->slot != f->slot || p->deleting)
            continue;
        sbuf_t k = { 0 };
        slot_key(&k, f->node, f->slot);
        lo_mutex_lock(&f->r->mu, LO_GPU_RES);
        res_entry_t *e = hashmap_get(f->r->slots, k.data);
        int going = e && (e->state == RES_DELETING || e->state == RES_GONE) && strcmp(e->name, p->name) == 0;
        lo_mutex_unlock(&f->r->mu, LO_GPU_RES);
        sbuf_free(&k);
        if (!going)
            f->name = util_strdup(p->name);
    }
}

static void find_mask(void *ud, const node_info_t *ni)
{
    find_t *f = ud;
    f->mask = gpu_node_mask_of(gpu_node_of(ni), f->uid);
}

/* The watch saw a reservation pod go (collected here, or deleted by anyone
 * else): a creation the store still trusts under that name ends, so the
 * next fraction on the slot makes a new reservation rather than name a pod
 * that no longer exists. */
void gpu_row_pod_deleted(const sched_row_t *row, const pod_t *pod)
{
    gpu_res_t *r = row->self;
    if (!r || !gpu_is_reservation(pod) || !gpu_req_of(pod) || !pod->node_name[0])
        return;
    sbuf_t k = { 0 };
    slot_key(&k, pod->node_name, gpu_req_of(pod)->slot);
    lo_mutex_lock(&r->mu, LO_GPU_RES);
    res_entry_t *e = hashmap_get(r->slots, k.data);
    if (e && (e->state == RES_LIVE || e->state == RES_GONE) && strcmp(e->name, pod->name) == 0) {
        slot_drop(r, k.data, e);
        pthread_cond_broadcast(&r->cv);
    }
    lo_mutex_unlock(&r->mu, LO_GPU_RES);
    sbuf_free(&k);
}

/* ------------------------------------------------------------ creation */

/* r->mu held. */
static char *reservation_name(gpu_res_t *r, const char *node, int slot)
{
    lockorder_assert_held(LO_GPU_RES);
    unsigned long n = ++r->seq;
    sbuf_t b = { 0 };
    /* A pod name is a DNS subdomain (<= 253) and so is a node name. */
    sbuf_printf(&b, GPU_RESERVATION_PREFIX "%.200s-%d-%05lx", node, slot, n & 0xfffff);
    return b.data;
}

/* Every mark gpu_reservation_trusted (gpu/gpu.c) looks for: the namespace,
 * the label, managed-by, the name (reservation_name) and the node
 * annotation equal to spec.nodeName. */
static char *reservation_body(gpu_res_t *r, const char *name, const char *node, int slot)
{
    const scheduler_opts_t *o = r->svc->opts(r->core);
    char idx[8];
    snprintf(idx, sizeof(idx), "%d", slot);
    json_t *res = json_pack("{s:s}", RES_GPU, "1");
    json_t *pod =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}},"
                  " s:{s:s, s:s, s:I, s:[{s:s}], s:[{s:s, s:s, s:{s:O, s:O}}]}}",
                  "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", o->gpu_namespace, "labels",
                  GPU_LABEL_RESERVATION, "true", GPU_LABEL_MANAGED_BY, GPU_MANAGER, "annotations", GPU_ANN_INDEX, idx,
                  GPU_ANN_RESERVATION_NODE, node, "spec", "nodeName", node, "schedulerName", r->svc->name(r->core),
                  "terminationGracePeriodSeconds", (json_int_t)0, "tolerations", "operator", "Exists", "containers",
                  "name", "reserve", "image", o->gpu_image, "resources", "requests", res, "limits", res);
    json_decref(res);
    char *txt = json_dumps(pod, JSON_COMPACT);
    json_decref(pod);
    return txt;
}

static long post(gpu_res_t *r, const char *path, const char *body, char *err, size_t errlen)
{
    long st = 0;
    char *answer = NULL;
    int rc = r->svc->api(r->core, "POST", path, body, &st, &answer, err, errlen);
    if (rc == 0 && (st < 200 || st >= 300))
        snprintf(err, errlen, "HTTP %ld: %.160s", st, answer ? answer : "");
    free(answer);
    return rc == 0 ? st : 0;
}

static void count_created(scheduler_stats_t *st, void *ud)
{
    (void)ud;
    st->gpu_reservations_created++;
}

static void count_deleted(scheduler_stats_t *st, void *ud)
{
    (void)ud;
    st->gpu_reservations_deleted++;
}

static void set_shared(scheduler_stats_t *st, void *ud)
{
    st->gpu_shared_devices = *(int *)ud;
}

/* POSTs the reservation pod; creates its namespace when that is missing. */
static int create_reservation(gpu_res_t *r, const char *name, const char *node, int slot, char *err, size_t errlen)
{
    const char *gpu_ns = r->svc->opts(r->core)->gpu_namespace;
    char *ns = util_urlencode(gpu_ns);
    sbuf_t path = { 0 };
    sbuf_printf(&path, "/api/v1/namespaces/%s/pods", ns);
    char *body = reservation_body(r, name, node, slot);
    long st = post(r, path.data, body, err, errlen);
    if (st == 404) {
        json_t *nso =
            json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name", gpu_ns);
        char *nsb = json_dumps(nso, JSON_COMPACT);
        json_decref(nso);
        long nst = post(r, "/api/v1/namespaces", nsb, err, errlen);
        free(nsb);
        if ((nst >= 200 && nst < 300) || nst == 409)
            st = post(r, path.data, body, err, errlen);
    }
    free(body);
    sbuf_free(&path);
    free(ns);
    if (st >= 200 && st < 300) {
        r->svc->stats(r->core, count_created, NULL);
        LOG_I("gpu: reservation pod %s/%s holds GPU slot %d of node %s", gpu_ns, name, slot, node);
        return 0;
    }
    return -1;
}

/* r->mu held: waits out a creation or a deletion of the slot in flight;
 * 1 when it waited (what the cache and the store say may have changed). */
static int wait_settled(gpu_res_t *r, const char *key)
{
    lockorder_assert_held(LO_GPU_RES);
    int waited = 0;
    res_entry_t *e;
    while ((e = hashmap_get(r->slots, key)) && (e->state == RES_CREATING || e->state == RES_DELETING)) {
        pthread_cond_wait(&r->cv, &r->mu);
        waited = 1;
    }
    return waited;
}

/* The name of a live reservation pod for (node, slot), created if none. */
static char *ensure_reservation(gpu_res_t *r, const char *node, int slot, char *err, size_t errlen)
{
    sbuf_t k = { 0 };
    slot_key(&k, node, slot);
    res_entry_t *e;
    for (;;) {
        find_t f = { .r = r, .node = node, .slot = slot };
        r->svc->node_visit(r->core, node, find_reservation, &f);
        if (f.name) {
            sbuf_free(&k);
            return f.name;
        }
        lo_mutex_lock(&r->mu, LO_GPU_RES);
        /* After a wait, look again: a failed DELETE leaves its reservation
         * in the cache to be reused. */
        if (!wait_settled(r, k.data))
            break;
        lo_mutex_unlock(&r->mu, LO_GPU_RES);
    }
    e = hashmap_get(r->slots, k.data);
    if (e && e->state == RES_LIVE && util_now_ms() - e->created_ms < GPU_RES_TRUST_MS) {
        /* Created by another bind; the watch has not brought it yet. */
        char *name = util_strdup(e->name);
        lo_mutex_unlock(&r->mu, LO_GPU_RES);
        sbuf_free(&k);
        return name;
    }
    if (e) { /* gone (or a stale creation): a new one takes over the slot */
        slot_drop(r, k.data, e);
    }
    char *name = reservation_name(r, node, slot);
    e = util_xcalloc(1, sizeof(*e));
    e->state = RES_CREATING;
    e->name = util_strdup(name);
    hashmap_put(r->slots, k.data, e);
    lo_mutex_unlock(&r->mu, LO_GPU_RES);

    int rc = create_reservation(r, name, node, slot, err, errlen);

    lo_mutex_lock(&r->mu, LO_GPU_RES);
    if (rc == 0) {
        e->state = RES_LIVE;
        e->created_ms = util_now_ms();
    } else {
        slot_drop(r, k.data, e);
    }
    pthread_cond_broadcast(&r->cv);
    lo_mutex_unlock(&r->mu, LO_GPU_RES);
    sbuf_free(&k);
    if (rc != 0) {
        free(name);
        return NULL;
    }
    return name;
}

typedef struct idle_pod idle_pod_t;
static void release_for_whole(gpu_res_t *r, const pod_t *pod, const char *node);

int gpu_row_prebind(void *self, const pod_t *pod, const char *node, json_t **ann, char *err, size_t errlen)
{
    gpu_res_t *r = self;
    *ann = NULL;
    if (!gpu_is_fraction(pod)) {
        if (res_get_scalar(&pod->requests, RES_GPU) > 0)
            release_for_whole(r, pod, node);
        return 0;
    }
    find_t f = { .uid = pod->uid };
    r->svc->node_visit(r->core, node, find_mask, &f);
    if (!f.mask)
        return util_errf(err, errlen, "no GPU slot is held for the pod on node %s", node);
    sbuf_t names = { 0 };
    for (int i = 0; i < GPU_MAX_DEVICES; i++) {
        if (!(f.mask & (1ULL << i)))
            continue;
        char *name = ensure_reservation(r, node, i, err, errlen);
        if (!name) {
            sbuf_free(&names);
            return -1;
        }
        sbuf_printf(&names, "%s%s", names.len ? "," : "", name);
        free(name);
    }
    char idx[GPU_MAX_DEVICES * 3 + 1];
    gpu_mask_format(f.mask, idx, sizeof(idx));
    *ann = json_pack("{s:s, s:s}", GPU_ANN_INDEX, idx, GPU_ANN_RESERVATION_POD, names.data);
    sbuf_free(&names);
    return 0;
}

/* ----------------------------------------------------------- collection */

/* How long a reservation may hold a GPU no fraction uses: long enough for
 * the next fraction of a busy notebook pool to reuse it. */
#define GPU_RES_GRACE_MS 5000

struct idle_pod {
    char *ns, *name, *uid, *node;
    int slot;
};

typedef struct idle_list {
    idle_pod_t *v;
    int n, cap;
    int max; /* stop after this many (0: no limit) */
} idle_list_t;

/* Reservation pods of ni on slots without fractions (all of them on a node
 * that is gone). Read lock and the node's stripe held. */
static void node_idle(void *ud, const node_info_t *ni)
{
    idle_list_t *l = ud;
    uint64_t idle = gpu_node_idle_reserved(gpu_node_of(ni));
    for (int k = 0; idle && k < ni->npods && (!l->max || l->n < l->max); k++) {
        const pod_t *p = ni->pods[k];
        if (!gpu_is_reservation(p) || p->deleting || pod_is_terminal(p))
            continue;
        if (ni->node && !(idle & (1ULL << gpu_req_of(p)->slot)))
            continue;
        if (l->n == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 8;
            l->v = util_xrealloc(l->v, sizeof(*l->v) * (size_t)l->cap);
        }
        l->v[l->n++] = (idle_pod_t){ util_strdup(p->ns), util_strdup(p->name), util_strdup(p->uid),
                                     util_strdup(ni->name), gpu_req_of(p)->slot };
    }
}

/* What the housekeeper reads of every node in one pass: the idle
 * reservations and the GPUs shared. */
typedef struct hk_pass {
    idle_list_t idle;
    int shared;
} hk_pass_t;

static void hk_node(void *ud, const node_info_t *ni)
{
    hk_pass_t *h = ud;
    if (!gpu_node_of(ni))
        return;
    node_idle(&h->idle, ni);
    h->shared += gpu_node_shared(gpu_node_of(ni));
}

/* 0 when the API accepted the DELETE (or the pod was gone already). */
static int delete_reservation(gpu_res_t *r, const idle_pod_t *ip)
{
    char *path = kube_pod_path(ip->ns, ip->name, NULL);
    char err[256];
    long st = 0;
    const char *body = "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":0}";
    int rc = r->svc->api(r->core, "DELETE", path, body, &st, NULL, err, sizeof(err));
    int ok = rc == 0 && ((st >= 200 && st < 300) || st == 404);
    if (ok) {
        r->svc->stats(r->core, count_deleted, NULL);
        LOG_I("gpu: reservation pod %s/%s released GPU slot %d of node %s", ip->ns, ip->name, ip->slot, ip->node);
    } else {
        LOG_W("gpu: deleting reservation pod %s/%s: %s", ip->ns, ip->name, rc == 0 ? "refused" : err);
    }
    free(path);
    return ok ? 0 : -1;
}

static void idle_free(idle_pod_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        free(v[i].ns);
        free(v[i].name);
        free(v[i].uid);
        free(v[i].node);
    }
    free(v);
}

/* Marks the slot's reservation as going (with the nodes frozen, so no
 * fraction is assumed meanwhile) if it is still idle. */
static int mark_going(gpu_res_t *r, void *core, sched_node_lookup_fn lookup, const idle_pod_t *ip)
{
    int still = 0;
    const node_info_t *ni = lookup(core, ip->node);
    if (ni && (!ni->node || (gpu_node_idle_reserved(gpu_node_of(ni)) & (1ULL << ip->slot))))
        still = 1;
    if (!still)
        return 0;
    sbuf_t k = { 0 };
    slot_key(&k, ip->node, ip->slot);
    lo_mutex_lock(&r->mu, LO_GPU_RES);
    res_entry_t *e = hashmap_get(r->slots, k.data);
    if (e && (e->state == RES_CREATING || e->state == RES_DELETING)) {
        still = 0; /* a bind is making one, or another DELETE is out */
    } else {
        if (!e) {
            e = util_xcalloc(1, sizeof(*e));
            hashmap_put(r->slots, k.data, e);
        }
        free(e->name);
        e->name = util_strdup(ip->name);
        e->state = RES_DELETING;
    }
    lo_mutex_unlock(&r->mu, LO_GPU_RES);
    sbuf_free(&k);
    return still;
}

/* The DELETE marked by mark_going was answered: accepted, the pod is gone
 * for binds (RES_GONE); failed, the mark is undone so that the reservation,
 * still in the cache and still holding its GPU, is found and reused rather
 * than joined by a second one. Either way the binds waiting are woken. */
static void unmark_going(gpu_res_t *r, const idle_pod_t *ip, int deleted)
{
    sbuf_t k = { 0 };
    slot_key(&k, ip->node, ip->slot);
    lo_mutex_lock(&r->mu, LO_GPU_RES);
    res_entry_t *e = hashmap_get(r->slots, k.data);
    if (e && e->state == RES_DELETING && strcmp(e->name, ip->name) == 0) {
        if (deleted) {
            e->state = RES_GONE;
        } else {
            slot_drop(r, k.data, e);
        }
    }
    pthread_cond_broadcast(&r->cv);
    lo_mutex_unlock(&r->mu, LO_GPU_RES);
    sbuf_free(&k);
}

/* Deletes a reservation mark_going marked, then settles the mark. */
static void collect(gpu_res_t *r, const idle_pod_t *ip)
{
    unmark_going(r, ip, delete_reservation(r, ip) == 0);
}

/* Which of a list's reservations to collect, marked with the nodes frozen. */
typedef struct marking {
    gpu_res_t *r;
    const idle_pod_t *v;
    int n;
    int *go; /* in: 1 to try; out: 1 marked */
} marking_t;

static void mark_all(void *ud, void *core, sched_node_lookup_fn lookup)
{
    marking_t *m = ud;
    for (int i = 0; i < m->n; i++)
        m->go[i] = m->go[i] && mark_going(m->r, core, lookup, &m->v[i]);
}

/* Collects the reservations go[] picks out of v (go is overwritten). */
static void collect_marked(gpu_res_t *r, const idle_pod_t *v, int n, int *go, const pod_t *for_pod, const char *node)
{
    marking_t m = { r, v, n, go };
    r->svc->nodes_frozen(r->core, mark_all, &m);
    for (int i = 0; i < n; i++) {
        if (!go[i])
            continue;
        if (for_pod)
            LOG_I("gpu: pod %s needs the GPU reservation %s/%s holds idle on node %s", for_pod->key, v[i].ns, v[i].name,
                  node);
        collect(r, &v[i]);
    }
}

/* How many idle reservations a whole-GPU pod on ni displaces: the GPUs
 * in use (its own included, it is assumed) plus the idle reserved ones
 * beyond the node's count. */
static void node_excess(void *ud, const node_info_t *ni)
{
    idle_list_t *l = ud;
    if (!gpu_node_of(ni) || !ni->node)
        return;
    int64_t C = res_get_scalar(&ni->node->allocatable, RES_GPU);
    int64_t idle = __builtin_popcountll(gpu_node_idle_reserved(gpu_node_of(ni)));
    int64_t excess = res_get_scalar(&ni->requested, RES_GPU) + idle - C;
    if (excess <= 0)
        return;
    l->max = excess > idle ? (int)idle : (int)excess;
    node_idle(l, ni);
}

static void release_for_whole(gpu_res_t *r, const pod_t *pod, const char *node)
{
    idle_list_t l = { 0 };
    r->svc->node_visit(r->core, node, node_excess, &l);
    if (l.n == 0)
        return;
    int *go = util_xcalloc((size_t)l.n, sizeof(*go));
    for (int i = 0; i < l.n; i++)
        go[i] = 1;
    collect_marked(r, l.v, l.n, go, pod, node);
    free(go);
    idle_free(l.v, l.n);
}

typedef struct slot_ref {
    char *node;
    int slot;
} slot_ref_t;

typedef struct slot_refs {
    slot_ref_t *v;
    int n;
} slot_refs_t;

static void unreserved_slots(void *ud, const node_info_t *ni)
{
    slot_refs_t *l = ud;
    if (!gpu_node_of(ni) || !ni->node)
        return;
    uint64_t m = gpu_node_unreserved(gpu_node_of(ni));
    for (int k = 0; k < GPU_MAX_DEVICES; k++)
        if (m & (1ULL << k)) {
            l->v = util_xrealloc(l->v, sizeof(*l->v) * (size_t)(l->n + 1));
            l->v[l->n++] = (slot_ref_t){ util_strdup(ni->name), k };
        }
}

/* Slots whose fractions lost their reservation pod get a new one, so
 * kubelet's count stays honest. */
static void restore_reservations(gpu_res_t *r)
{
    slot_refs_t l = { 0 };
    r->svc->nodes_visit(r->core, unreserved_slots, &l);
    slot_ref_t *v = l.v;
    int n = l.n;
    for (int i = 0; i < n; i++) {
        char err[256] = "";
        char *name = ensure_reservation(r, v[i].node, v[i].slot, err, sizeof(err));
        if (!name)
            LOG_W("gpu: slot %d of node %s has fractions but no reservation pod: %s", v[i].slot, v[i].node, err);
        free(name);
        free(v[i].node);
    }
    free(v);
}

static void reservations_held(scheduler_stats_t *st, void *ud)
{
    *(int *)ud = st->gpu_reservations_created > st->gpu_reservations_deleted;
}

int gpu_row_timed(const sched_row_t *row)
{
    int held = 0;
    row->svc->stats(row->core, reservations_held, &held);
    return held;
}

void gpu_row_housekeep(const sched_row_t *row)
{
    gpu_res_t *r = row->self;
    if (!r->svc->fenced(r->core))
        restore_reservations(r);
    hk_pass_t pass = { 0 };
    r->svc->nodes_visit(r->core, hk_node, &pass);
    idle_pod_t *idle = pass.idle.v;
    int n = pass.idle.n;
    r->svc->stats(r->core, set_shared, &pass.shared);

    /* Idle clocks: started for new idle pods, dropped for busy or gone ones. */
    int64_t now = util_wall_ms();
    hashmap_t *seen = hashmap_new(16);
    int due = 0;
    for (int i = 0; i < n; i++) {
        int64_t *since = hashmap_get(r->idle_since, idle[i].uid);
        if (!since) {
            since = util_xmalloc(sizeof(*since));
            *since = now;
            hashmap_put(r->idle_since, idle[i].uid, since);
        }
        hashmap_put(seen, idle[i].uid, since);
        due += now - *since >= GPU_RES_GRACE_MS;
    }
    const char *k;
    void *v;
    char **gone = NULL;
    int ngone = 0;
    for (size_t it = 0; hashmap_next(r->idle_since, &it, &k, &v);)
        if (!hashmap_get(seen, k)) {
            gone = util_xrealloc(gone, sizeof(*gone) * (size_t)(ngone + 1));
            gone[ngone++] = util_strdup(k);
        }
    for (int i = 0; i < ngone; i++) {
        free(hashmap_remove(r->idle_since, gone[i]));
        free(gone[i]);
    }
    free(gone);
    if (due > 0 && !r->svc->fenced(r->core)) {
        int *go = util_xcalloc((size_t)n, sizeof(*go));
        for (int i = 0; i < n; i++) {
            int64_t *since = hashmap_get(seen, idle[i].uid);
            go[i] = now - *since >= GPU_RES_GRACE_MS;
        }
        collect_marked(r, idle, n, go, NULL, NULL);
        free(go);
    }
    hashmap_free(seen);
    idle_free(idle, n);
}

/* The GpuSharing row's PreBind: the slots' reservation pods, and the
 * annotations the Binding carries (merged into *ann). */
int gpu_row_pre_bind(const sched_row_t *row, queue_item_t **it, const char *node, const char *lender, json_t **ann,
                     char *err, size_t errlen)
{
    (void)lender;
    json_t *mine = NULL;
    if (gpu_row_prebind(row->self, (*it)->pod, node, &mine, err, errlen) != 0) {
        LOG_W("bind pod=%s node=%s: gpu sharing: %s", (*it)->pod->key, node, err);
        return PREBIND_FAILED;
    }
    if (!mine)
        return PREBIND_READY;
    if (!*ann) {
        *ann = mine;
    } else {
        json_object_update(*ann, mine);
        json_decref(mine);
    }
    return PREBIND_READY;
}

void gpu_row_victims(const sched_row_t *row, const sched_victim_q_t *q, sched_victim_answer_t *a)
{
    (void)row;
    if (gpu_is_reservation(q->victim))
        a->rule = VICTIM_NEVER;
}
