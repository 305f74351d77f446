/* fuzz_queue.c -- a Queue (queues.resource.aibee.cn) from the API server. */
#include "fuzz.h"
#include "fairshare/fairshare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = fuzz_json(data, size);
    if (!j)
        return 0;
    char err[256] = "";
    fs_queue_spec_t *q = fs_queue_from_json(j, err, sizeof err);
    if (q)
        fs_queue_spec_free(q);
    else
        FUZZ_ASSERT(err[0] != '\0');
    json_decref(j);
    return 0;
}
