/* prov_alert_send.c: delivering the outbox. A round reads the rows that are
 * due, claims each with a compare-and-set on next_at (the claim moves
 * next_at a lease ahead, so another node or child skips the row, and a node
 * that dies mid-POST leaves it due again when the lease ends), POSTs its
 * body signed (prov_alert_sign) with libcurl, and marks it sent on a 2xx or
 * due again after the backoff with what went wrong. A receiver that is down
 * loses nothing: the rows wait in the database, visible to providerctl
 * alerts list. The secret never leaves the signature; the URL is never
 * logged here (it may carry credentials). */
#include <string.h>
#include <curl/curl.h>
#include "prov_curl.h"
#include "prov_alert.h"

/* The answer's body is not read: a receiver says yes with its status. */
static size_t discard(char *ptr, size_t size, size_t nmemb, void *data)
{
    (void)ptr;
    (void)data;
    return size * nmemb;
}

/* One signed POST: APR_SUCCESS on a 2xx, else *why says what failed. */
static apr_status_t post(const char **why, const prov_alert_hook_t *hook, const char *id,
                         const char *body, apr_int64_t now, apr_pool_t *p)
{
    const char *sig = NULL;
    struct curl_slist *hl = NULL;
    CURL *h;
    CURLcode cc;
    long code = 0;
    apr_status_t rv = prov_alert_sign(&sig, hook->secret, hook->secret_len, now, body,
                                      strlen(body), p);
    if (rv != APR_SUCCESS) {
        *why = "cannot sign";
        return rv;
    }
    if (!(h = curl_easy_init())) {
        *why = "no libcurl handle";
        return APR_ENOMEM;
    }
    hl = curl_slist_append(hl, "Content-Type: application/json");
    hl = curl_slist_append(hl, "Expect:");
    hl = curl_slist_append(hl, apr_pstrcat(p, PROV_ALERT_SIG_HEADER ": ", sig, NULL));
    hl = curl_slist_append(hl, apr_pstrcat(p, "X-Provider-Alert-Id: ", id, NULL));
    prov_curl_restrict(h, hook->url);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, hook->timeout > 0 ? hook->timeout : 10L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "mod_provider-alerts");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    curl_slist_free_all(hl);
    if (cc != CURLE_OK) {
        *why = apr_pstrdup(p, curl_easy_strerror(cc));
        return APR_EGENERAL;
    }
    if (code < 200 || code > 299) {
        *why = apr_psprintf(p, "HTTP %ld", code);
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

/* Claims, sends and records one due row. */
static apr_status_t deliver_one(int *sent, int *failed, prov_store_t *s,
                                const prov_alert_hook_t *hook, apr_dbd_row_t *row,
                                apr_int64_t now, apr_pool_t *p)
{
    const char *id = prov_store_get(s, row, 0), *body = prov_store_get(s, row, 1);
    const char *why = NULL;
    int attempts = (int)prov_store_get_i64(s, row, 2, 0) + 1, n = 0;
    apr_status_t rv = prov_store_exec(s, &n, "alert_claim",
                                      PROV_ARGS(prov_i64(now + PROV_ALERT_LEASE, p), id,
                                                prov_store_get(s, row, 3)), p);
    if (rv != APR_SUCCESS || n == 0 || !body)
        return rv;
    if (post(&why, hook, id, body, now, p) == APR_SUCCESS) {
        (*sent)++;
        return prov_store_exec(s, &n, "alert_sent", PROV_ARGS(prov_i64(prov_now(), p), id), p);
    }
    (*failed)++;
    return prov_store_exec(s, &n, "alert_retry",
                           PROV_ARGS(prov_i64(prov_now() + prov_alert_backoff(attempts), p),
                                     why, id), p);
}

apr_status_t prov_alert_deliver(int *sent, int *failed, prov_store_t *s,
                                const prov_alert_hook_t *hook, apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;
    *sent = 0;
    *failed = 0;
    if (!hook || !hook->url)
        return APR_SUCCESS;
    rv = prov_store_select(s, &res, "alert_due",
                           PROV_ARGS(prov_i64(now, p), apr_itoa(p, PROV_ALERT_BATCH)), p);
    while (rv == APR_SUCCESS && (rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS)
        rv = deliver_one(sent, failed, s, hook, row, now, p);
    return rv == APR_EOF ? APR_SUCCESS : rv;
}
