/* assets.c -- serves the embedded single-page app under /ui/. */
#include "dashboard/assets.h"

#include <string.h>

#include "util/util.h"

const dashboard_asset_t *dashboard_asset_find(const char *name)
{
    for (const dashboard_asset_t *a = dashboard_assets; a->name; a++)
        if (!strcmp(a->name, name))
            return a;
    return NULL;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

const char *dashboard_content_type(const char *name)
{
    if (ends_with(name, ".html"))
        return "text/html; charset=utf-8";
    if (ends_with(name, ".js") || ends_with(name, ".mjs"))
        return "text/javascript; charset=utf-8";
    if (ends_with(name, ".css"))
        return "text/css; charset=utf-8";
    if (ends_with(name, ".svg"))
        return "image/svg+xml";
    if (ends_with(name, ".json"))
        return "application/json";
    return "text/plain; charset=utf-8";
}

int dashboard_ui_route(void *ud, const char *path, const char *query, char **body, const char **ctype)
{
    (void)ud;
    (void)query;
    const char *name = strncmp(path, "/ui/", 4) ? NULL : path + 4;
    if (name && !*name)
        name = "index.html";
    /* Only the table's exact names match: no directory, no "..", nothing
     * from the file system. */
    const dashboard_asset_t *a = name ? dashboard_asset_find(name) : NULL;
    if (!a) {
        *ctype = "text/plain; charset=utf-8";
        *body = util_strdup("not found\n");
        return 404;
    }
    *ctype = dashboard_content_type(a->name);
    *body = util_strdup(a->data);
    return 200;
}

int dashboard_ui_add(http_server_t *http)
{
    http_route_t r = { .prefix = "/ui/", .fn = dashboard_ui_route, .open = 1 };
    return http_server_route(http, &r);
}
