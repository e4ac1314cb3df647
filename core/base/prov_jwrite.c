/* prov_jwrite.c: JSON written as text (see prov_jwrite.h). The escaping
 * follows json-c 0.16's json_escape_str byte for byte (the unit suite
 * compares the two for every byte value), so that a client reads the same
 * bytes whichever of the two wrote an event. */
#include <stdlib.h>
#include <string.h>
#include "prov_jwrite.h"

static apr_status_t free_cleanup(void *data)
{
    prov_jwrite_free(data);
    return APR_SUCCESS;
}

void prov_jwrite_init(prov_jwrite_t *w, apr_pool_t *p)
{
    memset(w, 0, sizeof(*w));
    apr_pool_cleanup_register(p, w, free_cleanup, apr_pool_cleanup_null);
}

void prov_jwrite_free(prov_jwrite_t *w)
{
    free(w->p);
    memset(w, 0, sizeof(*w));
}

int prov_jwrite_room(prov_jwrite_t *w, apr_size_t n)
{
    apr_size_t cap;
    char *np;
    if (w->len + n + 1 <= w->cap)
        return 1;
    if (n > (apr_size_t)-1 / 4 - w->len || (w->grow && !w->grow(w, n + 1))) {
        w->oom = 1;
        return 0;
    }
    if (w->grow)
        return 1;
    cap = w->cap ? w->cap * 2 : 512;
    while (cap < w->len + n + 1)
        cap *= 2;
    if (!(np = realloc(w->p, cap))) {
        w->oom = 1;
        return 0;
    }
    w->p = np;
    w->cap = cap;
    return 1;
}

/* How json-c writes each byte in a string: 0 as it is, else the letter
 * after the backslash ('u' for \u00xx). */
static const char esc[256] = {
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    0, 0, '"', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '\\', 0, 0, 0,
};

void prov_jwrite_str(prov_jwrite_t *w, const char *s, apr_size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *c = (const unsigned char *)s, *end = c + n;
    char *o;
    /* at most 6 bytes for one: room for the worst case, once */
    if (n > ((apr_size_t)-1 - 2) / 6) {
        w->oom = 1;
        return;
    }
    if (!prov_jwrite_room(w, n * 6 + 2))
        return;
    o = w->p + w->len;
    *o++ = '"';
    for (; c < end; c++) {
        char e = esc[*c];
        if (!e)
            *o++ = (char)*c;
        else if (e != 'u') {
            *o++ = '\\';
            *o++ = e;
        }
        else {
            memcpy(o, "\\u00", 4);
            o[4] = hex[*c >> 4];
            o[5] = hex[*c & 15];
            o += 6;
        }
    }
    *o++ = '"';
    *o = '\0';
    w->len = (apr_size_t)(o - w->p);
}

void prov_jwrite_cstr(prov_jwrite_t *w, const char *s)
{
    prov_jwrite_str(w, s ? s : "", s ? strlen(s) : 0);
}

void prov_jwrite_int(prov_jwrite_t *w, apr_int64_t v)
{
    char buf[24], *d = buf + sizeof(buf);
    apr_uint64_t u = v < 0 ? (apr_uint64_t)0 - (apr_uint64_t)v : (apr_uint64_t)v;
    do {
        *--d = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--d = '-';
    prov_jwrite_mem(w, d, (apr_size_t)(buf + sizeof(buf) - d));
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
         : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
}

apr_size_t prov_jwrite_decode(prov_jwrite_t *w, const char *val, apr_size_t vlen)
{
    const char *c = val + 1, *end = val + vlen - 1;
    apr_size_t before = w->len;
    char *o;
    if (vlen < 2 || !prov_jwrite_room(w, vlen))     /* decoding never lengthens */
        return 0;
    o = w->p + w->len;
    while (c < end) {
        const char *bs = memchr(c, '\\', (apr_size_t)(end - c));
        apr_size_t k = bs ? (apr_size_t)(bs - c) : (apr_size_t)(end - c);
        memcpy(o, c, k);
        o += k;
        c += k;
        if (!bs || end - c < 2)
            break;
        switch (c[1]) {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned u = 0;
            int i;
            for (i = 2; i < 6 && c + i < end && hexval(c[i]) >= 0; i++)
                u = u * 16 + (unsigned)hexval(c[i]);
            if (i < 6)
                goto out;       /* (the scanner never takes such a string) */
            if (u < 0x80)
                *o++ = (char)u;
            else if (u < 0x800) {
                *o++ = (char)(0xc0 | (u >> 6));
                *o++ = (char)(0x80 | (u & 0x3f));
            }
            else {              /* the scanner took no surrogate */
                *o++ = (char)(0xe0 | (u >> 12));
                *o++ = (char)(0x80 | ((u >> 6) & 0x3f));
                *o++ = (char)(0x80 | (u & 0x3f));
            }
            c += 6;
            continue;
        }
        default: *o++ = c[1]; break;     /* " \ / */
        }
        c += 2;
    }
out:
    *o = '\0';
    w->len = (apr_size_t)(o - w->p);
    return w->len - before;
}

void prov_jwrite_scanned(prov_jwrite_t *w, const char *val, apr_size_t vlen)
{
    apr_size_t at, n;
    if (vlen < 2)
        return;
    if (!memchr(val, '\\', vlen)) {
        prov_jwrite_mem(w, val, vlen);
        return;
    }
    /* decoded at the end of the buffer, then escaped after it and moved
     * back over it */
    at = w->len;
    n = prov_jwrite_decode(w, val, vlen);
    if (w->oom || !prov_jwrite_room(w, n * 6 + 2))  /* (then w->p stays where it is) */
        return;
    prov_jwrite_str(w, w->p + at, n);
    if (w->oom)
        return;
    memmove(w->p + at, w->p + at + n, w->len - at - n);
    w->len -= n;
    w->p[w->len] = '\0';
}
