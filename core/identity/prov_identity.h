/* prov_identity.h: linked identities: which user an identity at a provider
 * (its name and the subject it gave) belongs to. The first sign-in with an
 * unknown identity creates the user and the identity together; later ones
 * find the user. Linking adds an identity to a signed-in user: one that
 * belongs to another user is refused (409 IDENTITY_ALREADY_LINKED), one
 * that is already this user's is a no-op; nothing is ever merged. The last
 * identity of a user cannot be unlinked. What is shown of an identity is
 * its provider and when it was linked (prov_user_identities): never the
 * subject.
 *
 * A user needs an email (users.email is NOT NULL UNIQUE since 001). A user
 * created by a sign-in gets the provider's email only when it is verified
 * (claims->email_verified 1: the provider said email_verified true, or
 * said nothing and its definition has emails_verified=on), valid, and no
 * other user's; else a placeholder that cannot receive mail and cannot
 * clash: "signin-<24 hex>@" PROV_IDENTITY_NOMAIL_DOMAIN. users.email is
 * unique and providerctl finds users by it: an address nobody checked
 * would let the first to claim it squat it. An email is never used to find
 * or join an existing user (no account takeover through a provider that
 * vouches for an address). */
#ifndef PROV_IDENTITY_H
#define PROV_IDENTITY_H

#include "prov_common.h"
#include "prov_store.h"
#include "prov_account.h"
#include "prov_signin.h"

#define PROV_IDENTITY_NOMAIL_DOMAIN "no-email.invalid"
#define PROV_IDENTITY_NAME_MAX      200

/* The user of (provider, subject); APR_NOTFOUND when it is nobody's. */
apr_status_t prov_identity_user(apr_int64_t *user_id, prov_store_t *s, const char *provider,
                                const char *subject, apr_pool_t *p);

/* A sign-in: the user of the identity in c, created with it (*created = 1)
 * when unknown. APR_EACCES when that user is blocked (no session may be
 * made); APR_EINVAL for claims without a subject. */
apr_status_t prov_identity_signin(prov_user_t **user, int *created, prov_store_t *s,
                                  const char *provider, const prov_claims_t *c,
                                  apr_int64_t now, apr_pool_t *p);

/* Links (provider, subject) to user_id: *added = 1 when linked now, 0 when
 * it was this user's already (a no-op). APR_EEXIST when it is another
 * user's (the glue answers 409 IDENTITY_ALREADY_LINKED). */
apr_status_t prov_identity_link(int *added, prov_store_t *s, apr_int64_t user_id,
                                const char *provider, const char *subject, apr_int64_t now,
                                apr_pool_t *p);

/* Unlinks the user's identities at provider. APR_NOTFOUND when there is
 * none; APR_EBUSY when they are all the user has (the last way to sign in
 * stays). */
apr_status_t prov_identity_unlink(prov_store_t *s, apr_int64_t user_id, const char *provider,
                                  apr_pool_t *p);

/* Listing a user's identities (provider and time only) is core/account's
 * prov_user_identities (prov_user_access.h). */

/* Non-zero when email is a placeholder made by a sign-in (no real address). */
int prov_identity_email_is_placeholder(const char *email);

#endif
