/*
 * lp_write_sql.h - what the SQL functions that write Lance share with
 * COPY ... TO (format 'lance').
 */
#ifndef LP_WRITE_SQL_H
#define LP_WRITE_SQL_H

#include "access/tupdesc.h"
#include "nodes/pg_list.h"

#include "dataset/lp_commit.h"
#include "format/lp_file.h"

typedef enum LpWriteMode
{
	LP_WRITE_CREATE,
	LP_WRITE_APPEND,
	LP_WRITE_OVERWRITE
} LpWriteMode;

typedef struct LpWriteResult
{
	uint64		dataset_version;	/* when published */
	bool		published;		/* false: at the commit of the transaction */
	int			fragments;
	uint64		num_rows;
} LpWriteResult;

/* Define the GUC lance_parts.manifest_naming (from _PG_init). */
extern void LpWriteInit(void);

/* "create", "append", "overwrite"; ERROR (22023) otherwise. */
extern LpWriteMode lp_write_mode(const char *mode);

/* "2.0" to "2.3"; ERROR (22023) otherwise. */
extern LpFileVersion lp_write_file_version(const char *name);

/*
 * write_dataset: the rows of query into the dataset at dataset_uri.  A new
 * dataset (create, or overwrite of a missing one) is version 1 of Lance's
 * Overwrite transaction under lance_parts.manifest_naming; append adds one
 * fragment per file (of at most max_rows_per_file rows) in the dataset's
 * storage format and schema (matched by column name); overwrite replaces
 * schema and data.  create and overwrite write the query's columns named
 * in blob_columns (String nodes) as Blob v2 fields.
 */
extern void lp_write_dataset_run(const char *dataset_uri, const char *query, LpWriteMode mode,
								 LpFileVersion version, int64 max_rows_per_file,
								 List *blob_columns, LpWriteResult *result);

/*
 * Appending rows from the executor (INSERT and COPY FROM into lance_fdw
 * tables): new data files of the dataset at root, reached through the
 * store of server, published as one Append (lp_publish: at the commit of
 * the transaction, or now).  desc's column names are the dataset's field
 * names; every top-level field needs one.  The files written are removed
 * when the current memory context goes before lp_dataset_append_finish.
 * in_order: the files hold the rows in the order added, file after file
 * (encoded in this backend), as an UPDATE that keeps row ids needs them.
 */
typedef struct LpDatasetAppend LpDatasetAppend;

extern LpDatasetAppend *lp_dataset_append_begin(const char *root, Oid server, TupleDesc desc,
												bool in_order);
extern void lp_dataset_append_row(LpDatasetAppend *append, const Datum *values, const bool *nulls);
/* Finish and publish the files; the rows written. */
extern uint64 lp_dataset_append_finish(LpDatasetAppend *append);

/*
 * Finish the files and hand them to the caller's publication: the new
 * fragments (none without rows) and the paths to remove if it is not made.
 */
extern void lp_dataset_append_end(LpDatasetAppend *append, LpNewFragment **fragments,
								  size_t *n_fragments, List **written);

#endif							/* LP_WRITE_SQL_H */
