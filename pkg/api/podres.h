/* podres.h -- what a pod occupies on its node, counted as kube-scheduler
 * 1.33-1.35 counts it (component-helpers resource.PodRequests as the
 * scheduler's NodeInfo calls it): native sidecars, pod-level requests and
 * the resources of an in-place resize.
 *
 * For a pod that uses none of these the answer is v1.20's: max(sum of
 * containers, each init container) + overhead. */
#ifndef AISCHED_PODRES_H
#define AISCHED_PODRES_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "api/resources.h"

typedef struct pod_usage {
    resources_t requests; /* pods is left 0: the caller counts the slot */
    int64_t nonzero_cpu;  /* scoring's view: 100m per container without cpu */
    int64_t nonzero_mem;  /* 200Mi per container without memory */
} pod_usage_t;

/* The pod's usage from its spec and status (either may be NULL). Returns 0,
 * or -1 with a message on a field of the wrong type, a bad quantity or more
 * extended resources than a vector holds. */
int podres_compute(json_t *spec, json_t *status, pod_usage_t *out, char *err, size_t errlen);

/* 1 when init container c is a sidecar (restartPolicy: Always), 0 when not,
 * -1 with a message when restartPolicy is not a string. */
int podres_is_sidecar(json_t *c, const char *what, char *err, size_t errlen);

#endif
