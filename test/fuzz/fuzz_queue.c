/* fuzz_queue.c -- a Queue (queues.resource.aibee.cn) from the API server. */
#include "fuzz.h"
#include "fairshare/fairshare.h"

FUZZ_OBJECT_PARSER(fs_queue_spec_t, fs_queue_from_json, fs_queue_spec_free)
