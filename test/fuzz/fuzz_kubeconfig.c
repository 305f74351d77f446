/* fuzz_kubeconfig.c -- a kubeconfig held in memory (what the dispatch
 * controller reads from a member's Secret): kube_config_parse, which must
 * refuse file references, then a copy. */
#include "fuzz.h"
#include "kube/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kube_config_t c;
    memset(&c, 0, sizeof c);
    char err[256] = "";
    if (kube_config_parse(&c, (const char *)data, size, "fuzz", err, sizeof err) == 0) {
        /* In-memory only: never a path another process's files could be read from. */
        FUZZ_ASSERT(!c.ca_file && !c.cert_file && !c.key_file && !c.token_file);
        FUZZ_ASSERT(c.server != NULL);
        kube_config_t d;
        memset(&d, 0, sizeof d);
        if (kube_config_copy(&d, &c) == 0)
            kube_config_free(&d);
        kube_config_free(&c);
    } else {
        FUZZ_ASSERT(err[0] != '\0');
    }
    size_t n = 0;
    char *s = fuzz_str(data, size);
    if (s) {
        free(kube_base64_decode(s, &n));
        free(s);
    }
    return 0;
}
