/* mod_provider_http.h: the API of mod_provider_http.c, the request plumbing
 * every handler uses: the request id, writes to the client and what they came
 * to, JSON answers and errors in a family's shape, the API key, the body. */
#ifndef MOD_PROVIDER_HTTP_H
#define MOD_PROVIDER_HTTP_H

#include "mod_provider.h"
#include "prov_error.h"

/* A request id for logs and the x-request-id header (set on err_headers_out). */
const char *provider_request_id(request_rec *r);
/* What a write to the client came to. */
#define PROVIDER_WRITE_OK      0
#define PROVIDER_WRITE_GONE    1   /* the client went away */
#define PROVIDER_WRITE_REFUSED 2   /* a header would be refused: nothing was written */
#define PROVIDER_WRITE_FAILED  3   /* the answer was refused on its way out: httpd answered */
/* Checks the headers r would send against what httpd accepts (RFC 7230
 * tokens and field values); one that fails is logged as an error and removed.
 * Returns 0 when one failed. */
int provider_headers_ok(request_rec *r);
/* Passes bb (then empty) to the client: PROVIDER_WRITE_*. The first write,
 * which sends the headers, checks them first (provider_headers_ok) and writes
 * nothing when one would be refused. */
int provider_pass(request_rec *r, apr_bucket_brigade *bb);
/* Writes json as the whole answer with status: PROVIDER_WRITE_*. */
int provider_write_json(request_rec *r, int status, const char *json);
/* Writes body as JSON with status (leaving out a header httpd would refuse);
 * returns what the handler must return. */
int provider_send_json(request_rec *r, int status, const char *json);
/* Writes e in the family's shape (with Retry-After when e has one). */
int provider_send_error(request_rec *r, provider_family_e family, const prov_error_t *e);
/* Shortcut: make and send an error. */
int provider_fail(request_rec *r, provider_family_e family, prov_errcode_e code,
                  const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The API key from "Authorization: Bearer" (and, when allow_x_api_key,
 * "x-api-key"); NULL when none was sent. */
const char *provider_api_key(request_rec *r, int allow_x_api_key);
/* Reads the whole body up to max bytes. APR_EINVAL/413 handling is the
 * caller's: returns APR_ENOSPC when the body is larger than max. */
apr_status_t provider_read_body(request_rec *r, apr_int64_t max, const char **body,
                                apr_size_t *len);

#endif
