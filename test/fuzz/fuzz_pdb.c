/* fuzz_pdb.c -- a PodDisruptionBudget from the API server. */
#include "fuzz.h"
#include "preemption/preemption.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = fuzz_json(data, size);
    if (!j)
        return 0;
    char err[256] = "";
    pdb_t *p = pdb_from_json(j, err, sizeof err);
    if (p)
        pdb_free(p);
    else
        FUZZ_ASSERT(err[0] != '\0');
    json_decref(j);
    return 0;
}
