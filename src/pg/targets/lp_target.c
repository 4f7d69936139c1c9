/*
 * lp_target.c - targets as signed jsonb values.
 *
 * The signature is an HMAC-SHA256 over the canonical text of the jsonb value
 * without its "signature" key (jsonb orders keys, so the text is stable).
 * The keys (lp_target_key.c) are kept in the data directory, so targets stay
 * valid across sessions and restarts of the cluster that made them (and in
 * clusters given the same keys), and a value edited by hand is refused.  A
 * target names the key that signed it ("key_id", part of the signed text),
 * so verifying it is one HMAC; a target of 0.2.0 has no key id and is
 * verified against each key.
 */
#include "postgres.h"

#include "common/cryptohash.h"
#include "common/hashfn.h"
#include "common/hmac.h"
#include "common/sha2.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#include "dataset/lp_fragment.h"
#include "base/lp_json.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"
#include "targets/lp_target.h"
#include "targets/lp_target_key.h"

/* kind, format, dataset, dataset_version, dataset_tag, base_id, base_path,
 * data_dir, file_name, file_version, columns, fields, schema_metadata,
 * key_id, signature; a target of 0.2.0 has all but key_id */
#define TARGET_KEYS 15

static char *
sign_text(const char *text, const LpTargetKey *key)
{
	pg_hmac_ctx *ctx;
	uint8		digest[PG_SHA256_DIGEST_LENGTH];
	char	   *hex = palloc(PG_SHA256_DIGEST_LENGTH * 2 + 1);

	ctx = pg_hmac_create(PG_SHA256);
	if (ctx == NULL ||
		pg_hmac_init(ctx, key->bytes, LP_TARGET_KEY_LEN) < 0 ||
		pg_hmac_update(ctx, (const uint8 *) text, strlen(text)) < 0 ||
		pg_hmac_final(ctx, digest, sizeof(digest)) < 0)
	{
		pg_hmac_free(ctx);
		ereport(ERROR,
				errcode(ERRCODE_INTERNAL_ERROR),
				errmsg("could not compute the signature of a target"));
	}
	pg_hmac_free(ctx);
	for (int i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
		sprintf(hex + 2 * i, "%02x", digest[i]);
	return hex;
}

static Jsonb *
jsonb_from_text(const char *text)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
}

static char *
jsonb_text(Jsonb *value)
{
	return JsonbToCString(NULL, &value->root, VARSIZE(value));
}

static void
append_fields(StringInfo out, const LpSchema *schema)
{
	appendStringInfoChar(out, '[');
	for (uint32_t i = 0; i < schema->num_fields; i++)
	{
		const LpField *field = &schema->fields[i];

		if (i > 0)
			appendStringInfoString(out, ", ");
		appendStringInfo(out, "{\"id\": %d, \"parent_id\": %d, \"name\": ",
						 field->id, field->parent_id);
		escape_json(out, field->name);
		appendStringInfoString(out, ", \"logical_type\": ");
		escape_json(out, field->logical_type);
		appendStringInfo(out, ", \"nullable\": %s, \"encoding\": %d, \"extension_name\": ",
						 field->nullable ? "true" : "false", field->legacy_encoding);
		escape_json(out, field->extension_name ? field->extension_name : "");
		appendStringInfo(out, ", \"unenforced_primary_key\": %s, \"metadata\": ",
						 field->unenforced_primary_key ? "true" : "false");
		lp_json_append_metadata(out, field->metadata, field->num_metadata);
		appendStringInfoChar(out, '}');
	}
	appendStringInfoChar(out, ']');
}

/* The target as JSON text without the signature; key_id NULL for a target of 0.2.0. */
static char *
unsigned_text(const LpTarget *target, const char *key_id)
{
	StringInfoData out;
	ListCell   *cell;

	initStringInfo(&out);
	appendStringInfo(&out, "{\"kind\": \"lance_parts.target\", \"format\": %d, \"dataset\": ",
					 LP_TARGET_FORMAT);
	escape_json(&out, target->dataset);
	appendStringInfo(&out, ", \"dataset_version\": " INT64_FORMAT ", \"dataset_tag\": ",
					 target->dataset_version);
	escape_json(&out, target->dataset_tag);
	if (target->has_base_id)
		appendStringInfo(&out, ", \"base_id\": %d", target->base_id);
	else
		appendStringInfoString(&out, ", \"base_id\": null");
	appendStringInfoString(&out, ", \"base_path\": ");
	escape_json(&out, target->base_path);
	appendStringInfoString(&out, ", \"data_dir\": ");
	escape_json(&out, target->data_dir);
	appendStringInfoString(&out, ", \"file_name\": ");
	escape_json(&out, target->file_name);
	appendStringInfoString(&out, ", \"file_version\": ");
	escape_json(&out, lp_file_version_name(target->file_version));
	appendStringInfoString(&out, ", \"columns\": ");
	if (target->columns == NIL)
		appendStringInfoString(&out, "null");
	else
	{
		appendStringInfoChar(&out, '[');
		foreach(cell, target->columns)
		{
			if (cell != list_head(target->columns))
				appendStringInfoString(&out, ", ");
			escape_json(&out, lfirst(cell));
		}
		appendStringInfoChar(&out, ']');
	}
	appendStringInfoString(&out, ", \"fields\": ");
	append_fields(&out, &target->schema);
	appendStringInfoString(&out, ", \"schema_metadata\": ");
	lp_json_append_metadata(&out, target->schema.metadata, target->schema.num_metadata);
	if (key_id != NULL)
	{
		appendStringInfoString(&out, ", \"key_id\": ");
		escape_json(&out, key_id);
	}
	appendStringInfoChar(&out, '}');

	/* canonical form: as jsonb prints it */
	return jsonb_text(jsonb_from_text(out.data));
}

Jsonb *
lp_target_to_jsonb(const LpTarget *target)
{
	int			num_keys;
	const LpTargetKey *signing_key = &lp_target_keys(&num_keys)[0];
	char	   *text = unsigned_text(target, signing_key->id);
	char	   *signature = sign_text(text, signing_key);
	StringInfoData out;

	/* text is a JSON object: insert the signature before its closing brace */
	initStringInfo(&out);
	appendBinaryStringInfo(&out, text, strlen(text) - 1);
	appendStringInfo(&out, ", \"signature\": \"%s\"}", signature);
	return jsonb_from_text(out.data);
}

/* ---- parsing ------------------------------------------------------------ */

static bool
signature_matches(const JsonbValue *signature, const char *expected)
{
	return signature->val.string.len == strlen(expected) &&
		timingsafe_bcmp(signature->val.string.val, expected, strlen(expected)) == 0;
}

static void
invalid_target(const char *detail_fmt, const char *what)
{
	ereport(ERROR,
			errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			errmsg("invalid lance_parts target"),
			errdetail(detail_fmt, what));
}

static JsonbValue *
member(JsonbContainer *object, const char *key, enum jbvType type, bool nullable)
{
	JsonbValue *value = getKeyJsonValueFromContainer(object, key, strlen(key), NULL);

	if (value == NULL)
		invalid_target("The key \"%s\" is missing.", key);
	if (nullable && value->type == jbvNull)
		return NULL;
	if (value->type != type)
		invalid_target("The key \"%s\" has the wrong type.", key);
	return value;
}

static char *
string_member(JsonbContainer *object, const char *key)
{
	JsonbValue *value = member(object, key, jbvString, false);

	return pnstrdup(value->val.string.val, value->val.string.len);
}

static int64
integer_member(JsonbContainer *object, const char *key, int64 min, int64 max)
{
	JsonbValue *value = member(object, key, jbvNumeric, true);
	char	   *text;
	char	   *end;
	long long	result;

	if (value == NULL)
		invalid_target("The key \"%s\" must not be null.", key);
	text = DatumGetCString(DirectFunctionCall1(numeric_out,
											   NumericGetDatum(value->val.numeric)));
	errno = 0;
	result = strtoll(text, &end, 10);
	if (errno != 0 || *end != '\0' || result < min || result > max)
		invalid_target("The key \"%s\" is out of range.", key);
	return result;
}

/* The elements of an array member, as containers or scalars. */
static List *
array_member(JsonbContainer *object, const char *key, bool nullable)
{
	JsonbValue *value = member(object, key, jbvBinary, nullable);
	JsonbIterator *it;
	JsonbValue	element;
	JsonbIteratorToken token;
	List	   *result = NIL;

	if (value == NULL)
		return NIL;
	if (!JsonContainerIsArray(value->val.binary.data))
		invalid_target("The key \"%s\" must be an array.", key);
	it = JsonbIteratorInit(value->val.binary.data);
	while ((token = JsonbIteratorNext(&it, &element, true)) != WJB_DONE)
	{
		if (token == WJB_ELEM)
		{
			JsonbValue *copy = palloc(sizeof(JsonbValue));

			*copy = element;
			result = lappend(result, copy);
		}
	}
	return result;
}

static void
parse_metadata(JsonbValue *value, uint32_t *count, LpKeyValue **metadata)
{
	JsonbIterator *it;
	JsonbValue	item;
	JsonbIteratorToken token;
	uint32_t	n = 0;

	if (value->type != jbvBinary || !JsonContainerIsObject(value->val.binary.data))
		invalid_target("The key \"%s\" must be an object.", "metadata");
	*count = JsonContainerSize(value->val.binary.data);
	*metadata = palloc0(sizeof(LpKeyValue) * Max(*count, 1));
	it = JsonbIteratorInit(value->val.binary.data);
	while ((token = JsonbIteratorNext(&it, &item, true)) != WJB_DONE)
	{
		if (token == WJB_KEY)
			(*metadata)[n].key = pnstrdup(item.val.string.val, item.val.string.len);
		else if (token == WJB_VALUE)
		{
			if (item.type != jbvString)
				invalid_target("The key \"%s\" must map names to strings.", "metadata");
			(*metadata)[n].value.data = (uint8_t *) pnstrdup(item.val.string.val,
															 item.val.string.len);
			(*metadata)[n].value.len = item.val.string.len;
			n++;
		}
	}
}

static void
parse_fields(JsonbContainer *object, LpSchema *schema)
{
	List	   *fields = array_member(object, "fields", false);
	ListCell   *cell;
	uint32_t	i = 0;

	if (fields == NIL)
		invalid_target("The key \"%s\" must not be empty.", "fields");
	schema->num_fields = list_length(fields);
	schema->fields = palloc0(sizeof(LpField) * schema->num_fields);
	foreach(cell, fields)
	{
		JsonbValue *element = lfirst(cell);
		LpField    *field = &schema->fields[i++];
		JsonbContainer *f;

		if (element->type != jbvBinary || !JsonContainerIsObject(element->val.binary.data))
			invalid_target("The key \"%s\" must hold objects.", "fields");
		f = element->val.binary.data;
		field->id = (int32) integer_member(f, "id", -1, PG_INT32_MAX);
		field->parent_id = (int32) integer_member(f, "parent_id", -1, PG_INT32_MAX);
		field->name = string_member(f, "name");
		field->logical_type = string_member(f, "logical_type");
		field->nullable = member(f, "nullable", jbvBool, false)->val.boolean;
		field->legacy_encoding = (int32) integer_member(f, "encoding", PG_INT32_MIN, PG_INT32_MAX);
		field->extension_name = string_member(f, "extension_name");
		field->unenforced_primary_key =
			member(f, "unenforced_primary_key", jbvBool, false)->val.boolean;
		parse_metadata(member(f, "metadata", jbvBinary, false),
					   &field->num_metadata, &field->metadata);
	}
}

/*
 * Even a correctly signed target names only the places create_target gives
 * it, so that no function can be led to write or remove anything elsewhere
 * (should the key be known): a data file name of the generated form, the
 * dataset's canonical path, the dataset itself as the base of a target
 * without base_id, and the data directory of the base.  Whether the paths
 * still resolve to the dataset and base is lp_target_check_binding's part.
 */
static void
check_locations(const LpTarget *target)
{
	if (!lp_data_file_name_valid(target->file_name))
		invalid_target("The key \"%s\" is not a data file name as lance_parts.create_target makes them.",
					   "file_name");
	if (!lp_name_is_canonical(target->dataset))
		invalid_target("The key \"%s\" is not a canonical absolute path.", "dataset");
	if (target->has_base_id ? !lp_name_is_canonical(target->base_path)
		: strcmp(target->base_path, target->dataset) != 0)
		invalid_target("The key \"%s\" is not where lance_parts.create_target puts the base of the target.",
					   "base_path");
	if (strcmp(target->data_dir, lp_require_memory(lp_base_data_dir(target->base_path, true))) != 0 &&
		!(target->has_base_id &&
		  strcmp(target->data_dir, lp_require_memory(lp_base_data_dir(target->base_path, false))) == 0))
		invalid_target("The key \"%s\" is not the data directory of the target's base.",
					   "data_dir");
}

LpTarget *
lp_target_from_jsonb(Jsonb *value)
{
	JsonbContainer *object = &value->root;
	LpTarget   *target = palloc0(sizeof(LpTarget));
	JsonbValue *signature;
	JsonbValue *base_id;
	char	   *key_id;
	char	   *text;
	bool		valid;
	char	   *kind;
	char	   *version_name;
	ListCell   *cell;

	if (!JB_ROOT_IS_OBJECT(value))
		invalid_target("%s", "A target is a JSON object made by lance_parts.create_target.");
	kind = string_member(object, "kind");
	if (strcmp(kind, "lance_parts.target") != 0)
		invalid_target("The key \"%s\" must be \"lance_parts.target\".", "kind");
	if (integer_member(object, "format", 0, PG_INT32_MAX) != LP_TARGET_FORMAT)
		invalid_target("The key \"%s\" names a target format this version does not know.", "format");

	target->dataset = string_member(object, "dataset");
	target->dataset_version = integer_member(object, "dataset_version", 1, PG_INT64_MAX);
	target->dataset_tag = string_member(object, "dataset_tag");
	base_id = member(object, "base_id", jbvNumeric, true);
	target->has_base_id = base_id != NULL;
	if (base_id != NULL)
		target->base_id = (int32) integer_member(object, "base_id", 0, PG_INT32_MAX);
	target->base_path = string_member(object, "base_path");
	target->data_dir = string_member(object, "data_dir");
	target->file_name = string_member(object, "file_name");
	version_name = string_member(object, "file_version");
	if (!lp_file_version_parse(version_name, &target->file_version) ||
		target->file_version == LP_FILE_VERSION_LEGACY)
		invalid_target("The key \"%s\" must be 2.0, 2.1, 2.2 or 2.3.", "file_version");
	foreach(cell, array_member(object, "columns", true))
	{
		JsonbValue *name = lfirst(cell);

		if (name->type != jbvString)
			invalid_target("The key \"%s\" must hold strings.", "columns");
		target->columns = lappend(target->columns,
								  pnstrdup(name->val.string.val, name->val.string.len));
	}
	parse_fields(object, &target->schema);
	parse_metadata(member(object, "schema_metadata", jbvBinary, false),
				   &target->schema.num_metadata, &target->schema.metadata);

	signature = member(object, "signature", jbvString, false);
	key_id = NULL;
	if (getKeyJsonValueFromContainer(object, "key_id", strlen("key_id"), NULL) != NULL)
	{
		key_id = string_member(object, "key_id");
		if (strlen(key_id) != LP_TARGET_KEY_ID_CHARS ||
			strspn(key_id, "0123456789abcdef") != LP_TARGET_KEY_ID_CHARS)
			invalid_target("The key \"%s\" is not a key id as lance_parts.create_target gives it.",
						   "key_id");
	}
	/* every expected key is present: more keys means keys were added */
	if (JsonContainerSize(object) != (key_id != NULL ? TARGET_KEYS : TARGET_KEYS - 1))
		invalid_target("%s", "It has keys that lance_parts.create_target does not give a target.");
	text = unsigned_text(target, key_id);
	if (key_id != NULL)
	{
		const LpTargetKey *key = lp_target_find_key(key_id);

		if (key == NULL)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("lance_parts target for file \"%s\" was signed with a key this cluster does not have",
						   target->file_name),
					errdetail("Its key id is \"%s\": a key retired since, or a key of another cluster that does not share this cluster's target keys.",
							  key_id),
					errhint("lance_parts.target_keys() lists the keys of this cluster."));
		valid = signature_matches(signature, sign_text(text, key));
	}
	else
	{
		int			num_keys;
		const LpTargetKey *keys = lp_target_keys(&num_keys);

		valid = false;
		for (int i = 0; i < num_keys && !valid; i++)
			valid = signature_matches(signature, sign_text(text, &keys[i]));
	}
	if (!valid)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("lance_parts target for file \"%s\" has been modified or was made by another cluster",
					   target->file_name),
				errdetail("Its signature does not match its contents."),
				errhint("Use the value returned by lance_parts.create_target unchanged."));
	check_locations(target);
	return target;
}

char *
lp_target_data_file_path(const LpTarget *target)
{
	return psprintf("%s/%s", target->data_dir, target->file_name);
}

char *
lp_target_staging_dir(const LpTarget *target)
{
	return lp_require_memory(lp_data_file_staging_dir(target->data_dir, target->file_name));
}

char *
lp_target_sidecar_dir(const LpTarget *target)
{
	/* file_name was checked to end in ".lance" (check_locations) */
	return lp_require_memory(lp_data_file_sidecar_dir(target->data_dir, target->file_name));
}

const char *
lp_target_data_dir_in_base(const LpTarget *target)
{
	/* check_locations made data_dir the base itself or <base>/data */
	return strcmp(target->data_dir, target->base_path) == 0 ? "" : LP_DATA_DIR;
}

char *
lp_target_staging_dir_in_base(const LpTarget *target)
{
	return lp_require_memory(lp_data_file_staging_dir(lp_target_data_dir_in_base(target),
													  target->file_name));
}

char *
lp_target_sidecar_dir_in_base(const LpTarget *target)
{
	return lp_require_memory(lp_data_file_sidecar_dir(lp_target_data_dir_in_base(target),
													  target->file_name));
}

/*
 * commit and cleanup_target of one target file are serialized by a lock
 * keyed by the file's resolved path, held by commit from validation to
 * publication and by cleanup_target from its "referenced by a version"
 * check to the end of its removals (cleanup_orphans takes it too, around
 * the removal of an unreferenced data file and its directories).  It is an
 * advisory lock of database 0 (a dataset is shared by every database of the
 * cluster) whose field4 is one pg_advisory_lock never uses (it uses 1 and
 * 2), so no lock a user takes can collide with it.  Callers take it at
 * transaction level, so an ERROR releases it, and release it as soon as
 * they are done.  Writers in other clusters are not serialized by it.
 */
#define TARGET_LOCK_FIELD4 0x4c50	/* "LP" */

void
lp_target_file_lock_tag(const char *data_file_path, LOCKTAG *tag)
{
	uint64		hash = hash_bytes_extended((const unsigned char *) data_file_path,
										   strlen(data_file_path), 0);

	SET_LOCKTAG_ADVISORY(*tag, InvalidOid, (uint32) (hash >> 32), (uint32) hash,
						 TARGET_LOCK_FIELD4);
}

const char *
lp_target_key(const LpTarget *target)
{
	return lp_target_data_file_path(target);
}

/* ---- binding to the dataset and base ------------------------------------- */

static void
foreign_target(const LpTarget *target, const char *detail)
{
	ereport(ERROR,
			errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			errmsg("target for file \"%s\" does not belong to the dataset now at \"%s\"",
				   target->file_name, target->dataset),
			errdetail_internal("%s", detail),
			errhint("Create a new target for this dataset with lance_parts.create_target."));
}

void
lp_target_check_privileges(const LpTarget *target, bool write)
{
	lp_check_read_privilege_for(target->dataset);
	lp_check_read_privilege_for(target->base_path);
	if (write)
	{
		lp_check_write_privilege_for(target->dataset);
		lp_check_write_privilege_for(target->base_path);
	}
}

LpManifest *
lp_target_check_binding(const LpTarget *target, LpManifestNaming *naming)
{
	char	   *key;
	LpStore    *store = lp_store_for_uri(target->dataset, &key);
	char	   *root = lp_resolve_existing_path(store, key, "dataset");
	LpManifest *latest;
	LpManifest *at_creation;
	LpError		err;
	char	   *tag;
	char	   *base_path;
	char	   *data_dir;

	if (strcmp(root, target->dataset) != 0)
		foreign_target(target, psprintf("The path now resolves to \"%s\".", root));
	store = lp_store_below(root);

	latest = lp_read_latest_manifest(store, root, InvalidOid, naming, &err);
	if (latest == NULL)
		lp_raise(&err);
	if (!lp_manifest_check_writable(latest, root, &err))
		lp_raise(&err);

	at_creation = lp_read_manifest_version(store, root, InvalidOid, *naming,
										   (uint64_t) target->dataset_version, &err);
	if (at_creation == NULL)
	{
		if (err.code != LP_ERR_NOT_FOUND)
			lp_raise(&err);
		foreign_target(target,
					   psprintf("The dataset has no version " INT64_FORMAT ", at which the target was made; its versions may have been cleaned up.",
								target->dataset_version));
	}
	tag = lp_require_memory(lp_manifest_tag(at_creation));
	if (strcmp(tag, target->dataset_tag) != 0)
		foreign_target(target,
					   psprintf("Version " INT64_FORMAT " of the dataset is \"%s\", but the target was made at \"%s\".",
								target->dataset_version, tag, target->dataset_tag));
	lp_manifest_free(at_creation);

	lp_resolve_base(latest, target->has_base_id, target->base_id, root, InvalidOid,
					&base_path, &data_dir);
	if (strcmp(base_path, target->base_path) != 0)
		foreign_target(target,
					   psprintf("Its base now resolves to \"%s\", but the target was made for \"%s\".",
								base_path, target->base_path));
	if (strcmp(data_dir, target->data_dir) != 0)
		foreign_target(target,
					   psprintf("The data directory of its base is \"%s\", but the target's data_dir is \"%s\".",
								data_dir, target->data_dir));
	return latest;
}
