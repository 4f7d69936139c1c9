/*
 * lp_fdw_import.c - IMPORT FOREIGN SCHEMA for lance_fdw.
 *
 * The remote "schema" is a directory: every dataset in it (a directory
 * holding _versions/) becomes a foreign table named after it without a
 * ".lance" suffix.  OPTIONS (uri '...') names the directory, or one dataset
 * or .lance data file to import alone; without it the remote schema name is
 * a directory under the server's root option.  Real paths travel in table
 * options, since identifiers stop at 63 bytes.  Every name and value in the
 * generated statements is quoted.
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "dataset/lp_dataset.h"
#include "fdw/lp_fdw.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"

#define LANCE_SUFFIX ".lance"

typedef struct ImportItem
{
	char	   *table_name;
	char	   *path;
} ImportItem;

static bool
is_dataset_directory(LpStore *store, const char *path)
{
	LpStat		st;
	LpError		err;
	char	   *versions = psprintf("%s/%s", path, LP_VERSIONS_DIR);
	bool		result = store->ops->stat(store, versions, true, &st, &err) &&
		st.kind == LP_OBJECT_DIRECTORY;

	pfree(versions);
	return result;
}

/* LpListCallback: collect the names that do not start with a dot. */
static bool
collect_visible_name(void *arg, const char *entry_name, LpError *err)
{
	List	  **names = arg;

	if (entry_name[0] != '.')
		*names = lappend(*names, pstrdup(entry_name));
	return true;
}

/* The last path component (lp_store_for_uri left no trailing slash) without ".lance". */
static char *
table_name_for(const char *path)
{
	char	   *name = pstrdup(path);
	size_t		len;
	char	   *slash;

	slash = strrchr(name, '/');
	if (slash != NULL && slash[1] != '\0')
		name = slash + 1;
	len = strlen(name);
	if (len > strlen(LANCE_SUFFIX) && strcmp(name + len - strlen(LANCE_SUFFIX), LANCE_SUFFIX) == 0)
		name[len - strlen(LANCE_SUFFIX)] = '\0';
	return name;
}

static int
compare_items(const ListCell *a, const ListCell *b)
{
	return strcmp(((ImportItem *) lfirst(a))->table_name,
				  ((ImportItem *) lfirst(b))->table_name);
}

static List *
add_item(List *items, const char *path)
{
	ImportItem *item = palloc(sizeof(ImportItem));

	item->path = pstrdup(path);
	item->table_name = table_name_for(path);
	return lappend(items, item);
}

/* The datasets of a directory, or the one dataset or file path names. */
static List *
find_datasets(const char *uri, Oid server)
{
	char	   *path;
	LpStore    *store = lp_store_for_uri_via(uri, server, &path);
	LpStat		st;
	LpError		err;
	List	   *items = NIL;
	List	   *names = NIL;
	ListCell   *cell;

	lp_store_stat(store, path, true, &st);
	if (st.kind == LP_OBJECT_ABSENT)
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_FILE),
				errmsg("could not open \"%s\" to import Lance datasets: %s", path,
					   lp_absent_reason()));
	if (st.kind != LP_OBJECT_DIRECTORY)
	{
		size_t		len = strlen(path);

		if (len <= strlen(LANCE_SUFFIX) || strcmp(path + len - strlen(LANCE_SUFFIX), LANCE_SUFFIX) != 0)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("\"%s\" is neither a directory nor a .lance data file", path));
		return add_item(NIL, path);
	}
	if (is_dataset_directory(store, path))
		return add_item(NIL, path);

	if (!store->ops->list(store, path, collect_visible_name, &names, &err))
		lp_raise(&err);
	foreach(cell, names)
	{
		char	   *child = psprintf("%s/%s", path, (char *) lfirst(cell));

		if (is_dataset_directory(store, child))
			items = add_item(items, child);
		pfree(child);
	}
	list_sort(items, compare_items);
	return items;
}

static bool
listed(const ImportForeignSchemaStmt *stmt, const char *table_name)
{
	ListCell   *cell;

	foreach(cell, stmt->table_list)
		if (strcmp(((RangeVar *) lfirst(cell))->relname, table_name) == 0)
			return true;
	return false;
}

static char *
create_statement(const ImportForeignSchemaStmt *stmt, const ForeignServer *server,
				 const ImportItem *item)
{
	LpFdwSource *source = lp_fdw_open_source(item->path, server->serverid, false, 0, false);
	StringInfoData sql;
	bool		first = true;

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE FOREIGN TABLE %s.%s (",
					 quote_identifier(stmt->local_schema), quote_identifier(item->table_name));
	for (uint32 i = 0; i < source->schema.num_fields; i++)
	{
		const LpField *field = &source->schema.fields[i];
		LpType	   *type;
		Oid			typid;
		int32		typmod;

		if (field->parent_id != -1 || field->id < 0)
			continue;
		type = lp_fdw_schema_field_type(&source->schema, i, item->path);
		lp_fdw_mapped_type(type, &typid, &typmod);
		lp_type_free(type);
		appendStringInfo(&sql, "%s\n  %s %s", first ? "" : ",",
						 quote_identifier(field->name), format_type_with_typemod(typid, typmod));
		/* Identifiers stop at NAMEDATALEN - 1 bytes; the option keeps the whole name. */
		if (strlen(field->name) >= NAMEDATALEN)
			appendStringInfo(&sql, " OPTIONS (column_name %s)", quote_literal_cstr(field->name));
		if (!field->nullable)
			appendStringInfoString(&sql, " NOT NULL");
		first = false;
	}
	appendStringInfo(&sql, "\n) SERVER %s OPTIONS (uri %s)",
					 quote_identifier(server->servername), quote_literal_cstr(item->path));
	return sql.data;
}

List *
lp_fdw_import_schema(ImportForeignSchemaStmt *stmt, Oid serverOid)
{
	ForeignServer *server = GetForeignServer(serverOid);
	char	   *root = lp_fdw_server_root(serverOid);
	char	   *uri = NULL;
	char	   *path;
	List	   *commands = NIL;
	ListCell   *cell;

	foreach(cell, stmt->options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, "uri") != 0)
			ereport(ERROR,
					errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					errmsg("invalid option \"%s\"", def->defname),
					errhint("Valid options in this context are: %s", "uri"));
		if (uri != NULL)
			ereport(ERROR,
					errcode(ERRCODE_SYNTAX_ERROR),
					errmsg("conflicting or redundant options"),
					errdetail("Option \"%s\" is given more than once.", def->defname));
		uri = defGetString(def);
	}
	lp_fdw_check_path_privilege("import Lance datasets");

	if (uri != NULL)
		path = lp_fdw_location(uri, root);
	else if (root != NULL)
	{
		if (strchr(stmt->remote_schema, '/') != NULL ||
			strcmp(stmt->remote_schema, "..") == 0 || strcmp(stmt->remote_schema, ".") == 0)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("remote schema \"%s\" is not a directory name", stmt->remote_schema),
					errhint("Give the path with OPTIONS (uri '...')."));
		path = lp_fdw_location(stmt->remote_schema, root);
	}
	else
		ereport(ERROR,
				errcode(ERRCODE_FDW_DYNAMIC_PARAMETER_VALUE_NEEDED),
				errmsg("server \"%s\" has no option \"%s\", so IMPORT FOREIGN SCHEMA needs option \"%s\"",
					   server->servername, "root", "uri"),
				errhint("Use IMPORT FOREIGN SCHEMA ... OPTIONS (uri '/some/directory')."));

	foreach(cell, find_datasets(path, serverOid))
	{
		ImportItem *item = lfirst(cell);

		if (stmt->list_type == FDW_IMPORT_SCHEMA_LIMIT_TO && !listed(stmt, item->table_name))
			continue;
		if (stmt->list_type == FDW_IMPORT_SCHEMA_EXCEPT && listed(stmt, item->table_name))
			continue;
		commands = lappend(commands, create_statement(stmt, server, item));
	}
	return commands;
}
