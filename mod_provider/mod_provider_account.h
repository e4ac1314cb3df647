/* mod_provider_account.h: the API of mod_provider_account.c. */
#ifndef MOD_PROVIDER_ACCOUNT_H
#define MOD_PROVIDER_ACCOUNT_H

#include "mod_provider.h"

/* GET /v1/account */
int provider_account_handler(request_rec *r);
/* GET /v1/usage?days=1..30&by=day|key|model */
int provider_usage_handler(request_rec *r);
/* GET /v1/requests?key=ID&status=NAME&limit=N&before=NEXT */
int provider_requests_handler(request_rec *r);

#endif
