/* row.h -- the priority-classes row (row.c): it watches the cluster's
 * PriorityClasses and publishes their values by name (class_value), which
 * the core asks for the priority a PodGroup's class gives its gang. Its
 * room is made by prioclass_row_init; it reaches the core only through the
 * services table (framework/services.h). */
#ifndef AISCHED_PRIOCLASS_ROW_H
#define AISCHED_PRIOCLASS_ROW_H

#include <jansson.h>

#include "framework/services.h"
#include "kube/informer.h"
#include "prioclass/prioclass.h"
#include "scheduler/extension.h"

/* The row's room (its init and fini in the row table). */
void *prioclass_row_init(const sched_services_t *svc, void *core);
void prioclass_row_fini(void *self);
/* What it watches: PriorityClasses (scheduling.k8s.io/v1). */
extern const sched_watch_t prioclass_row_watches[];
/* The PriorityClass informer's handler (ud: the room): a class's value
 * kept, or forgotten when it is deleted or its value is not a 32-bit
 * integer; a change wakes the waiting pods (a gang's class may rank it
 * anew). */
void prioclass_row_on_event(void *ud, kube_event_type_t type, const char *key, json_t *obj);
/* publish: the class lookup (class_value). */
void prioclass_row_publish(const sched_row_t *row, sched_published_t *pub);

#endif
