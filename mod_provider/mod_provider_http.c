/* mod_provider_http.c: request and response plumbing shared by the handlers:
 * request ids, JSON and error answers in each transport's shape, writes that
 * tell a client that went away from an answer httpd refused (a header it
 * would refuse is caught before anything is written), the API key
 * from the request headers, and bounded body reading. */
#include <stdarg.h>
#include <string.h>
#include "mod_provider.h"
#include "mod_provider_http.h"
#include "mod_provider_config.h"

APLOG_USE_MODULE(provider);
#include "prov_header.h"
#include "prov_secret.h"

const char *provider_request_id(request_rec *r)
{
    const char *id = apr_table_get(r->notes, "provider-request-id");
    if (!id) {
        if (prov_secret_request_id(&id, apr_time_now(), r->pool) != APR_SUCCESS)
            id = apr_psprintf(r->pool, "req_%013" APR_UINT64_T_HEX_FMT "%lx",
                              (apr_uint64_t)apr_time_now(), (unsigned long)r->connection->id);
        apr_table_setn(r->notes, "provider-request-id", id);
        apr_table_setn(r->err_headers_out, "x-request-id", id);
    }
    return id;
}

/* Collects the headers of t that httpd's HTTP_OUT filter would refuse. */
static int bad_headers(void *rec, const char *key, const char *val)
{
    apr_array_header_t *bad = rec;
    if (!prov_header_token_ok(key) || !prov_header_value_ok(val))
        APR_ARRAY_PUSH(bad, const char *) = key;
    return 1;
}

int provider_headers_ok(request_rec *r)
{
    apr_array_header_t *bad = apr_array_make(r->pool, 2, sizeof(const char *));
    int i;
    apr_table_do(bad_headers, bad, r->headers_out, NULL);
    for (i = 0; i < bad->nelts; i++)
        apr_table_unset(r->headers_out, APR_ARRAY_IDX(bad, i, const char *));
    i = bad->nelts;
    apr_table_do(bad_headers, bad, r->err_headers_out, NULL);
    for (; i < bad->nelts; i++)
        apr_table_unset(r->err_headers_out, APR_ARRAY_IDX(bad, i, const char *));
    for (i = 0; i < bad->nelts; i++)
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "PROV00340: request %s: the header '%s' "
                      "is not a valid HTTP header; it was left out", provider_request_id(r),
                      ap_escape_logitem(r->pool, APR_ARRAY_IDX(bad, i, const char *)));
    return bad->nelts == 0;
}

int provider_pass(request_rec *r, apr_bucket_brigade *bb)
{
    conn_rec *c = r->connection;
    int first = !r->sent_bodyct;
    apr_status_t rv;

    if (c->aborted) {
        apr_brigade_cleanup(bb);
        return PROVIDER_WRITE_GONE;
    }
    /* httpd checks the headers when they go out and, when one is refused,
     * answers 500 itself: check first, while an answer of ours is possible. */
    if (first && !provider_headers_ok(r)) {
        apr_brigade_cleanup(bb);
        return PROVIDER_WRITE_REFUSED;
    }
    rv = ap_pass_brigade(r->output_filters, bb);
    apr_brigade_cleanup(bb);
    if (rv == APR_SUCCESS && !c->aborted)
        return PROVIDER_WRITE_OK;
    /* The core output filter marks a connection it cannot write to: the
     * client went away. A first write failing otherwise is a filter's
     * refusal (AP_FILTER_ERROR: httpd has answered instead). */
    if (c->aborted || !first)
        return PROVIDER_WRITE_GONE;
    ap_log_rerror(APLOG_MARK, APLOG_ERR, rv, r, "PROV00341: request %s: the answer was "
                  "refused on its way out (%d)", provider_request_id(r), rv);
    return PROVIDER_WRITE_FAILED;
}

int provider_write_json(request_rec *r, int status, const char *json)
{
    apr_size_t len = strlen(json);
    apr_bucket_brigade *bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    provider_request_id(r);
    r->status = status;
    /* httpd's status table has no 529 (Anthropic's overloaded): without a
     * line of its own it would go out as "500 Internal Server Error". */
    if (status == 529)
        r->status_line = "529 Overloaded";
    ap_set_content_type(r, "application/json");
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    apr_table_setn(r->headers_out, "X-Content-Type-Options", "nosniff");
    ap_set_content_length(r, (apr_off_t)len);
    if (!r->header_only && len)
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_pool_create(json, len, r->pool,
                                                           r->connection->bucket_alloc));
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(r->connection->bucket_alloc));
    return provider_pass(r, bb);
}

int provider_send_json(request_rec *r, int status, const char *json)
{
    int w = provider_write_json(r, status, json);
    /* The refused header is gone: the answer can go without it. */
    if (w == PROVIDER_WRITE_REFUSED)
        w = provider_write_json(r, status, json);
    return w == PROVIDER_WRITE_FAILED ? AP_FILTER_ERROR : OK;
}

/* Out of credits: the message says where to get more, as the operator says
 * it (ProviderTopUpURL). */
static const prov_error_t *with_remedy(request_rec *r, const prov_error_t *e)
{
    prov_error_t *more;
    if (e->code != PROV_E_QUOTA_EXCEEDED && e->code != PROV_E_INSUFFICIENT_CREDITS)
        return e;
    more = apr_pmemdup(r->pool, e, sizeof(*e));
    more->message = apr_pstrcat(r->pool, e->message ? e->message : "",
                                prov_credit_remedy(&provider_conf(r)->credit, r->pool), NULL);
    return more;
}

int provider_send_error(request_rec *r, provider_family_e family, const prov_error_t *e)
{
    const prov_errinfo_t *info = prov_error_info(e->code);
    const char *body;
    e = with_remedy(r, e);
    body = family == PROVIDER_FAMILY_ANTHROPIC ? prov_error_anthropic_json(e, r->pool)
                                               : prov_error_openai_json(e, r->pool);
    if (e->retry_after > 0)
        apr_table_setn(r->err_headers_out, "Retry-After", prov_i64(e->retry_after, r->pool));
    /* The SDKs retry every 429 unless told not to: a spent budget or plan
     * window does not come back in a few seconds. */
    if (e->code == PROV_E_KEY_BUDGET_EXCEEDED || e->code == PROV_E_QUOTA_EXCEEDED
        || e->code == PROV_E_INSUFFICIENT_CREDITS)
        apr_table_setn(r->err_headers_out, "x-should-retry", "false");
    apr_table_setn(r->notes, "provider-error", info->code);
    return provider_send_json(r, prov_error_status(e->code, family == PROVIDER_FAMILY_ANTHROPIC),
                              body);
}

int provider_fail(request_rec *r, provider_family_e family, prov_errcode_e code,
                  const char *param, const char *fmt, ...)
{
    prov_error_t *e = prov_error_make(r->pool, code, param, "%s", "");
    va_list ap;
    va_start(ap, fmt);
    e->message = apr_pvsprintf(r->pool, fmt, ap);
    va_end(ap);
    return provider_send_error(r, family, e);
}

const char *provider_api_key(request_rec *r, int allow_x_api_key)
{
    const char *auth = apr_table_get(r->headers_in, "Authorization");
    if (auth) {
        const char *c = auth;
        if (!strncasecmp(c, "Bearer", 6) && (c[6] == ' ' || c[6] == '\t')) {
            c += 6;
            while (*c == ' ' || *c == '\t')
                c++;
            if (*c)
                return c;
        }
    }
    if (allow_x_api_key) {
        const char *k = apr_table_get(r->headers_in, "x-api-key");
        if (k && *k)
            return k;
    }
    return NULL;
}

apr_status_t provider_read_body(request_rec *r, apr_int64_t max, const char **body,
                                apr_size_t *len)
{
    const char *cl = apr_table_get(r->headers_in, "Content-Length");
    apr_size_t cap = 8192, n = 0;
    char *buf;
    int rc;

    if (cl) {
        apr_int64_t declared;
        if (prov_parse_i64(&declared, cl) == APR_SUCCESS && declared > max)
            return APR_ENOSPC;
        if (prov_parse_i64(&declared, cl) == APR_SUCCESS && declared >= 0
            && declared < (apr_int64_t)cap * 64)
            cap = (apr_size_t)declared + 1;
    }
    if ((rc = ap_setup_client_block(r, REQUEST_CHUNKED_DECHUNK)) != OK)
        return APR_EGENERAL;
    buf = apr_palloc(r->pool, cap);
    if (ap_should_client_block(r)) {
        for (;;) {
            long got;
            if (n + 1 >= cap) {
                char *nb;
                if ((apr_int64_t)cap > max + 1)
                    return APR_ENOSPC;
                nb = apr_palloc(r->pool, cap * 2);
                memcpy(nb, buf, n);
                buf = nb;
                cap *= 2;
            }
            got = ap_get_client_block(r, buf + n, cap - n - 1);
            if (got == 0)
                break;
            if (got < 0)
                return APR_EGENERAL;
            n += (apr_size_t)got;
            if ((apr_int64_t)n > max)
                return APR_ENOSPC;
        }
    }
    buf[n] = '\0';
    *body = buf;
    *len = n;
    return APR_SUCCESS;
}
