/* nodematch.c -- a node constraint by label values (nodematch.h). */
#include <stdlib.h>
#include <string.h>

#include "framework/nodematch.h"
#include "util/util.h"

void fw_node_match_free(fw_node_match_t *m)
{
    for (int i = 0; i < m->n; i++) {
        free(m->keys[i]);
        free(m->values[i]);
    }
    m->n = 0;
}

int fw_node_match(const fw_node_match_t *m, const node_t *n)
{
    if (!n)
        return 0;
    for (int i = 0; i < m->n; i++) {
        const char *v = labels_get(&n->labels, m->keys[i]);
        if (strcmp(v ? v : "", m->values[i]) != 0)
            return 0;
    }
    return 1;
}

void fw_node_match_copy(fw_node_match_t *dst, const fw_node_match_t *src)
{
    for (int i = 0; i < src->n; i++) {
        dst->keys[i] = util_strdup(src->keys[i]);
        dst->values[i] = util_strdup(src->values[i]);
    }
    dst->n = src->n;
}
