/*
 * lp_fdw_pushdown.c - the WHERE clauses lance_fdw evaluates while it decodes:
 * which ones (planning) and their evaluation (execution).
 *
 * A clause is pushed when its result is PostgreSQL's own by construction: it
 * tests one column, read with its mapped type (not through text), against a
 * value fixed for the scan (a constant, an external parameter, a stable
 * expression of them), with a btree operator of the column type's default
 * operator family (cross-type members included, such as int4 = int8 or
 * date < timestamptz) or one of IS [NOT] NULL, IS [NOT] TRUE/FALSE/UNKNOWN
 * and a bare or negated boolean column.  The scan evaluates it by calling
 * the operator's own function with the clause's collation on the column's
 * converted Datum, so NULLs, NaN, infinities and time zones behave exactly
 * as in PostgreSQL.  Text and bytea are pushed for equality only (= and
 * IN), text only under a deterministic collation, where equality is byte
 * equality.  Everything else stays a local qual, evaluated by the executor.
 * Long IN and NOT IN lists are looked up by hash, as PostgreSQL evaluates
 * them (the operator's hash functions, each candidate confirmed by the
 * operator itself), not compared element by element for every row.
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/sortsupport.h"

#include "base/lp_pg_compat.h"
#include "fdw/lp_fdw.h"

bool		lp_fdw_pushdown = true;

void
LpFdwPushdownInit(void)
{
	DefineCustomBoolVariable("lance_parts.fdw_pushdown",
							 gettext_noop("Evaluates the WHERE clauses lance_fdw can evaluate exactly while it decodes."),
							 gettext_noop("Off: the executor evaluates every clause, after every column the query reads was decoded."),
							 &lp_fdw_pushdown,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
}

/* What a pushed clause tests. */
typedef enum TestKind
{
	TEST_COMPARE,				/* column op value, or value op column */
	TEST_ARRAY,					/* column op ANY/ALL (array) */
	TEST_NULL,
	TEST_NOT_NULL,
	TEST_TRUE,					/* also a bare boolean column */
	TEST_NOT_TRUE,
	TEST_FALSE,					/* also NOT column */
	TEST_NOT_FALSE
} TestKind;

/* One pushed clause, taken apart. */
typedef struct PushedTest
{
	TestKind	kind;
	AttrNumber	attnum;
	Oid			opno;			/* TEST_COMPARE, TEST_ARRAY */
	Oid			inputcollid;
	bool		column_first;	/* the column is the operator's left argument (always in TEST_ARRAY) */
	bool		use_or;			/* TEST_ARRAY: ANY (true) or ALL */
	Expr	   *value;			/* TEST_COMPARE, TEST_ARRAY: the other argument */
} PushedTest;

/* The column a node is: a plain Var of relation relid (no system column, no whole row). */
static bool
column_of(Node *node, Index relid, AttrNumber *attnum)
{
	Var		   *var;

	if (node == NULL || !IsA(node, Var))
		return false;
	var = (Var *) node;
	if (var->varno != relid || var->varlevelsup != 0 || var->varattno <= 0)
		return false;
	*attnum = var->varattno;
	return true;
}

/*
 * Taking a clause apart: its kind, column and operator.  Planning and the
 * executor both use this, so the executor evaluates exactly what was pushed.
 */
static bool
decompose(Node *clause, Index relid, PushedTest *test)
{
	memset(test, 0, sizeof(*test));
	if (IsA(clause, OpExpr))
	{
		OpExpr	   *op = (OpExpr *) clause;
		Node	   *left,
				   *right;

		if (list_length(op->args) != 2)
			return false;
		left = linitial(op->args);
		right = lsecond(op->args);
		test->kind = TEST_COMPARE;
		test->opno = op->opno;
		test->inputcollid = op->inputcollid;
		if (column_of(left, relid, &test->attnum))
		{
			test->column_first = true;
			test->value = (Expr *) right;
		}
		else if (column_of(right, relid, &test->attnum))
			test->value = (Expr *) left;
		else
			return false;
		return true;
	}
	if (IsA(clause, ScalarArrayOpExpr))
	{
		ScalarArrayOpExpr *op = (ScalarArrayOpExpr *) clause;

		if (list_length(op->args) != 2 || !column_of(linitial(op->args), relid, &test->attnum))
			return false;
		/*
		 * The operator's left argument is the column, its right one each
		 * element: with them swapped, a cross-type operator would read each
		 * as the other's type and an ordering operator would be reversed.
		 */
		test->kind = TEST_ARRAY;
		test->column_first = true;
		test->opno = op->opno;
		test->inputcollid = op->inputcollid;
		test->use_or = op->useOr;
		test->value = lsecond(op->args);
		return true;
	}
	if (IsA(clause, NullTest))
	{
		NullTest   *nt = (NullTest *) clause;

		if (nt->argisrow || !column_of((Node *) nt->arg, relid, &test->attnum))
			return false;
		test->kind = nt->nulltesttype == IS_NULL ? TEST_NULL : TEST_NOT_NULL;
		return true;
	}
	if (IsA(clause, BooleanTest))
	{
		BooleanTest *bt = (BooleanTest *) clause;

		if (!column_of((Node *) bt->arg, relid, &test->attnum))
			return false;
		switch (bt->booltesttype)
		{
			case IS_TRUE:
				test->kind = TEST_TRUE;
				break;
			case IS_NOT_TRUE:
				test->kind = TEST_NOT_TRUE;
				break;
			case IS_FALSE:
				test->kind = TEST_FALSE;
				break;
			case IS_NOT_FALSE:
				test->kind = TEST_NOT_FALSE;
				break;
			case IS_UNKNOWN:
				test->kind = TEST_NULL;
				break;
			case IS_NOT_UNKNOWN:
				test->kind = TEST_NOT_NULL;
				break;
		}
		return true;
	}
	if (IsA(clause, BoolExpr) && ((BoolExpr *) clause)->boolop == NOT_EXPR)
	{
		/* a WHERE clause matches where NOT column is true: where column is false */
		test->kind = TEST_FALSE;
		return column_of(linitial(((BoolExpr *) clause)->args), relid, &test->attnum);
	}
	/* a bare column: the only Var a top-level clause can be is a boolean one */
	test->kind = TEST_TRUE;
	return column_of(clause, relid, &test->attnum);
}

/* True while no node is a Param other than an external one (they vary within a scan). */
static bool
only_external_params_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind != PARAM_EXTERN)
		return true;
	return expression_tree_walker(node, only_external_params_walker, context);
}

bool
lp_fdw_is_scan_constant(Node *node)
{
	return !contain_var_clause(node) && !contain_volatile_functions(node) &&
		!contain_subplans(node) && !only_external_params_walker(node, NULL);
}

static bool
is_ordered_type(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case BOOLOID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return true;
		default:
			return false;
	}
}

/*
 * Whether opno is a member (or the negator of equality) of the default btree
 * operator family of column_type, equality alone when equality_only.
 */
static bool
is_family_operator(Oid opno, Oid column_type, bool equality_only)
{
	Oid			opclass = GetDefaultOpClass(column_type, BTREE_AM_OID);
	Oid			family;
	ListCell   *cell;

	if (!OidIsValid(opclass) || !func_strict(get_opcode(opno)))
		return false;
	family = get_opclass_family(opclass);
	foreach(cell, get_op_index_interpretation(opno))
	{
		OpIndexInterpretation *interpretation = lfirst(cell);

		if (interpretation->opfamily_id != family)
			continue;
		if (!equality_only || LP_INTERPRETATION_IS_EQUALITY(interpretation))
			return true;
	}
	return false;
}

/* Whether the column attnum of rel is read with the type its Lance field maps to. */
static bool
read_with_mapped_type(Relation rel, const LpFdwSource *source, AttrNumber attnum)
{
	Form_pg_attribute attr = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	char	   *field_name = lp_fdw_column_field_name(RelationGetRelid(rel), attnum,
												  NameStr(attr->attname));
	int			index = lp_fdw_find_top_field(&source->schema, field_name);
	LpType	   *type;
	Oid			typid;
	int32		typmod;

	if (index < 0)
		return false;
	type = lp_fdw_schema_field_type(&source->schema, (uint32) index, source->path);
	lp_fdw_mapped_type(type, &typid, &typmod);
	lp_type_free(type);
	return typid == attr->atttypid && (attr->atttypmod == -1 || attr->atttypmod == typmod);
}

static bool
is_pushable(Relation rel, const LpFdwSource *source, Index relid, RestrictInfo *rinfo)
{
	PushedTest	test;
	Oid			column_type;
	bool		equality_only;

	if (rinfo->pseudoconstant || !decompose((Node *) rinfo->clause, relid, &test))
		return false;
	if (!read_with_mapped_type(rel, source, test.attnum))
		return false;
	column_type = TupleDescAttr(RelationGetDescr(rel), test.attnum - 1)->atttypid;
	switch (test.kind)
	{
		case TEST_NULL:
		case TEST_NOT_NULL:
			return true;
		case TEST_TRUE:
		case TEST_NOT_TRUE:
		case TEST_FALSE:
		case TEST_NOT_FALSE:
			return column_type == BOOLOID;
		case TEST_COMPARE:
		case TEST_ARRAY:
			break;
	}
	if (!lp_fdw_is_scan_constant((Node *) test.value))
		return false;
	/*
	 * A clause of a security barrier evaluated before the barrier's own
	 * clauses must not reveal values through an error: only leakproof
	 * operators are pushed above the lowest security level.
	 */
	if (rinfo->security_level > 0 && !get_func_leakproof(get_opcode(test.opno)))
		return false;
	if (is_ordered_type(column_type))
		equality_only = false;
	else if (column_type == TEXTOID)
	{
		if (!OidIsValid(test.inputcollid) || !get_collation_isdeterministic(test.inputcollid))
			return false;
		equality_only = true;
	}
	else if (column_type == BYTEAOID)
		equality_only = true;
	else
		return false;
	return is_family_operator(test.opno, column_type, equality_only);
}

List *
lp_fdw_pushable_clauses(RelOptInfo *baserel, Oid foreigntableid, const LpFdwSource *source)
{
	List	   *pushed = NIL;
	Relation	rel;
	ListCell   *cell;

	if (!lp_fdw_pushdown)
		return NIL;
	rel = table_open(foreigntableid, NoLock);
	foreach(cell, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst(cell);

		if (is_pushable(rel, source, baserel->relid, rinfo))
			pushed = lappend(pushed, rinfo);
	}
	table_close(rel, NoLock);
	return pushed;
}

/* ---- execution ------------------------------------------------------------------ */

/* A pushed clause ready to be evaluated. */
typedef struct FilterTest
{
	PushedTest	test;
	FmgrInfo	function;		/* the operator's */
	ExprState  *value_state;
	/* the value, once evaluated for the scan */
	Datum		value;
	bool		value_isnull;
	/* TEST_ARRAY: the elements */
	int			num_elements;
	Datum	   *elements;
	bool	   *element_nulls;
	bool		has_null_element;

	/*
	 * TEST_ARRAY of at least MIN_HASHED_ELEMENTS elements with an equality
	 * operator (= ANY) or the negator of one (<> ALL) that hashes: the
	 * non-NULL elements by hash, ascending; candidates are confirmed with
	 * the equality operator.
	 */
	bool		hashed;
	bool		hashed_negated; /* <> ALL: the test is "equal to none" */
	bool		elements_hashed;	/* once the array is known */
	FmgrInfo	equality;
	FmgrInfo	column_hash;
	FmgrInfo	element_hash;
	int			num_hashed;
	struct HashedElement *by_hash;

	/*
	 * An integer equality (int2, int4 or int8 on either side): the non-NULL
	 * elements as int64 in an open-addressing set of their own, looked up
	 * without a function call per row.
	 */
	bool		integer_equality;
	Oid			column_type;
	Oid			element_type;
	int64	   *integer_slots;
	bool	   *integer_used;
	uint64		integer_mask;
} FilterTest;

/* PostgreSQL hashes a ScalarArrayOpExpr from this many elements on (MIN_ARRAY_SIZE_FOR_HASHED_SAOP). */
#define MIN_HASHED_ELEMENTS 9

typedef struct HashedElement
{
	uint32		hash;
	int			element;		/* index in elements */
} HashedElement;

struct LpFdwFilter
{
	int			num_tests;
	FilterTest *tests;
	List	   *attnums;		/* the columns the tests read */
	Bitmapset  *value_attnums;	/* those whose values (not only nullness) they read */
	bool		prepared;
	ExprContext *econtext;		/* where the values are evaluated */
	MemoryContext context;		/* the scan's: the values live as long as it */
};

/*
 * Whether an array test can be hashed: = ANY with a hashable equality, or
 * <> ALL with the negator of one (NOT IN), as PostgreSQL decides for its
 * own ScalarArrayOpExpr (convert_saop_to_hashed_saop).
 */
static void
plan_hashing(FilterTest *test)
{
	Oid			equality = test->test.use_or ? test->test.opno : get_negator(test->test.opno);
	RegProcedure column_hash;
	RegProcedure element_hash;

	if (!OidIsValid(equality) || !op_hashjoinable(equality, InvalidOid) ||
		!get_op_hash_functions(equality, &column_hash, &element_hash))
		return;
	test->hashed = true;
	test->hashed_negated = !test->test.use_or;
	fmgr_info(get_opcode(equality), &test->equality);
	fmgr_info(column_hash, &test->column_hash);
	fmgr_info(element_hash, &test->element_hash);
	switch (get_opcode(equality))
	{
		case F_INT2EQ:
		case F_INT4EQ:
		case F_INT8EQ:
		case F_INT24EQ:
		case F_INT42EQ:
		case F_INT28EQ:
		case F_INT82EQ:
		case F_INT48EQ:
		case F_INT84EQ:
			test->integer_equality = true;
			op_input_types(equality, &test->column_type, &test->element_type);
			break;
		default:
			break;
	}
}

static int64
integer_of(Oid type, Datum value)
{
	return type == INT2OID ? DatumGetInt16(value) :
		type == INT4OID ? DatumGetInt32(value) : DatumGetInt64(value);
}

/* The slot where an integer's probe starts (MurmurHash3's 64-bit finalizer). */
static uint64
integer_slot(const FilterTest *test, int64 value)
{
	uint64		x = (uint64) value;

	x ^= x >> 33;
	x *= UINT64CONST(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64CONST(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x & test->integer_mask;
}

/* The non-NULL elements of an integer equality in a set at most a quarter full (misses probe little). */
static void
hash_integer_elements(FilterTest *test)
{
	uint64		size = 16;

	while (size < (uint64) test->num_elements * 4)
		size *= 2;
	test->integer_mask = size - 1;
	test->integer_slots = palloc(sizeof(int64) * size);
	test->integer_used = palloc0(sizeof(bool) * size);
	for (int i = 0; i < test->num_elements; i++)
	{
		int64		value;
		uint64		slot;

		if (test->element_nulls[i])
			continue;
		value = integer_of(test->element_type, test->elements[i]);
		for (slot = integer_slot(test, value);
			 test->integer_used[slot] && test->integer_slots[slot] != value;
			 slot = (slot + 1) & test->integer_mask)
			;
		test->integer_used[slot] = true;
		test->integer_slots[slot] = value;
	}
}

static int
compare_hashed(const void *a, const void *b)
{
	uint32		x = ((const HashedElement *) a)->hash;
	uint32		y = ((const HashedElement *) b)->hash;

	return x < y ? -1 : x > y;
}

/* The non-NULL elements by hash, once the array is known. */
static void
hash_elements(FilterTest *test)
{
	test->elements_hashed = true;
	if (test->integer_equality)
	{
		hash_integer_elements(test);
		return;
	}
	test->by_hash = palloc(sizeof(HashedElement) * Max(test->num_elements, 1));
	test->num_hashed = 0;
	for (int i = 0; i < test->num_elements; i++)
		if (!test->element_nulls[i])
		{
			test->by_hash[test->num_hashed].hash =
				DatumGetUInt32(FunctionCall1Coll(&test->element_hash, test->test.inputcollid,
												 test->elements[i]));
			test->by_hash[test->num_hashed++].element = i;
		}
	qsort(test->by_hash, test->num_hashed, sizeof(HashedElement), compare_hashed);
}

/* Whether value equals a non-NULL element, by hash and then the equality operator. */
static bool
equals_an_element(FilterTest *test, Datum value)
{
	uint32		hash;
	int			low = 0;
	int			high = test->num_hashed;

	if (test->integer_equality)
	{
		int64		wanted = integer_of(test->column_type, value);

		for (uint64 slot = integer_slot(test, wanted); test->integer_used[slot];
			 slot = (slot + 1) & test->integer_mask)
			if (test->integer_slots[slot] == wanted)
				return true;
		return false;
	}
	hash = DatumGetUInt32(FunctionCall1Coll(&test->column_hash, test->test.inputcollid, value));
	while (low < high)
	{
		int			middle = low + (high - low) / 2;

		if (test->by_hash[middle].hash < hash)
			low = middle + 1;
		else
			high = middle;
	}
	for (; low < test->num_hashed && test->by_hash[low].hash == hash; low++)
		if (DatumGetBool(FunctionCall2Coll(&test->equality, test->test.inputcollid, value,
										   test->elements[test->by_hash[low].element])))
			return true;
	return false;
}

LpFdwFilter *
lp_fdw_filter_begin(List *clauses, Index relid, PlanState *parent)
{
	LpFdwFilter *filter = palloc0(sizeof(LpFdwFilter));
	ListCell   *cell;

	filter->tests = palloc0(sizeof(FilterTest) * Max(list_length(clauses), 1));
	filter->context = CurrentMemoryContext;
	filter->econtext = parent->ps_ExprContext;
	foreach(cell, clauses)
	{
		FilterTest *test = &filter->tests[filter->num_tests++];

		if (!decompose(lfirst(cell), relid, &test->test))
			elog(ERROR, "lance_fdw cannot evaluate a pushed clause of node type %d",
				 (int) nodeTag(lfirst(cell)));
		if (!list_member_int(filter->attnums, test->test.attnum))
			filter->attnums = lappend_int(filter->attnums, test->test.attnum);
		if (test->test.kind != TEST_NULL && test->test.kind != TEST_NOT_NULL)
			filter->value_attnums = bms_add_member(filter->value_attnums, test->test.attnum);
		if (test->test.kind == TEST_COMPARE || test->test.kind == TEST_ARRAY)
		{
			fmgr_info(get_opcode(test->test.opno), &test->function);
			test->value_state = ExecInitExpr(test->test.value, parent);
		}
		if (test->test.kind == TEST_ARRAY)
			plan_hashing(test);
	}
	return filter;
}

List *
lp_fdw_filter_columns(const LpFdwFilter *filter)
{
	return filter->attnums;
}

bool
lp_fdw_filter_needs_value(const LpFdwFilter *filter, AttrNumber attnum)
{
	return bms_is_member(attnum, filter->value_attnums);
}

/* Evaluate the tests' values, once per scan (they are fixed for it). */
static void
prepare_values(LpFdwFilter *filter)
{
	MemoryContext old = MemoryContextSwitchTo(filter->context);

	for (int t = 0; t < filter->num_tests; t++)
	{
		FilterTest *test = &filter->tests[t];
		int16		typlen;
		bool		typbyval;
		char		typalign;

		if (test->value_state == NULL)
			continue;
		test->value = ExecEvalExpr(test->value_state, filter->econtext, &test->value_isnull);
		get_typlenbyvalalign(exprType((Node *) test->test.value), &typlen, &typbyval, &typalign);
		if (!test->value_isnull)
			test->value = datumCopy(test->value, typbyval, typlen);
		/* a rescan may bring another array (an external parameter) */
		test->has_null_element = false;
		test->elements_hashed = false;
		if (test->test.kind == TEST_ARRAY && !test->value_isnull)
		{
			ArrayType  *array = DatumGetArrayTypeP(test->value);

			get_typlenbyvalalign(ARR_ELEMTYPE(array), &typlen, &typbyval, &typalign);
			deconstruct_array(array, ARR_ELEMTYPE(array), typlen, typbyval, typalign,
							  &test->elements, &test->element_nulls, &test->num_elements);
			for (int i = 0; i < test->num_elements; i++)
				test->has_null_element |= test->element_nulls[i];
			if (test->hashed && test->num_elements >= MIN_HASHED_ELEMENTS)
				hash_elements(test);
		}
	}
	MemoryContextSwitchTo(old);
	filter->prepared = true;
}

void
lp_fdw_filter_rewind(LpFdwFilter *filter)
{
	/* external parameters may have changed between executions of a cached plan */
	filter->prepared = false;
}

static bool
compare(FilterTest *test, Datum column, Datum value)
{
	if (test->test.column_first)
		return DatumGetBool(FunctionCall2Coll(&test->function, test->test.inputcollid, column, value));
	return DatumGetBool(FunctionCall2Coll(&test->function, test->test.inputcollid, value, column));
}

/*
 * Whether a row satisfies test: its clause is true (false and NULL do not
 * match, as in WHERE).  Operators are strict, so a NULL argument gives NULL.
 */
static bool
test_matches(FilterTest *test, Datum value, bool isnull)
{
	switch (test->test.kind)
	{
		case TEST_NULL:
			return isnull;
		case TEST_NOT_NULL:
			return !isnull;
		case TEST_TRUE:
			return !isnull && DatumGetBool(value);
		case TEST_NOT_TRUE:
			return isnull || !DatumGetBool(value);
		case TEST_FALSE:
			return !isnull && !DatumGetBool(value);
		case TEST_NOT_FALSE:
			return isnull || DatumGetBool(value);
		case TEST_COMPARE:
			return !isnull && !test->value_isnull && compare(test, value, test->value);
		case TEST_ARRAY:
			if (test->value_isnull)
				return false;
			/* an empty array gives false for ANY and true for ALL, even for a NULL column */
			if (test->num_elements == 0)
				return !test->test.use_or;
			if (isnull)
				return false;
			if (test->elements_hashed)
			{
				/* x = ANY: some element equal (else NULL with a NULL element, no match) */
				if (!test->hashed_negated)
					return equals_an_element(test, value);
				/* x <> ALL: no element equal and none NULL */
				return !test->has_null_element && !equals_an_element(test, value);
			}
			if (test->test.use_or)
			{
				for (int i = 0; i < test->num_elements; i++)
					if (!test->element_nulls[i] && compare(test, value, test->elements[i]))
						return true;
				return false;
			}
			/* ALL is true only when every element gives true; a NULL element never does */
			if (test->has_null_element)
				return false;
			for (int i = 0; i < test->num_elements; i++)
				if (!compare(test, value, test->elements[i]))
					return false;
			return true;
	}
	return false;
}

bool
lp_fdw_filter_matches(LpFdwFilter *filter, const Datum *values, const bool *isnull)
{
	if (!filter->prepared)
		prepare_values(filter);
	for (int t = 0; t < filter->num_tests; t++)
	{
		FilterTest *test = &filter->tests[t];
		int			i = test->test.attnum - 1;

		if (!test_matches(test, values[i], isnull[i]))
			return false;
	}
	return true;
}

/* The strategy of test's operator in column_type's default btree family, with the column on the left; 0 when none. */
static StrategyNumber
column_strategy(const FilterTest *test, Oid column_type)
{
	Oid			opclass = GetDefaultOpClass(column_type, BTREE_AM_OID);
	StrategyNumber strategy;

	if (!OidIsValid(opclass))
		return InvalidStrategy;
	strategy = (StrategyNumber) get_op_opfamily_strategy(test->test.opno, get_opclass_family(opclass));
	/* <> is no member of the family */
	if (strategy == InvalidStrategy || test->test.column_first || strategy == BTEqualStrategyNumber)
		return strategy;
	/* value < column is column > value */
	return BTMaxStrategyNumber + 1 - strategy;
}

List *
lp_fdw_filter_index_terms(LpFdwFilter *filter, AttrNumber attnum, Oid column_type)
{
	List	   *terms = NIL;

	if (!filter->prepared)
		prepare_values(filter);
	for (int t = 0; t < filter->num_tests; t++)
	{
		FilterTest *test = &filter->tests[t];
		LpFdwIndexTerm *term;
		StrategyNumber strategy;

		if (test->test.attnum != attnum || test->value_isnull ||
			(test->test.kind != TEST_COMPARE && test->test.kind != TEST_ARRAY))
			continue;
		strategy = column_strategy(test, column_type);
		if (strategy == InvalidStrategy ||
			(test->test.kind == TEST_ARRAY && (!test->test.use_or || strategy != BTEqualStrategyNumber)))
			continue;
		term = palloc0(sizeof(LpFdwIndexTerm));
		term->strategy = strategy;
		if (test->test.kind == TEST_COMPARE)
		{
			term->value_type = exprType((Node *) test->test.value);
			term->num_values = 1;
			term->values = &test->value;
		}
		else
		{
			term->value_type = get_element_type(exprType((Node *) test->test.value));
			term->values = palloc(sizeof(Datum) * Max(test->num_elements, 1));
			for (int i = 0; i < test->num_elements; i++)
				if (!test->element_nulls[i])
					term->values[term->num_values++] = test->elements[i];
		}
		terms = lappend(terms, term);
	}
	return terms;
}
