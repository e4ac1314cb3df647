/* prov_header.c: the character rules of HTTP header lines (RFC 7230 §3.2),
 * applied before anything taken from a request or from the gateway becomes a
 * header: tokens for names and list items, field-content for values. The
 * same rules as httpd's strict header check, so that what passes here is
 * never refused there. */
#include <string.h>
#include "prov_header.h"

int prov_header_tchar(int c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return 1;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

int prov_header_token_ok(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (!prov_header_tchar((unsigned char)*s))
            return 0;
    return 1;
}

int prov_header_value_ok(const char *s)
{
    const unsigned char *c = (const unsigned char *)s;
    if (!s)
        return 0;
    for (; *c; c++)
        if ((*c < 0x20 && *c != '\t') || *c == 0x7f)
            return 0;
    return 1;
}

const char *prov_header_token(const char *s, apr_pool_t *p)
{
    apr_size_t n = s ? strlen(s) : 0, i, k = 0;
    char *out = apr_palloc(p, n + 1);
    for (i = 0; i < n; i++)
        if (prov_header_tchar((unsigned char)s[i]))
            out[k++] = s[i];
    out[k] = '\0';
    return out;
}

const char *prov_header_token_list(const apr_array_header_t *items, apr_size_t max,
                                   apr_pool_t *p)
{
    static const char more[] = "...";
    char *out = apr_palloc(p, max + 1);
    apr_size_t len = 0;
    int i;

    for (i = 0; i < items->nelts; i++) {
        const char *t = prov_header_token(APR_ARRAY_IDX(items, i, const char *), p);
        apr_size_t n = strlen(t), sep = len ? 1 : 0;
        if (!n)
            continue;
        /* Room for this item, and still for ",..." should a later one not fit. */
        if (len + sep + n + (i + 1 < items->nelts ? sizeof(more) : 0) > max) {
            if (len + sep + sizeof(more) - 1 <= max) {
                if (sep)
                    out[len++] = ',';
                memcpy(out + len, more, sizeof(more) - 1);
                len += sizeof(more) - 1;
            }
            break;
        }
        if (sep)
            out[len++] = ',';
        memcpy(out + len, t, n);
        len += n;
    }
    out[len] = '\0';
    return len ? out : NULL;
}
