/*
 * lp_manifest_internal.h - the layout of a parsed manifest, for the core
 * files that read or build the protobuf-c message itself.
 *
 * Nothing outside src/core includes this header (or any generated .pb-c.h):
 * the PostgreSQL layer sees LpManifest only through the accessors of
 * lp_manifest.h and lp_fragment.h.
 */
#ifndef LP_MANIFEST_INTERNAL_H
#define LP_MANIFEST_INTERNAL_H

#include "dataset/lp_fragment.h"
#include "dataset/lp_manifest.h"
#include "table.pb-c.h"

struct LpManifest
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
};

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

/* The fragment with the given id, or NULL. */
Lance__Table__DataFragment *lp_manifest_find_fragment(const Lance__Table__Manifest *manifest,
													  uint64_t fragment_id);

/* The schema field with the given id, or NULL. */
Lance__File__Field *lp_manifest_find_field(const Lance__Table__Manifest *manifest,
										   int32_t field_id);

/* The view of a DataFile message (lp_fragment.h). */
void		lp_data_file_ref_from_proto(const Lance__Table__DataFile *entry,
										LpDataFileRef *file);

/*
 * The manifest's index section, unpacked: *section NULL when the manifest
 * has none (free with lp_protobuf_free); LP_ERR_CORRUPT naming the
 * manifest when it does not unpack.
 */
bool		lp_manifest_index_section(const LpManifest *manifest,
									  Lance__Table__IndexSection **section, LpError *err);

#endif							/* LP_MANIFEST_INTERNAL_H */
