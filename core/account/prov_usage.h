/* prov_usage.h: usage reports from the ledger (the truth): requests, the four
 * token kinds and credits, filtered by user, key, model and time, grouped by
 * day, key or model; and the per-key summary (today and the last seven days)
 * that providerctl and the cabinet show. */
#ifndef PROV_USAGE_H
#define PROV_USAGE_H

#include "prov_common.h"
#include "prov_store.h"
#include "prov_json.h"

typedef enum {
    PROV_USAGE_BY_NONE = 0,   /* one total row */
    PROV_USAGE_BY_DAY,        /* UTC days */
    PROV_USAGE_BY_KEY,
    PROV_USAGE_BY_MODEL
} prov_usage_by_e;

typedef struct prov_usage_filter_t {
    apr_int64_t user_id;      /* 0 = any */
    apr_int64_t key_id;       /* 0 = any */
    apr_int64_t model_id;     /* 0 = any */
    apr_int64_t since;        /* inclusive, 0 = from the start */
    apr_int64_t until;        /* exclusive, 0 = up to now */
    prov_usage_by_e by;
} prov_usage_filter_t;

typedef struct prov_usage_row_t {
    const char *group;        /* "2026-11-22", a key id, a model public id, or "total" */
    apr_int64_t requests;
    prov_tokens_t tokens;
    prov_micro_t credits;
} prov_usage_row_t;

/* A report's range in days: the rollups serve the whole UTC days
 * [first_day, end_day), the raw rows the rest of [since, until). */
#define PROV_USAGE_END ((apr_int64_t)1 << 52)   /* until 0: no end */
typedef struct prov_usage_span_t {
    apr_int64_t since, until;   /* until: PROV_USAGE_END for none */
    apr_int64_t first_day;      /* the first day that starts at or after since */
    apr_int64_t end_day;        /* the start of until's day */
} prov_usage_span_t;
void prov_usage_span(prov_usage_span_t *sp, apr_int64_t since, apr_int64_t until);

/* Rows (prov_usage_row_t*) in group order, counting settled ledger rows
 * (every status except "reserved"; released ones count as requests with 0
 * credits). */
apr_status_t prov_usage_report(apr_array_header_t **rows, prov_store_t *s,
                               const prov_usage_filter_t *f, apr_pool_t *p);

typedef struct prov_usage_key_t {
    prov_usage_row_t today;   /* since 00:00 UTC of now's day */
    prov_usage_row_t week;    /* the last seven days (now - 7 * 86400) */
} prov_usage_key_t;

apr_status_t prov_usage_key_summary(prov_usage_key_t *out, prov_store_t *s, apr_int64_t key_id,
                                    apr_int64_t now, apr_pool_t *p);

/* Adds a row's figures to o (requests, the four token kinds by name, credits
 * as a decimal) and returns o: the shape the cabinet API, MCP and providerctl's
 * --json share. */
json_object *prov_usage_fields(json_object *o, const prov_usage_row_t *u);

#endif
