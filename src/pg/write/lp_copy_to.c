/*
 * lp_copy_to.c - COPY table_or_query TO '<dataset uri>' WITH (format 'lance')
 * as write_dataset, through a ProcessUtility hook (the way pg_parquet
 * extends COPY).
 *
 * The hook is installed only when the library is loaded by
 * shared_preload_libraries; otherwise COPY is PostgreSQL's own, which does
 * not know format 'lance'.  Options: mode (create, append, overwrite;
 * create by default, as write_dataset), file_version and
 * max_rows_per_file, with write_dataset's defaults.  The query of
 * COPY (query) TO is taken from the statement's text with PostgreSQL's own
 * scanner, so it runs exactly as written; COPY table (columns) TO reads
 * those columns of the table.
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/scanner.h"
#include "tcop/utility.h"
#include "utils/builtins.h"

#include "write/lp_copy_to.h"
#include "write/lp_write_sql.h"

static ProcessUtility_hook_type previous_utility_hook = NULL;

/* The format option of a COPY statement, or NULL. */
static const char *
copy_format(const CopyStmt *stmt)
{
	ListCell   *cell;

	foreach(cell, stmt->options)
	{
		DefElem    *option = lfirst(cell);

		if (strcmp(option->defname, "format") == 0)
			return defGetString(option);
	}
	return NULL;
}

/*
 * The text of the query of COPY (query) TO: what lies between the
 * parenthesis after COPY and the one that closes it, found with the
 * SQL scanner so that quotes, comments and nested parentheses count.
 */
static char *
copy_query_text(const char *statement)
{
	core_yy_extra_type extra;
	core_yyscan_t scanner = scanner_init(statement, &extra, &ScanKeywords, ScanKeywordTokens);
	core_YYSTYPE value;
	YYLTYPE		location;
	int			depth = 0;
	int			start = -1;
	char	   *result = NULL;

	for (;;)
	{
		int			token = core_yylex(&value, &location, scanner);

		if (token == 0)
			break;
		if (token == '(')
		{
			if (depth++ == 0)
				start = location + 1;
		}
		else if (token == ')' && depth > 0 && --depth == 0)
		{
			result = pnstrdup(statement + start, location - start);
			break;
		}
	}
	scanner_finish(scanner);
	if (result == NULL)
		elog(ERROR, "could not find the query of COPY statement \"%s\"", statement);
	return result;
}

/* The query that reads what COPY table (columns) TO reads. */
static char *
copy_relation_query(const CopyStmt *stmt)
{
	StringInfoData query;
	ListCell   *cell;

	initStringInfo(&query);
	appendStringInfoString(&query, "SELECT ");
	if (stmt->attlist == NIL)
		appendStringInfoChar(&query, '*');
	foreach(cell, stmt->attlist)
		appendStringInfo(&query, "%s%s", cell == list_head(stmt->attlist) ? "" : ", ",
						 quote_identifier(strVal(lfirst(cell))));
	appendStringInfo(&query, " FROM ONLY %s",
					 stmt->relation->schemaname != NULL ?
					 quote_qualified_identifier(stmt->relation->schemaname, stmt->relation->relname) :
					 quote_identifier(stmt->relation->relname));
	return query.data;
}

static uint64
run_lance_copy(const CopyStmt *stmt, const char *statement)
{
	LpWriteMode mode = LP_WRITE_CREATE;
	const char *file_version = "2.2";
	int64		max_rows_per_file = 1048576;
	LpWriteResult result;
	ListCell   *cell;

	foreach(cell, stmt->options)
	{
		DefElem    *option = lfirst(cell);

		if (strcmp(option->defname, "format") == 0)
			continue;
		else if (strcmp(option->defname, "mode") == 0)
			mode = lp_write_mode(defGetString(option));
		else if (strcmp(option->defname, "file_version") == 0)
			file_version = defGetString(option);
		else if (strcmp(option->defname, "max_rows_per_file") == 0)
			max_rows_per_file = defGetInt64(option);
		else
			ereport(ERROR,
					errcode(ERRCODE_SYNTAX_ERROR),
					errmsg("COPY option \"%s\" is not supported with format lance", option->defname),
					errhint("Format lance takes the options mode, file_version and max_rows_per_file."));
	}
	if (stmt->is_program || stmt->filename == NULL)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("COPY with format lance writes to a dataset URI"),
				errhint("Give the dataset's path or s3:// URI as the COPY target."));
	if (stmt->whereClause != NULL)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("WHERE is not supported by COPY TO"));
	lp_write_dataset_run(stmt->filename,
						 stmt->query != NULL ? copy_query_text(statement) : copy_relation_query(stmt),
						 mode, lp_write_file_version(file_version), max_rows_per_file, NIL, &result);
	return result.num_rows;
}

static void
lp_copy_to_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				   ProcessUtilityContext context, ParamListInfo params,
				   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (IsA(parsetree, CopyStmt) && !((CopyStmt *) parsetree)->is_from)
	{
		const CopyStmt *stmt = (const CopyStmt *) parsetree;
		const char *format = copy_format(stmt);

		if (format != NULL && strcmp(format, "lance") == 0)
		{
			const char *statement = pstmt->stmt_len > 0 ?
				pnstrdup(queryString + pstmt->stmt_location, pstmt->stmt_len) :
				queryString + Max(pstmt->stmt_location, 0);
			uint64		rows = run_lance_copy(stmt, statement);

			if (qc != NULL)
				SetQueryCompletion(qc, CMDTAG_COPY, rows);
			return;
		}
	}
	if (previous_utility_hook != NULL)
		previous_utility_hook(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
}

void
LpCopyToInit(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	previous_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = lp_copy_to_utility;
}
