/* fuzz_pod.c -- a Pod from the API server: pod_from_json with everything it
 * parses on the way (requests, affinity, tolerations, volumes, GPU sharing,
 * topology spread), then the accessors the scheduler calls on it. */
#include "fuzz.h"
#include "api/types.h"
#include "scheduler/capabilities.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    capabilities_init();
    json_t *j = fuzz_json(data, size);
    if (!j)
        return 0;
    char err[256] = "";
    pod_t *p = pod_from_json(j, err, sizeof err);
    if (p) {
        (void)pod_is_terminal(p);
        (void)pod_is_bound(p);
        (void)pod_home_pool(p);
        pod_t *q = pod_ref(p);
        pod_unref(q);
        pod_unref(p);
    } else {
        FUZZ_ASSERT(err[0] != '\0'); /* a refusal always says why */
    }
    json_decref(j);
    return 0;
}
