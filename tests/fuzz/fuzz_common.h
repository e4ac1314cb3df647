/* fuzz_common.h: what the libFuzzer harnesses of tests/fuzz share: APR set up
 * once (LLVMFuzzerInitialize), a pool per input, the core's log kept quiet,
 * FUZZ_CHECK (a broken invariant aborts, so that libFuzzer keeps the input),
 * a reader that takes small numbers from the front of an input (how a harness
 * chooses options and piece sizes), and a JSON walk for the checks. Included
 * by exactly one harness per program. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include "prov_common.h"
#include "prov_json.h"
#include "prov_log.h"

#define FUZZ_CHECK(cond) \
    do { if (!(cond)) { \
        fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
        abort(); } } while (0)

static apr_pool_t *fuzz_root;

static void fuzz_quiet(void *baton, prov_log_level_e level, apr_status_t rv, const char *msg)
{
    (void)baton;
    (void)level;
    (void)rv;
    (void)msg;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (apr_initialize() != APR_SUCCESS || apr_pool_create(&fuzz_root, NULL) != APR_SUCCESS)
        abort();
    prov_log_set(fuzz_quiet, NULL, PROV_LOG_ERR);
    return 0;
}

/* A pool for one input (destroy it at the end). */
static inline apr_pool_t *fuzz_pool(void)
{
    apr_pool_t *p = NULL;
    if (apr_pool_create(&p, fuzz_root) != APR_SUCCESS)
        abort();
    return p;
}

/* The input as a NUL-terminated copy in p. */
static inline char *fuzz_str(const uint8_t *data, size_t size, apr_pool_t *p)
{
    return apr_pstrmemdup(p, (const char *)data, size);
}

/* Takes one byte from the front of the input (0 when it is empty). */
static inline unsigned fuzz_take(const uint8_t **data, size_t *size)
{
    unsigned v;
    if (!*size)
        return 0;
    v = **data;
    (*data)++;
    (*size)--;
    return v;
}

/* Takes n (at most 8) bytes as a little-endian unsigned number. */
static inline uint64_t fuzz_take_u64(const uint8_t **data, size_t *size, int n)
{
    uint64_t v = 0;
    int i;
    for (i = 0; i < n; i++)
        v |= (uint64_t)fuzz_take(data, size) << (8 * i);
    return v;
}

/* The serialisation of a value parses back (compact and strictly). */
static inline json_object *fuzz_reparse(const char *text, apr_pool_t *p)
{
    const char *err = NULL;
    json_object *o;
    FUZZ_CHECK(text != NULL);
    o = prov_json_parse(text, strlen(text), &err, p);
    if (!o)
        fprintf(stderr, "does not parse back (%s): %.300s\n", err, text);
    FUZZ_CHECK(o != NULL);
    return o;
}

#endif
