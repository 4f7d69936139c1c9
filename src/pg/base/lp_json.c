/*
 * lp_json.c - JSON text helpers shared by the SQL functions.
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "utils/json.h"

#include "base/lp_json.h"

/*
 * Metadata values are bytes on the wire and UTF-8 text in practice.  Values
 * that are not valid text in the database encoding are shown as a bytea
 * literal so that nothing is lost or mangled.
 */
static void
append_metadata_value(StringInfo out, const LpBytes *value)
{
	bool		is_text;

	is_text = memchr(value->data, '\0', value->len) == NULL &&
		pg_verifymbstr((const char *) value->data, (int) value->len, true);
	if (is_text)
	{
		char	   *text = pnstrdup((const char *) value->data, value->len);

		escape_json(out, text);
		pfree(text);
	}
	else
	{
		StringInfoData hex;

		initStringInfo(&hex);
		appendStringInfoString(&hex, "\\x");
		for (size_t i = 0; i < value->len; i++)
			appendStringInfo(&hex, "%02x", value->data[i]);
		escape_json(out, hex.data);
		pfree(hex.data);
	}
}

void
lp_json_append_metadata(StringInfo out, const LpKeyValue *metadata, uint32_t count)
{
	appendStringInfoChar(out, '{');
	for (uint32_t i = 0; i < count; i++)
	{
		if (i > 0)
			appendStringInfoString(out, ", ");
		escape_json(out, metadata[i].key);
		appendStringInfoString(out, ": ");
		append_metadata_value(out, &metadata[i].value);
	}
	appendStringInfoChar(out, '}');
}
