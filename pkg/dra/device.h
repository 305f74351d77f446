/* device.h -- DRA's devices and requests as the allocator and the CEL
 * evaluator see them (resource.k8s.io/v1), parsed by the store (store.c). */
#ifndef AISCHED_DRA_DEVICE_H
#define AISCHED_DRA_DEVICE_H

#include <stddef.h>
#include <stdint.h>

/* A device attribute's value (ResourceSlice spec.devices[].attributes:
 * exactly one of string, int, bool, version). */
typedef enum { DRA_ATTR_STRING = 0, DRA_ATTR_INT, DRA_ATTR_BOOL, DRA_ATTR_VERSION } dra_attr_kind_t;

typedef struct dra_attr {
    /* Fully qualified: "gpu.example.com/model". A slice's unqualified name
     * ("model") belongs to its driver's domain and is stored qualified. */
    char *name;
    dra_attr_kind_t kind;
    char *s;   /* STRING, VERSION (a semver string as published) */
    int64_t i; /* INT */
    int b;     /* BOOL */
} dra_attr_t;

/* A device capacity (spec.devices[].capacity["name"].value), qualified as
 * attributes are. milli: the quantity in milli-units (quantity_parse scale
 * 3), so "80Gi" and "500m" compare exactly. */
typedef struct dra_capacity {
    char *name;
    char *text; /* as published ("80Gi") */
    int64_t milli;
} dra_capacity_t;

/* One device of a complete pool. Strings are the store's; valid while the
 * store's lock is held (or the copy that holds them lives). */
typedef struct dra_device {
    const char *driver; /* spec.driver of its slice */
    const char *pool;   /* spec.pool.name */
    const char *name;   /* spec.devices[].name */
    dra_attr_t *attrs;
    int nattrs;
    dra_capacity_t *caps;
    int ncaps;
    int multi; /* allowMultipleAllocations: true (may be in several claims) */
} dra_device_t;

/* How a request picks devices (exactly.allocationMode). */
typedef enum { DRA_MODE_EXACT = 0, DRA_MODE_ALL } dra_mode_t;

struct dra_cel;

/* One device request of a claim: a request's `exactly`, or one of its
 * firstAvailable alternatives (then a sub-request). */
typedef struct dra_request {
    char *name;       /* "gpus"; a sub-request: "gpus/big" as results name it */
    char *class_name; /* deviceClassName */
    dra_mode_t mode;
    int64_t count; /* ExactCount's count (1 when not given) */
    int admin;     /* adminAccess: the devices may be in use by others */
    /* Selectors, all of which a device must match: the class's first,
     * then the request's own (compiled; owned by the request). */
    struct dra_cel **sel;
    char **sel_text; /* each one's expression, for messages */
    int nsel;
    /* firstAvailable: the alternatives in order (each a request with
     * class, selectors, mode, count); nsubs 0 for `exactly`. */
    struct dra_request *subs;
    int nsubs;
} dra_request_t;

/* A claim's constraint (spec.devices.constraints[].matchAttribute): every
 * device allocated for the named requests (none named: all of them) has
 * the attribute, with one value. */
typedef struct dra_constraint {
    char **requests; /* request names (a parent name covers its subs) */
    int nrequests;
    char *attr; /* fully qualified attribute name */
} dra_constraint_t;

/* One device chosen for a request (status.allocation.devices.results[]). */
typedef struct dra_result {
    char request[128]; /* "gpus", or "gpus/big" for a firstAvailable choice */
    const dra_device_t *dev;
    int admin;
} dra_result_t;

#endif
