/* test_prov_plans.c: unit tests (being written). */
#include "unit_tests.h"

void prov_test_suite_plans(void)
{
}
