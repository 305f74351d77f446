/* test_lockorder.c -- the lock hierarchy check (util/lockorder.h): the order
 * of the list passes, an inversion, a class taken twice, a release of a lock
 * not held and a missing "X held" abort (in a forked child). The check is
 * compiled in the sanitizer builds only; the plain build skips these. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache.h"
#include "util/lockorder.h"

static void need_check(void)
{
    if (!LOCKORDER_ENABLED)
        skip(); /* plain build: the check compiles to nothing */
}

/* Runs fn in a child with its stderr captured into err; returns the wait
 * status. */
static int in_child(void (*fn)(void), char *err, size_t errlen)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < errlen && (r = read(fds[0], err + n, errlen - 1 - n)) > 0)
        n += (size_t)r;
    char sink[4096];
    while (read(fds[0], sink, sizeof(sink)) > 0) {
    }
    err[n] = 0;
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void expect_abort(void (*fn)(void), const char *what, const char *rank)
{
    static char err[1 << 16];
    int st = in_child(fn, err, sizeof(err));
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT)
        fail_msg("child did not abort (status %d); stderr:\n%s", st, err);
    if (!strstr(err, what) || !strstr(err, rank))
        fail_msg("expected \"%s\" about %s; stderr:\n%s", what, rank, err);
}

static void expect_exit0(void (*fn)(void))
{
    static char err[1 << 16];
    int st = in_child(fn, err, sizeof(err));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("child failed (status %d); stderr:\n%s", st, err);
}

static void test_names(void **state)
{
    (void)state;
    assert_non_null(strstr(lockorder_name(LO_CACHE), "LO_CACHE"));
    assert_non_null(strstr(lockorder_name(LO_FAIRSHARE), "fair-share"));
    assert_non_null(strstr(lockorder_name(LO_NRANKS), "not a rank"));
    /* The documented edges, as ranks. */
    assert_true(LO_CACHE < LO_CACHE_STRIPE && LO_CACHE_STRIPE < LO_CACHE_PODS && LO_CACHE_PODS < LO_TOPO_INDEX);
    assert_true(LO_CACHE < LO_PDB && LO_PDB < LO_POOLS);
    assert_true(LO_QUEUE < LO_GANG && LO_GANG < LO_FAIRSHARE && LO_PDB < LO_GANG);
    assert_true(LO_CACHE < LO_VOLUME && LO_CACHE < LO_OWNERS && LO_CACHE < LO_GPU_RES && LO_CACHE < LO_CONSOL);
}

/* The whole list in order, then released out of order: passes. */
static void whole_list(void)
{
    for (int r = 0; r < LO_NRANKS; r++)
        lockorder_acquire((lo_rank_t)r);
    if (lockorder_held_count() != LO_NRANKS)
        _exit(3);
    lockorder_assert_held_excl(LO_CACHE);
    lockorder_assert_held(LO_FAIRSHARE);
    for (int r = 0; r < LO_NRANKS; r += 2)
        lockorder_release((lo_rank_t)r);
    for (int r = LO_NRANKS - 1; r >= 0; r--)
        if (r % 2)
            lockorder_release((lo_rank_t)r);
    if (lockorder_held_count() != 0)
        _exit(4);
}

static void test_right_order_passes(void **state)
{
    (void)state;
    need_check();
    expect_exit0(whole_list);
    /* And here, with real locks, as the scheduler takes them. */
    pthread_rwlock_t cl = PTHREAD_RWLOCK_INITIALIZER;
    pthread_mutex_t stripe = PTHREAD_MUTEX_INITIALIZER, q = PTHREAD_MUTEX_INITIALIZER, fs = PTHREAD_MUTEX_INITIALIZER;
    lo_rwlock_rdlock(&cl, LO_CACHE);
    lo_mutex_lock(&stripe, LO_CACHE_STRIPE);
    lo_mutex_lock(&fs, LO_FAIRSHARE);
    assert_int_equal(lockorder_held_count(), 3);
    lo_mutex_unlock(&stripe, LO_CACHE_STRIPE);
    lo_mutex_unlock(&fs, LO_FAIRSHARE);
    lo_rwlock_unlock(&cl, LO_CACHE);
    lo_mutex_lock(&q, LO_QUEUE);
    lo_mutex_lock(&fs, LO_FAIRSHARE);
    lo_mutex_unlock(&fs, LO_FAIRSHARE);
    lo_mutex_unlock(&q, LO_QUEUE);
    assert_int_equal(lockorder_held_count(), 0);
}

static pthread_mutex_t inv_a = PTHREAD_MUTEX_INITIALIZER, inv_b = PTHREAD_MUTEX_INITIALIZER;

/* fair-share store (innermost) held, then a queue's mutex: aborts before
 * blocking, so a deadlock shows as this report instead of a hang. */
static void inversion(void)
{
    lo_mutex_lock(&inv_a, LO_FAIRSHARE);
    lo_mutex_lock(&inv_b, LO_QUEUE);
}

static void inversion_cache(void)
{
    lockorder_acquire(LO_POOLS);
    lockorder_acquire_shared(LO_CACHE);
}

static void test_inversion_aborts(void **state)
{
    (void)state;
    need_check();
    expect_abort(inversion, "lock order inversion", "LO_QUEUE");
    expect_abort(inversion, "lock order inversion", "LO_FAIRSHARE"); /* the held one, with where it was taken */
    expect_abort(inversion_cache, "lock order inversion", "LO_CACHE");
}

static void twice(void)
{
    lockorder_acquire(LO_CACHE_STRIPE);
    lockorder_acquire(LO_CACHE_STRIPE);
}

static void cache_read_twice(void)
{
    lockorder_acquire_shared(LO_CACHE);
    lockorder_acquire_shared(LO_CACHE); /* deadlocks behind a waiting writer */
}

static void release_unheld(void)
{
    lockorder_acquire(LO_QUEUE);
    lockorder_release(LO_GANG);
}

static void test_same_class_and_release_abort(void **state)
{
    (void)state;
    need_check();
    expect_abort(twice, "already held", "LO_CACHE_STRIPE");
    expect_abort(cache_read_twice, "already held", "LO_CACHE");
    expect_abort(release_unheld, "releasing a lock not held", "LO_GANG");
}

static int part(void *ud, const node_t *node)
{
    (void)ud;
    (void)node;
    return 0;
}

/* cache_nodes_locked's contract: the cache lock held. */
static void nodes_unlocked(void)
{
    cache_t *c = cache_new(part, NULL);
    int n;
    cache_nodes_locked(c, &n);
}

static void assume_under_read_lock(void)
{
    cache_t *c = cache_new(part, NULL);
    cache_rdlock(c);
    cache_assume_locked(c, NULL, "n1"); /* needs the write lock */
}

static void test_held_asserts(void **state)
{
    (void)state;
    need_check();
    expect_abort(nodes_unlocked, "not held", "LO_CACHE");
    expect_abort(assume_under_read_lock, "not held exclusively", "LO_CACHE");
    cache_t *c = cache_new(part, NULL);
    int n = -1;
    cache_rdlock(c);
    cache_nodes_locked(c, &n);
    lockorder_assert_held(LO_CACHE);
    cache_unlock(c);
    assert_int_equal(n, 0);
    assert_int_equal(lockorder_held_count(), 0);
    cache_free(c);
}

static void *take_cache(void *ud)
{
    (void)ud;
    lockorder_acquire(LO_CACHE);
    lockorder_release(LO_CACHE);
    return (void *)(intptr_t)lockorder_held_count();
}

/* Each thread keeps its own list: one holding the cache lock does not stop
 * another from taking the innermost lock, nor the reverse. */
static void test_per_thread(void **state)
{
    (void)state;
    need_check();
    lockorder_acquire(LO_FAIRSHARE);
    pthread_t t;
    void *rv = (void *)1;
    assert_int_equal(pthread_create(&t, NULL, take_cache, NULL), 0);
    pthread_join(t, &rv);
    assert_int_equal((intptr_t)rv, 0);
    assert_int_equal(lockorder_held_count(), 1);
    lockorder_release(LO_FAIRSHARE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_right_order_passes),
        cmocka_unit_test(test_inversion_aborts),
        cmocka_unit_test(test_same_class_and_release_abort),
        cmocka_unit_test(test_held_asserts),
        cmocka_unit_test(test_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
