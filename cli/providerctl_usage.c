/* providerctl_usage.c: the usage commands (being written). */
#include "providerctl.h"
