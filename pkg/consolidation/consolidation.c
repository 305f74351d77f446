/* consolidation.c -- the fewest-moves plan that unfragments free GPUs. */
#include <stdlib.h>
#include <string.h>

#include "consolidation/consolidation.h"
#include "preemption/preemption.h"
#include "util/util.h"

static int64_t gpus_of(const pod_t *p)
{
    return res_get_scalar(&p->requests, RES_GPU);
}

void consol_free_gpus(node_info_t *const *nodes, int n, int64_t *total, int64_t *best_node)
{
    *total = *best_node = 0;
    for (int i = 0; i < n; i++) {
        if (!nodes[i]->node)
            continue;
        int64_t f =
            res_get_scalar(&nodes[i]->node->allocatable, RES_GPU) - res_get_scalar(&nodes[i]->requested, RES_GPU);
        if (f <= 0)
            continue;
        *total += f;
        if (f > *best_node)
            *best_node = f;
    }
}

static int by_gpus_desc(const void *a, const void *b)
{
    const pod_t *x = *(pod_t *const *)a, *y = *(pod_t *const *)b;
    int64_t gx = gpus_of(x), gy = gpus_of(y);
    if (gx != gy)
        return gx > gy ? -1 : 1;
    return strcmp(x->uid, y->uid);
}

/* Places movers[0..k) on nodes other than t, largest first, first fit;
 * where[] gets each destination. Undoes nothing: the caller does. Returns
 * how many were placed. */
static int place_movers(node_info_t **nodes, int n, int t, pod_t **movers, int k, consol_fit_fn fit, void *ud,
                        int *where)
{
    for (int i = 0; i < k; i++) {
        int j;
        for (j = 0; j < n; j++)
            if (j != t && nodes[j]->node && fit(ud, movers[i], nodes[j]))
                break;
        if (j == n)
            return i;
        node_info_add_pod(nodes[j], movers[i]);
        where[i] = j;
    }
    return k;
}

/* The fewest of t's movable pods (largest first) whose moves let pod fit
 * t; 0 when none up to max. *k and where[] describe the moves. */
static int try_target(node_info_t **nodes, int n, int t, pod_t *pod, int max, consol_fit_fn fit,
                      consol_movable_fn movable, void *ud, pod_t ***movers_out, int *k_out, int **where_out)
{
    node_info_t *ni = nodes[t];
    pod_t **c = util_xcalloc((size_t)ni->npods + 1, sizeof(*c));
    int nc = 0;
    for (int i = 0; i < ni->npods; i++)
        if (gpus_of(ni->pods[i]) > 0 && preempt_removable(ni->pods[i], ni->name) && movable(ud, ni->pods[i]))
            c[nc++] = pod_ref(ni->pods[i]);
    qsort(c, (size_t)nc, sizeof(*c), by_gpus_desc);
    int *where = util_xcalloc((size_t)nc + 1, sizeof(*where));
    int found = 0, k;
    for (k = 1; k <= nc && k <= max && !found; k++) {
        for (int i = 0; i < k; i++)
            node_info_remove_pod(ni, c[i]->uid);
        if (fit(ud, pod, ni)) {
            int placed = place_movers(nodes, n, t, c, k, fit, ud, where);
            found = placed == k;
            for (int i = 0; i < placed; i++)
                node_info_remove_pod(nodes[where[i]], c[i]->uid);
        }
        for (int i = 0; i < k; i++)
            node_info_add_pod(ni, c[i]);
    }
    if (!found) {
        for (int i = 0; i < nc; i++)
            pod_unref(c[i]);
        free(c);
        free(where);
        return 0;
    }
    k--; /* the loop counted past the k that worked */
    for (int i = k; i < nc; i++)
        pod_unref(c[i]);
    *movers_out = c;
    *k_out = k;
    *where_out = where;
    return 1;
}

int consol_plan(node_info_t **nodes, int n, pod_t *pod, int max_moves, consol_fit_fn fit, consol_movable_fn movable,
                void *ud, consol_plan_t *out)
{
    memset(out, 0, sizeof(*out));
    out->target = -1;
    for (int t = 0; t < n; t++) {
        if (!nodes[t]->node)
            continue;
        pod_t **movers;
        int k, *where;
        int max = out->target >= 0 ? out->nmoves : max_moves; /* only fewer (or equal) moves can win */
        if (!try_target(nodes, n, t, pod, max, fit, movable, ud, &movers, &k, &where))
            continue;
        int64_t g = 0;
        for (int i = 0; i < k; i++)
            g += gpus_of(movers[i]);
        int wins = out->target < 0 || k < out->nmoves || (k == out->nmoves && g < out->gpus_moved) ||
                   (k == out->nmoves && g == out->gpus_moved && strcmp(nodes[t]->name, nodes[out->target]->name) < 0);
        if (wins) {
            consol_plan_clear(out);
            out->target = t;
            out->moves = util_xcalloc((size_t)k, sizeof(*out->moves));
            for (int i = 0; i < k; i++)
                out->moves[i] = (consol_move_t){ movers[i], where[i] };
            out->nmoves = k;
            out->gpus_moved = g;
        } else {
            for (int i = 0; i < k; i++)
                pod_unref(movers[i]);
        }
        free(movers);
        free(where);
    }
    return out->target >= 0;
}

void consol_plan_clear(consol_plan_t *p)
{
    for (int i = 0; i < p->nmoves; i++)
        pod_unref(p->moves[i].pod);
    free(p->moves);
    p->moves = NULL;
    p->nmoves = 0;
    p->target = -1;
}
