/*
 * lp_fdw.h - lance_fdw: foreign tables over Lance datasets and data files.
 *
 * lp_fdw_handler.c   the handler: the routines of the files below
 * lp_fdw.c           planning, the executor's scans, EXPLAIN
 * lp_fdw_scan.c      the scan iterator: a source's live rows as datums, in
 *                    batches, filter columns first
 * lp_fdw_pushdown.c  the WHERE clauses evaluated while decoding: which, and how
 * lp_fdw_parallel.c  parallel scans: units of work, the partial path, the
 *                    queue of units in dynamic shared memory
 * lp_fdw_topk.c      exact top-k scans: ORDER BY a pgvector distance LIMIT k
 * lp_fdw_index.c     Lance's BTREE and BITMAP scalar indexes: the rows of pushed clauses
 * lp_fdw_vector.c    Lance's IVF vector indexes: the candidates of top-k scans
 * lp_fdw_analyze.c   ANALYZE: a row sample through the scan iterator
 * lp_fdw_options.c   the option table, the validator, option lookup
 * lp_fdw_source.c    what a foreign table reads: a dataset version (its
 *                    fragments, data files and deletion files) or one file
 * lp_fdw_types.c     Lance types to PostgreSQL types and values
 * lp_fdw_blob.c      payloads of Blob v2 columns (column option blob 'payload')
 * lp_fdw_import.c    IMPORT FOREIGN SCHEMA
 *
 * Its writes (INSERT, COPY FROM, UPDATE, DELETE) are the writers', in
 * write/lp_fdw_modify.c, and the handler is a SQL function,
 * sql/lp_fdw_handler.c: the reads are below both.
 */
#ifndef LP_FDW_H
#define LP_FDW_H

#include "access/attnum.h"
#include "access/stratnum.h"
#include "storage/itemptr.h"
#include "fmgr.h"
#include "foreign/fdwapi.h"
#include "lib/stringinfo.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

#include "format/lp_deletion.h"
#include "format/lp_file.h"
#include "dataset/lp_fragment.h"
#include "dataset/lp_manifest.h"
#include "format/lp_values.h"
#include "index/lp_ivf_index.h"
#include "io/lp_storage.h"

/* ---- options (lp_fdw_options.c) ---- */

typedef struct LpFdwTableOptions
{
	char	   *uri;			/* as given */
	char	   *path;			/* its key (lp_store_for_uri): relative paths under the server's root */
	Oid			server;			/* the table's server, which serves what its root contains */
	bool		has_version;
	uint64		version;
} LpFdwTableOptions;

extern void lp_fdw_table_options(Oid foreigntableid, LpFdwTableOptions *options);

/*
 * Rows an INSERT or COPY FROM hands to the FDW at a time (ExecForeignBatchInsert):
 * the foreign table's batch_size option, else its server's, else 1.
 */
extern int	lp_fdw_insert_batch_size(Oid foreigntableid);

/* The server's root option, or NULL. */
extern char *lp_fdw_server_root(Oid serverid);

/* The key of uri in its store; a relative path is taken under root when root is set. */
extern char *lp_fdw_location(const char *uri, const char *root);

/* The Lance field name of a column: its column_name option, or its name. */
extern char *lp_fdw_column_field_name(Oid relid, AttrNumber attnum, const char *attname);

/*
 * Whether a column reads the payloads of a Blob v2 field as bytea (column
 * option blob 'payload') rather than its descriptors (blob 'descriptor', the
 * default).
 */
extern bool lp_fdw_column_reads_payload(Oid relid, AttrNumber attnum);

/* ERROR unless the user may read server files, naming what needed it. */
extern void lp_fdw_check_path_privilege(const char *what);

/* ---- sources (lp_fdw_source.c) ---- */

typedef struct LpFdwSource
{
	char	   *path;			/* dataset root or data file: a key of store */
	Oid			server;			/* the foreign server chosen for it (lp_store_for_uri_via) */
	LpStore    *store;
	bool		single_file;
	LpManifest *manifest;		/* datasets: what is read (a view, see below) */
	uint64		version;		/* datasets: the manifest's version */
	/*
	 * Datasets: the published version the manifest builds on.  When the
	 * current transaction has publications pending for the dataset, the
	 * manifest is that version with them applied (its version number is not
	 * on storage) and published is the version itself; otherwise both are
	 * the same.
	 */
	LpManifest *published;
	uint64		published_version;
	/*
	 * Datasets: the bits of a row identity (ItemPointer, 48 bits) that hold
	 * the row offset, enough for the largest fragment; the fragment id has
	 * the others.
	 */
	uint32		row_address_bits;
	LpFile	   *file;			/* single files: their metadata */
	LpSchema	schema;			/* dataset schema, or the file's */
	uint64		num_fragments;
	uint64		num_files;
	uint64		physical_rows;
	uint64		deleted_rows;
	uint64		data_bytes;		/* the data files' sizes the manifest records */
} LpFdwSource;

/*
 * Open a dataset (at a version, or the latest) or a single data file and
 * read its metadata; ERROR when it cannot be read.  Legacy-format data is
 * refused when refuse_legacy is set.  The latest version of a dataset is
 * read as the current transaction's pending publications leave it
 * (lp_fdw_pending_view_hook), so a transaction reads its own writes.
 */
extern LpFdwSource *lp_fdw_open_source(const char *path, Oid server, bool has_version,
									   uint64 version, bool refuse_legacy);

/*
 * The manifest of published with the current transaction's pending
 * publications to the dataset at path applied, or NULL when there are none.
 * The writers (write/lp_publication.c) own the pending publications and set
 * this hook; the reads are below them.
 */
typedef LpManifest *(*LpFdwPendingViewHook) (const char *path, const LpManifest *published);
extern LpFdwPendingViewHook lp_fdw_pending_view_hook;

/* Whether the source reads pending publications of the current transaction. */
extern bool lp_fdw_source_has_pending(const LpFdwSource *source);

/* Whether fragment_id of the source is written by a pending publication. */
extern bool lp_fdw_source_fragment_pending(const LpFdwSource *source, uint64 fragment_id);

/* Index of the top-level field called name in the source's schema, or -1. */
extern int	lp_fdw_find_top_field(const LpSchema *schema, const char *name);

/* The type of a schema field (children included); free with lp_type_free. */
extern LpType *lp_fdw_schema_field_type(const LpSchema *schema, uint32 index,
										const char *where);

/*
 * Where the data files and deletion files of a dataset's bases are, and the
 * store they are read in: the one of their base (lp_store_below), so that no
 * symlink below it is followed.
 */
extern char *lp_fdw_data_file_path(const LpFdwSource *source, const LpDataFileRef *file,
								   LpStore **store);
extern char *lp_fdw_deletion_file_path(const LpFdwSource *source, const LpFragment *fragment,
									   LpStore **store);

/* ---- pushed WHERE clauses (lp_fdw_pushdown.c) ---- */

/* lance_parts.fdw_pushdown: whether clauses are pushed at all */
extern bool lp_fdw_pushdown;
extern void LpFdwPushdownInit(void);

/*
 * The RestrictInfos of baserel's restrictions that the scan evaluates
 * exactly as PostgreSQL would (the README lists them); the others stay local.
 */
extern List *lp_fdw_pushable_clauses(RelOptInfo *baserel, Oid foreigntableid,
									 const LpFdwSource *source);

/* Pushed clauses, ready to be evaluated on rows. */
typedef struct LpFdwFilter LpFdwFilter;

/*
 * The filter of clauses (expressions lp_fdw_pushable_clauses chose, as the
 * plan holds them) on relation relid of the plan; their values are
 * evaluated in parent's expression context at the first row.
 */
extern LpFdwFilter *lp_fdw_filter_begin(List *clauses, Index relid, PlanState *parent);

/* The attribute numbers the clauses test, and whether a test needs a column's values or only its NULLs. */
extern List *lp_fdw_filter_columns(const LpFdwFilter *filter);
extern bool lp_fdw_filter_needs_value(const LpFdwFilter *filter, AttrNumber attnum);

/* Whether every clause is true for a row (values and nulls of the relation's tuple descriptor). */
extern bool lp_fdw_filter_matches(LpFdwFilter *filter, const Datum *values, const bool *isnull);

/* The next scan evaluates the clauses' values again (parameters may differ). */
extern void lp_fdw_filter_rewind(LpFdwFilter *filter);

/*
 * A pushed test of one column that an index lookup can use: column <strategy>
 * value (a btree strategy, the column on the left), or, for = ANY, equal to
 * one of values (NULL elements left out).
 */
typedef struct LpFdwIndexTerm
{
	StrategyNumber strategy;
	Oid			value_type;
	int			num_values;
	Datum	   *values;			/* valid as long as the filter's values */
} LpFdwIndexTerm;

/*
 * The terms of the tests of column attnum (of type column_type) with a
 * non-NULL value, evaluated for this scan.
 */
extern List *lp_fdw_filter_index_terms(LpFdwFilter *filter, AttrNumber attnum, Oid column_type);

/*
 * Whether an expression has one value for a whole scan: no column of any
 * relation, nothing volatile, no parameter but external ones.
 */
extern bool lp_fdw_is_scan_constant(Node *node);

/* ---- scalar indexes (lp_fdw_index.c) ---- */

/* lance_parts.fdw_scalar_index: whether scans use BTREE and BITMAP indexes */
extern bool lp_fdw_scalar_index;
extern void LpFdwIndexInit(void);

/* The rows of one fragment an index lookup found. */
typedef struct LpFdwIndexFragment
{
	bool		restricted;		/* an index segment covers the fragment: read only rows */
	uint64	   *rows;			/* ascending row offsets */
	uint64		num_rows;
} LpFdwIndexFragment;

typedef struct LpFdwIndexRows
{
	char	   *index_name;
	const char *index_type;		/* "BTREE", "BITMAP", ... (static) */
	uint64		num_rows;		/* found in the covered fragments */
	uint64		num_fragments;	/* the source's, in manifest order */
	LpFdwIndexFragment *fragments;
} LpFdwIndexRows;

/*
 * The rows a BTREE or BITMAP index on column attnum (Lance field field_id, of type
 * column_type) finds for filter's tests of that column, per fragment; NULL
 * when no index is used (lance_parts.fdw_scalar_index off, no usable index,
 * no test an index answers).
 */
extern LpFdwIndexRows *lp_fdw_index_lookup(const LpFdwSource *source, LpFdwFilter *filter,
										   AttrNumber attnum, int32 field_id, Oid column_type);

/* The directory of an index entry's files: <dataset>/_indices/<uuid>. */
extern char *lp_fdw_index_directory(const LpFdwSource *source, const LpIndexEntry *entry);

/*
 * The rows of ids (row addresses: fragment id << 32 | row, or stable row
 * ids when the dataset has them; sorted and deduplicated in place) in each
 * fragment the entries marked used cover, as row offsets: those fragments
 * are restricted to them, the others read whole.  whole[0..num_whole)
 * (sorted in place; NULL when none) are high halves of which every id is
 * found: fragments read whole, or every row id with that high half.  An
 * address beyond its fragment's rows is an ERROR naming index name (of
 * type, a static string); NULL when row ids cannot be mapped to rows (held
 * in an external file: a DEBUG1 message says so).
 */
extern LpFdwIndexRows *lp_fdw_index_rows(const LpFdwSource *source, const LpIndexEntry *entries,
										 const bool *used, size_t n, const char *name,
										 const char *type, uint64 *ids, uint64 num_ids,
										 uint32 *whole, size_t num_whole);

/*
 * The rows two lookups of one source both let through: in a fragment both
 * restrict, the rows both found; in one only one restricts, its rows.  Named
 * as a.
 */
extern LpFdwIndexRows *lp_fdw_index_rows_intersect(const LpFdwIndexRows *a,
												   const LpFdwIndexRows *b);

/*
 * Whether the index restricts the rows [first_row, end_row) of fragment (an
 * index in the manifest); if so, the rows it found among them.
 */
extern bool lp_fdw_index_unit_rows(const LpFdwIndexRows *index_rows, uint64 fragment,
								   uint64 first_row, uint64 end_row, const uint64 **rows,
								   uint64 *num_rows);

/* ---- vector indexes (lp_fdw_vector.c) ---- */

/* lance_parts.fdw_vector_index, fdw_nprobes, fdw_refine_factor and fdw_ef */
extern bool lp_fdw_vector_index;
extern int	lp_fdw_nprobes;
extern int	lp_fdw_refine_factor;
extern int	lp_fdw_ef;
extern void LpFdwVectorInit(void);

/* What a search of a vector index did (for EXPLAIN ANALYZE). */
typedef struct LpFdwVectorSearch
{
	char	   *index_name;		/* NULL: no index was used */
	char	   *index_type;		/* "IVF_PQ", ... */
	const char *metric;			/* "l2", "cosine", "dot" */
	uint64		partitions_probed;	/* summed over the index's segments */
	uint64		num_partitions;
	uint64		rows_read;		/* of the probed partitions */
	bool		graph;			/* their HNSW graphs were walked */
	uint64		candidates;
} LpFdwVectorSearch;

/*
 * The candidates a vector index on Lance field field_id, of metric and
 * dimension, finds for query: at most limit by their scores in the
 * fragments the index covers (the others read whole), as
 * lp_fdw_index_rows; NULL when no index is used (with a DEBUG1 message
 * saying why).  *search says what it did.
 */
extern LpFdwIndexRows *lp_fdw_vector_candidates(const LpFdwSource *source, int32 field_id,
												LpVectorMetric metric, const float *query,
												int dimension, uint64 limit,
												LpFdwVectorSearch *search);

/*
 * The vector index lp_fdw_vector_candidates would search for queries of
 * metric and dimension, as "name (type, metric)"; NULL when none (a zero
 * query under cosine aside, which no index answers).
 */
extern char *lp_fdw_vector_index_planned(const LpFdwSource *source, int32 field_id,
										 LpVectorMetric metric, int dimension);

/* ---- the scan iterator (lp_fdw_scan.c) ---- */

/* lance_parts.fdw_batch_rows: rows decoded together */
extern int	lp_fdw_batch_rows;
extern bool lp_fdw_readahead;
extern void LpFdwScanInit(void);

/*
 * Reads the live rows of a foreign table's source in units (a fragment's
 * range of rows) and batches of lance_parts.fdw_batch_rows rows of a unit,
 * converting only the columns asked for; the executor's scans and ANALYZE
 * share it.
 */
typedef struct LpFdwScan LpFdwScan;

/*
 * Begin reading the columns attnums (an integer list of attribute numbers)
 * of rel; explain_only reads the manifest only, for EXPLAIN.  version, when
 * not NULL, is the dataset version to read (a parallel worker reads its
 * leader's); otherwise the table's version option, or the latest.
 */
extern LpFdwScan *lp_fdw_scan_begin(Relation rel, List *attnums, bool explain_only,
									const uint64 *version);

/*
 * Return only the rows filter matches: each batch decodes the filter's
 * columns first, and the other columns only for the rows that match.
 */
extern void lp_fdw_scan_set_filter(LpFdwScan *scan, LpFdwFilter *filter);

/*
 * Move to the next row the deletion files do not list (and the filter
 * matches); false after the last.  Checks for interrupts after each batch
 * (the decoders, per page).
 */
extern bool lp_fdw_scan_next(LpFdwScan *scan);

/*
 * Batches instead of rows (exact top-k scans): after lp_fdw_scan_defer_columns,
 * the batches read only the filter's columns and column keep; the others are
 * decoded by lp_fdw_scan_take, for the rows asked for.
 */
extern void lp_fdw_scan_defer_columns(LpFdwScan *scan, AttrNumber keep);

/*
 * Read the next batch that has rows to return (live, matched by the filter);
 * its number of rows, 0 after the last.
 */
extern uint64 lp_fdw_scan_next_batch(LpFdwScan *scan);

/* The batch's rows: their numbers (ascending) in fragment *fragment (an index in the manifest). */
extern uint64 lp_fdw_scan_batch_rows(const LpFdwScan *scan, uint64 *fragment, const uint64 **rows);

/*
 * The batch's decoded array of column attnum, NULL when every value is NULL;
 * row i of the batch is its item positions[i], or i when *positions is NULL.
 */
extern const LpArray *lp_fdw_scan_batch_column(const LpFdwScan *scan, AttrNumber attnum,
											   const uint64 **positions);

/*
 * Decode every column of rows (ascending live row numbers of fragment, an
 * index in the manifest) as the current batch, whatever was deferred.
 */
extern void lp_fdw_scan_take(LpFdwScan *scan, uint64 fragment, const uint64 *rows, uint64 n);

/* Make row index of the current batch the current row (lp_fdw_scan_values). */
extern void lp_fdw_scan_select(LpFdwScan *scan, uint64 index);

/*
 * The current row as values and nulls of rel's tuple descriptor (columns not
 * read are NULL); the values stay valid until the next call.
 */
extern void lp_fdw_scan_values(LpFdwScan *scan, Datum *values, bool *isnull);

/* The rows skipped so far because a deletion file lists them. */
extern uint64 lp_fdw_scan_deleted_rows(const LpFdwScan *scan);

/* The live rows the filter rejected so far, and the pages decoded and skipped (for EXPLAIN ANALYZE). */
extern uint64 lp_fdw_scan_filtered_rows(const LpFdwScan *scan);
extern void lp_fdw_scan_pages(const LpFdwScan *scan, uint64 *decoded, uint64 *skipped);

/*
 * The current row's identity for DELETE: its fragment id and row offset
 * packed into an ItemPointer (ctid), the offset in the source's
 * row_address_bits low bits, the fragment id above them; invalid when they
 * do not fit or the table reads one data file.  lp_fdw_row_address unpacks
 * it for the same source (false for an invalid one).
 */
extern void lp_fdw_scan_row_identity(const LpFdwScan *scan, ItemPointer tid);
extern bool lp_fdw_row_address(const LpFdwSource *source, ItemPointer tid, uint64 *fragment_id,
							   uint64 *row);

/* The fragment ids a row identity of source reaches: those below this. */
extern uint64 lp_fdw_row_address_fragments(const LpFdwSource *source);

/*
 * The rows an index finds for the scan's filter (for EXPLAIN: looked up
 * now if the scan has not started), NULL when it uses none.
 */
extern const LpFdwIndexRows *lp_fdw_scan_index_rows(LpFdwScan *scan);

/*
 * Read only rows in the fragments rows restricts (a vector index's
 * candidates; rows stays the caller's until the scan is rewound), narrowed
 * to those a scalar index finds for the filter; set before the first batch.
 */
extern void lp_fdw_scan_restrict(LpFdwScan *scan, const LpFdwIndexRows *rows);

/*
 * Read again, every row of them this time, the units read since
 * lp_fdw_scan_restrict (in a parallel scan: those this process took).
 */
extern void lp_fdw_scan_unrestrict(LpFdwScan *scan);

/* Whether the scan evaluates pushed clauses. */
extern bool lp_fdw_scan_has_filter(const LpFdwScan *scan);

/* What the scan reads, and the Lance fields of its columns (for EXPLAIN). */
extern const LpFdwSource *lp_fdw_scan_source(const LpFdwScan *scan);
extern List *lp_fdw_scan_field_names(const LpFdwScan *scan);

extern void lp_fdw_scan_rewind(LpFdwScan *scan);
extern void lp_fdw_scan_end(LpFdwScan *scan);

/* ---- parallel scans (lp_fdw_parallel.c) ---- */

/*
 * A unit of work of a scan: the rows [first_row, first_row + num_rows) of
 * one fragment (num_rows may run past the fragment's end: to its last row).
 */
typedef struct LpFdwUnit
{
	uint64		fragment;		/* index in the manifest's fragment list */
	uint64		first_row;
	uint64		num_rows;
} LpFdwUnit;

/* The units of a parallel scan and the next one to take, in dynamic shared memory. */
typedef struct LpFdwUnitQueue LpFdwUnitQueue;

/* Define the GUC lance_parts.fdw_unit_rows (from _PG_init). */
extern void LpFdwParallelInit(void);

/*
 * The number of units of a source: its fragments, each split into ranges of
 * lance_parts.fdw_unit_rows rows; a single data file is one unit.
 */
extern uint64 lp_fdw_count_units(const LpFdwSource *source);

/*
 * The workers a partial path of baserel gets and the share of its rows each
 * process reads (*divisor); 0 when it is not worth scanning in parallel.
 */
extern int	lp_fdw_parallel_workers(PlannerInfo *root, RelOptInfo *baserel,
									const LpFdwSource *source, double *divisor);

/* Add a partial (parallel-aware) path when the source is worth scanning in parallel. */
extern void lp_fdw_add_partial_path(PlannerInfo *root, RelOptInfo *baserel,
									const LpFdwSource *source, Cost startup_cost,
									Cost run_cost);

/*
 * The queue of a source's units in space of lp_fdw_queue_size bytes, with the
 * version the leader read (workers read exactly that version).
 */
extern Size lp_fdw_queue_size(const LpFdwSource *source);
extern LpFdwUnitQueue *lp_fdw_queue_create(void *space, const LpFdwSource *source);
extern void lp_fdw_queue_reset(LpFdwUnitQueue *queue);
extern const uint64 *lp_fdw_queue_version(const LpFdwUnitQueue *queue);
/* Whether only the leader reads the queue's units (lp_fdw_source_has_pending). */
extern bool lp_fdw_queue_leader_only(const LpFdwUnitQueue *queue);

/* ERROR unless a worker's source has the fragments the leader listed units of. */
extern void lp_fdw_queue_check_source(const LpFdwUnitQueue *queue, const LpFdwSource *source);

/* Take the next unit nobody has taken; false when none is left. */
extern bool lp_fdw_queue_take(LpFdwUnitQueue *queue, LpFdwUnit *unit);

/*
 * The counts of EXPLAIN ANALYZE (rows the filter removed, pages decoded and
 * skipped) that the workers of a parallel scan added for their leader, who
 * takes them (and leaves zeros) before the shared memory goes away.
 */
extern void lp_fdw_queue_add_counts(LpFdwUnitQueue *queue, uint64 filtered_rows,
									uint64 pages_decoded, uint64 pages_skipped);
extern void lp_fdw_queue_take_counts(LpFdwUnitQueue *queue, uint64 *filtered_rows,
									 uint64 *pages_decoded, uint64 *pages_skipped);

/*
 * Make a scan take its units from queue (NULL: read every fragment), the
 * queue it takes them from, and counts to add to its own (lp_fdw_scan.c).
 */
extern void lp_fdw_scan_share(LpFdwScan *scan, LpFdwUnitQueue *queue);
extern LpFdwUnitQueue *lp_fdw_scan_queue(const LpFdwScan *scan);
extern void lp_fdw_scan_add_counts(LpFdwScan *scan, uint64 filtered_rows,
								   uint64 pages_decoded, uint64 pages_skipped);

/* ---- exact top-k scans (lp_fdw_topk.c) ---- */

/* lance_parts.fdw_topk: whether ORDER BY a distance LIMIT k is answered by the scan */
extern void LpFdwTopKInit(void);

/*
 * A top-k plan appends these to the pushed clauses in fdw_exprs: the ranking
 * (column <op> query vector), the LIMIT count and the OFFSET (int8 0 when none).
 */
#define LP_FDW_TOPK_EXPRS 3

/*
 * Add the paths of a scan that answers the query's ORDER BY distance LIMIT
 * itself, when the query has that shape and every restriction is pushed
 * (pushed: the RestrictInfos the scan evaluates).  Their fdw_private is the
 * LP_FDW_TOPK_EXPRS expressions.  startup_cost is the plain scan's.
 */
extern void lp_fdw_topk_add_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
								  const LpFdwSource *source, List *pushed, Cost startup_cost);

/* The state of a top-k scan. */
typedef struct LpFdwTopK LpFdwTopK;

/*
 * Rank scan's rows by exprs (the LP_FDW_TOPK_EXPRS expressions of the plan),
 * evaluated in parent's expression context.
 */
extern LpFdwTopK *lp_fdw_topk_begin(LpFdwScan *scan, List *exprs, PlanState *parent);

/* Store the next of the k nearest rows in slot, nearest first; false after the last. */
extern bool lp_fdw_topk_next(LpFdwTopK *topk, TupleTableSlot *slot);

/* The next call ranks the rows again (the scan itself is rewound by its owner). */
extern void lp_fdw_topk_rewind(LpFdwTopK *topk);

/* What EXPLAIN shows of a top-k scan: "emb <-> $1, k=10". */
extern char *lp_fdw_topk_explain(List *exprs, List *deparse_context, bool verbose);

/* The vector index the last execution searched, what it read (EXPLAIN ANALYZE); NULL when none. */
extern char *lp_fdw_topk_explain_index(const LpFdwTopK *topk);

/* The vector index an execution would search (EXPLAIN): "emb_idx (IVF_PQ, l2)", or NULL. */
extern char *lp_fdw_topk_explain_planned_index(const LpFdwTopK *topk);

/* ---- ANALYZE (lp_fdw_analyze.c) ---- */

extern bool lp_fdw_analyze(Relation relation, AcquireSampleRowsFunc *func,
						   BlockNumber *totalpages);

/* ---- IMPORT FOREIGN SCHEMA (lp_fdw_import.c) ---- */

struct ImportForeignSchemaStmt;
extern List *lp_fdw_import_schema(struct ImportForeignSchemaStmt *stmt, Oid serverOid);

/* ---- types (lp_fdw_types.c) ---- */

/* The PostgreSQL type a Lance type maps to. */
extern void lp_fdw_mapped_type(const LpType *type, Oid *typid, int32 *typmod);

/* How values of one Lance column become values of one PostgreSQL column. */
/*
 * How a converter builds its values: the common types of the mapped type
 * straight from the array (set up once per reader), the others through the
 * general conversion.
 */
typedef enum LpFdwConversion
{
	LP_FDW_CONVERT_GENERAL,
	LP_FDW_CONVERT_INT64,		/* int64 to bigint */
	LP_FDW_CONVERT_DOUBLE,		/* float64 to double precision */
	LP_FDW_CONVERT_TEXT,		/* utf8 to text */
	LP_FDW_CONVERT_FIXED_ARRAY	/* list of int16/32/64, float32/64 to its array: the items' bytes */
} LpFdwConversion;

typedef struct LpFdwConverter
{
	LpFdwConversion conversion;
	Oid			mapped_typid;	/* lp_fdw_mapped_type */
	int32		mapped_typmod;
	Oid			target_typid;	/* the column's declared type */
	int32		target_typmod;
	bool		through_text;	/* declared type differs: its input function */
	FmgrInfo	target_input;
	Oid			target_ioparam;
	FmgrInfo	mapped_output;	/* scalars going through text */
	bool		mapped_is_jsonb_text;	/* lists and structs: JSON text */
	/* element type of mapped arrays */
	Oid			element_typid;
	int16		element_len;
	bool		element_byval;
	char		element_align;
} LpFdwConverter;

extern void lp_fdw_converter_init(LpFdwConverter *converter, const LpType *type,
								  Oid target_typid, int32 target_typmod);

/* The value of row of array as a Datum of the converter's target type. */
extern Datum lp_fdw_convert(const LpFdwConverter *converter, const LpArray *array,
							uint64 row);

/* The items [*start, *end) of row of a list array (list, large list or fixed-size list). */
extern void lp_fdw_list_range(const LpArray *array, uint64 row, uint64 *start, uint64 *end);

/* ---- Blob v2 payloads (lp_fdw_blob.c) ---- */

/* Where the payloads of one data file's Blob v2 column are. */
typedef struct LpFdwBlobReader
{
	const char *data_file;		/* its key: sidecars are beside it */
	LpStore    *data_store;		/* its store, where its sidecars are read too */
	LpInput    *data_input;		/* Inline payloads; owned by the scan */
	const LpFdwSource *source;	/* base paths of External payloads */
	MemoryContext context;		/* lives as long as data_input: holds payload_input */
	char	   *payload_path;	/* the sidecar or external object open last, kept for the next payloads */
	LpInput    *payload_input;
} LpFdwBlobReader;

/*
 * The payload of row of a batch of descriptors as a bytea; false for a NULL
 * descriptor.  External payloads are read from their file or object after
 * the checks of lp_blob_external and the current role's read privilege of
 * that location (lp_check_read_privilege_for).  ERROR for an unknown kind, a
 * damaged descriptor and a payload beyond its file's end.
 */
extern bool lp_fdw_blob_payload(LpFdwBlobReader *reader, const LpArray *descriptors,
								uint64 row, Datum *payload);

/* Close the sidecar kept open. */
extern void lp_fdw_blob_reader_close(LpFdwBlobReader *reader);

/* ---- routines (lp_fdw.c) ---- */

/* The scan of a lance_fdw ForeignScanState (once begun). */
extern LpFdwScan *lp_fdw_node_scan(ForeignScanState *node);

/* Set the routines of scans, ANALYZE and IMPORT FOREIGN SCHEMA. */
extern void lp_fdw_scan_routines(FdwRoutine *routine);

#endif							/* LP_FDW_H */
