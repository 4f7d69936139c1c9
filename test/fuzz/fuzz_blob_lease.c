/*
 * fuzz_blob_lease.c - libFuzzer target for Blob v2 blob-id lease records
 * (<target>/blob_leases/<20-digit sequence number>, "<start> <end>
 * <claimer>\n"), read as part writers and the part check read them
 * (lp_blob_leases_read) and extended as lease_blob_ids extends them
 * (lp_blob_lease_claim), over a lease directory held in memory.  The input
 * is records, each a name byte (0-239: record number byte + 1; above: a
 * name that is not a record's, or the largest sequence numbers), a length
 * byte and that many content bytes; the first byte is the size of the
 * lease to claim.  Whenever the directory reads, a claim succeeds and
 * continues it: read again, the directory holds the same leases and the
 * new one after them, starting where the last ended; a claim never hangs
 * on a directory it cannot read.  Seeds: small directories in
 * test/fuzz/corpus/fuzz_blob_lease.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lp_fuzz.h"
#include "base/lp_alloc.h"
#include "dataset/lp_blob.h"
#include "io/lp_storage.h"

#define LEASE_DIR "/t/blob_leases"
#define MAX_ENTRIES 64
/* put_if_absent calls one claim may make before it counts as hanging */
#define MAX_PUTS 1000

typedef struct Entry
{
	char		name[32];
	uint8_t		data[256];
	size_t		len;
} Entry;

typedef struct MemoryStore
{
	LpStore		base;
	Entry		entries[MAX_ENTRIES + 1];
	int			count;
	int			puts;
} MemoryStore;

static Entry *
find(MemoryStore *store, const char *path)
{
	if (strncmp(path, LEASE_DIR "/", sizeof(LEASE_DIR)) != 0)
		return NULL;
	for (int i = 0; i < store->count; i++)
		if (strcmp(store->entries[i].name, path + sizeof(LEASE_DIR)) == 0)
			return &store->entries[i];
	return NULL;
}

static bool
memory_list(LpStore *base, const char *directory, LpListCallback callback, void *arg, LpError *err)
{
	MemoryStore *store = (MemoryStore *) base;

	if (strcmp(directory, LEASE_DIR) != 0)
		abort();
	if (store->count == 0)
		return lp_fail(err, LP_ERR_NOT_FOUND, "no directory \"%s\"", directory);
	for (int i = 0; i < store->count; i++)
		if (!callback(arg, store->entries[i].name, err))
			return false;
	return true;
}

static LpInput *
memory_open_input(LpStore *base, const char *path, LpError *err)
{
	Entry	   *entry = find((MemoryStore *) base, path);
	LpInput    *input;

	if (entry == NULL)
	{
		lp_fail(err, LP_ERR_NOT_FOUND, "no file \"%s\"", path);
		return NULL;
	}
	input = lp_memory_input_open(path, entry->data, entry->len);
	if (input == NULL)
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	return input;
}

static bool
memory_put_if_absent(LpStore *base, const char *path, const void *data, size_t len, LpError *err)
{
	MemoryStore *store = (MemoryStore *) base;
	Entry	   *entry;

	if (++store->puts > MAX_PUTS)
		abort();
	if (find(store, path) != NULL)
		return lp_fail(err, LP_ERR_ALREADY_EXISTS, "\"%s\" exists", path);
	if (store->count > MAX_ENTRIES || len > sizeof(entry->data) ||
		strlen(path) - sizeof(LEASE_DIR) >= sizeof(entry->name))
		abort();
	entry = &store->entries[store->count++];
	snprintf(entry->name, sizeof(entry->name), "%s", path + sizeof(LEASE_DIR));
	memcpy(entry->data, data, len);
	entry->len = len;
	return true;
}

static const LpStoreOps memory_ops = {
	.open_input = memory_open_input,
	.list = memory_list,
	.put_if_absent = memory_put_if_absent
};

/* The name of a record from its name byte. */
static void
record_name(uint8_t byte, char name[32])
{
	static const char *const odd[] = {
		"00000000000000000000", "18446744073709551615", "18446744073709551616",
		"99999999999999999999", "000000000000000000001", "0000000000000000001",
		"0000000000000000000a", "00000000000000000001.tmp", ".00000000000000000001"
	};

	if (byte < 240)
		snprintf(name, 32, "%020u", (unsigned) byte + 1);
	else
		snprintf(name, 32, "%s", odd[(byte - 240) % (sizeof(odd) / sizeof(odd[0]))]);
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static MemoryStore store;
	LpBlobLease *before;
	LpBlobLease *after;
	uint64_t	num_before;
	uint64_t	num_after;
	LpBlobLease lease;
	uint32_t	count;
	bool		read_before;
	LpError		err;

	if (size < 1)
		return 0;
	lp_fuzz_use_bounded_allocator();
	memset(&store, 0, sizeof(store));
	store.base.ops = &memory_ops;
	count = data[0] == 255 ? UINT32_MAX - 1 : data[0];
	for (size_t pos = 1; pos + 2 <= size && store.count < MAX_ENTRIES;)
	{
		Entry	   *entry = &store.entries[store.count];
		size_t		len = data[pos + 1];

		record_name(data[pos], entry->name);
		pos += 2;
		if (len > size - pos)
			len = size - pos;
		memcpy(entry->data, data + pos, len);
		entry->len = len;
		pos += len;
		for (int i = 0; i < store.count && entry != NULL; i++)
			if (strcmp(store.entries[i].name, entry->name) == 0)
				entry = NULL;	/* a name given twice: the first stays */
		if (entry == NULL)
			continue;
		store.count++;
	}

	read_before = lp_blob_leases_read(&store.base, LEASE_DIR, &before, &num_before, &err);
	if (!read_before && err.code != LP_ERR_CORRUPT && err.code != LP_ERR_NO_MEMORY)
		abort();
	if (!lp_blob_lease_claim(&store.base, LEASE_DIR, count, "0123456789abcdef0123456789abcdef",
							 &lease, &err))
	{
		if (read_before && err.code != LP_ERR_INVALID_ARGUMENT && err.code != LP_ERR_NO_MEMORY)
			abort();
		if (read_before)
			lp_free(before);
		return 0;
	}
	if (lease.end - lease.start != count || lease.start == 0)
		abort();
	if (read_before)
	{
		if (!lp_blob_leases_read(&store.base, LEASE_DIR, &after, &num_after, &err) ||
			num_after != num_before + 1 ||
			lease.start != (num_before > 0 ? before[num_before - 1].end : 1) ||
			after[num_before].start != lease.start || after[num_before].end != lease.end ||
			(num_before > 0 && memcmp(before, after, num_before * sizeof(LpBlobLease)) != 0))
			abort();
		lp_free(after);
		lp_free(before);
	}
	return 0;
}
