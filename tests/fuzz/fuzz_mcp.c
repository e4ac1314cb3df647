/* fuzz_mcp.c: libFuzzer harness of what the MCP and OAuth endpoints read
 * from a client, without a database: a POST body through prov_mcp_handle
 * (the public and the account endpoint; a tool that needs the database
 * sees none and fails), a query or form through prov_oauth_form, redirect
 * URIs through prov_oauth_redirect_uri_ok and prov_oauth_redirect_registered,
 * and a query through prov_mcp_docs_search over sections cut from the
 * input. The first byte chooses the target. Checked: the answer is 200,
 * 202 (no body) or 400, its body parses as a JSON-RPC object with
 * jsonrpc "2.0" and a result or an error, never both (a 400 an error), its
 * id a string, an integer or null; a form holds no NUL; a registrable URI matches itself; a search returns
 * at most its limit, each hit linking under the given origin. */
#include "fuzz_common.h"
#include "prov_mcp.h"
#include "prov_oauth.h"

static prov_store_t *no_store(void *baton)
{
    (void)baton;
    return NULL;
}

static void no_close(void *baton, prov_store_t *s)
{
    (void)baton;
    (void)s;
}

static void message(const char *body, size_t size, int account, apr_pool_t *p)
{
    prov_mcp_ctx_t ctx;
    prov_mcp_answer_t out;
    json_object *o, *id = NULL;
    const char *err = NULL;
    int has_result, has_error;
    memset(&ctx, 0, sizeof(ctx));
    ctx.store_open = no_store;
    ctx.store_close = no_close;
    ctx.user_id = account ? 1 : 0;
    prov_mcp_handle(&out, account ? &prov_mcp_account : &prov_mcp_public, &ctx, body, size, p);
    FUZZ_CHECK(out.status == 200 || out.status == 202 || out.status == 400);
    if (out.status == 202) {
        FUZZ_CHECK(out.body == NULL);
        return;
    }
    FUZZ_CHECK(out.body != NULL);
    o = prov_json_parse(out.body, strlen(out.body), &err, p);
    FUZZ_CHECK(o && json_object_is_type(o, json_type_object));
    FUZZ_CHECK(!strcmp(prov_json_get_str(o, "jsonrpc"), "2.0"));
    has_result = json_object_object_get_ex(o, "result", NULL);
    has_error = json_object_object_get_ex(o, "error", NULL);
    FUZZ_CHECK(has_result != has_error);
    if (out.status == 400)
        FUZZ_CHECK(has_error);
    /* an answer's id is the request's (a string or an integer) or null */
    if (json_object_object_get_ex(o, "id", &id) && id)
        FUZZ_CHECK(json_object_is_type(id, json_type_string)
                   || json_object_is_type(id, json_type_int));
}

static void form(const char *text, apr_pool_t *p)
{
    apr_table_t *t = NULL;
    prov_oauth_err_t err;
    const apr_array_header_t *a;
    int i;
    if (prov_oauth_form(&t, &err, text, p) != APR_SUCCESS) {
        FUZZ_CHECK(err.error && err.description);
        return;
    }
    a = apr_table_elts(t);
    for (i = 0; i < a->nelts; i++) {
        const apr_table_entry_t *e = &APR_ARRAY_IDX(a, i, apr_table_entry_t);
        FUZZ_CHECK(e->key && e->val);
    }
}

static void redirect(const char *uri, apr_pool_t *p)
{
    prov_oauth_client_t c;
    c.redirect_uris = apr_array_make(p, 1, sizeof(const char *));
    APR_ARRAY_PUSH(c.redirect_uris, const char *) = "http://127.0.0.1:5173/callback";
    if (prov_oauth_redirect_registered(&c, uri))
        FUZZ_CHECK(!strncmp(uri, "http://127.0.0.1", 16));
    if (!prov_oauth_redirect_uri_ok(uri))
        return;
    APR_ARRAY_PUSH(c.redirect_uris, const char *) = uri;
    FUZZ_CHECK(prov_oauth_redirect_registered(&c, uri));
}

/* Sections cut from text at each '\n' (title|text), searched with its first line. */
static void search(const char *text, unsigned limit, apr_pool_t *p)
{
    apr_array_header_t *docs = apr_array_make(p, 4, sizeof(prov_mcp_doc_t *));
    char *copy = apr_pstrdup(p, text), *last = NULL, *line, *query;
    json_object *hits;
    size_t i;
    query = apr_strtok(copy, "\n", &last);
    for (line = query ? apr_strtok(NULL, "\n", &last) : NULL; line;
         line = apr_strtok(NULL, "\n", &last)) {
        prov_mcp_doc_t *d = apr_pcalloc(p, sizeof(*d));
        char *bar = strchr(line, '|');
        d->path = apr_psprintf(p, "/docs#s%d", docs->nelts);
        d->title = bar ? apr_pstrndup(p, line, (apr_size_t)(bar - line)) : line;
        d->text = bar ? bar + 1 : "";
        APR_ARRAY_PUSH(docs, prov_mcp_doc_t *) = d;
    }
    hits = prov_json_own(prov_mcp_docs_search(docs, query ? query : "", (int)limit + 1,
                                              "https://x.example", p), p);
    FUZZ_CHECK(json_object_array_length(hits) <= limit + 1);
    for (i = 0; i < json_object_array_length(hits); i++) {
        const char *url = prov_json_get_str(json_object_array_get_idx(hits, i), "url");
        FUZZ_CHECK(url && !strncmp(url, "https://x.example/docs#s", 24));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    unsigned target = fuzz_take(&data, &size);
    char *text = fuzz_str(data, size, p);
    switch (target % 5) {
    case 0: message(text, size, 0, p); break;
    case 1: message(text, size, 1, p); break;
    case 2: form(text, p); break;
    case 3: redirect(text, p); break;
    default: search(text, target / 5 % 8, p); break;
    }
    apr_pool_destroy(p);
    return 0;
}
