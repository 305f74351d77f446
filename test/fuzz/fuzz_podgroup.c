/* fuzz_podgroup.c -- a PodGroup (scheduling.x-k8s.io) from the API server. */
#include "fuzz.h"
#include "gang/gang.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = fuzz_json(data, size);
    if (!j)
        return 0;
    char err[256] = "";
    podgroup_t *pg = podgroup_from_json(j, err, sizeof err);
    if (pg)
        podgroup_free(pg);
    else
        FUZZ_ASSERT(err[0] != '\0');
    json_decref(j);
    return 0;
}
