/*
 * lp_test.h - a minimal unit-test harness for the core.
 *
 * LP_TEST(name) { ... } registers a test; LP_CHECK* record failures and keep
 * going.  test_main.c runs every test and ends with "N passed, N failed".
 * Tests that need the generated reference data read lp_test_data_dir, which
 * is NULL when no data directory was given on the command line (those tests
 * then fail rather than silently pass).
 */
#ifndef LP_TEST_H
#define LP_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef void (*LpTestFunction) (void);

void		lp_test_register(const char *name, LpTestFunction function);
void		lp_test_record_failure(const char *file, int line, const char *what);

extern const char *lp_test_data_dir;

#define LP_TEST(name) \
	static void name(void); \
	__attribute__((constructor)) static void name##_register(void) \
	{ lp_test_register(#name, name); } \
	static void name(void)

#define LP_CHECK(cond) \
	do { if (!(cond)) lp_test_record_failure(__FILE__, __LINE__, #cond); } while (0)

#define LP_CHECK_MSG(cond, ...) \
	do { if (!(cond)) { char lp_msg_[512]; snprintf(lp_msg_, sizeof(lp_msg_), __VA_ARGS__); \
		lp_test_record_failure(__FILE__, __LINE__, lp_msg_); } } while (0)

#define LP_CHECK_EQ_U64(a, b) \
	LP_CHECK_MSG((unsigned long long) (a) == (unsigned long long) (b), \
				 "%s == %s (%llu != %llu)", #a, #b, \
				 (unsigned long long) (a), (unsigned long long) (b))

#define LP_CHECK_STR(a, b) \
	LP_CHECK_MSG((a) != NULL && strcmp((a), (b)) == 0, "%s == \"%s\" (got \"%s\")", \
				 #a, (b), (a) ? (a) : "(null)")

#endif							/* LP_TEST_H */
