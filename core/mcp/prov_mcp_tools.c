/* prov_mcp_tools.c: the public endpoint's tools. list_models is the
 * catalog exactly as GET /v1/models has it (core/account's prov_catalog:
 * enabled models the gateway lists now, with their rate card);
 * search_docs ranks the documentation's sections (prov_mcp_doc_t, given
 * by the caller from the docs room) against the words of a query: a word
 * in a title counts ten times one in the text, a section holding every
 * word gets a bonus, and each hit shows a short excerpt around its first
 * match with the section's /docs link. */
#include <stdlib.h>
#include <string.h>
#include "prov_mcp.h"
#include "prov_json.h"
#include "prov_models.h"

#define QUERY_MAX     200
#define LIMIT_DEFAULT 5
#define LIMIT_MAX     20
#define TERMS_MAX     16

/* ---- list_models ------------------------------------------------------------ */

static prov_mcp_tool_rc_e list_models(json_object **result, const char **msg, json_object *args,
                                      const prov_mcp_ctx_t *ctx, apr_pool_t *p)
{
    apr_array_header_t *models = NULL;
    apr_hash_t *available = NULL;
    prov_store_t *s = ctx->store_open(ctx->baton);
    const char *json, *err = NULL;
    int stale = 0;
    apr_status_t rv;
    (void)msg;
    (void)args;
    if (!s)
        return PROV_MCP_TOOL_FAILED;
    rv = prov_model_list(&models, s, 1, p);
    ctx->store_close(ctx->baton, s);
    if (rv == APR_SUCCESS)
        rv = ctx->catalog ? prov_catalog_available(&available, &stale, ctx->catalog,
                                                   ctx->gateway, p) : APR_EGENERAL;
    if (rv != APR_SUCCESS)
        return PROV_MCP_TOOL_FAILED;
    json = prov_catalog_render(models, available, ctx->default_max_output, p);
    *result = prov_json_parse_raw(json, strlen(json), &err);
    return *result ? PROV_MCP_TOOL_OK : PROV_MCP_TOOL_FAILED;
}

/* ---- search_docs -------------------------------------------------------------- */

static char *lower(const char *s, apr_pool_t *p)
{
    char *l = apr_pstrdup(p, s ? s : ""), *c;
    for (c = l; *c; c++) {
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    }
    return l;
}

static int word_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80 || c == '_';
}

/* The query's distinct lower-case words, at most TERMS_MAX. */
static apr_array_header_t *terms_of(const char *query, apr_pool_t *p)
{
    apr_array_header_t *terms = apr_array_make(p, 8, sizeof(const char *));
    char *q = lower(query, p), *c = q;
    while (*c && terms->nelts < TERMS_MAX) {
        char *start;
        int i, dup = 0;
        while (*c && !word_char((unsigned char)*c))
            c++;
        start = c;
        while (*c && word_char((unsigned char)*c))
            c++;
        if (c == start)
            break;
        if (*c)
            *c++ = '\0';
        for (i = 0; i < terms->nelts; i++)
            dup |= !strcmp(APR_ARRAY_IDX(terms, i, const char *), start);
        if (!dup)
            APR_ARRAY_PUSH(terms, const char *) = start;
    }
    return terms;
}

static int count(const char *hay, const char *term, int cap)
{
    int n = 0;
    apr_size_t len = strlen(term);
    const char *c = hay;
    while (n < cap && (c = strstr(c, term)) != NULL) {
        n++;
        c += len;
    }
    return n;
}

/* Back to the start of a UTF-8 sequence. */
static apr_size_t char_start(const char *s, apr_size_t i)
{
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    return i;
}

/* The text between from and to is at most PROV_MCP_EXCERPT_LEN bytes, so
 * with the two marks and the NUL it fits PROV_MCP_EXCERPT_MAX. */
apr_size_t prov_mcp_excerpt(char *out, const char *text, apr_size_t at)
{
    apr_size_t n = strlen(text), from, to, i;
    char *o = out;
    int space = 0;
    if (at > n)
        at = n;
    from = at > PROV_MCP_EXCERPT_BEFORE ? at - PROV_MCP_EXCERPT_BEFORE : 0;
    while (from > 0 && from < at && text[from - 1] != ' ' && text[from - 1] != '\n')
        from++;
    from = char_start(text, from);
    to = from + PROV_MCP_EXCERPT_LEN < n ? char_start(text, from + PROV_MCP_EXCERPT_LEN) : n;
    if (from > 0)
        o += strlen(strcpy(o, "... "));
    for (i = from; i < to; i++) {
        char c = text[i];
        if (c == '\n' || c == '\t' || c == '\r' || c == ' ') {
            space = o > out;
            continue;
        }
        if (space)
            *o++ = ' ';
        space = 0;
        *o++ = c;
    }
    if (to < n)
        o += strlen(strcpy(o, " ..."));
    *o = '\0';
    return (apr_size_t)(o - out);
}

static const char *excerpt(const char *text, apr_size_t at, apr_pool_t *p)
{
    char *out = apr_palloc(p, PROV_MCP_EXCERPT_MAX);
    prov_mcp_excerpt(out, text, at);
    return out;
}

typedef struct {
    const prov_mcp_doc_t *doc;
    int score;
    apr_size_t first;            /* the first match in the text */
} hit_t;

static int hit_cmp(const void *a, const void *b)
{
    const hit_t *x = a, *y = b;
    if (x->score != y->score)
        return y->score - x->score;
    return strcmp(x->doc->path, y->doc->path);
}

/* A section's score for terms (0: none of them), and its first match. */
static int score(apr_size_t *first, const prov_mcp_doc_t *d, const apr_array_header_t *terms,
                 apr_pool_t *p)
{
    const char *title = lower(d->title, p), *text = lower(d->text, p);
    int i, total = 0, matched = 0;
    *first = 0;
    for (i = 0; i < terms->nelts; i++) {
        const char *t = APR_ARRAY_IDX(terms, i, const char *);
        int in_title = count(title, t, 10), in_text = count(text, t, 10);
        const char *at = in_text ? strstr(text, t) : NULL;
        if (in_title || in_text)
            matched++;
        total += 10 * in_title + in_text;
        if (at && (!*first || (apr_size_t)(at - text) < *first))
            *first = (apr_size_t)(at - text);
    }
    if (matched && matched == terms->nelts && terms->nelts > 1)
        total += 5;
    return total;
}

json_object *prov_mcp_docs_search(const apr_array_header_t *docs, const char *query, int limit,
                                  const char *public_url, apr_pool_t *p)
{
    apr_array_header_t *terms = terms_of(query, p);
    json_object *a = json_object_new_array();
    hit_t *hits;
    int i, n = 0;
    if (!docs || !terms->nelts)
        return a;
    hits = apr_pcalloc(p, sizeof(*hits) * (apr_size_t)(docs->nelts + 1));
    for (i = 0; i < docs->nelts; i++) {
        const prov_mcp_doc_t *d = APR_ARRAY_IDX(docs, i, const prov_mcp_doc_t *);
        apr_size_t first = 0;
        int sc = score(&first, d, terms, p);
        if (sc > 0) {
            hits[n].doc = d;
            hits[n].score = sc;
            hits[n++].first = first;
        }
    }
    qsort(hits, (apr_size_t)n, sizeof(*hits), hit_cmp);
    for (i = 0; i < n && i < limit; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "title", json_object_new_string(hits[i].doc->title));
        json_object_object_add(o, "path", json_object_new_string(hits[i].doc->path));
        json_object_object_add(o, "url", json_object_new_string(
            apr_pstrcat(p, public_url ? public_url : "", hits[i].doc->path, NULL)));
        json_object_object_add(o, "excerpt", json_object_new_string(
            excerpt(hits[i].doc->text ? hits[i].doc->text : "", hits[i].first, p)));
        json_object_object_add(o, "score", json_object_new_int(hits[i].score));
        json_object_array_add(a, o);
    }
    return a;
}

static prov_mcp_tool_rc_e search_docs(json_object **result, const char **msg, json_object *args,
                                      const prov_mcp_ctx_t *ctx, apr_pool_t *p)
{
    json_object *q = prov_json_get(args, "query", json_type_string), *l = NULL, *r;
    const char *query = q ? json_object_get_string(q) : NULL;
    int limit = LIMIT_DEFAULT;
    if (!query || !*query || strlen(query) > QUERY_MAX) {
        *msg = "query must be a non-empty string of at most 200 characters";
        return PROV_MCP_TOOL_BAD_INPUT;
    }
    if (args && json_object_object_get_ex(args, "limit", &l)) {
        if (!json_object_is_type(l, json_type_int) || json_object_get_int64(l) < 1
            || json_object_get_int64(l) > LIMIT_MAX) {
            *msg = "limit must be an integer from 1 to 20";
            return PROV_MCP_TOOL_BAD_INPUT;
        }
        limit = (int)json_object_get_int64(l);
    }
    r = json_object_new_object();
    json_object_object_add(r, "query", json_object_new_string(query));
    json_object_object_add(r, "results", prov_mcp_docs_search(ctx->docs ? ctx->docs(ctx->baton) : NULL,
                                                              query, limit,
                                                              ctx->public_url, p));
    *result = r;
    return PROV_MCP_TOOL_OK;
}

/* search_docs serves once the documentation has sections to search. */
static int docs_available(const prov_mcp_ctx_t *ctx)
{
    const apr_array_header_t *docs = ctx->docs ? ctx->docs(ctx->baton) : NULL;
    return docs && docs->nelts > 0;
}

/* ---- the public endpoint ------------------------------------------------------- */

static const prov_mcp_tool_t tool_search_docs = {
    "search_docs", "Search the documentation",
    "Searches the public documentation of this service (setup guides, API reference, "
    "pricing and limits) and returns the best matching sections with their /docs links "
    "and a short excerpt.",
    "{\"type\":\"object\",\"properties\":{"
    "\"query\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200,"
    "\"description\":\"Words to look for\"},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":20,"
    "\"description\":\"At most this many sections (default 5)\"}},"
    "\"required\":[\"query\"],\"additionalProperties\":false}",
    "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"},"
    "\"results\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"title\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"
    "\"url\":{\"type\":\"string\"},\"excerpt\":{\"type\":\"string\"},"
    "\"score\":{\"type\":\"integer\"}},"
    "\"required\":[\"title\",\"path\",\"url\",\"excerpt\",\"score\"]}}},"
    "\"required\":[\"query\",\"results\"]}",
    search_docs,
    docs_available
};

#define RATE "{\"type\":[\"number\",\"null\"]}"

static const prov_mcp_tool_t tool_list_models = {
    "list_models", "List the models",
    "Lists the models this service offers now, with their public ids (the `model` of a "
    "request) and their prices in credits per 1 million input, output, cache and "
    "reasoning tokens (null: not priced separately). The same list as GET /v1/models.",
    "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
    "{\"type\":\"object\",\"properties\":{\"object\":{\"type\":\"string\"},"
    "\"data\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"id\":{\"type\":\"string\"},\"publicId\":{\"type\":\"string\"},"
    "\"display_name\":{\"type\":\"string\"},\"owned_by\":{\"type\":\"string\"},"
    "\"pricing\":{\"type\":\"object\",\"properties\":{\"input\":" RATE ",\"output\":" RATE
    ",\"cache\":" RATE ",\"reasoning\":" RATE "}}},"
    "\"required\":[\"id\",\"publicId\",\"display_name\",\"pricing\"]}}},"
    "\"required\":[\"data\"]}",
    list_models,
    NULL
};

static const prov_mcp_tool_t *const public_tools[] = { &tool_search_docs, &tool_list_models,
                                                       NULL };

const prov_mcp_server_t prov_mcp_public = {
    "mod_provider",
    "Read-only tools of this LLM provider API: search its documentation and list its models "
    "with their prices. No inference, payments, keys or account data here; the account's "
    "own limits and usage are at /v1/mcp/account (OAuth).",
    public_tools
};
