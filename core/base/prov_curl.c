/* prov_curl.c: the options of a fresh libcurl handle that calls a host the
 * operator configured (core/identity's calls, core/alert's webhook): the
 * URL, http and https only (CURLOPT_PROTOCOLS_STR where libcurl has it, the
 * older bit mask otherwise), no signals, no redirect followed. What a call
 * sends, its timeouts and its answer are the caller's. */
#include "prov_curl.h"

void prov_curl_restrict(CURL *h, const char *url)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
}
