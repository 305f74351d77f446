/* hashmap.h -- string-keyed open-addressing hash map (keys copied, values
 * borrowed). Not thread-safe: the owner module holds its own lock.
 *
 * Ownership: the map owns its key copies; values are the caller's. Freeing
 * the map does not free values (iterate first if it should). */
#ifndef AISCHED_HASHMAP_H
#define AISCHED_HASHMAP_H

#include <stddef.h>

typedef struct hashmap hashmap_t;

hashmap_t *hashmap_new(size_t initial);
void hashmap_free(hashmap_t *m);
/* Inserts or replaces; returns the previous value (or NULL). */
void *hashmap_put(hashmap_t *m, const char *key, void *value);
void *hashmap_get(const hashmap_t *m, const char *key);
/* Removes; returns the removed value (or NULL). */
void *hashmap_remove(hashmap_t *m, const char *key);
size_t hashmap_len(const hashmap_t *m);

/* Iteration: for (size_t it = 0; hashmap_next(m, &it, &k, &v); ) {...}
 * Do not insert or remove while iterating. */
int hashmap_next(const hashmap_t *m, size_t *it, const char **key, void **value);

#endif
