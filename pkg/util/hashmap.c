/* hashmap.c -- string-keyed open-addressing map: FNV-1a, linear probing,
 * backward-shift deletion (no tombstones), doubling at 70% load. */
#include "util/hashmap.h"
#include "util/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
    char *key; /* NULL: empty */
    void *value;
    uint64_t hash;
} slot_t;

struct hashmap {
    slot_t *slots;
    size_t cap; /* power of two */
    size_t len;
};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static size_t round_pow2(size_t n)
{
    size_t c = 8;
    while (c < n && c < ((size_t)1 << (sizeof(size_t) * 8 - 2)))
        c <<= 1;
    return c;
}

hashmap_t *hashmap_new(size_t initial)
{
    hashmap_t *m = util_xcalloc(1, sizeof *m);
    /* Size so `initial` entries fit without a resize. */
    m->cap = round_pow2(initial + initial / 2 + 1);
    m->slots = util_xcalloc(m->cap, sizeof(slot_t));
    return m;
}

void hashmap_free(hashmap_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].key);
    free(m->slots);
    free(m);
}

/* Index of key's slot, or of the empty slot where it would go. */
static size_t find_slot(const hashmap_t *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)h & mask;
    while (m->slots[i].key) {
        if (m->slots[i].hash == h && strcmp(m->slots[i].key, key) == 0)
            return i;
        i = (i + 1) & mask;
    }
    return i;
}

static void grow(hashmap_t *m)
{
    slot_t *old = m->slots;
    size_t oldcap = m->cap;
    m->cap = oldcap * 2;
    m->slots = util_xcalloc(m->cap, sizeof(slot_t));
    size_t mask = m->cap - 1;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].key)
            continue;
        size_t j = (size_t)old[i].hash & mask;
        while (m->slots[j].key)
            j = (j + 1) & mask;
        m->slots[j] = old[i];
    }
    free(old);
}

void *hashmap_put(hashmap_t *m, const char *key, void *value)
{
    uint64_t h = fnv1a(key);
    size_t i = find_slot(m, key, h);
    if (m->slots[i].key) {
        void *prev = m->slots[i].value;
        m->slots[i].value = value;
        return prev;
    }
    /* Keep load under 70% so probe chains stay short. */
    if ((m->len + 1) * 10 > m->cap * 7) {
        grow(m);
        i = find_slot(m, key, h);
    }
    m->slots[i].key = util_strdup(key);
    m->slots[i].value = value;
    m->slots[i].hash = h;
    m->len++;
    return NULL;
}

void *hashmap_get(const hashmap_t *m, const char *key)
{
    if (!m || !key)
        return NULL;
    size_t i = find_slot(m, key, fnv1a(key));
    return m->slots[i].key ? m->slots[i].value : NULL;
}

void *hashmap_remove(hashmap_t *m, const char *key)
{
    if (!m || !key)
        return NULL;
    size_t i = find_slot(m, key, fnv1a(key));
    if (!m->slots[i].key)
        return NULL;
    void *value = m->slots[i].value;
    free(m->slots[i].key);
    m->slots[i].key = NULL;
    m->len--;

    /* Backward shift: pull later members of the probe run into the hole when
     * their home slot does not lie cyclically in (hole, j]. */
    size_t mask = m->cap - 1;
    size_t hole = i;
    size_t j = (i + 1) & mask;
    while (m->slots[j].key) {
        size_t home = (size_t)m->slots[j].hash & mask;
        int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            m->slots[hole] = m->slots[j];
            m->slots[j].key = NULL;
            hole = j;
        }
        j = (j + 1) & mask;
    }
    return value;
}

size_t hashmap_len(const hashmap_t *m)
{
    return m ? m->len : 0;
}

int hashmap_next(const hashmap_t *m, size_t *it, const char **key, void **value)
{
    if (!m)
        return 0;
    while (*it < m->cap) {
        const slot_t *s = &m->slots[(*it)++];
        if (s->key) {
            if (key)
                *key = s->key;
            if (value)
                *value = s->value;
            return 1;
        }
    }
    return 0;
}
