/*
 * lp_dataset.h - the layout of a Lance dataset directory: manifest naming
 * schemes and finding the latest version, data file and blob sidecar names,
 * and which schema fields own a physical column of a data file.
 *
 * All I/O goes through an LpStore; paths are "<root>/<relative path>".
 */
#ifndef LP_DATASET_H
#define LP_DATASET_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "base/lp_random.h"
#include "format/lp_file.h"
#include "dataset/lp_manifest.h"
#include "io/lp_storage.h"

/* Manifest naming schemes (lance-format.md section 5.4). */
typedef enum LpManifestNaming
{
	LP_NAMING_V1 = 1,			/* _versions/{version}.manifest */
	LP_NAMING_V2 = 2			/* _versions/{u64::MAX - version, 20 digits}.manifest */
} LpManifestNaming;

#define LP_VERSIONS_DIR "_versions"
#define LP_TRANSACTIONS_DIR "_transactions"
#define LP_DELETIONS_DIR "_deletions"
#define LP_DATA_DIR "data"
#define LP_VERSION_HINT_FILE "latest_version_hint.json"
#define LP_STAGING_DIR "_parts"

/* "{stem}.manifest": at most 20 digits + ".manifest" + NUL */
#define LP_MANIFEST_NAME_SIZE 32
/* 24 binary digits + 26 hex digits + ".lance" + NUL */
#define LP_DATA_FILE_NAME_SIZE 57
/* 8-4-4-4-12 hex digits + NUL */
#define LP_UUID_STRING_SIZE 37
/* 32 binary digits + ".blob" + NUL */
#define LP_BLOB_FILE_NAME_SIZE 38

/*
 * Decode a _versions entry name.  False for names that are not version
 * manifests (detached "d…" manifests, the hint file, temporary files).
 */
bool		lp_manifest_name_parse(const char *entry_name, uint64_t *version,
								   LpManifestNaming *naming);

/* The _versions entry name of a version under a scheme. */
void		lp_manifest_name(LpManifestNaming naming, uint64_t version,
							 char name[LP_MANIFEST_NAME_SIZE]);

/*
 * Find the latest version of the dataset at root by listing _versions/.
 * LP_ERR_NOT_FOUND if there is no manifest; LP_ERR_CORRUPT if both naming
 * schemes are present (Lance refuses such directories too).
 */
bool		lp_dataset_latest_version(LpStore *store, const char *root,
									  uint64_t *version,
									  LpManifestNaming *naming, LpError *err);

/* Read the manifest of one version. */
LpManifest *lp_dataset_read_manifest(LpStore *store, const char *root,
									 LpManifestNaming naming, uint64_t version,
									 LpError *err);

/*
 * Whether a version after since_version references the data file name in
 * the given base (has_base_id false: the dataset root).  latest is the
 * dataset's latest manifest as the caller read it; it is checked in memory,
 * then the versions below it down to since_version + 1 are read (newest
 * first; versions removed meanwhile are skipped).  A file whose name was
 * drawn after version since_version existed cannot be in that version or
 * an older one, so those are not read.  *found_version receives the newest
 * version holding the file, 0 when none does.
 */
bool		lp_dataset_file_referenced_since(LpStore *store, const char *root,
											 LpManifestNaming naming,
											 const LpManifest *latest,
											 uint64_t since_version,
											 bool has_base_id, uint32_t base_id,
											 const char *name,
											 uint64_t *found_version, LpError *err);

/* Read the latest manifest; *naming receives the directory's scheme. */
LpManifest *lp_dataset_read_latest(LpStore *store, const char *root,
								   LpManifestNaming *naming, LpError *err);

/*
 * Read the transaction that produced a manifest: its inline section, or else
 * _transactions/<transaction_file>.  *data is allocated with lp_alloc.
 */
bool		lp_dataset_read_transaction(LpStore *store, const char *root,
										const LpManifest *manifest,
										uint8_t **data, size_t *len,
										LpError *err);

/* Turn 16 random bytes into a version 4 UUID (sets version and variant bits). */
void		lp_uuid_v4(uint8_t bytes[16]);

/* The hyphenated lowercase form of a UUID. */
void		lp_uuid_format(const uint8_t bytes[16], char out[LP_UUID_STRING_SIZE]);

/*
 * A new data file name as Lance generates it (lance-format.md section 5.2):
 * the first 3 bytes of a v4 UUID as 24 binary digits, the other 13 as 26
 * hex digits, then ".lance".  uuid must already be a v4 UUID (lp_uuid_v4).
 */
void		lp_data_file_name(const uint8_t uuid[16], char out[LP_DATA_FILE_NAME_SIZE]);

/*
 * Whether name has the form lp_data_file_name gives: 24 binary digits, 26
 * lowercase hex digits, ".lance".
 */
bool		lp_data_file_name_valid(const char *name);

/* Draw 16 bytes from random and build a data file name from them. */
bool		lp_generate_data_file_name(LpRandomFunction random, void *random_arg,
									   char out[LP_DATA_FILE_NAME_SIZE],
									   LpError *err);

/*
 * The blob sidecar directory of a data file, relative to the data directory:
 * the file name without ".lance" (lance-format.md section 6.3).  NULL when
 * the name does not end in ".lance" or memory runs out.
 */
char	   *lp_blob_sidecar_dir(const char *data_file_name);

/*
 * Where the data files of a base at base_path go: <base_path>/data for
 * dataset roots, else base_path itself.  NULL when out of memory; free with
 * lp_free.
 */
char	   *lp_base_data_dir(const char *base_path, bool is_dataset_root);

/*
 * Where part writers put the files of a data file that is being assembled:
 * <data_dir>/_parts/<file name>.  NULL when out of memory; free with lp_free.
 */
char	   *lp_data_file_staging_dir(const char *data_dir, const char *data_file_name);

/*
 * The blob sidecar directory of a data file: <data_dir>/<file name without
 * ".lance">.  NULL when the name does not end in ".lance" or memory runs out;
 * free with lp_free.
 */
char	   *lp_data_file_sidecar_dir(const char *data_dir, const char *data_file_name);

/* The sidecar file name of a blob id: its 32 bits reversed, in binary, ".blob". */
void		lp_blob_sidecar_file_name(uint32_t blob_id,
									  char out[LP_BLOB_FILE_NAME_SIZE]);

/*
 * The fields that own a physical column of a data file, and their column
 * numbers (DataFile.fields / column_indices, lance-format.md section 3.1),
 * from the dataset schema (lp_manifest_schema).  selected lists the
 * top-level field ids the file holds, in file order (NULL: every top-level
 * field, in schema order).  The columns themselves are those of
 * lp_schema_physical_columns.  The arrays are allocated with lp_alloc.
 */
bool		lp_data_file_columns(const LpSchema *schema, const int32_t *selected,
								 size_t n_selected, LpFileVersion version,
								 int32_t **field_ids, int32_t **column_indices,
								 size_t *n_columns, LpError *err);

#endif							/* LP_DATASET_H */
