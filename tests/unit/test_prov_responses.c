/* test_prov_responses.c: unit tests of the Responses transport's rules (being written). */
#include "unit_tests.h"

void prov_test_suite_responses(void)
{
}
