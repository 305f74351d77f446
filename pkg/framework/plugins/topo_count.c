/* topo_count.c -- topology-pair counts in one hash map, counts encoded in
 * the value pointer (2n+1, never NULL) so present-with-zero is stored. */
#include "framework/plugins/topo_count.h"

#include <stdlib.h>
#include <string.h>
#include "util/util.h"

#define SEP '\x1f'

static void *enc(int64_t n)
{
    return (void *)(uintptr_t)((uint64_t)n * 2u + 1u);
}
static int64_t dec(void *v)
{
    return (int64_t)((uint64_t)(uintptr_t)v - 1u) / 2;
}

/* Joins key and value into buf (or a heap copy when long). */
static char *pair_key(char *buf, size_t cap, const char *key, const char *value)
{
    size_t kl = strlen(key), vl = strlen(value);
    char *p = kl + vl + 2 <= cap ? buf : util_xmalloc(kl + vl + 2);
    memcpy(p, key, kl);
    p[kl] = SEP;
    memcpy(p + kl + 1, value, vl + 1);
    return p;
}

void tpc_init(tp_counts_t *c, size_t hint)
{
    memset(c, 0, sizeof(*c));
    c->m = hashmap_new(hint ? hint : 8);
}

void tpc_free(tp_counts_t *c)
{
    if (!c->m)
        return;
    hashmap_free(c->m);
    for (int i = 0; i < c->nkeys; i++)
        free(c->keys[i]);
    free(c->keys);
    memset(c, 0, sizeof(*c));
}

static void note_key(tp_counts_t *c, const char *key)
{
    for (int i = 0; i < c->nkeys; i++)
        if (strcmp(c->keys[i], key) == 0)
            return;
    c->keys = util_xrealloc(c->keys, sizeof(char *) * (size_t)(c->nkeys + 1));
    c->keys[c->nkeys++] = util_strdup(key);
}

void tpc_add(tp_counts_t *c, const char *key, const char *value, int64_t d, int drop_zero)
{
    char buf[256];
    char *k = pair_key(buf, sizeof buf, key, value);
    void *v = hashmap_get(c->m, k);
    int64_t n = (v ? dec(v) : 0) + d;
    if (n == 0 && drop_zero)
        hashmap_remove(c->m, k);
    else {
        hashmap_put(c->m, k, enc(n));
        note_key(c, key);
    }
    if (k != buf)
        free(k);
}

int64_t tpc_get(const tp_counts_t *c, const char *key, const char *value, int *present)
{
    char buf[256];
    if (!c->m || hashmap_len(c->m) == 0) {
        if (present)
            *present = 0;
        return 0;
    }
    char *k = pair_key(buf, sizeof buf, key, value);
    void *v = hashmap_get(c->m, k);
    if (k != buf)
        free(k);
    if (present)
        *present = v != NULL;
    return v ? dec(v) : 0;
}

size_t tpc_len(const tp_counts_t *c)
{
    return c->m ? hashmap_len(c->m) : 0;
}

int tpc_next(const tp_counts_t *c, size_t *it, const char **k, size_t *klen, const char **v, int64_t *n)
{
    const char *key;
    void *val;
    if (!c->m || !hashmap_next(c->m, it, &key, &val))
        return 0;
    const char *sep = strchr(key, SEP);
    *k = key;
    *klen = sep ? (size_t)(sep - key) : strlen(key);
    *v = sep ? sep + 1 : "";
    *n = dec(val);
    return 1;
}
