/* providerctl_plan.c: the plan and subscription commands (being written). */
#include "providerctl.h"
