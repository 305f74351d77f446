/* bind_probe.c -- "the raw ceiling": how fast does this API server accept
 * Bindings? Creates nothing; POSTs one v1 Binding per pending pod
 * (/api/v1/namespaces/NS/pods/NAME/binding) from many threads, one curl
 * handle (one keep-alive connection) each, and prints the rate.
 *
 *   bind_probe --server https://127.0.0.1:6443 --cacert ca.crt \
 *              --cert admin.crt --key admin.key   (or --token T, --insecure)
 *              --namespace NS
 *              --pods-file FILE | --pod-prefix P --count N [--start I]
 *              --nodes-file FILE | --node-prefix P --node-count N | --nodes a,b
 *              [--concurrency 64] [--http1.1] [--json]
 *
 * Pod names are P<i> for i in [start, start+count); pod i goes to node
 * i % nnodes. A Binding that fails with 429/5xx or a transport error is
 * retried (up to 5 times); 409 (already bound) counts as a conflict.
 * Output: one line of key=value (or a JSON object with --json): total, ok,
 * conflicts, errors, seconds, pods_per_s, and this process's peak RSS and
 * CPU seconds. Exit status 0 only when every Binding succeeded.
 *
 * Uses only libcurl, pthreads and libc. */
#include <curl/curl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    char **v;
    int n, cap;
} strlist_t;

static void sl_push(strlist_t *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        if (!l->v) {
            perror("realloc");
            exit(2);
        }
    }
    l->v[l->n++] = strdup(s);
}

static int sl_read_file(strlist_t *l, const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        perror(path);
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        size_t k = strcspn(line, " \t\r\n");
        line[k] = 0;
        if (line[0] && line[0] != '#')
            sl_push(l, line);
    }
    if (f != stdin)
        fclose(f);
    return 0;
}

static struct {
    const char *server, *cacert, *cert, *key, *token, *ns;
    int insecure, http11, json, conc;
    strlist_t pods, nodes;
} opt = { .conc = 64 };

static atomic_int next_idx;
static atomic_int n_ok, n_conflict, n_err, n_retries;
static atomic_int n_printed_errs;

static size_t sink(char *p, size_t sz, size_t nm, void *ud)
{
    (void)p;
    (void)ud;
    return sz * nm;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A curl handle with the connection options; *hp gets the header list. */
static CURL *new_handle(struct curl_slist **hp)
{
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    if (opt.token) {
        char auth[4096];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", opt.token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, opt.http11 ? (long)CURL_HTTP_VERSION_1_1 : (long)CURL_HTTP_VERSION_2TLS);
    if (opt.cacert)
        curl_easy_setopt(c, CURLOPT_CAINFO, opt.cacert);
    if (opt.cert)
        curl_easy_setopt(c, CURLOPT_SSLCERT, opt.cert);
    if (opt.key)
        curl_easy_setopt(c, CURLOPT_SSLKEY, opt.key);
    if (opt.insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    *hp = h;
    return c;
}

/* GET the namespace once before starting: fail fast on a bad URL, CA,
 * certificate or token instead of retrying every Binding. */
static int preflight(void)
{
    struct curl_slist *h = NULL;
    CURL *c = new_handle(&h);
    if (!c)
        return -1;
    char url[2048];
    snprintf(url, sizeof url, "%s/api/v1/namespaces/%s", opt.server, opt.ns);
    curl_easy_setopt(c, CURLOPT_URL, url);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
        fprintf(stderr, "bind_probe: GET %s: %s\n", url, curl_easy_strerror(rc));
        return -1;
    }
    if (code != 200) {
        fprintf(stderr, "bind_probe: GET %s: HTTP %ld\n", url, code);
        return -1;
    }
    return 0;
}

static void *worker(void *arg)
{
    (void)arg;
    struct curl_slist *h = NULL;
    CURL *c = new_handle(&h);
    if (!c) {
        atomic_fetch_add(&n_err, 1);
        return NULL;
    }
    curl_easy_setopt(c, CURLOPT_POST, 1L);

    char url[2048], body[2048];
    for (;;) {
        int i = atomic_fetch_add(&next_idx, 1);
        if (i >= opt.pods.n)
            break;
        const char *pod = opt.pods.v[i];
        const char *node = opt.nodes.v[i % opt.nodes.n];
        snprintf(url, sizeof url, "%s/api/v1/namespaces/%s/pods/%s/binding", opt.server, opt.ns, pod);
        int blen = snprintf(body, sizeof body,
                            "{\"apiVersion\":\"v1\",\"kind\":\"Binding\","
                            "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
                            "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"%s\"}}",
                            pod, opt.ns, node);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)blen);
        int done = 0;
        for (int attempt = 0; attempt < 6 && !done; attempt++) {
            if (attempt) {
                atomic_fetch_add(&n_retries, 1);
                usleep(20000u << (attempt < 5 ? attempt : 5));
            }
            CURLcode rc = curl_easy_perform(c);
            long code = 0;
            if (rc == CURLE_OK)
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
            if (rc == CURLE_OK && (code == 200 || code == 201)) {
                atomic_fetch_add(&n_ok, 1);
                done = 1;
            } else if (rc == CURLE_OK && code == 409) {
                atomic_fetch_add(&n_conflict, 1);
                done = 1;
            } else if (rc == CURLE_OK && code != 429 && code < 500) {
                if (atomic_fetch_add(&n_printed_errs, 1) < 5)
                    fprintf(stderr, "bind_probe: %s: HTTP %ld\n", pod, code);
                atomic_fetch_add(&n_err, 1);
                done = 1;
            } else if (attempt == 5) {
                if (atomic_fetch_add(&n_printed_errs, 1) < 5)
                    fprintf(stderr, "bind_probe: %s: %s (HTTP %ld)\n", pod,
                            rc == CURLE_OK ? "gave up" : curl_easy_strerror(rc), code);
                atomic_fetch_add(&n_err, 1);
            }
        }
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return NULL;
}

static long self_hwm_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

static void usage(void)
{
    fprintf(stderr, "usage: bind_probe --server URL [--cacert F] [--cert F --key F | --token T] [--insecure]\n"
                    "                  --namespace NS (--pods-file F | --pod-prefix P --count N [--start I])\n"
                    "                  (--nodes-file F | --node-prefix P --node-count N | --nodes a,b,...)\n"
                    "                  [--concurrency C (64)] [--http1.1] [--json]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *pod_prefix = NULL, *node_prefix = NULL;
    long count = -1, start = 0, node_count = -1;
    enum {
        O_CACERT = 256,
        O_CERT,
        O_KEY,
        O_TOKEN,
        O_INSECURE,
        O_PODS_FILE,
        O_POD_PREFIX,
        O_COUNT,
        O_START,
        O_NODES_FILE,
        O_NODE_PREFIX,
        O_NODE_COUNT,
        O_NODES,
        O_HTTP11,
        O_JSON
    };
    static const struct option lo[] = { { "server", required_argument, 0, 's' },
                                        { "namespace", required_argument, 0, 'n' },
                                        { "concurrency", required_argument, 0, 'c' },
                                        { "cacert", required_argument, 0, O_CACERT },
                                        { "cert", required_argument, 0, O_CERT },
                                        { "key", required_argument, 0, O_KEY },
                                        { "token", required_argument, 0, O_TOKEN },
                                        { "insecure", no_argument, 0, O_INSECURE },
                                        { "pods-file", required_argument, 0, O_PODS_FILE },
                                        { "pod-prefix", required_argument, 0, O_POD_PREFIX },
                                        { "count", required_argument, 0, O_COUNT },
                                        { "start", required_argument, 0, O_START },
                                        { "nodes-file", required_argument, 0, O_NODES_FILE },
                                        { "node-prefix", required_argument, 0, O_NODE_PREFIX },
                                        { "node-count", required_argument, 0, O_NODE_COUNT },
                                        { "nodes", required_argument, 0, O_NODES },
                                        { "http1.1", no_argument, 0, O_HTTP11 },
                                        { "json", no_argument, 0, O_JSON },
                                        { "help", no_argument, 0, 'h' },
                                        { 0, 0, 0, 0 } };
    int ch;
    while ((ch = getopt_long(argc, argv, "s:n:c:h", lo, NULL)) != -1) {
        switch (ch) {
        case 's': opt.server = optarg; break;
        case 'n': opt.ns = optarg; break;
        case 'c': opt.conc = atoi(optarg); break;
        case O_CACERT: opt.cacert = optarg; break;
        case O_CERT: opt.cert = optarg; break;
        case O_KEY: opt.key = optarg; break;
        case O_TOKEN: opt.token = optarg; break;
        case O_INSECURE: opt.insecure = 1; break;
        case O_PODS_FILE:
            if (sl_read_file(&opt.pods, optarg))
                return 2;
            break;
        case O_POD_PREFIX: pod_prefix = optarg; break;
        case O_COUNT: count = atol(optarg); break;
        case O_START: start = atol(optarg); break;
        case O_NODES_FILE:
            if (sl_read_file(&opt.nodes, optarg))
                return 2;
            break;
        case O_NODE_PREFIX: node_prefix = optarg; break;
        case O_NODE_COUNT: node_count = atol(optarg); break;
        case O_NODES: {
            char *s = strdup(optarg), *save = NULL;
            for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save))
                sl_push(&opt.nodes, t);
            free(s);
            break;
        }
        case O_HTTP11: opt.http11 = 1; break;
        case O_JSON: opt.json = 1; break;
        default: usage();
        }
    }
    if (!opt.server || !opt.ns)
        usage();
    char buf[512];
    if (pod_prefix) {
        if (count < 0)
            usage();
        for (long i = start; i < start + count; i++) {
            snprintf(buf, sizeof buf, "%s%ld", pod_prefix, i);
            sl_push(&opt.pods, buf);
        }
    }
    if (node_prefix) {
        if (node_count <= 0)
            usage();
        for (long i = 0; i < node_count; i++) {
            snprintf(buf, sizeof buf, "%s%ld", node_prefix, i);
            sl_push(&opt.nodes, buf);
        }
    }
    if (opt.pods.n == 0 || opt.nodes.n == 0) {
        fprintf(stderr, "bind_probe: no pods or no nodes given\n");
        usage();
    }
    if (opt.conc < 1)
        opt.conc = 1;
    if (opt.conc > opt.pods.n)
        opt.conc = opt.pods.n;

    curl_global_init(CURL_GLOBAL_ALL);
    if (preflight())
        return 2;
    pthread_t *th = calloc((size_t)opt.conc, sizeof *th);
    double t0 = now_s();
    for (int i = 0; i < opt.conc; i++)
        if (pthread_create(&th[i], NULL, worker, NULL)) {
            perror("pthread_create");
            return 2;
        }
    for (int i = 0; i < opt.conc; i++)
        pthread_join(th[i], NULL);
    double secs = now_s() - t0;

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                 (double)ru.ru_stime.tv_usec / 1e6;
    long hwm = self_hwm_kb();
    if (hwm < 0)
        hwm = ru.ru_maxrss;
    int ok = atomic_load(&n_ok), conf = atomic_load(&n_conflict), err = atomic_load(&n_err);
    double rate = secs > 0 ? (double)ok / secs : 0;
    if (opt.json)
        printf("{\"total\":%d,\"ok\":%d,\"conflicts\":%d,\"errors\":%d,\"retries\":%d,"
               "\"concurrency\":%d,\"seconds\":%.3f,\"pods_per_s\":%.1f,\"rss_kb\":%ld,\"cpu_s\":%.2f}\n",
               opt.pods.n, ok, conf, err, atomic_load(&n_retries), opt.conc, secs, rate, hwm, cpu);
    else
        printf("total=%d ok=%d conflicts=%d errors=%d retries=%d concurrency=%d seconds=%.3f "
               "pods_per_s=%.1f rss_kb=%ld cpu_s=%.2f\n",
               opt.pods.n, ok, conf, err, atomic_load(&n_retries), opt.conc, secs, rate, hwm, cpu);
    for (int i = 0; i < opt.pods.n; i++)
        free(opt.pods.v[i]);
    for (int i = 0; i < opt.nodes.n; i++)
        free(opt.nodes.v[i]);
    free(opt.pods.v);
    free(opt.nodes.v);
    free(th);
    curl_global_cleanup();
    return (ok == opt.pods.n) ? 0 : 1;
}
