/* diagnosis.c -- the "0/N nodes are available: ..." summary of why a pod fit
 * nowhere: each reason counted over the nodes that gave it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "framework/framework.h"
#include "util/util.h"

typedef struct reason_count {
    char reason[FW_REASON_LEN];
    int count;
    const char *plugin;               /* static */
    const char *ex[FW_DIAG_EXAMPLES]; /* borrowed, or owned once owned_ex */
    int nex;
} reason_count_t;

/* A handful of distinct reasons at most (one per taint key and resource
 * name), so a linear list beats a map. */
struct fw_diagnosis {
    reason_count_t *items;
    int n, cap;
    int owned_ex; /* the example names are copies (fw_diagnosis_own_examples) */
};

fw_diagnosis_t *fw_diagnosis_new(void)
{
    return util_xcalloc(1, sizeof(fw_diagnosis_t));
}

void fw_diagnosis_free(fw_diagnosis_t *d)
{
    if (d == NULL)
        return;
    for (int i = 0; d->owned_ex && i < d->n; i++)
        for (int k = 0; k < d->items[i].nex; k++)
            free((char *)(uintptr_t)d->items[i].ex[k]);
    free(d->items);
    free(d);
}

static void count_reason(fw_diagnosis_t *d, const char *reason, const char *plugin, const char *node)
{
    for (int i = 0; i < d->n; i++) {
        reason_count_t *rc = &d->items[i];
        if (strcmp(rc->reason, reason) == 0) {
            rc->count++;
            if (node && rc->nex < FW_DIAG_EXAMPLES)
                rc->ex[rc->nex++] = node;
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
    rc->plugin = plugin;
    rc->nex = 0;
    if (node)
        rc->ex[rc->nex++] = node;
}

/* Every reason of a failed node counts: a node short of cpu and memory adds
 * one to each. */
void fw_diagnosis_add(fw_diagnosis_t *d, const fw_status_t *st)
{
    fw_diagnosis_add_node(d, st, NULL);
}

void fw_diagnosis_add_node(fw_diagnosis_t *d, const fw_status_t *st, const char *node)
{
    if (st == NULL || st->code == FW_SUCCESS)
        return;
    for (int i = 0; i < st->nreasons && i < FW_MAX_REASONS; i++)
        count_reason(d, st->reasons[i], st->plugin, d->owned_ex ? NULL : node);
}

void fw_diagnosis_own_examples(fw_diagnosis_t *d)
{
    if (d == NULL || d->owned_ex)
        return;
    for (int i = 0; i < d->n; i++)
        for (int k = 0; k < d->items[i].nex; k++)
            d->items[i].ex[k] = util_strdup(d->items[i].ex[k]);
    d->owned_ex = 1;
}

int fw_diagnosis_len(const fw_diagnosis_t *d)
{
    return d ? d->n : 0;
}

int fw_diagnosis_get(const fw_diagnosis_t *d, int i, const char **reason, const char **plugin, int *count,
                     const char *const **examples, int *nexamples)
{
    if (d == NULL || i < 0 || i >= d->n)
        return -1;
    const reason_count_t *rc = &d->items[i];
    *reason = rc->reason;
    *plugin = rc->plugin;
    *count = rc->count;
    *examples = rc->ex;
    *nexamples = rc->nex;
    return 0;
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
