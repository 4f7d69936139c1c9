/*
 * test_manifest.c - manifest parsing and serialization, dataset layout.
 *
 * Expectations come from the reference data: the generator
 * (test/reference/generate.cjs, npm lancedb 0.39.0) writes every "types"
 * dataset as three appends of 300, 170 and 45 rows, and lists what lancedb
 * reported in <data>/manifest.json; the numbers below are those.
 */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/lp_alloc.h"
#include "dataset/lp_dataset.h"
#include "dataset/lp_manifest_internal.h"
#include "base/lp_protobuf.h"
#include "format/lp_schema_internal.h"
#include "lp_test.h"
#include "lp_test_files.h"
#include "lp_test_store.h"
#include "lp_test_util.h"

typedef struct GeneratedDataset
{
	const char *name;
	uint64_t	version;
	LpManifestNaming naming;
	const char *data_format;
	int			n_fragments;
	uint64_t	rows[3];
	uint64_t	reader_flags;
} GeneratedDataset;

static const GeneratedDataset generated[] = {
	{"types_legacy_v1", 3, LP_NAMING_V1, "0.1", 3, {300, 170, 45}, 0},
	{"types_legacy_v2", 3, LP_NAMING_V2, "0.1", 3, {300, 170, 45}, 0},
	{"types_2_0_v1", 3, LP_NAMING_V1, "2.0", 3, {300, 170, 45}, 0},
	{"types_2_0_v2", 3, LP_NAMING_V2, "2.0", 3, {300, 170, 45}, 0},
	{"types_2_1_v1", 3, LP_NAMING_V1, "2.1", 3, {300, 170, 45}, 0},
	{"types_2_1_v2", 3, LP_NAMING_V2, "2.1", 3, {300, 170, 45}, 0},
	{"types_2_2_v1", 3, LP_NAMING_V1, "2.2", 3, {300, 170, 45}, 0},
	{"types_2_2_v2", 3, LP_NAMING_V2, "2.2", 3, {300, 170, 45}, 0},
	{"types_2_3_v1", 3, LP_NAMING_V1, "2.3", 3, {300, 170, 45}, 0},
	{"types_2_3_v2", 3, LP_NAMING_V2, "2.3", 3, {300, 170, 45}, 0},
	/* 120, 150, 90 rows written, then a delete: physical rows stay */
	{"deleted_2_2", 4, LP_NAMING_V2, "2.2", 3, {120, 150, 90}, LP_FLAG_DELETION_FILES},
	{"blob_2_2", 2, LP_NAMING_V2, "2.2", 2, {12, 8}, 0},
	{"multipage_2_0", 2, LP_NAMING_V2, "2.0", 2, {5000, 3000}, 0},
	{"multipage_2_1", 2, LP_NAMING_V2, "2.1", 2, {5000, 3000}, 0},
	{"multipage_2_2", 2, LP_NAMING_V2, "2.2", 2, {5000, 3000}, 0},
	{"multipage_2_3", 2, LP_NAMING_V2, "2.3", 2, {5000, 3000}, 0},
};

/* LP_CHECK_STR for char arrays (whose address is never NULL) */
#define CHECK_TEXT(a, b) \
	LP_CHECK_MSG(strcmp((a), (b)) == 0, "%s == \"%.150s\" (got \"%.150s\")", #a, (b), (a))

#define N_GENERATED (sizeof(generated) / sizeof(generated[0]))

static LpManifest *
read_latest_generated(const char *name, LpManifestNaming *naming)
{
	char		root[1024];
	LpError		err;
	LpManifest *manifest;

	lp_test_dataset_path(name, root, sizeof(root));
	manifest = lp_dataset_read_latest(lp_test_store(), root, naming, &err);
	LP_CHECK_MSG(manifest != NULL, "reading %.150s: %.150s", root, err.message);
	return manifest;
}

LP_TEST(manifest_parse_generated)
{
	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	for (size_t d = 0; d < N_GENERATED; d++)
	{
		const GeneratedDataset *expected = &generated[d];
		LpManifestNaming naming;
		LpManifest *manifest = read_latest_generated(expected->name, &naming);
		const Lance__Table__Manifest *m;
		LpFileVersion file_version;
		LpError		err;

		if (manifest == NULL)
			continue;
		m = manifest->proto;
		LP_CHECK_EQ_U64(m->version, expected->version);
		LP_CHECK_EQ_U64(naming, expected->naming);
		LP_CHECK(m->data_format != NULL);
		LP_CHECK_STR(m->data_format->version, expected->data_format);
		LP_CHECK_STR(m->data_format->file_format, "lance");
		LP_CHECK_STR(m->writer_version->library, "lance");
		LP_CHECK_EQ_U64(m->reader_feature_flags, expected->reader_flags);
		LP_CHECK(lp_manifest_check_readable(manifest, expected->name, &err));
		LP_CHECK(lp_manifest_check_writable(manifest, expected->name, &err));
		LP_CHECK_EQ_U64(m->n_fragments, expected->n_fragments);
		LP_CHECK(m->max_fragment_id_present_case ==
				 LANCE__TABLE__MANIFEST__MAX_FRAGMENT_ID_PRESENT_MAX_FRAGMENT_ID);
		LP_CHECK_EQ_U64(m->max_fragment_id, expected->n_fragments - 1);
		/* lancedb writes the transaction inline and as a file */
		LP_CHECK(manifest->transaction != NULL);
		LP_CHECK(m->transaction_file != NULL && m->transaction_file[0] != '\0');
		LP_CHECK(m->n_fields > 0);

		file_version = LP_FILE_VERSION_LEGACY;
		if (strcmp(expected->data_format, "0.1") != 0)
			LP_CHECK(lp_file_version_parse(expected->data_format, &file_version));

		for (size_t f = 0; f < m->n_fragments && f < 3; f++)
		{
			const Lance__Table__DataFragment *fragment = m->fragments[f];
			const Lance__Table__DataFile *file;
			char		root[1024];
			char		path[2048];
			struct stat st;
			uint16_t	major;
			uint16_t	minor;

			LP_CHECK_EQ_U64(fragment->id, f);
			LP_CHECK_EQ_U64(fragment->physical_rows, expected->rows[f]);
			LP_CHECK_EQ_U64(fragment->n_files, 1);
			if (fragment->n_files != 1)
				continue;
			file = fragment->files[0];
			LP_CHECK(file->base_id_present_case == LANCE__TABLE__DATA_FILE__BASE_ID_PRESENT__NOT_SET);
			lp_test_dataset_path(expected->name, root, sizeof(root));
			snprintf(path, sizeof(path), "%s/data/%s", root, file->path);
			LP_CHECK_MSG(stat(path, &st) == 0 && (uint64_t) st.st_size == file->file_size_bytes,
						 "size of %.150s", path);
			lp_file_version_data_file_numbers(file_version, &major, &minor);
			LP_CHECK_EQ_U64(file->file_major_version, major);
			LP_CHECK_EQ_U64(file->file_minor_version, minor);

			/* Our field -> column mapping must reproduce what Lance recorded. */
			if (file_version != LP_FILE_VERSION_LEGACY)
			{
				int32_t    *ids = NULL;
				int32_t    *columns = NULL;
				size_t		n = 0;
				LpSchema	schema;

				LP_CHECK(lp_manifest_schema(manifest, &schema, &err));
				LP_CHECK(lp_data_file_columns(&schema, NULL, 0, file_version,
											  &ids, &columns, &n, &err));
				lp_schema_free(&schema);
				LP_CHECK_MSG(n == file->n_fields && n == file->n_column_indices,
							 "%.150s: %zu columns, Lance has %zu", expected->name, n,
							 file->n_fields);
				for (size_t i = 0; i < n && i < file->n_fields; i++)
				{
					LP_CHECK_EQ_U64(ids[i], file->fields[i]);
					LP_CHECK_EQ_U64(columns[i], file->column_indices[i]);
				}
				lp_free(ids);
				lp_free(columns);
			}
		}
		lp_manifest_free(manifest);
	}
}

/* Pack a message to bytes (lp_alloc'd) for comparisons. */
static uint8_t *
pack(const ProtobufCMessage *message, size_t *len)
{
	uint8_t    *data;

	*len = protobuf_c_message_get_packed_size(message);
	data = lp_alloc(*len + 1);
	protobuf_c_message_pack(message, data);
	return data;
}

LP_TEST(manifest_round_trip)
{
	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	for (size_t d = 0; d < N_GENERATED; d++)
	{
		LpManifestNaming naming;
		LpManifest *manifest = read_latest_generated(generated[d].name, &naming);
		LpManifest *again;
		uint8_t    *file;
		size_t		file_len;
		uint8_t    *a;
		uint8_t    *b;
		size_t		a_len;
		size_t		b_len;
		LpError		err;

		if (manifest == NULL)
			continue;
		LP_CHECK(lp_manifest_serialize(manifest->proto, manifest->index_section,
									   manifest->index_section_len,
									   manifest->transaction, manifest->transaction_len,
									   &file, &file_len, &err));
		again = lp_manifest_parse("round trip", file, file_len, &err);
		LP_CHECK_MSG(again != NULL, "%.150s: %.150s", generated[d].name, err.message);
		if (again != NULL)
		{
			a = pack((const ProtobufCMessage *) manifest->proto, &a_len);
			b = pack((const ProtobufCMessage *) again->proto, &b_len);
			LP_CHECK(a_len == b_len && memcmp(a, b, a_len) == 0);
			LP_CHECK_EQ_U64(again->proto->version, manifest->proto->version);
			LP_CHECK_EQ_U64(again->proto->n_fragments, manifest->proto->n_fragments);
			LP_CHECK(again->transaction_len == manifest->transaction_len &&
					 memcmp(again->transaction, manifest->transaction,
							manifest->transaction_len) == 0);
			LP_CHECK(again->proto->max_fragment_id_present_case ==
					 manifest->proto->max_fragment_id_present_case);
			lp_free(a);
			lp_free(b);
			lp_manifest_free(again);
		}
		lp_free(file);
		lp_manifest_free(manifest);
	}
}

/* A field number we do not declare survives parse -> serialize -> parse. */
LP_TEST(manifest_unknown_fields_preserved)
{
	LpManifestNaming naming;
	LpManifest *manifest;
	LpManifest *with_unknown;
	LpManifest *again;
	uint8_t    *proto;
	uint8_t    *file;
	size_t		proto_len;
	size_t		file_len;
	uint8_t    *bigger;
	LpError		err;

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	manifest = read_latest_generated("types_2_1_v2", &naming);
	if (manifest == NULL)
		return;
	/* field 99, varint 12345; and a DataFile gets field 50, varint 7 */
	proto = pack((const ProtobufCMessage *) manifest->proto, &proto_len);
	bigger = lp_alloc(proto_len + 8);
	memcpy(bigger, proto, proto_len);
	bigger[proto_len] = 0x98;	/* (99 << 3) | 0 = 792 = 0x318 */
	bigger[proto_len + 1] = 0x06;
	bigger[proto_len + 2] = 0xb9;	/* 12345 */
	bigger[proto_len + 3] = 0x60;
	lp_protobuf_free((ProtobufCMessage *) manifest->proto);
	LP_CHECK(lp_protobuf_unpack(&lance__table__manifest__descriptor, bigger, proto_len + 4,
								(ProtobufCMessage **) &manifest->proto) == LP_UNPACK_OK);
	LP_CHECK_EQ_U64(manifest->proto->base.n_unknown_fields, 1);
	LP_CHECK(lp_manifest_serialize(manifest->proto, NULL, 0, NULL, 0, &file, &file_len, &err));
	with_unknown = lp_manifest_parse("unknown", file, file_len, &err);
	LP_CHECK(with_unknown != NULL);
	if (with_unknown != NULL)
	{
		LP_CHECK_EQ_U64(with_unknown->proto->base.n_unknown_fields, 1);
		if (with_unknown->proto->base.n_unknown_fields == 1)
		{
			LP_CHECK_EQ_U64(with_unknown->proto->base.unknown_fields[0].tag, 99);
			LP_CHECK_EQ_U64(with_unknown->proto->base.unknown_fields[0].len, 2);
		}
		/* and the absent sections stay absent */
		LP_CHECK(with_unknown->index_section == NULL && with_unknown->transaction == NULL);
		LP_CHECK(with_unknown->proto->transaction_section_present_case ==
				 LANCE__TABLE__MANIFEST__TRANSACTION_SECTION_PRESENT__NOT_SET);
		again = lp_manifest_parse("again", file, file_len, &err);
		LP_CHECK(again != NULL);
		lp_manifest_free(again);
		lp_manifest_free(with_unknown);
	}
	lp_free(file);
	lp_free(bigger);
	lp_free(proto);
	lp_manifest_free(manifest);
}

LP_TEST(manifest_presence_of_optional_fields)
{
	Lance__Table__Manifest m = LANCE__TABLE__MANIFEST__INIT;
	Lance__Table__DataFile file = LANCE__TABLE__DATA_FILE__INIT;
	uint8_t    *data;
	size_t		len;

	/* absent: nothing on the wire */
	data = pack((const ProtobufCMessage *) &m, &len);
	LP_CHECK_EQ_U64(len, 0);
	lp_free(data);
	/* present with value 0: written (tag 11 varint 0 = 0x58 0x00) */
	m.max_fragment_id_present_case = LANCE__TABLE__MANIFEST__MAX_FRAGMENT_ID_PRESENT_MAX_FRAGMENT_ID;
	m.max_fragment_id = 0;
	data = pack((const ProtobufCMessage *) &m, &len);
	LP_CHECK(len == 2 && data[0] == 0x58 && data[1] == 0x00);
	lp_free(data);
	data = pack((const ProtobufCMessage *) &file, &len);
	LP_CHECK_EQ_U64(len, 0);
	lp_free(data);
	file.base_id_present_case = LANCE__TABLE__DATA_FILE__BASE_ID_PRESENT_BASE_ID;
	data = pack((const ProtobufCMessage *) &file, &len);
	LP_CHECK(len == 2 && data[0] == 0x38 && data[1] == 0x00);
	lp_free(data);
}

static void
check_corrupt(const uint8_t *data, size_t len, const char *name, const char *what)
{
	LpError		err;
	LpManifest *manifest = lp_manifest_parse(name, data, len, &err);

	LP_CHECK_MSG(manifest == NULL, "%.150s was accepted", what);
	lp_manifest_free(manifest);
	if (manifest != NULL)
		return;
	LP_CHECK_MSG(err.code == LP_ERR_CORRUPT, "%.150s: code %.150s (%.150s)", what,
				 lp_error_code_name(err.code), err.message);
	LP_CHECK_MSG(strstr(err.message, name) != NULL, "%.150s: message \"%.150s\" does not name the file",
				 what, err.message);
}

LP_TEST(manifest_corrupt_tails)
{
	LpManifestNaming naming;
	LpManifest *manifest;
	uint8_t    *copy;
	size_t		len;
	const char *name = "/some/_versions/3.manifest";

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	manifest = read_latest_generated("types_2_2_v1", &naming);
	if (manifest == NULL)
		return;
	len = manifest->file_len;
	copy = lp_alloc(len);

	check_corrupt(manifest->file_data, 10, name, "a 10-byte file");
	check_corrupt(manifest->file_data, len - 1, name, "a file missing its last byte");

	memcpy(copy, manifest->file_data, len);
	copy[len - 1] = 'X';
	check_corrupt(copy, len, name, "a bad magic");

	memcpy(copy, manifest->file_data, len);
	copy[len - 16 + 7] = 0x7f;	/* position far beyond the file */
	check_corrupt(copy, len, name, "a position beyond the file");

	memcpy(copy, manifest->file_data, len);
	copy[len - 16] += 1;		/* position off by one: length no longer fits */
	check_corrupt(copy, len, name, "a shifted position");

	/* transaction section offset pointing past the manifest */
	{
		uint8_t    *file;
		size_t		file_len;
		LpError		err;

		LP_CHECK(lp_manifest_serialize(manifest->proto, NULL, 0, manifest->transaction,
									   manifest->transaction_len, &file, &file_len, &err));
		/* the transaction is at offset 0: make its length run past the manifest */
		file[0] = 0xff;
		file[1] = 0xff;
		check_corrupt(file, file_len, name, "an overlong transaction section");
		lp_free(file);
	}

	/* garbage instead of the protobuf */
	memcpy(copy, manifest->file_data, len);
	{
		uint64_t	position;

		memcpy(&position, copy + len - 16, 8);
		memset(copy + position + 4, 0xff, len - 16 - position - 4);
		check_corrupt(copy, len, name, "a malformed manifest message");
	}
	lp_free(copy);
	lp_manifest_free(manifest);
}

LP_TEST(manifest_relative_paths)
{
	static const char *const good[] = {"x.lance", "a/b.lance", "..x.lance", "x..", ".hidden"};
	static const char *const bad[] = {
		"", "/abs/x.lance", "../../elsewhere/x.lance", "a/../../x.lance", "a//b.lance",
		"./x.lance", "a/.", "x/..", "a/", "a\\b.lance", ".."
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		LP_CHECK_MSG(lp_manifest_relative_path_valid(good[i]), "\"%s\" was refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		LP_CHECK_MSG(!lp_manifest_relative_path_valid(bad[i]), "\"%s\" was accepted", bad[i]);
	LP_CHECK(!lp_manifest_relative_path_valid(NULL));
}

/* The manifest with one path replaced, serialized and parsed again. */
static void
check_path_refused(LpManifest *manifest, char **field, const char *value,
				   const char *what)
{
	char	   *saved = *field;
	uint8_t    *file;
	size_t		len;
	LpError		err;
	LpManifest *again;
	const char *name = "/some/_versions/9.manifest";

	*field = (char *) value;
	LP_CHECK(lp_manifest_serialize(manifest->proto, NULL, 0, NULL, 0, &file, &len, &err));
	*field = saved;
	again = lp_manifest_parse(name, file, len, &err);
	LP_CHECK_MSG(again == NULL, "%.150s \"%.150s\" was accepted", what, value);
	if (again == NULL)
	{
		LP_CHECK_MSG(err.code == LP_ERR_CORRUPT, "%.150s: code %.150s", what,
					 lp_error_code_name(err.code));
		LP_CHECK_MSG(strstr(err.message, name) != NULL && strstr(err.message, value) != NULL,
					 "%.150s: message \"%.300s\" names neither the manifest nor the path",
					 what, err.message);
	}
	lp_manifest_free(again);
	lp_free(file);
}

LP_TEST(manifest_paths_leaving_their_directory_refused)
{
	LpManifestNaming naming;
	LpManifest *manifest;
	Lance__Table__BasePath base = LANCE__TABLE__BASE_PATH__INIT;
	Lance__Table__BasePath *bases[1] = {&base};
	static const char *const bad[] = {
		"../../elsewhere/x.lance", "/srv/elsewhere/x.lance", "a//b.lance", "./x.lance",
		"a\\b.lance", ""
	};

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	manifest = read_latest_generated("types_2_2_v2", &naming);
	if (manifest == NULL)
		return;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_path_refused(manifest, &manifest->proto->fragments[2]->files[0]->path, bad[i],
						   "data file path");
	check_path_refused(manifest, &manifest->proto->transaction_file, "../x.txn",
					   "transaction file");
	check_path_refused(manifest, &manifest->proto->transaction_file, "a/x.txn",
					   "transaction file");

	/* base paths: absolute paths and URIs, never relative to the server's directory */
	manifest->proto->n_base_paths = 1;
	manifest->proto->base_paths = bases;
	base.id = 1;
	base.path = "/srv/base";
	{
		uint8_t    *file;
		size_t		len;
		LpError		err;
		LpManifest *again;

		LP_CHECK(lp_manifest_serialize(manifest->proto, NULL, 0, NULL, 0, &file, &len, &err));
		again = lp_manifest_parse("based", file, len, &err);
		LP_CHECK_MSG(again != NULL, "an absolute base path was refused: %.300s", err.message);
		lp_manifest_free(again);
		lp_free(file);
	}
	check_path_refused(manifest, &base.path, "relative/base", "base path");
	check_path_refused(manifest, &base.path, "", "base path");
	manifest->proto->n_base_paths = 0;
	manifest->proto->base_paths = NULL;
	lp_manifest_free(manifest);
}

/*
 * The manifest of types_2_2_v2 with the given flags added, serialized and
 * parsed again as "flagged.manifest" (NULL after a failed check).
 */
static LpManifest *
manifest_with_flags(uint64_t reader_flags, uint64_t writer_flags)
{
	LpManifestNaming naming;
	LpManifest *manifest = read_latest_generated("types_2_2_v2", &naming);
	LpManifest *flagged = NULL;
	uint8_t    *file = NULL;
	size_t		len;
	LpError		err;

	if (manifest == NULL)
		return NULL;
	manifest->proto->reader_feature_flags |= reader_flags;
	manifest->proto->writer_feature_flags |= writer_flags;
	LP_CHECK(lp_manifest_serialize(manifest->proto, NULL, 0, NULL, 0, &file, &len, &err));
	if (file != NULL)
		flagged = lp_manifest_parse("flagged.manifest", file, len, &err);
	LP_CHECK_MSG(flagged != NULL, "%.300s", err.message);
	lp_free(file);
	lp_manifest_free(manifest);
	return flagged;
}

/*
 * Reader flags refuse readers only, writer flags writers only (Lance's
 * can_read_dataset, can_write_dataset), naming the lowest flag lance_parts
 * does not implement; the flags it implements pass both.
 */
LP_TEST(manifest_unimplemented_flags_refused)
{
	static const struct
	{
		uint64_t	flags;
		const char *named;		/* how the message names the lowest one */
	}			cases[] = {
		{LP_FLAG_OVERLAYS, "feature \"overlays\" (flag 64)"},
		{128, "feature flag 128"},
		{LP_FLAG_FRAGMENT_REUSE_INDEX, "feature \"fragment reuse index\" (flag 1024)"},
		{LP_FLAG_MANAGED_BLOBS, "feature \"managed blobs\" (flag 2048)"},
		{4096, "feature flag 4096"},
		{(uint64_t) 1 << 63, "feature flag 9223372036854775808"},
		{LP_FLAG_MANAGED_BLOBS | 4096 | LP_FLAG_DELETION_FILES, "feature \"managed blobs\" (flag 2048)"},
	};
	LpManifest *known;
	LpError		err;

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	known = manifest_with_flags(LP_FLAGS_KNOWN, LP_FLAGS_KNOWN);
	if (known != NULL)
	{
		LP_CHECK(lp_manifest_check_readable(known, "ds", &err));
		LP_CHECK(lp_manifest_check_writable(known, "ds", &err));
	}
	lp_manifest_free(known);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		for (int writer = 0; writer <= 1; writer++)
		{
			const char *role = writer ? "writer" : "reader";
			LpManifest *flagged = manifest_with_flags(writer ? 0 : cases[i].flags,
													  writer ? cases[i].flags : 0);
			char		expected[256];

			if (flagged == NULL)
				continue;
			snprintf(expected, sizeof(expected),
					 "dataset \"ds\" needs %s %s, which lance_parts does not implement",
					 role, cases[i].named);
			/* the other role's check passes */
			if (writer)
			{
				LP_CHECK(lp_manifest_check_readable(flagged, "ds", &err));
				LP_CHECK(!lp_manifest_check_writable(flagged, "ds", &err));
			}
			else
			{
				LP_CHECK(lp_manifest_check_writable(flagged, "ds", &err));
				LP_CHECK(!lp_manifest_check_readable(flagged, "ds", &err));
			}
			LP_CHECK(err.code == LP_ERR_UNSUPPORTED);
			LP_CHECK_MSG(strcmp(err.message, expected) == 0, "\"%.200s\" (expected \"%.200s\")",
						 err.message, expected);
			LP_CHECK_MSG(strstr(err.detail, "flagged.manifest") != NULL, "%.300s", err.detail);
			lp_manifest_free(flagged);
		}
	}
}

LP_TEST(manifest_names)
{
	uint64_t	version;
	LpManifestNaming naming;
	char		name[LP_MANIFEST_NAME_SIZE];

	LP_CHECK(lp_manifest_name_parse("18446744073709551614.manifest", &version, &naming));
	LP_CHECK(naming == LP_NAMING_V2 && version == 1);
	LP_CHECK(lp_manifest_name_parse("18446744073709551612.manifest", &version, &naming));
	LP_CHECK(naming == LP_NAMING_V2 && version == 3);
	LP_CHECK(lp_manifest_name_parse("3.manifest", &version, &naming));
	LP_CHECK(naming == LP_NAMING_V1 && version == 3);
	LP_CHECK(!lp_manifest_name_parse("d3.manifest", &version, &naming));
	LP_CHECK(!lp_manifest_name_parse("latest_version_hint.json", &version, &naming));
	LP_CHECK(!lp_manifest_name_parse("3.manifest.tmp-12-0", &version, &naming));
	LP_CHECK(!lp_manifest_name_parse(".manifest", &version, &naming));
	LP_CHECK(!lp_manifest_name_parse("99999999999999999999999.manifest", &version, &naming));
	lp_manifest_name(LP_NAMING_V2, 1, name);
	CHECK_TEXT(name, "18446744073709551614.manifest");
	lp_manifest_name(LP_NAMING_V2, 123, name);
	LP_CHECK(lp_manifest_name_parse(name, &version, &naming) && version == 123);
	lp_manifest_name(LP_NAMING_V1, 42, name);
	CHECK_TEXT(name, "42.manifest");
}

LP_TEST(dataset_mixed_naming_refused)
{
	char		work[1024];
	char		root[1200];
	char		command[4096];
	LpManifestNaming naming;
	uint64_t	version;
	LpError		err;

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	snprintf(work, sizeof(work), "%s", lp_test_make_temp_dir());
	snprintf(root, sizeof(root), "%s/types_2_1_v1.lance", work);
	lp_test_copy_dataset("types_2_1_v1", root);
	snprintf(command, sizeof(command), "cp %s/_versions/1.manifest %s/_versions/18446744073709551610.manifest",
			 root, root);
	LP_CHECK(system(command) == 0);
	LP_CHECK(!lp_dataset_latest_version(lp_test_store(), root, &version, &naming, &err));
	LP_CHECK(err.code == LP_ERR_CORRUPT);
	LP_CHECK(strstr(err.message, "_versions") != NULL);
	lp_test_remove_tree(work);
}

LP_TEST(data_file_names)
{
	/* the example name of lance-format.md section 5.2 */
	uint8_t		bytes[16] = {0x59, 0x37, 0xfc, 0x4f, 0x15, 0x55, 0x42, 0xeb,
	0x90, 0x9d, 0x20, 0x1e, 0xc1, 0xd1, 0xa6, 0xd8};
	uint8_t		fixed[16];
	char		name[LP_DATA_FILE_NAME_SIZE];
	char		uuid[LP_UUID_STRING_SIZE];

	memcpy(fixed, bytes, 16);
	lp_uuid_v4(fixed);
	LP_CHECK(memcmp(fixed, bytes, 16) == 0);	/* already a v4 UUID */
	lp_data_file_name(bytes, name);
	CHECK_TEXT(name, "0101100100110111111111004f155542eb909d201ec1d1a6d8.lance");
	lp_uuid_format(bytes, uuid);
	CHECK_TEXT(uuid, "5937fc4f-1555-42eb-909d-201ec1d1a6d8");

	memset(fixed, 0xff, 16);
	lp_uuid_v4(fixed);
	LP_CHECK(fixed[6] == 0x4f && fixed[8] == 0xbf);

	/* the grammar targets are checked against */
	LP_CHECK(lp_data_file_name_valid(name));
	LP_CHECK(!lp_data_file_name_valid("x.lance"));
	LP_CHECK(!lp_data_file_name_valid("../../x.lance"));
	LP_CHECK(!lp_data_file_name_valid("0101100100110111111111004f155542eb909d201ec1d1a6d8.lanc"));
	LP_CHECK(!lp_data_file_name_valid("0101100100110111111111004f155542eb909d201ec1d1a6d8.lance.x"));
	LP_CHECK(!lp_data_file_name_valid("0101100100110111111111004F155542eb909d201ec1d1a6d8.lance"));
	LP_CHECK(!lp_data_file_name_valid("0101100100110111111111024f155542eb909d201ec1d1a6d8.lance"));
	LP_CHECK(!lp_data_file_name_valid("010110010011011111111100/f155542eb909d201ec1d1a6d8.lance"));
	LP_CHECK(!lp_data_file_name_valid(""));
}

/* Every data file lancedb wrote has a name of the form we generate. */
LP_TEST(data_file_names_match_reference)
{
	int			checked = 0;

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	for (size_t d = 0; d < N_GENERATED; d++)
	{
		LpManifestNaming naming;
		LpManifest *manifest = read_latest_generated(generated[d].name, &naming);

		if (manifest == NULL)
			continue;
		for (size_t f = 0; f < manifest->proto->n_fragments; f++)
		{
			const char *path = manifest->proto->fragments[f]->files[0]->path;
			uint8_t		bytes[16];
			char		name[LP_DATA_FILE_NAME_SIZE];
			bool		parsed = strlen(path) == LP_DATA_FILE_NAME_SIZE - 1;

			/* decode the name back to bytes, then regenerate it */
			for (int i = 0; parsed && i < 3; i++)
			{
				bytes[i] = 0;
				for (int bit = 0; bit < 8; bit++)
					bytes[i] = (uint8_t) (bytes[i] << 1 | (path[i * 8 + bit] == '1'));
			}
			for (int i = 3; parsed && i < 16; i++)
				parsed = sscanf(path + 24 + (i - 3) * 2, "%2hhx", &bytes[i]) == 1;
			LP_CHECK_MSG(parsed, "unexpected data file name %.150s", path);
			if (!parsed)
				continue;
			LP_CHECK_MSG((bytes[6] >> 4) == 4 && (bytes[8] >> 6) == 2,
						 "%.150s is not from a v4 UUID", path);
			lp_data_file_name(bytes, name);
			CHECK_TEXT(name, path);
			LP_CHECK_MSG(lp_data_file_name_valid(path), "%.150s was refused", path);
			checked++;
		}
		lp_manifest_free(manifest);
	}
	LP_CHECK(checked >= 30);
}

LP_TEST(blob_sidecar_names)
{
	char		name[LP_BLOB_FILE_NAME_SIZE];
	char	   *stem;
	char		root[1024];
	char		directory[2048];
	DIR		   *dir;
	struct dirent *entry;
	int			matched = 0;

	lp_blob_sidecar_file_name(1, name);
	CHECK_TEXT(name, "10000000000000000000000000000000.blob");
	lp_blob_sidecar_file_name(2, name);
	CHECK_TEXT(name, "01000000000000000000000000000000.blob");
	lp_blob_sidecar_file_name(3, name);
	CHECK_TEXT(name, "11000000000000000000000000000000.blob");
	stem = lp_blob_sidecar_dir("0101100100110111111111004f155542eb909d201ec1d1a6d8.lance");
	LP_CHECK_STR(stem, "0101100100110111111111004f155542eb909d201ec1d1a6d8");
	lp_free(stem);
	LP_CHECK(lp_blob_sidecar_dir("noextension") == NULL);

	/* the sidecars lancedb wrote for blob_2_2 are named for blob ids 1.. */
	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	lp_test_dataset_path("blob_2_2", root, sizeof(root));
	{
		LpManifestNaming naming;
		LpManifest *manifest = read_latest_generated("blob_2_2", &naming);

		for (size_t f = 0; manifest != NULL && f < manifest->proto->n_fragments; f++)
		{
			stem = lp_blob_sidecar_dir(manifest->proto->fragments[f]->files[0]->path);
			snprintf(directory, sizeof(directory), "%s/data/%s", root, stem);
			lp_free(stem);
			dir = opendir(directory);
			while (dir != NULL && (entry = readdir(dir)) != NULL)
			{
				if (entry->d_name[0] == '.')
					continue;
				for (uint32_t id = 1; id < 64; id++)
				{
					lp_blob_sidecar_file_name(id, name);
					if (strcmp(name, entry->d_name) == 0)
						matched++;
				}
			}
			if (dir != NULL)
				closedir(dir);
		}
		lp_manifest_free(manifest);
	}
	LP_CHECK(matched >= 1);
}

LP_TEST(data_file_columns_selected_and_nested)
{
	/* id(0), v: list<int32>(1){item(2)}, st: struct(3){a(4), p: packed struct(5){x(6)}} */
	Lance__File__Field f[7];
	Lance__File__Field *fields[7];
	Lance__File__Field__MetadataEntry packed = LANCE__FILE__FIELD__METADATA_ENTRY__INIT;
	Lance__File__Field__MetadataEntry *packed_list[1] = {&packed};
	const int32_t parents[7] = {-1, -1, 1, -1, 3, 3, 5};
	const char *names[7] = {"id", "v", "item", "st", "a", "p", "x"};
	const char *types[7] = {"int64", "list", "int32", "struct", "int32", "struct", "int32"};
	LpSchema	schema;
	int32_t    *ids;
	int32_t    *columns;
	size_t		n;
	LpError		err;
	int32_t		selected[2] = {3, 0};

	packed.key = "lance-encoding:packed";
	packed.value.data = (uint8_t *) "true";
	packed.value.len = 4;
	for (int i = 0; i < 7; i++)
	{
		lance__file__field__init(&f[i]);
		f[i].id = i;
		f[i].parent_id = parents[i];
		f[i].name = (char *) names[i];
		f[i].logical_type = (char *) types[i];
		fields[i] = &f[i];
	}
	f[5].n_metadata = 1;
	f[5].metadata = packed_list;
	LP_CHECK(lp_schema_from_proto("test schema", fields, 7, NULL, 0, &schema, &err));

	LP_CHECK(lp_data_file_columns(&schema, NULL, 0, LP_FILE_VERSION_2_0,
								  &ids, &columns, &n, &err));
	LP_CHECK_EQ_U64(n, 6);		/* 0 1 2 3 4 5; 6 is inside the packed struct */
	LP_CHECK(n == 6 && ids[5] == 5 && columns[5] == 5 && ids[2] == 2);
	lp_free(ids);
	lp_free(columns);

	LP_CHECK(lp_data_file_columns(&schema, NULL, 0, LP_FILE_VERSION_2_1,
								  &ids, &columns, &n, &err));
	LP_CHECK_EQ_U64(n, 4);		/* 0 2 4 5 */
	LP_CHECK(n == 4 && ids[0] == 0 && ids[1] == 2 && ids[2] == 4 && ids[3] == 5);
	lp_free(ids);
	lp_free(columns);

	/* selected top-level fields, in the order given */
	LP_CHECK(lp_data_file_columns(&schema, selected, 2, LP_FILE_VERSION_2_2,
								  &ids, &columns, &n, &err));
	LP_CHECK_EQ_U64(n, 3);		/* 4 5 0 */
	LP_CHECK(n == 3 && ids[0] == 4 && ids[1] == 5 && ids[2] == 0 && columns[2] == 2);
	lp_free(ids);
	lp_free(columns);

	selected[0] = 2;			/* not top level */
	LP_CHECK(!lp_data_file_columns(&schema, selected, 1, LP_FILE_VERSION_2_2,
								   &ids, &columns, &n, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT);
	selected[0] = 0;			/* twice */
	LP_CHECK(!lp_data_file_columns(&schema, selected, 2, LP_FILE_VERSION_2_2,
								   &ids, &columns, &n, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT);
	lp_schema_free(&schema);
}

/*
 * Fail each allocation of finding and reading the latest manifest (and its
 * schema) in turn: every failure is LP_ERR_NO_MEMORY and leaks nothing.
 */
LP_TEST(manifest_allocation_failures)
{
	static const char *const datasets[] = {"types_2_0_v1", "types_2_2_v2", "deleted_2_2", "blob_2_2"};

	for (size_t d = 0; d < sizeof(datasets) / sizeof(datasets[0]); d++)
	{
		char		root[1024];
		bool		done = false;

		lp_test_dataset_path(datasets[d], root, sizeof(root));
		for (long budget = 0; !done; budget++)
		{
			LpManifestNaming naming;
			LpManifest *manifest;
			LpSchema	schema;
			LpError		err;

			lp_test_fail_allocations_after(budget);
			manifest = lp_dataset_read_latest(lp_test_store(), root, &naming, &err);
			done = manifest != NULL && lp_manifest_schema(manifest, &schema, &err);
			lp_test_restore_allocations();
			if (done)
				lp_schema_free(&schema);
			lp_manifest_free(manifest);
			if (!done)
			{
				LP_CHECK_MSG(err.code == LP_ERR_NO_MEMORY, "%s with %ld allocations: %.300s",
							 datasets[d], budget, err.message);
				if (err.code != LP_ERR_NO_MEMORY)
					break;
			}
		}
	}
}
