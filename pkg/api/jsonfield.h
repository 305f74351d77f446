/* jsonfield.h -- typed fields of untrusted JSON objects: absent or null
 * means "not set", a value of another type is an error naming the field. */
#ifndef AISCHED_JSONFIELD_H
#define AISCHED_JSONFIELD_H

#include <stddef.h>
#include <jansson.h>

/* *out = obj[key] when it has type (JSON_OBJECT, JSON_ARRAY or JSON_STRING),
 * NULL when obj is NULL or the field is absent or null. -1 with
 * "<what>.<key>: not an object" (array, string) on another type. */
int jf_get(json_t *obj, const char *key, json_type type, json_t **out, const char *what, char *err, size_t errlen);

#endif
