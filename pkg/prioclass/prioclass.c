/* prioclass.c -- the cluster's PriorityClasses by name, so that a
 * PodGroup's priority-class annotation (gang.h) gives its gang a priority:
 * the gang ranks and preempts as its highest member or its class, whichever
 * is higher, and its members as victims count the same. */
#include <pthread.h>
#include <stdlib.h>

#include "prioclass/prioclass.h"
#include "util/hashmap.h"
#include "util/lockorder.h"
#include "util/util.h"

struct prio_classes {
    pthread_mutex_t mu;
    hashmap_t *by_name; /* name -> int32_t * */
};

prio_classes_t *prio_classes_new(void)
{
    prio_classes_t *pc = util_xcalloc(1, sizeof(*pc));
    pthread_mutex_init(&pc->mu, NULL);
    pc->by_name = hashmap_new(16);
    return pc;
}

void prio_classes_free(prio_classes_t *pc)
{
    if (!pc)
        return;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(pc->by_name, &it, &k, &v);)
        free(v);
    hashmap_free(pc->by_name);
    pthread_mutex_destroy(&pc->mu);
    free(pc);
}

void prio_classes_put(prio_classes_t *pc, const char *name, const int32_t *value)
{
    int32_t *box = NULL;
    if (value) {
        box = util_xcalloc(1, sizeof(*box));
        *box = *value;
    }
    lo_mutex_lock(&pc->mu, LO_PRIO_CLASSES);
    void *old = box ? hashmap_put(pc->by_name, name, box) : hashmap_remove(pc->by_name, name);
    lo_mutex_unlock(&pc->mu, LO_PRIO_CLASSES);
    free(old);
}

int prio_classes_get(prio_classes_t *pc, const char *name, int32_t *out)
{
    lo_mutex_lock(&pc->mu, LO_PRIO_CLASSES);
    int32_t *box = hashmap_get(pc->by_name, name);
    if (box)
        *out = *box;
    lo_mutex_unlock(&pc->mu, LO_PRIO_CLASSES);
    return box != NULL;
}
