/* fuzz_cel.c -- DRA device selector expressions (DeviceClass and
 * ResourceClaim selectors[].cel): dra_cel_compile either refuses with a
 * message or yields an expression within the bounds, and its evaluation on
 * devices of every attribute kind is 1, 0 or -1 with a message, the same
 * each time. */
#include "fuzz.h"
#include "dra/cel.h"

static dra_attr_t attrs[] = {
    { .name = "gpu.example.com/model", .kind = DRA_ATTR_STRING, .s = "LATEST-GPU-MODEL" },
    { .name = "gpu.example.com/index", .kind = DRA_ATTR_INT, .i = -9223372036854775807LL - 1 },
    { .name = "gpu.example.com/shared", .kind = DRA_ATTR_BOOL, .b = 1 },
    { .name = "gpu.example.com/driverVersion", .kind = DRA_ATTR_VERSION, .s = "1.2.3-rc.1+b" },
    { .name = "gpu.example.com/bad", .kind = DRA_ATTR_VERSION, .s = "1.2" },
    { .name = "resource.kubernetes.io/pcieRoot", .kind = DRA_ATTR_STRING, .s = "" },
    { .name = "noslash", .kind = DRA_ATTR_INT, .i = 1 },
};
static dra_capacity_t caps[] = {
    { .name = "gpu.example.com/memory", .text = "80Gi", .milli = 85899345920000LL },
    { .name = "gpu.example.com/cores", .text = "1500m", .milli = 1500 },
};
static const dra_device_t devs[] = {
    { .driver = "gpu.example.com", .name = "gpu-0", .attrs = attrs, .nattrs = 7, .caps = caps, .ncaps = 2, .multi = 1 },
    { .name = "bare" },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_str(data, size);
    if (!s)
        return 0;
    char err[256] = "";
    dra_cel_t *c = dra_cel_compile(s, err, sizeof err);
    if (!c) {
        FUZZ_ASSERT(err[0] != '\0'); /* a refusal always says why */
        free(s);
        return 0;
    }
    FUZZ_ASSERT(strlen(s) <= DRA_CEL_MAX_LEN);
    FUZZ_ASSERT(dra_cel_nodes(c) >= 1 && dra_cel_nodes(c) <= DRA_CEL_MAX_NODES);
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) {
        char e1[256] = "", e2[16] = "";
        int rc = dra_cel_eval(c, &devs[i], e1, sizeof e1);
        FUZZ_ASSERT(rc == 1 || rc == 0 || rc == -1);
        FUZZ_ASSERT(rc != -1 || e1[0] != '\0');
        FUZZ_ASSERT(dra_cel_eval(c, &devs[i], e2, sizeof e2) == rc); /* no state between evaluations */
        FUZZ_ASSERT(rc != -1 || strncmp(e1, e2, sizeof e2 - 1) == 0);
    }
    dra_cel_free(c);
    free(s);
    return 0;
}
