/* prov_signin_util.c: the encodings and the seal a sign-in needs
 * (prov_signin_int.h), on OpenSSL. The seal's key is derived afresh from
 * the state and the binding for each record; neither is stored, so the
 * database alone never yields a PKCE verifier or a nonce, and a
 * redirect URL caught on its way (code and state) yields them neither. */
#include <string.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include "prov_signin_int.h"

#define IV_LEN  12
#define TAG_LEN 16
#define SEAL_CONTEXT "prov-signin-v1 "

static const char b64u[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int prov_signin_token_ok(const char *t)
{
    apr_size_t i;
    if (!t)
        return 0;
    for (i = 0; t[i]; i++) {
        if (!strchr(b64u, t[i]))
            return 0;
    }
    return i == 43;
}

const char *prov_signin_b64url(const unsigned char *in, apr_size_t n, apr_pool_t *p)
{
    char *out = apr_palloc(p, (n + 2) / 3 * 4 + 1), *o = out;
    apr_size_t i;
    for (i = 0; i < n; i += 3) {
        apr_uint32_t v = (apr_uint32_t)in[i] << 16;
        apr_size_t left = n - i;
        if (left > 1)
            v |= (apr_uint32_t)in[i + 1] << 8;
        if (left > 2)
            v |= in[i + 2];
        *o++ = b64u[(v >> 18) & 63];
        *o++ = b64u[(v >> 12) & 63];
        if (left > 1)
            *o++ = b64u[(v >> 6) & 63];
        if (left > 2)
            *o++ = b64u[v & 63];
    }
    *o = '\0';
    return out;
}

/* Decodes unpadded base64url into buf (cap bytes); -1 on a bad character. */
static long b64url_decode(unsigned char *buf, apr_size_t cap, const char *s)
{
    apr_uint32_t acc = 0;
    int bits = 0;
    apr_size_t n = 0;
    for (; *s; s++) {
        const char *c = strchr(b64u, *s);
        if (!c)
            return -1;
        acc = (acc << 6) | (apr_uint32_t)(c - b64u);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n >= cap)
                return -1;
            buf[n++] = (unsigned char)(acc >> bits);
        }
    }
    return (long)n;
}

const char *prov_signin_urlencode(const char *s, apr_pool_t *p)
{
    char *out = apr_palloc(p, strlen(s) * 3 + 1), *o = out;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
            || c == '-' || c == '.' || c == '_' || c == '~') {
            *o++ = (char)c;
        }
        else {
            *o++ = '%';
            *o++ = "0123456789ABCDEF"[c >> 4];
            *o++ = "0123456789ABCDEF"[c & 15];
        }
    }
    *o = '\0';
    return out;
}

const char *prov_signin_challenge(const char *verifier, apr_pool_t *p)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(verifier, strlen(verifier), md, &n, EVP_sha256(), NULL) != 1)
        return NULL;
    return prov_signin_b64url(md, n, p);
}

static apr_status_t derive(unsigned char key[32], const char *state, const char *binding)
{
    unsigned int n = 32;
    size_t slen = strlen(state);
    unsigned char msg[sizeof(SEAL_CONTEXT) - 1 + 256];
    if (slen > 256)
        return APR_EINVAL;
    memcpy(msg, SEAL_CONTEXT, sizeof(SEAL_CONTEXT) - 1);
    memcpy(msg + sizeof(SEAL_CONTEXT) - 1, state, slen);
    if (!HMAC(EVP_sha256(), binding, (int)strlen(binding), msg,
              sizeof(SEAL_CONTEXT) - 1 + slen, key, &n) || n != 32)
        return APR_EGENERAL;
    return APR_SUCCESS;
}

/* One AES-256-GCM pass: encrypt (tag written) or decrypt (tag checked). */
static int gcm(int enc, const unsigned char key[32], const unsigned char *iv, const char *aad,
               const unsigned char *in, int len, unsigned char *out, unsigned char *tag)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n = 0, ok;
    if (!c)
        return 0;
    ok = EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1
        && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, IV_LEN, NULL) == 1
        && EVP_CipherInit_ex(c, NULL, NULL, key, iv, enc) == 1
        && EVP_CipherUpdate(c, NULL, &n, (const unsigned char *)aad, (int)strlen(aad)) == 1
        && EVP_CipherUpdate(c, out, &n, in, len) == 1
        && (enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) == 1)
        && EVP_CipherFinal_ex(c, out + n, &n) == 1
        && (!enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN, tag) == 1);
    EVP_CIPHER_CTX_free(c);
    return ok;
}

apr_status_t prov_signin_seal(const char **sealed, const char *state, const char *binding,
                              const char *aad, const char *plain, apr_pool_t *p)
{
    unsigned char key[32];
    int len = (int)strlen(plain);
    unsigned char *buf = apr_palloc(p, IV_LEN + (apr_size_t)len + TAG_LEN);
    apr_status_t rv = derive(key, state, binding);
    if (rv != APR_SUCCESS)
        return rv;
    if (RAND_bytes(buf, IV_LEN) != 1
        || !gcm(1, key, buf, aad, (const unsigned char *)plain, len, buf + IV_LEN,
                buf + IV_LEN + len))
        rv = APR_EGENERAL;
    OPENSSL_cleanse(key, sizeof(key));
    if (rv == APR_SUCCESS)
        *sealed = prov_signin_b64url(buf, IV_LEN + (apr_size_t)len + TAG_LEN, p);
    return rv;
}

apr_status_t prov_signin_unseal(const char **plain, const char *state, const char *binding,
                                const char *aad, const char *sealed, apr_pool_t *p)
{
    unsigned char key[32];
    apr_size_t cap = strlen(sealed);
    unsigned char *buf = apr_palloc(p, cap + 1);
    unsigned char *out = apr_palloc(p, cap + 1);
    long n = b64url_decode(buf, cap, sealed);
    int len;
    apr_status_t rv;

    if (n < IV_LEN + TAG_LEN)
        return APR_EINVAL;
    len = (int)n - IV_LEN - TAG_LEN;
    if ((rv = derive(key, state, binding)) != APR_SUCCESS)
        return rv;
    if (!gcm(0, key, buf, aad, buf + IV_LEN, len, out, buf + IV_LEN + len))
        rv = APR_EINVAL;
    OPENSSL_cleanse(key, sizeof(key));
    if (rv == APR_SUCCESS) {
        out[len] = '\0';
        *plain = (const char *)out;
    }
    return rv;
}
