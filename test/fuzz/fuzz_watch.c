/* fuzz_watch.c -- the watch stream's framing: newline-delimited
 * {"type","object"} events, fed in pieces whose sizes the input's first
 * bytes choose, so a line split anywhere (inside a UTF-8 sequence, at a
 * '\n') is tried. The resourceVersion buffer must stay a C string within its
 * size. */
#include "fuzz.h"
#include "kube/watchparse.h"

static int on_event(const char *type, json_t *object, void *ud)
{
    unsigned long *n = ud;
    FUZZ_ASSERT(type != NULL && object != NULL);
    (*n)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t chunk = 1 + (data[0] % 64);           /* 1..64 bytes a read */
    size_t max_line = 16 + (size_t)data[1] * 64; /* small caps hit the line limit */
    data += 2, size -= 2;
    char rv[32];
    memset(rv, 'x', sizeof rv);
    rv[0] = '\0';
    unsigned long n = 0;
    kube_watch_parser_t p;
    kube_watch_parser_init(&p, on_event, &n, rv, sizeof rv, max_line);
    size_t off = 0;
    int rc = 0;
    while (off < size && rc == 0) {
        size_t k = size - off < chunk ? size - off : chunk;
        rc = kube_watch_parser_feed(&p, (const char *)data + off, k);
        off += k;
    }
    if (rc == 0)
        kube_watch_parser_finish(&p);
    FUZZ_ASSERT(memchr(rv, '\0', sizeof rv) != NULL);
    FUZZ_ASSERT(n <= p.events); /* events counts the unknown types it skips too */
    if (p.failed)
        FUZZ_ASSERT(p.err[0] != '\0');
    kube_watch_parser_free(&p);
    return 0;
}
