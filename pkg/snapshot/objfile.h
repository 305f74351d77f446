/* objfile.h -- Kubernetes object files as a user writes them: JSON, or YAML
 * with one or more documents (`---`), each an object or a List. */
#ifndef AISCHED_SNAPSHOT_OBJFILE_H
#define AISCHED_SNAPSHOT_OBJFILE_H

#include <stddef.h>
#include <jansson.h>

/* Bounds on untrusted input: a file larger, deeper or with more nodes is
 * refused with a message rather than parsed. */
#define OBJFILE_MAX_BYTES (256u << 20)
#define OBJFILE_MAX_DEPTH 64

/* Every document of buf as JSON values, in order: a new array, or NULL with
 * "line N: why". Plain YAML scalars become integers, reals, booleans or null
 * where YAML 1.1 core says so ("8" quoted stays a string); empty documents
 * are left out. JSON is YAML, so a JSON file reads the same way. */
json_t *objfile_parse(const char *buf, size_t len, char *err, size_t errlen);

/* The file's objects: each document, with a List's items spliced in. Every
 * object must be a JSON object with a kind. NULL with "PATH: why". */
json_t *objfile_load(const char *path, char *err, size_t errlen);

/* The file's single document (a snapshot, a config): NULL with "PATH: why". */
json_t *objfile_load_one(const char *path, char *err, size_t errlen);

#endif
