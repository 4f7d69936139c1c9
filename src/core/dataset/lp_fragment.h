/*
 * lp_fragment.h - the fragments, data files, deletion files and bases a
 * manifest records, as plain views.
 *
 * A view points into the manifest it was taken from and stays valid as long
 * as that manifest; nothing here allocates except where a function says so.
 * Data file paths are names inside their base's data directory
 * (lp_manifest_parse refuses manifests whose paths are not).
 */
#ifndef LP_FRAGMENT_H
#define LP_FRAGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/lp_deletion.h"
#include "base/lp_error.h"
#include "format/lp_file.h"
#include "dataset/lp_manifest.h"

/* One DataFile of a fragment (lance-format.md section 5.2). */
typedef struct LpDataFileRef
{
	const char *path;			/* relative to its base's data directory */
	const int32_t *fields;		/* DataFile.fields */
	size_t		n_fields;
	const int32_t *column_indices;	/* DataFile.column_indices */
	size_t		n_column_indices;
	uint32_t	major_version;	/* DataFile.file_major_version */
	uint32_t	minor_version;
	uint64_t	size_bytes;		/* 0: not recorded */
	bool		has_base_id;	/* false: the dataset root */
	uint32_t	base_id;
} LpDataFileRef;

/* A fragment's DeletionFile (see lp_deletion.h for its path and content). */
typedef struct LpDeletionFileRef
{
	LpDeletionForm form;
	uint64_t	read_version;
	uint64_t	id;
	uint64_t	num_deleted_rows;	/* 0: not recorded */
	bool		has_base_id;	/* false: the dataset root */
	uint32_t	base_id;
} LpDeletionFileRef;

typedef struct LpFragment
{
	size_t		index;			/* position in the manifest */
	uint64_t	id;
	uint64_t	physical_rows;	/* 0: not recorded */
	size_t		num_files;
	bool		has_deletion_file;
	LpDeletionFileRef deletion_file;	/* when has_deletion_file */
} LpFragment;

/* Where a base of the dataset is (Manifest.base_paths, lance-format.md 5.10). */
typedef struct LpBaseLocation
{
	const char *path;			/* NULL: the dataset root; else BasePath.path
								 * as recorded (an absolute path or a URI) */
	bool		is_dataset_root;	/* data files are under <base>/data */
} LpBaseLocation;

size_t		lp_manifest_num_fragments(const LpManifest *manifest);

/* The fragment at position index (< lp_manifest_num_fragments). */
void		lp_manifest_fragment(const LpManifest *manifest, size_t index,
								 LpFragment *fragment);

/* Data file file_index (< fragment->num_files) of a fragment of manifest. */
void		lp_fragment_data_file(const LpManifest *manifest, const LpFragment *fragment,
								  size_t file_index, LpDataFileRef *file);

/*
 * Whether a data file lies in the given base (has_base_id false: the dataset
 * root).  Two data files are the same file when they have the same path in
 * the same base.
 */
bool		lp_data_file_in_base(const LpDataFileRef *file, bool has_base_id,
								 uint32_t base_id);

/*
 * Whether a data file records exactly the version numbers a writer of the
 * given file version records (lp_file_version_data_file_numbers).
 */
bool		lp_data_file_has_version(const LpDataFileRef *file, LpFileVersion version);

/* Whether two data files hold the same fields in the same columns. */
bool		lp_data_file_same_columns(const LpDataFileRef *a, const LpDataFileRef *b);

/* Whether the manifest references the data file name in the given base. */
bool		lp_manifest_references_file(const LpManifest *manifest, bool has_base_id,
										uint32_t base_id, const char *name);

/*
 * The base a data or deletion file names.  LP_ERR_INVALID_ARGUMENT when the
 * manifest has no base with that id; dataset_root only names the dataset in
 * that message.
 */
bool		lp_manifest_base(const LpManifest *manifest, bool has_base_id,
							 uint32_t base_id, const char *dataset_root,
							 LpBaseLocation *base, LpError *err);

/* The number of bases the manifest registers, and the one at index (its id and location). */
size_t		lp_manifest_num_bases(const LpManifest *manifest);
void		lp_manifest_base_at(const LpManifest *manifest, size_t index,
								uint32_t *id, LpBaseLocation *base);


#endif							/* LP_FRAGMENT_H */
