/* jsonnum.c -- a figure as the scheduler writes it into JSON (jsonnum.h). */
#include "util/jsonnum.h"

#include <math.h>

json_t *util_json_num(double v)
{
    double r = round(v * 1000) / 1000;
    if (fabs(r - round(r)) < 1e-9 && fabs(r) < 9e15)
        return json_integer((json_int_t)llround(r));
    return json_real(r);
}
