/* mod_provider_docs.h: the API of mod_provider_docs.c: GET /docs, /docs/NAME,
 * /docs/style.css and /v1/docs. */
#ifndef MOD_PROVIDER_DOCS_H
#define MOD_PROVIDER_DOCS_H

#include "mod_provider.h"

#define PROVIDER_DOCS_ROOT_DEFAULT PROV_DATADIR "/docs/site"
int provider_docs_handler(request_rec *r);
/* The directory of r's server's documentation pages (ProviderDocsRoot, else
 * the default): what core/docs's prov_docs_sections reads (MCP search_docs). */
const char *provider_docs_root(request_rec *r);
int provider_openapi_handler(request_rec *r);

#endif
