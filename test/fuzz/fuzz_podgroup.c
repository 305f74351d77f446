/* fuzz_podgroup.c -- a PodGroup (scheduling.x-k8s.io) from the API server. */
#include "fuzz.h"
#include "gang/gang.h"

FUZZ_OBJECT_PARSER(podgroup_t, podgroup_from_json, podgroup_free)
