/* dump.c -- the cache as one digest and one line per object, written to the
 * log on SIGUSR2 (kube-scheduler's cache debugger does the same), so a test
 * or an operator can compare what the scheduler believes with a fresh LIST.
 *
 * Lines: "node NAME RV" and "pod NS/NAME UID NODE RV" (NODE "-" when
 * unbound), sorted bytewise; the digest is the SHA-256 of the sorted lines,
 * each ending in '\n'. `test/e2e/t_chaos.sh` builds the same lines from the
 * API server's objects. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void scheduler_dump_cache(scheduler_t *s)
{
    node_t **nodes;
    pod_t **pods;
    int nn, np;
    cache_snapshot(s->cache, &nodes, &nn, &pods, &np);
    cache_stats_t st;
    cache_get_stats(s->cache, &st);
    char **lines = util_xcalloc((size_t)nn + (size_t)np + 1, sizeof *lines);
    int n = 0;
    for (int i = 0; i < nn; i++) {
        sbuf_t b = { 0 };
        sbuf_printf(&b, "node %s %s", nodes[i]->name, nodes[i]->resource_version);
        lines[n++] = b.data;
    }
    for (int i = 0; i < np; i++) {
        const pod_t *p = pods[i];
        sbuf_t b = { 0 };
        sbuf_printf(&b, "pod %s %s %s %s", p->key, p->uid, p->node_name[0] ? p->node_name : "-", p->resource_version);
        lines[n++] = b.data;
    }
    cache_free_snapshot(nodes, nn, pods, np);
    qsort(lines, (size_t)n, sizeof *lines, cmp_str);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char sum[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    for (int i = 0; i < n; i++) {
        EVP_DigestUpdate(md, lines[i], strlen(lines[i]));
        EVP_DigestUpdate(md, "\n", 1);
    }
    EVP_DigestFinal_ex(md, sum, &len);
    EVP_MD_CTX_free(md);
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    for (unsigned i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", sum[i]);
    LOG_I("cache dump: %d nodes, %d pods (%d pending, %d assumed, %d bound), %d nominated, digest %s", nn, np,
          st.pending, st.assumed, st.bound, st.nominated, hex);
    for (int i = 0; i < n; i++) {
        LOG_I("cache dump: %s", lines[i]);
        free(lines[i]);
    }
    LOG_I("cache dump: end %s", hex);
    free(lines);
}
