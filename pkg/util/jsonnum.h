/* jsonnum.h -- a figure as the scheduler writes it into JSON (Queue
 * .status, the dashboard): three decimals, an integer when whole. */
#ifndef AISCHED_UTIL_JSONNUM_H
#define AISCHED_UTIL_JSONNUM_H

#include <jansson.h>

/* v rounded to three decimals (a fraction reads 0.5, not 0.50000000001),
 * a JSON integer when that is whole (a new reference). */
json_t *util_json_num(double v);

#endif
