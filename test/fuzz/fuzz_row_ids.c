/*
 * fuzz_row_ids.c - libFuzzer target for the stable row ids and row versions
 * of a fragment (Lance's RowIdSequence and RowVersionSequence in a
 * manifest), read as compaction and UPDATE carry them (lp_row_meta_append).
 * The first two input bytes are the fragment's physical rows (below 2^16),
 * the next two the length of the row-id sequence; the rest is the row-id
 * sequence, then the created-at version sequence.  A fragment read has
 * exactly its rows; what lp_row_meta_pack writes of it reads back as the
 * same values.  Seeds: test/fuzz/corpus/fuzz_row_ids.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lp_fuzz.h"
#include "dataset/lp_manifest_internal.h"
#include "dataset/lp_row_ids.h"

#define HEADER_BYTES 4

/* A manifest of one fragment with these sequences (not owned). */
typedef struct OneFragment
{
	Lance__Table__DataFragment fragment;
	Lance__Table__DataFragment *fragments[1];
	Lance__Table__Manifest proto;
	LpManifest	manifest;
} OneFragment;

static LpManifest *
one_fragment(OneFragment *m, uint64_t rows, const uint8_t *ids, size_t ids_len,
			 const uint8_t *created, size_t created_len)
{
	memset(m, 0, sizeof(*m));
	lance__table__data_fragment__init(&m->fragment);
	m->fragment.physical_rows = rows;
	m->fragment.row_id_sequence_case = LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS;
	m->fragment.inline_row_ids.data = (uint8_t *) ids;
	m->fragment.inline_row_ids.len = ids_len;
	if (created != NULL)
	{
		m->fragment.created_at_version_sequence_case =
			LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS;
		m->fragment.inline_created_at_versions.data = (uint8_t *) created;
		m->fragment.inline_created_at_versions.len = created_len;
	}
	m->fragments[0] = &m->fragment;
	lance__table__manifest__init(&m->proto);
	m->proto.fragments = m->fragments;
	m->proto.n_fragments = 1;
	m->manifest.name = (char *) "fuzz.manifest";
	m->manifest.proto = &m->proto;
	return &m->manifest;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs are maximal, so the same values always make the same runs. */
static bool
same_runs(const LpValueRuns *a, const LpValueRuns *b)
{
	return a->n == b->n && (a->n == 0 || memcmp(a->runs, b->runs, a->n * sizeof(LpValueRun)) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t	rows;
	size_t		ids_len;
	OneFragment first;
	OneFragment second;
	LpRowMeta	meta;
	LpRowMeta	again;
	uint8_t    *ids = NULL;
	uint8_t    *created = NULL;
	uint8_t    *updated = NULL;
	size_t		ids_out;
	size_t		created_out;
	size_t		updated_out;
	LpError		err;

	if (size < HEADER_BYTES)
		return 0;
	lp_fuzz_use_bounded_allocator();
	rows = data[0] | ((uint64_t) data[1] << 8);
	ids_len = data[2] | ((size_t) data[3] << 8);
	if (ids_len > size - HEADER_BYTES)
		ids_len = size - HEADER_BYTES;
	lp_row_meta_init(&meta, rows);
	if (!lp_row_meta_append(&meta, one_fragment(&first, rows, data + HEADER_BYTES, ids_len,
												data + HEADER_BYTES + ids_len,
												size - HEADER_BYTES - ids_len),
							0, NULL, &err))
	{
		if (err.code != LP_ERR_CORRUPT && err.code != LP_ERR_NO_MEMORY)
			abort();
		lp_row_meta_free(&meta);
		return 0;
	}
	if (meta.rows != rows)
		abort();
	if (!lp_row_meta_pack(&meta, &ids, &ids_out, &created, &created_out, &updated, &updated_out, &err))
	{
		if (err.code != LP_ERR_NO_MEMORY)
			abort();
		lp_row_meta_free(&meta);
		return 0;
	}
	/* what was written reads back as the same values */
	lp_row_meta_init(&again, rows);
	if (!lp_row_meta_append(&again, one_fragment(&second, rows, ids, ids_out, created, created_out),
							0, NULL, &err))
	{
		if (err.code != LP_ERR_NO_MEMORY)
			abort();
	}
	else if (again.rows != rows || !same_runs(&again.row_ids, &meta.row_ids) ||
			 !same_runs(&again.created_at, &meta.created_at))
		abort();
	lp_row_meta_free(&again);
	lp_row_meta_free(&meta);
	lp_free(ids);
	lp_free(created);
	lp_free(updated);
	return 0;
}
