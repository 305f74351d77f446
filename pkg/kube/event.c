/* event.c -- builds core/v1 Event objects (see event.h). */
#include "kube/event.h"

#include <stdio.h>

#include "util/util.h"

json_t *kube_event_new(const char *ns, json_t *involved, const char *type, const char *reason, const char *message,
                       const char *component, const char *instance, const char *base_name, unsigned long seq)
{
    char now[64], evname[320];
    int64_t ms = util_wall_ms();
    util_rfc3339(ms, now, sizeof(now));
    snprintf(evname, sizeof(evname), "%.200s.%llx%04lx", base_name, (unsigned long long)ms, seq & 0xffff);
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:{s:s}, s:s, s:s, s:i, s:s, s:s}", "apiVersion",
                     "v1", "kind", "Event", "metadata", "name", evname, "namespace", ns, "involvedObject", involved,
                     "reason", reason, "message", message, "type", type, "source", "component", component,
                     "firstTimestamp", now, "lastTimestamp", now, "count", 1, "reportingComponent", component,
                     "reportingInstance", instance);
}
