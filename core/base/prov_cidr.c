/* prov_cidr.c: CIDR ranges of IPv4 and IPv6 addresses (prov_cidr.h): parsed
 * with inet_pton (numbers only, never a name), compared byte by byte under
 * the prefix's mask. A key's address list is kept as canonical text (what
 * the database stores and the lookup cache copies) and parsed again at each
 * match: a few ranges cost a few hundred nanoseconds, less than keeping a
 * parsed copy in step with the text. */
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include "prov_cidr.h"

/* addr as 4 or 16 bytes; an IPv4-mapped IPv6 address as its IPv4 one. */
static int addr_bytes(unsigned char out[16], const char *addr)
{
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    char buf[64];
    apr_size_t n = strlen(addr);
    if (n == 0 || n >= sizeof(buf))
        return 0;
    memcpy(buf, addr, n + 1);
    if (inet_pton(AF_INET, buf, out) == 1)
        return 4;
    if (inet_pton(AF_INET6, buf, out) != 1)
        return 0;
    if (!memcmp(out, mapped, sizeof(mapped))) {
        memmove(out, out + 12, 4);
        return 4;
    }
    return 6;
}

static void mask(unsigned char *net, int family, int bits)
{
    int i, len = family == 4 ? 4 : 16;
    for (i = 0; i < len; i++) {
        int keep = bits - i * 8;
        net[i] &= keep >= 8 ? 0xff : keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
    }
}

apr_status_t prov_cidr_parse(prov_cidr_t *c, const char *text)
{
    const char *slash = strchr(text, '/');
    char addr[64];
    apr_size_t n = slash ? (apr_size_t)(slash - text) : strlen(text);
    int family, max, bits;

    if (n == 0 || n >= sizeof(addr))
        return APR_EINVAL;
    memcpy(addr, text, n);
    addr[n] = '\0';
    memset(c, 0, sizeof(*c));
    if (strchr(addr, ':') && !strncmp(addr, "::ffff:", 7) && strchr(addr, '.'))
        return APR_EINVAL;          /* a mapped range: write it as IPv4 */
    if (!(family = addr_bytes(c->net, addr)))
        return APR_EINVAL;
    max = family == 4 ? 32 : 128;
    bits = max;
    if (slash) {
        const char *d = slash + 1;
        if (!*d || strlen(d) > 3 || strspn(d, "0123456789") != strlen(d)
            || (d[0] == '0' && d[1]))
            return APR_EINVAL;
        bits = atoi(d);
        if (bits > max)
            return APR_EINVAL;
    }
    c->family = family;
    c->bits = bits;
    mask(c->net, family, bits);
    return APR_SUCCESS;
}

const char *prov_cidr_text(const prov_cidr_t *c, apr_pool_t *p)
{
    char buf[INET6_ADDRSTRLEN];
    if (!inet_ntop(c->family == 4 ? AF_INET : AF_INET6, c->net, buf, sizeof(buf)))
        return "";
    return apr_psprintf(p, "%s/%d", buf, c->bits);
}

int prov_cidr_match(const prov_cidr_t *c, const char *addr)
{
    unsigned char a[16];
    if (!addr || addr_bytes(a, addr) != c->family)
        return 0;
    mask(a, c->family, c->bits);
    return !memcmp(a, c->net, c->family == 4 ? 4 : 16);
}

int prov_cidr_list_match(const char *list, const char *addr)
{
    char item[64];
    prov_cidr_t c;
    while (list && *list) {
        const char *comma = strchr(list, ',');
        apr_size_t n = comma ? (apr_size_t)(comma - list) : strlen(list);
        if (n < sizeof(item)) {
            memcpy(item, list, n);
            item[n] = '\0';
            if (prov_cidr_parse(&c, item) == APR_SUCCESS && prov_cidr_match(&c, addr))
                return 1;
        }
        list = comma ? comma + 1 : NULL;
    }
    return 0;
}

apr_status_t prov_cidr_list_parse(const char **list, const char **bad,
                                  const apr_array_header_t *items, apr_pool_t *p)
{
    const char *out = NULL;
    int i;
    *bad = NULL;
    if (items->nelts == 0 || items->nelts > PROV_CIDR_LIST_MAX)
        return APR_EINVAL;
    for (i = 0; i < items->nelts; i++) {
        const char *it = APR_ARRAY_IDX(items, i, const char *);
        prov_cidr_t c;
        if (prov_cidr_parse(&c, it) != APR_SUCCESS) {
            *bad = it;
            return APR_EINVAL;
        }
        out = out ? apr_pstrcat(p, out, ",", prov_cidr_text(&c, p), NULL)
                  : prov_cidr_text(&c, p);
    }
    *list = out;
    return APR_SUCCESS;
}
