/* capabilities.c -- the list of capabilities that keep data on pods and
 * nodes; with the row table (extensions.c), the place that names them. */
#include <pthread.h>

#include "api/podext.h"
#include "dra/claims.h"
#include "gpu/gpu.h"
#include "scheduler/capabilities.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void register_all(void)
{
    gpu_capability_register();
    dra_capability_register();
    pod_ext_seal();
}

void capabilities_init(void)
{
    pthread_once(&once, register_all);
}
