/* prov_jwrite.h: JSON written as text, without a tree, for the hot paths
 * that answer a client event by event: a growing byte buffer, strings
 * escaped exactly as json-c prints them (JSON_C_TO_STRING_PLAIN |
 * JSON_C_TO_STRING_NOSLASHESCAPE, so that text written here and text json-c
 * prints for the same value are the same bytes), integers, and the string
 * values found by prov_json_scan.h decoded or copied back out. */
#ifndef PROV_JWRITE_H
#define PROV_JWRITE_H

#include <string.h>
#include "prov_common.h"

/* A buffer (malloc'd, grown as written; always NUL-terminated once written
 * to). oom is set when it could not grow: what did not fit was dropped.
 * With grow set, the buffer is someone else's (a stream's output): grow
 * makes room for n more bytes (p and cap updated; zero when it cannot), and
 * the writer is never freed. */
typedef struct prov_jwrite_t {
    char *p;
    apr_size_t len, cap;
    int oom;
    int (*grow)(struct prov_jwrite_t *w, apr_size_t n);
    void *owner;                /* grow's */
} prov_jwrite_t;

/* An empty writer whose buffer is freed when p is cleaned up. A writer
 * that is only zeroed (memset) works too; prov_jwrite_free frees it. */
void prov_jwrite_init(prov_jwrite_t *w, apr_pool_t *p);
/* Frees the buffer; the writer is empty again. */
void prov_jwrite_free(prov_jwrite_t *w);
/* Makes room for n more bytes: zero when it could not (w->oom set). */
int prov_jwrite_room(prov_jwrite_t *w, apr_size_t n);

/* n bytes as they are (inline: events are written in many small pieces). */
static APR_INLINE void prov_jwrite_mem(prov_jwrite_t *w, const char *s, apr_size_t n)
{
    if (w->len + n + 1 > w->cap && !prov_jwrite_room(w, n))
        return;
    memcpy(w->p + w->len, s, n);
    w->len += n;
    w->p[w->len] = '\0';
}
/* A string literal as it is. */
#define prov_jwrite_lit(w, s) prov_jwrite_mem((w), (s), sizeof(s) - 1)
/* n bytes (any bytes, NUL too) as a JSON string, quotes included, escaped as
 * json-c escapes them: \" \\ \b \f \n \r \t, other bytes below 0x20 as
 * \u00xx, everything else (the slash, bytes from 0x7f) as it is. */
void prov_jwrite_str(prov_jwrite_t *w, const char *s, apr_size_t n);
/* A C string as a JSON string (NULL as ""). */
void prov_jwrite_cstr(prov_jwrite_t *w, const char *s);
/* A whole number in decimal. */
void prov_jwrite_int(prov_jwrite_t *w, apr_int64_t v);

/* A string value that prov_json_scan_object took (val: its text, quotes
 * included) as json-c would print the string it holds: copied when it has
 * no escape, else decoded and escaped again. */
void prov_jwrite_scanned(prov_jwrite_t *w, const char *val, apr_size_t vlen);
/* The bytes that such a string value holds, decoded, appended; returns how
 * many. */
apr_size_t prov_jwrite_decode(prov_jwrite_t *w, const char *val, apr_size_t vlen);

#endif
