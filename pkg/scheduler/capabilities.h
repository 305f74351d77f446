/* capabilities.h -- the one call that registers every capability's pod
 * parser (api/podext.h) and node accountant (framework/nodeinfo.h). */
#ifndef AISCHED_CAPABILITIES_H
#define AISCHED_CAPABILITIES_H

/* Registers them all and seals the registries; idempotent and thread-safe
 * (pthread_once). Every program that parses a pod calls it first:
 * cmd/ai-scheduler's main, scheduler_new, simulate, the unit tests, fuzz
 * targets and benches. pod_from_json aborts before it, so a forgotten
 * call cannot silently drop a capability's accounting. A test may
 * register a capability of its own before calling it. */
void capabilities_init(void);

#endif
