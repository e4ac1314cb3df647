/* prov_messages.c: the Messages transport's rules without httpd (being written). */
#include "prov_messages.h"
