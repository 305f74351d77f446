/* assets.h -- the dashboard's single-page app (pkg/dashboard/web), built
 * into the binary, served open under /ui/. */
#ifndef AISCHED_DASHBOARD_ASSETS_H
#define AISCHED_DASHBOARD_ASSETS_H

#include "server/http.h"

/* One embedded file: its base name ("app.js") and its text. */
typedef struct dashboard_asset {
    const char *name;
    const char *data;
} dashboard_asset_t;

/* Generated at build time ($(B)/gen/dashboard_assets.c, by embed.sh);
 * ends with a { NULL, NULL } entry. */
extern const dashboard_asset_t dashboard_assets[];

/* The embedded file with that name, or NULL. */
const dashboard_asset_t *dashboard_asset_find(const char *name);

/* The Content-Type for a file name by its extension (html, js, css, svg,
 * json; anything else text/plain). */
const char *dashboard_content_type(const char *name);

/* The /ui/ route (http_route_fn): "/ui/" is index.html, "/ui/NAME" the
 * embedded file NAME, anything else 404. ud is unused. */
int dashboard_ui_route(void *ud, const char *path, const char *query, char **body, const char **ctype);

/* Registers /ui/ as an open route on http (the files name no workload; the
 * data comes from the authenticated /api/v1 routes). 0 or -1. */
int dashboard_ui_add(http_server_t *http);

#endif
