/* quantity.h -- Kubernetes resource.Quantity parsing into exact integers.
 *
 * Grammar (as apimachinery): <sign><digits>[.<digits>]<suffix>, suffix one of
 * binary Ki Mi Gi Ti Pi Ei, decimal n u m "" k M G T P E, or an exponent
 * e<n>/E<n>. Values are rounded up to the unit asked for, like Quantity.Value()
 * and MilliValue(). Anything else, or a result beyond int64, is an error. */
#ifndef AISCHED_QUANTITY_H
#define AISCHED_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

/* Parses s into *out in whole units (scale 0) or milli-units (scale 3).
 * Returns 0, or -1 with a message in err (if err != NULL). */
int quantity_parse(const char *s, int scale, int64_t *out, char *err, size_t errlen);

/* Human formatting for tables: bytes as Ki/Mi/Gi/Ti ("12.5Gi"), milli-cpu as
 * cores ("3.5", "250m"), counts as plain integers. */
void quantity_format_bytes(int64_t bytes, char *buf, size_t n);
void quantity_format_milli(int64_t milli, char *buf, size_t n);
/* Canonical Kubernetes string, for writing status back ("1500m", "64Gi", "8"). */
void quantity_format_k8s_bytes(int64_t bytes, char *buf, size_t n);
void quantity_format_k8s_milli(int64_t milli, char *buf, size_t n);

#endif
