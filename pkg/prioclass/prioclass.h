/* prioclass.h -- the cluster's PriorityClasses by name (prioclass.c): the
 * values a PodGroup's priority-class annotation (gang.h) names. The row
 * that keeps them from the API is row.c. */
#ifndef AISCHED_PRIOCLASS_H
#define AISCHED_PRIOCLASS_H

#include <stdint.h>

typedef struct prio_classes prio_classes_t;

prio_classes_t *prio_classes_new(void);
void prio_classes_free(prio_classes_t *pc);
/* name's value (value NULL: the class is gone). Takes the store's leaf
 * lock (LO_PRIO_CLASSES). */
void prio_classes_put(prio_classes_t *pc, const char *name, const int32_t *value);
/* 1 with *out when name is a known class; under the same lock. */
int prio_classes_get(prio_classes_t *pc, const char *name, int32_t *out);

#endif
