/* fuzz_node.c -- a Node from the API server: node_from_json (allocatable,
 * labels, taints, images, GPU attributes). */
#include "fuzz.h"
#include "api/types.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = fuzz_json(data, size);
    if (!j)
        return 0;
    char err[256] = "";
    node_t *n = node_from_json(j, err, sizeof err);
    if (n)
        node_unref(n);
    else
        FUZZ_ASSERT(err[0] != '\0');
    json_decref(j);
    return 0;
}
