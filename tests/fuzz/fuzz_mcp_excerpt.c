/* fuzz_mcp_excerpt.c: libFuzzer harness of search_docs' excerpt
 * (prov_mcp_excerpt, core/mcp/prov_mcp_tools.c), which the public /v1/mcp
 * writes for every hit without authentication. The input is two bytes of
 * offset, then the section's text. The excerpt is written into a heap block
 * of exactly PROV_MCP_EXCERPT_MAX bytes of its own (a pool would hide a
 * write past the end from AddressSanitizer). Checked: the length returned is
 * the string's, it fits the block with its NUL, no newline, tab or carriage
 * return is left, and when the text is valid UTF-8 the excerpt is too and
 * starts with "... " when the text was cut well before the offset. */
#include <stdlib.h>
#include "fuzz_common.h"
#include "prov_mcp.h"

/* Whether s is well-formed UTF-8 (no overlong forms, no surrogates). */
static int utf8_ok(const unsigned char *s)
{
    while (*s) {
        int n = *s < 0x80 ? 0 : (*s & 0xE0) == 0xC0 && *s >= 0xC2 ? 1
              : (*s & 0xF0) == 0xE0 ? 2 : (*s & 0xF8) == 0xF0 && *s <= 0xF4 ? 3 : -1;
        unsigned cp = n == 0 ? *s : n == 1 ? *s & 0x1Fu : n == 2 ? *s & 0x0Fu : *s & 0x07u;
        int i;
        if (n < 0)
            return 0;
        for (i = 1; i <= n; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i] & 0x3Fu);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)))
            || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        s += n + 1;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    apr_size_t at = (apr_size_t)fuzz_take_u64(&data, &size, 2);
    const char *text = fuzz_str(data, size, p);
    char *out = malloc(PROV_MCP_EXCERPT_MAX);
    apr_size_t len;

    FUZZ_CHECK(out != NULL);
    len = prov_mcp_excerpt(out, text, at);
    FUZZ_CHECK(len == strlen(out) && len < PROV_MCP_EXCERPT_MAX);
    FUZZ_CHECK(!strpbrk(out, "\n\t\r"));
    if (utf8_ok((const unsigned char *)text)) {
        FUZZ_CHECK(utf8_ok((const unsigned char *)out));
        if (strlen(text) > PROV_MCP_EXCERPT_LEN && at > PROV_MCP_EXCERPT_BEFORE + 4)
            FUZZ_CHECK(!strncmp(out, "... ", 4));
    }
    free(out);
    apr_pool_destroy(p);
    return 0;
}
