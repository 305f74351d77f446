/* fuzz.h -- what the libFuzzer targets in test/fuzz share: the entry point's
 * prototype and the input as a JSON document. Each target is one
 * fuzz_NAME.c built by `make fuzz` into build-fuzz/fuzz/NAME, with its seed
 * corpus in test/fuzz/corpus/NAME. */
#ifndef AISCHED_FUZZ_H
#define AISCHED_FUZZ_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a JSON document (the API server's bytes), or NULL when it
 * does not decode: jansson's own errors are not what these targets test. */
static inline json_t *fuzz_json(const uint8_t *data, size_t size)
{
    return json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
}

/* The input as a NUL-terminated string (the caller frees). */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return NULL;
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* A property that must hold whatever the input: abort so libFuzzer keeps
 * the input as a crash. */
#define FUZZ_ASSERT(cond)                                                                                              \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            abort();                                                                                                   \
    } while (0)

/* The whole target for a parser of one object: T *parse(json, err, errlen)
 * returning NULL with a message, and its release function. */
#define FUZZ_OBJECT_PARSER(T, parse, release)                                                                          \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                                       \
    {                                                                                                                  \
        json_t *j = fuzz_json(data, size);                                                                             \
        if (!j)                                                                                                        \
            return 0;                                                                                                  \
        char err[256] = "";                                                                                            \
        T *obj = parse(j, err, sizeof err);                                                                            \
        if (obj)                                                                                                       \
            release(obj);                                                                                              \
        else                                                                                                           \
            FUZZ_ASSERT(err[0] != '\0'); /* a refusal always says why */                                               \
        json_decref(j);                                                                                                \
        return 0;                                                                                                      \
    }

#endif
