/* core/base/: what every other room of core/ stands on. The shared types,
 * the clock that tests set and the APR headers (prov_common.h, this header);
 * the logging seam that the module and providerctl bridge (prov_log); money
 * as exact integers with checked arithmetic (prov_money); json-c with APR
 * pools (prov_json); the table of the service's wire errors (prov_error);
 * what may reach an HTTP header line (prov_header); and outside text masked
 * for a log line (prov_redact). It calls no other room: APR, apr-util and
 * json-c only. (core/README lists the rooms.) */
/* prov_common.h: the few types and constants every part of libprovider shares:
 * micro-credit money, token counts, the clock that tests can set, and the
 * APR headers everything builds on. libprovider never includes an httpd header. */
#ifndef PROV_COMMON_H
#define PROV_COMMON_H

#include <apr.h>
#include <apr_pools.h>
#include <apr_strings.h>
#include <apr_tables.h>
#include <apr_hash.h>
#include <apr_errno.h>

/* 1 credit = 1,000,000 micro-credits; every amount in the core is an integer. */
typedef apr_int64_t prov_micro_t;
#define PROV_MICRO_PER_CREDIT APR_INT64_C(1000000)

/* Token counts as the four kinds that the rate card prices (README "Pricing"). */
typedef struct prov_tokens_t {
    apr_int64_t input;      /* input tokens not served from cache */
    apr_int64_t output;     /* output tokens that are not reasoning */
    apr_int64_t cache;      /* cached / cache-read input tokens */
    apr_int64_t reasoning;  /* reasoning tokens */
} prov_tokens_t;

/* Seconds since the epoch. Real time unless a test has set a fixed value. */
apr_int64_t prov_now(void);
/* Sets the clock to a fixed value; 0 returns it to real time. */
void prov_clock_set(apr_int64_t fixed_seconds);
/* Tests: read "now" from this file (epoch seconds) on every call; NULL or an
 * unreadable file means real time. The string must outlive the process. */
void prov_clock_set_file(const char *path);

/* Formats an int64 as decimal text in p. */
const char *prov_i64(apr_int64_t v, apr_pool_t *p);
/* a in decimal into buf (at least 21 bytes), NUL-terminated; returns the end. */
char *prov_u64_format_buf(char *buf, apr_uint64_t a);
/* Parses a whole decimal int64; APR_EINVAL on anything else (sign, spaces, overflow). */
apr_status_t prov_parse_i64(apr_int64_t *out, const char *s);

#endif
