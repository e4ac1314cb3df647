/* prov_json_scan.h: JSON read without building a tree, for the hot path's
 * gateway answers: a strict checker that finds an object's members (their
 * raw keys and the spans of their values), integer members read from those
 * spans, and an answer relayed with its "model" value and a "credits" member
 * of its usage spliced into the gateway's own bytes. It is an accelerator,
 * never a judge: whatever it does not recognise as plainly valid and simple
 * (escaped keys, duplicate keys, deep nesting, numbers out of range, odd
 * Unicode) it declines, and the caller takes json-c's path
 * (prov_json.h), which decides. */
#ifndef PROV_JSON_SCAN_H
#define PROV_JSON_SCAN_H

#include <string.h>
#include "prov_common.h"

/* Members of one object a scan keeps (an object with more is declined). */
#define PROV_JSCAN_MEMBERS 24

/* A member: its key as written between the quotes (it never holds a
 * backslash) and its value's text. */
typedef struct prov_jmember_t {
    const char *key;
    apr_size_t klen;
    const char *val;
    apr_size_t vlen;
} prov_jmember_t;

/* An object's members in their order, and its closing brace. */
typedef struct prov_jobject_t {
    int n;
    prov_jmember_t m[PROV_JSCAN_MEMBERS];
    const char *close;
} prov_jobject_t;

/* Scans buf[0, len): APR_SUCCESS when it is exactly one JSON object (with
 * white space around it) that json-c's strict parse also takes, its members
 * in *o, no two of them with the same key; APR_EGENERAL when the text is
 * not JSON or is declined (the caller then parses it with json-c). */
apr_status_t prov_json_scan_object(prov_jobject_t *o, const char *buf, apr_size_t len);

/* The same, stricter, for a client's body relayed to the gateway: every
 * object's keys, at any depth, plain and unique (so that the gateway reads
 * exactly what json-c's tree held, whatever its parser does with duplicates). */
apr_status_t prov_json_scan_strict(prov_jobject_t *o, const char *buf, apr_size_t len);

/* The next item of an array whose text (already scanned) ends before end:
 * start with *at at its '['; APR_SUCCESS with the item's text, APR_EOF after
 * the last one. */
apr_status_t prov_json_scan_item(const char **at, const char *end, const char **val,
                                 apr_size_t *vlen);

/* The length in bytes of a scanned string value (its text, quotes included)
 * once its escapes are decoded, as json-c counts it. */
apr_size_t prov_json_scan_strlen(const char *val, apr_size_t vlen);

/* Non-zero when s can go between JSON quotes as it is (printable ASCII
 * without '"' or '\\'). */
int prov_json_scan_plain(const char *s);

/* The most patches prov_json_patched applies. */
#define PROV_JSON_PATCHES_MAX 4
/* One change to a client's raw JSON: len bytes at at replaced by text (len 0:
 * text inserted before at). */
typedef struct prov_json_patch_t {
    const char *at;
    apr_size_t len;
    const char *text;
} prov_json_patch_t;
/* raw..raw_end with the n patches (in ascending order of at, none
 * overlapping) applied: a request forwarded as the client wrote it but for
 * the values the service sets (the model's upstream id, the output cap). */
const char *prov_json_patched(const char *raw, const char *raw_end,
                              const prov_json_patch_t *patches, int n, apr_pool_t *p);

/* The value of the member key, or NULL. */
const prov_jmember_t *prov_json_scan_member(const prov_jobject_t *o, const char *key);

/* Non-zero when m's value is exactly the text lit (a literal such as
 * "null", or a string with its quotes, "\"user\""). */
static APR_INLINE int prov_json_scan_is(const prov_jmember_t *m, const char *lit)
{
    apr_size_t n = strlen(lit);
    return m->vlen == n && !memcmp(m->val, lit, n);
}

/* The member key of o as an integer: APR_SUCCESS with *v (0 when there is no
 * such member or its value is not a number without fraction or exponent, as
 * prov_json_get(.., json_type_int) reads it), APR_EGENERAL when the value is
 * an integer too long to read the way json-c does (declined). */
apr_status_t prov_json_scan_int(apr_int64_t *v, const prov_jobject_t *o, const char *key);
/* The same for a member already found (m may be NULL: no such member). */
apr_status_t prov_json_scan_member_int(apr_int64_t *v, const prov_jmember_t *m);
/* A token count of a usage report, as prov_json_get_count reads it:
 * APR_SUCCESS with *v, APR_NOTFOUND (absent or null), APR_EINVAL (not a
 * whole number >= 0), or APR_EGENERAL: declined (too long to read as
 * json-c does), for json-c to decide. *v is 0 unless APR_SUCCESS. */
apr_status_t prov_json_scan_count(apr_int64_t *v, const prov_jobject_t *o, const char *key);

/* The member key of o as an object (read into *sub as prov_json_scan_object
 * reads its text alone): APR_SUCCESS, APR_NOTFOUND when there is no such
 * member or it is not an object, or APR_EGENERAL (declined). o is as a scan
 * that succeeded left it (prov_json_scan_object, _strict or _sub): the
 * member's text, checked then, is not checked again (prov_json_skim.c). */
apr_status_t prov_json_scan_sub(prov_jobject_t *sub, const prov_jobject_t *o, const char *key);
/* The same for the first item of the array member key of o (a chat
 * stream's one choice): APR_NOTFOUND also when the array is empty or its
 * first item is not an object. */
apr_status_t prov_json_scan_first(prov_jobject_t *sub, const prov_jobject_t *o, const char *key);

#endif
