/*
 * fuzz_manifest.c - libFuzzer target for manifest files (_versions/
 * <version>.manifest), parsed as every reader of a dataset parses them
 * (lp_manifest_read).  A parsed manifest is then read the way the server
 * reads one: flags, schema, format, tag, every fragment with its data files,
 * deletion file and base, whether indexes cover it, the index entries, and the inline
 * transaction checked against a commit as a writer that lost a race checks
 * it; every path it names was checked (relative data files, absolute or
 * URI bases).  Written again (lp_manifest_serialize, as each commit
 * writes the next version) it must parse again to the same version and
 * fragments.  Seeds: the manifests of the reference datasets
 * (bench/fuzz.sh) and a few in test/fuzz/corpus/fuzz_manifest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lp_fuzz.h"
#include "base/lp_alloc.h"
#include "dataset/lp_commit.h"
#include "dataset/lp_fragment.h"
#include "dataset/lp_manifest_internal.h"
#include "format/lp_schema.h"
#include "io/lp_storage.h"

/* Everything a reader of the dataset asks the manifest; fragments counted into *files. */
static void
read_manifest(const LpManifest *manifest, size_t *files)
{
	LpSchema	schema;
	LpFileVersion version;
	LpError		err;
	char	   *tag;
	LpIndexEntry *indexes;
	size_t		num_indexes;

	(void) lp_manifest_check_readable(manifest, "fuzz", &err);
	(void) lp_manifest_check_writable(manifest, "fuzz", &err);
	if (lp_manifest_schema(manifest, &schema, &err))
		lp_schema_free(&schema);
	(void) lp_manifest_data_format(manifest);
	(void) lp_manifest_data_version(manifest, &version);
	(void) lp_manifest_is_legacy(manifest);
	(void) lp_manifest_stable_row_ids(manifest);
	(void) lp_manifest_fragment_reuse(manifest);
	if (lp_manifest_index_entries(manifest, &indexes, &num_indexes, &err))
		lp_manifest_index_entries_free(indexes, num_indexes);
	tag = lp_manifest_tag(manifest);
	lp_free(tag);
	*files = 0;
	for (size_t i = 0; i < lp_manifest_num_fragments(manifest); i++)
	{
		LpFragment	fragment;
		LpBaseLocation base;
		bool		indexed;

		lp_manifest_fragment(manifest, i, &fragment);
		if (!lp_manifest_has_fragment(manifest, fragment.id))
			abort();
		(void) lp_manifest_fragment_indexed(manifest, fragment.id, NULL, 0, &indexed, &err);
		if (fragment.has_deletion_file)
			(void) lp_manifest_base(manifest, fragment.deletion_file.has_base_id,
									fragment.deletion_file.base_id, "/fuzz", &base, &err);
		for (size_t f = 0; f < fragment.num_files; f++)
		{
			LpDataFileRef file;

			lp_fragment_data_file(manifest, &fragment, f, &file);
			if (!lp_manifest_relative_path_valid(file.path))
				abort();
			if (lp_manifest_base(manifest, file.has_base_id, file.base_id, "/fuzz", &base, &err) &&
				base.path != NULL && base.path[0] != '/' && strstr(base.path, "://") == NULL)
				abort();
			(void) lp_manifest_references_file(manifest, file.has_base_id, file.base_id, file.path);
			(void) lp_data_file_has_version(&file, LP_FILE_VERSION_2_1);
		}
		*files += fragment.num_files;
	}
}

/* The inline transaction, as a commit that lost version N + 1 to it reads it. */
static void
check_transaction(const LpManifest *manifest)
{
	uint64_t	fragment_id = lp_manifest_num_fragments(manifest) > 0 ?
		manifest->proto->fragments[0]->id : 0;
	LpCommitRequest request;
	LpError		err;

	if (manifest->transaction == NULL)
		return;
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_REPLACE;
	request.fragment_id = fragment_id;
	if (!lp_transaction_check_conflict(&request, manifest->transaction, manifest->transaction_len,
									   lp_manifest_version(manifest), &err) &&
		err.code != LP_ERR_CONFLICT && err.code != LP_ERR_CORRUPT && err.code != LP_ERR_NO_MEMORY)
		abort();
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	LpInput    *input;
	LpManifest *manifest;
	LpManifest *again;
	uint8_t    *bytes;
	size_t		len;
	size_t		files;
	size_t		files_again;
	LpError		err;

	lp_fuzz_use_bounded_allocator();
	input = lp_memory_input_open("_versions/1.manifest", data, size);
	if (input == NULL)
		return 0;
	manifest = lp_manifest_read(input, &err);
	lp_input_close(input);
	if (manifest == NULL)
	{
		if (err.code != LP_ERR_CORRUPT && err.code != LP_ERR_NO_MEMORY)
			abort();
		return 0;
	}
	read_manifest(manifest, &files);
	check_transaction(manifest);
	if (lp_manifest_serialize(manifest->proto, manifest->index_section, manifest->index_section_len,
							  manifest->transaction, manifest->transaction_len, &bytes, &len, &err))
	{
		again = lp_manifest_parse("_versions/2.manifest", bytes, len, &err);
		if (again == NULL)
		{
			if (err.code != LP_ERR_NO_MEMORY)
				abort();
		}
		else
		{
			if (lp_manifest_version(again) != lp_manifest_version(manifest) ||
				lp_manifest_num_fragments(again) != lp_manifest_num_fragments(manifest) ||
				(again->transaction == NULL) != (manifest->transaction == NULL) ||
				again->transaction_len != manifest->transaction_len ||
				(again->transaction_len > 0 &&
				 memcmp(again->transaction, manifest->transaction, again->transaction_len) != 0))
				abort();
			read_manifest(again, &files_again);
			if (files_again != files)
				abort();
			lp_manifest_free(again);
		}
		lp_free(bytes);
	}
	else if (err.code != LP_ERR_NO_MEMORY)
		abort();
	lp_manifest_free(manifest);
	return 0;
}
