/* mod_provider_infer.c: the inference path (docs/internals/transports.md) that every transport
 * shares, in the order the specification fixes: the key first (so that an
 * unauthenticated caller learns nothing), the blocked user, the method, the
 * body, the model, then the reservation (key budget and account remainder, held
 * atomically), and after the gateway the settlement or release: staged first
 * (its figure goes into the answer), committed once the answer is out, released
 * instead when the module fails to deliver it (status undelivered;
 * docs/internals/broken-streams.md). The driver (mod_provider_drive.c) calls
 * these steps in that order for every transport; each step either lets it go
 * on (PROVIDER_GO) or has already answered in the transport's error shape and
 * returns what the handler must return. The gateway's refusals and failures
 * are answered here too: in our words, its own only in the log (masked). */
#include <string.h>
#include "mod_provider.h"
#include "mod_provider_infer.h"
#include "mod_provider_config.h"
#include "mod_provider_db.h"
#include "mod_provider_http.h"
#include "mod_provider_status.h"
#include "mod_provider_keyctl.h"
#include "mod_provider_refusal.h"

APLOG_USE_MODULE(provider);

#include "prov_agent.h"
#include "prov_estimate.h"
#include "prov_secret.h"
#include "prov_money.h"
#include "prov_metrics.h"

static int fail(provider_infer_t *in, prov_errcode_e code, const char *param,
                const char *msg)
{
    return provider_fail(in->r, in->family, code, param, "%s", msg);
}

/* The key read from the database (and its user): PROVIDER_GO, or answered. */
static provider_step_t key_from_db(provider_infer_t *in)
{
    prov_error_t *err = NULL;
    apr_status_t rv;

    if (!in->store && !(in->store = provider_db_open(in->r, &err)))
        return provider_send_error(in->r, in->family, err);
    rv = prov_auth_lookup(&in->auth, in->store, in->secret, in->r->pool);
    if (rv != APR_SUCCESS) {
        provider_infer_close(in);
        return rv == APR_NOTFOUND
            ? fail(in, PROV_E_INVALID_API_KEY, NULL, "Invalid API key.")
            : fail(in, PROV_E_SERVICE_UNAVAILABLE, NULL,
                   "The service's database is unavailable; try again later.");
    }
    in->auth_fresh = 1;
    return PROVIDER_GO;
}

/* The key's own controls, right after the key (mod_provider_keyctl.c). */
static int key_controls(provider_infer_t *in)
{
    prov_error_t *e = provider_keyctl_admit(&in->in_flight, in->r, in->auth);
    if (!e)
        return PROVIDER_GO;
    provider_infer_close(in);
    return provider_send_error(in->r, in->family, e);
}

void provider_infer_done(provider_infer_t *in)
{
    if (in)
        provider_keyctl_release(in->in_flight);
}

static int key_blocked(provider_infer_t *in)
{
    provider_infer_close(in);
    return fail(in, PROV_E_USER_BLOCKED, NULL,
                "This account is blocked. Contact the service's administrator.");
}

provider_step_t provider_infer_begin(provider_infer_t **pin, request_rec *r,
                                     provider_family_e family, const char *transport,
                                     int allow_x_api_key)
{
    provider_infer_t *in = apr_pcalloc(r->pool, sizeof(*in));
    const char *secret;
    apr_status_t rv;
    provider_step_t st;

    in->r = r;
    in->conf = provider_conf(r);
    in->lookups = provider_lookups(r);
    in->family = family;
    in->transport = transport;
    in->request_id = provider_request_id(r);
    *pin = in;
    provider_status_request(r, transport);

    secret = provider_api_key(r, allow_x_api_key);
    if (!secret)
        return fail(in, PROV_E_INVALID_API_KEY, NULL, allow_x_api_key
                    ? "Missing API key: send 'Authorization: Bearer <API_KEY>' or 'x-api-key'."
                    : "Missing API key: send 'Authorization: Bearer <API_KEY>'.");
    if (!prov_secret_wellformed(secret))
        return fail(in, PROV_E_INVALID_API_KEY, NULL, "Invalid API key.");
    in->secret = secret;
    in->auth = in->lookups
        ? prov_cache_get_auth(in->lookups, prov_secret_hash(secret, r->pool), prov_now(), r->pool)
        : NULL;
    if (!in->auth) {
        if ((st = key_from_db(in)) != PROVIDER_GO)
            return st;
        if (in->lookups)
            prov_cache_put_auth(in->lookups, in->auth, prov_now());
    }
    apr_table_setn(r->notes, "provider-key", in->auth->key_display);
    provider_refusal_watch(r, in->auth, transport, &in->model_sent);
    if (in->auth->user_blocked)
        return key_blocked(in);
    if ((st = key_controls(in)) != PROVIDER_GO)
        return st;
    /* The method only after the key: the spec validates the key first. */
    if (r->method_number != M_POST) {
        provider_infer_close(in);
        apr_table_setn(r->err_headers_out, "Allow", "POST");
        return provider_fail(r, family, PROV_E_METHOD_NOT_ALLOWED, NULL,
                             "Use POST on %s", ap_escape_html(r->pool, r->uri));
    }

    rv = provider_read_body(r, in->conf->max_body, &in->body, &in->len);
    if (rv == APR_ENOSPC) {
        provider_infer_close(in);
        r->connection->keepalive = AP_CONN_CLOSE;
        return provider_fail(r, family, PROV_E_REQUEST_TOO_LARGE, NULL,
                             "The request body is larger than this service accepts "
                             "(%" APR_INT64_T_FMT " bytes).", in->conf->max_body);
    }
    if (rv != APR_SUCCESS) {
        provider_infer_close(in);
        return fail(in, PROV_E_INVALID_REQUEST, NULL, "The request body could not be read.");
    }
    return PROVIDER_GO;
}

/* The cache is left as it is: a blocked answer put there would outlive an
 * unblock. */
provider_step_t provider_infer_recheck_key(provider_infer_t *in)
{
    provider_step_t st;
    if (in->auth_fresh)
        return PROVIDER_GO;
    if ((st = key_from_db(in)) != PROVIDER_GO)
        return st;
    return in->auth->user_blocked ? key_blocked(in) : PROVIDER_GO;
}

provider_step_t provider_infer_model(provider_infer_t *in, const char *public_id,
                                     int messages_only)
{
    request_rec *r = in->r;
    prov_error_t *err = NULL;
    apr_status_t rv = APR_SUCCESS;
    int usable;
    prov_error_t *refusal = provider_keyctl_model(r, in->auth, public_id);

    in->model_sent = public_id;
    if (refusal) {              /* before the catalog: says nothing of it */
        provider_infer_close(in);
        return provider_send_error(r, in->family, refusal);
    }
    in->model = in->lookups
        ? prov_cache_get_model(in->lookups, public_id, prov_now(), r->pool) : NULL;
    if (!in->model) {
        if (!in->store && !(in->store = provider_db_open(r, &err)))
            return provider_send_error(r, in->family, err);
        rv = prov_model_find(&in->model, in->store, public_id, r->pool);
        if (rv == APR_SUCCESS && in->lookups)
            prov_cache_put_model(in->lookups, in->model, prov_now());
    }
    usable = rv == APR_SUCCESS && in->model->enabled;
    if (rv == APR_SUCCESS)      /* for the access log (README, "Logs") */
        apr_table_setn(r->notes, "provider-model", in->model->public_id);

    if (usable && messages_only)
        usable = in->model->messages_enabled
              && !strcmp(in->model->family, in->conf->messages_family);
    if (!usable) {
        provider_infer_close(in);
        if (rv != APR_SUCCESS && rv != APR_NOTFOUND)
            return fail(in, PROV_E_SERVICE_UNAVAILABLE, NULL,
                        "The model catalog is unavailable; try again later.");
        return provider_fail(r, in->family, PROV_E_MODEL_NOT_FOUND, "model",
                             messages_only
                             ? "The model '%s' does not exist or is not available on "
                               "/v1/messages; GET /v1/models lists the models you can use."
                             : "The model '%s' does not exist or is not available; "
                               "GET /v1/models lists the models you can use.",
                             ap_escape_html(r->pool, public_id));
    }
    if (prov_rates_effective(&in->eff, &in->model->rates) != APR_SUCCESS) {
        provider_infer_close(in);
        return provider_fail(r, in->family, PROV_E_MODEL_NOT_PRICED, "model",
                             "The model '%s' has no price yet and cannot be used.",
                             ap_escape_html(r->pool, in->model->public_id));
    }
    return PROVIDER_GO;
}

/* The cap the gateway is sent, from what was held: the client's own, or
 * ours (the model's maximum, or what the limits could pay for), told in
 * x-provider-output-cap whenever it is not the client's. */
static void set_cap(provider_infer_t *in)
{
    prov_worst_t *w = &in->worst;
    request_rec *r = in->r;
    in->hold = in->res->row.hold;
    in->cap = prov_worst_cap(w, in->hold);
    in->max_output = prov_i64_mul_sat(in->cap, w->choices);
    in->forward_cap = in->cap != in->call.max_output ? in->cap : 0;
    if (in->forward_cap)
        apr_table_setn(r->err_headers_out, "x-provider-output-cap",
                       prov_i64(in->cap, r->pool));
}

/* The agent session the request names, for its ledger row (grouping only;
 * docs/internals/billing.md, "Agent sessions"): a header that is not one is
 * ignored, said at debug level without its value. */
static void agent_session(provider_infer_t *in, prov_hold_ask_t *ask)
{
    const apr_table_t *h = in->r->headers_in;
    const char *cc = apr_table_get(h, "x-claude-code-session-id");
    const char *sid = apr_table_get(h, "session-id");
    prov_agent_session(&ask->session, &ask->client, cc, sid, apr_table_get(h, "User-Agent"));
    if (!ask->session && (cc || sid))
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, in->r, "PROV01200: request %s: its agent "
                      "session header is not 1 to %d token characters: not recorded",
                      in->request_id, PROV_AGENT_SESSION_MAX);
}

provider_step_t provider_infer_reserve(provider_infer_t *in, apr_int64_t input_estimate)
{
    prov_error_t *err = NULL;
    prov_hold_ask_t ask;
    prov_tokens_t input = { 0, 0, 0, 0 };
    apr_status_t rv;

    prov_worst_plan(&in->worst, &in->eff, in->len, in->call.choices, in->call.max_output,
                    prov_model_max_output(in->model, in->conf->default_max_tokens));
    in->input_estimate = input_estimate;
    in->hold = in->worst.hold;
    provider_infer_close(in);
    /* The floor: what the request costs if this process dies under it with
     * nothing more known (docs/internals/broken-streams.md, "A killed
     * child"): its input estimate at the model's input rate. */
    input.input = input_estimate;
    ask.hold = in->worst.hold;
    ask.hold_min = in->worst.hold_min;
    ask.floor = prov_money_charge(&in->eff, &input);
    agent_session(in, &ask);
    rv = prov_billing_reserve_ask(&in->res, &err, provider_request_source(in->r), in->auth,
                                  in->model->id, in->transport, in->request_id, &ask,
                                  prov_now(), in->r->pool);
    if (rv != APR_SUCCESS)
        return fail(in, PROV_E_SERVICE_UNAVAILABLE, NULL,
                    "The service's database is busy; try again later.");
    if (!in->res)
        return provider_send_error(in->r, in->family, err);
    set_cap(in);
    /* For the access log: how the hold was taken (README, "Logs"). */
    apr_table_setn(in->r->notes, "provider-hold", in->res->leased ? "lease" : "database");
    provider_status_hold(in->r, in->res->leased, in->res->row.hold);
    return PROVIDER_GO;
}

void provider_infer_close(provider_infer_t *in)
{
    if (in->store) {
        provider_db_close(in->r, in->store);
        in->store = NULL;
    }
}

/* The settlement for the access log (README, "Logs"): the charge, the
 * tokens it was charged for, the ledger status ("reserved" while a failed
 * settlement leaves the hold in place, "released" for a hold released
 * before its settlement came). */
static void note_settlement(request_rec *r, const prov_tokens_t *t, prov_micro_t charge,
                            prov_status_e status)
{
    static const prov_tokens_t none = { 0, 0, 0, 0 };
    apr_table_t *n = r->notes;
    if (!t)
        t = &none;
    apr_table_setn(n, "provider-credits", prov_money_format(charge, r->pool));
    apr_table_setn(n, "provider-tokens-in", prov_i64(t->input, r->pool));
    apr_table_setn(n, "provider-tokens-out", prov_i64(t->output, r->pool));
    apr_table_setn(n, "provider-tokens-cache", prov_i64(t->cache, r->pool));
    apr_table_setn(n, "provider-tokens-reasoning", prov_i64(t->reasoning, r->pool));
    apr_table_setn(n, "provider-status", prov_ledger_status_name(status));
}

/* Commits a settlement to core (t NULL: a release), the second database
 * phase: short, after the gateway has answered and the answer was written. */
static void commit_settlement(provider_infer_t *in, const prov_tokens_t *t, prov_micro_t charge,
                              prov_status_e status)
{
    request_rec *r = in->r;
    apr_status_t rv;

    if (!in->res || in->res->settled)
        return;
    rv = t ? prov_billing_settle(provider_request_source(r), in->res, t, charge, status,
                                 prov_now(), r->pool)
           : prov_billing_release(provider_request_source(r), in->res, status, prov_now(),
                                  r->pool);
    /* APR_EINCOMPLETE: released already (by hand, or expired): nothing moved */
    if (rv == APR_SUCCESS && t)
        provider_status_charge(in->res->row.from_plan, charge, t);
    if (rv == APR_SUCCESS)
        note_settlement(r, t, t ? charge : 0, status);
    else
        note_settlement(r, NULL, 0, rv == APR_EINCOMPLETE ? PROV_STATUS_RELEASED
                                                          : PROV_STATUS_RESERVED);
    if (rv != APR_SUCCESS && rv != APR_EINCOMPLETE)
        ap_log_rerror(APLOG_MARK, APLOG_ERR, rv, r, "PROV00110: request %s could not be "
                      "%s; its hold of %s credits stays reserved", in->request_id,
                      t ? "settled" : "released", prov_money_format(in->res->row.hold, r->pool));
}

/* Stages a settlement (release: no charge) for provider_infer_commit. */
static void stage(provider_infer_t *in, const prov_tokens_t *t, prov_micro_t charge,
                  prov_status_e status, int release)
{
    static const prov_tokens_t none = { 0, 0, 0, 0 };
    in->charge = charge;
    in->staged = 1;
    in->staged_status = status;
    in->staged_release = release;
    in->staged_tokens = t ? *t : none;
    if (!in->r->sent_bodyct)
        apr_table_setn(in->r->headers_out, "x-provider-credits",
                       prov_money_format(charge, in->r->pool));
}

/* The absurd report that a settlement charged at most the hold. */
static void log_absurd(provider_infer_t *in, const prov_tokens_t *t, prov_micro_t charge)
{
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, in->r, "PROV00300: request %s: the "
                  "gateway reported absurd usage (input %" APR_INT64_T_FMT ", output %"
                  APR_INT64_T_FMT ", cache %" APR_INT64_T_FMT ", reasoning %"
                  APR_INT64_T_FMT " tokens; output cap %" APR_INT64_T_FMT "); charged %s "
                  "credits (its hold: %s)", in->request_id, t->input, t->output, t->cache,
                  t->reasoning, in->max_output, prov_money_format(charge, in->r->pool),
                  prov_money_format(in->hold, in->r->pool));
}

prov_micro_t provider_infer_settle(provider_infer_t *in, const prov_tokens_t *t)
{
    prov_delivery_t d;
    memset(&d, 0, sizeof(d));
    d.reported = *t;
    d.usage = PROV_USAGE_FINAL;
    d.started = d.complete = 1;
    return provider_infer_bill(in, &d, PROV_END_COMPLETE);
}

/* What the settlement of d noticed about the gateway's usage, for the
 * operator (docs/internals/billing.md, "How usage reports are read"). */
static void log_usage(provider_infer_t *in, const prov_delivery_t *d, unsigned notes,
                      prov_bill_e how, prov_micro_t charge)
{
    request_rec *r = in->r;
    if (notes & PROV_BILL_ABSURD)
        log_absurd(in, &d->reported, charge);
    if (d->unreadable)
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "PROV00305: request %s: the "
                      "gateway's usage report could not be read (%d report%s: counts that "
                      "are not whole numbers >= 0 under the documented names); it counts "
                      "as no usage: charged %s credits (%s)", in->request_id, d->unreadable,
                      d->unreadable == 1 ? "" : "s", prov_money_format(charge, r->pool),
                      how == PROV_BILL_REPORTED ? "by a later readable report"
                      : how == PROV_BILL_ESTIMATED ? "estimated" : "nothing delivered");
    if (notes & PROV_BILL_INPUT_ESTIMATE)
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00306: request %s: the gateway "
                      "reported no input tokens; charged the input estimate (%"
                      APR_INT64_T_FMT " tokens) instead", in->request_id, in->input_estimate);
}

prov_micro_t provider_infer_bill(provider_infer_t *in, const prov_delivery_t *d,
                                 prov_ending_e end)
{
    prov_bill_e how;
    prov_tokens_t t;
    unsigned notes = 0;
    prov_micro_t charge = prov_estimate_bill(&how, &t, &notes, d, &in->eff, in->input_estimate,
                                             in->max_output, in->hold);
    log_usage(in, d, notes, how, charge);
    stage(in, &t, charge, prov_ending_status(end, how), how == PROV_BILL_RELEASE);
    return charge;
}

int provider_infer_progress(provider_infer_t *in, const prov_delivery_t *d)
{
    prov_bill_e how;
    prov_tokens_t t;
    prov_micro_t charge;
    if (!in->res || in->res->settled)
        return 0;
    charge = prov_estimate_bill(&how, &t, NULL, d, &in->eff, in->input_estimate,
                                in->max_output, in->hold);
    if (how == PROV_BILL_RELEASE)
        return 0;
    prov_billing_progress(in->res, &t, charge, prov_now());
    return 1;
}

void provider_infer_commit(provider_infer_t *in)
{
    if (!in->staged)
        return;
    commit_settlement(in, in->staged_release ? NULL : &in->staged_tokens, in->charge,
                      in->staged_status);
    in->staged = 0;
}

int provider_infer_answer(provider_infer_t *in, const char *json)
{
    int w = provider_write_json(in->r, HTTP_OK, json);
    if (w != PROVIDER_WRITE_OK && w != PROVIDER_WRITE_GONE)
        return provider_infer_undelivered(in, w);
    /* Handed over, or the client went away before it: the gateway did the work. */
    provider_infer_commit(in);
    return OK;
}

int provider_infer_undelivered(provider_infer_t *in, int write)
{
    request_rec *r = in->r;
    in->staged = 0;
    in->charge = 0;
    apr_table_unset(r->headers_out, "x-provider-credits");
    provider_infer_release(in, PROV_END_UNDELIVERED);
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "PROV00342: request %s: the answer could not "
                  "be delivered; nothing was charged", in->request_id);
    if (write == PROVIDER_WRITE_FAILED)
        return AP_FILTER_ERROR;           /* httpd has answered */
    return fail(in, PROV_E_INTERNAL, NULL,
                "The service failed to write its answer. Nothing was charged.");
}

void provider_infer_release(provider_infer_t *in, prov_ending_e end)
{
    if (end == PROV_END_MALFORMED)
        prov_metrics_gateway_error(prov_metrics_current(), PROV_MX_GW_MALFORMED);
    commit_settlement(in, NULL, 0, prov_ending_status(end, PROV_BILL_RELEASE));
}

int provider_infer_gateway_failed(provider_infer_t *in, apr_status_t rv)
{
    prov_ending_facts_t f;
    memset(&f, 0, sizeof(f));
    f.rv = rv;
    if (rv != APR_ECONNABORTED)
        prov_metrics_gateway_error(prov_metrics_current(), rv == APR_TIMEUP
                                   ? PROV_MX_GW_TIMEOUT : PROV_MX_GW_UNREACHABLE);
    provider_infer_release(in, prov_ending_classify(&f));
    if (rv == APR_TIMEUP)
        return fail(in, PROV_E_GATEWAY_TIMEOUT, NULL,
                    "The model did not answer in time. Nothing was charged.");
    return fail(in, PROV_E_GATEWAY_ERROR, NULL,
                "The model gateway is unreachable. Nothing was charged.");
}

/* The class of a gateway's error for the metrics. */
static prov_mx_gwerror_e gwerror_class(const prov_gwerror_t *g)
{
    if (g->kind == PROV_GWERR_AUTH)
        return PROV_MX_GW_AUTH;
    if (g->kind == PROV_GWERR_RATE_LIMIT)
        return PROV_MX_GW_RATE_LIMIT;
    if (g->kind == PROV_GWERR_OVERLOADED)
        return PROV_MX_GW_OVERLOADED;
    if (!g->status)
        return PROV_MX_GW_STREAM;
    return g->status >= 500 ? PROV_MX_GW_SERVER : PROV_MX_GW_CLIENT;
}

/* What the gateway said, for the operator: masked, since a gateway may put
 * its address or a token into an error message. */
void provider_log_gateway_error(request_rec *r, const prov_gwerror_t *g)
{
    const char *text = g->text ? prov_redact(provider_conf(r)->redactor, g->text,
                                             strlen(g->text), 400, r->pool)
                               : "(no message)";
    prov_metrics_gateway_error(prov_metrics_current(), gwerror_class(g));
    if (g->kind == PROV_GWERR_AUTH)
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "PROV00322: request %s: the gateway "
                      "refused the service token (HTTP %d; check ProviderGatewayTokenFile): %s",
                      provider_request_id(r), g->status, text);
    else if (g->status)
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00320: request %s: the gateway "
                      "answered HTTP %d (%s): %s", provider_request_id(r), g->status, g->type,
                      text);
    else
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00321: request %s: the gateway's "
                      "stream ended with an error (%s): %s", provider_request_id(r), g->type,
                      text);
}

/* A gateway refusal made safe to show: the class of its status and a
 * message of ours (prov_gwerror_client); its own words only in the log. */
int provider_gateway_refusal(request_rec *r, provider_family_e family,
                             const prov_gateway_response_t *resp)
{
    prov_gwerror_t g;

    prov_gwerror_read(&g, resp->status, resp->body, resp->len, r->pool);
    prov_gwerror_retry_after(&g, resp->retry_after);
    provider_log_gateway_error(r, &g);
    return provider_send_error(r, family, prov_gwerror_client(&g, r->pool));
}
