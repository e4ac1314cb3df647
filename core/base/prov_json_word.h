/* prov_json_word.h: a JSON string's plain bytes crossed eight at a time,
 * shared by the scanner (prov_json_scan.c) and the reader of checked
 * sub-objects (prov_json_skim.c); internal to core/base. */
#ifndef PROV_JSON_WORD_H
#define PROV_JSON_WORD_H

#include <string.h>
#include "prov_common.h"

/* Bytes that stand for themselves in a string, a bit each: 0x20-0x7f but
 * the quote (0x22) and the backslash (0x5c). */
static const apr_uint64_t prov_jword_plain_bits[4] = {
    APR_UINT64_C(0xFFFFFFFB00000000), APR_UINT64_C(0xFFFFFFFFEFFFFFFF), 0, 0
};
#define PROV_JWORD_PLAIN(c) ((prov_jword_plain_bits[(c) >> 6] >> ((c) & 63)) & 1)

/* PROV_JSCAN_REFERENCE 1 builds the scanner as it was before these
 * shortcuts, for tests/fuzz/fuzz_json_scan.c to compare with: strings a
 * byte a step, every key compared with all those before it, a member looked
 * up with strlen and memcmp. Otherwise a run of plain bytes is crossed
 * eight at a time where the machine reads a word's first byte as its
 * lowest. */
#ifndef PROV_JSCAN_REFERENCE
#define PROV_JSCAN_REFERENCE 0
#endif
#if !PROV_JSCAN_REFERENCE && defined(__GNUC__) && defined(__BYTE_ORDER__) \
    && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PROV_JSCAN_SWAR 1
#else
#define PROV_JSCAN_SWAR 0
#endif

#if PROV_JSCAN_SWAR
#define PROV_JWORD_ONES APR_UINT64_C(0x0101010101010101)
#define PROV_JWORD_HIGHS APR_UINT64_C(0x8080808080808080)

/* The bytes of w that do not stand for themselves (below 0x20, the quote,
 * the backslash, 0x80 and above), each as its high bit: a plain byte minus
 * 0x20, and its xor with the quote or the backslash minus one, stay below
 * 0x80 and borrow nothing, so the lowest bit set is the first such byte (a
 * borrow runs only from it to the next). */
static APR_INLINE apr_uint64_t prov_jword_special(apr_uint64_t w)
{
    const apr_uint64_t ones = PROV_JWORD_ONES;
    return ((w - ones * 0x20) | ((w ^ (ones * '"')) - ones) | ((w ^ (ones * '\\')) - ones) | w)
           & PROV_JWORD_HIGHS;
}
#endif

/* A key's bit among an object's keys (from its first and last bytes and
 * its length; the closing quote when it is empty): a key whose bit is not
 * yet set is new, only one whose bit is set is compared with those before
 * (in the reference build, every one is). */
#if PROV_JSCAN_REFERENCE
#define PROV_JWORD_KEYBIT(key, klen) (~(apr_uint64_t)0)
#else
#define PROV_JWORD_KEYBIT(key, klen) \
    ((apr_uint64_t)1 << (((unsigned char)(key)[0] \
                          + (unsigned char)(key)[(klen) ? (klen) - 1 : 0] * 3 + (klen) * 5) & 63))
#endif

/* Past the JSON white space at p (a structural byte is above ' '). */
static APR_INLINE const char *prov_jword_ws(const char *p, const char *end)
{
    while (p < end && (unsigned char)*p <= ' '
           && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* The first byte in [q, end) that does not stand for itself, or end. */
static APR_INLINE const char *prov_jword_run(const char *q, const char *end)
{
#if PROV_JSCAN_SWAR
    while (end - q >= 8) {
        apr_uint64_t w, m;
        memcpy(&w, q, 8);
        m = prov_jword_special(w);
        if (m)
            return q + (__builtin_ctzll(m) >> 3);
        q += 8;
    }
#endif
    while (q < end && PROV_JWORD_PLAIN((unsigned char)*q))
        q++;
    return q;
}

#endif
