/* fuzz_config.c -- the scheduler's YAML configuration
 * (AiSchedulerConfiguration: profiles, plugin weights, pools, queues),
 * loaded over the defaults and validated. */
#include "fuzz.h"
#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sched_config_t c;
    config_default(&c);
    char err[256] = "";
    if (config_load_string(&c, (const char *)data, size, "fuzz", err, sizeof err) == 0) {
        if (config_validate(&c, err, sizeof err) == 0) {
            int n = config_nprofiles(&c);
            FUZZ_ASSERT(n >= 1);
            for (int i = 0; i < n; i++) {
                fw_config_t fw;
                FUZZ_ASSERT(config_profile_fw(&c, i, &fw) != NULL);
            }
        }
    } else {
        FUZZ_ASSERT(err[0] != '\0');
    }
    config_free(&c);
    return 0;
}
