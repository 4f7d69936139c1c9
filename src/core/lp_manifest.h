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

#include "lp_error.h"
#include "lp_file.h"
#include "lp_storage.h"
#include "table.pb-c.h"

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

typedef struct LpManifest
{
	char	   *name;			/* path of the file, for messages */
	Lance__Table__Manifest *proto;
	/* Section bodies (without their length prefix); data NULL if absent. */
	const uint8_t *index_section;
	size_t		index_section_len;
	const uint8_t *transaction;
	size_t		transaction_len;
	/* The file's bytes; the sections above point into them. */
	uint8_t    *file_data;
	size_t		file_len;
} LpManifest;

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
 * Serialize a manifest file from its parts.  index_section and transaction
 * are section bodies (NULL to omit).  The manifest's index_section and
 * transaction_section offsets are set to where the sections land (and
 * cleared when omitted); nothing else in it is changed.  *out is allocated
 * with lp_alloc.
 */
bool		lp_manifest_serialize(Lance__Table__Manifest *manifest,
								  const uint8_t *index_section,
								  size_t index_section_len,
								  const uint8_t *transaction,
								  size_t transaction_len,
								  uint8_t **out, size_t *out_len,
								  LpError *err);

/* The reader and writer flags a manifest with this content must carry. */
void		lp_manifest_compute_flags(const Lance__Table__Manifest *manifest,
									  uint64_t *reader_flags,
									  uint64_t *writer_flags);

/* Refuse flags this project does not understand (bits >= 64). */
bool		lp_manifest_check_flags(const LpManifest *manifest, LpError *err);

/* The dataset schema as an LpSchema (free with lp_schema_free). */
bool		lp_manifest_schema(const LpManifest *manifest, LpSchema *schema,
							   LpError *err);

/*
 * Whether an index of the manifest's index section covers the fragment; only
 * indexes on one of fields count (every index when fields is NULL).
 */
bool		lp_manifest_fragment_indexed(const LpManifest *manifest,
										 uint64_t fragment_id,
										 const int32_t *fields, size_t n_fields,
										 bool *indexed, LpError *err);

/* The fragment with the given id, or NULL. */
Lance__Table__DataFragment *lp_manifest_find_fragment(const Lance__Table__Manifest *manifest,
													  uint64_t fragment_id);

/* The schema field with the given id, or NULL. */
Lance__File__Field *lp_manifest_find_field(const Lance__Table__Manifest *manifest,
										   int32_t field_id);

#endif							/* LP_MANIFEST_H */
