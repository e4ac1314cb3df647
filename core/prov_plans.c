/* prov_plans.c: being written (see prov_plans.h). */
#include "prov_plans.h"
