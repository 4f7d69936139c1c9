/*
 * test_concat.c - concatenation of the data files written by npm lancedb.
 *
 * The datasets come from test/reference/generate.cjs (lp_test_data_dir).
 * Outputs are written to real files, reopened with lp_file_open and
 * compared byte for byte with their inputs.  Incompatible and damaged
 * inputs are real files from other datasets, or real files whose metadata
 * tail was rebuilt in memory with one thing changed.
 *
 * With LP_TEST_KEEP_CONCAT=<dir>, one output per dataset is kept in <dir>
 * and listed in <dir>/manifest.jsonl (output, inputs in order, rows), for
 * the reference implementation to read back.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/lp_alloc.h"
#include "format/lp_columns.h"
#include "concat/lp_concat.h"
#include "format/lp_file_tail.h"
#include "base/lp_interrupt.h"
#include "lp_test.h"
#include "lp_test_files.h"
#include "lp_test_store.h"
#include "lp_test_util.h"

#define MAX_PARTS 8

typedef struct Part
{
	char		path[1024];
	uint8_t    *bytes;			/* the whole file */
	size_t		len;
	LpInput    *input;
	LpFile	   *file;
} Part;

typedef struct PartSet
{
	int			count;
	Part		parts[MAX_PARTS];
} PartSet;

/* Outcome of one concatenation through a POSIX output. */
typedef struct ConcatRun
{
	LpConcatVerdict verdict;
	LpError		err;
	bool		ok;				/* no hard error */
	uint64_t	planned_size;
} ConcatRun;

static void
close_part(Part *part)
{
	lp_file_free(part->file);
	lp_input_close(part->input);
	free(part->bytes);
	memset(part, 0, sizeof(*part));
}

static void
close_set(PartSet *set)
{
	for (int i = 0; i < set->count; i++)
		close_part(&set->parts[i]);
	set->count = 0;
}

static bool
open_part(const char *path, Part *part)
{
	LpError		err;

	memset(part, 0, sizeof(*part));
	snprintf(part->path, sizeof(part->path), "%s", path);
	if (!lp_test_file_read_all(path, &part->bytes, &part->len))
		return false;
	part->input = lp_test_file_input_open(path, &err);
	if (part->input != NULL)
		part->file = lp_file_open(part->input, &err);
	LP_CHECK_MSG(part->file != NULL, "open \"%.200s\": %.200s", path, err.message);
	return part->file != NULL;
}

/* A part over bytes in memory (taken over by the part); err on failure. */
static bool
open_memory_part(const char *name, uint8_t *bytes, size_t len, Part *part,
				 LpError *err)
{
	memset(part, 0, sizeof(*part));
	snprintf(part->path, sizeof(part->path), "%s", name);
	part->bytes = bytes;
	part->len = len;
	part->input = lp_memory_input_open(part->path, bytes, len);
	part->file = lp_file_open(part->input, err);
	return part->file != NULL;
}

static int
rows_descending(const void *a, const void *b)
{
	const Part *x = a;
	const Part *y = b;

	if (x->file->num_rows != y->file->num_rows)
		return x->file->num_rows > y->file->num_rows ? -1 : 1;
	return strcmp(x->path, y->path);
}

/*
 * The data files of a generated dataset, in fragment order: the generator
 * appends batches of decreasing size, so that is decreasing row count.
 */
static bool
open_dataset(const char *dataset, PartSet *set)
{
	char	   *paths[MAX_PARTS];
	int			num_paths = lp_test_dataset_data_files(dataset, paths, MAX_PARTS);
	bool		ok = num_paths >= 0;

	set->count = 0;
	for (int i = 0; i < num_paths; i++)
	{
		if (ok && open_part(paths[i], &set->parts[set->count]))
			set->count++;
		else
			ok = false;
		free(paths[i]);
	}
	if (!ok)
	{
		close_set(set);
		return false;
	}
	qsort(set->parts, set->count, sizeof(Part), rows_descending);
	LP_CHECK_MSG(set->count >= 2, "dataset %s has %d data files", dataset, set->count);
	return set->count >= 2;
}

static void
output_path(const char *dir, const char *name, char *buffer, size_t len)
{
	snprintf(buffer, len, "%s/%s", dir, name);
}

static bool
no_output(const char *path)
{
	char		temp[4096];

	lp_test_file_temp_name(path, temp, sizeof(temp));
	return !lp_test_file_exists(path) && !lp_test_file_exists(temp);
}

/*
 * What a caller does: plan; only if compatible, create the output, execute,
 * and publish (abort on error).
 */
static ConcatRun
run_concat(Part *const *ordered, int n, const uint64_t *expected_rows,
		   const char *out_path, bool copy_from, size_t batch)
{
	ConcatRun	run;
	LpConcatPart parts[MAX_PARTS];
	LpInput    *inputs[MAX_PARTS];
	LpConcatTarget target = {LP_FILE_VERSION_2_0, NULL, false, NULL, NULL};
	LpConcatPlan *plan = NULL;
	LpOutput   *output;

	memset(&run, 0, sizeof(run));
	for (int i = 0; i < n; i++)
	{
		parts[i].file = ordered[i]->file;
		parts[i].has_expected_rows = expected_rows != NULL;
		parts[i].expected_rows = expected_rows ? expected_rows[i] : 0;
		inputs[i] = ordered[i]->input;
	}
	if (n > 0)
	{
		target.version = ordered[0]->file->version;
		target.schema = &ordered[0]->file->schema;
	}
	if (!lp_concat_plan(&target, parts, (uint32_t) n, &run.verdict, &plan, &run.err))
		return run;
	run.ok = true;
	if (plan == NULL)
		return run;
	run.planned_size = plan->output_size;
	output = lp_test_file_output_create(out_path, copy_from, &run.err);
	if (output == NULL)
		run.ok = false;
	else if (!lp_concat_execute(plan, inputs, output, batch, &run.err))
	{
		output->ops->abort(output);
		run.ok = false;
	}
	else
		run.ok = output->ops->publish(output, &run.err);
	lp_concat_plan_free(plan);
	return run;
}

static bool
bytes_equal(const LpBytes *a, const LpBytes *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/* Schema and metadata equal to the target's, and complete: check it as a part. */
static void
check_output_against_target(const Part *first, const Part *out)
{
	LpConcatTarget target = {first->file->version, &first->file->schema, false, NULL, NULL};
	LpConcatPart part = {out->file, true, out->file->num_rows};
	LpConcatVerdict verdict;
	LpError		err;

	LP_CHECK_MSG(lp_concat_check(&target, &part, 1, &verdict, &err), "%s", err.message);
	LP_CHECK_STR(lp_concat_reason_name(verdict.reason), "compatible");
}

/*
 * Everything the output must be, from its inputs: version, footer, rows,
 * columns, pages, relocated buffers with the inputs' bytes, priorities,
 * the 2.0 struct header, padding, global buffer 0 before the metadata.
 * Returns the number of 2.0 struct header columns seen.
 */
static int
verify_concatenation(Part *const *inputs, int n, const Part *out, bool packed)
{
	const LpFile *o = out->file;
	LpFileVersion version = inputs[0]->file->version;
	LpPhysicalColumn *columns = NULL;
	uint32_t	num_columns = 0;
	uint16_t	major;
	uint16_t	minor;
	uint64_t	total = 0;
	uint64_t	data_end;
	uint8_t    *covered;
	int			headers = 0;
	LpError		err;

	for (int i = 0; i < n; i++)
		total += inputs[i]->file->num_rows;
	LP_CHECK(o->version == version);
	lp_file_version_footer_numbers(version, &major, &minor);
	LP_CHECK_EQ_U64(o->footer_major, major);
	LP_CHECK_EQ_U64(o->footer_minor, minor);
	if (version == LP_FILE_VERSION_2_0)
		LP_CHECK(o->footer_major == 0 && o->footer_minor == 3);
	LP_CHECK_EQ_U64(o->num_rows, total);
	LP_CHECK_EQ_U64(o->file_size, out->len);
	LP_CHECK_EQ_U64(o->num_global_buffers, 1);
	data_end = o->global_buffers[0].offset;
	LP_CHECK_EQ_U64(data_end % 64, 0);
	LP_CHECK_EQ_U64(data_end + o->global_buffers[0].size, o->column_meta_start);
	LP_CHECK_EQ_U64(o->num_columns, inputs[0]->file->num_columns);
	check_output_against_target(inputs[0], out);
	if (o->num_columns != inputs[0]->file->num_columns ||
		!lp_schema_physical_columns(version, &o->schema, &columns, &num_columns, &err))
	{
		LP_CHECK_MSG(false, "output column layout unusable");
		return 0;
	}

	covered = calloc(data_end + 1, 1);
	for (uint32_t c = 0; c < o->num_columns; c++)
	{
		const LpColumn *oc = &o->columns[c];
		uint32_t	k = 0;
		uint64_t	row_offset = 0;

		LP_CHECK(bytes_equal(&oc->encoding, &inputs[0]->file->columns[c].encoding));
		if (version == LP_FILE_VERSION_2_0 && columns[c].struct_header)
		{
			headers++;
			LP_CHECK_EQ_U64(oc->num_pages, 1);
			if (oc->num_pages == 1)
			{
				LP_CHECK_EQ_U64(oc->pages[0].num_rows, total);
				LP_CHECK_EQ_U64(oc->pages[0].priority, 0);
				LP_CHECK_EQ_U64(oc->pages[0].num_buffers, 0);
				LP_CHECK(bytes_equal(&oc->pages[0].encoding,
									 &inputs[0]->file->columns[c].pages[0].encoding));
			}
			continue;
		}
		for (int i = 0; i < n; i++)
		{
			const LpFile *f = inputs[i]->file;

			if (f->num_rows == 0)
				continue;
			for (uint32_t p = 0; p < f->columns[c].num_pages && k < oc->num_pages; p++)
			{
				const LpPage *sp = &f->columns[c].pages[p];
				const LpPage *op = &oc->pages[k++];

				LP_CHECK_EQ_U64(op->num_rows, sp->num_rows);
				LP_CHECK(bytes_equal(&op->encoding, &sp->encoding));
				LP_CHECK_EQ_U64(op->priority, version == LP_FILE_VERSION_2_0 ?
								sp->priority : sp->priority + row_offset);
				LP_CHECK_EQ_U64(op->num_buffers, sp->num_buffers);
				for (uint32_t b = 0; b < op->num_buffers && b < sp->num_buffers; b++)
				{
					LpBufferRef ob = op->buffers[b];
					LpBufferRef sb = sp->buffers[b];

					LP_CHECK_MSG(ob.offset % 64 == 0, "column %u page %u buffer %u at %" PRIu64,
								 c, k - 1, b, ob.offset);
					LP_CHECK_EQ_U64(ob.size, sb.size);
					if (ob.size != sb.size || ob.offset + ob.size > data_end)
					{
						LP_CHECK_MSG(false, "column %u page %u buffer %u misplaced", c, k - 1, b);
						continue;
					}
					LP_CHECK_MSG(memcmp(out->bytes + ob.offset, inputs[i]->bytes + sb.offset,
										ob.size) == 0,
								 "column %u page %u buffer %u bytes differ", c, k - 1, b);
					for (uint64_t x = ob.offset; x < ob.offset + ob.size; x++)
					{
						LP_CHECK_MSG(!covered[x], "output byte %" PRIu64 " used twice", x);
						covered[x] = 1;
					}
				}
			}
			row_offset += f->num_rows;
		}
		LP_CHECK_EQ_U64(k, oc->num_pages);
	}
	for (uint64_t x = 0; packed && x < data_end; x++)
	{
		if (!covered[x] && out->bytes[x] != 0x48)
		{
			LP_CHECK_MSG(false, "padding byte %" PRIu64 " is 0x%02x", x, out->bytes[x]);
			break;
		}
	}
	free(covered);
	free(columns);
	return headers;
}

static const char *keep_dir(void)
{
	const char *dir = getenv("LP_TEST_KEEP_CONCAT");

	return dir != NULL && *dir != '\0' ? dir : NULL;
}

/* Copy an output to the keep directory and list it in manifest.jsonl. */
static void
keep_output(const char *name, Part *const *inputs, int n, const Part *out)
{
	static bool manifest_started;
	const char *dir = keep_dir();
	char		path[4096];
	FILE	   *f;

	if (dir == NULL)
		return;
	output_path(dir, name, path, sizeof(path));
	f = fopen(path, "wb");
	LP_CHECK_MSG(f != NULL, "cannot write \"%.400s\"", path);
	if (f == NULL)
		return;
	fwrite(out->bytes, 1, out->len, f);
	fclose(f);

	output_path(dir, "manifest.jsonl", path, sizeof(path));
	f = fopen(path, manifest_started ? "a" : "w");
	if (f == NULL)
		return;
	manifest_started = true;
	fprintf(f, "{\"output\": \"%s/%s\", \"version\": \"%s\", \"num_rows\": %" PRIu64 ", \"inputs\": [",
			dir, name, lp_file_version_name(out->file->version), out->file->num_rows);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s{\"path\": \"%s\", \"num_rows\": %" PRIu64 "}", i ? ", " : "",
				inputs[i]->path, inputs[i]->file->num_rows);
	fprintf(f, "]}\n");
	fclose(f);
}

/*
 * Concatenate a dataset's files in fragment order and reversed, through both
 * executor paths and several batch sizes; verify every output.
 */
static void
check_dataset_concat(const char *dataset, bool expect_struct_header)
{
	PartSet		set;
	Part	   *order[MAX_PARTS];
	Part	   *reversed[MAX_PARTS];
	const char *dir = lp_test_make_temp_dir();
	static const size_t batches[] = {LP_CONCAT_DEFAULT_READ_BATCH_BYTES, 4096, 100};
	uint8_t    *first_bytes = NULL;
	size_t		first_len = 0;
	/* output names: the dataset's name without its directory ("legacy/...") */
	const char *label = strrchr(dataset, '/') != NULL ? strrchr(dataset, '/') + 1 : dataset;

	if (!open_dataset(dataset, &set))
		return;
	for (int i = 0; i < set.count; i++)
	{
		order[i] = &set.parts[i];
		reversed[set.count - 1 - i] = &set.parts[i];
	}

	for (int variant = 0; variant < 8; variant++)
	{
		bool		reverse = variant >= 4;
		bool		copy_from = variant % 4 == 3;
		size_t		batch = batches[variant % 4 == 3 ? 0 : variant % 4];
		Part	   *const *inputs = reverse ? reversed : order;
		char		path[4096];
		char		name[256];
		ConcatRun	run;
		Part		out;

		snprintf(name, sizeof(name), "%s%s-%d.lance", label, reverse ? "-reversed" : "", variant);
		output_path(dir, name, path, sizeof(path));
		run = run_concat(inputs, set.count, NULL, path, copy_from, batch);
		LP_CHECK_MSG(run.ok, "%.100s: %.300s", name, run.err.message);
		LP_CHECK_STR(lp_concat_reason_name(run.verdict.reason), "compatible");
		if (!run.ok || !open_part(path, &out))
			continue;
		LP_CHECK_EQ_U64(out.len, run.planned_size);
		LP_CHECK_MSG(verify_concatenation(inputs, set.count, &out, true) > 0 || !expect_struct_header,
					 "%s: no 2.0 struct header column was checked", name);

		/* every executor path writes the same bytes */
		if (variant % 4 == 0)
		{
			free(first_bytes);
			first_bytes = malloc(out.len);
			memcpy(first_bytes, out.bytes, out.len);
			first_len = out.len;
			if (!reverse)
			{
				char		kept[256];

				snprintf(kept, sizeof(kept), "%s.lance", label);
				keep_output(kept, inputs, set.count, &out);
			}
		}
		else
			LP_CHECK_MSG(out.len == first_len && memcmp(out.bytes, first_bytes, first_len) == 0,
						 "%s differs from the output of the default executor", name);
		close_part(&out);
		unlink(path);
	}
	free(first_bytes);
	rmdir(dir);
	close_set(&set);
}

LP_TEST(concat_types_2_0)
{
	check_dataset_concat("types_2_0_v2", true);
}

LP_TEST(concat_types_2_1)
{
	check_dataset_concat("types_2_1_v2", false);
}

LP_TEST(concat_types_2_2)
{
	check_dataset_concat("types_2_2_v2", false);
}

LP_TEST(concat_types_2_3)
{
	check_dataset_concat("types_2_3_v2", false);
}

/* Bitpacked pages of lancedb 0.8.0 (Lance 0.15) are copied like any other. */
LP_TEST(concat_bitpacked_2_0)
{
	check_dataset_concat("legacy/bitpacked_2_0", false);
}

LP_TEST(concat_multipage_2_0)
{
	check_dataset_concat("multipage_2_0", false);
}

LP_TEST(concat_multipage_2_1)
{
	check_dataset_concat("multipage_2_1", false);
}

LP_TEST(concat_multipage_2_2)
{
	check_dataset_concat("multipage_2_2", false);
}

LP_TEST(concat_multipage_2_3)
{
	check_dataset_concat("multipage_2_3", false);
}

/*
 * Fail each allocation of planning, copying and publishing a concatenation in
 * turn: every failure is LP_ERR_NO_MEMORY, leaves no output (neither the
 * final nor the temporary file) and leaks nothing (ASan).
 */
LP_TEST(concat_allocation_failures)
{
	static const char *const datasets[] = {"types_2_0_v2", "types_2_2_v2", "multipage_2_3"};

	for (size_t d = 0; d < sizeof(datasets) / sizeof(datasets[0]); d++)
	{
		PartSet		set;
		Part	   *ordered[MAX_PARTS];
		const char *dir = lp_test_make_temp_dir();
		char		out[1024];
		bool		done = false;

		if (!open_dataset(datasets[d], &set))
			continue;
		for (int i = 0; i < set.count; i++)
			ordered[i] = &set.parts[i];
		output_path(dir, "out.lance", out, sizeof(out));
		for (long budget = 0; !done; budget++)
		{
			ConcatRun	run;

			lp_test_fail_allocations_after(budget);
			run = run_concat(ordered, set.count, NULL, out, true, 4096);
			lp_test_restore_allocations();
			done = run.ok;
			if (!done)
			{
				LP_CHECK_MSG(run.err.code == LP_ERR_NO_MEMORY && no_output(out),
							 "%s with %ld allocations: %.300s", datasets[d], budget, run.err.message);
				if (run.err.code != LP_ERR_NO_MEMORY)
					break;
			}
		}
		LP_CHECK_MSG(done && lp_test_file_exists(out), "%s: no output written", datasets[d]);
		unlink(out);
		rmdir(dir);
		close_set(&set);
	}
}

/* ---- crafted files: a real file with its metadata tail rebuilt ---------- */

/*
 * The bytes of source's data region followed by a tail built from columns
 * and global buffers (NULL: the source's own).
 */
static bool
craft_bytes(const Part *source, uint64_t data_len, const LpColumn *columns,
			uint32_t num_columns, const LpBytes *global_buffers,
			uint32_t num_global_buffers, uint8_t **bytes, size_t *len)
{
	LpFileTail	tail;
	LpError		err;
	uint64_t	start = (data_len + 63) & ~(uint64_t) 63;

	if (!lp_file_tail_build(source->file->version, start,
							global_buffers ? global_buffers : &source->file->schema_bytes,
							global_buffers ? num_global_buffers : 1,
							columns ? columns : source->file->columns,
							columns ? num_columns : source->file->num_columns,
							&tail, &err))
	{
		LP_CHECK_MSG(false, "tail: %.400s", err.message);
		return false;
	}
	*len = (size_t) tail.end;
	*bytes = malloc(*len);
	memcpy(*bytes, source->bytes, (size_t) data_len);
	memset(*bytes + data_len, 0x48, (size_t) (start - data_len));
	memcpy(*bytes + start, tail.bytes.data, tail.bytes.len);
	lp_file_tail_free(&tail);
	return true;
}

/* craft_bytes, opened as a part that is expected to open */
static bool
craft_part(const Part *source, const LpColumn *columns, uint32_t num_columns,
		   const LpBytes *global_buffers, uint32_t num_global_buffers,
		   const char *name, Part *part)
{
	uint8_t    *bytes;
	size_t		len;
	LpError		err;

	if (!craft_bytes(source, source->file->global_buffers[0].offset, columns,
					 num_columns, global_buffers, num_global_buffers, &bytes, &len))
		return false;
	if (!open_memory_part(name, bytes, len, part, &err))
	{
		LP_CHECK_MSG(false, "crafted %s: %.400s", name, err.message);
		close_part(part);
		return false;
	}
	return true;
}

/* A shallow copy of a file's columns, to change before crafting. */
static LpColumn *
copy_columns(const LpFile *file)
{
	LpColumn   *columns = malloc(file->num_columns * sizeof(LpColumn));

	memcpy(columns, file->columns, file->num_columns * sizeof(LpColumn));
	return columns;
}

/* A zero-row file with the schema and columns of source. */
static bool
craft_empty_part(const Part *source, Part *part)
{
	LpColumn   *columns = copy_columns(source->file);
	LpBytes		descriptor;
	LpError		err;
	uint8_t    *bytes;
	size_t		len;
	bool		ok;

	for (uint32_t c = 0; c < source->file->num_columns; c++)
		columns[c].num_pages = 0;
	if (!lp_file_descriptor_with_length(&source->file->schema_bytes, 0, &descriptor, &err))
	{
		free(columns);
		LP_CHECK_MSG(false, "%.400s", err.message);
		return false;
	}
	ok = craft_bytes(source, 0, columns, source->file->num_columns, &descriptor, 1,
					 &bytes, &len) &&
		open_memory_part("empty.lance", bytes, len, part, &err);
	LP_CHECK_MSG(ok, "empty part: %.400s", err.message);
	lp_free(descriptor.data);
	free(columns);
	return ok;
}

/* Physical column of the first 2.0 struct header, or -1. */
static int
first_struct_header(const LpFile *file)
{
	LpPhysicalColumn *columns;
	uint32_t	num_columns;
	LpError		err;
	int			found = -1;

	if (!lp_schema_physical_columns(file->version, &file->schema, &columns,
									&num_columns, &err))
		return -1;
	for (uint32_t c = 0; c < num_columns && found < 0; c++)
	{
		if (columns[c].struct_header)
			found = (int) c;
	}
	lp_free(columns);
	return found;
}

/* ---- compatibility verdicts: each leaves no output behind --------------- */

typedef struct VerdictCase
{
	const char *dir;
	char		path[4096];
} VerdictCase;

static void
start_case(VerdictCase *vc, const char *name)
{
	vc->dir = lp_test_make_temp_dir();
	output_path(vc->dir, name, vc->path, sizeof(vc->path));
}

static void
end_case(VerdictCase *vc)
{
	LP_CHECK_MSG(no_output(vc->path), "an output was created for \"%.400s\"", vc->path);
	rmdir(vc->dir);
}

/* Run parts a, b; return the verdict (and its message) with no error. */
static LpConcatVerdict
expect_verdict(Part *a, Part *b, const char *reason, const char *message)
{
	VerdictCase vc;
	Part	   *ordered[2] = {a, b};
	LpConcatPart parts[2] = {{a->file, false, 0}, {b ? b->file : NULL, false, 0}};
	ConcatRun	run;
	char		text[1024];

	start_case(&vc, "out.lance");
	run = run_concat(ordered, b ? 2 : 1, NULL, vc.path, false,
					 LP_CONCAT_DEFAULT_READ_BATCH_BYTES);
	LP_CHECK_MSG(run.ok, "unexpected error: %.400s", run.err.message);
	LP_CHECK_STR(lp_concat_reason_name(run.verdict.reason), reason);
	lp_concat_verdict_message(&run.verdict, parts, text, sizeof(text));
	if (message != NULL)
		LP_CHECK_MSG(strcmp(text, message) == 0, "verdict message \"%.240s\", expected \"%.240s\"",
					 text, message);
	end_case(&vc);
	return run.verdict;
}

/* Open file index of a dataset on its own. */
static bool
open_dataset_file(const char *dataset, int index, Part *part)
{
	PartSet		set;

	if (!open_dataset(dataset, &set) || index >= set.count)
	{
		close_set(&set);
		return false;
	}
	*part = set.parts[index];
	memset(&set.parts[index], 0, sizeof(Part));
	close_set(&set);
	return true;
}

LP_TEST(concat_verdict_version_mismatch)
{
	Part		a;
	Part		b;
	char		message[2048];
	LpConcatVerdict v;

	if (!open_dataset_file("types_2_1_v2", 0, &a))
		return;
	if (open_dataset_file("types_2_2_v2", 1, &b))
	{
		snprintf(message, sizeof(message),
				 "part 2 (\"%s\") has file version 2.2, expected 2.1", b.path);
		v = expect_verdict(&a, &b, "version_mismatch", message);
		LP_CHECK_EQ_U64(v.input, 1);
		LP_CHECK(v.actual == LP_FILE_VERSION_2_2 && v.expected == LP_FILE_VERSION_2_1);
		close_part(&b);
	}
	close_part(&a);
}

LP_TEST(concat_verdict_schema_mismatch)
{
	Part		a;
	Part		b;
	char		message[2048];

	if (!open_dataset_file("multipage_2_1", 0, &a))
		return;
	if (open_dataset_file("types_2_1_v2", 0, &b))
	{
		snprintf(message, sizeof(message),
				 "part 2 (\"%s\") has a different schema than the target", b.path);
		expect_verdict(&a, &b, "schema_mismatch", message);
		close_part(&b);
	}
	close_part(&a);
}

LP_TEST(concat_verdict_legacy_version)
{
	Part		legacy;
	Part		current;
	char		message[2048];

	if (!open_dataset_file("types_legacy_v2", 0, &legacy))
		return;
	LP_CHECK(legacy.file->version == LP_FILE_VERSION_LEGACY);
	if (open_dataset_file("types_2_1_v2", 0, &current))
	{
		snprintf(message, sizeof(message),
				 "part 2 (\"%s\") is a legacy Lance v1 file, which cannot be concatenated",
				 legacy.path);
		LP_CHECK_EQ_U64(expect_verdict(&current, &legacy, "legacy_version", message).input, 1);
		LP_CHECK_EQ_U64(expect_verdict(&legacy, &current, "legacy_version", NULL).input, 0);
		close_part(&current);
	}
	close_part(&legacy);
}

LP_TEST(concat_verdict_blob_columns)
{
	PartSet		set;
	LpConcatVerdict v;

	if (!open_dataset("blob_2_2", &set))
		return;
	v = expect_verdict(&set.parts[0], &set.parts[1], "blob_columns",
					   "the schema has Blob v2 column \"payload\", which only parts registered with blob id leases can fill");
	LP_CHECK_STR(v.field_name, "payload");
	close_set(&set);
}

LP_TEST(concat_verdict_column_count)
{
	Part		a;
	Part		b;
	Part		crafted;
	char		message[2048];
	LpConcatVerdict v;

	if (!open_dataset_file("types_2_1_v2", 0, &a))
		return;
	if (open_dataset_file("types_2_1_v2", 1, &b))
	{
		/* the same file without its last column */
		if (craft_part(&b, b.file->columns, b.file->num_columns - 1, NULL, 0,
					   "short.lance", &crafted))
		{
			snprintf(message, sizeof(message),
					 "part 2 (\"short.lance\") has %u physical columns, expected %u",
					 a.file->num_columns - 1, a.file->num_columns);
			v = expect_verdict(&a, &crafted, "column_layout_mismatch", message);
			LP_CHECK_EQ_U64(v.column, LP_CONCAT_NONE);
			close_part(&crafted);
		}
		close_part(&b);
	}
	close_part(&a);
}

LP_TEST(concat_verdict_struct_header_with_buffers)
{
	Part		a;
	Part		b;
	Part		crafted;
	int			header;
	LpColumn   *columns;
	LpPage		page;
	LpBufferRef buffer = {0, 8};
	char		message[2048];

	if (!open_dataset_file("types_2_0_v2", 0, &a))
		return;
	header = first_struct_header(a.file);
	LP_CHECK(header >= 0);
	if (header >= 0 && open_dataset_file("types_2_0_v2", 1, &b))
	{
		columns = copy_columns(b.file);
		page = columns[header].pages[0];
		page.num_buffers = 1;
		page.buffers = &buffer;
		columns[header].pages = &page;
		if (craft_part(&b, columns, b.file->num_columns, NULL, 0, "header.lance", &crafted))
		{
			snprintf(message, sizeof(message),
					 "part 2 (\"header.lance\") has a different layout of physical column %d",
					 header);
			expect_verdict(&a, &crafted, "column_layout_mismatch", message);
			close_part(&crafted);
		}
		free(columns);
		close_part(&b);
	}
	close_part(&a);
}

LP_TEST(concat_verdict_column_encoding)
{
	Part		a;
	Part		b;
	Part		crafted;
	LpColumn   *columns;
	uint8_t    *encoding;
	size_t		len;
	LpConcatVerdict v;

	if (!open_dataset_file("types_2_1_v2", 0, &a))
		return;
	if (open_dataset_file("types_2_1_v2", 1, &b))
	{
		/* ColumnEncoding.values (field 1) becomes zone_index (field 2) */
		columns = copy_columns(b.file);
		len = columns[3].encoding.len;
		encoding = malloc(len);
		memcpy(encoding, columns[3].encoding.data, len);
		LP_CHECK(len > 2 && encoding[len - 2] == 0x0a && encoding[len - 1] == 0x00);
		encoding[len - 2] = 0x12;
		columns[3].encoding.data = encoding;
		if (craft_part(&b, columns, b.file->num_columns, NULL, 0, "encoding.lance", &crafted))
		{
			LP_CHECK_STR(crafted.file->columns[3].kind, "zone_index");
			v = expect_verdict(&a, &crafted, "column_encoding_mismatch",
							   "part 2 (\"encoding.lance\") has a different encoding of physical column 3");
			LP_CHECK_EQ_U64(v.column, 3);
			close_part(&crafted);
		}
		free(encoding);
		free(columns);
		close_part(&b);
	}
	close_part(&a);
}

LP_TEST(concat_verdict_column_buffers)
{
	Part		a;
	Part		b;
	Part		crafted;
	LpColumn   *columns;
	LpBufferRef buffers[2] = {{0, 16}, {64, 8}};
	LpConcatVerdict v;

	if (!open_dataset_file("types_2_1_v2", 0, &a))
		return;
	if (open_dataset_file("types_2_1_v2", 1, &b))
	{
		columns = copy_columns(b.file);
		columns[2].num_column_buffers = 2;
		columns[2].column_buffers = buffers;
		if (craft_part(&b, columns, b.file->num_columns, NULL, 0, "buffers.lance", &crafted))
		{
			v = expect_verdict(&a, &crafted, "column_buffers",
							   "part 2 (\"buffers.lance\") has 2 column buffers in physical column 2, which cannot be relocated");
			LP_CHECK_EQ_U64(v.count, 2);
			close_part(&crafted);
		}
		free(columns);
		close_part(&b);
	}
	close_part(&a);
}

LP_TEST(concat_verdict_extra_global_buffers)
{
	Part		a;
	Part		b;
	Part		crafted;
	uint8_t		statistics[100];
	LpBytes		global_buffers[2];
	LpConcatVerdict v;

	if (!open_dataset_file("types_2_1_v2", 0, &a))
		return;
	if (open_dataset_file("types_2_1_v2", 1, &b))
	{
		memset(statistics, 7, sizeof(statistics));
		global_buffers[0] = b.file->schema_bytes;
		global_buffers[1].data = statistics;
		global_buffers[1].len = sizeof(statistics);
		if (craft_part(&b, NULL, 0, global_buffers, 2, "global.lance", &crafted))
		{
			LP_CHECK_EQ_U64(crafted.file->num_global_buffers, 2);
			v = expect_verdict(&a, &crafted, "extra_global_buffers",
							   "part 2 (\"global.lance\") has 2 global buffers, but only the schema buffer can be copied");
			LP_CHECK_EQ_U64(v.count, 2);
			close_part(&crafted);
		}
		close_part(&b);
	}
	close_part(&a);
}

/* ---- hard errors ---------------------------------------------------------- */

/* Plan parts; expect an error of code whose message contains text. */
static void
expect_error(Part *const *ordered, int n, const uint64_t *expected_rows,
			 LpErrorCode code, const char *text)
{
	VerdictCase vc;
	ConcatRun	run;

	start_case(&vc, "out.lance");
	run = run_concat(ordered, n, expected_rows, vc.path, false,
					 LP_CONCAT_DEFAULT_READ_BATCH_BYTES);
	LP_CHECK_MSG(!run.ok, "no error, verdict %s", lp_concat_reason_name(run.verdict.reason));
	LP_CHECK_MSG(run.err.code == code, "error %s: %.400s",
				 lp_error_code_name(run.err.code), run.err.message);
	LP_CHECK_MSG(strstr(run.err.message, text) != NULL, "message \"%.300s\" lacks \"%.100s\"",
				 run.err.message, text);
	end_case(&vc);
}

LP_TEST(concat_error_expected_rows)
{
	PartSet		set;
	Part	   *ordered[2];
	uint64_t	rows[2];

	if (!open_dataset("types_2_2_v2", &set))
		return;
	ordered[0] = &set.parts[0];
	ordered[1] = &set.parts[1];
	rows[0] = set.parts[0].file->num_rows;
	rows[1] = set.parts[1].file->num_rows + 1;
	expect_error(ordered, 2, rows, LP_ERR_INVALID_ARGUMENT,
				 "part 2 (\"");
	expect_error(ordered, 2, rows, LP_ERR_INVALID_ARGUMENT,
				 "\") has 170 rows, but 171 were expected");
	close_set(&set);
}

LP_TEST(concat_error_no_inputs)
{
	expect_error(NULL, 0, NULL, LP_ERR_INVALID_ARGUMENT,
				 "concatenation needs at least one input file");
}

/*
 * Concatenate fragment 0 of types_2_1_v2 with fragment 1 whose first page of
 * column `column` was changed by edit: the error must be `message`.
 */
static void
expect_error_after_page_edit(uint32_t column, void (*edit) (LpPage *page),
							 const char *name, const char *message)
{
	Part		a;
	Part		b;
	Part		crafted;
	Part	   *ordered[2];
	LpColumn   *columns;
	LpPage	   *pages;

	if (!open_dataset_file("types_2_1_v2", 0, &a))
		return;
	if (open_dataset_file("types_2_1_v2", 1, &b))
	{
		columns = copy_columns(b.file);
		pages = malloc(columns[column].num_pages * sizeof(LpPage));
		memcpy(pages, columns[column].pages, columns[column].num_pages * sizeof(LpPage));
		edit(&pages[0]);
		columns[column].pages = pages;
		if (craft_part(&b, columns, b.file->num_columns, NULL, 0, name, &crafted))
		{
			ordered[0] = &a;
			ordered[1] = &crafted;
			expect_error(ordered, 2, NULL, LP_ERR_CORRUPT, message);
			close_part(&crafted);
		}
		free(pages);
		free(columns);
		close_part(&b);
	}
	close_part(&a);
}

static void
drop_one_row(LpPage *page)
{
	page->num_rows--;
}

LP_TEST(concat_error_page_rows)
{
	expect_error_after_page_edit(0, drop_one_row, "rows.lance",
								 "part 2 (\"rows.lance\"): the pages of column 0 hold 169 rows, but the file has 170 rows");
}

LP_TEST(concat_error_struct_header_pages)
{
	Part		a;
	Part		crafted;
	Part	   *ordered[1];
	int			header;
	LpColumn   *columns;
	LpPage		pages[2];

	if (!open_dataset_file("types_2_0_v2", 1, &a))
		return;
	header = first_struct_header(a.file);
	LP_CHECK(header >= 0);
	if (header >= 0)
	{
		/* two header pages that still add up to the file's rows */
		columns = copy_columns(a.file);
		pages[0] = columns[header].pages[0];
		pages[1] = pages[0];
		pages[0].num_rows = 1;
		pages[1].num_rows = a.file->num_rows - 1;
		columns[header].pages = pages;
		columns[header].num_pages = 2;
		if (craft_part(&a, columns, a.file->num_columns, NULL, 0, "headers.lance", &crafted))
		{
			ordered[0] = &crafted;
			expect_error(ordered, 1, NULL, LP_ERR_CORRUPT,
						 "struct header column");
			close_part(&crafted);
		}
		free(columns);
	}
	close_part(&a);
}

LP_TEST(concat_error_columns_not_implied_by_schema)
{
	Part		a;
	Part		crafted;
	Part	   *ordered[1];

	if (!open_dataset_file("types_2_3_v2", 0, &a))
		return;
	if (craft_part(&a, a.file->columns, a.file->num_columns - 1, NULL, 0,
				   "short.lance", &crafted))
	{
		ordered[0] = &crafted;
		expect_error(ordered, 1, NULL, LP_ERR_CORRUPT,
					 "part 1 (\"short.lance\") has 28 columns, but its schema implies 29 for file version 2.3");
		close_part(&crafted);
	}
	close_part(&a);
}

LP_TEST(concat_error_zero_columns)
{
	Part		a;
	Part		crafted;
	Part	   *ordered[1];

	if (!open_dataset_file("types_2_1_v2", 0, &a))
		return;
	if (craft_part(&a, a.file->columns, 0, NULL, 0, "none.lance", &crafted))
	{
		ordered[0] = &crafted;
		expect_error(ordered, 1, NULL, LP_ERR_INVALID_ARGUMENT,
					 "part 1 (\"none.lance\") has no columns");
		close_part(&crafted);
	}
	close_part(&a);
}

static void
priority_near_max(LpPage *page)
{
	page->priority = UINT64_MAX - 5;
}

LP_TEST(concat_error_priority_overflow)
{
	expect_error_after_page_edit(1, priority_near_max, "priority.lance",
								 "part 2 (\"priority.lance\"): the priority of page 0 of column 1 overflows after relocation");
}

LP_TEST(concat_error_buffer_outside_file)
{
	Part		a;
	Part		rejected;
	LpColumn   *columns;
	LpPage		page;
	LpBufferRef buffer;
	uint8_t    *bytes;
	size_t		len;
	LpError		err;

	if (!open_dataset_file("types_2_1_v2", 0, &a))
		return;
	columns = copy_columns(a.file);
	page = columns[0].pages[0];
	buffer.offset = a.file->file_size + 4096;
	buffer.size = 8;
	page.buffers = &buffer;
	page.num_buffers = 1;
	columns[0].pages = &page;
	if (craft_bytes(&a, a.file->global_buffers[0].offset, columns,
					a.file->num_columns, NULL, 0, &bytes, &len))
	{
		/* the reader refuses such a file before it can become a part */
		LP_CHECK(!open_memory_part("outside.lance", bytes, len, &rejected, &err));
		LP_CHECK_MSG(err.code == LP_ERR_CORRUPT, "%.400s", err.message);
		close_part(&rejected);
	}
	free(columns);
	close_part(&a);
}

LP_TEST(concat_error_only_empty_inputs)
{
	Part		a;
	Part		empty;
	Part	   *ordered[2];

	if (!open_dataset_file("types_2_1_v2", 0, &a))
		return;
	if (craft_empty_part(&a, &empty))
	{
		ordered[0] = &empty;
		ordered[1] = &empty;
		expect_error(ordered, 2, NULL, LP_ERR_INVALID_ARGUMENT,
					 "the input files hold no rows");
		close_part(&empty);
	}
	close_part(&a);
}

/* A zero-row part contributes nothing: the output is the one without it. */
static void
check_empty_part_ignored(const char *dataset)
{
	PartSet		set;
	Part		empty;
	Part	   *with[3];
	Part	   *without[2];
	const char *dir = lp_test_make_temp_dir();
	char		path_with[4096];
	char		path_without[4096];
	uint8_t    *bytes_with;
	uint8_t    *bytes_without;
	size_t		len_with;
	size_t		len_without;

	if (!open_dataset(dataset, &set))
		return;
	if (craft_empty_part(&set.parts[0], &empty))
	{
		with[0] = &set.parts[0];
		with[1] = &empty;
		with[2] = &set.parts[1];
		without[0] = &set.parts[0];
		without[1] = &set.parts[1];
		output_path(dir, "with.lance", path_with, sizeof(path_with));
		output_path(dir, "without.lance", path_without, sizeof(path_without));
		LP_CHECK(run_concat(with, 3, NULL, path_with, false, 4096).ok);
		LP_CHECK(run_concat(without, 2, NULL, path_without, false, 4096).ok);
		if (lp_test_file_read_all(path_with, &bytes_with, &len_with) &&
			lp_test_file_read_all(path_without, &bytes_without, &len_without))
		{
			LP_CHECK(len_with == len_without &&
					 memcmp(bytes_with, bytes_without, len_with) == 0);
			free(bytes_with);
			free(bytes_without);
		}
		else
			LP_CHECK_MSG(false, "outputs missing");
		unlink(path_with);
		unlink(path_without);
		close_part(&empty);
	}
	rmdir(dir);
	close_set(&set);
}

LP_TEST(concat_empty_part_contributes_nothing_2_0)
{
	check_empty_part_ignored("types_2_0_v2");
}

LP_TEST(concat_empty_part_contributes_nothing_2_1)
{
	check_empty_part_ignored("types_2_1_v2");
}

/* ---- execution failures: the output is aborted, nothing is left ---------- */

static int	polls_until_cancel;

static bool
cancel_after_polls(void)
{
	return --polls_until_cancel < 0;
}

/* Plan dataset's files, then execute with the input list given. */
static void
execute_expecting_error(PartSet *set, LpInput **inputs, bool copy_from,
						size_t batch, LpErrorCode code, const char *text)
{
	LpConcatPart parts[MAX_PARTS];
	LpConcatTarget target = {set->parts[0].file->version, &set->parts[0].file->schema, false, NULL, NULL};
	LpConcatVerdict verdict;
	LpConcatPlan *plan;
	LpOutput   *output;
	LpError		err;
	VerdictCase vc;

	for (int i = 0; i < set->count; i++)
	{
		parts[i].file = set->parts[i].file;
		parts[i].has_expected_rows = false;
	}
	if (!lp_concat_plan(&target, parts, (uint32_t) set->count, &verdict, &plan, &err) ||
		plan == NULL)
	{
		LP_CHECK_MSG(false, "plan: %.400s", err.message);
		return;
	}
	start_case(&vc, "out.lance");
	output = lp_test_file_output_create(vc.path, copy_from, &err);
	LP_CHECK(output != NULL);
	if (output != NULL)
	{
		LP_CHECK(!lp_concat_execute(plan, inputs, output, batch, &err));
		LP_CHECK_MSG(err.code == code, "error %s: %.400s",
					 lp_error_code_name(err.code), err.message);
		LP_CHECK_MSG(strstr(err.message, text) != NULL, "message \"%.300s\" lacks \"%.100s\"",
					 err.message, text);
		output->ops->abort(output);
	}
	end_case(&vc);
	lp_concat_plan_free(plan);
}

LP_TEST(concat_cancel_mid_copy)
{
	PartSet		set;
	LpInput    *inputs[MAX_PARTS];

	if (!open_dataset("multipage_2_2", &set))
		return;
	for (int i = 0; i < set.count; i++)
		inputs[i] = set.parts[i].input;
	lp_set_cancel_check(cancel_after_polls);
	for (int copy_from = 0; copy_from <= 1; copy_from++)
	{
		polls_until_cancel = 5;
		execute_expecting_error(&set, inputs, copy_from, 1024, LP_ERR_CANCELED,
								"canceling");
		LP_CHECK(polls_until_cancel < 0);
	}
	lp_set_cancel_check(NULL);
	close_set(&set);
}

LP_TEST(concat_error_short_read)
{
	PartSet		set;
	LpInput    *inputs[MAX_PARTS];
	LpInput    *truncated;
	const char *dir = lp_test_make_temp_dir();
	char		path[4096];
	FILE	   *f;
	LpError		err;

	if (!open_dataset("types_2_1_v2", &set))
		return;
	/* a copy of part 1 that loses its end after it was opened */
	output_path(dir, "part.lance", path, sizeof(path));
	f = fopen(path, "wb");
	fwrite(set.parts[1].bytes, 1, set.parts[1].len, f);
	fclose(f);
	truncated = lp_test_file_input_open(path, &err);
	LP_CHECK(truncated != NULL && truncated->size == set.parts[1].len);
	LP_CHECK(truncate(path, 100) == 0);
	for (int i = 0; i < set.count; i++)
		inputs[i] = set.parts[i].input;
	inputs[1] = truncated;
	execute_expecting_error(&set, inputs, false, LP_CONCAT_DEFAULT_READ_BATCH_BYTES,
							LP_ERR_IO, "short read");
	lp_input_close(truncated);
	unlink(path);
	rmdir(dir);
	close_set(&set);
}

LP_TEST(concat_error_input_changed_size)
{
	PartSet		set;
	LpInput    *inputs[MAX_PARTS];
	LpInput    *shorter;

	if (!open_dataset("types_2_1_v2", &set))
		return;
	shorter = lp_memory_input_open("shorter.lance", set.parts[2].bytes, set.parts[2].len - 1);
	for (int i = 0; i < set.count; i++)
		inputs[i] = set.parts[i].input;
	inputs[2] = shorter;
	execute_expecting_error(&set, inputs, false, LP_CONCAT_DEFAULT_READ_BATCH_BYTES,
							LP_ERR_IO, "when the concatenation was planned");
	execute_expecting_error(&set, inputs, false, 0,
							LP_ERR_INVALID_ARGUMENT, "read batch size");
	lp_input_close(shorter);
	close_set(&set);
}

/*
 * Padding is written, not copied: parts whose padding bytes are zero still
 * give 0x48 between the output's buffers.
 */
LP_TEST(concat_padding_is_written)
{
	PartSet		set;
	Part		zeroed[2];
	Part	   *ordered[2];
	const char *dir = lp_test_make_temp_dir();
	char		path[4096];
	static const size_t batches[] = {LP_CONCAT_DEFAULT_READ_BATCH_BYTES, 4096};

	if (!open_dataset("types_2_2_v2", &set))
		return;
	for (int i = 0; i < 2; i++)
	{
		const LpFile *file = set.parts[i].file;
		uint64_t	data_end = file->global_buffers[0].offset;
		uint8_t    *bytes = calloc(set.parts[i].len, 1);
		LpError		err;

		/* only the page buffers and the tail survive */
		for (uint32_t c = 0; c < file->num_columns; c++)
			for (uint32_t p = 0; p < file->columns[c].num_pages; p++)
				for (uint32_t b = 0; b < file->columns[c].pages[p].num_buffers; b++)
				{
					LpBufferRef ref = file->columns[c].pages[p].buffers[b];

					memcpy(bytes + ref.offset, set.parts[i].bytes + ref.offset, ref.size);
				}
		memcpy(bytes + data_end, set.parts[i].bytes + data_end, set.parts[i].len - data_end);
		LP_CHECK(open_memory_part(i ? "zeroed1.lance" : "zeroed0.lance", bytes,
								  set.parts[i].len, &zeroed[i], &err));
		ordered[i] = &zeroed[i];
	}
	output_path(dir, "padded.lance", path, sizeof(path));
	for (int k = 0; k < 2; k++)
	{
		Part		out;

		LP_CHECK(run_concat(ordered, 2, NULL, path, false, batches[k]).ok);
		if (open_part(path, &out))
		{
			verify_concatenation(ordered, 2, &out, true);
			close_part(&out);
		}
		unlink(path);
	}
	rmdir(dir);
	close_part(&zeroed[0]);
	close_part(&zeroed[1]);
	close_set(&set);
}

/*
 * A copy of source whose data region is laid out anew: columns from last to
 * first and each column's pages from last to first (so the physical order
 * is neither the schema's nor the row order), optionally with a zero-length
 * buffer entry in front of every page of column 0 (Lance #6991).
 */
static bool
craft_relaid_part(const Part *source, bool zero_length_buffers, const char *name,
				  Part *part)
{
	const LpFile *file = source->file;
	LpColumn   *columns = copy_columns(file);
	LpPage	  **pages = calloc(file->num_columns, sizeof(LpPage *));
	LpBufferRef **buffers;
	size_t		num_pages = 0;
	size_t		next_page = 0;
	uint64_t	pos = 0;
	size_t		data_capacity = file->global_buffers[0].offset + 64 * 1024;
	uint8_t    *data = malloc(data_capacity);
	Part		staging;
	uint8_t    *bytes;
	size_t		len;
	bool		ok;

	memset(data, 0x48, data_capacity);
	for (uint32_t c = 0; c < file->num_columns; c++)
		num_pages += file->columns[c].num_pages;
	buffers = calloc(num_pages + 1, sizeof(LpBufferRef *));
	for (uint32_t c = 0; c < file->num_columns; c++)
	{
		pages[c] = malloc((file->columns[c].num_pages + 1) * sizeof(LpPage));
		memcpy(pages[c], file->columns[c].pages, file->columns[c].num_pages * sizeof(LpPage));
		columns[c].pages = pages[c];
	}
	for (uint32_t k = 0; k < file->num_columns; k++)
	{
		uint32_t	c = file->num_columns - 1 - k;

		for (uint32_t q = 0; q < columns[c].num_pages; q++)
		{
			LpPage	   *page = &pages[c][columns[c].num_pages - 1 - q];
			bool		extra = zero_length_buffers && c == 0;
			LpBufferRef *moved = malloc((page->num_buffers + 1) * sizeof(LpBufferRef));

			for (uint32_t b = 0; b < page->num_buffers; b++)
			{
				pos = (pos + 63) & ~(uint64_t) 63;
				memcpy(data + pos, source->bytes + page->buffers[b].offset,
					   page->buffers[b].size);
				moved[b + extra].offset = pos;
				moved[b + extra].size = page->buffers[b].size;
				pos += page->buffers[b].size;
			}
			if (extra)
			{
				moved[0].offset = (pos + 63) & ~(uint64_t) 63;
				moved[0].size = 0;
			}
			page->buffers = moved;
			page->num_buffers += extra;
			buffers[next_page++] = moved;
		}
	}
	/* every buffer keeps its size, so the region does not grow */
	LP_CHECK(pos <= data_capacity);
	memset(&staging, 0, sizeof(staging));
	staging.file = source->file;
	staging.bytes = data;
	ok = craft_bytes(&staging, pos, columns, file->num_columns, NULL, 0, &bytes, &len);
	if (ok)
	{
		LpError		err;

		ok = open_memory_part(name, bytes, len, part, &err);
		LP_CHECK_MSG(ok, "%.400s", err.message);
	}
	for (size_t i = 0; i < next_page; i++)
		free(buffers[i]);
	for (uint32_t c = 0; c < file->num_columns; c++)
		free(pages[c]);
	free(buffers);
	free(pages);
	free(columns);
	free(data);
	return ok;
}

static void
check_relaid_concat(const char *dataset)
{
	PartSet		set;
	Part		relaid;
	Part		zeroed;
	Part	   *ordered[3];
	const char *dir = lp_test_make_temp_dir();
	char		path[4096];

	if (!open_dataset(dataset, &set))
		return;
	if (craft_relaid_part(&set.parts[1], false, "relaid.lance", &relaid))
	{
		if (craft_relaid_part(&set.parts[0], true, "zero-length.lance", &zeroed))
		{
			Part		out;

			LP_CHECK_EQ_U64(zeroed.file->columns[0].pages[0].buffers[0].size, 0);
			ordered[0] = &zeroed;
			ordered[1] = &relaid;
			ordered[2] = &set.parts[2];
			output_path(dir, "relaid-out.lance", path, sizeof(path));
			LP_CHECK(run_concat(ordered, 3, NULL, path, false, 4096).ok);
			if (open_part(path, &out))
			{
				verify_concatenation(ordered, 3, &out, true);
				LP_CHECK_EQ_U64(out.file->columns[0].pages[0].buffers[0].size, 0);
				close_part(&out);
			}
			unlink(path);
			close_part(&zeroed);
		}
		close_part(&relaid);
	}
	rmdir(dir);
	close_set(&set);
}

LP_TEST(concat_rotated_columns_and_zero_length_buffers_2_0)
{
	check_relaid_concat("types_2_0_v2");
}

LP_TEST(concat_rotated_columns_and_zero_length_buffers_2_1)
{
	check_relaid_concat("types_2_1_v2");
}

/* ---- spans and block-aligned regions ------------------------------------ */

/*
 * Write a plan as spans of span bytes, odd spans from the last down, then
 * even spans from the first up, as parallel copiers might; publish to path.
 */
static bool
execute_in_spans(const LpConcatPlan *plan, LpInput *const *inputs, const char *path,
				 bool copy_from, size_t batch, uint64_t span, LpError *err)
{
	LpOutput   *output = lp_test_file_output_create(path, copy_from, err);
	LpConcatCopier copier;
	uint64_t	count = (plan->tail.start + span - 1) / span;
	bool		ok;

	if (output == NULL)
		return false;
	ok = lp_concat_copier_init(&copier, plan, inputs, output, batch, err);
	for (uint64_t k = count; ok && k-- > 0;)
	{
		if (k % 2 == 1)
			ok = lp_concat_copy_span(&copier, k * span, (k + 1) * span, err);
	}
	for (uint64_t k = 0; ok && k < count; k += 2)
		ok = lp_concat_copy_span(&copier, k * span, (k + 1) * span, err);
	ok = ok && lp_concat_write_tail(plan, output, err);
	lp_concat_copier_free(&copier);
	if (!ok)
	{
		output->ops->abort(output);
		return false;
	}
	return output->ops->publish(output, err);
}

static LpConcatPlan *
plan_set(Part *const *ordered, int n, uint64_t alignment)
{
	LpConcatPart parts[MAX_PARTS];
	LpConcatTarget target = {ordered[0]->file->version, &ordered[0]->file->schema, false, NULL, NULL};
	LpConcatVerdict verdict;
	LpConcatPlan *plan = NULL;
	LpError		err;
	bool		ok;

	for (int i = 0; i < n; i++)
	{
		parts[i].file = ordered[i]->file;
		parts[i].has_expected_rows = false;
		parts[i].expected_rows = 0;
	}
	ok = alignment == 0
		? lp_concat_plan(&target, parts, (uint32_t) n, &verdict, &plan, &err)
		: lp_concat_plan_regions(&target, parts, (uint32_t) n, alignment, &verdict, &plan, &err);
	LP_CHECK_MSG(ok && plan != NULL, "plan: %.400s", ok ? "incompatible" : err.message);
	return ok ? plan : NULL;
}

/* Each part's buffers sit at its range's base plus their offset in the part. */
static void
check_region_placement(const LpConcatPlan *plan, Part *const *inputs, int n,
					   const Part *out)
{
	LP_CHECK_EQ_U64(plan->num_region_parts, n);
	LP_CHECK_EQ_U64(plan->num_ranges, n);
	for (size_t r = 0; r < plan->num_ranges && r < (size_t) n; r++)
	{
		const LpCopyRange *range = &plan->ranges[r];
		const LpFile *f = inputs[r]->file;

		LP_CHECK_EQ_U64(range->input, r);
		LP_CHECK_EQ_U64(range->source_offset, 0);
		LP_CHECK_EQ_U64(range->dest_offset % plan->region_alignment, 0);
		LP_CHECK(range->length <= f->file_size);
		LP_CHECK(range->length % plan->region_alignment == 0 ||
				 range->length + plan->region_alignment > f->file_size);
	}
	/* pages of part r follow those of parts before it, column by column */
	for (uint32_t c = 0; c < out->file->num_columns; c++)
	{
		uint32_t	k = 0;

		for (int i = 0; i < n && (size_t) i < plan->num_ranges; i++)
		{
			const LpColumn *column = &inputs[i]->file->columns[c];

			for (uint32_t p = 0; p < column->num_pages && k < out->file->columns[c].num_pages; p++, k++)
			{
				const LpPage *sp = &column->pages[p];
				const LpPage *op = &out->file->columns[c].pages[k];

				for (uint32_t b = 0; b < sp->num_buffers && b < op->num_buffers; b++)
					LP_CHECK_EQ_U64(op->buffers[b].offset,
									plan->ranges[i].dest_offset + sp->buffers[b].offset);
			}
		}
	}
}

static bool
same_file_bytes(const char *a, const char *b)
{
	uint8_t    *x;
	uint8_t    *y;
	size_t		xl;
	size_t		yl;
	bool		same;

	if (!lp_test_file_read_all(a, &x, &xl))
		return false;
	if (!lp_test_file_read_all(b, &y, &yl))
	{
		free(x);
		return false;
	}
	same = xl == yl && memcmp(x, y, xl) == 0;
	free(x);
	free(y);
	return same;
}

/*
 * Packed and region plans of a dataset: the serial output verifies, and
 * spans written out of order through either executor path give the same
 * bytes, for small and large spans and batches.
 */
static void
check_dataset_spans(const char *dataset)
{
	PartSet		set;
	Part	   *order[MAX_PARTS];
	const char *dir = lp_test_make_temp_dir();
	static const uint64_t alignments[] = {0, 4096, 64};

	if (!open_dataset(dataset, &set))
		return;
	for (int i = 0; i < set.count; i++)
		order[i] = &set.parts[i];

	for (size_t a = 0; a < sizeof(alignments) / sizeof(alignments[0]); a++)
	{
		LpConcatPlan *plan = plan_set(order, set.count, alignments[a]);
		LpInput    *inputs[MAX_PARTS];
		char		serial[4096];
		char		spans[4096];
		LpOutput   *output;
		LpError		err;
		Part		out;

		if (plan == NULL)
			continue;
		for (int i = 0; i < set.count; i++)
			inputs[i] = set.parts[i].input;
		output_path(dir, "serial.lance", serial, sizeof(serial));
		output = lp_test_file_output_create(serial, false, &err);
		LP_CHECK(output != NULL);
		if (output == NULL)
		{
			lp_concat_plan_free(plan);
			continue;
		}
		if (!lp_concat_execute(plan, inputs, output, 4096, &err))
		{
			LP_CHECK_MSG(false, "%s: %.400s", dataset, err.message);
			output->ops->abort(output);
		}
		else
			LP_CHECK_MSG(output->ops->publish(output, &err), "%.400s", err.message);
		if (open_part(serial, &out))
		{
			LP_CHECK_EQ_U64(out.len, plan->output_size);
			verify_concatenation(order, set.count, &out, alignments[a] == 0);
			if (alignments[a] != 0)
				check_region_placement(plan, order, set.count, &out);
			close_part(&out);
		}

		for (int variant = 0; variant < 4; variant++)
		{
			bool		copy_from = variant % 2 == 1;
			size_t		batch = variant < 2 ? 100 : LP_CONCAT_DEFAULT_READ_BATCH_BYTES;
			uint64_t	span = lp_concat_span_bytes(plan, variant < 2 ? 100 : 20000);

			output_path(dir, "spans.lance", spans, sizeof(spans));
			LP_CHECK_MSG(execute_in_spans(plan, inputs, spans, copy_from, batch, span, &err),
						 "%s: %.400s", dataset, err.message);
			LP_CHECK_MSG(same_file_bytes(serial, spans),
						 "%s, alignment %" PRIu64 ", variant %d: spans differ from the serial output",
						 dataset, alignments[a], variant);
			unlink(spans);
		}
		unlink(serial);
		lp_concat_plan_free(plan);
	}
	rmdir(dir);
	close_set(&set);
}

LP_TEST(concat_spans_and_regions_types)
{
	check_dataset_spans("types_2_0_v2");
	check_dataset_spans("types_2_1_v2");
	check_dataset_spans("types_2_2_v2");
	check_dataset_spans("types_2_3_v2");
}

LP_TEST(concat_spans_and_regions_multipage)
{
	check_dataset_spans("multipage_2_0");
	check_dataset_spans("multipage_2_1");
	check_dataset_spans("multipage_2_2");
	check_dataset_spans("multipage_2_3");
}

LP_TEST(concat_span_bytes)
{
	LpConcatPlan plan;

	memset(&plan, 0, sizeof(plan));
	LP_CHECK_EQ_U64(lp_concat_span_bytes(&plan, 100), 64);
	LP_CHECK_EQ_U64(lp_concat_span_bytes(&plan, 1000), 960);
	plan.region_alignment = 4096;
	LP_CHECK_EQ_U64(lp_concat_span_bytes(&plan, 100), 4096);
	LP_CHECK_EQ_U64(lp_concat_span_bytes(&plan, 10000), 8192);
}

/* A part with a page buffer inside its metadata tail is laid out packed. */
LP_TEST(concat_region_needs_buffers_below_schema)
{
	PartSet		set;
	Part		crafted;
	Part	   *ordered[2];
	LpColumn   *columns;
	LpPage		page;
	LpBufferRef *buffers;
	LpConcatPlan *plan;
	LpConcatPart parts[1];
	LpConcatTarget target = {0};
	LpConcatVerdict verdict;
	LpError		err;

	if (!open_dataset("types_2_1_v2", &set))
		return;
	columns = copy_columns(set.parts[1].file);
	page = columns[0].pages[0];
	buffers = malloc(page.num_buffers * sizeof(LpBufferRef));
	memcpy(buffers, page.buffers, page.num_buffers * sizeof(LpBufferRef));
	buffers[0].offset = set.parts[1].file->global_buffers[0].offset;
	buffers[0].size = 8;
	page.buffers = buffers;
	columns[0].pages = &page;
	LP_CHECK(page.num_buffers > 0);
	if (craft_part(&set.parts[1], columns, set.parts[1].file->num_columns, NULL, 0,
				   "late-buffer.lance", &crafted))
	{
		ordered[0] = &set.parts[0];
		ordered[1] = &crafted;
		plan = plan_set(ordered, 2, 4096);
		if (plan != NULL)
		{
			LP_CHECK_EQ_U64(plan->num_region_parts, 1);
			LP_CHECK_EQ_U64(plan->ranges[0].dest_offset, 0);
			LP_CHECK(plan->num_ranges > 2);
			for (size_t r = 1; r < plan->num_ranges; r++)
				LP_CHECK_EQ_U64(plan->ranges[r].input, 1);
			lp_concat_plan_free(plan);
		}
		close_part(&crafted);
	}

	/* an alignment that is not a power of two of at least 64 is refused */
	parts[0].file = set.parts[0].file;
	parts[0].has_expected_rows = false;
	target.version = set.parts[0].file->version;
	target.schema = &set.parts[0].file->schema;
	LP_CHECK(!lp_concat_plan_regions(&target, parts, 1, 1000, &verdict, &plan, &err));
	LP_CHECK_MSG(strstr(err.message, "power of two") != NULL, "%.400s", err.message);
	LP_CHECK(!lp_concat_plan_regions(&target, parts, 1, 32, &verdict, &plan, &err));
	free(buffers);
	free(columns);
	close_set(&set);
}

/* ---- inputs of another store ---------------------------------------------- */

/*
 * The first part read from memory (another store's input) and the others
 * from files, into an output of the tests' POSIX store: its copy_from
 * refuses the memory input (LP_ERR_UNSUPPORTED), the executor reads and
 * writes that part's ranges, and the bytes are the serial output's.
 */
static void
check_cross_store_copy(const char *dataset)
{
	PartSet		set;
	Part		memory_part;
	Part	   *order[MAX_PARTS];
	const char *dir = lp_test_make_temp_dir();
	static const uint64_t alignments[] = {0, 4096};

	if (!open_dataset(dataset, &set))
		return;
	for (int i = 0; i < set.count; i++)
		order[i] = &set.parts[i];

	for (size_t a = 0; a < sizeof(alignments) / sizeof(alignments[0]); a++)
	{
		LpConcatPlan *plan = plan_set(order, set.count, alignments[a]);
		LpInput    *inputs[MAX_PARTS];
		LpStore    *store = lp_test_store();
		char		serial[4096];
		char		mixed[4096];
		LpOutput   *output;
		LpError		err;
		uint8_t    *bytes;
		size_t		len;
		int			refused_before = lp_test_file_copies_refused;

		if (plan == NULL)
			continue;
		for (int i = 0; i < set.count; i++)
			inputs[i] = set.parts[i].input;
		output_path(dir, "serial.lance", serial, sizeof(serial));
		output = lp_test_file_output_create(serial, false, &err);
		LP_CHECK(output != NULL && lp_concat_execute(plan, inputs, output, 4096, &err) &&
				 output->ops->publish(output, &err));

		LP_CHECK(lp_test_file_read_all(set.parts[0].path, &bytes, &len));
		LP_CHECK(open_memory_part("memory part", bytes, len, &memory_part, &err));
		inputs[0] = memory_part.input;
		output_path(dir, "mixed.lance", mixed, sizeof(mixed));
		output = store->ops->create_output(store, mixed, &err);
		LP_CHECK(output != NULL && output->ops->copy_from != NULL);
		if (output != NULL)
		{
			bool		ok = lp_concat_execute(plan, inputs, output, 4096, &err);

			LP_CHECK_MSG(ok, "%s: %.400s", dataset, err.message);
			if (ok)
				LP_CHECK_MSG(output->ops->publish(output, &err), "%.400s", err.message);
			else
				output->ops->abort(output);
		}
		LP_CHECK_MSG(lp_test_file_copies_refused > refused_before,
					 "%s: copy_from was never asked to copy the memory input", dataset);
		LP_CHECK_MSG(same_file_bytes(serial, mixed),
					 "%s, alignment %" PRIu64 ": the cross-store copy differs from the serial output",
					 dataset, alignments[a]);
		close_part(&memory_part);
		unlink(mixed);
		unlink(serial);
		lp_concat_plan_free(plan);
	}
	rmdir(dir);
	close_set(&set);
}

LP_TEST(concat_copy_from_refuses_another_store_and_falls_back)
{
	check_cross_store_copy("types_2_1_v2");
	check_cross_store_copy("multipage_2_2");
}

/*
 * Files whose strings are lists of u8 (lancedb 0.5.2) are refused by name,
 * not taken for damaged files with more columns than their schema implies.
 */
LP_TEST(concat_verdict_bytes_as_lists)
{
	PartSet		set;
	LpConcatVerdict v;
	char		message[2048];

	if (!open_dataset("legacy/strlist_2_0", &set))
		return;
	snprintf(message, sizeof(message),
			 "part 1 (\"%s\") stores field \"s\" as a list of bytes in physical columns 1 and 2 (Lance 0.13 and earlier), which a data file's column indices cannot describe",
			 set.parts[0].path);
	v = expect_verdict(&set.parts[0], &set.parts[1], "bytes_as_lists", message);
	LP_CHECK_STR(v.field_name, "s");
	LP_CHECK_EQ_U64(v.input, 0);
	LP_CHECK_EQ_U64(v.column, 1);
	close_set(&set);
}
