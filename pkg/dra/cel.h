/* cel.h -- a bounded evaluator for the subset of CEL that DRA device
 * selectors use (DeviceClass and ResourceClaim spec...selectors[].cel),
 * with kube's DRA environment (k8s.io/dynamic-resource-allocation/cel).
 *
 * The subset: the variable `device` (driver, attributes, capacity,
 * allowMultipleAllocations); map access by ["key"] and .key, has(), `in`
 * (maps and list literals); cel.bind(name, value, expr) (kube's DRA
 * environment enables it); == != < <= > >= && || ! unary - ?:; string, int
 * and bool literals and lists of them; quantity(), isQuantity() and the
 * quantity methods compareTo, isGreaterThan, isLessThan, sign, isInteger,
 * asInteger; semver(), isSemver() and compareTo, isGreaterThan, isLessThan,
 * major, minor, patch; the string methods startsWith, endsWith, contains
 * and size(). Anything else is refused at compile time with a message that
 * names it, never guessed.
 *
 * Semantics follow CEL as kube runs it: an unknown domain in
 * device.attributes or device.capacity is an empty map, a missing name in a
 * domain is the error "no such key" (and, as in kube, has() of a domain
 * itself, has(device.attributes.x), is true); && and || absorb an error when the
 * other side decides (false && error is false); == between values of
 * different types is false, < between them an error. Version attributes are
 * semver values, capacities quantities (compared in milli-units, so a
 * quantity finer than 1m is rounded up to it).
 *
 * Bounds: an expression of at most DRA_CEL_MAX_LEN bytes compiles to at
 * most DRA_CEL_MAX_NODES AST nodes nested at most DRA_CEL_MAX_DEPTH deep.
 * An evaluation visits each node at most once (no loops, no macros that
 * iterate; a cel.bind value is computed once) and allocates nothing. A
 * visit costs at most one scan of the device's attributes or capacities
 * (size() of device.attributes: a quadratic one over at most kube's 32 per
 * device) or of the strings it compares, so the cost per device is bounded
 * by dra_cel_nodes() x (nattrs + ncaps), recursion by the depth bound. A
 * version attribute is parsed when read: one that is not semver is an error
 * of the selectors that read it (kube fails the device for every selector;
 * the API server's validation keeps such values out of slices). */
#ifndef AISCHED_DRA_CEL_H
#define AISCHED_DRA_CEL_H

#include <stddef.h>
#include <stdint.h>

#include "dra/device.h"

#define DRA_CEL_MAX_LEN   10240
#define DRA_CEL_MAX_NODES 1024
#define DRA_CEL_MAX_DEPTH 64
#define DRA_CEL_MAX_BINDS 8 /* cel.bind variables in scope at once */

typedef struct dra_cel dra_cel_t;

/* Compiles expr; NULL with err naming what is outside the subset ("the
 * function 'matches' is not supported", "macro 'all' is not supported",
 * "list index is not supported") or the syntax error and its column. */
dra_cel_t *dra_cel_compile(const char *expr, char *err, size_t errlen);

/* 1 the device matches, 0 it does not, -1 a runtime error (err: "no such
 * key: gpu.example.com/model", a type mismatch, "selector did not return a
 * bool"). Thread-safe: c is only read. */
int dra_cel_eval(const dra_cel_t *c, const dra_device_t *dev, char *err, size_t errlen);

void dra_cel_free(dra_cel_t *c);

/* How many dra_cel_eval calls the process made (every thread's; for the
 * benches' cost figures). */
uint64_t dra_cel_evals(void);

/* The compiled expression's AST nodes: the bound on the steps of one
 * evaluation (each node is visited at most once). */
int dra_cel_nodes(const dra_cel_t *c);

#endif
