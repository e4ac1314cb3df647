/* prov_secret.c: random secrets from OpenSSL, their SHA-256 digests (what is
 * stored) and display prefixes (what is shown after creation). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include "prov_secret.h"

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

apr_status_t prov_secret_bytes(unsigned char *buf, apr_size_t n)
{
    return RAND_bytes(buf, (int)n) == 1 ? APR_SUCCESS : APR_EGENERAL;
}

static char *b64url_encode(const unsigned char *in, apr_size_t n, apr_pool_t *p)
{
    char *out = apr_palloc(p, (n * 4) / 3 + 4);
    apr_size_t i, o = 0;
    for (i = 0; i + 2 < n; i += 3) {
        apr_uint32_t v = ((apr_uint32_t)in[i] << 16) | ((apr_uint32_t)in[i + 1] << 8) | in[i + 2];
        out[o++] = b64url[(v >> 18) & 63];
        out[o++] = b64url[(v >> 12) & 63];
        out[o++] = b64url[(v >> 6) & 63];
        out[o++] = b64url[v & 63];
    }
    if (n - i == 1) {
        apr_uint32_t v = (apr_uint32_t)in[i] << 16;
        out[o++] = b64url[(v >> 18) & 63];
        out[o++] = b64url[(v >> 12) & 63];
    }
    else if (n - i == 2) {
        apr_uint32_t v = ((apr_uint32_t)in[i] << 16) | ((apr_uint32_t)in[i + 1] << 8);
        out[o++] = b64url[(v >> 18) & 63];
        out[o++] = b64url[(v >> 12) & 63];
        out[o++] = b64url[(v >> 6) & 63];
    }
    out[o] = '\0';
    return out;
}

apr_status_t prov_secret_token(const char **out, apr_size_t n, apr_pool_t *p)
{
    unsigned char buf[64];
    apr_status_t rv;
    if (n > sizeof(buf))
        return APR_EINVAL;
    rv = prov_secret_bytes(buf, n);
    if (rv != APR_SUCCESS)
        return rv;
    *out = b64url_encode(buf, n, p);
    OPENSSL_cleanse(buf, sizeof(buf));
    return APR_SUCCESS;
}

/* Request ids need to be unique, not secret: they come from a splitmix64
 * sequence over a process-wide counter, seeded from the CSPRNG once per
 * process (RAND_bytes per request was measurable, and serialises threads).
 * A forked child seeds again: an atfork handler forgets the seed (asking
 * getpid on every id was two system calls per request). */
static apr_uint64_t rid_seed, rid_counter;
static int rid_seeded;
static pthread_mutex_t rid_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t rid_once = PTHREAD_ONCE_INIT;

static void rid_forked(void)
{
    /* the child has one thread: the mutex may have been held by another */
    pthread_mutex_init(&rid_mutex, NULL);
    rid_seeded = 0;
}

static void rid_init(void)
{
    pthread_atfork(NULL, NULL, rid_forked);
}

static apr_status_t rid_next(apr_uint64_t *v)
{
    apr_uint64_t z;
    apr_status_t rv = APR_SUCCESS;
    pthread_once(&rid_once, rid_init);
    pthread_mutex_lock(&rid_mutex);
    if (!rid_seeded) {
        rv = prov_secret_bytes((unsigned char *)&rid_seed, sizeof(rid_seed));
        if (rv == APR_SUCCESS)
            rid_seeded = 1;
    }
    z = rid_seed + (++rid_counter) * APR_UINT64_C(0x9E3779B97F4A7C15);
    pthread_mutex_unlock(&rid_mutex);
    if (rv != APR_SUCCESS)
        return rv;
    z = (z ^ (z >> 30)) * APR_UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * APR_UINT64_C(0x94D049BB133111EB);
    *v = z ^ (z >> 31);
    return APR_SUCCESS;
}

apr_status_t prov_secret_request_id(const char **out, apr_int64_t usec, apr_pool_t *p)
{
    unsigned char buf[9];
    apr_uint64_t a = 0, b = 0;
    const char *rnd;
    apr_status_t rv;
    if ((rv = rid_next(&a)) != APR_SUCCESS || (rv = rid_next(&b)) != APR_SUCCESS)
        return rv;
    memcpy(buf, &a, 8);
    buf[8] = (unsigned char)b;
    rnd = b64url_encode(buf, sizeof(buf), p);
    if (usec < 0)
        usec = 0;
    *out = apr_psprintf(p, "req_%013" APR_UINT64_T_HEX_FMT "%s",
                        (apr_uint64_t)usec & APR_UINT64_C(0xfffffffffffff), rnd);
    return APR_SUCCESS;
}

/* SHA-256 fetched once: EVP_sha256() makes OpenSSL 3 look the algorithm
 * up again on every digest, under a lock every request thread shares (it
 * showed as 2.6% of the module's CPU under load, against 0.4% fetched).
 * Each thread keeps its digest context too: EVP_Digest allocates and frees
 * one per call, and with two threads hashing at once that doubled its cost. */
static EVP_MD *sha256_md;
static pthread_key_t sha256_key;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_ctx_free(void *c)
{
    EVP_MD_CTX_free(c);
}

static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
    pthread_key_create(&sha256_key, sha256_ctx_free);
}

/* s's SHA-256 in md: with the thread's context, else (no memory) one of
 * its own. */
static int sha256(const char *s, unsigned char *md, unsigned int *mdlen)
{
    const EVP_MD *type = sha256_md ? sha256_md : EVP_sha256();
    EVP_MD_CTX *c = pthread_getspecific(sha256_key);
    if (!c && (c = EVP_MD_CTX_new()) != NULL && pthread_setspecific(sha256_key, c) != 0) {
        EVP_MD_CTX_free(c);
        c = NULL;
    }
    if (!c)
        return EVP_Digest(s, strlen(s), md, mdlen, type, NULL);
    return EVP_DigestInit_ex2(c, type, NULL) && EVP_DigestUpdate(c, s, strlen(s))
        && EVP_DigestFinal_ex(c, md, mdlen);
}

const char *prov_secret_hash(const char *s, apr_pool_t *p)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0, i;
    char *hex;

    pthread_once(&sha256_once, sha256_fetch);
    if (sha256(s, md, &mdlen) != 1)
        return NULL;
    hex = apr_palloc(p, mdlen * 2 + 1);
    for (i = 0; i < mdlen; i++) {
        hex[2 * i] = "0123456789abcdef"[md[i] >> 4];
        hex[2 * i + 1] = "0123456789abcdef"[md[i] & 15];
    }
    hex[mdlen * 2] = '\0';
    return hex;
}

int prov_secret_wellformed(const char *s)
{
    apr_size_t plen = sizeof(PROV_SECRET_KEY_PREFIX) - 1, i;
    if (!s || strncmp(s, PROV_SECRET_KEY_PREFIX, plen))
        return 0;
    s += plen;
    for (i = 0; s[i]; i++) {
        if (!strchr(b64url, s[i]))
            return 0;
    }
    return i == PROV_SECRET_RANDOM_LEN;
}

const char *prov_secret_display(const char *secret, apr_pool_t *p)
{
    return apr_pstrndup(p, secret, PROV_SECRET_DISPLAY_LEN);
}

const char *prov_secret_last4(const char *secret, apr_pool_t *p)
{
    apr_size_t n = strlen(secret);
    return apr_pstrdup(p, secret + (n > 4 ? n - 4 : 0));
}

apr_status_t prov_secret_generate(const char **secret, const char **hash_hex,
                                  const char **display, apr_pool_t *p)
{
    const char *rnd, *s, *h;
    apr_status_t rv = prov_secret_token(&rnd, 32, p);
    if (rv != APR_SUCCESS)
        return rv;
    s = apr_pstrcat(p, PROV_SECRET_KEY_PREFIX, rnd, NULL);
    h = prov_secret_hash(s, p);
    if (!h)
        return APR_EGENERAL;
    *secret = s;
    *hash_hex = h;
    *display = prov_secret_display(s, p);
    return APR_SUCCESS;
}
