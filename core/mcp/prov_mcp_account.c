/* prov_mcp_account.c: the account endpoint's tools, for the user an access
 * token names (ctx->user_id; the glue checked the token). account_limits:
 * the balance (what requests in flight hold of it, what is available),
 * the plan with both rolling windows (quota, used, remaining, when capacity
 * returns) and each live key's weekly budget and its use, as core/billing
 * reads them for providerctl's `balance show` (key id, name and display
 * prefix only: never a secret). account_usage: requests, the four token
 * kinds and credits from the ledger over the last 1 to 30 UTC days (today
 * included), by day, key or model, as `providerctl usage report`. */
#include <string.h>
#include "prov_mcp.h"
#include "prov_json.h"
#include "prov_account.h"
#include "prov_billing.h"
#include "prov_usage.h"

#define DAY 86400

/* seconds since the epoch as RFC 3339 UTC, or JSON null for 0. */
static json_object *time_json(apr_int64_t t)
{
    char buf[32];
    apr_time_exp_t x;
    if (!t)
        return NULL;
    apr_time_exp_gmt(&x, apr_time_from_sec(t));
    apr_snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", x.tm_year + 1900,
                 x.tm_mon + 1, x.tm_mday, x.tm_hour, x.tm_min, x.tm_sec);
    return json_object_new_string(buf);
}

static json_object *window(const char *name, prov_micro_t quota, prov_micro_t used,
                           apr_int64_t reset, apr_int64_t now)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "window", json_object_new_string(name));
    json_object_object_add(o, "quota", prov_json_credits(quota));
    json_object_object_add(o, "used", prov_json_credits(used));
    json_object_object_add(o, "remaining", prov_json_credits(used < quota ? quota - used : 0));
    json_object_object_add(o, "returns_at", time_json(used > 0 ? now + reset : 0));
    return o;
}

static json_object *plan_json(const prov_plan_windows_t *w, apr_int64_t now)
{
    json_object *o, *a;
    if (!w->has_plan)
        return NULL;
    o = json_object_new_object();
    a = json_object_new_array();
    json_object_object_add(o, "name", json_object_new_string(w->plan_name));
    json_object_object_add(o, "until", time_json(w->until_at));
    json_object_array_add(a, window("5h", w->quota_5h, w->used_5h, w->reset_5h, now));
    json_object_array_add(a, window("7d", w->quota_7d, w->used_7d, w->reset_7d, now));
    json_object_object_add(o, "windows", a);
    return o;
}

static apr_status_t key_json(json_object **out, prov_store_t *s, const prov_apikey_t *k,
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
    json_object_object_add(o, "returns_at", time_json(spent > 0 ? now + reset : 0));
    *out = o;
    return APR_SUCCESS;
}

static apr_status_t limits(json_object *r, prov_store_t *s, apr_int64_t user_id,
                           apr_int64_t now, apr_pool_t *p)
{
    prov_account_status_t st;
    apr_array_header_t *keys = NULL;
    json_object *a;
    int i;
    apr_status_t rv = prov_billing_account_status(&st, s, user_id, now, p);
    if (rv == APR_SUCCESS)
        rv = prov_apikey_list(&keys, s, user_id, 0, p);
    if (rv != APR_SUCCESS)
        return rv;
    json_object_object_add(r, "balance", prov_json_credits(st.balance));
    json_object_object_add(r, "held", prov_json_credits(st.held));
    json_object_object_add(r, "available", prov_json_credits(st.balance > st.held
                                                             ? st.balance - st.held : 0));
    json_object_object_add(r, "plan", plan_json(&st.windows, now));
    a = json_object_new_array();
    json_object_object_add(r, "keys", a);
    for (i = 0; i < keys->nelts; i++) {
        json_object *k = NULL;
        rv = key_json(&k, s, APR_ARRAY_IDX(keys, i, const prov_apikey_t *), now, p);
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

static const char *const bys[] = { "day", "key", "model", NULL };

static apr_status_t usage_rows(json_object *a, prov_store_t *s, const prov_usage_filter_t *f,
                               apr_pool_t *p)
{
    apr_array_header_t *rows = NULL, *keys = NULL;
    int i, j;
    apr_status_t rv = prov_usage_report(&rows, s, f, p);
    if (rv == APR_SUCCESS && f->by == PROV_USAGE_BY_KEY)
        rv = prov_apikey_list(&keys, s, f->user_id, 1, p);
    if (rv != APR_SUCCESS)
        return rv;
    for (i = 0; i < rows->nelts; i++) {
        const prov_usage_row_t *u = APR_ARRAY_IDX(rows, i, const prov_usage_row_t *);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "group", json_object_new_string(u->group));
        for (j = 0; keys && j < keys->nelts; j++) {
            const prov_apikey_t *k = APR_ARRAY_IDX(keys, j, const prov_apikey_t *);
            if (!strcmp(prov_i64(k->id, p), u->group))
                json_object_object_add(o, "name", k->name ? json_object_new_string(k->name)
                                                          : NULL);
        }
        json_object_object_add(o, "requests", json_object_new_int64(u->requests));
        json_object_object_add(o, "input_tokens", json_object_new_int64(u->tokens.input));
        json_object_object_add(o, "output_tokens", json_object_new_int64(u->tokens.output));
        json_object_object_add(o, "cache_tokens", json_object_new_int64(u->tokens.cache));
        json_object_object_add(o, "reasoning_tokens",
                               json_object_new_int64(u->tokens.reasoning));
        json_object_object_add(o, "credits", prov_json_credits(u->credits));
        json_object_array_add(a, o);
    }
    return APR_SUCCESS;
}

/* The arguments: days 1..30 (default 7), by day|key|model (default day). */
static int usage_args(prov_usage_filter_t *f, apr_int64_t *days, const char **by,
                      const char **msg, json_object *args)
{
    json_object *v = NULL;
    int i;
    *days = 7;
    *by = "day";
    if (args && json_object_object_get_ex(args, "days", &v)) {
        if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1
            || json_object_get_int64(v) > 30) {
            *msg = "days must be an integer from 1 to 30";
            return 0;
        }
        *days = json_object_get_int64(v);
    }
    if (args && json_object_object_get_ex(args, "by", &v)) {
        *by = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
        for (i = 0; bys[i] && strcmp(bys[i], *by); i++)
            ;
        if (!bys[i]) {
            *msg = "by must be \"day\", \"key\" or \"model\"";
            return 0;
        }
        f->by = i == 0 ? PROV_USAGE_BY_DAY : i == 1 ? PROV_USAGE_BY_KEY : PROV_USAGE_BY_MODEL;
    }
    return 1;
}

static prov_mcp_tool_rc_e account_usage(json_object **result, const char **msg,
                                        json_object *args, const prov_mcp_ctx_t *ctx,
                                        apr_pool_t *p)
{
    prov_usage_filter_t f;
    apr_int64_t days = 7;
    const char *by = "day";
    prov_store_t *s;
    json_object *r, *a;
    apr_status_t rv;
    memset(&f, 0, sizeof(f));
    f.by = PROV_USAGE_BY_DAY;
    if (!usage_args(&f, &days, &by, msg, args))
        return PROV_MCP_TOOL_BAD_INPUT;
    f.user_id = ctx->user_id;
    f.since = ctx->now - ctx->now % DAY - (days - 1) * DAY;
    if (!(s = ctx->store_open(ctx->baton)))
        return PROV_MCP_TOOL_FAILED;
    r = json_object_new_object();
    a = json_object_new_array();
    json_object_object_add(r, "days", json_object_new_int64(days));
    json_object_object_add(r, "by", json_object_new_string(by));
    json_object_object_add(r, "since", time_json(f.since));
    json_object_object_add(r, "data", a);
    rv = usage_rows(a, s, &f, p);
    ctx->store_close(ctx->baton, s);
    if (rv != APR_SUCCESS) {
        json_object_put(r);
        return PROV_MCP_TOOL_FAILED;
    }
    *result = r;
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
    "returns), and each API key's weekly budget and its use in the last 7 days. Amounts are "
    "credits. Keys are shown by id, name and display prefix only.",
    "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
    "{\"type\":\"object\",\"properties\":{\"balance\":" CREDITS ",\"held\":" CREDITS
    ",\"available\":" CREDITS ",\"plan\":{\"type\":[\"object\",\"null\"],\"properties\":{"
    "\"name\":{\"type\":\"string\"},\"until\":" TIME_OR_NULL ",\"windows\":{\"type\":\"array\","
    "\"items\":{\"type\":\"object\",\"properties\":{\"window\":{\"type\":\"string\"},"
    "\"quota\":" CREDITS ",\"used\":" CREDITS ",\"remaining\":" CREDITS ",\"returns_at\":"
    TIME_OR_NULL "},\"required\":[\"window\",\"quota\",\"used\",\"remaining\"]}}}},"
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
    "by API key or by model.",
    "{\"type\":\"object\",\"properties\":{"
    "\"days\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":30,\"description\":"
    "\"How many days back, today included (default 7)\"},"
    "\"by\":{\"type\":\"string\",\"enum\":[\"day\",\"key\",\"model\"],\"description\":"
    "\"How to group the rows (default day)\"}},\"additionalProperties\":false}",
    "{\"type\":\"object\",\"properties\":{\"days\":" COUNT ",\"by\":{\"type\":\"string\"},"
    "\"since\":{\"type\":\"string\"},\"data\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"object\",\"properties\":{\"group\":{\"type\":\"string\"},\"name\":{\"type\":"
    "[\"string\",\"null\"]},\"requests\":" COUNT ",\"input_tokens\":" COUNT
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
