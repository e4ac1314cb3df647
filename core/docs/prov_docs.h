/* prov_docs.h: the public documentation as the module serves it, without
 * httpd: the pages installed under a root directory (docs/site/, installed
 * to ProviderDocsRoot: NAME.html, the _layout.html every page is served
 * in, style.css, openapi.json), the values put
 * into a page at request time (the service's base URL and the catalog's
 * live model ids, in place of {{markers}}), and the sections of the pages
 * (title, stable anchor link, plain text) for a documentation search (the
 * MCP tool search_docs). It calls base only. */
#ifndef PROV_DOCS_H
#define PROV_DOCS_H

#include "prov_common.h"
#include "prov_credit.h"

/* What a page's markers become. Markers: {{base_url}}, {{model}} (the first
 * model id), {{messages_model}} (the first id served on /v1/messages),
 * {{models}} and {{messages_models}} (an HTML list of the ids). Any field
 * may be NULL or empty: a model marker then reads MODEL_ID, the lists say
 * that no model is available right now, {{base_url}} reads
 * https://provider.example. */
typedef struct prov_docs_vars_t {
    const char *base_url;                       /* an origin, no trailing '/' */
    const apr_array_header_t *models;           /* const char *: public ids */
    const apr_array_header_t *messages_models;  /* const char *: public ids */
    const prov_credit_offer_t *credit;          /* what a credit is worth, or NULL */
} prov_docs_vars_t;

/* One section of a page: a heading with an id and the text up to the next. */
typedef struct prov_docs_section_t {
    const char *page;    /* "index", "errors", "claude-code", ... */
    const char *anchor;  /* the heading's id */
    const char *title;   /* the heading's text */
    const char *link;    /* "/docs#ANCHOR" for index, else "/docs/PAGE#ANCHOR" */
    const char *text;    /* the section's text, tags removed, spaces collapsed */
} prov_docs_section_t;

/* Non-zero when name can be a page: 1-64 of [a-z0-9-], not starting with '-'. */
int prov_docs_name_valid(const char *name);
/* The page names under root (each NAME.html), sorted, "index" first.
 * APR_ENOENT (or the directory's error) when root cannot be read. */
apr_status_t prov_docs_pages(apr_array_header_t **names, const char *root, apr_pool_t *p);
/* The whole file root/file (NUL-terminated, at most 4 MiB; APR_ENOSPC past
 * that). APR_ENOENT when it does not exist. */
apr_status_t prov_docs_read(const char **text, apr_size_t *len, const char *root,
                            const char *file, apr_pool_t *p);
/* text with its markers replaced from v (values HTML-escaped); an unknown
 * {{word}} stays as it is. */
const char *prov_docs_render(const char *text, const prov_docs_vars_t *v, apr_pool_t *p);
/* The page as served: page (a NAME.html's text) with its markers replaced
 * from v, put in root's _layout.html in place of {{content}}, the plain text
 * of the page's first <h1> in place of {{title}} (escaped), and the layout's
 * own markers replaced from v. APR_ENOENT (or the read's error) when the
 * layout cannot be read, APR_EINVAL when it lacks {{title}} then {{content}}. */
apr_status_t prov_docs_frame(const char **html, const char *root, const char *page,
                             const prov_docs_vars_t *v, apr_pool_t *p);
/* Non-zero when text has a marker that needs the catalog. */
int prov_docs_needs_models(const char *text);
/* The sections (prov_docs_section_t *) of every page under root, in page
 * order then document order: each <h1>, <h2> and <h3> with an id. The
 * markers are replaced from v first (v may be NULL: the defaults). */
apr_status_t prov_docs_sections(apr_array_header_t **sections, const char *root,
                                const prov_docs_vars_t *v, apr_pool_t *p);

/* The sections kept by a process (prov_docs_cache.c): read again only when
 * a page under root was added, removed or changed (name, size, mtime) or
 * the base URL is another; thread-safe. */
typedef struct prov_docs_cache_t prov_docs_cache_t;
apr_status_t prov_docs_cache_create(prov_docs_cache_t **c, apr_pool_t *p);
/* As prov_docs_sections (only v->base_url may be set), copied into p;
 * *refilled (may be NULL) says whether the pages were read again. */
apr_status_t prov_docs_cache_sections(apr_array_header_t **sections, prov_docs_cache_t *c,
                                      const char *root, const prov_docs_vars_t *v,
                                      int *refilled, apr_pool_t *p);
/* What the cache compares: base_url and each page's name, size and mtime. */
apr_status_t prov_docs_stamp(const char **stamp, const char *root, const char *base_url,
                             apr_pool_t *p);
/* The sections of one page's HTML (for prov_docs_sections and tests). */
void prov_docs_page_sections(apr_array_header_t *out, const char *page, const char *html,
                             apr_pool_t *p);

#endif
