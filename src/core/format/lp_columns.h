/*
 * lp_columns.h - which schema fields own a physical column of a Lance file.
 *
 * The column list of a v2 file is implied by its schema and version
 * (lance-format.md §3.1): 2.0 gives every field a column in pre-order (a
 * struct gets a "header" column, a list an offsets column), 2.1 and later
 * give columns to leaves only.  A packed struct or a blob field is one
 * column in every version and its children get none; fields without an id
 * (the blob v2 pseudo-fields of file footers) get none.  2.0 files of
 * Lance 0.13 and earlier store a string or binary field as a list of u8
 * (two columns), which only the file's pages tell.  Concatenation,
 * data-file column lists and the decoder all use this one rule.
 */
#ifndef LP_COLUMNS_H
#define LP_COLUMNS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_file.h"

typedef struct LpPhysicalColumn
{
	uint32_t	field_index;	/* into LpSchema.fields */

	/*
	 * 2.0: the header column of a non-packed struct.  Its single page has no
	 * buffers and spans every row (or every item, under a list).
	 */
	bool		struct_header;

	/*
	 * 2.0: the field lies under a list, so its page lengths count list items
	 * rather than rows.  Always false for 2.1 and later.
	 */
	bool		counts_items;

	/*
	 * 2.0 files of Lance 0.13 and earlier: a string or binary field stored as
	 * a list of u8 owns two columns, the offsets (bytes_as_list) and the
	 * bytes (bytes_items, counting bytes).  Only lp_file_physical_columns
	 * sees them: the schema does not say.
	 */
	bool		bytes_as_list;
	bool		bytes_items;
} LpPhysicalColumn;

/*
 * The physical columns the schema implies for the version, in file order.
 * Fails with LP_ERR_CORRUPT if a field's parent does not precede it.  The
 * array is allocated with lp_alloc (NULL with zero columns); free it with
 * lp_free.
 */
bool		lp_schema_physical_columns(LpFileVersion version, const LpSchema *schema,
									   LpPhysicalColumn **columns,
									   uint32_t *num_columns, LpError *err);

/*
 * The physical columns of the file: those its schema implies, where a 2.0
 * string or binary field whose column has List pages owns a second column
 * (its bytes).  Same allocation as above.
 */
bool		lp_file_physical_columns(const LpFile *file, LpPhysicalColumn **columns,
									 uint32_t *num_columns, LpError *err);

/*
 * Whether column (the first of a string or binary field of the file) is the
 * offsets column of a list of u8, the bytes being the next column.
 */
bool		lp_file_column_stores_bytes_as_list(const LpFile *file, uint32_t column);

/*
 * The first physical column of schema field field_index of the file: its
 * own, or (2.1+ parents) its first descendant's.  LP_ERR_CORRUPT if it owns
 * none or the schema is not in pre-order.
 */
bool		lp_field_first_column(const LpFile *file, uint32_t field_index,
								  uint32_t *column, LpError *err);

/* Metadata lookup by key; NULL if absent. */
const LpKeyValue *lp_field_metadata(const LpField *field, const char *key);

/* A blob field: v1 (lance-encoding:blob) or v2 (extension lance.blob.v2). */
bool		lp_field_is_blob(const LpField *field);

/* The Arrow extension name of a Blob v2 field in a manifest's schema. */
#define LP_BLOB_V2_EXTENSION "lance.blob.v2"

/*
 * A Blob v2 field: the extension lance.blob.v2 (a manifest's form) or a
 * struct marked lance-encoding:blob (a file footer's childless form,
 * lance-format.md §6.5); the other blob fields are legacy (v1).
 */
bool		lp_field_is_blob_v2(const LpField *field);

/* A struct stored as one column (lance-encoding:packed or packed = true). */
bool		lp_field_is_packed(const LpField *field);

#endif							/* LP_COLUMNS_H */
