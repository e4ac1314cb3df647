/* prov_json_scan.c: JSON read without a tree (see prov_json_scan.h). The
 * checker follows RFC 8259's grammar and is stricter than json-c's strict
 * mode wherever the two could differ: strings are valid UTF-8 without
 * control characters or escaped surrogates, numbers are short, nesting is
 * shallow; anything else is declined, never judged. A gateway answer read
 * this way costs a tenth of a json-c parse and dump, and keeps the gateway's
 * bytes: a client reads the same values from it (a later duplicate key wins
 * in json-c and in JSON.parse alike, at the first one's place). A string's
 * plain bytes are crossed eight at a time; a member read as an object of its
 * own is not checked again (prov_json_skim.c). */
#include <string.h>
#include <sys/uio.h>
#include "prov_json_scan.h"
#include "prov_json_word.h"

#define MAX_DEPTH 16             /* json-c's limit is 32 */
#define MAX_NUMBER 32            /* characters of one number */
#define MAX_INT_DIGITS 18        /* an integer read for its value */

typedef struct scan_t {
    const char *p, *end;
    int depth;
    int strict;                  /* every object's keys plain and unique */
} scan_t;

static int value(scan_t *s, prov_jobject_t *o);

static APR_INLINE void skip_ws(scan_t *s)
{
    if (s->p < s->end && (unsigned char)*s->p <= ' ')
        s->p = prov_jword_ws(s->p, s->end);
}

static int hex4(const char *h, unsigned *u)
{
    int i;
    *u = 0;
    for (i = 0; i < 4; i++) {
        char c = h[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                   : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (unsigned)((c | 0x20) - 'a' + 10)
                   : 16;
        if (d == 16)
            return 0;
        *u = *u * 16 + d;
    }
    return 1;
}

/* One UTF-8 sequence of two to four bytes at s->p (its lead byte >= 0x80),
 * well-formed (no overlong form, surrogate or code point past U+10FFFF). */
static int utf8(scan_t *s)
{
    const unsigned char *u = (const unsigned char *)s->p;
    apr_size_t left = (apr_size_t)(s->end - s->p);
    unsigned char lo = 0x80, hi = 0xbf;
    int n, i;
    if (u[0] >= 0xc2 && u[0] <= 0xdf)
        n = 1;
    else if (u[0] >= 0xe0 && u[0] <= 0xef) {
        n = 2;
        if (u[0] == 0xe0)
            lo = 0xa0;
        else if (u[0] == 0xed)
            hi = 0x9f;
    }
    else if (u[0] >= 0xf0 && u[0] <= 0xf4) {
        n = 3;
        if (u[0] == 0xf0)
            lo = 0x90;
        else if (u[0] == 0xf4)
            hi = 0x8f;
    }
    else
        return 0;
    if (left < (apr_size_t)n + 1 || u[1] < lo || u[1] > hi)
        return 0;
    for (i = 2; i <= n; i++) {
        if (u[i] < 0x80 || u[i] > 0xbf)
            return 0;
    }
    s->p += n + 1;
    return 1;
}

/* The rest of a string from s->p, at a byte that does not stand for itself
 * (or the end); *plain cleared at a backslash. */
static int string_rest(scan_t *s, int *plain)
{
    while (s->p < s->end) {
        unsigned char c = (unsigned char)*s->p;
        if (c == '"') {
            s->p++;
            return 1;
        }
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            unsigned u;
            *plain = 0;
            if (s->end - s->p < 2)
                return 0;
            c = (unsigned char)s->p[1];
            if (c == 'u') {
                if (s->end - s->p < 6 || !hex4(s->p + 2, &u) || (u >= 0xd800 && u <= 0xdfff))
                    return 0;
                s->p += 6;
            }
            else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n'
                     || c == 'r' || c == 't')
                s->p += 2;
            else
                return 0;
        }
        else if (c >= 0x80) {
            if (!utf8(s))
                return 0;
        }
        else
            s->p++;
        s->p = prov_jword_run(s->p, s->end);
    }
    return 0;
}

/* A string at s->p (its opening quote); *plain: no backslash in it. One of
 * plain bytes only (the usual key or value) is crossed here, inline. */
static APR_INLINE int string(scan_t *s, int *plain)
{
    *plain = 1;
    s->p = prov_jword_run(s->p + 1, s->end);
    if (s->p < s->end && *s->p == '"') {
        s->p++;
        return 1;
    }
    return string_rest(s, plain);
}

static int digits(scan_t *s)
{
    const char *b = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
        s->p++;
    return s->p > b;
}

static int number(scan_t *s)
{
    const char *b = s->p;
    if (*s->p == '-')
        s->p++;
    if (s->p < s->end && *s->p == '0')
        s->p++;
    else if (!digits(s))
        return 0;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (!digits(s))
            return 0;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        const char *e;
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        e = s->p;
        if (!digits(s) || s->p - e > 2)
            return 0;
    }
    return s->p - b <= MAX_NUMBER;
}

static int literal(scan_t *s, const char *word, apr_size_t n)
{
    if ((apr_size_t)(s->end - s->p) < n || memcmp(s->p, word, n))
        return 0;
    s->p += n;
    return 1;
}

/* An object at s->p; its members kept in o unless o is NULL (then, when
 * s->strict, in a scratch list for the duplicate check). */
static int object(scan_t *s, prov_jobject_t *o)
{
    prov_jobject_t scratch;
    apr_uint64_t seen = 0;       /* the keys' bits (prov_json_word.h) */
    if (++s->depth > MAX_DEPTH)
        return 0;
    if (!o && s->strict)
        o = &scratch;
    s->p++;
    if (o)
        o->n = 0;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}')
        goto done;
    for (;;) {
        const char *key, *val;
        int plain;
        skip_ws(s);
        if (s->p >= s->end || *s->p != '"')
            return 0;
        key = s->p + 1;
        if (!string(s, &plain) || (o && !plain))
            return 0;
        if (o) {
            int i;
            apr_size_t klen = (apr_size_t)(s->p - 1 - key);
            apr_uint64_t bit = PROV_JWORD_KEYBIT(key, klen);
            if (o->n == PROV_JSCAN_MEMBERS)
                return 0;
            for (i = 0; (seen & bit) && i < o->n; i++) {
                if (o->m[i].klen == klen && !memcmp(o->m[i].key, key, klen))
                    return 0;
            }
            seen |= bit;
            o->m[o->n].key = key;
            o->m[o->n].klen = klen;
        }
        skip_ws(s);
        if (s->p >= s->end || *s->p != ':')
            return 0;
        s->p++;
        skip_ws(s);
        val = s->p;
        if (!value(s, NULL))
            return 0;
        if (o) {
            o->m[o->n].val = val;
            o->m[o->n].vlen = (apr_size_t)(s->p - val);
            o->n++;
        }
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == '}')
            break;
        return 0;
    }
done:
    if (o)
        o->close = s->p;
    s->p++;
    s->depth--;
    return 1;
}

static int array(scan_t *s)
{
    if (++s->depth > MAX_DEPTH)
        return 0;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        s->depth--;
        return 1;
    }
    for (;;) {
        skip_ws(s);
        if (!value(s, NULL))
            return 0;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            s->depth--;
            return 1;
        }
        return 0;
    }
}

/* One value at s->p (white space skipped before); an object's members kept
 * in o when it is one and o is not NULL. */
static int value(scan_t *s, prov_jobject_t *o)
{
    int plain;
    if (s->p >= s->end)
        return 0;
    switch (*s->p) {
    case '{':
        return object(s, o);
    case '[':
        return array(s);
    case '"':
        return string(s, &plain);
    case 't':
        return literal(s, "true", 4);
    case 'f':
        return literal(s, "false", 5);
    case 'n':
        return literal(s, "null", 4);
    default:
        return (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) && number(s);
    }
}

static apr_status_t scan_top(prov_jobject_t *o, const char *buf, apr_size_t len, int strict)
{
    scan_t s;
    s.p = buf;
    s.end = buf + len;
    s.depth = 0;
    s.strict = strict;
    skip_ws(&s);
    if (s.p >= s.end || *s.p != '{' || !object(&s, o))
        return APR_EGENERAL;
    skip_ws(&s);
    return s.p == s.end ? APR_SUCCESS : APR_EGENERAL;
}

apr_status_t prov_json_scan_object(prov_jobject_t *o, const char *buf, apr_size_t len)
{
    return scan_top(o, buf, len, 0);
}

apr_status_t prov_json_scan_strict(prov_jobject_t *o, const char *buf, apr_size_t len)
{
    return scan_top(o, buf, len, 1);
}

apr_status_t prov_json_scan_item(const char **at, const char *end, const char **val,
                                 apr_size_t *vlen)
{
    scan_t s;
    s.p = *at + 1;               /* past the '[' or the last item */
    s.end = end;
    s.depth = 0;
    s.strict = 0;
    skip_ws(&s);
    if (s.p < s.end && *s.p == ',') {
        s.p++;
        skip_ws(&s);
    }
    if (s.p >= s.end || *s.p == ']')
        return APR_EOF;
    *val = s.p;
    if (!value(&s, NULL))
        return APR_EGENERAL;
    *vlen = (apr_size_t)(s.p - *val);
    *at = s.p - 1;
    return APR_SUCCESS;
}

apr_size_t prov_json_scan_strlen(const char *val, apr_size_t vlen)
{
    const char *c = val + 1, *end = val + vlen - 1;
    apr_size_t n = 0;
    while (c < end) {
        if (*c != '\\') {
            c++;
            n++;
        }
        else if (c[1] != 'u') {
            c += 2;
            n++;
        }
        else {
            unsigned u = 0;
            hex4(c + 2, &u);
            n += u < 0x80 ? 1 : u < 0x800 ? 2 : 3;   /* no surrogate was taken */
            c += 6;
        }
    }
    return n;
}

const prov_jmember_t *prov_json_scan_member(const prov_jobject_t *o, const char *key)
{
    int i;
#if PROV_JSCAN_REFERENCE
    apr_size_t n = strlen(key);
    for (i = 0; i < o->n; i++) {
        if (o->m[i].klen == n && !memcmp(o->m[i].key, key, n))
            return &o->m[i];
    }
#else
    for (i = 0; i < o->n; i++) {
        const char *k = o->m[i].key;
        apr_size_t j, n = o->m[i].klen;
        /* compared a byte a step: a key holds no NUL, so the walk stops at
         * key's end (or at the first difference) and reads no further */
        for (j = 0; j < n && k[j] == key[j]; j++)
            ;
        if (j == n && !key[n])
            return &o->m[i];
    }
#endif
    return NULL;
}

apr_status_t prov_json_scan_member_int(apr_int64_t *v, const prov_jmember_t *m)
{
    const char *c, *end;
    int neg;
    apr_int64_t n = 0;
    *v = 0;
    if (!m || !m->vlen || (*m->val != '-' && (*m->val < '0' || *m->val > '9')))
        return APR_SUCCESS;
    end = m->val + m->vlen;
    neg = *m->val == '-';
    for (c = m->val + neg; c < end; c++) {
        if (*c < '0' || *c > '9')
            return APR_SUCCESS;          /* a fraction or an exponent: not an int */
    }
    if (end - (m->val + neg) > MAX_INT_DIGITS)
        return APR_EGENERAL;
    for (c = m->val + neg; c < end; c++)
        n = n * 10 + (*c - '0');
    *v = neg ? -n : n;
    return APR_SUCCESS;
}

apr_status_t prov_json_scan_int(apr_int64_t *v, const prov_jobject_t *o, const char *key)
{
    return prov_json_scan_member_int(v, prov_json_scan_member(o, key));
}

apr_status_t prov_json_scan_count(apr_int64_t *v, const prov_jobject_t *o, const char *key)
{
    const prov_jmember_t *m = prov_json_scan_member(o, key);
    apr_size_t i;
    *v = 0;
    if (!m || prov_json_scan_is(m, "null"))
        return APR_NOTFOUND;
    for (i = *m->val == '-' ? 1 : 0; i < m->vlen; i++) {
        if (m->val[i] < '0' || m->val[i] > '9')
            return APR_EINVAL;   /* a string, a fraction, an exponent, a literal */
    }
    if (prov_json_scan_member_int(v, m) != APR_SUCCESS) {
        *v = 0;
        return APR_EGENERAL;
    }
    if (*v < 0) {                /* (-0 is 0, for json-c too) */
        *v = 0;
        return APR_EINVAL;
    }
    return APR_SUCCESS;
}

int prov_json_scan_plain(const char *id)
{
    const unsigned char *c;
    for (c = (const unsigned char *)id; *c; c++) {
        if (*c < 0x20 || *c >= 0x7f || *c == '"' || *c == '\\')
            return 0;
    }
    return 1;
}

const char *prov_json_patched(const char *raw, const char *raw_end,
                              const prov_json_patch_t *patches, int n, apr_pool_t *p)
{
    struct iovec v[2 * PROV_JSON_PATCHES_MAX + 1];
    const char *at = raw;
    int i, k = 0;
    for (i = 0; i < n && i < PROV_JSON_PATCHES_MAX; i++) {
        v[k].iov_base = (void *)at;
        v[k++].iov_len = (apr_size_t)(patches[i].at - at);
        v[k].iov_base = (void *)patches[i].text;
        v[k++].iov_len = strlen(patches[i].text);
        at = patches[i].at + patches[i].len;
    }
    v[k].iov_base = (void *)at;
    v[k++].iov_len = (apr_size_t)(raw_end - at);
    return apr_pstrcatv(p, v, (apr_size_t)k, NULL);
}
