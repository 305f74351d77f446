/* diagnosis.c -- the "0/N nodes are available: ..." summary of why a pod fit
 * nowhere: each reason counted over the nodes that gave it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "framework/framework.h"
#include "util/util.h"

typedef struct reason_count {
    char reason[FW_REASON_LEN];
    int count;
} reason_count_t;

/* A handful of distinct reasons at most (one per taint key and resource
 * name), so a linear list beats a map. */
struct fw_diagnosis {
    reason_count_t *items;
    int n, cap;
};

fw_diagnosis_t *fw_diagnosis_new(void)
{
    return util_xcalloc(1, sizeof(fw_diagnosis_t));
}

void fw_diagnosis_free(fw_diagnosis_t *d)
{
    if (d == NULL)
        return;
    free(d->items);
    free(d);
}

static void count_reason(fw_diagnosis_t *d, const char *reason)
{
    for (int i = 0; i < d->n; i++) {
        if (strcmp(d->items[i].reason, reason) == 0) {
            d->items[i].count++;
            return;
        }
    }
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 8;
        d->items = util_xrealloc(d->items, sizeof(*d->items) * (size_t)d->cap);
    }
    reason_count_t *rc = &d->items[d->n++];
    snprintf(rc->reason, sizeof(rc->reason), "%s", reason);
    rc->count = 1;
}

/* Every reason of a failed node counts: a node short of cpu and memory adds
 * one to each. */
void fw_diagnosis_add(fw_diagnosis_t *d, const fw_status_t *st)
{
    if (st == NULL || st->code == FW_SUCCESS)
        return;
    for (int i = 0; i < st->nreasons && i < FW_MAX_REASONS; i++)
        count_reason(d, st->reasons[i]);
}

static int by_reason(const void *a, const void *b)
{
    return strcmp(((const reason_count_t *)a)->reason, ((const reason_count_t *)b)->reason);
}

/* Sorted by reason text. (kube-scheduler sorts the "<count> <reason>"
 * strings, which orders by the count's digits first; the contract asks for
 * the reason order: "3 Insufficient cpu, 2 node(s) didn't match ...".) */
char *fw_diagnosis_message(const fw_diagnosis_t *d, int nnodes)
{
    sbuf_t b = { 0 };
    reason_count_t *sorted;

    if (nnodes <= 0)
        return util_strdup("no nodes available to schedule pods");
    sbuf_printf(&b, "0/%d nodes are available", nnodes);
    if (d == NULL || d->n == 0) {
        sbuf_puts(&b, ".");
        return b.data;
    }
    sorted = util_xmalloc(sizeof(*sorted) * (size_t)d->n);
    memcpy(sorted, d->items, sizeof(*sorted) * (size_t)d->n);
    qsort(sorted, (size_t)d->n, sizeof(*sorted), by_reason);
    for (int i = 0; i < d->n; i++)
        sbuf_printf(&b, "%s %d %s", i ? "," : ":", sorted[i].count, sorted[i].reason);
    sbuf_puts(&b, ".");
    free(sorted);
    return b.data;
}
