/* extensions.c -- the table of the scheduling cycle's rows, in the order
 * each extension point runs them (extension.h). Filter and Score plugins
 * are the framework's (framework/), per profile; these rows are the rest
 * of the cycle. */
#include "consolidation/row.h"
#include "dra/row.h"
#include "fairshare/row.h"
#include "gang/dash.h"
#include "gang/row.h"
#include "gates/row.h"
#include "gpu/dash.h"
#include "gpu/row.h"
#include "grouper/row.h"
#include "minruntime/row.h"
#include "pool/row.h"
#include "prioclass/row.h"
#include "preemption/row.h"
#include "reservation/row.h"
#include "scheduler/internal.h"
#include "topology/row.h"
#include "volume/row.h"

/* What the rows watch: their handlers get the row's room. */
static const sched_watch_t gang_watches[] = {
    { "PodGroup", PODGROUP_API "/podgroups", gang_row_on_podgroup, 1 },
    { 0 },
};
/* Queues order and admit pods: a pod decided before its Queue is listed
 * counts in default, so the list gets a few seconds; without the CRD or
 * an RBAC grant every pod is in default. */
static const sched_watch_wait_t tenants_wait = {
    .kind = "Queue",
    .ms = 5000,
    .served_path = FS_QUEUE_API,
    .served_list = "resources",
    .served_field = "name",
    .served_value = "queues",
    .unserved = "the Queue API is not served (CRD pools/queue-crd.yaml not applied): every pod is in queue default "
                "until it is",
    .late = "Queues not listed yet (RBAC for queues?): pods count in queue default until they are",
};
/* A gang member decided before its PodGroup is listed only waits
 * (PodGroupNotFound) until it is, so a few seconds suffice. */
static const sched_watch_wait_t gang_wait = {
    .kind = "PodGroup",
    .ms = 5000,
    .served_path = "/apis/scheduling.x-k8s.io",
    .served_list = "versions",
    .served_field = "groupVersion",
    .served_value = PODGROUP_VERSION,
    .unserved = "the PodGroup API (" PODGROUP_VERSION ") is not served: pods labelled " GANG_LABEL
                " wait until its CRD (pools/podgroup-crd.yaml) is applied",
    .late = "PodGroups not listed yet; gang members wait until they are",
};
/* PodGroups again (one informer, shared with the gang row's): the
 * grouper's own, the gangs it made. */
static const sched_watch_t grouper_watches[] = {
    { "PodGroup", PODGROUP_API "/podgroups", grouper_row_on_podgroup, 0 },
    { 0 },
};

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
 * pre_bind   volumes (claims bound first), gpu-sharing (slots' pods).
 * victims    order does not matter: the strongest rule decides
 *            (extension.h): gpu-sharing (never a reservation), lender (a
 *            borrower as reclaim), tenants (queue reclaim), preemption
 *            (priority, and every victim's rank);
 * protect    minimum runtime (a victim the rules allow is kept while young,
 *            or while its elastic gang is frozen). */
static const sched_ext_t table[] = {
    { .name = "scheduling-gates", .pre_enqueue = gates_row_pre_enqueue },
    { .name = "dynamic-resources",
      .check = dra_row_check,
      .init = dra_row_init,
      .publish = dra_row_publish,
      .fini = dra_row_fini,
      .start = dra_row_start,
      .watches = dra_row_watches,
      .wait = &dra_row_wait,
      .cluster = dra_row_cluster,
      .pre_enqueue = dra_row_pre_enqueue,
      .reserve = dra_row_reserve,
      .unreserve = dra_row_unreserve,
      .pre_bind = dra_row_pre_bind,
      .housekeep = dra_row_housekeep,
      .node_use = dra_row_node_use,
      .node_doc = dra_row_node_doc,
      .pod_deleted = dra_row_pod_deleted,
      .post_bind = dra_row_post_bind,
      .drain = dra_row_drain },
    { .name = "workload-groups",
      .init = grouper_row_init,
      .fini = grouper_row_fini,
      .start = grouper_row_start,
      .stop = grouper_row_stop,
      .watches = grouper_watches,
      .pre_enqueue = grouper_row_pre_enqueue,
      .housekeep = grouper_row_housekeep,
      .pod_deleted = grouper_row_pod_deleted,
      .pod_settled = grouper_row_pod_deleted },
    { .name = "lender", .post_filter = pool_lender_row_post_filter, .victims = pool_lender_row_victims },
    { .name = "tenants",
      .init = tenants_row_init,
      .fini = tenants_row_fini,
      .watches = tenants_row_watches,
      .wait = &tenants_wait,
      .queues = tenants_row_queues,
      .admit = tenants_row_admit,
      .nominee = tenants_row_nominee,
      .housekeep = tenants_row_housekeep,
      .tick = tenants_row_tick,
      .victims = tenants_row_victims },
    { .name = "consolidation",
      .init = consol_row_init,
      .fini = consol_row_fini,
      .pre_place = consol_row_pre_place,
      .post_filter = consol_row_post_filter,
      .node_view = consol_row_node_view },
    { .name = "preemption", .post_filter = preemption_row_post_filter, .victims = preemption_row_victims },
    { .name = "minimum-runtime",
      .publish = minrt_row_publish,
      .protect = minrt_row_protect,
      .kept = minrt_row_kept,
      .victims_taken = minrt_row_victims_taken,
      .end = minrt_row_end },
    { .name = "borrowing", .post_filter = pool_borrowing_row_post_filter, .post_bind = pool_borrowing_row_post_bind },
    { .name = "reservation",
      .init = resv_row_init,
      .fini = resv_row_fini,
      .node_view = resv_row_node_view,
      .pre_place = resv_row_pre_place,
      .commit = resv_row_commit,
      .post_filter = resv_row_post_filter,
      .housekeep = resv_row_housekeep,
      .on_event = resv_row_on_event,
      .pool_status = resv_row_pool_status },
    { .name = "priority-classes",
      .init = prioclass_row_init,
      .fini = prioclass_row_fini,
      .watches = prioclass_row_watches,
      .publish = prioclass_row_publish },
    { .name = "gang",
      .init = gang_row_init,
      .fini = gang_row_fini,
      .publish = gang_row_publish,
      .watches = gang_watches,
      .wait = &gang_wait,
      .gate = gang_row_gate,
      .pre_place = gang_row_pre_place,
      .commit = gang_row_commit,
      .post_filter = gang_row_post_filter,
      .report = gang_row_report,
      .end = gang_row_end,
      .nominee = gang_row_nominee,
      .housekeep = gang_row_housekeep,
      .expand = gang_row_expand,
      .mates = gang_row_mates,
      .minimum_member = gang_row_minimum_member,
      .group_class = gang_row_group_class,
      .preempting = gang_row_preempting,
      .record = gang_row_record,
      .absent = gang_row_absent,
      .groups = gang_row_groups,
      .group_of = gang_row_group_of,
      .timed = gang_row_timed,
      .pod_seen = gang_row_pod_seen,
      .pod_deleted = gang_row_pod_deleted },
    { .name = "topology",
      .check = topology_row_check,
      .init = topology_row_init,
      .fini = topology_row_fini,
      .publish = topology_row_publish,
      .pre_place = topology_row_pre_place,
      .plan_within = topology_row_plan_within },
    { .name = "volumes",
      .init = volume_row_init,
      .fini = volume_row_fini,
      .watches = volume_row_watches,
      .cluster = volume_row_cluster,
      .reserve = volume_row_reserve,
      .unreserve = volume_row_unreserve,
      .pre_bind = volume_row_pre_bind,
      .start = volume_row_start,
      .stop = volume_row_stop,
      .drain = volume_row_drain },
    { .name = "gpu-sharing",
      .init = gpu_row_init,
      .fini = gpu_row_fini,
      .pre_bind = gpu_row_pre_bind,
      .housekeep = gpu_row_housekeep,
      .timed = gpu_row_timed,
      .pod_deleted = gpu_row_pod_deleted,
      .victims = gpu_row_victims,
      .node_use = gpu_row_node_use,
      .node_doc = gpu_row_node_doc,
      .pod_use = gpu_row_pod_use },
};

const sched_ext_t *sched_extensions(int *n)
{
    *n = (int)(sizeof(table) / sizeof(table[0]));
    return table;
}
