/*
 * lp_schema.h - Lance schemas (lance.file.Field lists) as LpSchema values.
 *
 * Data files store their schema in global buffer 0 and manifests store the
 * dataset's; both are lists of lance.file.Field in pre-order.  The copy
 * checks names for UTF-8 and parents for order, and sorts metadata maps by
 * key, so schemas compare semantically whatever order a writer used.
 */
#ifndef LP_SCHEMA_H
#define LP_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_bytes.h"
#include "base/lp_error.h"

/* Room for "file \"<path>\"" style descriptions in messages. */
#define LP_SCHEMA_WHERE_LEN 1100

typedef struct LpKeyValue
{
	char	   *key;
	LpBytes		value;
} LpKeyValue;

typedef struct LpField
{
	int32_t		id;
	int32_t		parent_id;		/* -1 for top level */
	char	   *name;
	char	   *logical_type;
	bool		nullable;
	int32_t		legacy_encoding;	/* Field.encoding (deprecated v1 enum) */
	char	   *extension_name;
	bool		unenforced_primary_key;
	uint32_t	num_metadata;
	LpKeyValue *metadata;		/* sorted by key */
} LpField;

typedef struct LpSchema
{
	uint32_t	num_fields;
	LpField    *fields;			/* pre-order, as stored */
	uint32_t	num_metadata;
	LpKeyValue *metadata;		/* sorted by key */
} LpSchema;

void		lp_schema_free(LpSchema *schema);

/* Index of the field with this id, or -1. */
int64_t		lp_schema_find_field(const LpSchema *schema, int32_t id);

/* Index of the top-level field called name, or -1. */
int64_t		lp_schema_top_field(const LpSchema *schema, const char *name);

/*
 * Same fields (ids, parents, names, types, nullability, encodings, extension
 * names, primary-key flags, metadata) in the same order, and the same
 * schema metadata.  Metadata maps compare as sets (they are sorted by key);
 * an absent string equals an empty one, as in proto3.
 */
bool		lp_schema_equal(const LpSchema *a, const LpSchema *b);

/* Metadata value for key, or NULL. */
const LpKeyValue *lp_metadata_find(const LpKeyValue *metadata, uint32_t count,
								   const char *key);

/* The outcome of lp_schema_select. */
typedef enum LpSchemaSelectResult
{
	LP_SCHEMA_SELECT_OK,
	LP_SCHEMA_SELECT_UNKNOWN,	/* no top-level field has that name */
	LP_SCHEMA_SELECT_DUPLICATE, /* the name is given twice */
	LP_SCHEMA_SELECT_NO_MEMORY
} LpSchemaSelectResult;

/*
 * The fields of full that lie under the named top-level fields (the named
 * fields and their descendants), in full's pre-order, as *selected: its
 * fields array is allocated with lp_alloc and holds shallow copies of full's
 * fields (free only selected->fields); schema metadata is full's.  Names are
 * checked in order; UNKNOWN and DUPLICATE set *bad to the offending index.
 */
LpSchemaSelectResult lp_schema_select(const LpSchema *full, const char *const *names,
									  size_t n_names, LpSchema *selected, size_t *bad);

/*
 * The ids of field index of schema and of every field below it, in
 * pre-order; *ids is allocated with lp_alloc.  False when out of memory.
 */
bool		lp_schema_subtree(const LpSchema *schema, uint32_t index,
							  int32_t **ids, size_t *n_ids);

#endif							/* LP_SCHEMA_H */
