/* bench_sandbox.h -- what the sandbox benches share: an object applied or the bench ends. */
#ifndef AISCHED_BENCH_SANDBOX_H
#define AISCHED_BENCH_SANDBOX_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "sandbox/sandbox.h"

/* Applies o as an ADDED event and drops it; a refusal ends the bench
 * (exit 2, its reason on stderr): a bench on a partial cluster measures
 * nothing. */
static inline void bench_apply(sandbox_t *sb, json_t *o)
{
    char err[256];
    if (sandbox_apply(sb, "ADDED", o, err, sizeof err) != 0) {
        fprintf(stderr, "apply: %s\n", err);
        exit(2);
    }
    json_decref(o);
}

#endif
