/* prov_curl.h: the API of prov_curl.c, the libcurl options every short call
 * to a host the operator configured shares (an identity provider's
 * endpoints, the alerts' webhook). */
#ifndef PROV_CURL_H
#define PROV_CURL_H

#include <curl/curl.h>

/* Sets h's URL, http and https as its only protocols, no signals (libcurl in
 * a threaded server) and no redirect followed. */
void prov_curl_restrict(CURL *h, const char *url);

#endif
