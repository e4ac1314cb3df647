/* prov_header.h: what may reach an HTTP header line (RFC 7230 §3.2). A
 * response header that httpd's HTTP_OUT filter refuses turns the whole answer
 * into its own 500 page, so every header the module builds from a client's or
 * the gateway's data goes through these first: header names and list items
 * are tokens, values are field-content (no control character, in particular
 * no CR or LF). */
#ifndef PROV_HEADER_H
#define PROV_HEADER_H

#include "prov_common.h"

/* Non-zero when c is a tchar of RFC 7230 §3.2.6. */
int prov_header_tchar(int c);
/* Non-zero when s is a token: one or more tchars. */
int prov_header_token_ok(const char *s);
/* Non-zero when s is a header value httpd sends as it is: visible ASCII,
 * obs-text (bytes 0x80-0xFF), spaces and tabs; no other control character. */
int prov_header_value_ok(const char *s);
/* s with every byte that is not a tchar dropped ("" when none is left). */
const char *prov_header_token(const char *s, apr_pool_t *p);
/* Joins the tokens of items (const char *) with ',' after prov_header_token,
 * skipping those left empty, in at most max bytes: a list that would be longer
 * ends with the item "..." instead. NULL when nothing is left. */
const char *prov_header_token_list(const apr_array_header_t *items, apr_size_t max,
                                   apr_pool_t *p);

#endif
