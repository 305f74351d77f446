/* event.h -- the core/v1 Event object both the scheduler and the dispatch
 * controller post: one builder, so both report the same fields. */
#ifndef AISCHED_KUBE_EVENT_H
#define AISCHED_KUBE_EVENT_H

#include <jansson.h>

/* An Event in ns about involved (stolen), named "<base_name>.<hex wall
 * ms><seq & 0xffff>" so events posted in one millisecond stay distinct;
 * count 1, first = last = now. component and instance fill source and
 * reporting*. Returns a new reference, or NULL when a string is missing. */
json_t *kube_event_new(const char *ns, json_t *involved, const char *type, const char *reason, const char *message,
                       const char *component, const char *instance, const char *base_name, unsigned long seq);

#endif
