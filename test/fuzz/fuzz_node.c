/* fuzz_node.c -- a Node from the API server: node_from_json (allocatable,
 * labels, taints, images, GPU attributes). */
#include "fuzz.h"
#include "api/types.h"

FUZZ_OBJECT_PARSER(node_t, node_from_json, node_unref)
