/*
 * lp_blob.c - Blob v2 blob-id leases claimed with put_if_absent.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "base/lp_path.h"
#include "dataset/lp_blob.h"

#define SEQUENCE_DIGITS 20
/* "<u32> <u32> <claimer>\n" at most */
#define RECORD_MAX (2 * 10 + LP_BLOB_CLAIMER_LEN + 3)

/* Whether name is a lease record's name; its sequence number in *sequence. */
static bool
record_name_parse(const char *name, uint64_t *sequence)
{
	uint64_t	value = 0;

	if (strlen(name) != SEQUENCE_DIGITS)
		return false;
	for (int i = 0; i < SEQUENCE_DIGITS; i++)
	{
		if (name[i] < '0' || name[i] > '9')
			return false;
		if (value > (UINT64_MAX - (uint64_t) (name[i] - '0')) / 10)
			return false;
		value = value * 10 + (uint64_t) (name[i] - '0');
	}
	*sequence = value;
	return value >= 1;
}

typedef struct SequenceList
{
	uint64_t   *items;
	uint64_t	count;
	uint64_t	capacity;
} SequenceList;

static bool
collect_record(void *arg, const char *entry_name, LpError *err)
{
	SequenceList *list = arg;
	uint64_t	sequence;

	if (!record_name_parse(entry_name, &sequence))
		return true;			/* a store's temporary file, or not ours */
	if (list->count == list->capacity)
	{
		uint64_t	capacity = list->capacity ? list->capacity * 2 : 16;
		uint64_t   *items = lp_alloc_array(capacity, sizeof(uint64_t));

		if (items == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory listing blob leases");
		if (list->count > 0)
			memcpy(items, list->items, list->count * sizeof(uint64_t));
		lp_free(list->items);
		list->items = items;
		list->capacity = capacity;
	}
	list->items[list->count++] = sequence;
	return true;
}

static int
compare_sequences(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* The sequence numbers of lease_dir's records, ascending; a missing directory has none. */
static bool
list_records(LpStore *store, const char *lease_dir, SequenceList *list, LpError *err)
{
	memset(list, 0, sizeof(*list));
	if (!store->ops->list(store, lease_dir, collect_record, list, err))
	{
		if (err->code != LP_ERR_NOT_FOUND)
		{
			lp_free(list->items);
			return false;
		}
		lp_error_clear(err);
		list->count = 0;
	}
	if (list->count > 1)
		qsort(list->items, list->count, sizeof(uint64_t), compare_sequences);
	return true;
}

/*
 * Whether the records are numbered 1, 2, ..., n, as claims create them: a
 * claim continues the last, so a gap, or a number no claim can follow
 * (u64::MAX), would have it write a record no reader takes in, or retry
 * one that exists forever.
 */
static bool
records_numbered(const SequenceList *list, const char *lease_dir, LpError *err)
{
	for (uint64_t i = 0; i < list->count; i++)
		if (list->items[i] != i + 1)
			return lp_fail(err, LP_ERR_CORRUPT,
						   "blob lease records of \"%s\" do not form one sequence from id 1 (record %" PRIu64 ")",
						   lease_dir, list->items[i]);
	return true;
}

static char *
record_path(const char *lease_dir, uint64_t sequence)
{
	char		name[SEQUENCE_DIGITS + 1];

	snprintf(name, sizeof(name), "%020" PRIu64, sequence);
	return lp_path_join(lease_dir, name);
}

static bool
parse_u32(const char **cursor, char terminator, uint32_t *value)
{
	const char *p = *cursor;
	uint64_t	v = 0;

	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++)
	{
		v = v * 10 + (uint64_t) (*p - '0');
		if (v > UINT32_MAX)
			return false;
	}
	if (*p != terminator)
		return false;
	*value = (uint32_t) v;
	*cursor = p + 1;
	return true;
}

/* Read record sequence of lease_dir into *lease, checked to be a valid lease. */
static bool
read_record(LpStore *store, const char *lease_dir, uint64_t sequence,
			LpBlobLease *lease, LpError *err)
{
	char	   *path = record_path(lease_dir, sequence);
	char		text[RECORD_MAX + 1];
	const char *cursor = text;
	LpInput    *input;
	uint64_t	size;
	bool		ok;

	if (path == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading a blob lease");
	input = store->ops->open_input(store, path, err);
	if (input == NULL)
	{
		lp_free(path);
		return false;
	}
	size = input->size;
	if (size == 0 || size > RECORD_MAX)
		ok = lp_fail(err, LP_ERR_CORRUPT, "blob lease record \"%s\" has %" PRIu64 " bytes",
					 path, size);
	else
		ok = lp_input_read(input, 0, text, (size_t) size, err);
	input->ops->close(input);
	if (ok)
	{
		text[size] = '\0';
		if (!parse_u32(&cursor, ' ', &lease->start) || !parse_u32(&cursor, ' ', &lease->end) ||
			!lp_blob_claimer_valid(cursor, LP_BLOB_CLAIMER_LEN) ||
			strcmp(cursor + LP_BLOB_CLAIMER_LEN, "\n") != 0 ||
			lease->start == 0 || lease->start >= lease->end || lease->end > LP_BLOB_ID_LIMIT)
			ok = lp_fail(err, LP_ERR_CORRUPT, "blob lease record \"%s\" is not a valid lease", path);
	}
	lp_free(path);
	return ok;
}

bool
lp_blob_claimer_valid(const char *claimer, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!((claimer[i] >= '0' && claimer[i] <= '9') || (claimer[i] >= 'a' && claimer[i] <= 'f')))
			return false;
	return true;
}

bool
lp_blob_leases_read(LpStore *store, const char *lease_dir, LpBlobLease **leases,
					uint64_t *count, LpError *err)
{
	SequenceList list;
	LpBlobLease *result = NULL;

	lp_error_clear(err);
	*leases = NULL;
	*count = 0;
	if (!list_records(store, lease_dir, &list, err))
		return false;
	if (!records_numbered(&list, lease_dir, err))
	{
		lp_free(list.items);
		return false;
	}
	if (list.count > 0)
	{
		result = lp_alloc(list.count * sizeof(LpBlobLease));
		if (result == NULL)
		{
			lp_free(list.items);
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading blob leases");
		}
	}
	for (uint64_t i = 0; i < list.count; i++)
	{
		/* each record starts where the one before ends */
		uint32_t	expected_start = i == 0 ? 1 : result[i - 1].end;

		if (!read_record(store, lease_dir, list.items[i], &result[i], err) ||
			result[i].start != expected_start)
		{
			if (err->code == LP_OK)
				lp_fail(err, LP_ERR_CORRUPT,
						"blob lease records of \"%s\" do not form one sequence from id 1 (record %" PRIu64 ")",
						lease_dir, list.items[i]);
			lp_free(result);
			lp_free(list.items);
			return false;
		}
	}
	lp_free(list.items);
	*leases = result;
	*count = list.count;
	return true;
}

bool
lp_blob_lease_claim(LpStore *store, const char *lease_dir, uint32_t count,
					const char *claimer, LpBlobLease *lease, LpError *err)
{
	lp_error_clear(err);
	if (count == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "a blob id lease must hold at least one id");
	if (strlen(claimer) != LP_BLOB_CLAIMER_LEN || !lp_blob_claimer_valid(claimer, LP_BLOB_CLAIMER_LEN))
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "a blob lease claimer is %d lowercase hex digits",
					   LP_BLOB_CLAIMER_LEN);

	/* every lost race means another claimer progressed; stop only on cancel */
	for (;;)
	{
		SequenceList list;
		uint64_t	last;
		LpBlobLease previous = {0, 1};
		char		text[RECORD_MAX + 1];
		char	   *path;
		int			len;
		bool		created;

		if (lp_check_cancel(err))
			return false;
		if (!list_records(store, lease_dir, &list, err))
			return false;
		if (!records_numbered(&list, lease_dir, err))
		{
			lp_free(list.items);
			return false;
		}
		last = list.count;
		lp_free(list.items);
		if (last > 0 && !read_record(store, lease_dir, last, &previous, err))
			return false;
		if ((uint64_t) previous.end + count > LP_BLOB_ID_LIMIT)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "a lease of %" PRIu32 " blob ids from id %" PRIu32 " would exhaust the blob ids of \"%s\"",
						   count, previous.end, lease_dir);
		lease->start = previous.end;
		lease->end = previous.end + count;
		len = snprintf(text, sizeof(text), "%" PRIu32 " %" PRIu32 " %s\n", lease->start, lease->end,
					   claimer);
		path = record_path(lease_dir, last + 1);
		if (path == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory claiming a blob lease");
		created = store->ops->put_if_absent(store, path, text, (size_t) len, err);
		lp_free(path);
		if (created)
			return true;
		if (err->code != LP_ERR_ALREADY_EXISTS)
			return false;
		lp_error_clear(err);
	}
}

bool
lp_blob_lease_holds(const LpBlobLease *leases, uint64_t count, uint32_t blob_id)
{
	for (uint64_t i = 0; i < count; i++)
		if (blob_id >= leases[i].start && blob_id < leases[i].end)
			return true;
	return false;
}
