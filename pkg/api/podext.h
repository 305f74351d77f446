/* podext.h -- per-capability data on a pod: api/ parses the generic Pod;
 * a capability (in its own folder) registers, once at startup, a parser
 * that fills its own slot of every pod parsed afterwards (pod_t.ext).
 *
 * Registration happens before any thread starts and before any pod is
 * parsed (capabilities_init, scheduler/capabilities.h, seals the registry):
 * the table is read without a lock afterwards. A pod parsed while the
 * registry is unsealed would silently lack every capability's data, so
 * pod_from_json aborts instead. */
#ifndef AISCHED_PODEXT_H
#define AISCHED_PODEXT_H

#include <jansson.h>

#include "api/types.h"

typedef struct pod_ext {
    const char *name; /* for messages */
    /* The capability's data for a pod: p is the pod parsed so far (every
     * generic field), obj its JSON. NULL when the pod has nothing of this
     * capability; never fails (an invalid request is data too). */
    void *(*parse)(const pod_t *p, json_t *obj);
    void (*free)(void *data);
} pod_ext_t;

/* Registers ext (kept by pointer: static storage); returns its slot in
 * pod_t.ext. Aborts when the registry is sealed or full. */
int pod_ext_register(const pod_ext_t *ext);
/* Ends registration; pods may be parsed from now on. */
void pod_ext_seal(void);
int pod_ext_sealed(void);
/* Registered pod extensions (slots 0..n-1). */
int pod_ext_count(void);

/* api/types.c: fills / frees p's slots. */
void pod_ext_parse_all(pod_t *p, json_t *obj);
void pod_ext_free_all(pod_t *p);

#endif
