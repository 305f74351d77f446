/* prioclass.c -- the cluster's PriorityClasses by name, so that a
 * PodGroup's priority-class annotation (gang.h) gives its gang a priority:
 * the gang ranks and preempts as its highest member or its class, whichever
 * is higher, and its members as victims count the same. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/log.h"
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

/* name -> value (value NULL: deleted). */
static void classes_put(prio_classes_t *pc, const char *name, const int32_t *value)
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

static int classes_get(prio_classes_t *pc, const char *name, int32_t *out)
{
    lo_mutex_lock(&pc->mu, LO_PRIO_CLASSES);
    int32_t *box = hashmap_get(pc->by_name, name);
    if (box)
        *out = *box;
    lo_mutex_unlock(&pc->mu, LO_PRIO_CLASSES);
    return box != NULL;
}

void on_priorityclass_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    scheduler_t *s = ud;
    if (type == KUBE_DELETED) {
        classes_put(s->prio_classes, key, NULL);
        return;
    }
    json_t *v = json_object_get(obj, "value");
    json_int_t i = json_is_integer(v) ? json_integer_value(v) : 0;
    if (!json_is_integer(v) || i < INT32_MIN || i > INT32_MAX) {
        LOG_W("PriorityClass %s ignored: value is not a 32-bit integer", key);
        classes_put(s->prio_classes, key, NULL);
        return;
    }
    int32_t val = (int32_t)i;
    classes_put(s->prio_classes, key, &val);
    sched_event(s, SCHED_EV_OBJECT, NULL, NULL, "PriorityClassChanged"); /* a waiting gang's class may rank it anew */
}

/* The value of a gang's class: 1 and *out when it names a known class. */
static int class_value(scheduler_t *s, const char *cls, int32_t *out)
{
    return cls && cls[0] && s->prio_classes && classes_get(s->prio_classes, cls, out);
}

int32_t sched_class_priority(scheduler_t *s, const char *cls, int32_t floor)
{
    int32_t v;
    return class_value(s, cls, &v) && v > floor ? v : floor;
}

int32_t sched_gang_priority(scheduler_t *s, const gang_snap_t *g, int32_t floor)
{
    return g ? sched_class_priority(s, g->priority_class, floor) : floor;
}

int32_t sched_pod_priority(scheduler_t *s, const pod_t *p)
{
    const char *g = gang_of(p);
    if (!g)
        return p->priority;
    char *cls = gang_priority_class_of(s->gangs, p->ns, g);
    int32_t v;
    int has = class_value(s, cls, &v);
    free(cls);
    return has && v > p->priority ? v : p->priority;
}
