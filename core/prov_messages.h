/* prov_messages.h: the Messages transport's rules without httpd (being written; see
 * the issue for the messages transport). */
#ifndef PROV_MESSAGES_H
#define PROV_MESSAGES_H

#include "prov_common.h"

#endif
