/* room.h -- the gang row's room (made by row.c's gang_row_init), shared
 * with the pages the row serves (dash.c); nothing outside pkg/gang
 * includes it. */
#ifndef AISCHED_GANG_ROOM_H
#define AISCHED_GANG_ROOM_H

#include "framework/services.h"
#include "gang/gang.h"

/* The row's room: the services and the gang store, which the row makes
 * and frees and publishes to the core (gang_row_publish). */
typedef struct gang_room {
    const sched_services_t *svc;
    void *core;
    gang_store_t *gangs;
} gang_room_t;

#endif
