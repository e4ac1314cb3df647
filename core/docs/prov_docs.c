/* prov_docs.c: the installed documentation pages: their names, reading a
 * page, putting the request's values in place of its {{markers}}, and
 * cutting the pages into sections (a heading with an id and its text) for a
 * documentation search. The pages are ours (docs/site/), so the HTML is
 * read with a few string scans, not a parser: a heading is <hN id="...">
 * with N 1 to 3, and tests/integration/docs.test.js checks every page is so. */
#include <string.h>
#include <stdlib.h>
#include <apr_file_io.h>
#include "prov_docs.h"

#define DOCS_MAX_FILE (4 * 1024 * 1024)
#define DEFAULT_BASE_URL "https://provider.example"
#define DEFAULT_MODEL "MODEL_ID"

int prov_docs_name_valid(const char *name)
{
    apr_size_t i, n = name ? strlen(name) : 0;
    if (n == 0 || n > 64 || name[0] == '-')
        return 0;
    for (i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return 0;
    }
    return 1;
}

static int page_cmp(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    if (!strcmp(x, "index") || !strcmp(y, "index"))
        return !strcmp(x, "index") ? (strcmp(y, "index") ? -1 : 0) : 1;
    return strcmp(x, y);
}

apr_status_t prov_docs_pages(apr_array_header_t **names, const char *root, apr_pool_t *p)
{
    apr_dir_t *dir = NULL;
    apr_finfo_t fi;
    apr_array_header_t *out = apr_array_make(p, 16, sizeof(const char *));
    apr_status_t rv = apr_dir_open(&dir, root, p);
    if (rv != APR_SUCCESS)
        return rv;
    while (apr_dir_read(&fi, APR_FINFO_NAME | APR_FINFO_TYPE, dir) == APR_SUCCESS) {
        apr_size_t n = strlen(fi.name);
        char *name;
        if (fi.filetype != APR_REG || n <= 5 || strcmp(fi.name + n - 5, ".html"))
            continue;
        name = apr_pstrndup(p, fi.name, n - 5);
        if (prov_docs_name_valid(name))
            APR_ARRAY_PUSH(out, const char *) = name;
    }
    apr_dir_close(dir);
    qsort(out->elts, (size_t)out->nelts, sizeof(const char *), page_cmp);
    *names = out;
    return APR_SUCCESS;
}

apr_status_t prov_docs_read(const char **text, apr_size_t *len, const char *root,
                            const char *file, apr_pool_t *p)
{
    apr_file_t *f = NULL;
    apr_finfo_t fi;
    char *buf;
    apr_size_t n;
    apr_status_t rv = apr_file_open(&f, apr_pstrcat(p, root, "/", file, NULL),
                                    APR_FOPEN_READ | APR_FOPEN_BUFFERED, APR_OS_DEFAULT, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = apr_file_info_get(&fi, APR_FINFO_SIZE | APR_FINFO_TYPE, f);
    if (rv == APR_SUCCESS && fi.filetype != APR_REG)
        rv = APR_ENOENT;
    if (rv == APR_SUCCESS && fi.size > DOCS_MAX_FILE)
        rv = APR_ENOSPC;
    if (rv != APR_SUCCESS) {
        apr_file_close(f);
        return rv;
    }
    n = (apr_size_t)fi.size;
    buf = apr_palloc(p, n + 1);
    rv = n ? apr_file_read_full(f, buf, n, &n) : APR_SUCCESS;
    apr_file_close(f);
    if (rv != APR_SUCCESS && rv != APR_EOF)
        return rv;
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return APR_SUCCESS;
}

/* s with & < > " ' as entities. */
static const char *escape(const char *s, apr_pool_t *p)
{
    apr_size_t i, extra = 0;
    char *out, *o;
    for (i = 0; s[i]; i++)
        extra += strchr("&<>\"'", s[i]) ? 5 : 0;
    if (!extra)
        return s;
    out = o = apr_palloc(p, i + extra + 1);
    for (i = 0; s[i]; i++) {
        const char *e = s[i] == '&' ? "&amp;" : s[i] == '<' ? "&lt;" : s[i] == '>' ? "&gt;"
                        : s[i] == '"' ? "&quot;" : s[i] == '\'' ? "&#39;" : NULL;
        if (e) {
            memcpy(o, e, strlen(e));
            o += strlen(e);
        } else {
            *o++ = s[i];
        }
    }
    *o = '\0';
    return out;
}

static const char *first(const apr_array_header_t *ids)
{
    return ids && ids->nelts ? APR_ARRAY_IDX(ids, 0, const char *) : DEFAULT_MODEL;
}

static const char *list(const apr_array_header_t *ids, apr_pool_t *p)
{
    apr_array_header_t *items = apr_array_make(p, 8, sizeof(const char *));
    int i;
    if (!ids || !ids->nelts)
        return "<ul class=\"models\"><li>No model is available right now.</li></ul>";
    for (i = 0; i < ids->nelts; i++)
        APR_ARRAY_PUSH(items, const char *) = apr_pstrcat(p, "<li><code>",
            escape(APR_ARRAY_IDX(ids, i, const char *), p), "</code></li>", NULL);
    return apr_pstrcat(p, "<ul class=\"models\">", apr_array_pstrcat(p, items, 0), "</ul>",
                       NULL);
}

/* The value of the marker name (of length n), or NULL when it is none. */
static const char *marker(const char *name, apr_size_t n, const prov_docs_vars_t *v,
                          apr_pool_t *p)
{
    static const prov_docs_vars_t none = { NULL, NULL, NULL, NULL };
    if (!v)
        v = &none;
#define IS(w) (n == sizeof(w) - 1 && !memcmp(name, w, n))
    if (IS("base_url"))
        return escape(v->base_url && *v->base_url ? v->base_url : DEFAULT_BASE_URL, p);
    if (IS("model"))
        return escape(first(v->models), p);
    if (IS("messages_model"))
        return escape(first(v->messages_models), p);
    if (IS("models"))
        return list(v->models, p);
    if (IS("messages_models"))
        return list(v->messages_models, p);
    if (IS("credit_value"))
        return escape(prov_credit_value_words(v->credit, p), p);
    if (IS("top_up"))
        return v->credit && v->credit->top_up_url
               ? apr_pstrcat(p, "<a href=\"", escape(v->credit->top_up_url, p), "\">",
                             escape(v->credit->top_up_url, p), "</a>", NULL)
               : "the service's administrator";
#undef IS
    return NULL;
}

const char *prov_docs_render(const char *text, const prov_docs_vars_t *v, apr_pool_t *p)
{
    apr_array_header_t *parts = apr_array_make(p, 32, sizeof(const char *));
    const char *at = text, *open;
    while ((open = strstr(at, "{{")) != NULL) {
        const char *close = strstr(open + 2, "}}");
        const char *val = close && close - open <= 40
                          ? marker(open + 2, (apr_size_t)(close - open - 2), v, p) : NULL;
        if (!val) {
            APR_ARRAY_PUSH(parts, const char *) = apr_pstrndup(p, at, (apr_size_t)(open + 2 - at));
            at = open + 2;
            continue;
        }
        APR_ARRAY_PUSH(parts, const char *) = apr_pstrndup(p, at, (apr_size_t)(open - at));
        APR_ARRAY_PUSH(parts, const char *) = val;
        at = close + 2;
    }
    APR_ARRAY_PUSH(parts, const char *) = at;
    return apr_array_pstrcat(p, parts, 0);
}

int prov_docs_needs_models(const char *text)
{
    return strstr(text, "{{model") || strstr(text, "{{messages_model");
}

/* ---- sections ----------------------------------------------------------------- */

/* The entity at s (after '&'): its character and length, or 0. */
static char entity(const char *s, apr_size_t *n)
{
    static const struct { const char *name; char c; } known[] = {
        { "amp;", '&' }, { "lt;", '<' }, { "gt;", '>' }, { "quot;", '"' }, { "#39;", '\'' },
        { "nbsp;", ' ' }
    };
    apr_size_t i;
    for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        *n = strlen(known[i].name);
        if (!strncmp(s, known[i].name, *n))
            return known[i].c;
    }
    return 0;
}

/* The text of html[0..len): tags removed, entities decoded, runs of white
 * space as one space, trimmed. */
static const char *plain(const char *html, apr_size_t len, apr_pool_t *p)
{
    char *out = apr_palloc(p, len + 1), *o = out;
    apr_size_t i = 0;
    int space = 1;
    while (i < len) {
        char c = html[i];
        apr_size_t n = 0;
        if (c == '<') {
            const char *end = memchr(html + i, '>', len - i);
            i = end ? (apr_size_t)(end - html) + 1 : len;
            c = ' ';
        } else if (c == '&' && (c = entity(html + i + 1, &n)) != 0) {
            i += n + 1;
        } else {
            c = html[i++];
        }
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
            if (!space)
                *o++ = ' ';
            space = 1;
        } else {
            *o++ = c;
            space = 0;
        }
    }
    while (o > out && o[-1] == ' ')
        o--;
    *o = '\0';
    return out;
}

/* The next heading at or after s: <h1|h2|h3 id="...">; sets *id (in p) and
 * *body (after the tag's '>'). */
static const char *next_heading(const char *s, const char **id, const char **body,
                                apr_pool_t *p)
{
    while ((s = strstr(s, "<h")) != NULL) {
        const char *q, *gt;
        if (s[2] >= '1' && s[2] <= '3' && !strncmp(s + 3, " id=\"", 5)
            && (q = strchr(s + 8, '"')) != NULL && (gt = strchr(q, '>')) != NULL) {
            *id = apr_pstrndup(p, s + 8, (apr_size_t)(q - s - 8));
            *body = gt + 1;
            return s;
        }
        s += 2;
    }
    return NULL;
}

void prov_docs_page_sections(apr_array_header_t *out, const char *page, const char *html,
                             apr_pool_t *p)
{
    const char *id = NULL, *body = NULL;
    const char *at = next_heading(html, &id, &body, p);
    const char *base = strcmp(page, "index") ? apr_pstrcat(p, "/docs/", page, NULL) : "/docs";
    while (at) {
        const char *next_id = NULL, *next_body = NULL;
        const char *next = next_heading(body, &next_id, &next_body, p);
        const char *close = strstr(body, "</h");
        const char *end = next ? next : body + strlen(body);
        prov_docs_section_t *s = apr_pcalloc(p, sizeof(*s));
        if (!close || close > end)
            close = end;
        s->page = page;
        s->anchor = id;
        s->title = plain(body, (apr_size_t)(close - body), p);
        s->link = apr_pstrcat(p, base, "#", id, NULL);
        s->text = plain(close, (apr_size_t)(end - close), p);
        APR_ARRAY_PUSH(out, prov_docs_section_t *) = s;
        at = next;
        id = next_id;
        body = next_body;
    }
}

apr_status_t prov_docs_sections(apr_array_header_t **sections, const char *root,
                                const prov_docs_vars_t *v, apr_pool_t *p)
{
    apr_array_header_t *names = NULL;
    apr_array_header_t *out = apr_array_make(p, 64, sizeof(prov_docs_section_t *));
    apr_status_t rv = prov_docs_pages(&names, root, p);
    int i;
    if (rv != APR_SUCCESS)
        return rv;
    for (i = 0; i < names->nelts; i++) {
        const char *name = APR_ARRAY_IDX(names, i, const char *);
        const char *html = NULL;
        apr_size_t len = 0;
        rv = prov_docs_read(&html, &len, root, apr_pstrcat(p, name, ".html", NULL), p);
        if (rv != APR_SUCCESS)
            return rv;
        prov_docs_page_sections(out, name, prov_docs_render(html, v, p), p);
    }
    *sections = out;
    return APR_SUCCESS;
}

apr_status_t prov_docs_frame(const char **html, const char *root, const char *page,
                             const prov_docs_vars_t *v, apr_pool_t *p)
{
    const char *layout = NULL, *title = "Documentation", *h1, *t, *c;
    apr_size_t len = 0;
    apr_status_t rv = prov_docs_read(&layout, &len, root, "_layout.html", p);
    if (rv != APR_SUCCESS)
        return rv;
    page = prov_docs_render(page, v, p);
    h1 = strstr(page, "<h1");
    /* The layout's own markers are replaced before the page goes in, so
     * that nothing is read for markers twice. */
    layout = prov_docs_render(layout, v, p);
    t = strstr(layout, "{{title}}");
    c = t ? strstr(t, "{{content}}") : NULL;
    if (!c)
        return APR_EINVAL;
    if (h1 && (h1 = strchr(h1, '>')) != NULL && strstr(h1, "</h1>"))
        title = plain(h1 + 1, (apr_size_t)(strstr(h1, "</h1>") - h1 - 1), p);
    *html = apr_pstrcat(p, apr_pstrndup(p, layout, (apr_size_t)(t - layout)), escape(title, p),
                        apr_pstrndup(p, t + 9, (apr_size_t)(c - t - 9)),
                        page, c + 11, NULL);
    return APR_SUCCESS;
}
