/* mod_provider_chat.c: POST /v1/chat/completions, the DESIGN §4 path glued
 * to httpd: key, blocked user, body and validation, model, reservation (key
 * budget and balance), gateway call, settlement, answer. Every step's rules
 * live in libprovider; this file only orders them and talks HTTP. */
#include <string.h>
#include "mod_provider.h"

APLOG_USE_MODULE(provider);
#include "prov_account.h"
#include "prov_billing.h"
#include "prov_chat.h"
#include "prov_keys.h"
#include "prov_models.h"
#include "prov_money.h"

#define FAMILY PROVIDER_FAMILY_OPENAI

/* A gateway refusal made safe to show: its own message when it is about the
 * request (4xx), a generic one otherwise. Never the gateway's URL. */
static int gateway_refusal(request_rec *r, const prov_gw_response_t *resp)
{
    const char *perr = NULL;
    json_object *root = prov_json_parse(resp->body, resp->len, &perr, r->pool);
    json_object *error = prov_json_get(root, "error", json_type_object);
    const char *msg = prov_json_get_str(error, "message");
    prov_error_t *e;

    if (resp->status == 429) {
        e = prov_error_make(r->pool, PROV_E_GATEWAY_ERROR, NULL,
                            "The model is busy upstream; retry shortly.");
        e->retry_after = 1;
        if (resp->retry_after) {
            apr_int64_t ra;
            if (prov_parse_i64(&ra, resp->retry_after) == APR_SUCCESS && ra > 0 && ra < 3600)
                e->retry_after = ra;
        }
        return provider_send_error(r, FAMILY, e);
    }
    if (resp->status >= 400 && resp->status < 500 && resp->status != 401
        && resp->status != 403 && resp->status != 404 && msg) {
        apr_size_t n = strlen(msg);
        return provider_fail(r, FAMILY, PROV_E_INVALID_REQUEST, NULL, "%s",
                             n > 1000 ? apr_pstrndup(r->pool, msg, 1000) : msg);
    }
    return provider_fail(r, FAMILY, PROV_E_GATEWAY_ERROR, NULL,
                         "The model gateway failed to answer this request (HTTP %d). "
                         "Nothing was charged.", resp->status);
}

/* Settles or releases in a short second database phase; logs what it can't. */
static void finish_billing(request_rec *r, prov_reservation_t *res, const prov_tokens_t *t,
                           prov_micro_t charge, const char *status)
{
    prov_error_t *err = NULL;
    prov_store_t *store = provider_db_open(r, &err);
    apr_status_t rv = APR_EGENERAL;
    if (store) {
        rv = t ? prov_billing_settle(store, res, t, charge, status, prov_now(), r->pool)
               : prov_billing_release(store, res, status, prov_now(), r->pool);
        provider_db_close(r, store);
    }
    if (rv != APR_SUCCESS)
        ap_log_rerror(APLOG_MARK, APLOG_ERR, rv, r, "PROV00110: request %s could not be "
                      "%s; its hold of %s credits stays reserved", res->request_id,
                      t ? "settled" : "released", prov_money_format(res->hold, r->pool));
}

int provider_chat_handler(request_rec *r)
{
    provider_srv_conf *c = provider_conf(r);
    const char *request_id = provider_request_id(r);
    const char *secret, *body = NULL, *upstream_body, *out;
    apr_size_t len = 0;
    prov_error_t *err = NULL;
    prov_auth_t *auth = NULL;
    prov_chat_req_t *req = NULL;
    prov_model_t *model = NULL;
    prov_rates_t eff;
    prov_reservation_t *res = NULL;
    prov_gw_response_t *resp = NULL;
    json_object *answer = NULL;
    prov_tokens_t t;
    prov_micro_t hold, charge;
    prov_store_t *store;
    apr_status_t rv;

    if (r->method_number != M_POST) {
        apr_table_setn(r->err_headers_out, "Allow", "POST");
        return provider_fail(r, FAMILY, PROV_E_METHOD_NOT_ALLOWED, NULL,
                             "Use POST on /v1/chat/completions");
    }

    /* 1-2: the key first, so that an unauthenticated caller learns nothing. */
    secret = provider_api_key(r, 0);
    if (!secret)
        return provider_fail(r, FAMILY, PROV_E_INVALID_API_KEY, NULL,
                             "Missing API key: send 'Authorization: Bearer <API_KEY>'.");
    if (!prov_key_wellformed(secret))
        return provider_fail(r, FAMILY, PROV_E_INVALID_API_KEY, NULL, "Invalid API key.");
    if (!(store = provider_db_open(r, &err)))
        return provider_send_error(r, FAMILY, err);
    rv = prov_auth_lookup(&auth, store, secret, r->pool);
    if (rv != APR_SUCCESS) {
        provider_db_close(r, store);
        if (rv == APR_NOTFOUND)
            return provider_fail(r, FAMILY, PROV_E_INVALID_API_KEY, NULL, "Invalid API key.");
        return provider_fail(r, FAMILY, PROV_E_SERVICE_UNAVAILABLE, NULL,
                             "The service's database is unavailable; try again later.");
    }
    apr_table_setn(r->notes, "provider-key", auth->key_display);
    if (auth->user_blocked) {
        provider_db_close(r, store);
        return provider_fail(r, FAMILY, PROV_E_USER_BLOCKED, NULL,
                             "This account is blocked. Contact the service's administrator.");
    }

    /* 3: the request. */
    rv = provider_read_body(r, c->max_body, &body, &len);
    if (rv == APR_ENOSPC) {
        provider_db_close(r, store);
        r->connection->keepalive = AP_CONN_CLOSE;
        return provider_fail(r, FAMILY, PROV_E_REQUEST_TOO_LARGE, NULL,
                             "The request body is larger than this service accepts "
                             "(%" APR_INT64_T_FMT " bytes).", c->max_body);
    }
    if (rv != APR_SUCCESS) {
        provider_db_close(r, store);
        return provider_fail(r, FAMILY, PROV_E_INVALID_REQUEST, NULL,
                             "The request body could not be read.");
    }
    if (prov_chat_parse(&req, &err, body, len, r->pool) != APR_SUCCESS) {
        provider_db_close(r, store);
        return provider_send_error(r, FAMILY, err);
    }
    rv = prov_model_find(&model, store, req->model, r->pool);
    if (rv != APR_SUCCESS || !model->enabled) {
        provider_db_close(r, store);
        if (rv != APR_SUCCESS && rv != APR_NOTFOUND)
            return provider_fail(r, FAMILY, PROV_E_SERVICE_UNAVAILABLE, NULL,
                                 "The model catalog is unavailable; try again later.");
        return provider_fail(r, FAMILY, PROV_E_MODEL_NOT_FOUND, "model",
                             "The model '%s' does not exist or is not available; "
                             "GET /v1/models lists the models you can use.",
                             ap_escape_html(r->pool, req->model));
    }
    if (prov_rates_effective(&eff, &model->rates) != APR_SUCCESS) {
        provider_db_close(r, store);
        return provider_fail(r, FAMILY, PROV_E_MODEL_NOT_PRICED, "model",
                             "The model '%s' has no price yet and cannot be used.",
                             model->public_id);
    }

    /* 4-6: budget and remainder checked and the worst case held, atomically. */
    hold = prov_billing_estimate(&eff,
                                 prov_billing_input_estimate(req->prompt_bytes, req->n_messages),
                                 req->max_tokens > 0 ? req->max_tokens : c->default_max_tokens);
    rv = prov_billing_reserve(&res, &err, store, auth, model->id, "chat", request_id, hold,
                              prov_now(), r->pool);
    provider_db_close(r, store);
    if (rv != APR_SUCCESS)
        return provider_fail(r, FAMILY, PROV_E_SERVICE_UNAVAILABLE, NULL,
                             "The service's database is busy; try again later.");
    if (!res)
        return provider_send_error(r, FAMILY, err);

    /* 7: the gateway, with no database connection held. */
    upstream_body = prov_chat_upstream_body(req, model->upstream_id, r->pool);
    rv = prov_gateway_request(&resp, c->gateway, "/v1/chat/completions", upstream_body,
                              strlen(upstream_body), NULL, r->pool);
    if (rv != APR_SUCCESS) {
        finish_billing(r, res, NULL, 0, rv == APR_TIMEUP ? "timeout" : "failed");
        if (rv == APR_TIMEUP)
            return provider_fail(r, FAMILY, PROV_E_GATEWAY_TIMEOUT, NULL,
                                 "The model did not answer in time. Nothing was charged.");
        return provider_fail(r, FAMILY, PROV_E_GATEWAY_ERROR, NULL,
                             "The model gateway is unreachable. Nothing was charged.");
    }
    if (resp->status != 200) {
        finish_billing(r, res, NULL, 0, "refused");
        return gateway_refusal(r, resp);
    }
    rv = prov_chat_read_answer(&answer, &t, resp->body, resp->len, r->pool);
    if (rv == APR_EINVAL) {
        finish_billing(r, res, NULL, 0, "malformed");
        return provider_fail(r, FAMILY, PROV_E_GATEWAY_ERROR, NULL,
                             "The model gateway sent an answer that is not a chat completion. "
                             "Nothing was charged.");
    }

    /* 8: settle. Without usage from the gateway, the hold is the charge. */
    charge = rv == APR_SUCCESS ? prov_money_charge(&eff, &t) : hold;
    if (rv != APR_SUCCESS)
        memset(&t, 0, sizeof(t));
    finish_billing(r, res, &t, charge, rv == APR_SUCCESS ? "ok" : "no_usage");
    out = prov_chat_render(answer, model->public_id, charge, r->pool);
    apr_table_setn(r->headers_out, "x-provider-credits", prov_money_format(charge, r->pool));
    return provider_send_json(r, HTTP_OK, out);
}
