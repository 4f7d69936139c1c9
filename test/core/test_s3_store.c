/*
 * test_s3_store.c - the S3 LpStore against the in-process server: nearby
 * reads coalesced into one ranged GET, a changed object caught, listings
 * across continuation pages, stat of objects, prefixes and buckets, the
 * conditional write that loses (412) and the one that keeps conflicting
 * (409), and outputs: one PUT or a multipart upload, server-side copies
 * where the run is long enough, and the upload aborted when a write fails
 * or the output is aborted; read-ahead: prefetched ranges widened to the
 * blocks and merged, reads served from them, the byte budget, the pieces of
 * old prefetches dropped, a failed piece reported, pending ones aborted on
 * close.
 */
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "io/lp_s3_multipart.h"
#include "io/lp_s3_store.h"
#include "lp_test.h"
#include "lp_test_s3_server.h"

/* a text of the server's counts equals expected */
#define CHECK_TEXT(text, expected) \
	LP_CHECK_MSG(strcmp((text), (expected)) == 0, "%s: \"%.200s\", not \"%.200s\"", #text, (text), (expected))

#define URI(key) "s3://" LP_TEST_S3_BUCKET "/" key

typedef struct Fixture
{
	LpTestS3Server *server;
	LpS3Config	config;
	LpStore    *store;
} Fixture;

static void
fixture_open(Fixture *f)
{
	LpError		err;

	f->server = lp_test_s3_server_create();
	f->config = lp_test_s3_config();
	f->store = lp_s3_store_create(&f->config, lp_test_s3_transport(f->server), &err);
	LP_CHECK_MSG(f->store != NULL, "store: %.300s", err.message);
}

static void
fixture_close(Fixture *f)
{
	lp_s3_store_free(f->store);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f->server)->unsigned_requests, 0);
	lp_test_s3_server_free(f->server);
	lp_set_cancel_check(NULL);
}

static uint8_t *
pattern(size_t len, unsigned seed)
{
	uint8_t    *data = malloc(len ? len : 1);

	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t) (i * 13 + seed + (i >> 9));
	return data;
}

LP_TEST(s3_store_coalesces_nearby_reads)
{
	Fixture		f;
	LpError		err;
	size_t		size = 1000000;
	uint8_t    *data = pattern(size, 1);
	uint8_t    *buffer = malloc(size);
	LpInput    *input;
	LpInput    *other;
	const LpTestS3Counts *counts;

	fixture_open(&f);
	lp_test_s3_put(f.server, "ds/data/a.lance", data, size);
	lp_test_s3_put(f.server, "ds/data/b.lance", data, size);
	input = f.store->ops->open_input(f.store, URI("ds/data/a.lance"), &err);
	LP_CHECK_MSG(input != NULL, "%.300s", err.message);
	if (input == NULL)
		return;
	LP_CHECK_EQ_U64(input->size, size);
	counts = lp_test_s3_counts(f.server);
	LP_CHECK_EQ_U64(counts->heads, 1);

	/* a footer, then the metadata before it, then a column's pages: one GET */
	LP_CHECK(lp_input_read(input, size - 40, buffer, 40, &err) && memcmp(buffer, data + size - 40, 40) == 0);
	CHECK_TEXT(counts->last_range, "bytes=983040-999999");
	LP_CHECK(lp_input_read(input, size - 3000, buffer, 2000, &err) &&
			 memcmp(buffer, data + size - 3000, 2000) == 0);
	LP_CHECK(lp_input_read(input, size - 16000, buffer, 100, &err) &&
			 memcmp(buffer, data + size - 16000, 100) == 0);
	LP_CHECK_EQ_U64(counts->gets, 1);

	/* a small read across a block boundary fetches both blocks */
	LP_CHECK(lp_input_read(input, 65530, buffer, 20, &err) && memcmp(buffer, data + 65530, 20) == 0);
	CHECK_TEXT(counts->last_range, "bytes=0-131071");
	LP_CHECK(lp_input_read(input, 100, buffer, 1000, &err) && memcmp(buffer, data + 100, 1000) == 0);
	LP_CHECK_EQ_U64(counts->gets, 2);

	/* a large read goes straight to the caller's buffer */
	LP_CHECK(lp_input_read(input, 200000, buffer, 300000, &err) && memcmp(buffer, data + 200000, 300000) == 0);
	CHECK_TEXT(counts->last_range, "bytes=200000-499999");
	LP_CHECK_EQ_U64(counts->gets, 3);

	/* a read of another input takes over the one cached block */
	other = f.store->ops->open_input_lazily(f.store, URI("ds/data/b.lance"), size, &err);
	LP_CHECK(lp_input_read(other, 10, buffer, 10, &err) && memcmp(buffer, data + 10, 10) == 0);
	LP_CHECK(lp_input_read(input, 100, buffer, 10, &err) && memcmp(buffer, data + 100, 10) == 0);
	LP_CHECK_EQ_U64(counts->gets, 5);
	LP_CHECK_EQ_U64(counts->heads, 1);
	lp_input_close(other);

	/* an object that is not the size it was opened with */
	other = f.store->ops->open_input_lazily(f.store, URI("ds/data/b.lance"), size + 5, &err);
	LP_CHECK(!lp_input_read(other, size - 10, buffer, 10, &err) && err.code == LP_ERR_IO);
	LP_CHECK_MSG(strstr(err.detail, "may have changed") != NULL, "%.300s", err.detail);
	lp_input_close(other);
	lp_input_close(input);

	LP_CHECK(f.store->ops->open_input(f.store, URI("ds/data"), &err) == NULL &&
			 err.code == LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(f.store->ops->open_input(f.store, URI("ds/none"), &err) == NULL &&
			 err.code == LP_ERR_NOT_FOUND && strstr(err.message, URI("ds/none")) != NULL);
	free(data);
	free(buffer);
	fixture_close(&f);
}

/* Read len bytes at offset of input and compare them with data. */
static bool
read_matches(LpInput *input, const uint8_t *data, uint64_t offset, size_t len, LpError *err)
{
	uint8_t    *buffer = malloc(len);
	bool		ok = lp_input_read(input, offset, buffer, len, err) &&
		memcmp(buffer, data + offset, len) == 0;

	free(buffer);
	return ok;
}

LP_TEST(s3_store_reads_ahead)
{
	Fixture		f;
	LpError		err;
	size_t		size = 24 << 20;
	uint8_t    *data = pattern(size, 7);
	LpInput    *input;
	const LpTestS3Counts *counts;
	LpByteRange first[] = {{1000000, 100}, {100, 1000}, {70000, 5000}};
	LpByteRange over_budget[] = {{2 << 20, 10 << 20}, {13 << 20, 10 << 20}};
	LpByteRange later[] = {{23 << 20, 10}};

	fixture_open(&f);
	lp_test_s3_put(f.server, "ds/data/a.lance", data, size);
	input = f.store->ops->open_input_lazily(f.store, URI("ds/data/a.lance"), size, &err);
	LP_CHECK_MSG(input != NULL, "%.300s", err.message);
	if (input == NULL)
		return;
	counts = lp_test_s3_counts(f.server);

	/* blocks 0 and 1 merge; the block of 1000000 is a second GET */
	LP_CHECK_MSG(lp_input_prefetch(input, first, 3, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(counts->transfers_started, 2);
	LP_CHECK_EQ_U64(lp_test_s3_open_transfers(f.server), 2);
	LP_CHECK_MSG(read_matches(input, data, 100, 1000, &err), "%.300s", err.message);
	LP_CHECK_MSG(read_matches(input, data, 70000, 5000, &err), "%.300s", err.message);
	LP_CHECK_MSG(read_matches(input, data, 1000000, 100, &err), "%.300s", err.message);
	LP_CHECK_MSG(read_matches(input, data, 131000, 72, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(counts->gets, 2);
	LP_CHECK(counts->progress_calls > 0);
	LP_CHECK_EQ_U64(lp_test_s3_open_transfers(f.server), 0);

	/* within the budget the first range is fetched, not the second */
	LP_CHECK_MSG(lp_input_prefetch(input, over_budget, 2, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(counts->transfers_started, 3);
	LP_CHECK_MSG(read_matches(input, data, 2 << 20, 10 << 20, &err), "%.300s", err.message);
	LP_CHECK_MSG(read_matches(input, data, 13 << 20, 10 << 20, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(counts->gets, 4);

	/* a third prefetch drops the first one's pieces: block 0 is fetched again */
	LP_CHECK_MSG(lp_input_prefetch(input, later, 1, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(counts->transfers_started, 4);
	LP_CHECK_MSG(read_matches(input, data, 100, 1000, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(counts->gets, 6);
	LP_CHECK_MSG(read_matches(input, data, 2 << 20, 1 << 20, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(counts->gets, 6);

	/* a range held already is not fetched again and stays held */
	LP_CHECK_MSG(lp_input_prefetch(input, over_budget, 1, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(counts->transfers_started, 4);

	/* a piece whose answer failed fails the read that needed it, once */
	lp_test_s3_server_fault(f.server, "GET", LP_TEST_S3_BAD_REQUEST, 1);
	LP_CHECK_MSG(lp_input_prefetch(input, first, 1, &err), "%.300s", err.message);
	LP_CHECK(!read_matches(input, data, 1000000, 100, &err) && err.code == LP_ERR_IO);
	LP_CHECK_MSG(read_matches(input, data, 1000000, 100, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(counts->gets, 7);
	LP_CHECK_MSG(read_matches(input, data, 3 << 20, 1 << 20, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(counts->gets, 7);

	/* close aborts what is still pending */
	LP_CHECK_MSG(lp_input_prefetch(input, later, 1, &err), "%.300s", err.message);
	LP_CHECK(lp_test_s3_open_transfers(f.server) > 0);
	lp_input_close(input);
	LP_CHECK_EQ_U64(lp_test_s3_open_transfers(f.server), 0);
	LP_CHECK(counts->transfers_aborted > 0);
	free(data);
	fixture_close(&f);
}

typedef struct Names
{
	char		text[1024];
	int			count;
} Names;

static bool
collect(void *arg, const char *name, LpError *err)
{
	Names	   *names = arg;

	(void) err;
	strcat(names->text, name);
	strcat(names->text, ";");
	names->count++;
	return true;
}

LP_TEST(s3_store_lists_and_stats_across_pages)
{
	Fixture		f;
	LpError		err;
	Names		names;
	LpStat		st;
	LpTreeRemoval removal;
	static const char *const keys[] = {
		"ds/_versions/1.manifest", "ds/_versions/2.manifest", "ds/data/a.lance", "ds/data/b.lance",
		"ds/data/c.lance", "ds/_transactions/x.txn", "ds/_latest.manifest", "dsx/other"
	};

	memset(&names, 0, sizeof(names));
	fixture_open(&f);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		lp_test_s3_put(f.server, keys[i], "abc", 3);
	/* the server answers two entries per page */
	LP_CHECK_MSG(f.store->ops->list(f.store, URI("ds"), collect, &names, &err), "%.300s", err.message);
	CHECK_TEXT(names.text, "_latest.manifest;_transactions;_versions;data;");
	memset(&names, 0, sizeof(names));
	LP_CHECK(f.store->ops->list(f.store, URI("ds/data/"), collect, &names, &err));
	CHECK_TEXT(names.text, "a.lance;b.lance;c.lance;");
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->lists, 2 + 2);
	LP_CHECK(!f.store->ops->list(f.store, URI("nothing"), collect, &names, &err) && err.code == LP_ERR_NOT_FOUND);

	LP_CHECK(f.store->ops->stat(f.store, URI("ds/data/a.lance"), false, &st, &err) &&
			 st.kind == LP_OBJECT_FILE && st.size == 3 && st.mtime == 1767323045);
	LP_CHECK(f.store->ops->stat(f.store, URI("ds/data"), false, &st, &err) && st.kind == LP_OBJECT_DIRECTORY);
	LP_CHECK(f.store->ops->stat(f.store, URI("ds/dat"), false, &st, &err) && st.kind == LP_OBJECT_ABSENT);
	LP_CHECK(f.store->ops->stat(f.store, "s3://" LP_TEST_S3_BUCKET, false, &st, &err) &&
			 st.kind == LP_OBJECT_DIRECTORY);

	/* remove_tree walks every page of its prefix and no other */
	LP_CHECK(f.store->ops->remove_tree(f.store, URI("ds"), "data", &removal, &err));
	LP_CHECK(removal.outcome == LP_TREE_REMOVED && removal.removed_entries == 3 && removal.removed_bytes == 9);
	LP_CHECK(f.store->ops->stat(f.store, URI("dsx/other"), false, &st, &err) && st.kind == LP_OBJECT_FILE);
	LP_CHECK(f.store->ops->stat(f.store, URI("ds/_versions/1.manifest"), false, &st, &err) &&
			 st.kind == LP_OBJECT_FILE);
	fixture_close(&f);
}

LP_TEST(s3_store_conditional_write_conflicts)
{
	Fixture		f;
	LpError		err;
	size_t		len;
	const uint8_t *stored;

	fixture_open(&f);
	LP_CHECK(f.store->ops->put_if_absent(f.store, URI("ds/_versions/1.manifest"), "first", 5, &err));
	LP_CHECK(!f.store->ops->put_if_absent(f.store, URI("ds/_versions/1.manifest"), "second", 6, &err));
	LP_CHECK_MSG(err.code == LP_ERR_ALREADY_EXISTS && strstr(err.message, "HTTP 412 PreconditionFailed") != NULL,
				 "%s: %.300s", lp_error_code_name(err.code), err.message);
	stored = lp_test_s3_get(f.server, "ds/_versions/1.manifest", &len);
	LP_CHECK(len == 5 && memcmp(stored, "first", 5) == 0);

	/* 409 ConditionalRequestConflict: retried; when it persists, a conflict (40001) */
	lp_test_s3_server_fault(f.server, "PUT", LP_TEST_S3_CONDITIONAL_CONFLICT, 1);
	LP_CHECK(f.store->ops->put_if_absent(f.store, URI("ds/_versions/2.manifest"), "x", 1, &err));
	lp_test_s3_server_fault(f.server, "PUT", LP_TEST_S3_CONDITIONAL_CONFLICT, 4);
	LP_CHECK(!f.store->ops->put_if_absent(f.store, URI("ds/_versions/3.manifest"), "x", 1, &err));
	LP_CHECK_MSG(err.code == LP_ERR_CONFLICT && strstr(err.message, "ConditionalRequestConflict") != NULL,
				 "%s: %.300s", lp_error_code_name(err.code), err.message);
	LP_CHECK(lp_test_s3_get(f.server, "ds/_versions/3.manifest", &len) == NULL);

	/* the answer to a stored PUT is lost: the retry meets its own object, which is no conflict */
	lp_test_s3_server_fault(f.server, "PUT", LP_TEST_S3_DROP_ANSWER, 1);
	LP_CHECK_MSG(f.store->ops->put_if_absent(f.store, URI("ds/_versions/4.manifest"), "mine", 4, &err),
				 "%s: %.300s", lp_error_code_name(err.code), err.message);
	stored = lp_test_s3_get(f.server, "ds/_versions/4.manifest", &len);
	LP_CHECK(len == 4 && memcmp(stored, "mine", 4) == 0);
	/* ... but other bytes there are another writer's */
	lp_test_s3_put(f.server, "ds/_versions/5.manifest", "theirs", 6);
	LP_CHECK(!f.store->ops->put_if_absent(f.store, URI("ds/_versions/5.manifest"), "mine!!", 6, &err) &&
			 err.code == LP_ERR_ALREADY_EXISTS);

	/* put replaces */
	LP_CHECK(f.store->ops->put(f.store, URI("ds/_versions/1.manifest"), "third", 5, &err));
	stored = lp_test_s3_get(f.server, "ds/_versions/1.manifest", &len);
	LP_CHECK(len == 5 && memcmp(stored, "third", 5) == 0);
	fixture_close(&f);
}

LP_TEST(s3_store_outputs_put_upload_and_copy)
{
	Fixture		f;
	LpError		err;
	size_t		source_len = 12 << 20;
	uint8_t    *data = pattern(source_len, 3);
	uint8_t    *expected = malloc(source_len + 1000);
	const uint8_t *stored;
	size_t		len;
	LpOutput   *output;
	LpInput    *input;
	const LpTestS3Counts *counts;

	fixture_open(&f);
	counts = lp_test_s3_counts(f.server);
	lp_test_s3_put(f.server, "parts/p.lance", data, source_len);

	/* small: one conditional PUT */
	output = f.store->ops->create_output(f.store, URI("out/small"), &err);
	LP_CHECK(output->ops->write_at(output, 0, "abc", 3, &err) && output->ops->write_at(output, 3, "de", 2, &err));
	LP_CHECK(!output->ops->write_at(output, 10, "x", 1, &err) && err.code == LP_ERR_UNSUPPORTED);
	LP_CHECK(output->ops->publish(output, &err));
	stored = lp_test_s3_get(f.server, "out/small", &len);
	LP_CHECK(len == 5 && memcmp(stored, "abcde", 5) == 0);
	LP_CHECK_EQ_U64(counts->puts, 1);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->part_uploads, 0);

	/* publication never replaces */
	output = f.store->ops->create_output(f.store, URI("out/small"), &err);
	LP_CHECK(output->ops->write_at(output, 0, "zz", 2, &err));
	LP_CHECK(!output->ops->publish(output, &err) && err.code == LP_ERR_ALREADY_EXISTS);
	stored = lp_test_s3_get(f.server, "out/small", &len);
	LP_CHECK(len == 5 && memcmp(stored, "abcde", 5) == 0);

	/* 64 bytes written, the part's 12 MiB copied in 1 MiB steps, a tail written */
	lp_test_s3_reset_counts(f.server);
	input = f.store->ops->open_input(f.store, URI("parts/p.lance"), &err);
	output = f.store->ops->create_output(f.store, URI("out/assembled"), &err);
	LP_CHECK(input && output);
	LP_CHECK(output->ops->write_at(output, 0, data + 7, 64, &err));
	memcpy(expected, data + 7, 64);
	for (size_t off = 0; off < source_len; off += 1 << 20)
		LP_CHECK_MSG(output->ops->copy_from(output, 64 + off, input, off, 1 << 20, &err),
					 "copy: %.300s", err.message);
	memcpy(expected + 64, data, source_len);
	LP_CHECK(output->ops->write_at(output, 64 + source_len, "tail", 4, &err));
	memcpy(expected + 64 + source_len, "tail", 4);
	LP_CHECK_MSG(output->ops->publish(output, &err), "publish: %.300s", err.message);
	stored = lp_test_s3_get(f.server, "out/assembled", &len);
	LP_CHECK_EQ_U64(len, 64 + source_len + 4);
	LP_CHECK(stored && memcmp(stored, expected, len) == 0);
	/* the first 5 MiB joined the 64 bytes (five 1 MiB GETs), the other 7 MiB were one copied part */
	LP_CHECK_EQ_U64(counts->gets, 5);
	LP_CHECK_EQ_U64(counts->part_copies, 1);
	LP_CHECK_EQ_U64(counts->part_uploads, 2);
	LP_CHECK_EQ_U64(counts->completes, 1);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 0);

	/* a whole object under 5 MiB copied alone: one CopyObject, nothing read or uploaded */
	{
		LpInput    *small;

		lp_test_s3_put(f.server, "parts/small", data, 3000);
		small = f.store->ops->open_input(f.store, URI("parts/small"), &err);
		LP_CHECK(small != NULL);
		lp_test_s3_reset_counts(f.server);
		output = f.store->ops->create_output(f.store, URI("out/copied"), &err);
		LP_CHECK(output->ops->copy_from(output, 0, small, 0, 3000, &err));
		LP_CHECK_MSG(output->ops->publish(output, &err), "publish: %.300s", err.message);
		stored = lp_test_s3_get(f.server, "out/copied", &len);
		LP_CHECK(len == 3000 && memcmp(stored, data, len) == 0);
		LP_CHECK_EQ_U64(counts->object_copies, 1);
		LP_CHECK_EQ_U64(counts->gets, 0);
		LP_CHECK_EQ_U64(counts->puts, 0);
		LP_CHECK_EQ_U64(counts->part_copies, 0);

		/* never over an existing object */
		output = f.store->ops->create_output(f.store, URI("out/copied"), &err);
		LP_CHECK(output->ops->copy_from(output, 0, small, 0, 3000, &err));
		LP_CHECK(!output->ops->publish(output, &err) && err.code == LP_ERR_ALREADY_EXISTS);
		LP_CHECK_EQ_U64(counts->object_copies, 1);

		/* a range of it is no whole object: one UploadPartCopy part */
		output = f.store->ops->create_output(f.store, URI("out/range"), &err);
		LP_CHECK(output->ops->copy_from(output, 0, small, 100, 2000, &err));
		LP_CHECK_MSG(output->ops->publish(output, &err), "publish: %.300s", err.message);
		stored = lp_test_s3_get(f.server, "out/range", &len);
		LP_CHECK(len == 2000 && memcmp(stored, data + 100, len) == 0);
		LP_CHECK_EQ_U64(counts->object_copies, 1);
		LP_CHECK_EQ_U64(counts->part_copies, 1);
		LP_CHECK_EQ_U64(counts->gets, 0);
		lp_input_close(small);
	}

	/* an input of another store is refused before anything is written */
	{
		LpInput    *memory = lp_memory_input_open("mem", data, 100);

		output = f.store->ops->create_output(f.store, URI("out/mixed"), &err);
		LP_CHECK(!output->ops->copy_from(output, 0, memory, 0, 100, &err) && err.code == LP_ERR_UNSUPPORTED);
		output->ops->abort(output);
		lp_input_close(memory);
	}
	lp_input_close(input);
	free(data);
	free(expected);
	fixture_close(&f);
}

LP_TEST(s3_store_output_failures_abort_the_upload)
{
	Fixture		f;
	LpError		err;
	size_t		chunk = 1 << 20;
	uint8_t    *data = pattern(chunk, 4);
	LpOutput   *output;
	size_t		len;
	bool		ok = true;

	/*
	 * The second part fails for good: the upload is aborted.  A full
	 * buffer (13 MiB) uploads 8 MiB, so parts go out at the 13th and the
	 * 21st write.
	 */
	fixture_open(&f);
	output = f.store->ops->create_output(f.store, URI("out/big"), &err);
	for (size_t i = 0; ok && i < 24; i++)
	{
		if (i == 14)
			lp_test_s3_server_fault(f.server, "PUT", LP_TEST_S3_BAD_REQUEST, 1);
		ok = output->ops->write_at(output, i * chunk, data, chunk, &err);
	}
	LP_CHECK_MSG(!ok && strstr(err.message, "HTTP 400 InvalidRequest") != NULL, "%.300s", err.message);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 0);
	output->ops->abort(output);
	LP_CHECK(lp_test_s3_get(f.server, "out/big", &len) == NULL);
	fixture_close(&f);

	/* aborting an output with parts uploaded aborts its upload */
	fixture_open(&f);
	output = f.store->ops->create_output(f.store, URI("out/big"), &err);
	for (size_t i = 0; i < 14; i++)
		LP_CHECK(output->ops->write_at(output, i * chunk, data, chunk, &err));
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 1);
	output->ops->abort(output);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 0);
	fixture_close(&f);

	/* a cancel while publishing: the upload is aborted although the cancel is pending */
	fixture_open(&f);
	lp_set_cancel_check(lp_test_s3_cancel_check);
	output = f.store->ops->create_output(f.store, URI("out/big"), &err);
	for (size_t i = 0; i < 14; i++)
		LP_CHECK(output->ops->write_at(output, i * chunk, data, chunk, &err));
	lp_test_s3_server_fault(f.server, "PUT", LP_TEST_S3_CANCEL, 1);
	LP_CHECK(!output->ops->publish(output, &err) && err.code == LP_ERR_CANCELED);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->aborts_while_canceled, 1);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 0);
	LP_CHECK(lp_test_s3_get(f.server, "out/big", &len) == NULL);
	fixture_close(&f);
	free(data);
}

/* LpUploadCallback: "path upload_id initiated;" per upload, into a text */
static bool
note_upload(void *arg, const char *path, const char *upload_id, int64_t initiated, LpError *err)
{
	char	   *text = arg;
	size_t		used = strlen(text);

	(void) err;
	snprintf(text + used, 1024 - used, "%s %s %lld;", path, upload_id, (long long) initiated);
	return true;
}

/*
 * Start an output of uri whose CreateMultipartUpload answer is lost, then
 * abort it: the upload it retried into is aborted, the one whose id it never
 * received stays on the server.
 */
static void
leave_lost_upload(Fixture *f, const char *uri)
{
	size_t		chunk = 1 << 20;
	uint8_t    *data = pattern(chunk, 5);
	LpError		err;
	LpOutput   *output = f->store->ops->create_output(f->store, uri, &err);

	lp_test_s3_server_fault(f->server, "POST", LP_TEST_S3_DROP_ANSWER, 1);
	for (size_t i = 0; i < 14; i++)
		LP_CHECK(output->ops->write_at(output, i * chunk, data, chunk, &err));
	output->ops->abort(output);
	free(data);
}

LP_TEST(s3_store_lists_and_aborts_uploads_left_behind)
{
	Fixture		f;
	LpError		err;
	char		listed[1024] = "";

	fixture_open(&f);
	leave_lost_upload(&f, URI("ds/data/a.lance"));
	leave_lost_upload(&f, URI("ds/data/b.lance"));
	leave_lost_upload(&f, URI("ds/_versions/c"));
	leave_lost_upload(&f, URI("dsx/d"));
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 4);

	/* every page (2 uploads each), only under the directory; a retried listing */
	lp_test_s3_server_fault(f.server, "GET", LP_TEST_S3_SLOW_DOWN, 1);
	LP_CHECK_MSG(f.store->ops->list_uploads(f.store, URI("ds"), note_upload, listed, &err),
				 "%.300s", err.message);
	CHECK_TEXT(listed, URI("ds/_versions/c") " upload-5 1767323045;"
			   URI("ds/data/a.lance") " upload-1 1767323045;"
			   URI("ds/data/b.lance") " upload-3 1767323045;");

	/* aborted; again, it is gone: not an error */
	LP_CHECK(f.store->ops->abort_upload(f.store, URI("ds/data/a.lance"), "upload-1", &err));
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 3);
	LP_CHECK(f.store->ops->abort_upload(f.store, URI("ds/data/a.lance"), "upload-1", &err));

	/* a server that keeps failing: the error after the retries */
	lp_test_s3_server_fault(f.server, "DELETE", LP_TEST_S3_INTERNAL_ERROR, 4);
	LP_CHECK(!f.store->ops->abort_upload(f.store, URI("ds/data/b.lance"), "upload-3", &err));
	LP_CHECK_MSG(err.code == LP_ERR_IO && strstr(err.message, "abort the multipart upload of") != NULL &&
				 strstr(err.message, "InternalError") != NULL, "%.300s", err.message);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 3);

	listed[0] = '\0';
	LP_CHECK(f.store->ops->list_uploads(f.store, URI("dsx"), note_upload, listed, &err));
	CHECK_TEXT(listed, URI("dsx/d") " upload-7 1767323045;");
	fixture_close(&f);
}

/* The size of an upload left behind is the sum of its parts, over every page of ListParts. */
LP_TEST(s3_store_sizes_uploads_left_behind)
{
	Fixture		f;
	LpError		err;
	size_t		chunk = 1 << 20;
	uint8_t    *data = pattern(chunk, 7);
	uint64_t	bytes = 1;
	LpOutput   *output;

	fixture_open(&f);
	output = f.store->ops->create_output(f.store, URI("ds/data/e.lance"), &err);
	LP_CHECK(output != NULL);
	if (output == NULL)
	{
		free(data);
		fixture_close(&f);
		return;
	}
	/* 25 MiB: parts of LP_S3_UPLOAD_PART_SIZE sent, the rest still buffered */
	for (size_t i = 0; i < 25; i++)
		LP_CHECK(output->ops->write_at(output, i * chunk, data, chunk, &err));
	/* its abort fails after the retries: the upload and its parts stay */
	lp_test_s3_server_fault(f.server, "DELETE", LP_TEST_S3_INTERNAL_ERROR, 4);
	output->ops->abort(output);
	free(data);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 1);

	LP_CHECK_MSG(f.store->ops->upload_size(f.store, URI("ds/data/e.lance"), "upload-1", &bytes, &err),
				 "%.300s", err.message);
	LP_CHECK(bytes >= 2 * LP_S3_UPLOAD_PART_SIZE);
	LP_CHECK_EQ_U64(bytes, lp_test_s3_open_upload_bytes(f.server));
	LP_CHECK(f.store->ops->abort_upload(f.store, URI("ds/data/e.lance"), "upload-1", &err));
	/* gone: nothing stored */
	bytes = 1;
	LP_CHECK(f.store->ops->upload_size(f.store, URI("ds/data/e.lance"), "upload-1", &bytes, &err));
	LP_CHECK_EQ_U64(bytes, 0);
	fixture_close(&f);
}
