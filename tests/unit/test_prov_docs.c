/* test_prov_docs.c: unit tests of core/docs: page names, the request-time
 * markers (values escaped, unknown ones kept, the defaults of an empty
 * catalog), the sections a search gets (title, link, text without tags or
 * entities), reading the pages of a directory and framing a page in its
 * layout. */
#include <string.h>
#include <unistd.h>
#include <apr_file_io.h>
#include "unit_tests.h"
#include "prov_docs.h"

static apr_array_header_t *ids(apr_pool_t *p, const char *a, const char *b)
{
    apr_array_header_t *x = apr_array_make(p, 2, sizeof(const char *));
    if (a)
        APR_ARRAY_PUSH(x, const char *) = a;
    if (b)
        APR_ARRAY_PUSH(x, const char *) = b;
    return x;
}

static void test_names(void)
{
    CU_ASSERT_TRUE(prov_docs_name_valid("claude-code"));
    CU_ASSERT_TRUE(prov_docs_name_valid("index"));
    CU_ASSERT_FALSE(prov_docs_name_valid(""));
    CU_ASSERT_FALSE(prov_docs_name_valid(NULL));
    CU_ASSERT_FALSE(prov_docs_name_valid("-x"));
    CU_ASSERT_FALSE(prov_docs_name_valid("../etc"));
    CU_ASSERT_FALSE(prov_docs_name_valid("a.html"));
    CU_ASSERT_FALSE(prov_docs_name_valid("Errors"));
    CU_ASSERT_FALSE(prov_docs_name_valid("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                         "aaaaaaaaaa"));
}

static void test_render(void)
{
    apr_pool_t *p = NULL;
    prov_docs_vars_t v = { "https://api.example.test", NULL, NULL, NULL };
    apr_pool_create(&p, prov_test_pool());
    v.models = ids(p, "m-1", "a<b");
    v.messages_models = ids(p, "c-2", NULL);
    CU_ASSERT_STRING_EQUAL(prov_docs_render("url {{base_url}}/v1 model {{model}}, "
                                            "{{messages_model}}", &v, p),
                           "url https://api.example.test/v1 model m-1, c-2");
    CU_ASSERT_STRING_EQUAL(prov_docs_render("{{models}}", &v, p),
                           "<ul class=\"models\"><li><code>m-1</code></li>"
                           "<li><code>a&lt;b</code></li></ul>");
    /* Unknown, unclosed and empty markers stay as they are. */
    CU_ASSERT_STRING_EQUAL(prov_docs_render("{{nope}} {{model {{}} }}", &v, p),
                           "{{nope}} {{model {{}} }}");
    CU_ASSERT_STRING_EQUAL(prov_docs_render("x{{model}}{{model}}y", NULL, p),
                           "xMODEL_IDMODEL_IDy");
    CU_ASSERT_STRING_EQUAL(prov_docs_render("{{base_url}}", NULL, p), "https://provider.example");
    CU_ASSERT_PTR_NOT_NULL(strstr(prov_docs_render("{{messages_models}}", NULL, p),
                                  "No model is available"));
    CU_ASSERT_TRUE(prov_docs_needs_models("a {{messages_models}}"));
    CU_ASSERT_TRUE(prov_docs_needs_models("{{model}}"));
    CU_ASSERT_FALSE(prov_docs_needs_models("{{base_url}} {{mod"));
    apr_pool_destroy(p);
}

static void test_sections(void)
{
    apr_pool_t *p = NULL;
    apr_array_header_t *out;
    const prov_docs_section_t *s;
    apr_pool_create(&p, prov_test_pool());
    out = apr_array_make(p, 4, sizeof(prov_docs_section_t *));
    prov_docs_page_sections(out, "errors",
        "<html><nav><a href=\"/docs\">x</a></nav><h1 id=\"errors\">Errors</h1>\n<p>All &amp; "
        "every <b>one</b>.</p><h2 id=\"codes\">The <code>codes</code></h2><table><tr><td>400"
        "</td></tr></table>\n<h4>not a section</h4><h3 class=\"x\">no id</h3>"
        "<h3 id=\"INVALID_REQUEST\"><code>INVALID_REQUEST</code> (400)</h3><p>Bad &lt;input&gt;"
        "</p></main>", p);
    CU_ASSERT_EQUAL_FATAL(out->nelts, 3);
    s = APR_ARRAY_IDX(out, 0, const prov_docs_section_t *);
    CU_ASSERT_STRING_EQUAL(s->title, "Errors");
    CU_ASSERT_STRING_EQUAL(s->link, "/docs/errors#errors");
    CU_ASSERT_STRING_EQUAL(s->text, "All & every one .");
    s = APR_ARRAY_IDX(out, 1, const prov_docs_section_t *);
    CU_ASSERT_STRING_EQUAL(s->anchor, "codes");
    CU_ASSERT_STRING_EQUAL(s->title, "The codes");
    CU_ASSERT_STRING_EQUAL(s->text, "400 not a section no id");
    s = APR_ARRAY_IDX(out, 2, const prov_docs_section_t *);
    CU_ASSERT_STRING_EQUAL(s->title, "INVALID_REQUEST (400)");
    CU_ASSERT_STRING_EQUAL(s->text, "Bad <input>");
    CU_ASSERT_STRING_EQUAL(s->page, "errors");
    apr_array_clear(out);
    prov_docs_page_sections(out, "index", "<h2 id=\"keys\">Keys</h2>", p);
    CU_ASSERT_EQUAL_FATAL(out->nelts, 1);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(out, 0, const prov_docs_section_t *)->link,
                           "/docs#keys");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(out, 0, const prov_docs_section_t *)->text, "");
    apr_pool_destroy(p);
}

static void put(const char *dir, const char *name, const char *text, apr_pool_t *p)
{
    apr_file_t *f = NULL;
    apr_size_t n = strlen(text);
    CU_ASSERT_EQUAL_FATAL(apr_file_open(&f, apr_pstrcat(p, dir, "/", name, NULL),
                                        APR_FOPEN_WRITE | APR_FOPEN_CREATE | APR_FOPEN_TRUNCATE,
                                        APR_FPROT_OS_DEFAULT, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(apr_file_write_full(f, text, n, NULL), APR_SUCCESS);
    apr_file_close(f);
}

static void test_directory(void)
{
    apr_pool_t *p = NULL;
    char tmpl[] = "/tmp/prov-docs-XXXXXX";
    const char *dir = mkdtemp(tmpl), *text = NULL;
    apr_array_header_t *names = NULL, *secs = NULL;
    prov_docs_vars_t v = { "http://127.0.0.1:8080", NULL, NULL, NULL };
    apr_size_t len = 0;
    apr_pool_create(&p, prov_test_pool());
    v.models = ids(p, "gpt-x", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    put(dir, "zeta.html", "<h1 id=\"zeta\">Zeta {{model}}</h1><p>z</p>", p);
    put(dir, "index.html", "<h1 id=\"overview\">Overview</h1><p>{{base_url}}</p>", p);
    put(dir, "alpha.html", "<h1 id=\"alpha\">Alpha</h1>", p);
    put(dir, "Bad.html", "<h1 id=\"bad\">not a page name</h1>", p);
    put(dir, "style.css", "body {}", p);
    CU_ASSERT_EQUAL_FATAL(prov_docs_pages(&names, dir, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(names->nelts, 3);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(names, 0, const char *), "index");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(names, 1, const char *), "alpha");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(names, 2, const char *), "zeta");
    CU_ASSERT_EQUAL(prov_docs_read(&text, &len, dir, "style.css", p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(text, "body {}");
    CU_ASSERT_EQUAL(len, 7);
    CU_ASSERT_TRUE(APR_STATUS_IS_ENOENT(prov_docs_read(&text, &len, dir, "gone.html", p)));
    CU_ASSERT_EQUAL_FATAL(prov_docs_sections(&secs, dir, &v, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(secs->nelts, 3);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(secs, 0, const prov_docs_section_t *)->text,
                           "http://127.0.0.1:8080");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(secs, 2, const prov_docs_section_t *)->title,
                           "Zeta gpt-x");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(secs, 2, const prov_docs_section_t *)->link,
                           "/docs/zeta#zeta");
    CU_ASSERT_NOT_EQUAL(prov_docs_pages(&names, apr_pstrcat(p, dir, "/none", NULL), p),
                        APR_SUCCESS);
    /* The frame: no layout, a layout without its markers, then a good one;
     * what the page inserts is not read for markers again. */
    CU_ASSERT_TRUE(APR_STATUS_IS_ENOENT(prov_docs_frame(&text, dir, "<h1 id=\"a\">A</h1>", &v,
                                                        p)));
    put(dir, "_layout.html", "<title>{{content}}{{title}}</title>", p);
    CU_ASSERT_EQUAL(prov_docs_frame(&text, dir, "x", &v, p), APR_EINVAL);
    put(dir, "_layout.html", "<title>{{title}} {{base_url}}</title><main>{{content}}</main>{{x}}",
        p);
    CU_ASSERT_EQUAL_FATAL(prov_docs_frame(&text, dir, "<h1 id=\"a\">A &amp; <code>{{model}}"
                                          "</code></h1><p>{{title}}</p>", &v, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(text, "<title>A &amp; gpt-x http://127.0.0.1:8080</title><main>"
                           "<h1 id=\"a\">A &amp; <code>gpt-x</code></h1><p>{{title}}</p></main>"
                           "{{x}}");
    CU_ASSERT_EQUAL(prov_docs_frame(&text, dir, "no heading", NULL, p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "<title>Documentation https://provider.example</title>"));
    CU_ASSERT_EQUAL_FATAL(prov_docs_pages(&names, dir, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(names->nelts, 3);
    {
        static const char *const files[] = { "zeta.html", "index.html", "alpha.html",
                                             "Bad.html", "style.css", "_layout.html", NULL };
        int i;
        for (i = 0; files[i]; i++)
            CU_ASSERT_EQUAL(apr_file_remove(apr_pstrcat(p, dir, "/", files[i], NULL), p),
                            APR_SUCCESS);
        CU_ASSERT_EQUAL(apr_dir_remove(dir, p), APR_SUCCESS);
    }
    apr_pool_destroy(p);
}

/* The cache reads the pages once, again when one changes (its size or
 * mtime), is added or removed, or the base URL is another; each lookup is a
 * copy of its own. */
static void test_cache(void)
{
    apr_pool_t *p = NULL;
    char tmpl[] = "/tmp/prov-docs-XXXXXX";
    const char *dir = mkdtemp(tmpl), *s1 = NULL, *s2 = NULL;
    apr_array_header_t *a = NULL, *b = NULL;
    prov_docs_vars_t v = { "http://127.0.0.1:8080", NULL, NULL, NULL };
    prov_docs_cache_t *c = NULL;
    int refilled = -1;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    put(dir, "index.html", "<h1 id=\"overview\">Overview</h1><p>{{base_url}}</p>", p);
    CU_ASSERT_EQUAL_FATAL(prov_docs_cache_create(&c, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_docs_cache_sections(&a, c, dir, &v, &refilled, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(refilled, 1);
    CU_ASSERT_EQUAL_FATAL(a->nelts, 1);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(a, 0, const prov_docs_section_t *)->text,
                           "http://127.0.0.1:8080");
    CU_ASSERT_EQUAL_FATAL(prov_docs_cache_sections(&b, c, dir, &v, &refilled, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(refilled, 0);
    CU_ASSERT_EQUAL_FATAL(b->nelts, 1);
    CU_ASSERT_PTR_NOT_EQUAL(APR_ARRAY_IDX(a, 0, const prov_docs_section_t *)->text,
                            APR_ARRAY_IDX(b, 0, const prov_docs_section_t *)->text);
    /* another page, then a changed size: read again */
    put(dir, "alpha.html", "<h1 id=\"alpha\">Alpha</h1>", p);
    CU_ASSERT_EQUAL(prov_docs_cache_sections(&b, c, dir, &v, &refilled, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(refilled, 1);
    CU_ASSERT_EQUAL(b->nelts, 2);
    CU_ASSERT_EQUAL(prov_docs_stamp(&s1, dir, "x", p), APR_SUCCESS);
    put(dir, "alpha.html", "<h1 id=\"alpha\">Alpha two</h1>", p);
    CU_ASSERT_EQUAL(prov_docs_stamp(&s2, dir, "x", p), APR_SUCCESS);
    CU_ASSERT_STRING_NOT_EQUAL(s1, s2);
    CU_ASSERT_EQUAL(prov_docs_cache_sections(&b, c, dir, &v, &refilled, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(refilled, 1);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(b, 1, const prov_docs_section_t *)->title, "Alpha two");
    /* the earlier copy is untouched by the refill */
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(a, 0, const prov_docs_section_t *)->title, "Overview");
    v.base_url = "https://other.example";
    CU_ASSERT_EQUAL(prov_docs_cache_sections(&b, c, dir, &v, &refilled, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(refilled, 1);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(b, 0, const prov_docs_section_t *)->text,
                           "https://other.example");
    CU_ASSERT_EQUAL(apr_file_remove(apr_pstrcat(p, dir, "/alpha.html", NULL), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(apr_file_remove(apr_pstrcat(p, dir, "/index.html", NULL), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(apr_dir_remove(dir, p), APR_SUCCESS);
    CU_ASSERT_NOT_EQUAL(prov_docs_cache_sections(&b, c, dir, &v, &refilled, p), APR_SUCCESS);
    apr_pool_destroy(p);
}

void prov_test_suite_docs(void)
{
    PROV_SUITE("docs", PROV_TEST(test_names), PROV_TEST(test_render), PROV_TEST(test_sections),
               PROV_TEST(test_directory), PROV_TEST(test_cache));
}
