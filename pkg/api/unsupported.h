/* unsupported.h -- the one list of pod fields that affect kube-scheduler's
 * decisions but that ai-scheduler does not implement, so a pod that uses one
 * is told so (a Warning event) instead of being silently mis-placed. */
#ifndef AISCHED_UNSUPPORTED_H
#define AISCHED_UNSUPPORTED_H

#include <jansson.h>

/* The fields of the list that pod sets (non-null, non-empty), as
 * "spec.schedulingGates, spec.volumes[].azureDisk"; NULL when none. Caller
 * frees. */
char *pod_unsupported_fields(json_t *pod);

/* The i-th path of the list, NULL past its end (docs and tests). */
const char *unsupported_path(int i);

#endif
