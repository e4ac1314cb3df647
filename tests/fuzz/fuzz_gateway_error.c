/* fuzz_gateway_error.c: libFuzzer harness of what the module makes of a
 * gateway's error (core/transport/prov_gwerror.c: prov_gwerror_read in
 * either family's shape, prov_gwerror_client, prov_gwerror_anthropic_event)
 * and of the masking of the gateway's text for the log
 * (core/base/prov_redact.c). The input is an error body or event, read
 * with each class of status (0 for an error inside a stream). Checked: the
 * client gets 400 INVALID_REQUEST, 502 GATEWAY_ERROR or one of the model's
 * conditions (context_length_exceeded, rate_limit_exceeded for every 429
 * with a Retry-After of at least a second, server_is_overloaded for every
 * 529) in words of ours, never the gateway's URL or token even when
 * the body holds them, and an error event that parses; the text kept for the
 * log is bounded; masked text is bounded, has no control character, holds
 * neither secret (when the redactor knows them), and is valid UTF-8 when the
 * input was. */
#include "fuzz_common.h"
#include "prov_gwerror.h"
#include "prov_redact.h"

#define GW_URL "http://gw.internal:4000/base"
#define GW_HOST "gw.internal:4000"
#define GW_TOKEN "gwtok-5f3a9c0e7b1d42"

static const int statuses[] = { 0, 400, 404, 429, 500, 503, 529 };

/* The client's code for the gateway's status. */
static int code_fits(const prov_error_t *err, int status)
{
    if (status == 429)
        return err->code == PROV_E_UPSTREAM_RATE_LIMIT && err->retry_after >= 1;
    if (status == 529)
        return err->code == PROV_E_UPSTREAM_OVERLOADED;
    return err->code == PROV_E_INVALID_REQUEST || err->code == PROV_E_GATEWAY_ERROR
        || err->code == PROV_E_CONTEXT_LENGTH || err->code == PROV_E_UPSTREAM_RATE_LIMIT
        || err->code == PROV_E_UPSTREAM_OVERLOADED;
}

static int holds_secret(const char *s)
{
    return strstr(s, GW_HOST) || strstr(s, GW_TOKEN);
}

/* Well-formed UTF-8 (no overlong form, surrogate or code point past U+10FFFF). */
static int utf8_ok(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], need, cp, k;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            need = 1;
        else if (c >= 0xE0 && c <= 0xEF)
            need = 2;
        else if (c >= 0xF0 && c <= 0xF4)
            need = 3;
        else
            return 0;
        if (n - i <= need)
            return 0;
        cp = c & (0x3Fu >> need);
        for (k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if ((need == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)))
            || (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        i += need + 1;
    }
    return 1;
}

/* The data of "event: error\ndata: {...}\n\n" (one data line). */
static const char *event_data(const char *ev, apr_pool_t *p)
{
    const char *d = strstr(ev, "\ndata: "), *end;
    FUZZ_CHECK(!strncmp(ev, "event: error\n", 13) && d);
    d += 7;
    end = strchr(d, '\n');
    FUZZ_CHECK(end && !strcmp(end, "\n\n"));
    return apr_pstrmemdup(p, d, (apr_size_t)(end - d));
}

static void check_redact(const prov_redactor_t *rd, const uint8_t *data, size_t size,
                         apr_size_t max, apr_pool_t *p)
{
    const char *out = prov_redact(rd, (const char *)data, size, max, p);
    size_t n = strlen(out), i;
    FUZZ_CHECK(n <= (max < 16 ? 16 : max) + 3);
    for (i = 0; i < n; i++)
        FUZZ_CHECK((unsigned char)out[i] >= 0x20 && (unsigned char)out[i] != 0x7f);
    FUZZ_CHECK(!rd || !holds_secret(out));     /* NULL: the generic rules only */
    if (utf8_ok(data, size))
        FUZZ_CHECK(utf8_ok((const unsigned char *)out, n));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const secrets[] = { GW_URL, GW_TOKEN, NULL };
    apr_pool_t *p = fuzz_pool();
    const prov_redactor_t *rd = prov_redactor_create(secrets, p);
    size_t i;

    for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
        prov_gwerror_t e;
        prov_error_t *err;
        json_object *ev;
        prov_gwerror_read(&e, statuses[i], (const char *)data, size, p);
        FUZZ_CHECK(e.status == statuses[i] && e.type && *e.type);
        FUZZ_CHECK(!e.text || strlen(e.text) <= PROV_GWERROR_TEXT_MAX);
        FUZZ_CHECK(e.prompt_tokens >= 0 && e.limit_tokens >= 0);
        err = prov_gwerror_client(&e, p);
        FUZZ_CHECK(err && err->message && *err->message);
        FUZZ_CHECK(code_fits(err, statuses[i]));
        FUZZ_CHECK(!holds_secret(err->message));
        ev = fuzz_reparse(event_data(prov_gwerror_anthropic_event(&e, p), p), p);
        FUZZ_CHECK(!strcmp(prov_json_get_str(ev, "type"), "error"));
        FUZZ_CHECK(!holds_secret(prov_json_dump(ev, p)));
        if (e.text)
            check_redact(rd, (const uint8_t *)e.text, strlen(e.text), 300, p);
    }
    check_redact(rd, data, size, 120, p);
    check_redact(NULL, data, size, 4096, p);
    apr_pool_destroy(p);
    return 0;
}
