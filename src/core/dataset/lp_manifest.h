/*
 * lp_manifest.h - reading and writing Lance manifest files.
 *
 * A manifest file is
 *
 *   [IndexSection: u32 len + protobuf]        optional, Manifest.index_section
 *   [Transaction:  u32 len + protobuf]        optional, Manifest.transaction_section
 *   [Manifest:     u32 len + protobuf]
 *   [i64 position of the Manifest's length][u16 0][u16 2]["LANC"]
 *
 * (lance-format.md section 5.3).  The manifest is kept as the protobuf-c
 * message so that fields this project does not know survive a rewrite; the
 * optional sections are kept as raw bytes and are copied forward verbatim.
 */
#ifndef LP_MANIFEST_H
#define LP_MANIFEST_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_file.h"
#include "io/lp_storage.h"

#define LP_MANIFEST_TAIL_LEN 16
/* Refuse to load manifest files larger than this (they are read whole). */
#define LP_MANIFEST_MAX_SIZE ((uint64_t) 1 << 30)

/* Feature flags (lance-format.md section 5.6). */
#define LP_FLAG_DELETION_FILES		((uint64_t) 1)
#define LP_FLAG_STABLE_ROW_IDS		((uint64_t) 2)
#define LP_FLAG_USE_V2_FORMAT		((uint64_t) 4)	/* deprecated, never set */
#define LP_FLAG_TABLE_CONFIG		((uint64_t) 8)
#define LP_FLAG_BASE_PATHS			((uint64_t) 16)
#define LP_FLAG_NO_TRANSACTION_FILE ((uint64_t) 32)
#define LP_FLAGS_KNOWN				((uint64_t) 63)
/* Flags of newer Lance versions that lance_parts refuses; named in messages. */
#define LP_FLAG_OVERLAYS			((uint64_t) 64)
#define LP_FLAG_FRAGMENT_REUSE_INDEX ((uint64_t) 1024)
#define LP_FLAG_MANAGED_BLOBS		((uint64_t) 2048)

/*
 * A parsed manifest file.  Its layout (the protobuf-c message and the raw
 * sections) is the core's business (lp_manifest_internal.h); callers use the
 * accessors below and those of lp_fragment.h.
 */
typedef struct LpManifest LpManifest;

/*
 * Whether path is a relative path that stays inside the directory it is
 * joined onto, the way Lance joins object keys: names separated by single
 * slashes, none of them empty, "." or "..", none holding a backslash (so no
 * absolute path either).
 */
bool		lp_manifest_relative_path_valid(const char *path);

/*
 * Parse a manifest held in memory (the bytes are copied).  Every path the
 * manifest holds is checked: data file paths and the transaction file must
 * be relative paths inside their directories (lp_manifest_relative_path_valid),
 * base paths absolute paths or URIs; anything else is LP_ERR_CORRUPT.
 */
LpManifest *lp_manifest_parse(const char *name, const uint8_t *data,
							  size_t len, LpError *err);

/* Read and parse the whole manifest file behind input. */
LpManifest *lp_manifest_read(LpInput *input, LpError *err);

void		lp_manifest_free(LpManifest *manifest);

/*
 * Lance's can_read_dataset and can_write_dataset: refuse (LP_ERR_UNSUPPORTED)
 * a manifest whose reader, respectively writer, feature flags have a bit
 * lance_parts does not implement (64 and up), the message naming dataset and
 * the lowest such flag.  Readers check the reader flags only, so a dataset
 * that only newer writers must understand stays readable; writers check
 * both, as Lance opens a dataset before it writes.
 */
bool		lp_manifest_check_readable(const LpManifest *manifest, const char *dataset,
									   LpError *err);
bool		lp_manifest_check_writable(const LpManifest *manifest, const char *dataset,
									   LpError *err);

/* The dataset schema as an LpSchema (free with lp_schema_free). */
bool		lp_manifest_schema(const LpManifest *manifest, LpSchema *schema,
							   LpError *err);

/*
 * Which indexes of the manifest's index section cover the fragment, as bits
 * (index i: bit i % 64; fragments with equal bits are covered alike unless
 * the dataset has more than 64 indexes); only indexes on one of fields count
 * (every index when fields is NULL).
 */
bool		lp_manifest_fragment_indexes(const LpManifest *manifest, uint64_t fragment_id,
										 const int32_t *fields, size_t n_fields,
										 uint64_t *indexes, LpError *err);

/* One entry (one segment of an index) of the manifest's index section. */
typedef struct LpIndexEntry
{
	char	   *name;
	uint8_t		uuid[16];		/* its files are under _indices/<uuid, hyphenated>/ */
	int32_t    *fields;
	size_t		n_fields;
	char	   *type_url;		/* of index_details ("/lance.table.BTreeIndexDetails"); "" when none */
	bool		has_index_version;
	int32_t		index_version;
	bool		has_base_id;	/* its files are in another base than the dataset's */
	uint8_t    *fragment_bitmap;	/* serialized 32-bit Roaring bitmap of the fragment ids it covers */
	size_t		fragment_bitmap_len;
} LpIndexEntry;

/*
 * The entries of the manifest's index section (none without one) into
 * *entries (free with lp_manifest_index_entries_free).  A UUID that is not
 * 16 bytes or damaged index details are LP_ERR_CORRUPT.
 */
bool		lp_manifest_index_entries(const LpManifest *manifest, LpIndexEntry **entries,
									  size_t *n_entries, LpError *err);
void		lp_manifest_index_entries_free(LpIndexEntry *entries, size_t n_entries);

/* Whether the manifest has a fragment reuse index (feature flag 1024): index row addresses need remapping. */
bool		lp_manifest_fragment_reuse(const LpManifest *manifest);

/* Whether any index lp_manifest_fragment_indexes counts covers the fragment. */
bool		lp_manifest_fragment_indexed(const LpManifest *manifest,
										 uint64_t fragment_id,
										 const int32_t *fields, size_t n_fields,
										 bool *indexed, LpError *err);

/* ---- what a manifest records -------------------------------------------- */

/*
 * The id the next new fragment takes: past max_fragment_id and every
 * fragment's id (LP_ERR_UNSUPPORTED when that leaves 32 bits).
 */
bool		lp_manifest_next_fragment_id(const LpManifest *manifest, uint64_t *id, LpError *err);

/* The dataset version the manifest describes. */
uint64_t	lp_manifest_version(const LpManifest *manifest);

/* The manifest file's name, as given when it was read (for messages). */
const char *lp_manifest_file_name(const LpManifest *manifest);

/*
 * The data storage format the manifest records (data_format.version, e.g.
 * "2.1"), or NULL when it records none.
 */
const char *lp_manifest_data_format(const LpManifest *manifest);

/*
 * The data storage format as a file version; false when the manifest records
 * none or one lp_file_version_parse does not know (Lance's "0.1" included).
 */
bool		lp_manifest_data_version(const LpManifest *manifest,
									 LpFileVersion *version);

/*
 * Whether the dataset's data is in the legacy (v1) file format: its storage
 * format is "legacy" or Lance's name for it, "0.1", or a data file is a v1
 * file (data file version 0.x below 0.3).
 */
bool		lp_manifest_is_legacy(const LpManifest *manifest);

/* Whether the dataset uses stable row ids (reader feature flag). */
bool		lp_manifest_stable_row_ids(const LpManifest *manifest);

/*
 * The identity of this version of this dataset: its transaction file name,
 * else "timestamp:<seconds>.<nanoseconds>", else "version:<n>".  NULL when
 * out of memory; free with lp_free.
 */
char	   *lp_manifest_tag(const LpManifest *manifest);

/* Whether the manifest has a fragment with this id. */
bool		lp_manifest_has_fragment(const LpManifest *manifest, uint64_t fragment_id);

#endif							/* LP_MANIFEST_H */
