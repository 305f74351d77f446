/* row.c -- the priority-classes row (extension.h): the PriorityClass
 * watch fills the row's store (prioclass.c), which it publishes to the
 * core as a lookup by name; the core gives a gang its class's priority
 * (the services' gang_priority and pod_priority). */
#include <stdlib.h>

#include "prioclass/row.h"
#include "util/log.h"
#include "util/util.h"

typedef struct prioclass_room {
    const sched_services_t *svc;
    void *core;
    prio_classes_t *classes;
} prioclass_room_t;

void *prioclass_row_init(const sched_services_t *svc, void *core)
{
    prioclass_room_t *r = util_xcalloc(1, sizeof(*r));
    r->svc = svc;
    r->core = core;
    r->classes = prio_classes_new();
    return r;
}

void prioclass_row_fini(void *self)
{
    prioclass_room_t *r = self;
    if (!r)
        return;
    prio_classes_free(r->classes);
    free(r);
}

const sched_watch_t prioclass_row_watches[] = {
    { "PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses", prioclass_row_on_event, 0 },
    { 0 },
};

void prioclass_row_on_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    prioclass_room_t *r = ud;
    if (type == KUBE_DELETED) {
        prio_classes_put(r->classes, key, NULL);
        return;
    }
    json_t *v = json_object_get(obj, "value");
    json_int_t i = json_is_integer(v) ? json_integer_value(v) : 0;
    if (!json_is_integer(v) || i < INT32_MIN || i > INT32_MAX) {
        LOG_W("PriorityClass %s ignored: value is not a 32-bit integer", key);
        prio_classes_put(r->classes, key, NULL);
        return;
    }
    int32_t val = (int32_t)i;
    prio_classes_put(r->classes, key, &val);
    r->svc->wake_all(r->core, "PriorityClassChanged"); /* a waiting gang's class may rank it anew */
}

/* The published lookup: an empty name is no class. */
static int class_value(void *classes, const char *name, int32_t *out)
{
    return name && name[0] && prio_classes_get(classes, name, out);
}

void prioclass_row_publish(const sched_row_t *row, sched_published_t *pub)
{
    pub->class_value = class_value;
    pub->classes = ((prioclass_room_t *)row->self)->classes;
}
