/* prov_mcp_account.c: the account endpoint's tools, for the user an access
 * token names (ctx->user_id; the glue checked the token). account_limits:
 * the balance, what requests in flight hold of it and what is available,
 * and the plan with both rolling windows (quota, used, remaining, when
 * capacity returns, when it is full again), exactly as the cabinet's GET
 * /v1/account (core/cabinet) has them; and each live key's weekly budget
 * and its use in the budget's rolling week (core/billing's key status, as
 * providerctl's `key show`; key id, name and display prefix only: never a
 * secret). account_usage: the cabinet's GET /v1/usage (requests, the four
 * token kinds and credits from the ledger over the last 1 to 30 UTC days,
 * today included, by day, key, model or agent session). */
#include <string.h>
#include "prov_mcp.h"
#include "prov_json.h"
#include "prov_account.h"
#include "prov_billing.h"
#include "prov_cabinet.h"

/* seconds since the epoch as RFC 3339 UTC, or JSON null for 0. */
static json_object *time_json(apr_int64_t t, apr_pool_t *p)
{
    return t ? json_object_new_string(prov_cabinet_time(t, p)) : NULL;
}

static apr_status_t key_json(json_object **out, prov_store_t *s, const prov_key_t *k,
                             apr_int64_t now, apr_pool_t *p)
{
    prov_micro_t spent = 0;
    apr_int64_t reset = 0;
    json_object *o;
    apr_status_t rv = prov_billing_key_status(&spent, &reset, s, k->id, now, p);
    if (rv != APR_SUCCESS)
        return rv;
    o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(prov_i64(k->id, p)));
    json_object_object_add(o, "name", k->name ? json_object_new_string(k->name) : NULL);
    json_object_object_add(o, "prefix", json_object_new_string(k->display));
    json_object_object_add(o, "weekly_budget", k->has_budget ? prov_json_credits(k->weekly_budget)
                                                             : NULL);
    json_object_object_add(o, "week_used", prov_json_credits(spent));
    json_object_object_add(o, "week_remaining", !k->has_budget ? NULL : prov_json_credits(
                           spent < k->weekly_budget ? k->weekly_budget - spent : 0));
    json_object_object_add(o, "returns_at", time_json(spent > 0 ? now + reset : 0, p));
    *out = o;
    return APR_SUCCESS;
}


static apr_status_t limits(json_object *r, prov_store_t *s, apr_int64_t user_id,
                           apr_int64_t now, apr_pool_t *p)
{
    static const char *const fields[] = { "balance", "held", "available", "plan", NULL };
    apr_array_header_t *keys = NULL;
    json_object *account = NULL, *a, *v;
    int i;
    apr_status_t rv = prov_cabinet_account(&account, s, user_id, now, p);
    if (rv == APR_SUCCESS)
        rv = prov_key_list(&keys, s, user_id, 0, p);
    if (rv != APR_SUCCESS)
        return rv;
    for (i = 0; fields[i]; i++) {
        if (json_object_object_get_ex(account, fields[i], &v))
            json_object_object_add(r, fields[i], json_object_get(v));
    }
    a = json_object_new_array();
    json_object_object_add(r, "keys", a);
    for (i = 0; i < keys->nelts; i++) {
        json_object *k = NULL;
        rv = key_json(&k, s, APR_ARRAY_IDX(keys, i, const prov_key_t *), now, p);
        if (rv != APR_SUCCESS)
            return rv;
        json_object_array_add(a, k);
    }
    return APR_SUCCESS;
}

static prov_mcp_tool_rc_e account_limits(json_object **result, const char **msg,
                                         json_object *args, const prov_mcp_ctx_t *ctx,
                                         apr_pool_t *p)
{
    prov_store_t *s = ctx->store_open(ctx->baton);
    json_object *r;
    apr_status_t rv;
    (void)msg;
    (void)args;
    if (!s)
        return PROV_MCP_TOOL_FAILED;
    r = json_object_new_object();
    rv = limits(r, s, ctx->user_id, ctx->now, p);
    ctx->store_close(ctx->baton, s);
    if (rv != APR_SUCCESS) {
        json_object_put(r);
        return PROV_MCP_TOOL_FAILED;
    }
    *result = r;
    return PROV_MCP_TOOL_OK;
}

/* ---- account_usage ------------------------------------------------------------- */

#define BY_TEXT "by must be \"day\", \"key\", \"model\" or \"session\""

/* The arguments: days 1..30 (default 7), by day|key|model|session (default day),
 * checked as GET /v1/usage checks its query. */
static int usage_args(int *days, prov_usage_by_e *by, const char **msg, json_object *args,
                      apr_pool_t *p)
{
    json_object *d = NULL, *b = NULL;
    prov_error_t *err = NULL;
    if (args && json_object_object_get_ex(args, "days", &d)
        && (!json_object_is_type(d, json_type_int) || json_object_get_int64(d) < 1
            || json_object_get_int64(d) > PROV_CABINET_DAYS_MAX)) {
        *msg = "days must be an integer from 1 to 30";
        return 0;
    }
    if (args && json_object_object_get_ex(args, "by", &b)
        && !json_object_is_type(b, json_type_string)) {
        *msg = BY_TEXT;
        return 0;
    }
    if (prov_cabinet_usage_args(days, by, &err, d ? json_object_get_string(d) : NULL,
                                b ? json_object_get_string(b) : NULL, p) != APR_SUCCESS) {
        *msg = BY_TEXT;
        return 0;
    }
    return 1;
}

static prov_mcp_tool_rc_e account_usage(json_object **result, const char **msg,
                                        json_object *args, const prov_mcp_ctx_t *ctx,
                                        apr_pool_t *p)
{
    prov_usage_by_e by = PROV_USAGE_BY_DAY;
    json_object *r = NULL;
    prov_store_t *s;
    int days = 7;
    apr_status_t rv;
    if (!usage_args(&days, &by, msg, args, p))
        return PROV_MCP_TOOL_BAD_INPUT;
    if (!(s = ctx->store_open(ctx->baton)))
        return PROV_MCP_TOOL_FAILED;
    rv = prov_cabinet_usage(&r, s, ctx->user_id, days, by, ctx->now, p);
    ctx->store_close(ctx->baton, s);
    if (rv != APR_SUCCESS)
        return PROV_MCP_TOOL_FAILED;
    /* A tool's result is the caller's to put; the cabinet's tree is p's. */
    *result = json_object_get(r);
    return PROV_MCP_TOOL_OK;
}

/* ---- the account endpoint --------------------------------------------------------- */

#define CREDITS "{\"type\":\"number\"}"
#define CREDITS_OR_NULL "{\"type\":[\"number\",\"null\"]}"
#define TIME_OR_NULL "{\"type\":[\"string\",\"null\"]}"

static const prov_mcp_tool_t tool_account_limits = {
    "account_limits", "Account limits",
    "The signed-in account's credit balance (and what requests in flight hold of it), its "
    "plan with the rolling 5-hour and 7-day windows (quota, used, remaining, when capacity "
    "returns, when it is full again), and each API key's weekly budget and its use in the "
    "last 7 days. Amounts are credits. Keys are shown by id, name and display prefix only.",
    "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
    "{\"type\":\"object\",\"properties\":{\"balance\":" CREDITS ",\"held\":" CREDITS
    ",\"available\":" CREDITS ",\"plan\":{\"type\":[\"object\",\"null\"],\"properties\":{"
    "\"name\":{\"type\":\"string\"},\"windows\":{\"type\":\"array\","
    "\"items\":{\"type\":\"object\",\"properties\":{\"window\":{\"type\":\"string\"},"
    "\"quota\":" CREDITS ",\"used\":" CREDITS ",\"remaining\":" CREDITS ",\"returns_at\":"
    TIME_OR_NULL ",\"full_at\":" TIME_OR_NULL "},"
    "\"required\":[\"window\",\"quota\",\"used\",\"remaining\"]}}}},"
    "\"keys\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"id\":{\"type\":\"string\"},\"name\":{\"type\":[\"string\",\"null\"]},"
    "\"prefix\":{\"type\":\"string\"},\"weekly_budget\":" CREDITS_OR_NULL ",\"week_used\":"
    CREDITS ",\"week_remaining\":" CREDITS_OR_NULL ",\"returns_at\":" TIME_OR_NULL "},"
    "\"required\":[\"id\",\"prefix\",\"week_used\"]}}},"
    "\"required\":[\"balance\",\"held\",\"available\",\"plan\",\"keys\"]}",
    account_limits,
    NULL
};

#define COUNT "{\"type\":\"integer\"}"

static const prov_mcp_tool_t tool_account_usage = {
    "account_usage", "Account usage",
    "The signed-in account's usage over the last 1 to 30 days (UTC, today included): "
    "requests, input, output, cache and reasoning tokens, and credits spent, grouped by day, "
    "by API key, by model or by agent session (a Claude Code or Codex session: its client, "
    "key, models and first and last request; the latest 50).",
    "{\"type\":\"object\",\"properties\":{"
    "\"days\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":30,\"description\":"
    "\"How many days back, today included (default 7)\"},"
    "\"by\":{\"type\":\"string\",\"enum\":[\"day\",\"key\",\"model\",\"session\"],"
    "\"description\":"
    "\"How to group the rows (default day)\"}},\"additionalProperties\":false}",
    "{\"type\":\"object\",\"properties\":{\"days\":" COUNT ",\"by\":{\"type\":\"string\"},"
    "\"data\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"object\",\"properties\":{\"group\":{\"type\":\"string\"},\"name\":{\"type\":"
    "[\"string\",\"null\"]},\"session\":{\"type\":\"string\"},\"client\":{\"type\":"
    "\"string\"},\"key\":{\"type\":\"string\"},\"models\":{\"type\":\"array\",\"items\":"
    "{\"type\":\"string\"}},\"first_request_at\":{\"type\":\"string\"},"
    "\"last_request_at\":{\"type\":\"string\"},\"requests\":" COUNT ",\"input_tokens\":" COUNT
    ",\"output_tokens\":" COUNT ",\"cache_tokens\":" COUNT ",\"reasoning_tokens\":" COUNT
    ",\"credits\":" CREDITS "},\"required\":[\"group\",\"requests\",\"credits\"]}}},"
    "\"required\":[\"days\",\"by\",\"data\"]}",
    account_usage,
    NULL
};

static const prov_mcp_tool_t *const account_tools[] = { &tool_account_limits,
                                                        &tool_account_usage, NULL };

const prov_mcp_server_t prov_mcp_account = {
    "mod_provider-account",
    "Read-only tools for the signed-in account of this LLM provider API: its balance, plan "
    "limits, keys' weekly budgets and usage. Never a key secret, a payment or an admin action.",
    account_tools
};
