/* fuzz_pool.c -- a Pool (pools.resource.aibee.cn) from the API server. */
#include "fuzz.h"
#include "pool/pool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = fuzz_json(data, size);
    if (!j)
        return 0;
    char err[256] = "";
    pool_spec_t spec;
    memset(&spec, 0, sizeof spec);
    if (pool_spec_from_json(&spec, j, err, sizeof err) == 0)
        pool_spec_free(&spec);
    else
        FUZZ_ASSERT(err[0] != '\0');
    json_decref(j);
    return 0;
}
