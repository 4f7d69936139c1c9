/*
 * lp_fdw_topk.c - exact top-k scans: a query
 *
 *     SELECT ... FROM lance_table [WHERE pushed clauses]
 *     ORDER BY column <op> query_vector LIMIT k [OFFSET m]
 *
 * over one lance_fdw table, with <op> pgvector's <->, <=> or <#> on a vector
 * column (or on a real[] column cast to vector: column::vector), is answered
 * by the scan: it decodes the vector column (and the
 * filter's) of every row, computes each distance, keeps the k + m nearest
 * rows in a bounded heap, then decodes the other columns for those rows only
 * (late materialization) and returns them nearest first.  The plan is the
 * scan under the query's Limit, and PostgreSQL still evaluates the ORDER BY
 * expression of the rows returned.
 *
 * Distances are pgvector's by construction: the scan calls the operator's own
 * function, on a vector datum built in place from the decoded float32 items
 * (pgvector's SIMD code computes them; no text conversion).  A row whose
 * vector the fast build cannot represent (NaN or infinite items, NULL items,
 * another dimension count than the column's) goes through the column's
 * conversion, so it raises the very error a plain scan would raise.  Rows
 * are ordered as float8's btree ordering orders them (NaN after every number,
 * as pgvector's cosine distance of a zero vector is), NULL distances last.
 * Among equal distances the row earlier in the dataset (fragment, then row)
 * is kept: PostgreSQL's own top-N sort leaves that choice unspecified.
 *
 * Planning (lp_fdw_topk_add_paths) recognizes the shape: root->query_pathkeys
 * is the one ascending, NULLS LAST float8 ordering by such an operator of the
 * extension "vector" on a column of the table and a scan constant (a
 * constant, an external parameter, a stable expression of them), the query
 * has a LIMIT whose count (and offset) are scan constants (not WITH TIES),
 * nothing between the scan and the Limit could drop, add or reorder rows (no
 * join, grouping, aggregate, window, DISTINCT, set-returning function, row
 * lock), and every restriction is pushed (a local qual evaluated after the
 * scan would drop rows of the k).  Anything else keeps the plain plan, as
 * does lance_parts.fdw_topk = off.
 *
 * Parallel scans: each process (the leader too) ranks the units it takes
 * from the shared queue and returns its own k + m nearest rows, sorted; the
 * planner's Gather Merge merges them by the ORDER BY expression and the Limit
 * above keeps the first ones.  A merge in shared memory would save
 * (workers - 1) * k tuples through the queues, which is nothing next to the
 * decoding, and Gather Merge is PostgreSQL's own, well-tested merge.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/dependency.h"
#include "catalog/pg_am.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "common/int.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"

#include "base/lp_pg_compat.h"
#include "fdw/lp_fdw.h"

static bool lp_fdw_topk = true;

void
LpFdwTopKInit(void)
{
	DefineCustomBoolVariable("lance_parts.fdw_topk",
							 gettext_noop("Answers ORDER BY a pgvector distance LIMIT k on one lance_fdw table in the scan."),
							 gettext_noop("Off: the scan decodes every column of every row and PostgreSQL sorts them."),
							 &lp_fdw_topk,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
}

/* ---- planning ------------------------------------------------------------------ */

/* pgvector's distance operators the scan ranks by (each of vector, vector). */
static const char *const ranking_operators[] = {"<->", "<=>", "<#>"};

/* pgvector's vector: VECTOR_MAX_DIM, and its layout (vector.h), which the scan builds in place. */
#define PGVECTOR_MAX_DIM 16000

typedef struct PgVector
{
	int32		vl_len_;
	int16		dim;
	int16		unused;
	float		x[FLEXIBLE_ARRAY_MEMBER];
} PgVector;

/*
 * Whether nothing between the scan of baserel and the query's Limit could
 * drop, add or reorder rows, and the Limit's count and offset are scan
 * constants.
 */
static bool
query_limits_scan(PlannerInfo *root, RelOptInfo *baserel)
{
	Query	   *parse = root->parse;

	if (parse->commandType != CMD_SELECT || parse->hasAggs || parse->groupClause != NIL ||
		parse->groupingSets != NIL || parse->havingQual != NULL || parse->hasWindowFuncs ||
		parse->distinctClause != NIL || parse->hasTargetSRFs || parse->setOperations != NULL ||
		parse->rowMarks != NIL)
		return false;
	if (baserel->reloptkind != RELOPT_BASEREL || !bms_equal(root->all_baserels, baserel->relids))
		return false;
	/* LIMIT ALL is a NULL constant: nothing to gain */
	if (parse->limitOption != LIMIT_OPTION_COUNT || parse->limitCount == NULL ||
		(IsA(parse->limitCount, Const) && ((Const *) parse->limitCount)->constisnull))
		return false;
	return lp_fdw_is_scan_constant(parse->limitCount) &&
		(parse->limitOffset == NULL || lp_fdw_is_scan_constant(parse->limitOffset));
}

/* Whether node is a plain column of baserel. */
static bool
is_column(Node *node, RelOptInfo *baserel)
{
	return node != NULL && IsA(node, Var) && ((Var *) node)->varno == baserel->relid &&
		((Var *) node)->varlevelsup == 0 && ((Var *) node)->varattno > 0;
}

/* Whether type typid is called name (in whichever schema). */
static bool
is_type_named(Oid typid, const char *name)
{
	HeapTuple	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	bool		result;

	if (!HeapTupleIsValid(tuple))
		return false;
	result = strcmp(NameStr(((Form_pg_type) GETSTRUCT(tuple))->typname), name) == 0;
	ReleaseSysCache(tuple);
	return result;
}

/*
 * The column of baserel a ranking argument reads as a vector: the vector
 * column itself, or a real[] column through pgvector's cast (array_to_vector
 * of extension, its typmod and explicitness constants); NULL otherwise.
 */
static Var *
ranked_column(Node *node, RelOptInfo *baserel, Oid extension)
{
	FuncExpr   *cast = (FuncExpr *) node;

	if (is_column(node, baserel))
		return (Var *) node;
	if (!IsA(node, FuncExpr) || list_length(cast->args) != 3 ||
		!is_column(linitial(cast->args), baserel) ||
		((Var *) linitial(cast->args))->vartype != FLOAT4ARRAYOID ||
		!IsA(lsecond(cast->args), Const) || !IsA(lthird(cast->args), Const) ||
		getExtensionOfObject(ProcedureRelationId, cast->funcid) != extension ||
		strcmp(get_func_name(cast->funcid), "array_to_vector") != 0)
		return NULL;
	return linitial(cast->args);
}

/* Whether opno is one of ranking_operators of extension, on its type vector. */
static bool
is_ranking_operator(Oid opno, Oid column_type, Oid extension)
{
	char	   *name;
	Oid			left;
	Oid			right;
	bool		known = false;

	if (getExtensionOfObject(OperatorRelationId, opno) != extension ||
		getExtensionOfObject(TypeRelationId, column_type) != extension)
		return false;
	op_input_types(opno, &left, &right);
	if (left != column_type || right != column_type || get_op_rettype(opno) != FLOAT8OID ||
		!func_strict(get_opcode(opno)))
		return false;
	name = get_opname(opno);
	for (size_t i = 0; i < lengthof(ranking_operators); i++)
		known |= strcmp(name, ranking_operators[i]) == 0;
	return known && is_type_named(column_type, "vector");
}

/* Whether the Lance field column attnum reads is a list of float32 (a vector's items, as decoded). */
static bool
reads_float32_lists(Oid foreigntableid, AttrNumber attnum, const LpFdwSource *source)
{
	char	   *field_name = lp_fdw_column_field_name(foreigntableid, attnum,
												  get_attname(foreigntableid, attnum, false));
	int			index = lp_fdw_find_top_field(&source->schema, field_name);
	LpType	   *type;
	bool		result;

	if (index < 0 || lp_fdw_column_reads_payload(foreigntableid, attnum))
		return false;
	type = lp_fdw_schema_field_type(&source->schema, (uint32) index, source->path);
	result = (type->id == LP_TYPE_FIXED_SIZE_LIST || type->id == LP_TYPE_LIST ||
			  type->id == LP_TYPE_LARGE_LIST) &&
		type->num_children == 1 && type->children[0]->id == LP_TYPE_FLOAT;
	lp_type_free(type);
	return result;
}

/*
 * The ranking expression of the query's ordering when the scan can rank by
 * it: column <op> value or value <op> column, value a scan constant, column a
 * ranked_column.
 */
static OpExpr *
ranking_expression(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
				   const LpFdwSource *source)
{
	Oid			extension = get_extension_oid("vector", true);
	PathKey    *pathkey;
	Oid			float8_family;
	ListCell   *cell;

	if (!OidIsValid(extension) || list_length(root->query_pathkeys) != 1)
		return NULL;
	pathkey = linitial(root->query_pathkeys);
	float8_family = get_opclass_family(GetDefaultOpClass(FLOAT8OID, BTREE_AM_OID));
	if (!LP_PATHKEY_IS_ASCENDING(pathkey) || pathkey->pk_nulls_first ||
		pathkey->pk_opfamily != float8_family)
		return NULL;
	foreach(cell, pathkey->pk_eclass->ec_members)
	{
		EquivalenceMember *member = lfirst(cell);
		OpExpr	   *op = (OpExpr *) member->em_expr;
		Node	   *value;
		Var		   *column;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		value = lsecond(op->args);
		column = ranked_column(linitial(op->args), baserel, extension);
		if (column == NULL)
		{
			value = linitial(op->args);
			column = ranked_column(lsecond(op->args), baserel, extension);
		}
		if (column != NULL && lp_fdw_is_scan_constant(value) &&
			is_ranking_operator(op->opno, exprType(value), extension) &&
			reads_float32_lists(foreigntableid, column->varattno, source))
			return op;
	}
	return NULL;
}

void
lp_fdw_topk_add_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
					  const LpFdwSource *source, List *pushed, Cost startup_cost)
{
	OpExpr	   *ranking;
	List	   *exprs;
	double		kept;
	Cost		ranking_cost;
	Cost		kept_cost;
	double		divisor;
	int			workers;
	Path	   *path;

	if (!lp_fdw_topk || list_length(pushed) != list_length(baserel->baserestrictinfo) ||
		!query_limits_scan(root, baserel))
		return;
	ranking = ranking_expression(root, baserel, foreigntableid, source);
	if (ranking == NULL)
		return;
	exprs = list_make3(ranking, root->parse->limitCount,
					   root->parse->limitOffset != NULL ? root->parse->limitOffset :
					   (Node *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
										  Int64GetDatum(0), false, FLOAT8PASSBYVAL));

	/*
	 * Every row's ranking column, filter and distance before the first row
	 * comes out; then the k kept rows' other columns.
	 */
	kept = root->limit_tuples > 0 ? Min(root->limit_tuples, baserel->rows) : baserel->rows;
	ranking_cost = baserel->tuples * (cpu_tuple_cost +
									  cpu_operator_cost * (1 + list_length(pushed)));
	kept_cost = kept * cpu_tuple_cost * (1 + list_length(baserel->reltarget->exprs));
	path = (Path *) create_foreignscan_path(root, baserel, NULL, baserel->rows, 0,
											startup_cost + ranking_cost,
											startup_cost + ranking_cost + kept_cost,
											root->query_pathkeys, baserel->lateral_relids,
											NULL, NIL, exprs);
	path->parallel_safe = false;
	add_path(baserel, path);

	workers = lp_fdw_parallel_workers(root, baserel, source, &divisor);
	if (workers <= 0 || !is_parallel_safe(root, (Node *) exprs))
		return;
	path = (Path *) create_foreignscan_path(root, baserel, NULL,
											clamp_row_est(baserel->rows / divisor), 0,
											startup_cost + ranking_cost / divisor,
											startup_cost + ranking_cost / divisor + kept_cost,
											root->query_pathkeys, baserel->lateral_relids,
											NULL, NIL, exprs);
	path->parallel_aware = true;
	path->parallel_safe = true;
	path->parallel_workers = workers;
	add_partial_path(baserel, path);
}

/* ---- execution ------------------------------------------------------------------ */

/* A row ranked: its distance, where it is, and once kept its values. */
typedef struct RankedRow
{
	double		distance;
	bool		isnull;			/* NULL distance: a NULL vector or query vector */
	uint64		fragment;		/* index in the manifest */
	uint64		row;
	MinimalTuple tuple;			/* the kept row's columns */
	ItemPointerData tid;		/* its identity (lp_fdw_scan_row_identity) */
} RankedRow;

struct LpFdwTopK
{
	LpFdwScan  *scan;
	AttrNumber	attnum;			/* the vector column, or the real[] column cast to vector */
	int32		dimensions;		/* the dimensions of its vector(n), or -1 */
	bool		has_cast;		/* a real[] column: pgvector's cast, with its typmod and explicitness */
	FmgrInfo	cast;
	Datum		cast_typmod;
	Datum		cast_explicit;
	bool		column_first;	/* the column is the operator's left argument */
	FmgrInfo	distance;		/* the operator's function */
	Oid			collation;
	ExprState  *query_state;
	ExprState  *count_state;
	ExprState  *offset_state;
	ExprContext *econtext;
	TupleDesc	desc;
	Datum	   *values;			/* a row of desc */
	bool	   *nulls;
	int32		field_id;		/* the ranked column's Lance field, or -1 */
	bool		has_metric;		/* the operator is a metric vector indexes are built for */
	LpVectorMetric metric;
	LpFdwVectorSearch search;	/* what the last execution's index search did */
	bool		build_vectors;	/* vectors are built in place (checked against the conversion) */
	bool		build_checked;
	PgVector   *vector;			/* the in-place vector, PGVECTOR_MAX_DIM items */
	MemoryContext context;		/* what one execution keeps: reset by a rewind */

	/* one execution */
	bool		ranked;
	Datum		query;
	bool		query_isnull;
	uint64		k;				/* LIMIT + OFFSET; PG_UINT64_MAX: no limit */
	RankedRow  *rows;			/* a max-heap of the nearest rows while ranking, then sorted */
	uint64		num_rows;
	uint64		capacity;
	uint64		next;			/* the next row to return */
};

/* Rows in the query's order: distance by float8's ordering, NULLs last, then position. */
static int
rank_compare(const RankedRow *a, const RankedRow *b)
{
	if (a->isnull != b->isnull)
		return a->isnull ? 1 : -1;
	if (!a->isnull)
	{
		int			c = float8_cmp_internal(a->distance, b->distance);

		if (c != 0)
			return c;
	}
	if (a->fragment != b->fragment)
		return a->fragment < b->fragment ? -1 : 1;
	if (a->row != b->row)
		return a->row < b->row ? -1 : 1;
	return 0;
}

static int
rank_compare_qsort(const void *a, const void *b)
{
	return rank_compare(a, b);
}

static int
position_compare_qsort(const void *a, const void *b)
{
	const RankedRow *x = a;
	const RankedRow *y = b;

	if (x->fragment != y->fragment)
		return x->fragment < y->fragment ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row ? 1 : 0;
}

/* The Lance field id of column attnum of relation relid, or -1. */
static int32
ranked_field_id(LpFdwScan *scan, Oid relid, AttrNumber attnum)
{
	const LpFdwSource *source = lp_fdw_scan_source(scan);
	int			index = lp_fdw_find_top_field(&source->schema,
											  lp_fdw_column_field_name(relid, attnum,
																	   get_attname(relid, attnum, false)));

	return index < 0 ? -1 : source->schema.fields[index].id;
}

/* The metric of a vector index pgvector's operator name ranks by. */
static bool
metric_of_operator(const char *name, LpVectorMetric *metric)
{
	if (strcmp(name, "<->") == 0)
		*metric = LP_VECTOR_L2;
	else if (strcmp(name, "<=>") == 0)
		*metric = LP_VECTOR_COSINE;
	else if (strcmp(name, "<#>") == 0)
		*metric = LP_VECTOR_DOT;
	else
		return false;
	return true;
}

LpFdwTopK *
lp_fdw_topk_begin(LpFdwScan *scan, List *exprs, PlanState *parent)
{
	LpFdwTopK  *topk = palloc0(sizeof(LpFdwTopK));
	OpExpr	   *ranking = linitial_node(OpExpr, exprs);
	Node	   *column = linitial(ranking->args);
	Node	   *value = lsecond(ranking->args);
	Relation	rel = ((ScanState *) parent)->ss_currentRelation;

	topk->scan = scan;
	topk->column_first = contain_var_clause(column);
	if (!topk->column_first)
	{
		column = lsecond(ranking->args);
		value = linitial(ranking->args);
	}
	if (IsA(column, FuncExpr))
	{
		FuncExpr   *cast = (FuncExpr *) column;

		topk->has_cast = true;
		fmgr_info(cast->funcid, &topk->cast);
		topk->cast_typmod = castNode(Const, lsecond(cast->args))->constvalue;
		topk->cast_explicit = castNode(Const, lthird(cast->args))->constvalue;
		topk->dimensions = DatumGetInt32(topk->cast_typmod);
		column = linitial(cast->args);
	}
	else
		topk->dimensions = castNode(Var, column)->vartypmod;
	topk->attnum = castNode(Var, column)->varattno;
	topk->field_id = ranked_field_id(scan, RelationGetRelid(rel), topk->attnum);
	topk->has_metric = metric_of_operator(get_opname(ranking->opno), &topk->metric);
	fmgr_info(get_opcode(ranking->opno), &topk->distance);
	topk->collation = ranking->inputcollid;
	topk->query_state = ExecInitExpr((Expr *) value, parent);
	topk->count_state = ExecInitExpr(lsecond(exprs), parent);
	topk->offset_state = ExecInitExpr(lthird(exprs), parent);
	topk->econtext = parent->ps_ExprContext;
	topk->desc = RelationGetDescr(rel);
	topk->values = palloc(sizeof(Datum) * Max(topk->desc->natts, 1));
	topk->nulls = palloc(sizeof(bool) * Max(topk->desc->natts, 1));
	topk->vector = palloc0(offsetof(PgVector, x) + sizeof(float) * PGVECTOR_MAX_DIM);
	topk->build_vectors = true;
	topk->context = AllocSetContextCreate(CurrentMemoryContext, "lance_fdw top-k",
										  ALLOCSET_DEFAULT_SIZES);
	lp_fdw_scan_defer_columns(scan, topk->attnum);
	return topk;
}

/* Evaluate an int8 of the Limit (count or offset); false for NULL. */
static bool
evaluate_int8(LpFdwTopK *topk, ExprState *state, int64 *value)
{
	bool		isnull;
	Datum		datum = ExecEvalExprSwitchContext(state, topk->econtext, &isnull);

	if (!isnull)
		*value = DatumGetInt64(datum);
	return !isnull;
}

/*
 * The query vector and k for this execution.  A NULL count is no limit; the
 * Limit node has refused negative values before the scan runs (its own
 * evaluation comes first), so a worker seeing one returns nothing.
 */
static void
prepare(LpFdwTopK *topk)
{
	MemoryContext old = MemoryContextSwitchTo(topk->context);
	Datum		query = ExecEvalExprSwitchContext(topk->query_state, topk->econtext,
												  &topk->query_isnull);
	int64		count;
	int64		offset = 0;
	int64		sum;

	/* detoasted once here, not by every call of the distance function */
	if (!topk->query_isnull)
		topk->query = PointerGetDatum(PG_DETOAST_DATUM_COPY(query));
	MemoryContextSwitchTo(old);
	if (!evaluate_int8(topk, topk->count_state, &count))
		topk->k = PG_UINT64_MAX;
	else
	{
		(void) evaluate_int8(topk, topk->offset_state, &offset);
		if (count < 0 || offset < 0)
			topk->k = 0;
		else if (pg_add_s64_overflow(count, offset, &sum))
			topk->k = PG_UINT64_MAX;
		else
			topk->k = (uint64) sum;
	}
	topk->capacity = Min(topk->k, 1024);
	topk->rows = MemoryContextAllocHuge(topk->context, sizeof(RankedRow) * Max(topk->capacity, 1));
	topk->num_rows = 0;
}

static void
sift_down(RankedRow *heap, uint64 n, uint64 i)
{
	for (;;)
	{
		uint64		largest = i;
		uint64		left = 2 * i + 1;
		uint64		right = left + 1;
		RankedRow	swap;

		if (left < n && rank_compare(&heap[left], &heap[largest]) > 0)
			largest = left;
		if (right < n && rank_compare(&heap[right], &heap[largest]) > 0)
			largest = right;
		if (largest == i)
			return;
		swap = heap[i];
		heap[i] = heap[largest];
		heap[largest] = swap;
		i = largest;
	}
}

/* Keep row if it is among the k nearest so far: the heap's root is the farthest kept. */
static void
offer(LpFdwTopK *topk, const RankedRow *row)
{
	RankedRow  *heap = topk->rows;
	uint64		i;

	if (topk->num_rows == topk->k)
	{
		if (topk->k == 0 || rank_compare(row, &heap[0]) >= 0)
			return;
		heap[0] = *row;
		sift_down(heap, topk->num_rows, 0);
		return;
	}
	if (topk->num_rows == topk->capacity)
	{
		topk->capacity = Min(topk->k, topk->capacity * 2);
		topk->rows = heap = repalloc_huge(heap, sizeof(RankedRow) * topk->capacity);
	}
	i = topk->num_rows++;
	heap[i] = *row;
	while (i > 0 && rank_compare(&heap[(i - 1) / 2], &heap[i]) < 0)
	{
		RankedRow	swap = heap[i];

		heap[i] = heap[(i - 1) / 2];
		heap[(i - 1) / 2] = swap;
		i = (i - 1) / 2;
	}
}

static double
call_distance(LpFdwTopK *topk, Datum vector)
{
	Datum		left = topk->column_first ? vector : topk->query;
	Datum		right = topk->column_first ? topk->query : vector;

	return DatumGetFloat8(FunctionCall2Coll(&topk->distance, topk->collation, left, right));
}

/*
 * Build row position of a batch's vector array in place, when its items are
 * what the column's conversion (and cast) would turn into a vector as they
 * are: as many as the column's dimensions (1 to pgvector's maximum), none
 * NULL, all finite.
 */
static bool
build_vector(LpFdwTopK *topk, const LpArray *array, uint64 position)
{
	const LpArray *items = array->children[0];
	uint64		start;
	uint64		end;
	const float *values;

	if (items->type->id != LP_TYPE_FLOAT)
		return false;
	lp_fdw_list_range(array, position, &start, &end);
	if (end - start < 1 || end - start > PGVECTOR_MAX_DIM ||
		(topk->dimensions >= 0 && end - start != (uint64) topk->dimensions))
		return false;
	values = (const float *) items->values + start;
	for (uint64 i = 0; i < end - start; i++)
		if (!isfinite(values[i]) || !lp_array_is_valid(items, start + i))
			return false;
	memcpy(topk->vector->x, values, sizeof(float) * (end - start));
	SET_VARSIZE(topk->vector, offsetof(PgVector, x) + sizeof(float) * (end - start));
	topk->vector->dim = (int16) (end - start);
	return true;
}

/*
 * Row index of the scan's batch through the column's conversion and the
 * cast of a real[] column (raising their errors).
 */
static Datum
converted_vector(LpFdwTopK *topk, uint64 index)
{
	Datum		value;

	lp_fdw_scan_select(topk->scan, index);
	lp_fdw_scan_values(topk->scan, topk->values, topk->nulls);
	Assert(!topk->nulls[topk->attnum - 1]);
	value = topk->values[topk->attnum - 1];
	if (topk->has_cast)
		value = FunctionCall3(&topk->cast, value, topk->cast_typmod, topk->cast_explicit);
	return value;
}

/* The distance of row index of the batch, whose vector is item position of array. */
static double
row_distance(LpFdwTopK *topk, const LpArray *array, uint64 position, uint64 index)
{
	Datum		converted;

	if (!topk->build_vectors || !build_vector(topk, array, position))
		return call_distance(topk, converted_vector(topk, index));
	if (topk->build_checked)
		return call_distance(topk, PointerGetDatum(topk->vector));

	/*
	 * The first vector built is compared with the conversion's, byte for
	 * byte: should pgvector's layout ever differ, the scan converts every row.
	 */
	converted = converted_vector(topk, index);
	topk->build_checked = true;
	topk->build_vectors = VARSIZE_ANY(DatumGetPointer(converted)) == VARSIZE(topk->vector) &&
		memcmp(VARDATA_ANY(DatumGetPointer(converted)), VARDATA(topk->vector),
			   VARSIZE(topk->vector) - VARHDRSZ) == 0;
	return call_distance(topk, converted);
}

/* Rank every row of the scan, keeping the k nearest in the heap. */
static void
rank_rows(LpFdwTopK *topk)
{
	uint64		n;

	while ((n = lp_fdw_scan_next_batch(topk->scan)) > 0)
	{
		RankedRow	candidate = {0};
		const uint64 *rows;
		const uint64 *positions;
		const LpArray *array;

		(void) lp_fdw_scan_batch_rows(topk->scan, &candidate.fragment, &rows);
		array = lp_fdw_scan_batch_column(topk->scan, topk->attnum, &positions);
		for (uint64 i = 0; i < n; i++)
		{
			uint64		position = positions != NULL ? positions[i] : i;

			candidate.row = rows[i];
			candidate.isnull = topk->query_isnull || array == NULL ||
				!lp_array_is_valid(array, position);
			if (!candidate.isnull)
				candidate.distance = row_distance(topk, array, position, i);
			offer(topk, &candidate);
		}
	}
}

/*
 * Restrict the scan to the candidates of a vector index on the column
 * (lp_fdw_vector.c), when one answers the query: k * refine_factor of
 * them, or every row of the probed partitions when a filter or deleted
 * rows could drop candidates, or the index's stable row ids could name rows
 * that compaction dropped.  Fewer than k of the k * refine_factor (every
 * one a row the scan returns) leave the scan unrestricted: the rest of
 * PostgreSQL's k (rows whose vector is NULL, which no index holds) can be
 * in any fragment.  True when the scan is restricted to candidates that
 * may leave fewer than k rows, which the ranking then counts.
 */
static bool
restrict_to_index(LpFdwTopK *topk)
{
	const LpFdwSource *source = lp_fdw_scan_source(topk->scan);
	const PgVector *query;
	uint64		limit;
	LpFdwIndexRows *rows;
	MemoryContext old;

	memset(&topk->search, 0, sizeof(topk->search));
	if (topk->query_isnull || topk->field_id < 0 || !topk->has_metric)
		return false;
	query = (const PgVector *) DatumGetPointer(topk->query);
	if (lp_fdw_scan_has_filter(topk->scan) || source->deleted_rows > 0 ||
		lp_manifest_stable_row_ids(source->manifest) ||
		pg_mul_u64_overflow(topk->k, (uint64) lp_fdw_refine_factor, &limit))
		limit = PG_UINT64_MAX;
	old = MemoryContextSwitchTo(topk->context);
	rows = lp_fdw_vector_candidates(source, topk->field_id, topk->metric, query->x, query->dim,
									limit, &topk->search);
	MemoryContextSwitchTo(old);
	if (rows == NULL || (limit != PG_UINT64_MAX && rows->num_rows < topk->k))
		return false;
	lp_fdw_scan_restrict(topk->scan, rows);
	return limit == PG_UINT64_MAX;
}

/*
 * Decode every column of the kept rows, fragment by fragment in row order,
 * into tuples; then sort them nearest first.
 */
static void
materialize_rows(LpFdwTopK *topk)
{
	uint64	   *rows = palloc(sizeof(uint64) * Max(topk->num_rows, 1));
	uint64		first = 0;

	qsort(topk->rows, topk->num_rows, sizeof(RankedRow), position_compare_qsort);
	while (first < topk->num_rows)
	{
		uint64		fragment = topk->rows[first].fragment;
		uint64		n = 0;

		CHECK_FOR_INTERRUPTS();
		while (first + n < topk->num_rows && topk->rows[first + n].fragment == fragment)
		{
			rows[n] = topk->rows[first + n].row;
			n++;
		}
		lp_fdw_scan_take(topk->scan, fragment, rows, n);
		for (uint64 i = 0; i < n; i++)
		{
			RankedRow  *row = &topk->rows[first + i];
			MemoryContext old;

			lp_fdw_scan_select(topk->scan, i);
			lp_fdw_scan_values(topk->scan, topk->values, topk->nulls);
			lp_fdw_scan_row_identity(topk->scan, &row->tid);
			old = MemoryContextSwitchTo(topk->context);
			row->tuple = heap_form_minimal_tuple(topk->desc, topk->values, topk->nulls, 0);
			MemoryContextSwitchTo(old);
		}
		first += n;
	}
	pfree(rows);
	qsort(topk->rows, topk->num_rows, sizeof(RankedRow), rank_compare_qsort);
}

bool
lp_fdw_topk_next(LpFdwTopK *topk, TupleTableSlot *slot)
{
	RankedRow  *row;

	if (!topk->ranked)
	{
		prepare(topk);
		if (topk->k > 0)
		{
			bool		may_leave_fewer = restrict_to_index(topk);

			rank_rows(topk);

			/*
			 * An index holds no row whose vector is NULL, which PostgreSQL
			 * ranks last: when a filter or deletions leave fewer than k of
			 * the candidates, the rows read are ranked again, all of them.
			 * A parallel scan's processes count their own rows, so that one
			 * whose units leave fewer than k ranks them all (other processes
			 * keep their candidates): the merge can only gain nearer rows.
			 */
			if (may_leave_fewer && topk->num_rows < topk->k)
			{
				topk->num_rows = 0;
				lp_fdw_scan_unrestrict(topk->scan);
				rank_rows(topk);
			}
		}
		materialize_rows(topk);
		topk->ranked = true;
		topk->next = 0;
	}
	if (topk->next >= topk->num_rows)
		return false;
	row = &topk->rows[topk->next++];
	ExecForceStoreMinimalTuple(row->tuple, slot, false);
	slot->tts_tid = row->tid;
	return true;
}

void
lp_fdw_topk_rewind(LpFdwTopK *topk)
{
	MemoryContextReset(topk->context);
	topk->ranked = false;
	topk->rows = NULL;
	topk->num_rows = 0;
}

char *
lp_fdw_topk_explain_planned_index(const LpFdwTopK *topk)
{
	if (!topk->has_metric || topk->field_id < 0 || topk->dimensions <= 0)
		return NULL;
	return lp_fdw_vector_index_planned(lp_fdw_scan_source(topk->scan), topk->field_id,
									   topk->metric, topk->dimensions);
}

char *
lp_fdw_topk_explain_index(const LpFdwTopK *topk)
{
	const LpFdwVectorSearch *search = &topk->search;

	if (search->index_name == NULL)
		return NULL;
	return psprintf("%s (%s, %s), " UINT64_FORMAT " of " UINT64_FORMAT " partitions%s, "
					UINT64_FORMAT " rows read, " UINT64_FORMAT " candidates",
					search->index_name, search->index_type, search->metric,
					search->partitions_probed, search->num_partitions,
					search->graph ? " (graphs searched)" : "", search->rows_read,
					search->candidates);
}

/* A LIMIT or OFFSET value as EXPLAIN shows it: a number, or the expression. */
static char *
limit_text(Node *value, List *deparse_context, bool verbose)
{
	if (IsA(value, Const) && !((Const *) value)->constisnull)
		return psprintf(INT64_FORMAT, DatumGetInt64(((Const *) value)->constvalue));
	return deparse_expression(value, deparse_context, verbose, false);
}

char *
lp_fdw_topk_explain(List *exprs, List *deparse_context, bool verbose)
{
	Node	   *offset = lthird(exprs);
	char	   *text = psprintf("%s, k=%s",
								deparse_expression(linitial(exprs), deparse_context, verbose, false),
								limit_text(lsecond(exprs), deparse_context, verbose));

	if (IsA(offset, Const) && !((Const *) offset)->constisnull &&
		DatumGetInt64(((Const *) offset)->constvalue) == 0)
		return text;
	return psprintf("%s + %s", text, limit_text(offset, deparse_context, verbose));
}
