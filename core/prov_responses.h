/* prov_responses.h: the Responses transport's rules without httpd (being written; see
 * the issue for the responses transport). */
#ifndef PROV_RESPONSES_H
#define PROV_RESPONSES_H

#include "prov_common.h"

#endif
