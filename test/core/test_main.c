/*
 * test_main.c - runs every registered core unit test.
 *
 * Usage: core-tests [DATA_DIR]
 */
#include <stdlib.h>

#include "lp_test.h"

#define LP_MAX_TESTS 1024

typedef struct LpTestCase
{
	const char *name;
	LpTestFunction function;
} LpTestCase;

static LpTestCase tests[LP_MAX_TESTS];
static int	num_tests;
static int	current_failures;

const char *lp_test_data_dir;

void
lp_test_register(const char *name, LpTestFunction function)
{
	if (num_tests >= LP_MAX_TESTS)
	{
		fprintf(stderr, "too many tests\n");
		exit(2);
	}
	tests[num_tests].name = name;
	tests[num_tests].function = function;
	num_tests++;
}

void
lp_test_record_failure(const char *file, int line, const char *what)
{
	current_failures++;
	fprintf(stderr, "  %s:%d: check failed: %s\n", file, line, what);
}

int
main(int argc, char **argv)
{
	int			passed = 0;
	int			failed = 0;

	lp_test_data_dir = argc > 1 && argv[1][0] != '\0' ? argv[1] : NULL;
	for (int i = 0; i < num_tests; i++)
	{
		current_failures = 0;
		tests[i].function();
		if (current_failures == 0)
		{
			passed++;
			printf("ok %s\n", tests[i].name);
		}
		else
		{
			failed++;
			printf("FAILED %s\n", tests[i].name);
		}
	}
	printf("core: %d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
