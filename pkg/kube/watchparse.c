/* watchparse.c -- watch stream line splitting and event decoding. */
#include "kube/watchparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

void kube_watch_parser_init(kube_watch_parser_t *p, kube_event_cb cb, void *ud, char *rv, size_t rvlen, size_t max_line)
{
    memset(p, 0, sizeof *p);
    p->cb = cb;
    p->ud = ud;
    p->rv = rv;
    p->rvlen = rvlen;
    p->max_line = max_line ? max_line : KUBE_WATCH_MAX_LINE;
}

void kube_watch_parser_free(kube_watch_parser_t *p)
{
    free(p->buf);
    p->buf = NULL;
    p->len = p->cap = 0;
}

static int fail(kube_watch_parser_t *p, const char *fmt, const char *arg)
{
    snprintf(p->err, sizeof p->err, fmt, arg);
    p->done = p->failed = 1;
    return -1;
}

static int is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

/* Copies object.metadata.resourceVersion into the caller's buffer. */
static void note_rv(kube_watch_parser_t *p, json_t *obj)
{
    const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (!rv || !p->rv || !p->rvlen)
        return;
    if (strlen(rv) >= p->rvlen)
        return; /* never truncate: a wrong rv is worse than an old one */
    memcpy(p->rv, rv, strlen(rv) + 1);
}

static int error_event(kube_watch_parser_t *p, json_t *obj)
{
    json_int_t code = json_integer_value(json_object_get(obj, "code"));
    const char *msg = json_string_value(json_object_get(obj, "message"));
    p->status = code == 410 ? 410 : (long)code;
    char text[200];
    snprintf(text, sizeof text, "%.150s (%ld)", msg ? msg : "watch error", p->status);
    return fail(p, "watch ERROR event: %s", text);
}

int kube_watch_parser_line(kube_watch_parser_t *p, const char *line, size_t n)
{
    if (is_blank(line, n))
        return 0;
    json_error_t je;
    json_t *ev = json_loadb(line, n, 0, &je);
    if (!ev)
        return fail(p, "bad watch event: %s", je.text);
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj)) {
        json_decref(ev);
        return fail(p, "bad watch event: %s", "no type or object");
    }
    int rc = 0, known = !strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED") ||
                        !strcmp(type, "BOOKMARK");
    p->events++;
    if (!strcmp(type, "ERROR")) {
        if (p->cb)
            p->cb(type, obj, p->ud);
        rc = error_event(p, obj);
    } else if (known) {
        note_rv(p, obj);
        if (p->cb && p->cb(type, obj, p->ud) != 0) {
            p->done = 1;
            rc = -1;
        }
    } /* unknown types are skipped: newer servers may add some */
    json_decref(ev);
    return rc;
}

static int grow(kube_watch_parser_t *p, size_t need)
{
    if (need > p->max_line)
        return -1;
    if (need <= p->cap)
        return 0;
    size_t cap = p->cap ? p->cap : 4096;
    while (cap < need)
        cap *= 2;
    if (cap > p->max_line)
        cap = p->max_line;
    p->buf = util_xrealloc(p->buf, cap);
    p->cap = cap;
    return 0;
}

int kube_watch_parser_feed(kube_watch_parser_t *p, const char *data, size_t n)
{
    while (n > 0 && !p->done) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        if (p->len == 0 && nl) {
            /* Whole line in this chunk: decode in place, no copy. */
            if (kube_watch_parser_line(p, data, take) != 0)
                return -1;
        } else {
            if (grow(p, p->len + take) != 0) {
                char lim[32];
                snprintf(lim, sizeof lim, "%zu bytes", p->max_line);
                return fail(p, "watch event longer than %s; dropping this stream", lim);
            }
            memcpy(p->buf + p->len, data, take);
            p->len += take;
            if (nl) {
                size_t len = p->len;
                p->len = 0;
                if (kube_watch_parser_line(p, p->buf, len) != 0)
                    return -1;
            }
        }
        if (!nl)
            break;
        data = nl + 1;
        n -= take + 1;
    }
    return p->done ? -1 : 0;
}

int kube_watch_parser_finish(kube_watch_parser_t *p)
{
    if (p->done || p->len == 0)
        return p->failed ? -1 : 0;
    size_t len = p->len;
    p->len = 0;
    return kube_watch_parser_line(p, p->buf, len);
}
