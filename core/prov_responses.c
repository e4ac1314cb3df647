/* prov_responses.c: the Responses transport's rules without httpd (being written). */
#include "prov_responses.h"
