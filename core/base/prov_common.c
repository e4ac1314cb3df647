/* prov_common.c: the settable clock and the int64 text helpers that every
 * other part of libprovider uses. */
#include <string.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <apr_time.h>
#include "prov_common.h"

static volatile apr_int64_t fixed_now;
static const char *clock_file;

/* The test clock file: whole seconds since the epoch, read on every call
 * (tests only: it moves time under a running server without a restart). */
static apr_int64_t read_clock_file(void)
{
    char buf[32];
    apr_int64_t v = 0;
    FILE *f = fopen(clock_file, "r");
    size_t n;
    if (!f)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r'))
        n--;
    buf[n] = '\0';
    return prov_parse_i64(&v, buf) == APR_SUCCESS && v > 0 ? v : 0;
}

apr_int64_t prov_now(void)
{
    apr_int64_t f = fixed_now;
    if (!f && clock_file)
        f = read_clock_file();
    return f ? f : (apr_int64_t)apr_time_sec(apr_time_now());
}

void prov_clock_set_file(const char *path)
{
    clock_file = path;
}

void prov_clock_set(apr_int64_t fixed_seconds)
{
    fixed_now = fixed_seconds;
}

/* The decimal digits of a, ending just before end; returns the first. Two
 * digits a step (a journal record and a ledger row are a dozen numbers
 * each, on every request: half the divisions). */
static char *u64_digits(char *end, apr_uint64_t a)
{
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    unsigned i;
    while (a >= 100) {
        i = (unsigned)(a % 100) * 2;
        a /= 100;
        *--end = pairs[i + 1];
        *--end = pairs[i];
    }
    if (a < 10) {
        *--end = (char)('0' + a);
        return end;
    }
    i = (unsigned)a * 2;
    *--end = pairs[i + 1];
    *--end = pairs[i];
    return end;
}

/* Without printf: the writer formats a dozen numbers per ledger row. */
const char *prov_i64(apr_int64_t v, apr_pool_t *p)
{
    char buf[24], *c;
    c = u64_digits(buf + sizeof(buf), v < 0 ? (apr_uint64_t)(-(v + 1)) + 1 : (apr_uint64_t)v);
    if (v < 0)
        *--c = '-';
    return apr_pstrmemdup(p, c, (apr_size_t)(buf + sizeof(buf) - c));
}

char *prov_u64_format_buf(char *buf, apr_uint64_t a)
{
    char tmp[24], *c = u64_digits(tmp + sizeof(tmp), a);
    apr_size_t n = (apr_size_t)(tmp + sizeof(tmp) - c);
    memcpy(buf, c, n);
    buf[n] = '\0';
    return buf + n;
}

apr_status_t prov_parse_i64(apr_int64_t *out, const char *s)
{
    char *end = NULL;
    long long v;
    const char *c;

    if (!s || !*s)
        return APR_EINVAL;
    for (c = (*s == '-') ? s + 1 : s; *c; c++) {
        if (*c < '0' || *c > '9')
            return APR_EINVAL;
    }
    if (*s == '-' && !s[1])
        return APR_EINVAL;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || !end || *end)
        return APR_EINVAL;
    *out = (apr_int64_t)v;
    return APR_SUCCESS;
}
