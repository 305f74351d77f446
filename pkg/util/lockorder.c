/* lockorder.c -- per-thread bookkeeping of the ranks held (lockorder.h). */
#include "util/lockorder.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const rank_names[LO_NRANKS] = {
#define LOCKORDER_NAME(name, desc) "LO_" #name " (" desc ")",
    LOCKORDER_RANKS(LOCKORDER_NAME)
#undef LOCKORDER_NAME
};

const char *lockorder_name(lo_rank_t rank)
{
    return (unsigned)rank < LO_NRANKS ? rank_names[rank] : "LO_? (not a rank)";
}

#ifdef AISCHED_LOCKCHECK

#include <execinfo.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LO_SANITIZER 1
#include <sanitizer/common_interface_defs.h>
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LO_SANITIZER 1
#include <sanitizer/common_interface_defs.h>
#endif
#endif

#define LO_MAX_HELD LO_NRANKS /* each rank at most once */
#define LO_FRAMES   6         /* where a held lock was taken: this many callers */

typedef struct held {
    lo_rank_t rank;
    int excl;
    void *pc[LO_FRAMES];
} held_t;

static _Thread_local held_t held[LO_MAX_HELD];
static _Thread_local int nheld;

/* The callers of the lock wrapper, by frame pointers (the sanitizer builds
 * keep them): cheap enough for every acquisition, unlike backtrace(3). A
 * frame that does not look like one ends the walk. */
__attribute__((noinline, no_sanitize_address)) static void callers(void **pc, int n)
{
    void **fp = __builtin_frame_address(0);
    int i = 0;
    for (int depth = 0; fp && i < n && depth < n + 4; depth++) {
        void **next = fp[0];
        void *ret = fp[1];
        if (!ret)
            break;
        if (depth >= 1) /* skip lockorder_acquire_mode itself */
            pc[i++] = ret;
        if ((uintptr_t)next <= (uintptr_t)fp || (uintptr_t)next - (uintptr_t)fp > (1u << 20) ||
            ((uintptr_t)next & (sizeof(void *) - 1)))
            break;
        fp = next;
    }
    for (; i < n; i++)
        pc[i] = NULL;
}

static void print_pc(void *pc)
{
#ifdef LO_SANITIZER
    char buf[512];
    __sanitizer_symbolize_pc((char *)pc - 1, "%p %F %L", buf, sizeof(buf));
    fprintf(stderr, "        %s\n", buf);
#else
    fflush(stderr);
    backtrace_symbols_fd(&pc, 1, STDERR_FILENO);
#endif
}

static void print_stack(void)
{
    fflush(stderr);
#ifdef LO_SANITIZER
    __sanitizer_print_stack_trace();
#else
    void *bt[32];
    int n = backtrace(bt, 32);
    backtrace_symbols_fd(bt, n, STDERR_FILENO);
#endif
}

static void print_held(void)
{
    if (nheld == 0)
        fprintf(stderr, "lockorder: this thread holds no lock of the hierarchy\n");
    for (int i = 0; i < nheld; i++) {
        fprintf(stderr, "lockorder: held #%d: %s%s, taken at:\n", i, lockorder_name(held[i].rank),
                held[i].excl ? "" : " (shared)");
        for (int j = 0; j < LO_FRAMES && held[i].pc[j]; j++)
            print_pc(held[i].pc[j]);
    }
}

__attribute__((noreturn)) static void fail(const char *what, lo_rank_t rank, int excl)
{
    fprintf(stderr, "lockorder: %s: %s%s\n", what, lockorder_name(rank), excl ? "" : " (shared)");
    print_held();
    fprintf(stderr, "lockorder: at:\n");
    print_stack();
    fprintf(stderr, "lockorder: the hierarchy is LOCKORDER_RANKS in pkg/util/lockorder.h\n");
    fflush(stderr);
    abort();
}

void lockorder_acquire_mode(lo_rank_t rank, int excl)
{
    if ((unsigned)rank >= LO_NRANKS)
        fail("acquiring an unknown rank", rank, excl);
    for (int i = 0; i < nheld; i++) {
        if (held[i].rank > rank)
            fail("lock order inversion: acquiring a lock that comes before one held", rank, excl);
        if (held[i].rank == rank)
            fail("acquiring a lock of a rank already held (same class twice)", rank, excl);
    }
    held_t *h = &held[nheld];
    callers(h->pc, LO_FRAMES); /* not a tail call: this frame stays on the stack */
    h->rank = rank;
    h->excl = excl;
    nheld++;
}

void lockorder_release(lo_rank_t rank)
{
    for (int i = nheld - 1; i >= 0; i--) {
        if (held[i].rank != rank)
            continue;
        for (int j = i; j < nheld - 1; j++)
            held[j] = held[j + 1];
        nheld--;
        return;
    }
    fail("releasing a lock not held", rank, 1);
}

void lockorder_assert_held_mode(lo_rank_t rank, int excl)
{
    for (int i = 0; i < nheld; i++)
        if (held[i].rank == rank && (held[i].excl || !excl))
            return;
    fail(excl ? "lock not held exclusively where the contract says it is"
              : "lock not held where the contract says it is",
         rank, excl);
}

int lockorder_held_count(void)
{
    return nheld;
}

#endif
