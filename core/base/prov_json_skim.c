/* prov_json_skim.c: an object's member read as an object of its own
 * (prov_json_scan_sub; prov_json_scan_first for an array's first item; see
 * prov_json_scan.h) without checking its text
 * again. The scan that found the member checked every byte of it (the
 * grammar, strings and their UTF-8, numbers, depth), so what is left is
 * finding its members' boundaries and what a scan of the object alone would
 * add: its own keys plain (no backslash) and unique, and at most
 * PROV_JSCAN_MEMBERS of them. Strings are crossed to their quote eight bytes
 * a step (prov_json_word.h), nested values by counting brackets outside
 * strings. The result is the same as prov_json_scan_object on the member's
 * text (the fuzz harness fuzz_json_scan holds it to that); anything that
 * does not look like checked text (it cannot happen) is declined, and no
 * byte outside the member's text is read. */
#include <string.h>
#include "prov_json_scan.h"
#include "prov_json_word.h"

/* Past the string whose opening quote is at p, or NULL. */
static const char *skim_string(const char *p, const char *end)
{
    const char *q = p + 1;
    for (;;) {
        q = prov_jword_run(q, end);
        if (q >= end)
            return NULL;
        if (*q == '"')
            return q + 1;
        /* an escape (a 'u' and its hex digits are plain) or UTF-8 */
        q += *q == '\\' ? 2 : 1;
    }
}

/* Past the array or object at p, or NULL. */
static const char *skim_nested(const char *p, const char *end)
{
    int depth = 0;
    while (p < end) {
        switch (*p) {
        case '"':
            p = skim_string(p, end);
            if (!p)
                return NULL;
            continue;
        case '{':
        case '[':
            depth++;
            break;
        case '}':
        case ']':
            if (--depth == 0)
                return p + 1;
            break;
        default:
            break;
        }
        p++;
    }
    return NULL;
}

/* Past the value at p (a number or a literal ends where the text says the
 * value does), or NULL. */
static const char *skim_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return skim_string(p, end);
    if (*p == '{' || *p == '[')
        return skim_nested(p, end);
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n'
           && *p != '\r' && *p != '\t')
        p++;
    return p;
}

/* The key at p (its opening quote) kept as o's next member when it is plain
 * and new and there is room; past its closing quote, or NULL. */
static const char *skim_key(prov_jobject_t *o, apr_uint64_t *seen, const char *p,
                            const char *end)
{
    const char *key = p + 1, *quote;
    apr_size_t klen;
    apr_uint64_t bit;
    int i;
    for (quote = key; (quote = prov_jword_run(quote, end)) < end && *quote != '"'; quote++) {
        if (*quote == '\\')
            return NULL;
    }
    if (quote >= end || o->n == PROV_JSCAN_MEMBERS)
        return NULL;
    klen = (apr_size_t)(quote - key);
    bit = PROV_JWORD_KEYBIT(key, klen);
    for (i = 0; (*seen & bit) && i < o->n; i++) {
        if (o->m[i].klen == klen && !memcmp(o->m[i].key, key, klen))
            return NULL;
    }
    *seen |= bit;
    o->m[o->n].key = key;
    o->m[o->n].klen = klen;
    return quote + 1;
}

/* The object whose text (checked by a scan) is [p, end) into o. */
static apr_status_t skim_object(prov_jobject_t *o, const char *p, const char *end)
{
    apr_uint64_t seen = 0;
    o->n = 0;
    p = prov_jword_ws(p + 1, end);
    if (p < end && *p == '}')
        goto done;
    for (;;) {
        const char *val;
        p = prov_jword_ws(p, end);
        if (p >= end || *p != '"' || !(p = skim_key(o, &seen, p, end)))
            return APR_EGENERAL;
        p = prov_jword_ws(p, end);
        if (p >= end || *p != ':')
            return APR_EGENERAL;
        val = p = prov_jword_ws(p + 1, end);
        if (!(p = skim_value(p, end)))
            return APR_EGENERAL;
        o->m[o->n].val = val;
        o->m[o->n].vlen = (apr_size_t)(p - val);
        o->n++;
        p = prov_jword_ws(p, end);
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == '}')
            break;
        return APR_EGENERAL;
    }
done:
    if (p + 1 != end)
        return APR_EGENERAL;
    o->close = p;
    return APR_SUCCESS;
}

apr_status_t prov_json_scan_sub(prov_jobject_t *sub, const prov_jobject_t *o, const char *key)
{
    const prov_jmember_t *m = prov_json_scan_member(o, key);
    if (!m || *m->val != '{')
        return APR_NOTFOUND;
    return skim_object(sub, m->val, m->val + m->vlen);
}

apr_status_t prov_json_scan_first(prov_jobject_t *sub, const prov_jobject_t *o, const char *key)
{
    const prov_jmember_t *m = prov_json_scan_member(o, key);
    const char *p, *end, *e;
    if (!m || *m->val != '[')
        return APR_NOTFOUND;
    end = m->val + m->vlen;
    p = prov_jword_ws(m->val + 1, end);
    if (p >= end || *p != '{')
        return APR_NOTFOUND;
    if (!(e = skim_nested(p, end)))
        return APR_EGENERAL;
    return skim_object(sub, p, e);
}
