/* test_prov_messages.c: unit tests of the Messages transport's rules (being written). */
#include "unit_tests.h"

void prov_test_suite_messages(void)
{
}
