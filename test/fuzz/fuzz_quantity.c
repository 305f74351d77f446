/* fuzz_quantity.c -- resource.Quantity strings ("1.5Gi", "250m", "1e3"):
 * quantity_parse at both scales, and the round trip through the formats the
 * scheduler writes back to the API server (status, events). */
#include "fuzz.h"
#include "api/quantity.h"

static void round_trip(const char *s, int scale)
{
    int64_t v;
    char err[128];
    if (quantity_parse(s, scale, &v, err, sizeof err) != 0)
        return;
    char buf[64];
    if (scale == 3)
        quantity_format_k8s_milli(v, buf, sizeof buf);
    else
        quantity_format_k8s_bytes(v, buf, sizeof buf);
    int64_t back;
    FUZZ_ASSERT(quantity_parse(buf, scale, &back, err, sizeof err) == 0);
    FUZZ_ASSERT(back == v);
    quantity_format_bytes(v, buf, sizeof buf);
    quantity_format_milli(v, buf, sizeof buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_str(data, size);
    if (!s)
        return 0;
    round_trip(s, 0);
    round_trip(s, 3);
    free(s);
    return 0;
}
