/* list.c -- paginated LIST (limit/continue). A fetcher thread gets page N+1
 * while the caller's callback takes page N's items, so the API server's
 * time and ours overlap (a start-up LIST of 100,000 pods is 200 pages). In
 * memory at once: page N's text and tree and page N+1's text, never the
 * whole list. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kube/client.h"
#include "kube/client_internal.h"
#include "util/util.h"

/* The API server writes kind, apiVersion and metadata before "items"; the
 * continue token is looked for only there. */
#define PEEK_MAX 65536

typedef struct fetcher {
    kube_client_t *c;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *path; /* the page asked for; NULL: nothing asked */
    int ready;  /* resp/rc/err hold an answer not yet taken */
    int quit;
    kube_response_t resp;
    int rc;
    char err[512];
} fetcher_t;

static void *fetch_main(void *arg)
{
    fetcher_t *f = arg;
    util_thread_name("list-fetch");
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!f->path && !f->quit)
            pthread_cond_wait(&f->cv, &f->mu);
        if (f->quit)
            break;
        char *p = f->path;
        f->path = NULL;
        pthread_mutex_unlock(&f->mu);
        kube_response_t r;
        char err[512] = "";
        int rc = kube_request(f->c, "GET", p, NULL, NULL, &r, err, sizeof err);
        free(p);
        pthread_mutex_lock(&f->mu);
        f->resp = r;
        f->rc = rc;
        memcpy(f->err, err, sizeof err);
        f->ready = 1;
        pthread_cond_broadcast(&f->cv);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

static int fetcher_start(fetcher_t *f, kube_client_t *c)
{
    memset(f, 0, sizeof *f);
    f->c = c;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    if (pthread_create(&f->th, NULL, fetch_main, f) != 0) {
        pthread_cond_destroy(&f->cv);
        pthread_mutex_destroy(&f->mu);
        return -1;
    }
    return 0;
}

/* Asks for a page (path is taken); the fetcher must be idle. */
static void fetch_ask(fetcher_t *f, char *path)
{
    pthread_mutex_lock(&f->mu);
    f->path = path;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* The answer to the last fetch_ask, as kube_request gives it. */
static int fetch_take(fetcher_t *f, kube_response_t *r, char *err, size_t errlen)
{
    pthread_mutex_lock(&f->mu);
    while (!f->ready)
        pthread_cond_wait(&f->cv, &f->mu);
    *r = f->resp;
    int rc = f->rc;
    if (rc != 0)
        util_errf(err, errlen, "%s", f->err);
    f->ready = 0;
    memset(&f->resp, 0, sizeof f->resp);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

/* Waits out a request still on the wire (its answer is dropped), then joins. */
static void fetcher_stop(fetcher_t *f)
{
    pthread_mutex_lock(&f->mu);
    f->quit = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->th, NULL);
    free(f->path);
    kube_response_free(&f->resp);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
}

static char *page_path(const char *path, int limit, const char *cont)
{
    sbuf_t b = { 0 };
    char sep = strchr(path, '?') ? '&' : '?';
    sbuf_puts(&b, path);
    if (limit > 0) {
        sbuf_printf(&b, "%climit=%d", sep, limit);
        sep = '&';
    }
    if (cont) {
        char *e = util_urlencode(cont);
        sbuf_printf(&b, "%ccontinue=%s", sep, e);
        free(e);
    }
    return b.data;
}

static int copy_rv(const char *rv, char *out, size_t outlen)
{
    if (!out || !outlen)
        return 0;
    if (!rv)
        rv = "";
    if (strlen(rv) >= outlen)
        return -1;
    memcpy(out, rv, strlen(rv) + 1);
    return 0;
}

/* metadata.continue of a page, from its text before "items" (caller
 * frees); NULL when there is none or it is not found there. The parsed
 * page has the last word: a wrong guess only costs the prefetch. */
static char *peek_continue(const char *body, size_t len)
{
    const char *end = memmem(body, len < PEEK_MAX ? len : PEEK_MAX, "\"items\":", 8);
    if (!end)
        return NULL;
    size_t n = (size_t)(end - body);
    while (n > 0 && (body[n - 1] == ',' || body[n - 1] == ' ' || body[n - 1] == '\n'))
        n--;
    char *head = util_xmalloc(n + 2);
    memcpy(head, body, n);
    head[n] = '}';
    json_t *j = json_loadb(head, n + 1, 0, NULL);
    free(head);
    const char *c = json_string_value(json_object_get(json_object_get(j, "metadata"), "continue"));
    char *out = c && *c ? util_strdup(c) : NULL;
    json_decref(j);
    return out;
}

/* A page through the fetcher when there is one, else on this thread. */
static int get_page(fetcher_t *f, kube_client_t *c, char *p, kube_response_t *r, char *err, size_t errlen)
{
    if (f) {
        fetch_ask(f, p);
        return fetch_take(f, r, err, errlen);
    }
    int rc = kube_request(c, "GET", p, NULL, NULL, r, err, errlen);
    free(p);
    return rc;
}

int kube_list(kube_client_t *c, const char *path, int limit, kube_item_cb cb, void *ud, char *rv_out, size_t rvlen,
              long *status, char *err, size_t errlen)
{
    /* The fetcher starts with the first page that has a next one: a list
     * of one page costs no thread and no second connection. */
    fetcher_t fs, *f = NULL;
    int rc = 0, first = 1;
    if (rv_out && rvlen)
        rv_out[0] = '\0';
    if (status)
        *status = 0;
    kube_response_t r;
    rc = get_page(f, c, page_path(path, limit, NULL), &r, err, errlen);
    while (rc == 0) {
        /* The next page is asked for before this one is parsed. */
        char *ahead = limit > 0 ? peek_continue(r.body, r.len) : NULL;
        if (ahead && !f && fetcher_start(&fs, c) == 0)
            f = &fs;
        if (ahead && !f) {
            free(ahead);
            ahead = NULL;
        }
        if (ahead)
            fetch_ask(f, page_path(path, limit, ahead));
        json_t *page = NULL;
        rc = kube_client_decode(&r, "GET", path, &page, status, err, errlen);
        kube_response_free(&r);
        json_t *items = json_object_get(page, "items"), *meta = json_object_get(page, "metadata");
        if (rc == 0 && !json_is_array(items) && !json_is_null(items) && items) {
            util_errf(err, errlen, "LIST %s: items is not an array", path);
            rc = -1;
        } else if (rc == 0 && first &&
                   copy_rv(json_string_value(json_object_get(meta, "resourceVersion")), rv_out, rvlen)) {
            util_errf(err, errlen, "LIST %s: resourceVersion too long", path);
            rc = -1;
        }
        first = 0;
        size_t i;
        json_t *it;
        json_array_foreach (items, i, it) {
            if (rc || !cb || cb(it, ud) == 0)
                continue;
            util_errf(err, errlen, "LIST %s: stopped by the caller", path);
            rc = -1;
        }
        const char *next = rc == 0 ? json_string_value(json_object_get(meta, "continue")) : NULL;
        int more = next && *next;
        if (ahead && more && !strcmp(ahead, next)) {
            rc = fetch_take(f, &r, err, errlen);
        } else {
            if (ahead) { /* a wrong guess, or we stop: drop what came */
                kube_response_t drop;
                char e[8];
                if (fetch_take(f, &drop, e, sizeof e) == 0)
                    kube_response_free(&drop);
            }
            if (more)
                rc = get_page(f, c, page_path(path, limit, next), &r, err, errlen);
        }
        free(ahead);
        json_decref(page);
        if (!more)
            break;
    }
    if (f)
        fetcher_stop(f);
    return rc;
}

static int append_item(json_t *item, void *ud)
{
    return json_array_append((json_t *)ud, item) < 0 ? -1 : 0;
}

int kube_list_array(kube_client_t *c, const char *path, json_t *arr, long *status, char *err, size_t errlen)
{
    char rv[64];
    *status = 0;
    return kube_list(c, path, 500, append_item, arr, rv, sizeof(rv), status, err, errlen);
}
