/* fuzz_json_scan.c: libFuzzer harness of the tree-less JSON scanner
 * (core/base/prov_json_scan.c, prov_json_skim.c) against a plain reference:
 * the same prov_json_scan.c compiled into this program a second time as it
 * was before its shortcuts (PROV_JSCAN_REFERENCE 1, prov_json_word.h:
 * strings a byte a step, every key compared with those before it, members
 * looked up with strlen and memcmp), its functions renamed ref_*, and a
 * member's object read by scanning the member's text alone (what
 * prov_json_scan_sub did before it trusted the enclosing scan).
 * The input is any text. Checked: prov_json_scan_object and _strict give
 * the reference's status, members (keys and value spans, as pointers into
 * the input) and closing brace; what they take json-c's strict parse takes;
 * for every member that is an object, prov_json_scan_sub gives what the
 * reference scan of its text gives (and so on into its own members, a few
 * levels deep), and that text scanned alone by both agrees; for every
 * member that is an array, prov_json_scan_item walks its items as the
 * reference does, and prov_json_scan_first reads its first item as the
 * reference scan of that item's text does (not found unless an object). */
#include "fuzz_common.h"
#include "prov_json_scan.h"

/* The reference: the byte-at-a-time scanner, under other names. */
#define PROV_JSCAN_REFERENCE 1
#define prov_json_scan_object ref_json_scan_object
#define prov_json_scan_strict ref_json_scan_strict
#define prov_json_scan_item ref_json_scan_item
#define prov_json_scan_strlen ref_json_scan_strlen
#define prov_json_scan_plain ref_json_scan_plain
#define prov_json_scan_member ref_json_scan_member
#define prov_json_scan_int ref_json_scan_int
#define prov_json_scan_member_int ref_json_scan_member_int
#define prov_json_scan_count ref_json_scan_count
#define prov_json_patched ref_json_patched
#include "prov_json_scan.c"
#undef prov_json_scan_object
#undef prov_json_scan_strict
#undef prov_json_scan_item
#undef prov_json_scan_strlen
#undef prov_json_scan_plain
#undef prov_json_scan_member
#undef prov_json_scan_int
#undef prov_json_scan_member_int
#undef prov_json_scan_count
#undef prov_json_patched

#define SUB_LEVELS 4

static void same_result(apr_status_t ra, const prov_jobject_t *a, apr_status_t rb,
                        const prov_jobject_t *b)
{
    int i;
    FUZZ_CHECK(ra == rb);
    if (ra != APR_SUCCESS)
        return;
    FUZZ_CHECK(a->n == b->n && a->close == b->close);
    for (i = 0; i < a->n; i++) {
        FUZZ_CHECK(a->m[i].key == b->m[i].key && a->m[i].klen == b->m[i].klen);
        FUZZ_CHECK(a->m[i].val == b->m[i].val && a->m[i].vlen == b->m[i].vlen);
    }
}

/* The items of the array (scanned) at val: the same walk both ways. */
static void same_items(const char *val, apr_size_t vlen)
{
    const char *a = val, *b = val, *end = val + vlen;
    for (;;) {
        const char *va = NULL, *vb = NULL;
        apr_size_t la = 0, lb = 0;
        apr_status_t ra = prov_json_scan_item(&a, end, &va, &la);
        apr_status_t rb = ref_json_scan_item(&b, end, &vb, &lb);
        FUZZ_CHECK(ra == rb);
        if (ra != APR_SUCCESS)
            return;
        FUZZ_CHECK(a == b && va == vb && la == lb);
    }
}

/* Each of o's keys, the key without its last byte and with one more, found
 * (or not) alike both ways. */
static void same_lookups(const prov_jobject_t *o, apr_pool_t *p)
{
    int i;
    FUZZ_CHECK(prov_json_scan_member(o, "") == ref_json_scan_member(o, ""));
    for (i = 0; i < o->n; i++) {
        const prov_jmember_t *m = &o->m[i];
        const char *key = apr_pstrmemdup(p, m->key, m->klen);
        const char *longer = apr_pstrcat(p, key, "e", NULL);
        FUZZ_CHECK(prov_json_scan_member(o, key) == m && ref_json_scan_member(o, key) == m);
        FUZZ_CHECK(prov_json_scan_member(o, longer) == ref_json_scan_member(o, longer));
        if (m->klen) {
            const char *shorter = apr_pstrmemdup(p, m->key, m->klen - 1);
            FUZZ_CHECK(prov_json_scan_member(o, shorter) == ref_json_scan_member(o, shorter));
        }
    }
}

/* o (as a scan that succeeded left it): each member that is an object read
 * by prov_json_scan_sub as the reference reads its text, and further down;
 * each array walked alike. */
static void same_members(const prov_jobject_t *o, int level, apr_pool_t *p)
{
    int i;
    same_lookups(o, p);
    for (i = 0; i < o->n; i++) {
        const prov_jmember_t *m = &o->m[i];
        prov_jobject_t a, b;
        apr_status_t ra, rb;
        if (*m->val == '[') {
            const char *at = m->val, *v = NULL;
            apr_size_t vlen = 0;
            same_items(m->val, m->vlen);
            /* the first item, read from the checked text as an object */
            ra = prov_json_scan_first(&a, o, apr_pstrmemdup(p, m->key, m->klen));
            if (prov_json_scan_item(&at, m->val + m->vlen, &v, &vlen) == APR_SUCCESS && *v == '{')
                same_result(ra, &a, ref_json_scan_object(&b, v, vlen), &b);
            else
                FUZZ_CHECK(ra == APR_NOTFOUND);
        }
        if (*m->val != '{')
            continue;
        ra = prov_json_scan_sub(&a, o, apr_pstrmemdup(p, m->key, m->klen));
        rb = ref_json_scan_object(&b, m->val, m->vlen);
        same_result(ra, &a, rb, &b);
        same_result(prov_json_scan_object(&a, m->val, m->vlen), &a, rb, &b);
        if (ra == APR_SUCCESS && level < SUB_LEVELS)
            same_members(&a, level + 1, p);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    const char *text = (const char *)data;
    prov_jobject_t a, b;
    apr_status_t ra, rb;

    ra = prov_json_scan_object(&a, text, size);
    rb = ref_json_scan_object(&b, text, size);
    same_result(ra, &a, rb, &b);
    if (ra == APR_SUCCESS) {
        const char *err = NULL;
        FUZZ_CHECK(prov_json_parse(text, size, &err, p) != NULL);
        same_members(&a, 1, p);
    }
    ra = prov_json_scan_strict(&a, text, size);
    rb = ref_json_scan_strict(&b, text, size);
    same_result(ra, &a, rb, &b);
    if (ra == APR_SUCCESS)
        same_members(&a, 1, p);
    apr_pool_destroy(p);
    return 0;
}
