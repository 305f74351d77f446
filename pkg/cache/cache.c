/* cache.c -- nodes, pods, assumed and nominated pods behind one rwlock. */
#include "cache/cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/topo_index.h"
#include "util/hashmap.h"
#include "util/lockorder.h"
#include "util/log.h"
#include "util/util.h"

typedef struct pod_entry {
    pod_t *pod;
    cache_pod_state_t state;
    char *node;    /* node it is accounted on (assumed or bound), or NULL */
    int follow;    /* its status.nominatedNodeName is trusted (cache_upsert_pod_ex) */
    char *nom_was; /* assumed: the node its nomination named (cache_unassume restores it), or NULL */
} pod_entry_t;

typedef struct nomination {
    pod_t *pod;
    char *node;
} nomination_t;

#define NODE_STRIPES 64

struct cache {
    pthread_rwlock_t lock;
    /* Under the read lock, a pool thread reserves on its own node holding
     * that node's stripe, and touches the pod map holding pods_mu. */
    pthread_mutex_t stripes[NODE_STRIPES];
    pthread_mutex_t pods_mu;
    cache_partition_fn partition;
    void *partition_ud;
    hashmap_t *node_map; /* name -> node_info_t */
    node_info_t **nodes; /* same infos, for iteration */
    int nnodes, cap_nodes;
    hashmap_t *pods;    /* uid -> pod_entry_t */
    nomination_t *noms; /* few: only pods waiting after a preemption */
    int nnoms, cap_noms;
    hashmap_t *noms_by_node; /* node -> nom_list_t, rebuilt on change */
    hashmap_t *noms_by_uid;  /* uid of each nominated pod -> (void *)1 */
    cache_gap_fn gap_hook;   /* tests only, see cache_set_assume_gap_hook */
    void *gap_ud;
    cache_account_fn account_hook; /* see cache_set_account_hook */
    void *account_ud;
    cache_account_fn nom_hook; /* see cache_set_nomination_hook */
    void *nom_ud;
    /* Bumped (atomically, under the write lock) whenever a pod with
     * required anti-affinity is accounted or node labels change: what can
     * make a placement decided earlier break an existing pod's anti-affinity. */
    uint64_t interpod_epoch;
    /* Per-topology-value pod counts for the inter-pod plugins; fed on every
     * accounting change (its own leaf mutex, below stripes and pods_mu). */
    fw_topo_index_t *tindex;
    /* Bumped (under the write lock) when a node appears, goes or changes
     * pool: pool threads keep their node count until it moves. */
    uint64_t nodes_ver;
};

typedef struct nom_list {
    pod_t **pods;
    int n, cap;
} nom_list_t;

cache_t *cache_new(cache_partition_fn fn, void *ud)
{
    cache_t *c = util_xcalloc(1, sizeof(*c));
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    /* Pool threads read almost all the time; informer writes must not starve. */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    if (pthread_rwlock_init(&c->lock, &attr) != 0)
        abort();
    pthread_rwlockattr_destroy(&attr);
    for (int i = 0; i < NODE_STRIPES; i++)
        pthread_mutex_init(&c->stripes[i], NULL);
    pthread_mutex_init(&c->pods_mu, NULL);
    c->partition = fn;
    c->partition_ud = ud;
    c->node_map = hashmap_new(1024);
    c->pods = hashmap_new(4096);
    c->noms_by_node = hashmap_new(16);
    c->noms_by_uid = hashmap_new(16);
    c->tindex = fw_topo_index_new();
    c->nodes_ver = 1;
    return c;
}

static void entry_free(pod_entry_t *e)
{
    if (!e)
        return;
    pod_unref(e->pod);
    free(e->node);
    free(e->nom_was);
    free(e);
}

static void nom_list_free(nom_list_t *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->n; i++)
        pod_unref(l->pods[i]);
    free(l->pods);
    free(l);
}

void cache_free(cache_t *c)
{
    if (!c)
        return;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(c->pods, &it, &k, &v);)
        entry_free(v);
    hashmap_free(c->pods);
    for (int i = 0; i < c->nnodes; i++)
        node_info_free(c->nodes[i]);
    free(c->nodes);
    hashmap_free(c->node_map);
    for (int i = 0; i < c->nnoms; i++) {
        pod_unref(c->noms[i].pod);
        free(c->noms[i].node);
    }
    free(c->noms);
    for (size_t it = 0; hashmap_next(c->noms_by_node, &it, &k, &v);)
        nom_list_free(v);
    hashmap_free(c->noms_by_node);
    hashmap_free(c->noms_by_uid);
    fw_topo_index_free(c->tindex);
    for (int i = 0; i < NODE_STRIPES; i++)
        pthread_mutex_destroy(&c->stripes[i]);
    pthread_mutex_destroy(&c->pods_mu);
    pthread_rwlock_destroy(&c->lock);
    free(c);
}

static void epoch_bump(cache_t *c);

static pthread_mutex_t *stripe(cache_t *c, const char *node)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)node; *p; p++)
        h = (h ^ *p) * 16777619u;
    return &c->stripes[h % NODE_STRIPES];
}

void cache_node_lock(cache_t *c, const char *node)
{
    lockorder_assert_held(LO_CACHE);
    lo_mutex_lock(stripe(c, node), LO_CACHE_STRIPE);
}
void cache_node_unlock(cache_t *c, const char *node)
{
    lo_mutex_unlock(stripe(c, node), LO_CACHE_STRIPE);
}

void cache_rdlock(cache_t *c)
{
    lo_rwlock_rdlock(&c->lock, LO_CACHE);
}
void cache_wrlock(cache_t *c)
{
    lo_rwlock_wrlock(&c->lock, LO_CACHE);
}
void cache_unlock(cache_t *c)
{
    lo_rwlock_unlock(&c->lock, LO_CACHE);
}

static void pods_lock(cache_t *c)
{
    lo_mutex_lock(&c->pods_mu, LO_CACHE_PODS);
}
static void pods_unlock(cache_t *c)
{
    lo_mutex_unlock(&c->pods_mu, LO_CACHE_PODS);
}

/* Counts (sign +1) or uncounts (-1) the node and its pods in the topology
 * index against the node object it has now. Write lock held. */
static void index_node_pods(cache_t *c, node_info_t *ni, int sign)
{
    lockorder_assert_held_excl(LO_CACHE);
    if (!ni->node)
        return;
    fw_topo_index_node(c->tindex, ni->node, sign);
    for (int i = 0; i < ni->npods; i++)
        fw_topo_index_pod(c->tindex, ni->pods[i], ni->node, sign);
}

/* The info for a node name, created when pods name a node we have not seen. */
static node_info_t *node_get_or_add(cache_t *c, const char *name)
{
    node_info_t *ni = hashmap_get(c->node_map, name);
    if (ni)
        return ni;
    ni = node_info_new(name);
    ni->pool = -1;
    hashmap_put(c->node_map, name, ni);
    if (c->nnodes == c->cap_nodes) {
        c->cap_nodes = c->cap_nodes ? c->cap_nodes * 2 : 256;
        c->nodes = util_xrealloc(c->nodes, (size_t)c->cap_nodes * sizeof(*c->nodes));
    }
    c->nodes[c->nnodes++] = ni;
    c->nodes_ver++;
    return ni;
}

static void node_drop(cache_t *c, node_info_t *ni)
{
    c->nodes_ver++;
    hashmap_remove(c->node_map, ni->name);
    for (int i = 0; i < c->nnodes; i++) {
        if (c->nodes[i] == ni) {
            c->nodes[i] = c->nodes[--c->nnodes];
            break;
        }
    }
    node_info_free(ni);
}

static int labels_equal(const labels_t *a, const labels_t *b)
{
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->items[i].key, b->items[i].key) || strcmp(a->items[i].value, b->items[i].value))
            return 0;
    return 1;
}

static int taints_equal(const node_t *a, const node_t *b)
{
    if (a->ntaints != b->ntaints)
        return 0;
    for (int i = 0; i < a->ntaints; i++)
        if (strcmp(a->taints[i].key, b->taints[i].key) || strcmp(a->taints[i].value, b->taints[i].value) ||
            a->taints[i].effect != b->taints[i].effect)
            return 0;
    return 1;
}

/* What kube-scheduler calls a scheduling-relevant node update. */
static int node_sched_changed(const node_t *old, const node_t *n)
{
    return !old || old->unschedulable != n->unschedulable || !res_equal(&old->allocatable, &n->allocatable) ||
           !labels_equal(&old->labels, &n->labels) || !taints_equal(old, n);
}

/* The node moved to another pool: what its pods are charged to follows
 * (the accounting hook charges a pod in its node's pool). Write lock held. */
static void reaccount_node(cache_t *c, node_info_t *ni)
{
    lockorder_assert_held_excl(LO_CACHE);
    if (!c->account_hook)
        return;
    for (int i = 0; i < ni->npods; i++) {
        c->account_hook(c->account_ud, ni->pods[i], ni, -1);
        c->account_hook(c->account_ud, ni->pods[i], ni, +1);
    }
}

int cache_upsert_node(cache_t *c, node_t *n)
{
    cache_wrlock(c);
    node_info_t *ni = node_get_or_add(c, n->name);
    int changed = node_sched_changed(ni->node, n);
    int relabel = !ni->node || !labels_equal(&ni->node->labels, &n->labels);
    if (relabel) {
        epoch_bump(c);
        index_node_pods(c, ni, -1);
    }
    int had_node = ni->node != NULL, was = ni->pool;
    node_info_set_node(ni, n);
    if (relabel)
        index_node_pods(c, ni, +1);
    ni->pool = c->partition ? c->partition(c->partition_ud, n) : 0;
    if (!had_node || ni->pool != was)
        c->nodes_ver++;
    if (ni->pool != was) /* a pool change, or pods seen before their node */
        reaccount_node(c, ni);
    ni->generation++;
    cache_unlock(c);
    return changed;
}

static void nominations_drop_node_locked(cache_t *c, const char *node);

void cache_delete_node(cache_t *c, const char *name)
{
    cache_wrlock(c);
    node_info_t *ni = hashmap_get(c->node_map, name);
    nominations_drop_node_locked(c, name);
    if (ni) {
        index_node_pods(c, ni, -1);
        if (ni->npods == 0) {
            node_drop(c, ni);
        } else {
            /* Pods still name it; keep their accounting until they go. */
            node_unref(ni->node);
            ni->node = NULL;
            ni->pool = -1;
            ni->generation++;
            c->nodes_ver++;
        }
    }
    cache_unlock(c);
}

void cache_repartition(cache_t *c)
{
    cache_wrlock(c);
    for (int i = 0; i < c->nnodes; i++) {
        node_info_t *ni = c->nodes[i];
        if (!ni->node)
            continue;
        int p = c->partition ? c->partition(c->partition_ud, ni->node) : 0;
        if (p != ni->pool) {
            ni->pool = p;
            ni->generation++;
            c->nodes_ver++;
            reaccount_node(c, ni);
        }
    }
    cache_unlock(c);
}

/* Removes the entry's accounting from its node, if any. */
static void unaccount(cache_t *c, pod_entry_t *e)
{
    if (!e->node)
        return;
    node_info_t *ni = hashmap_get(c->node_map, e->node);
    if (c->account_hook)
        c->account_hook(c->account_ud, e->pod, ni, -1);
    if (ni) {
        if (node_info_remove_pod(ni, e->pod->uid))
            fw_topo_index_pod(c->tindex, e->pod, ni->node, -1);
        ni->generation++;
        if (!ni->node && ni->npods == 0)
            node_drop(c, ni);
    }
    free(e->node);
    e->node = NULL;
}

static int has_required_anti(const pod_t *p)
{
    return p->interpod && p->interpod->nanti_req > 0;
}

static void epoch_bump(cache_t *c)
{
    __atomic_add_fetch(&c->interpod_epoch, 1, __ATOMIC_ACQ_REL);
}

uint64_t cache_interpod_epoch(cache_t *c)
{
    return __atomic_load_n(&c->interpod_epoch, __ATOMIC_ACQUIRE);
}

static void account(cache_t *c, pod_entry_t *e, const char *node)
{
    node_info_t *ni = node_get_or_add(c, node);
    if (has_required_anti(e->pod))
        epoch_bump(c);
    node_info_add_pod(ni, e->pod);
    fw_topo_index_pod(c->tindex, e->pod, ni->node, +1);
    ni->generation++;
    e->node = util_strdup(node);
    if (c->account_hook)
        c->account_hook(c->account_ud, e->pod, ni, +1);
}

static int nomination_drop_locked(cache_t *c, const char *uid);
static int has_nomination(const cache_t *c, const char *uid);
static const char *nominated_node_locked(const cache_t *c, const char *uid);
static void nomination_add_locked(cache_t *c, pod_t *p, const char *node);

static const char *nominated_field(const pod_t *p)
{
    return p && p->nominated_node ? p->nominated_node : "";
}

/* A pending pod of ours whose status.nominatedNodeName changed from was:
 * the nomination follows the field, as kube-scheduler's nominator follows
 * it on an update that changes it. An update that leaves the field as it
 * was leaves the nomination alone: this scheduler nominates (and drops)
 * here first and writes the field after, so the field lags; the same lag
 * makes a change the cache has moved past since (it holds a third node)
 * stale. A node unknown or gone holds no room: nothing is restored there;
 * nor does a pod being deleted. */
static void nomination_follow_locked(cache_t *c, pod_t *p, const char *was)
{
    const char *want = nominated_field(p);
    if (p->deleting) {
        nomination_drop_locked(c, p->uid); /* going: room for nobody */
        return;
    }
    if (strcmp(was, want) == 0)
        return;
    const char *held = nominated_node_locked(c, p->uid);
    if (held && (strcmp(held, want) == 0 || strcmp(held, was) != 0))
        return; /* the field caught up with the cache, or lags behind it */
    node_info_t *ni = want[0] ? hashmap_get(c->node_map, want) : NULL;
    if (!ni || !ni->node) {
        nomination_drop_locked(c, p->uid);
        return;
    }
    nomination_add_locked(c, p, want);
    /* Restored from the field: the hook charges the room as the live
     * preemption that made it did (the Queues' reserve, fairshare/row.c). */
    if (c->nom_hook && has_nomination(c, p->uid))
        c->nom_hook(c->nom_ud, p, ni, +1);
}

cache_pod_state_t cache_upsert_pod(cache_t *c, pod_t *p, cache_pod_state_t *now)
{
    return cache_upsert_pod_ex(c, p, 0, now);
}

cache_pod_state_t cache_upsert_pod_ex(cache_t *c, pod_t *p, int follow_nomination, cache_pod_state_t *now)
{
    cache_wrlock(c);
    pod_entry_t *e = hashmap_get(c->pods, p->uid);
    cache_pod_state_t before = e ? e->state : CPOD_NONE;
    if (!e) {
        e = util_xcalloc(1, sizeof(*e));
        hashmap_put(c->pods, p->uid, e);
    }
    if (before == CPOD_ASSUMED && !pod_is_bound(p) && !pod_is_terminal(p)) {
        /* Our bind is in flight; this is an older or status-only view. */
        if (now)
            *now = CPOD_ASSUMED;
        cache_unlock(c);
        return before;
    }
    unaccount(c, e);
    free(e->nom_was); /* the watch's view replaces our assumption */
    e->nom_was = NULL;
    pod_t *was = e->pod;
    e->pod = pod_ref(p);
    if (pod_is_terminal(p)) {
        e->state = CPOD_TERMINAL;
        nomination_drop_locked(c, p->uid); /* it holds nothing, nor waits for room */
    } else if (pod_is_bound(p)) {
        e->state = CPOD_BOUND;
        account(c, e, p->node_name);
        nomination_drop_locked(c, p->uid);
    } else {
        e->state = CPOD_PENDING;
        e->follow = follow_nomination;
        if (follow_nomination)
            nomination_follow_locked(c, p, before == CPOD_NONE ? "" : nominated_field(was));
    }
    pod_unref(was);
    if (now)
        *now = e->state;
    cache_unlock(c);
    return before;
}

static int has_nomination(const cache_t *c, const char *uid)
{
    return hashmap_get(c->noms_by_uid, uid) != NULL;
}

/* The name of the node uid is nominated to (borrowed), or NULL; lock held. */
static const char *nominated_node_locked(const cache_t *c, const char *uid)
{
    if (!has_nomination(c, uid))
        return NULL;
    for (int i = 0; i < c->nnoms; i++)
        if (strcmp(c->noms[i].pod->uid, uid) == 0)
            return c->noms[i].node;
    return NULL;
}

cache_pod_state_t cache_delete_pod(cache_t *c, const char *uid, pod_t **old, int *pool_of_node)
{
    cache_wrlock(c);
    pod_entry_t *e = hashmap_remove(c->pods, uid);
    cache_pod_state_t st = e ? e->state : CPOD_NONE;
    if (pool_of_node) {
        const char *at = e && e->node ? e->node : nominated_node_locked(c, uid);
        node_info_t *ni = at ? hashmap_get(c->node_map, at) : NULL;
        *pool_of_node = ni ? ni->pool : -1;
    }
    if (e) {
        unaccount(c, e);
        if (old)
            *old = pod_ref(e->pod);
        entry_free(e);
    } else if (old) {
        *old = NULL;
    }
    nomination_drop_locked(c, uid);
    cache_unlock(c);
    return st;
}

pod_t *cache_get_pod(cache_t *c, const char *uid, cache_pod_state_t *state)
{
    cache_rdlock(c);
    pods_lock(c);
    pod_entry_t *e = hashmap_get(c->pods, uid);
    pod_t *p = e ? pod_ref(e->pod) : NULL;
    if (state)
        *state = e ? e->state : CPOD_NONE;
    pods_unlock(c);
    cache_unlock(c);
    return p;
}

uint64_t cache_nodes_version_locked(cache_t *c)
{
    lockorder_assert_held(LO_CACHE);
    return c->nodes_ver;
}

node_info_t *const *cache_nodes_locked(cache_t *c, int *n)
{
    lockorder_assert_held(LO_CACHE);
    *n = c->nnodes;
    return c->nodes;
}

node_info_t *cache_node_locked(cache_t *c, const char *name)
{
    lockorder_assert_held(LO_CACHE);
    return hashmap_get(c->node_map, name);
}

int cache_node_visit(cache_t *c, const char *node, void (*fn)(void *ud, const node_info_t *ni), void *ud)
{
    int rc = -1;
    cache_rdlock(c);
    node_info_t *ni = hashmap_get(c->node_map, node);
    if (ni) {
        cache_node_lock(c, node);
        fn(ud, ni);
        cache_node_unlock(c, node);
        rc = 0;
    }
    cache_unlock(c);
    return rc;
}

int cache_assume_locked(cache_t *c, pod_t *p, const char *node)
{
    lockorder_assert_held_excl(LO_CACHE);
    node_info_t *ni = hashmap_get(c->node_map, node);
    if (!ni || !ni->node)
        return -1;
    pod_entry_t *e = hashmap_get(c->pods, p->uid);
    if (!e) {
        e = util_xcalloc(1, sizeof(*e));
        e->pod = pod_ref(p);
        hashmap_put(c->pods, p->uid, e);
    }
    unaccount(c, e);
    if (e->pod != p) {
        pod_unref(e->pod);
        e->pod = pod_ref(p);
    }
    e->state = CPOD_ASSUMED;
    account(c, e, node);
    const char *held = nominated_node_locked(c, p->uid);
    free(e->nom_was);
    e->nom_was = held ? util_strdup(held) : NULL;
    nomination_drop_locked(c, p->uid);
    return 0;
}

/* Still ours to reserve: known, pending, accounted nowhere. A pod the
 * watch deleted or bound meanwhile must not come back as a ghost. */
static int still_pending(cache_t *c, const char *uid)
{
    pod_entry_t *e = hashmap_get(c->pods, uid);
    return e && e->state == CPOD_PENDING && !e->node;
}

/* The exclusive reserve of a pod with inter-pod constraints (or one whose
 * decision predates an epoch move): write lock, the pod still pending, and
 * a full re-check against the cluster as it is now. */
static int assume_interpod(cache_t *c, pod_t *p, const char *node, int pool, const cache_interpod_t *ip, void *ud)
{
    cache_wrlock(c);
    node_info_t *ni = hashmap_get(c->node_map, node);
    pod_entry_t *e = hashmap_get(c->pods, p->uid);
    int rc = -1;
    if (ni && ni->node && ni->pool == pool && e && e->state == CPOD_PENDING && !e->node && ip->full_fit(ud, ni))
        rc = cache_assume_locked(c, p, node);
    cache_unlock(c);
    return rc;
}

int cache_assume(cache_t *c, pod_t *p, const char *node, int pool, uint64_t generation, cache_fit_fn fit, void *ud)
{
    return cache_assume_ex(c, p, node, pool, generation, NULL, fit, ud);
}

int cache_assume_ex(cache_t *c, pod_t *p, const char *node, int pool, uint64_t generation, const cache_interpod_t *ip,
                    cache_fit_fn fit, void *ud)
{
    cache_rdlock(c);
    if (ip && (ip->exclusive || cache_interpod_epoch(c) != ip->epoch)) {
        cache_unlock(c);
        return assume_interpod(c, p, node, pool, ip, ud);
    }
    if (has_nomination(c, p->uid)) {
        /* Dropping the nomination changes shared lists: exclusive path. */
        cache_unlock(c);
        if (c->gap_hook)
            c->gap_hook(c->gap_ud);
        cache_wrlock(c);
        /* The lock was dropped: re-check that the pod is still pending (a
         * delete in that gap would otherwise leave a ghost entry). */
        node_info_t *ni = hashmap_get(c->node_map, node);
        int rc = -1;
        if (still_pending(c, p->uid) && ni && ni->node && ni->pool == pool &&
            (ni->generation == generation || fit(ud, ni)))
            rc = cache_assume_locked(c, p, node);
        cache_unlock(c);
        return rc;
    }
    node_info_t *ni = hashmap_get(c->node_map, node);
    int rc = -1;
    if (ni) {
        cache_node_lock(c, node);
        if (ni->node && ni->pool == pool && (ni->generation == generation || fit(ud, ni))) {
            pods_lock(c);
            pod_entry_t *e = hashmap_get(c->pods, p->uid);
            if (still_pending(c, p->uid)) {
                if (e->pod != p) {
                    pod_unref(e->pod);
                    e->pod = pod_ref(p);
                }
                e->state = CPOD_ASSUMED;
                e->node = util_strdup(node);
                rc = 0;
            }
            pods_unlock(c);
            if (rc == 0) {
                if (has_required_anti(p))
                    epoch_bump(c); /* callers without ip only */
                node_info_add_pod(ni, p);
                fw_topo_index_pod(c->tindex, p, ni->node, +1);
                ni->generation++;
                if (c->account_hook)
                    c->account_hook(c->account_ud, p, ni, +1);
            }
        }
        cache_node_unlock(c, node);
    }
    cache_unlock(c);
    return rc;
}

void cache_set_assume_gap_hook(cache_t *c, cache_gap_fn fn, void *ud)
{
    c->gap_hook = fn;
    c->gap_ud = ud;
}

void cache_set_account_hook(cache_t *c, cache_account_fn fn, void *ud)
{
    c->account_hook = fn;
    c->account_ud = ud;
}

void cache_set_nomination_hook(cache_t *c, cache_account_fn fn, void *ud)
{
    c->nom_hook = fn;
    c->nom_ud = ud;
}

/* The assumption undone; restore: the nomination it dropped comes back
 * (see cache_unassume), else it goes. Write lock held. */
static void nomination_restore_locked(cache_t *c, pod_entry_t *e, int restore)
{
    char *node = e->nom_was;
    e->nom_was = NULL;
    node_info_t *ni = node && restore ? hashmap_get(c->node_map, node) : NULL;
    if (ni && ni->node) {
        nomination_add_locked(c, e->pod, node);
        if (c->nom_hook && has_nomination(c, e->pod->uid))
            c->nom_hook(c->nom_ud, e->pod, ni, +1);
    }
    free(node);
}

static int forget(cache_t *c, const char *uid, int restore)
{
    cache_wrlock(c);
    pod_entry_t *e = hashmap_get(c->pods, uid);
    int undone = e && e->state == CPOD_ASSUMED;
    if (undone) {
        unaccount(c, e);
        e->state = CPOD_PENDING;
        nomination_restore_locked(c, e, restore);
    }
    cache_unlock(c);
    return undone;
}

int cache_forget(cache_t *c, const char *uid)
{
    return forget(c, uid, 0);
}

int cache_unassume(cache_t *c, const char *uid)
{
    return forget(c, uid, 1);
}

int cache_left_nomination(cache_t *c, const char *uid, const char *node)
{
    cache_rdlock(c);
    const pod_entry_t *e = hashmap_get(c->pods, uid);
    int left = e && e->state == CPOD_ASSUMED && e->nom_was && strcmp(e->nom_was, node) != 0;
    cache_unlock(c);
    return left;
}

fw_topo_index_t *cache_topo_index(cache_t *c)
{
    return c->tindex;
}

void cache_interpod_prepare(cache_t *c, const pod_t *pod)
{
    if (!pod->interpod)
        return; /* plain pods need only the registry */
    cache_rdlock(c);
    int ready = fw_topo_index_ready(c->tindex, pod);
    cache_unlock(c);
    if (ready)
        return;
    /* Counting pods reads every node's pod list: exclude the reservers. */
    cache_wrlock(c);
    fw_topo_index_prepare(c->tindex, pod, c->nodes, c->nnodes);
    cache_unlock(c);
}

/* --- nominations: room a preemptor waits for ------------------------------ */

static void noms_rebuild_node(cache_t *c, const char *node)
{
    nom_list_t *l = hashmap_remove(c->noms_by_node, node);
    nom_list_free(l);
    l = NULL;
    for (int i = 0; i < c->nnoms; i++) {
        if (strcmp(c->noms[i].node, node) != 0)
            continue;
        if (!l)
            l = util_xcalloc(1, sizeof(*l));
        if (l->n == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 4;
            l->pods = util_xrealloc(l->pods, (size_t)l->cap * sizeof(*l->pods));
        }
        l->pods[l->n++] = pod_ref(c->noms[i].pod);
    }
    if (l)
        hashmap_put(c->noms_by_node, node, l);
}

/* 1 when uid held a nomination (now dropped). */
/* A nomination of p went: the nomination hook gives back its provisional
 * charge unless p holds a node (accounted: its charge is its own). */
static void nomination_notify_drop(cache_t *c, const pod_t *p)
{
    pod_entry_t *e = hashmap_get(c->pods, p->uid);
    if (c->nom_hook && !(e && e->node))
        c->nom_hook(c->nom_ud, p, NULL, -1);
}

/* Removes uid's nomination; notify: tell the nomination hook when the pod
 * holds no node (a bind or an assumption accounts it first: its charge is
 * its own then). 1 when it had one. */
static int nomination_remove_locked(cache_t *c, const char *uid, int notify)
{
    lockorder_assert_held_excl(LO_CACHE);
    if (!hashmap_remove(c->noms_by_uid, uid))
        return 0;
    for (int i = 0; i < c->nnoms; i++) {
        if (strcmp(c->noms[i].pod->uid, uid) != 0)
            continue;
        char *node = c->noms[i].node;
        pod_t *p = c->noms[i].pod;
        c->noms[i] = c->noms[--c->nnoms];
        noms_rebuild_node(c, node);
        if (notify)
            nomination_notify_drop(c, p);
        pod_unref(p);
        free(node);
        break;
    }
    return 1;
}

static int nomination_drop_locked(cache_t *c, const char *uid)
{
    return nomination_remove_locked(c, uid, 1);
}

/* Write lock held. A preemptor deleted or bound while its victims were
 * being evicted would hold the room for nobody: only a pod still pending
 * is nominated. */
static void nomination_add_locked(cache_t *c, pod_t *p, const char *node)
{
    nomination_remove_locked(c, p->uid, 0); /* replaced: the caller charges the new one */
    if (!still_pending(c, p->uid))
        return;
    if (c->nnoms == c->cap_noms) {
        c->cap_noms = c->cap_noms ? c->cap_noms * 2 : 8;
        c->noms = util_xrealloc(c->noms, (size_t)c->cap_noms * sizeof(*c->noms));
    }
    c->noms[c->nnoms].pod = pod_ref(p);
    c->noms[c->nnoms].node = util_strdup(node);
    c->nnoms++;
    hashmap_put(c->noms_by_uid, p->uid, (void *)1);
    noms_rebuild_node(c, node);
}

/* A node that is gone holds no room: every nomination to it goes. */
static void nominations_drop_node_locked(cache_t *c, const char *node)
{
    int dropped = 0;
    for (int i = 0; i < c->nnoms;) {
        if (strcmp(c->noms[i].node, node) != 0) {
            i++;
            continue;
        }
        hashmap_remove(c->noms_by_uid, c->noms[i].pod->uid);
        nomination_notify_drop(c, c->noms[i].pod);
        pod_unref(c->noms[i].pod);
        free(c->noms[i].node);
        c->noms[i] = c->noms[--c->nnoms];
        dropped = 1;
    }
    if (dropped)
        noms_rebuild_node(c, node);
}

void cache_nominate(cache_t *c, pod_t *p, const char *node)
{
    cache_wrlock(c);
    nomination_add_locked(c, p, node);
    cache_unlock(c);
}

int cache_restore_nominations(cache_t *c)
{
    int n = 0;
    cache_wrlock(c);
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(c->pods, &it, &k, &v);) {
        pod_entry_t *e = v;
        if (e->state != CPOD_PENDING || !e->follow || !nominated_field(e->pod)[0] || has_nomination(c, k))
            continue;
        nomination_follow_locked(c, e->pod, "");
        n += has_nomination(c, k);
    }
    cache_unlock(c);
    return n;
}

int cache_nomination_of(cache_t *c, const char *uid, char *node, size_t len)
{
    cache_rdlock(c);
    const char *held = nominated_node_locked(c, uid);
    if (held && node && len)
        snprintf(node, len, "%s", held);
    cache_unlock(c);
    return held != NULL;
}

int cache_is_nominated(cache_t *c, const char *uid)
{
    cache_rdlock(c);
    int yes = has_nomination(c, uid);
    cache_unlock(c);
    return yes;
}

int cache_clear_nomination(cache_t *c, const char *uid)
{
    cache_wrlock(c);
    int had = nomination_drop_locked(c, uid);
    cache_unlock(c);
    return had;
}

int cache_nominated_locked(cache_t *c, const char *node, pod_t *const **pods)
{
    lockorder_assert_held(LO_CACHE);
    if (c->nnoms == 0)
        return 0;
    nom_list_t *l = hashmap_get(c->noms_by_node, node);
    if (!l)
        return 0;
    *pods = l->pods;
    return l->n;
}

/* --- snapshots and stats --------------------------------------------------- */

/* A reference to every pod whose state's bit is in mask (1u << state), in
 * *out (malloc'd); their count. Called under the cache's lock. */
static int pods_ref_in(cache_t *c, unsigned mask, pod_t ***out)
{
    pods_lock(c);
    pod_t **ps = util_xcalloc(hashmap_len(c->pods) + 1, sizeof(*ps));
    int m = 0;
    const char *key;
    void *v;
    for (size_t it = 0; hashmap_next(c->pods, &it, &key, &v);) {
        pod_entry_t *e = v;
        if (mask & (1u << e->state))
            ps[m++] = pod_ref(e->pod);
    }
    pods_unlock(c);
    *out = ps;
    return m;
}

void cache_snapshot(cache_t *c, node_t ***nodes, int *nn, pod_t ***pods, int *np)
{
    cache_rdlock(c);
    node_t **ns = util_xcalloc((size_t)c->nnodes + 1, sizeof(*ns));
    int k = 0;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->node)
            ns[k++] = node_ref(c->nodes[i]->node);
    *nodes = ns;
    *nn = k;
    *np = pods_ref_in(c, ~(1u << CPOD_TERMINAL), pods);
    cache_unlock(c);
}

void cache_free_snapshot(node_t **nodes, int nn, pod_t **pods, int np)
{
    for (int i = 0; i < nn; i++)
        node_unref(nodes[i]);
    for (int i = 0; i < np; i++)
        pod_unref(pods[i]);
    free(nodes);
    free(pods);
}

void cache_get_stats(cache_t *c, cache_stats_t *s)
{
    memset(s, 0, sizeof(*s));
    cache_rdlock(c);
    s->nodes = c->nnodes;
    s->nominated = c->nnoms;
    pods_lock(c);
    const char *key;
    void *v;
    for (size_t it = 0; hashmap_next(c->pods, &it, &key, &v);) {
        pod_entry_t *e = v;
        s->pods++;
        if (e->state == CPOD_PENDING)
            s->pending++;
        else if (e->state == CPOD_ASSUMED)
            s->assumed++;
        else if (e->state == CPOD_BOUND)
            s->bound++;
    }
    pods_unlock(c);
    cache_unlock(c);
}

void cache_each_placed(cache_t *c, cache_placed_fn fn, void *ud)
{
    cache_rdlock(c);
    pods_lock(c);
    const char *key;
    void *v;
    for (size_t it = 0; hashmap_next(c->pods, &it, &key, &v);) {
        pod_entry_t *e = v;
        if (e->state == CPOD_ASSUMED && e->node)
            fn(ud, e->pod, e->node, 0);
    }
    pods_unlock(c);
    for (int i = 0; i < c->nnoms; i++)
        fn(ud, c->noms[i].pod, c->noms[i].node, 1);
    cache_unlock(c);
}

int cache_pending_pods(cache_t *c, pod_t ***out)
{
    cache_rdlock(c);
    int m = pods_ref_in(c, 1u << CPOD_PENDING, out);
    cache_unlock(c);
    return m;
}
