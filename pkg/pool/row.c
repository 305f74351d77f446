/* row.c -- the lender and borrowing rows, on a pool thread (PostFilter):
 * a borrower that no longer fits its lender goes home; a set that fits
 * nowhere at home, and made no room there, borrows from the sharing pool
 * where its minimum fits with the most idle units of its scarcest kind,
 * then the fewest tasks (design 002, one rule for a pod and a gang). The
 * pools and their nodes are the core's, asked through the services. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "pool/pool.h"
#include "pool/row.h"
#include "util/log.h"
#include "util/util.h"

/* --- the lender row --------------------------------------------------- */

ext_rc_t pool_lender_row_post_filter(const sched_row_t *row, pod_set_t *set)
{
    const sched_services_t *svc = row->svc;
    if (!set->items[0]->borrower)
        return EXT_NEXT;
    pod_set_step(set, "lender", "returned home", "a borrower that no longer fits pool %s goes back to its own",
                 set->pool_name);
    LOG_D("borrower pod=%s (%d in its set) no longer fits pool %s; back to its pool", set->items[0]->pod->key, set->n,
          set->pool_name);
    for (int i = 0; i < set->n; i++) {
        queue_item_t *it = set->items[i];
        set->items[i] = NULL;
        if (!it)
            continue;
        /* Marked (this row's round mark) so that it waits at home instead
         * of bouncing between pools: the borrowing row skips it, and it
         * waits out a backoff if it fails there. */
        it->borrower = 0;
        sched_round_mark_set(row, it);
        svc->move_item(row->core, set->pool_id, svc->home_pool(row->core, it->pod), it);
    }
    set->outcome = SET_MOVED;
    return EXT_DONE;
}

/* --- lender choice ---------------------------------------------------- */

static int64_t free_of(int64_t alloc, int64_t used)
{
    return alloc > used ? alloc - used : 0;
}

/* "The sharing pool with the most idle resources": the absolute free
 * amount of the kind the pod needs most rarely, GPU, else CPU, else
 * memory. A fraction would drain a small empty pool before a large
 * half-empty one. */
int64_t lender_idle(const resources_t *alloc, const resources_t *used, const resources_t *req)
{
    if (res_get_scalar(req, RES_GPU) > 0)
        return free_of(res_get_scalar(alloc, RES_GPU), res_get_scalar(used, RES_GPU));
    if (req->milli_cpu > 0 || req->memory == 0)
        return free_of(alloc->milli_cpu, used->milli_cpu);
    return free_of(alloc->memory, used->memory);
}

int lender_better(int64_t idle_a, int tasks_a, int64_t idle_b, int tasks_b)
{
    return idle_a > idle_b || (idle_a == idle_b && tasks_a < tasks_b);
}

typedef struct lender_score {
    int64_t idle; /* free amount of the set's scarcest requested kind */
    int tasks;
    int fits;
} lender_score_t;

/* Whether the set's pool borrows, and the pools it may borrow from. */
typedef struct lenders {
    int self;
    int no_borrow;
    int *ids;
    int n;
} lenders_t;

static void find_lenders(void *ud, const sched_pool_info_t *pools, int n)
{
    lenders_t *l = ud;
    const sched_pool_info_t *P = l->self >= 0 && l->self < n ? &pools[l->self] : NULL;
    l->no_borrow = P ? P->spec->disable_borrowing : 1;
    l->ids = util_xcalloc((size_t)n + 1, sizeof(*l->ids));
    for (int i = 0; P && i < n; i++)
        if (!pools[i].dead && i != l->self && pool_may_borrow(P->spec, pools[i].spec))
            l->ids[l->n++] = pools[i].id;
}

/* A lone pod's score over the live nodes of one pool: it fits when some
 * node passes its filters. */
typedef struct lone_scan {
    int pool;
    framework_t *fw;
    cycle_state_t *cs;
    const pod_t *pod;
    resources_t alloc, used;
    lender_score_t *out;
} lone_scan_t;

static void scan_node(void *ud, const node_info_t *ni)
{
    lone_scan_t *sc = ud;
    if (ni->pool != sc->pool || !ni->node)
        return;
    res_add(&sc->alloc, &ni->node->allocatable);
    res_add(&sc->used, &ni->requested);
    sc->out->tasks += ni->npods;
    fw_status_t st;
    if (!sc->out->fits && framework_filter(sc->fw, sc->cs, sc->pod, ni, &st) == FW_SUCCESS)
        sc->out->fits = 1;
}

static void score_lone(const sched_row_t *row, int pool, const pod_t *pod, framework_t *fw, cycle_state_t *cs,
                       lender_score_t *out)
{
    memset(out, 0, sizeof(*out));
    lone_scan_t sc = { .pool = pool, .fw = fw, .cs = cs, .pod = pod, .out = out };
    res_zero(&sc.alloc);
    res_zero(&sc.used);
    row->svc->nodes_visit(row->core, scan_node, &sc);
    /* A GPU fraction's scarcest kind is the GPU, though it requests none. */
    resources_t req = pod->requests;
    if (gpu_is_fraction(pod))
        res_add_scalar(&req, RES_GPU, 1);
    out->idle = lender_idle(&sc.alloc, &sc.used, &req);
}

/* A gang's minimum: whether it fits whole in the pool's free room, placed
 * member by member on copies (no eviction), and the idle units of its
 * scarcest kind (its members' requests summed). */
static void score_minimum(const sched_row_t *row, int pool, pod_t *const *pods, int n, lender_score_t *out)
{
    resources_t req, alloc, used;
    res_zero(&req);
    for (int i = 0; i < n; i++)
        res_add(&req, &pods[i]->requests);
    memset(out, 0, sizeof(*out));
    out->fits = row->svc->pool_room_for(row->core, pool, pods, n, &alloc, &used, &out->tasks);
    out->idle = lender_idle(&alloc, &used, &req);
}

/* The lender of the set's minimum among ids: those where the whole minimum
 * fits (a pod: some node passes its filters; a gang's minimum: placed
 * member by member on copies of the free room) and its queue's limits let
 * it, the one with the most idle units of its scarcest kind, then the
 * fewest tasks (its pods and the pods queued in it). -1: none. */
static int choose_lender(const sched_row_t *row, const pod_set_t *set, const int *ids, int nids)
{
    const sched_services_t *svc = row->svc;
    const pod_t *pod = set->items[0]->pod;
    framework_t *fw = svc->pod_fw(row->core, pod);
    int gang = set->kind == SET_MINIMUM;
    cycle_state_t *cs = cycle_state_new();
    fw_status_t st;
    fw_status_reset(&st);
    int best = -1;
    lender_score_t bs = { 0 };
    pod_t **pods = pod_set_pods(set);
    if (gang || framework_pre_filter(fw, cs, pod, &st) == FW_SUCCESS) {
        for (int i = 0; i < nids; i++) {
            lender_score_t sc;
            if (gang)
                score_minimum(row, ids[i], pods, set->need, &sc);
            else
                score_lone(row, ids[i], pod, fw, cs, &sc);
            int queued = svc->pool_queued(row->core, ids[i]);
            /* A lender whose queue limit refuses the set would only send
             * it back home (it waited in that lender's queue, or bounced
             * between the two). */
            if (queued < 0 || !sc.fits || !svc->queue_admits(row->core, ids[i], pods, set->need))
                continue; /* gone meanwhile, no room for the set, or over its queue's limit there */
            sc.tasks += queued;
            if (best < 0 || lender_better(sc.idle, sc.tasks, bs.idle, bs.tasks)) {
                best = ids[i];
                bs = sc;
            }
        }
    }
    free(pods);
    cycle_state_free(cs);
    return best;
}

/* --- the borrowing row ------------------------------------------------ */

static void count_borrowings(scheduler_stats_t *st, void *ud)
{
    st->borrowings += (unsigned long)*(const int *)ud;
}

/* The set's items go to lender's queue, marked as borrowers. */
static void send_to(const sched_row_t *row, pod_set_t *set, int lender)
{
    for (int i = 0; i < set->n; i++) {
        queue_item_t *it = set->items[i];
        set->items[i] = NULL;
        if (!it)
            continue;
        it->borrower = 1;
        row->svc->move_item(row->core, set->pool_id, lender, it);
    }
    set->outcome = SET_MOVED;
}

/* The name of a pool by id (pools_visit). */
typedef struct pool_name {
    int id;
    char name[256];
} pool_name_t;

static void name_of(void *ud, const sched_pool_info_t *pools, int n)
{
    pool_name_t *pn = ud;
    if (pn->id >= 0 && pn->id < n)
        snprintf(pn->name, sizeof(pn->name), "%s", pools[pn->id].name);
}

ext_rc_t pool_borrowing_row_post_filter(const sched_row_t *row, pod_set_t *set)
{
    const sched_services_t *svc = row->svc;
    lenders_t l = { .self = set->pool_id };
    svc->pools_visit(row->core, find_lenders, &l);
    ext_rc_t rc = EXT_NEXT;
    int tried = 0, lender_row = svc->row_index(row->core, "lender");
    for (int i = 0; i < set->n; i++)
        tried |= set->items[i] && sched_round_mark(lender_row, set->items[i]);
    if (l.no_borrow || set->need == 0) {
        if (set->need > 0)
            pod_set_step(set, "borrowing", "skipped", "pool %s does not borrow", set->pool_name);
    } else if (tried) {
        /* Back from a lender that no longer fits it: it waits at home. */
        pod_set_step(set, "borrowing", "skipped", "back from a lender that no longer fits it: it waits at home");
    } else {
        int lender = choose_lender(row, set, l.ids, l.n);
        if (lender < 0) {
            pod_set_step(set, "borrowing", "no lender",
                         "no pool that lends has a node where it fits within its queue's limits there");
        } else {
            pool_name_t pn = { .id = lender };
            svc->pools_visit(row->core, name_of, &pn);
            LOG_I("borrowing for pod=%s (%d in its set) from pool=%s for pool=%s", set->items[0]->pod->key, set->n,
                  pn.name, set->pool_name);
            svc->stats(row->core, count_borrowings, &set->n);
            send_to(row, set, lender);
            rc = EXT_DONE;
        }
    }
    free(l.ids);
    return rc;
}

void pool_borrowing_row_post_bind(const sched_row_t *row, const pod_t *pod, const char *node, const char *lender)
{
    if (!lender)
        return;
    char msg[512];
    snprintf(msg, sizeof(msg), "Borrowed node %s of pool %s (may be reclaimed by that pool)", node, lender);
    row->svc->pod_event(row->core, pod, "Normal", "Borrowed", msg);
}

/* Below every home pod: more than any priority (RANK_SCALE x int32) and
 * elastic surplus shift of the preemption row's ranks. */
#define BORROWER_RANK_SHIFT (((int64_t)1) << 38)

void pool_lender_row_victims(const sched_row_t *row, const sched_victim_q_t *q, sched_victim_answer_t *a)
{
    if (row->svc->home_pool(row->core, q->victim) == q->pool_id)
        return;
    a->rule = VICTIM_BY_POOL;
    a->may = 1;
    a->kind = FS_MINRT_RECLAIM;
    a->rank = -BORROWER_RANK_SHIFT;
}
