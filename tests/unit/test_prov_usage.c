/* test_prov_usage.c: unit tests (being written). */
#include "unit_tests.h"

void prov_test_suite_usage(void)
{
}
