/*
 * lp_fdw_options.c - lance_fdw options: the table of valid options and their
 * contexts, the validator, and reading options back from the catalogs.
 *
 * Options naming server paths (root, uri) may only be set by roles with the
 * privileges of pg_read_server_files, as file_fdw requires for filename:
 * whoever can set them can make the server read any file, and checking at
 * set time is what keeps the check from being bypassed (a table created by
 * a privileged role may then be granted to others).  An s3:// root names no
 * server file: it is the scope of the server's S3 settings and of its user
 * mappings' credentials, whose values lp_pg_s3_config checks.
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "fdw/lp_fdw.h"
#include "store/lp_pg_s3_config.h"
#include "store/lp_pg_storage.h"

typedef struct LpFdwOption
{
	const char *name;
	Oid			context;		/* catalog the option belongs to */
	bool		is_path;		/* names server files (unless s3://): needs pg_read_server_files */
} LpFdwOption;

static const LpFdwOption valid_options[] = {
	{"root", ForeignServerRelationId, true},
	{"endpoint", ForeignServerRelationId, false},
	{"region", ForeignServerRelationId, false},
	{"url_style", ForeignServerRelationId, false},
	{"allow_http", ForeignServerRelationId, false},
	{"batch_size", ForeignServerRelationId, false},
	{"access_key_id", UserMappingRelationId, false},
	{"secret_access_key", UserMappingRelationId, false},
	{"session_token", UserMappingRelationId, false},
	{"uri", ForeignTableRelationId, true},
	{"version", ForeignTableRelationId, false},
	{"batch_size", ForeignTableRelationId, false},
	{"column_name", AttributeRelationId, false},
	{"blob", AttributeRelationId, false},
	{NULL, InvalidOid, false}
};

PG_FUNCTION_INFO_V1(lance_fdw_validator);

static const LpFdwOption *
find_option(const char *name, Oid context)
{
	for (const LpFdwOption *option = valid_options; option->name; option++)
		if (option->context == context && strcmp(option->name, name) == 0)
			return option;
	return NULL;
}

static void
reject_unknown_option(const char *name, Oid context)
{
	StringInfoData names;

	initStringInfo(&names);
	for (const LpFdwOption *option = valid_options; option->name; option++)
		if (option->context == context)
			appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "", option->name);
	/* a user mapping's statement may hold secrets: keep it out of the log */
	ereport(ERROR,
			errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
			errmsg("invalid option \"%s\"", name),
			names.len > 0
			? errhint("Valid options in this context are: %s", names.data)
			: errhint("There are no valid options in this context."),
			errhidestmt(context == UserMappingRelationId));
}

void
lp_fdw_check_path_privilege(const char *what)
{
	if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES))
		ereport(ERROR,
				errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("permission denied to %s", what),
				errhint("Only roles with privileges of the \"%s\" role may read Lance data on the server.",
						"pg_read_server_files"));
}

/* A dataset version: decimal digits, at least 1. */
static uint64
parse_version(const char *value)
{
	uint64		version = 0;

	for (const char *p = value; *p; p++)
	{
		if (*p < '0' || *p > '9' || version > (PG_UINT64_MAX - 9) / 10)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("invalid value for option \"%s\": \"%s\"", "version", value),
					errhint("A dataset version is a positive integer."));
		version = version * 10 + (uint64) (*p - '0');
	}
	if (value[0] == '\0' || version == 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("invalid value for option \"%s\": \"%s\"", "version", value),
				errhint("A dataset version is a positive integer."));
	return version;
}

/* Rows an INSERT hands over at a time: 1 to MAX_BATCH_SIZE. */
#define MAX_BATCH_SIZE 100000

static int
parse_batch_size(const char *value)
{
	int			size;

	if (!parse_int(value, &size, 0, NULL) || size < 1 || size > MAX_BATCH_SIZE)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("invalid value for option \"%s\": \"%s\"", "batch_size", value),
				errhint("The batch size is an integer from 1 to %d.", MAX_BATCH_SIZE));
	return size;
}

Datum
lance_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			catalog = PG_GETARG_OID(1);
	List	   *seen = NIL;
	bool		has_uri = false;
	ListCell   *cell;

	foreach(cell, options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);
		const LpFdwOption *option = find_option(def->defname, catalog);
		char	   *value;

		if (option == NULL)
			reject_unknown_option(def->defname, catalog);
		if (list_member(seen, makeString(def->defname)))
			ereport(ERROR,
					errcode(ERRCODE_SYNTAX_ERROR),
					errmsg("conflicting or redundant options"),
					errdetail("Option \"%s\" is given more than once.", def->defname),
					errhidestmt(catalog == UserMappingRelationId));
		seen = lappend(seen, makeString(def->defname));
		value = defGetString(def);
		if (option->is_path && !(catalog == ForeignServerRelationId && lp_is_s3_uri(value)))
		{
			lp_fdw_check_path_privilege(psprintf("set option \"%s\"", def->defname));
			/* the URI form is checked now; existence at use */
			(void) lp_store_for_uri(value, NULL);
		}
		if (strcmp(def->defname, "uri") == 0)
			has_uri = true;
		else if (strcmp(def->defname, "version") == 0)
			parse_version(value);
		else if (strcmp(def->defname, "batch_size") == 0)
			parse_batch_size(value);
		else if (strcmp(def->defname, "column_name") == 0 && value[0] == '\0')
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("option \"%s\" must not be empty", "column_name"));
		else if (strcmp(def->defname, "blob") == 0 &&
				 strcmp(value, "payload") != 0 && strcmp(value, "descriptor") != 0)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("invalid value for option \"%s\": \"%s\"", "blob", value),
					errhint("Valid values are \"payload\" and \"descriptor\"."));
	}
	if (catalog == ForeignServerRelationId)
		lp_s3_check_server_options(options);
	else if (catalog == UserMappingRelationId)
		lp_s3_check_mapping_options(options);
	if (catalog == ForeignTableRelationId && !has_uri)
		ereport(ERROR,
				errcode(ERRCODE_FDW_DYNAMIC_PARAMETER_VALUE_NEEDED),
				errmsg("option \"%s\" is required for lance_fdw foreign tables", "uri"),
				errhint("Give the path of a Lance dataset directory or of a .lance data file."));
	PG_RETURN_VOID();
}

/* ---- reading options back ---------------------------------------------------- */

char *
lp_fdw_location(const char *uri, const char *root)
{
	char	   *path = lp_key_for_uri(uri);

	if (path[0] != '/' && !lp_is_s3_uri(path) && root != NULL)
		return psprintf("%s/%s", lp_key_for_uri(root), path);
	return path;
}

char *
lp_fdw_server_root(Oid serverid)
{
	ForeignServer *server = GetForeignServer(serverid);
	ListCell   *cell;

	foreach(cell, server->options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, "root") == 0)
			return defGetString(def);
	}
	return NULL;
}

void
lp_fdw_table_options(Oid foreigntableid, LpFdwTableOptions *options)
{
	ForeignTable *table = GetForeignTable(foreigntableid);
	ListCell   *cell;

	memset(options, 0, sizeof(*options));
	foreach(cell, table->options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, "uri") == 0)
			options->uri = defGetString(def);
		else if (strcmp(def->defname, "version") == 0)
		{
			options->has_version = true;
			options->version = parse_version(defGetString(def));
		}
	}
	if (options->uri == NULL)
		ereport(ERROR,
				errcode(ERRCODE_FDW_DYNAMIC_PARAMETER_VALUE_NEEDED),
				errmsg("foreign table \"%s\" has no option \"%s\"",
					   get_rel_name(foreigntableid), "uri"));
	options->server = table->serverid;
	options->path = lp_fdw_location(options->uri, lp_fdw_server_root(table->serverid));
}

/* The batch_size option of options, or 0 if it has none. */
static int
batch_size_option(List *options)
{
	ListCell   *cell;

	foreach(cell, options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, "batch_size") == 0)
			return parse_batch_size(defGetString(def));
	}
	return 0;
}

int
lp_fdw_insert_batch_size(Oid foreigntableid)
{
	ForeignTable *table = GetForeignTable(foreigntableid);
	int			size = batch_size_option(table->options);

	if (size == 0)
		size = batch_size_option(GetForeignServer(table->serverid)->options);
	return size == 0 ? 1 : size;
}

char *
lp_fdw_column_field_name(Oid relid, AttrNumber attnum, const char *attname)
{
	ListCell   *cell;

	foreach(cell, GetForeignColumnOptions(relid, attnum))
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, "column_name") == 0)
			return defGetString(def);
	}
	return pstrdup(attname);
}

bool
lp_fdw_column_reads_payload(Oid relid, AttrNumber attnum)
{
	ListCell   *cell;

	foreach(cell, GetForeignColumnOptions(relid, attnum))
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, "blob") == 0)
			return strcmp(defGetString(def), "payload") == 0;
	}
	return false;
}
