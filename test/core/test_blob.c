/*
 * test_blob.c - lp_blob: blob-id leases claimed in a lease directory, their
 * records read back as one sequence, and damaged records refused.
 */
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_blob.h"
#include "lp_test.h"
#include "lp_test_files.h"
#include "lp_test_store.h"
#include "lp_test_util.h"

#define CLAIMER "0123456789abcdef0123456789abcdef"

static char *
fresh_lease_dir(void)
{
	/* below a directory that does not exist yet: claims create it */
	return lp_path_join(lp_test_make_temp_dir(), "staging/" LP_BLOB_LEASE_DIR);
}

static void
put_record(const char *dir, const char *name, const char *text)
{
	char	   *path = lp_path_join(dir, name);
	LpError		err;

	LP_CHECK(lp_test_store()->ops->put_if_absent(lp_test_store(), path, text, strlen(text), &err));
	lp_free(path);
}

LP_TEST(blob_lease_claims_follow_each_other)
{
	char	   *dir = fresh_lease_dir();
	LpStore    *store = lp_test_store();
	LpBlobLease lease;
	LpBlobLease *leases;
	uint64_t	count;
	LpError		err;

	LP_CHECK(lp_blob_leases_read(store, dir, &leases, &count, &err));
	LP_CHECK_EQ_U64(count, 0);

	LP_CHECK(lp_blob_lease_claim(store, dir, 3, CLAIMER, &lease, &err));
	LP_CHECK_EQ_U64(lease.start, 1);
	LP_CHECK_EQ_U64(lease.end, 4);
	LP_CHECK(lp_blob_lease_claim(store, dir, 1, CLAIMER, &lease, &err));
	LP_CHECK_EQ_U64(lease.start, 4);
	LP_CHECK_EQ_U64(lease.end, 5);
	LP_CHECK(lp_blob_lease_claim(store, dir, 100, CLAIMER, &lease, &err));
	LP_CHECK_EQ_U64(lease.start, 5);
	LP_CHECK_EQ_U64(lease.end, 105);

	LP_CHECK(lp_blob_leases_read(store, dir, &leases, &count, &err));
	LP_CHECK_EQ_U64(count, 3);
	if (count == 3)
	{
		LP_CHECK_EQ_U64(leases[0].start, 1);
		LP_CHECK_EQ_U64(leases[2].end, 105);
		LP_CHECK(lp_blob_lease_holds(leases, count, 1));
		LP_CHECK(lp_blob_lease_holds(leases, count, 104));
		LP_CHECK(!lp_blob_lease_holds(leases, count, 0));
		LP_CHECK(!lp_blob_lease_holds(leases, count, 105));
	}
	lp_free(leases);

	LP_CHECK(!lp_blob_lease_claim(store, dir, 0, CLAIMER, &lease, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(!lp_blob_lease_claim(store, dir, 1, "0123", &lease, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(!lp_blob_lease_claim(store, dir, 1, "0123456789abcdef0123456789abcdeX", &lease, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_INVALID_ARGUMENT);
	lp_free(dir);
}

/* A record another claimer created first is skipped, never reused. */
LP_TEST(blob_lease_claim_after_lost_race)
{
	char	   *dir = fresh_lease_dir();
	LpBlobLease lease;
	LpError		err;

	LP_CHECK(lp_blob_lease_claim(lp_test_store(), dir, 2, CLAIMER, &lease, &err));
	/* what a concurrent claimer wrote, and a store's temporary file beside it */
	put_record(dir, "00000000000000000002", "3 10 " CLAIMER "\n");
	put_record(dir, ".00000000000000000003.1.0123456789abcdef.tmp", "junk");
	LP_CHECK(lp_blob_lease_claim(lp_test_store(), dir, 5, CLAIMER, &lease, &err));
	LP_CHECK_EQ_U64(lease.start, 10);
	LP_CHECK_EQ_U64(lease.end, 15);
	lp_free(dir);
}

LP_TEST(blob_lease_exhausts_the_id_space)
{
	char	   *dir = fresh_lease_dir();
	LpBlobLease lease;
	LpError		err;
	char		text[64];

	snprintf(text, sizeof(text), "1 %u " CLAIMER "\n", (unsigned) (UINT32_MAX - 2));
	put_record(dir, "00000000000000000001", text);
	LP_CHECK(lp_blob_lease_claim(lp_test_store(), dir, 2, CLAIMER, &lease, &err));
	LP_CHECK_EQ_U64(lease.end, UINT32_MAX);
	LP_CHECK(!lp_blob_lease_claim(lp_test_store(), dir, 1, CLAIMER, &lease, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_INVALID_ARGUMENT);
	LP_CHECK_MSG(strstr(err.message, "exhaust") != NULL, "%s", err.message);
	lp_free(dir);
}

LP_TEST(blob_lease_damaged_records_are_refused)
{
	static const char *const records[] = {
		"", "0 5 " CLAIMER "\n", "5 5 " CLAIMER "\n", "7 3 " CLAIMER "\n", "1 5 " CLAIMER,
		"1 5 " CLAIMER "\n\n", "1 4294967296 " CLAIMER "\n", "x 5 " CLAIMER "\n", "1  5 " CLAIMER "\n",
		"1 5\n", "1 5 0123\n", "1 5 0123456789ABCDEF0123456789abcdef\n",
		"1 5 " CLAIMER "\n                                   ",
	};

	for (size_t i = 0; i < sizeof(records) / sizeof(records[0]); i++)
	{
		char	   *dir = fresh_lease_dir();
		LpBlobLease lease;
		LpBlobLease *leases;
		uint64_t	count;
		LpError		err;

		put_record(dir, "00000000000000000001", records[i]);
		LP_CHECK_MSG(!lp_blob_lease_claim(lp_test_store(), dir, 1, CLAIMER, &lease, &err) &&
					 err.code == LP_ERR_CORRUPT, "record %zu claimed", i);
		LP_CHECK_MSG(!lp_blob_leases_read(lp_test_store(), dir, &leases, &count, &err) &&
					 err.code == LP_ERR_CORRUPT, "record %zu read", i);
		lp_free(dir);
	}
}

/* Records must chain from id 1 without gaps in numbers or ids. */
LP_TEST(blob_lease_broken_sequences_are_refused)
{
	static const char *const second[][2] = {
		{"00000000000000000003", "5 9 " CLAIMER "\n"},	/* record 2 missing */
		{"00000000000000000002", "6 9 " CLAIMER "\n"},	/* ids 5 skipped */
		{"00000000000000000002", "4 9 " CLAIMER "\n"},	/* overlaps record 1 */
	};

	for (size_t i = 0; i < sizeof(second) / sizeof(second[0]); i++)
	{
		char	   *dir = fresh_lease_dir();
		LpBlobLease *leases;
		uint64_t	count;
		LpError		err;

		put_record(dir, "00000000000000000001", "1 5 " CLAIMER "\n");
		put_record(dir, second[i][0], second[i][1]);
		LP_CHECK_MSG(!lp_blob_leases_read(lp_test_store(), dir, &leases, &count, &err) &&
					 err.code == LP_ERR_CORRUPT, "case %zu", i);
		lp_free(dir);
	}
	{
		/* a first record not starting at 1 */
		char	   *dir = fresh_lease_dir();
		LpBlobLease *leases;
		uint64_t	count;
		LpError		err;

		put_record(dir, "00000000000000000001", "2 5 " CLAIMER "\n");
		LP_CHECK(!lp_blob_leases_read(lp_test_store(), dir, &leases, &count, &err));
		lp_free(dir);
	}
}

/*
 * A claim continues only records numbered 1, 2, ..., n: after a gap it would
 * write a record no reader takes in, and after u64::MAX it would retry
 * record 0 forever.
 */
LP_TEST(blob_lease_claim_refuses_gaps)
{
	static const char *const last[] = {"00000000000000000003", "18446744073709551615"};

	for (size_t i = 0; i < sizeof(last) / sizeof(last[0]); i++)
	{
		char	   *dir = fresh_lease_dir();
		LpBlobLease lease;
		LpError		err;

		put_record(dir, "00000000000000000001", "1 5 " CLAIMER "\n");
		put_record(dir, last[i], "5 9 " CLAIMER "\n");
		if (i == 1)
			put_record(dir, "00000000000000000000", "junk");
		LP_CHECK_MSG(!lp_blob_lease_claim(lp_test_store(), dir, 1, CLAIMER, &lease, &err) &&
					 err.code == LP_ERR_CORRUPT, "case %zu", i);
		LP_CHECK(strstr(err.message, "do not form one sequence") != NULL);
		lp_free(dir);
	}
}
