/* extensions.c -- the table of the scheduling cycle's rows, in the order
 * each extension point runs them (extension.h). Filter and Score plugins
 * are the framework's (framework/), per profile; these rows are the rest
 * of the cycle. */
#include "scheduler/internal.h"

/* Order matters where two rows share a point:
 * pre_enqueue scheduling gates (a gated pod is gated, whatever else),
 *            dynamic resources, workload groups (a pod held for another
 *            reason is grouped once that reason goes);
 * pre_place  consolidation (a moved pod's held node), reservation (what the
 *            set is told of held room), gang (minResources),
 *            topology (the domain for the whole minimum);
 * post_filter lender (a borrower goes home), consolidation (moves lose no
 *            work), preemption, borrowing, reservation (a gang that has
 *            waited long, and fits neither now nor by preemption, holds
 *            nodes), gang (the minimum waits, holding back backfill);
 * pre_bind   volumes (claims bound first), gpu-sharing (slots' pods). */
static const sched_ext_t table[] = {
    { .name = "scheduling-gates", .pre_enqueue = gates_ext_pre_enqueue },
    { .name = "dynamic-resources", .pre_enqueue = dra_ext_pre_enqueue },
    { .name = "workload-groups", .pre_enqueue = grouper_ext_pre_enqueue, .housekeep = grouper_ext_housekeep },
    { .name = "lender", .post_filter = lender_ext_post_filter },
    { .name = "tenants", .admit = tenants_ext_admit, .housekeep = tenants_housekeep },
    { .name = "consolidation", .pre_place = consol_ext_pre_place, .post_filter = consol_ext_post_filter },
    { .name = "preemption", .post_filter = preemption_ext_post_filter },
    { .name = "borrowing", .post_filter = borrowing_ext_post_filter },
    { .name = "reservation",
      .pre_place = resv_ext_pre_place,
      .commit = resv_ext_commit,
      .post_filter = resv_ext_post_filter,
      .housekeep = resv_housekeep },
    { .name = "gang",
      .gate = gang_ext_gate,
      .pre_place = gang_ext_pre_place,
      .commit = gang_ext_commit,
      .post_filter = gang_ext_post_filter,
      .report = gang_ext_report,
      .end = gang_ext_end,
      .housekeep = gang_housekeep },
    { .name = "topology", .pre_place = topology_ext_pre_place },
    { .name = "volumes",
      .reserve = volumes_ext_reserve,
      .unreserve = volumes_ext_unreserve,
      .pre_bind = volumes_ext_pre_bind },
    { .name = "gpu-sharing", .pre_bind = gpu_ext_pre_bind, .housekeep = gpu_housekeep },
};

const sched_ext_t *sched_extensions(int *n)
{
    *n = (int)(sizeof(table) / sizeof(table[0]));
    return table;
}
