/* prov_usage.c: being written (see prov_usage.h). */
#include "prov_usage.h"
