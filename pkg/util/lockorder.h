/* lockorder.h -- the scheduler's lock hierarchy, written once, and a
 * per-thread check of it for the sanitizer builds.
 *
 * THE RULE: a thread takes locks in the order of the list below, outermost
 * first. While it holds a lock of rank R it may take only locks of a rank
 * after R; it never takes a lock of rank R again (the rwlocks are not
 * recursive, and no code holds two locks of one class: two node stripes, two
 * scheduling queues), nor one that comes before R. Releasing may happen in
 * any order. A lock that is not in the list is outside the hierarchy: it
 * must be a leaf of its own module (kube client, informers, metrics, leader
 * election, dispatch) and is never held while one of these is taken.
 *
 * Why each edge exists (who takes what under what):
 *  - CACHE -> CACHE_STRIPE -> CACHE_PODS -> TOPO_INDEX: a pool thread
 *    reserves under the cache's read lock holding its node's stripe and the
 *    pod map's mutex; readers of another pool's node take its stripe under
 *    the read lock; the topology index is fed under all three (cache.h).
 *  - CACHE -> POOLS: the cache calls pools_partition under its write lock, and
 *    a filter pass reads pools_home_id under the read lock and a stripe.
 *  - CACHE -> PDB -> POOLS: preemption's victim search holds pdb_mu (no cache
 *    lock) while is_victim reads pools_home_id. pdb_mu and pools_mu are held
 *    briefly; nothing calls into the cache or the API while holding them.
 *  - QUEUE: each scheduling queue's mutex, never taken with pools_mu held
 *    (pools_each_live calls out without it); under it run the QueueSort,
 *    tenant and pick callbacks, which read the gang and fair-share stores.
 *  - GANG: the gang store (gang.h) is taken alone, under pdb_mu while
 *    preemption ranks victims, or under the cache lock or a queue's mutex (a
 *    pod's queue from its PodGroup). Nothing is called out while it is held.
 *  - VOLUME, OWNERS, GPU_RES, CONSOL: stores taken under the cache lock
 *    (volume plugins, PreScore's default spreading, a node's GPU reservation
 *    pods read or marked, node views with the room held for movers) or alone;
 *    the cache is never called while one is held. The GPU reservation store's
 *    mutex is held across no API call, except as a condition wait.
 *  - RESV: the gang reservations (reservation/row.c), taken under the cache lock
 *    and a node stripe by node views (the room held for a gang) or alone;
 *    nothing is called out while it is held (events, queue moves and the
 *    gang store are used after it is released).
 *  - FAIRSHARE: the fair-share store (fairshare.h) is the innermost lock of
 *    the hierarchy proper: taken alone, under the cache lock (the accounting
 *    hook), under a queue's mutex (tenant and pick) and under pdb_mu (reclaim
 *    checks); it is never held while the gang store's is taken.
 *  - The rest are leaves taken with nothing above held, or innermost: the
 *    volume waiter, binder, writer and evictor queues, the set of pods kept
 *    out of the queues (gates.c), the grouper's state (grouper.c: its
 *    PreEnqueue check runs under the held set's mutex, from informer and
 *    pool threads, and calls nothing out), hk_mu, stats_mu, two
 *    process-wide tables (GPU reservation namespace, resource names), and
 *    the PriorityClass values (taken alone, or under pdb_mu in a victim
 *    search), the tenants row's per-pool refresh state (fairshare/row.c:
 *    taken alone by a pool thread's tick, calls nothing out), the
 *    decision records (explain.c: taken alone, calls
 *    nothing out), the HTTP server's route table and its auth cache (each
 *    taken alone on an HTTP connection's thread, nothing called out while
 *    held).
 * A gang's turn (gang_turn_begin/end, gang.h) is not a lock in this list: it
 * is held by one pool thread at a time, taken with no lock held; a thread
 * holds one turn at most and never waits for another while holding it.
 *
 * The check: build with -DAISCHED_LOCKCHECK (the Makefile's asan and tsan
 * variants do) and every wrapped acquisition asserts the rule above, every
 * release that the lock was held, and the functions documented "X held"
 * assert it; a violation prints both paths (where the held lock was taken,
 * and the stack of the acquisition breaking the order) and aborts. Without
 * the macro everything here compiles to the bare pthread call. */
#ifndef AISCHED_LOCKORDER_H
#define AISCHED_LOCKORDER_H

#include <pthread.h>

/* The hierarchy, outermost first (the order of this list is the order). */
#define LOCKORDER_RANKS(X)                                                                                             \
    X(CACHE, "cache rwlock (cache.c)")                                                                                 \
    X(CACHE_STRIPE, "cache node stripe (cache.c)")                                                                     \
    X(CACHE_PODS, "cache pod map (cache.c)")                                                                           \
    X(PDB, "pdb_mu (scheduler)")                                                                                       \
    X(POOLS, "pools_mu (scheduler)")                                                                                   \
    X(QUEUE, "scheduling queue mutex (queue.c)")                                                                       \
    X(GANG, "gang store (gang.c)")                                                                                     \
    X(VOLUME, "volume store rwlock (volume.c)")                                                                        \
    X(OWNERS, "owners store (owners.c)")                                                                               \
    X(TOPO_INDEX, "topology index (topo_index.c)")                                                                     \
    X(GPU_RES, "GPU reservation store (scheduler/gpu.c)")                                                              \
    X(CONSOL, "consolidation row (consolidation/row.c)")                                                               \
    X(RESV, "gang reservations (reservation/row.c)")                                                                   \
    X(FAIRSHARE, "fair-share store (fairshare.c)")                                                                     \
    X(VOLUME_WAIT, "volume waiter (volume/row.c)")                                                                     \
    X(BINDER, "binder (binder.c)")                                                                                     \
    X(WRITER, "API writer (writer.c)")                                                                                 \
    X(EVICTOR, "evictor (evictor.c)")                                                                                  \
    X(HELD, "pods kept out of the queues (scheduler/gates.c)")                                                         \
    X(DRA, "DRA store rwlock (dra/store.c)")                                                                           \
    X(DRA_ROW, "DRA row's held pods and undo list (dra/row.c)")                                                        \
    X(GROUPER, "grouper's pods, owners and PodGroups (grouper/grouper.c)")                                             \
    X(HK, "hk_mu (scheduler.c)")                                                                                       \
    X(STATS, "stats_mu (scheduler)")                                                                                   \
    X(GPU_NS, "GPU reservation namespace (gpu/gpu.c)")                                                                 \
    X(RES_INTERN, "resource name table (resources.c)")                                                                 \
    X(PRIO_CLASSES, "PriorityClass values (prioclass/prioclass.c)")                                                    \
    X(EXPLAIN, "decision records (explain/explain.c)")                                                                 \
    X(HTTP_ROUTES, "HTTP server's route table (server/http.c)")                                                        \
    X(AUTH, "HTTP auth cache and limits (server/auth.c)")

typedef enum {
#define LOCKORDER_ENUM(name, desc) LO_##name,
    LOCKORDER_RANKS(LOCKORDER_ENUM)
#undef LOCKORDER_ENUM
        LO_NRANKS
} lo_rank_t;

/* Human name of a rank (for messages and tests). */
const char *lockorder_name(lo_rank_t rank);

#ifdef AISCHED_LOCKCHECK
#define LOCKORDER_ENABLED 1
/* Before taking a lock of rank: aborts if the thread holds rank or a later
 * one. excl: taken exclusively (a mutex, or a rwlock's write side). */
void lockorder_acquire_mode(lo_rank_t rank, int excl);
/* After releasing a lock of rank: aborts if the thread did not hold it. */
void lockorder_release(lo_rank_t rank);
/* Aborts unless the thread holds a lock of rank (excl: exclusively). */
void lockorder_assert_held_mode(lo_rank_t rank, int excl);
/* How many locks the thread holds (tests). */
int lockorder_held_count(void);
#else
#define LOCKORDER_ENABLED 0
static inline void lockorder_acquire_mode(lo_rank_t rank, int excl)
{
    (void)rank;
    (void)excl;
}
static inline void lockorder_release(lo_rank_t rank)
{
    (void)rank;
}
static inline void lockorder_assert_held_mode(lo_rank_t rank, int excl)
{
    (void)rank;
    (void)excl;
}
static inline int lockorder_held_count(void)
{
    return 0;
}
#endif

#define lockorder_acquire(rank)          lockorder_acquire_mode((rank), 1)
#define lockorder_acquire_shared(rank)   lockorder_acquire_mode((rank), 0)
#define lockorder_assert_held(rank)      lockorder_assert_held_mode((rank), 0)
#define lockorder_assert_held_excl(rank) lockorder_assert_held_mode((rank), 1)

/* Thin wrappers: the pthread call with the check around it. The check runs
 * before blocking, so an inversion aborts instead of deadlocking. */
static inline void lo_mutex_lock(pthread_mutex_t *m, lo_rank_t rank)
{
    lockorder_acquire(rank);
    pthread_mutex_lock(m);
}
static inline void lo_mutex_unlock(pthread_mutex_t *m, lo_rank_t rank)
{
    pthread_mutex_unlock(m);
    lockorder_release(rank);
}
static inline void lo_rwlock_rdlock(pthread_rwlock_t *l, lo_rank_t rank)
{
    lockorder_acquire_shared(rank);
    pthread_rwlock_rdlock(l);
}
static inline void lo_rwlock_wrlock(pthread_rwlock_t *l, lo_rank_t rank)
{
    lockorder_acquire(rank);
    pthread_rwlock_wrlock(l);
}
static inline void lo_rwlock_unlock(pthread_rwlock_t *l, lo_rank_t rank)
{
    pthread_rwlock_unlock(l);
    lockorder_release(rank);
}

#endif
