/* watchparse.h -- splits a watch stream into lines and decodes each as a
 * {"type","object"} event. Internal to the client; exposed for unit tests.
 *
 * The stream is untrusted: lines can be huge (a 1 MiB object) and are
 * buffered up to max_line bytes; a longer line, bad JSON or a wrong shape
 * stops the parser with a message in err. */
#ifndef AISCHED_KUBE_WATCHPARSE_H
#define AISCHED_KUBE_WATCHPARSE_H

#include <stddef.h>
#include "kube/client.h"

#define KUBE_WATCH_MAX_LINE (64u << 20)

typedef struct kube_watch_parser {
    char *buf; /* the incomplete line so far */
    size_t len, cap, max_line;
    kube_event_cb cb;
    void *ud;
    char *rv; /* caller's resourceVersion buffer, updated */
    size_t rvlen;
    long status; /* 410 when an ERROR event said Gone, else its code */
    int done;    /* 1: stop reading (cb asked, ERROR event or bad input) */
    int failed;  /* done because of an error (err says why) */
    unsigned long events;
    char err[256];
} kube_watch_parser_t;

void kube_watch_parser_init(kube_watch_parser_t *p, kube_event_cb cb, void *ud, char *rv, size_t rvlen,
                            size_t max_line);
/* Feeds stream bytes; returns 0 to go on, -1 once done. */
int kube_watch_parser_feed(kube_watch_parser_t *p, const char *data, size_t n);
/* The stream ended: decodes a last line without '\n'. Returns 0 or -1. */
int kube_watch_parser_finish(kube_watch_parser_t *p);
void kube_watch_parser_free(kube_watch_parser_t *p);

/* Decodes one line (n bytes, no '\n') as an event and dispatches it. */
int kube_watch_parser_line(kube_watch_parser_t *p, const char *line, size_t n);

#endif
