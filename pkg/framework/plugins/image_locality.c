/* image_locality.c -- ImageLocality: favours nodes that already hold the
 * pod's container images, by size, scaled by how many nodes hold each image
 * (kube-scheduler v1.20 imagelocality). */
#include <stdlib.h>
#include "framework/plugins/plugins.h"
#include "util/util.h"

#define MB                   (1024LL * 1024)
#define MIN_THRESHOLD        (23 * MB)
#define MAX_CONTAINER_THRESH (1000 * MB)

/* PreScore's count, per container, of the cluster's nodes holding its image. */
typedef struct il_state {
    int total_nodes;
    int ncontainers;
    int counts[];
} il_state_t;

static void il_pre_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, node_info_t *const *nodes, int n)
{
    const fw_cluster_t *cl = cycle_state_cluster(cs);
    node_info_t *const *all = cl && cl->nnodes > 0 ? cl->nodes : nodes;
    int nall = cl && cl->nnodes > 0 ? cl->nnodes : n;

    if (!node_images_any() || pod->ncontainers == 0) {
        fw_score_uniform(cs, pl, 0); /* no node holds any image: every score is 0 */
        return;
    }
    il_state_t *s = util_xcalloc(1, sizeof(*s) + sizeof(int) * (size_t)pod->ncontainers);

    s->ncontainers = pod->ncontainers;
    for (int i = 0; i < nall; i++) {
        const node_t *node = all[i]->node;
        if (node == NULL)
            continue;
        s->total_nodes++;
        if (node->nimages == 0)
            continue;
        for (int c = 0; c < pod->ncontainers; c++)
            if (node_find_image(node, pod->images[c]))
                s->counts[c]++;
    }
    cycle_state_set_slot(cs, pl, s);
}

/* kube's calculatePriority: the summed image scores clamped to
 * [23MB, 1000MB x containers], scaled to 0..100. */
static int64_t il_priority(int64_t sum, int ncontainers)
{
    int64_t max = MAX_CONTAINER_THRESH * ncontainers;
    if (sum < MIN_THRESHOLD)
        sum = MIN_THRESHOLD;
    else if (sum > max)
        sum = max;
    return (int64_t)FW_MAX_SCORE * (sum - MIN_THRESHOLD) / (max - MIN_THRESHOLD);
}

static int64_t il_score(const fw_plugin_t *pl, cycle_state_t *cs, const pod_t *pod, const node_info_t *ni)
{
    const il_state_t *s = cycle_state_slot(cs, pl);
    int64_t sum = 0;

    if (s == NULL || ni->node == NULL || pod->ncontainers == 0 || s->ncontainers != pod->ncontainers ||
        s->total_nodes == 0)
        return 0;
    for (int c = 0; c < pod->ncontainers; c++) {
        const node_image_t *img = node_find_image(ni->node, pod->images[c]);
        if (img == NULL)
            continue;
        /* scaledImageScore: int64(float64(size) * numNodes/totalNumNodes) */
        double spread = (double)s->counts[c] / (double)s->total_nodes;
        double scaled = (double)img->size * spread;
        /* Past the upper threshold the score is 100 anyway: cap so a huge
         * reported size cannot overflow the sum. */
        if (scaled > (double)(MAX_CONTAINER_THRESH * pod->ncontainers))
            scaled = (double)(MAX_CONTAINER_THRESH * pod->ncontainers);
        sum += (int64_t)scaled;
    }
    return il_priority(sum, pod->ncontainers);
}

void plugin_image_locality(fw_plugin_t *pl)
{
    *pl = (fw_plugin_t){
        .name = "ImageLocality", .pre_score = il_pre_score, .score = il_score, .state_free = free, .weight = 1
    };
}
