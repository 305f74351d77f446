/* fuzz_pdb.c -- a PodDisruptionBudget from the API server. */
#include "fuzz.h"
#include "preemption/preemption.h"

FUZZ_OBJECT_PARSER(pdb_t, pdb_from_json, pdb_free)
