/*
 * test_concat_parts.c - multipart upload parts of concatenation plans.
 *
 * Plans are built from the data files written by npm lancedb (repeated to
 * make many parts) with small multipart limits.  Each part list is checked
 * against the limits and materialized: copy parts read from the inputs,
 * send parts from lp_concat_output_bytes.  The result must be the file the
 * serial executor writes for the same plan, byte for byte except at the
 * plan's padding bytes under copy parts, and must open with every page
 * buffer where the plan put it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "concat/lp_concat.h"
#include "concat/lp_concat_parts.h"
#include "format/lp_file.h"
#include "format/lp_file_tail.h"
#include "lp_test.h"
#include "lp_test_files.h"
#include "lp_test_util.h"

#define MAX_FILES 8
#define MAX_INPUTS 128

/* The data files of one dataset, in name order. */
typedef struct Files
{
	int			count;
	LpInput    *inputs[MAX_FILES];
	LpFile	   *files[MAX_FILES];
} Files;

/* A plan over files (repeated as order says) and the serial executor's output. */
typedef struct Case
{
	uint32_t	num_inputs;
	LpInput    *inputs[MAX_INPUTS];
	LpConcatPlan *plan;
	uint8_t    *serial;			/* plan->output_size bytes */
} Case;

static void
close_files(Files *files)
{
	for (int i = 0; i < files->count; i++)
	{
		lp_file_free(files->files[i]);
		lp_input_close(files->inputs[i]);
	}
	files->count = 0;
}

static bool
open_files(const char *dataset, Files *files)
{
	char	   *paths[MAX_FILES];
	int			num_paths = lp_test_dataset_data_files(dataset, paths, MAX_FILES);
	bool		ok = num_paths >= 0;

	files->count = 0;
	for (int i = 0; i < num_paths; i++)
	{
		LpError		err;

		if (ok)
		{
			files->inputs[files->count] = lp_test_file_input_open(paths[i], &err);
			files->files[files->count] = files->inputs[files->count] == NULL ? NULL
				: lp_file_open(files->inputs[files->count], &err);
			LP_CHECK_MSG(files->files[files->count] != NULL, "open \"%.400s\": %.100s",
						 paths[i], err.message);
			if (files->files[files->count] != NULL)
				files->count++;
			else
			{
				lp_input_close(files->inputs[files->count]);
				ok = false;
			}
		}
		free(paths[i]);
	}
	LP_CHECK_MSG(ok && files->count > 0, "dataset %s has no readable data files", dataset);
	if (!ok || files->count == 0)
		close_files(files);
	return files->count > 0;
}

static void
close_case(Case *c)
{
	lp_concat_plan_free(c->plan);
	free(c->serial);
	memset(c, 0, sizeof(*c));
}

/*
 * Plan num_inputs inputs, input i being file order[i] (or i % count when
 * order is NULL), with region alignment alignment (0: packed), and write
 * the plan with the serial executor.
 */
static bool
open_case(const Files *files, const int *order, uint32_t num_inputs,
		  uint64_t alignment, Case *c)
{
	LpConcatPart parts[MAX_INPUTS];
	LpConcatTarget target = {files->files[0]->version, &files->files[0]->schema, false, NULL, NULL};
	LpConcatVerdict verdict;
	LpError		err;
	const char *dir;
	char		path[1024];
	LpOutput   *output;
	size_t		len;
	bool		ok;

	memset(c, 0, sizeof(*c));
	c->num_inputs = num_inputs;
	for (uint32_t i = 0; i < num_inputs; i++)
	{
		int			f = order != NULL ? order[i] : (int) (i % (uint32_t) files->count);

		parts[i].file = files->files[f];
		parts[i].has_expected_rows = false;
		parts[i].expected_rows = 0;
		c->inputs[i] = files->inputs[f];
	}
	ok = alignment == 0
		? lp_concat_plan(&target, parts, num_inputs, &verdict, &c->plan, &err)
		: lp_concat_plan_regions(&target, parts, num_inputs, alignment, &verdict, &c->plan, &err);
	LP_CHECK_MSG(ok && c->plan != NULL, "plan: %.400s", ok ? "incompatible" : err.message);
	if (!ok || c->plan == NULL)
		return false;

	dir = lp_test_make_temp_dir();
	snprintf(path, sizeof(path), "%s/serial.lance", dir);
	output = lp_test_file_output_create(path, false, &err);
	ok = output != NULL;
	if (ok && !lp_concat_execute(c->plan, c->inputs, output, 4096, &err))
	{
		output->ops->abort(output);
		ok = false;
	}
	ok = ok && output->ops->publish(output, &err);
	LP_CHECK_MSG(ok, "serial execution: %.400s", err.message);
	ok = ok && lp_test_file_read_all(path, &c->serial, &len);
	LP_CHECK(ok && len == c->plan->output_size);
	unlink(path);
	rmdir(dir);
	if (!ok || len != c->plan->output_size)
	{
		close_case(c);
		return false;
	}
	return true;
}

/* Whether output byte offset lies in one of the plan's copy ranges. */
static bool
in_range(const LpConcatPlan *plan, uint64_t offset)
{
	size_t		low = 0;
	size_t		high = plan->num_ranges;

	while (low < high)
	{
		size_t		mid = low + (high - low) / 2;
		const LpCopyRange *range = &plan->ranges[mid];

		if (range->dest_offset + range->length <= offset)
			low = mid + 1;
		else if (range->dest_offset > offset)
			high = mid;
		else
			return true;
	}
	return false;
}

/* Every page buffer of file (the materialized output) where the plan put it. */
static bool
same_buffer_offsets(const LpConcatPlan *plan, const LpFile *file, char *why, size_t why_len)
{
	if (file->num_columns != plan->num_columns)
	{
		snprintf(why, why_len, "%u columns, the plan has %u", file->num_columns,
				 plan->num_columns);
		return false;
	}
	for (uint32_t c = 0; c < plan->num_columns; c++)
	{
		const LpColumn *got = &file->columns[c];
		const LpColumn *want = &plan->columns[c];

		if (got->num_pages != want->num_pages)
		{
			snprintf(why, why_len, "column %u has %u pages, the plan %u", c,
					 got->num_pages, want->num_pages);
			return false;
		}
		for (uint32_t p = 0; p < got->num_pages; p++)
		{
			for (uint32_t b = 0; b < got->pages[p].num_buffers; b++)
			{
				const LpBufferRef *g = &got->pages[p].buffers[b];
				const LpBufferRef *w = &want->pages[p].buffers[b];

				if (g->offset != w->offset || g->size != w->size || g->offset % 64 != 0)
				{
					snprintf(why, why_len, "column %u page %u buffer %u at %" PRIu64 " (+%" PRIu64 "), the plan says %" PRIu64 " (+%" PRIu64 ")",
							 c, p, b, g->offset, g->size, w->offset, w->size);
					return false;
				}
			}
		}
	}
	return true;
}

/*
 * Check parts against limits and materialize them: false with a reason in
 * why when any property fails.
 */
static bool
verify_parts(const Case *c, const LpMultipartLimits *limits, const LpUploadParts *parts,
			 char *why, size_t why_len)
{
	const LpConcatPlan *plan = c->plan;
	uint8_t    *bytes = malloc(plan->output_size);
	uint64_t	pos = 0;
	uint64_t	copied = 0;
	uint64_t	sent = 0;
	size_t		k;
	bool		ok = true;
	LpError		err;

	if (parts->num_parts == 0 || parts->num_parts > limits->max_parts)
	{
		snprintf(why, why_len, "%zu parts, limit %u", parts->num_parts, limits->max_parts);
		free(bytes);
		return false;
	}
	for (k = 0; ok && k < parts->num_parts; k++)
	{
		const LpUploadPart *part = &parts->parts[k];
		bool		last = k + 1 == parts->num_parts;

		if (part->dest_offset != pos || part->length == 0 ||
			part->length > plan->output_size - pos)
			ok = snprintf(why, why_len, "part %zu at %" PRIu64 " (+%" PRIu64 ") does not continue at %" PRIu64,
						  k, part->dest_offset, part->length, pos) < 0;
		else if (part->length > limits->max_part_bytes ||
				 (!last && part->length < limits->min_part_bytes))
			ok = snprintf(why, why_len, "part %zu of %zu has %" PRIu64 " bytes, outside [%" PRIu64 ", %" PRIu64 "]",
						  k, parts->num_parts, part->length,
						  limits->min_part_bytes, limits->max_part_bytes) < 0;
		else if (part->kind == LP_UPLOAD_PART_COPY)
		{
			ok = part->input < c->num_inputs &&
				part->source_offset <= c->inputs[part->input]->size &&
				part->length <= c->inputs[part->input]->size - part->source_offset &&
				lp_input_read(c->inputs[part->input], part->source_offset,
							  bytes + pos, part->length, &err);
			if (!ok)
				snprintf(why, why_len, "copy part %zu: input %u bytes [%" PRIu64 ", +%" PRIu64 ") cannot be read",
						 k, part->input, part->source_offset, part->length);
			copied += part->length;
		}
		else
		{
			ok = lp_concat_output_bytes(plan, c->inputs, pos, bytes + pos, part->length, &err) &&
				memcmp(bytes + pos, c->serial + pos, part->length) == 0;
			if (!ok)
				snprintf(why, why_len, "send part %zu: its bytes are not the serial output's", k);
			sent += part->length;
		}
		pos += part->length;
	}
	if (ok && pos != plan->output_size)
		ok = snprintf(why, why_len, "parts end at %" PRIu64 ", the output at %" PRIu64,
					  pos, plan->output_size) < 0;
	if (ok && (copied != parts->copied_bytes || sent != parts->sent_bytes))
		ok = snprintf(why, why_len, "copied %" PRIu64 " and sent %" PRIu64 " bytes, reported %" PRIu64 " and %" PRIu64,
					  copied, sent, parts->copied_bytes, parts->sent_bytes) < 0;

	/* only padding may differ, and only under copy parts (send parts were compared) */
	for (uint64_t b = 0; ok && b < plan->output_size; b++)
	{
		if (bytes[b] != c->serial[b] && (b >= plan->tail.start || in_range(plan, b)))
			ok = snprintf(why, why_len, "output byte %" PRIu64 " is 0x%02x, the plan's 0x%02x (not padding)",
						  b, bytes[b], c->serial[b]) < 0;
	}
	if (ok && plan->tail.bytes.len > 0 && plan->columns != NULL)
	{
		LpInput    *input = lp_memory_input_open("materialized", bytes, plan->output_size);
		LpFile	   *file = lp_file_open(input, &err);

		if (file == NULL)
			ok = snprintf(why, why_len, "the materialized output does not open: %s",
						  err.message) < 0;
		else
			ok = same_buffer_offsets(plan, file, why, why_len);
		lp_file_free(file);
		lp_input_close(input);
	}
	free(bytes);
	return ok;
}

/* Plan the parts; they must be computed and pass verify_parts. */
static LpUploadParts *
checked_parts(const Case *c, const LpMultipartLimits *limits, const char *what)
{
	LpUploadParts *parts = NULL;
	LpError		err;
	char		why[512];

	if (!lp_concat_upload_parts(c->plan, limits, &parts, &err))
	{
		LP_CHECK_MSG(false, "%s: %.400s", what, err.message);
		return NULL;
	}
	LP_CHECK_MSG(verify_parts(c, limits, parts, why, sizeof(why)), "%.100s: %.380s", what, why);
	return parts;
}

static uint64_t
count_kind(const LpUploadParts *parts, LpUploadPartKind kind)
{
	uint64_t	n = 0;

	for (size_t k = 0; k < parts->num_parts; k++)
		n += parts->parts[k].kind == kind;
	return n;
}

/* Whether the plan's ranges follow each other without padding up to the tail. */
static bool
ranges_contiguous(const LpConcatPlan *plan)
{
	uint64_t	pos = 0;

	for (size_t r = 0; r < plan->num_ranges; r++)
	{
		if (plan->ranges[r].dest_offset != pos)
			return false;
		pos += plan->ranges[r].length;
	}
	return pos == plan->tail.start;
}

static const LpMultipartLimits small_limits = {4096, 65536, 100};

/*
 * Packed, 64-byte and 4 KiB region plans of a dataset's files with small
 * limits.  With 64-byte regions every part is one range, the ranges follow
 * each other, and a region of at least the minimum is copied: only the tail
 * and regions below the minimum (plus what makes their send parts reach the
 * minimum) are sent.
 */
static void
check_dataset(const char *dataset)
{
	static const uint64_t alignments[] = {0, 64, 4096};
	Files		files;

	if (!open_files(dataset, &files))
		return;
	for (size_t a = 0; a < sizeof(alignments) / sizeof(alignments[0]); a++)
	{
		Case		c;
		LpUploadParts *parts;
		char		what[256];

		if (!open_case(&files, NULL, (uint32_t) files.count, alignments[a], &c))
			continue;
		snprintf(what, sizeof(what), "%s, alignment %" PRIu64, dataset, alignments[a]);
		parts = checked_parts(&c, &small_limits, what);
		if (parts != NULL && alignments[a] == 64)
		{
			uint64_t	small = 0;

			LP_CHECK_EQ_U64(c.plan->num_region_parts, c.num_inputs);
			LP_CHECK_MSG(ranges_contiguous(c.plan), "%s: regions with padding between them", what);
			for (size_t r = 0; r < c.plan->num_ranges; r++)
				small += c.plan->ranges[r].length < small_limits.min_part_bytes
					? c.plan->ranges[r].length : 0;
			LP_CHECK_MSG(parts->sent_bytes <= c.plan->tail.bytes.len + small +
						 count_kind(parts, LP_UPLOAD_PART_SEND) * small_limits.min_part_bytes,
						 "%s: %" PRIu64 " bytes sent", what, parts->sent_bytes);
			if (small == 0)
				LP_CHECK_EQ_U64(parts->sent_bytes, c.plan->tail.bytes.len);
		}
		if (parts != NULL)
			LP_CHECK_MSG(parts->copied_bytes > 0, "%s: nothing copied", what);
		lp_concat_upload_parts_free(parts);
		close_case(&c);
	}
	close_files(&files);
}

LP_TEST(concat_parts_multipage)
{
	check_dataset("multipage_2_0");
	check_dataset("multipage_2_1");
	check_dataset("multipage_2_2");
	check_dataset("multipage_2_3");
}

LP_TEST(concat_parts_types)
{
	check_dataset("types_2_0_v2");
	check_dataset("types_2_1_v2");
	check_dataset("types_2_2_v2");
	check_dataset("types_2_3_v2");
	check_dataset("encodings_2_3");
}

/*
 * One part: with the minimum exactly its region's length, the region is one
 * copy part and the tail one send part; one byte more and nothing can be
 * copied, so the whole file is sent.
 */
LP_TEST(concat_parts_region_at_minimum)
{
	Files		files;
	Case		c;
	int			order[1] = {0};

	if (!open_files("multipage_2_2", &files))
		return;
	if (open_case(&files, order, 1, 64, &c))
	{
		uint64_t	region = c.plan->ranges[0].length;
		LpMultipartLimits exact = {region, 2 * region, 10};
		LpMultipartLimits above = {region + 1, 2 * region + 2, 10};
		LpUploadParts *parts;

		LP_CHECK_EQ_U64(c.plan->num_ranges, 1);
		LP_CHECK_EQ_U64(region, c.plan->tail.start);
		parts = checked_parts(&c, &exact, "minimum = region");
		if (parts != NULL)
		{
			LP_CHECK_EQ_U64(parts->num_parts, 2);
			LP_CHECK(parts->parts[0].kind == LP_UPLOAD_PART_COPY);
			LP_CHECK_EQ_U64(parts->parts[0].length, region);
			LP_CHECK_EQ_U64(parts->parts[0].source_offset, 0);
			LP_CHECK(parts->parts[1].kind == LP_UPLOAD_PART_SEND);
			LP_CHECK_EQ_U64(parts->sent_bytes, c.plan->tail.bytes.len);
		}
		lp_concat_upload_parts_free(parts);
		parts = checked_parts(&c, &above, "minimum = region + 1");
		if (parts != NULL)
		{
			LP_CHECK_EQ_U64(parts->copied_bytes, 0);
			LP_CHECK_EQ_U64(parts->sent_bytes, c.plan->output_size);
		}
		lp_concat_upload_parts_free(parts);
		close_case(&c);
	}
	close_files(&files);
}

/* A region longer than the maximum: the fewest copy parts, nearly equal, in source order. */
LP_TEST(concat_parts_region_above_maximum)
{
	Files		files;
	Case		c;
	int			order[1] = {0};

	if (!open_files("multipage_2_2", &files))
		return;
	if (open_case(&files, order, 1, 64, &c))
	{
		uint64_t	region = c.plan->ranges[0].length;
		LpMultipartLimits limits = {1024, region / 3, 10};
		uint64_t	expected = region / limits.max_part_bytes + (region % limits.max_part_bytes != 0);
		LpUploadParts *parts = checked_parts(&c, &limits, "maximum = region / 3");

		if (parts != NULL)
		{
			LP_CHECK_EQ_U64(count_kind(parts, LP_UPLOAD_PART_COPY), expected);
			for (size_t k = 0; k < expected && k < parts->num_parts; k++)
			{
				LP_CHECK(parts->parts[k].kind == LP_UPLOAD_PART_COPY);
				LP_CHECK_EQ_U64(parts->parts[k].source_offset, parts->parts[k].dest_offset);
				LP_CHECK(parts->parts[k].length + 1 >= region / expected);
			}
			LP_CHECK_EQ_U64(parts->copied_bytes, region);
		}
		lp_concat_upload_parts_free(parts);
		close_case(&c);
	}
	close_files(&files);
}

/*
 * Many parts (the three files of types_2_3_v2 over and over): with room
 * enough, every region is copied; with fewer parts allowed than regions,
 * the smallest regions are merged into send parts; with fewer than the
 * output needs at the maximum size, LP_ERR_UNSUPPORTED says why; at S3's
 * limits the small output is one send part.
 */
LP_TEST(concat_parts_many_parts)
{
	Files		files;
	Case		c;

	if (!open_files("types_2_3_v2", &files))
		return;
	if (open_case(&files, NULL, 60, 64, &c))
	{
		LpMultipartLimits roomy = {4096, 1 << 20, 1000};
		LpMultipartLimits tight = {4096, 1 << 20, 20};
		uint64_t	fewest = (c.plan->output_size + (1 << 20) - 1) >> 20;
		LpMultipartLimits just = {4096, 1 << 20, (uint32_t) fewest};
		LpMultipartLimits impossible = {4096, 1 << 20, (uint32_t) fewest - 1};
		LpMultipartLimits s3 = LP_MULTIPART_S3_LIMITS;
		LpUploadParts *parts;
		LpError		err;

		LP_CHECK(fewest >= 2);
		parts = checked_parts(&c, &roomy, "1000 parts");
		if (parts != NULL)
		{
			LP_CHECK_EQ_U64(count_kind(parts, LP_UPLOAD_PART_COPY), 60);
			LP_CHECK_EQ_U64(parts->sent_bytes, c.plan->tail.bytes.len);
		}
		lp_concat_upload_parts_free(parts);

		parts = checked_parts(&c, &tight, "20 parts");
		if (parts != NULL)
		{
			LP_CHECK(count_kind(parts, LP_UPLOAD_PART_COPY) > 0);
			LP_CHECK(parts->sent_bytes > c.plan->tail.bytes.len);
			LP_CHECK(parts->sent_bytes < c.plan->output_size);
		}
		lp_concat_upload_parts_free(parts);

		lp_concat_upload_parts_free(checked_parts(&c, &just, "the fewest parts"));

		parts = NULL;
		LP_CHECK(!lp_concat_upload_parts(c.plan, &impossible, &parts, &err));
		LP_CHECK(parts == NULL);
		LP_CHECK_EQ_U64(err.code, LP_ERR_UNSUPPORTED);
		LP_CHECK_MSG(strstr(err.message, "needs at least") != NULL &&
					 strstr(err.message, "more than the limit") != NULL, "%.400s", err.message);

		parts = checked_parts(&c, &s3, "S3 limits");
		if (parts != NULL)
		{
			LP_CHECK(c.plan->output_size < s3.min_part_bytes);
			LP_CHECK_EQ_U64(parts->num_parts, 1);
			LP_CHECK_EQ_U64(parts->sent_bytes, c.plan->output_size);
		}
		lp_concat_upload_parts_free(parts);
		close_case(&c);
	}
	close_files(&files);
}

/*
 * Packed plans of many parts, whose regions end between 64-byte boundaries
 * (and 4 KiB region plans, whose regions end far from the next): the
 * padding is covered by copies where the part has bytes after its region.
 */
LP_TEST(concat_parts_many_parts_packed)
{
	static const char *const datasets[] = {"types_2_0_v2", "multipage_2_1", "encodings_2_3"};

	for (size_t d = 0; d < sizeof(datasets) / sizeof(datasets[0]); d++)
	{
		Files		files;

		if (!open_files(datasets[d], &files))
			continue;
		for (uint64_t alignment = 0; alignment <= 4096; alignment += 4096)
		{
			Case		c;
			LpMultipartLimits limits = {4096, 65536, 10000};

			if (!open_case(&files, NULL, 24, alignment, &c))
				continue;
			lp_concat_upload_parts_free(checked_parts(&c, &limits, datasets[d]));
			limits.max_parts = (uint32_t) ((c.plan->output_size + 65535) / 65536 + 3);
			lp_concat_upload_parts_free(checked_parts(&c, &limits, datasets[d]));
			close_case(&c);
		}
		close_files(&files);
	}
}

/*
 * A plan without a tail (the larger part first): the last part is a copy
 * part, below the minimum.
 */
LP_TEST(concat_parts_zero_length_tail)
{
	Files		files;
	Case		c;
	int			order[2];

	if (!open_files("multipage_2_3", &files))
		return;
	/* file names are random: order the two files by size, larger first */
	if (files.count == 2)
	{
		order[0] = files.files[1]->file_size > files.files[0]->file_size ? 1 : 0;
		order[1] = 1 - order[0];
	}
	if (files.count == 2 &&
		files.files[order[0]]->file_size > files.files[order[1]]->file_size &&
		open_case(&files, order, 2, 64, &c))
	{
		LpConcatPlan *plan = c.plan;
		size_t		tail_len = plan->tail.bytes.len;
		uint64_t	tail_end = plan->tail.end;
		uint64_t	last_region = plan->ranges[plan->num_ranges - 1].length;
		LpMultipartLimits limits = {last_region + 64, 4 * last_region + 256, 100};
		LpUploadParts *parts;

		LP_CHECK(plan->ranges[0].length >= limits.min_part_bytes);
		/* the serial output's first tail.start bytes are the changed plan's output */
		plan->tail.bytes.len = 0;
		plan->tail.end = plan->output_size = plan->tail.start;
		parts = checked_parts(&c, &limits, "no tail");
		if (parts != NULL)
		{
			LP_CHECK_EQ_U64(parts->num_parts, 2);
			LP_CHECK(parts->parts[parts->num_parts - 1].kind == LP_UPLOAD_PART_COPY);
			LP_CHECK(parts->parts[parts->num_parts - 1].length < limits.min_part_bytes);
			LP_CHECK_EQ_U64(parts->sent_bytes, 0);
		}
		lp_concat_upload_parts_free(parts);
		plan->tail.bytes.len = tail_len;
		plan->tail.end = plan->output_size = tail_end;
		close_case(&c);
	}
	else
		LP_CHECK_MSG(false, "multipage_2_3: expected two files of different sizes");
	close_files(&files);
}

LP_TEST(concat_parts_refuses_unusable_limits)
{
	static const LpMultipartLimits unusable[] = {
		{0, 65536, 100}, {4096, 8191, 100}, {4096, 65536, 0}, {UINT64_MAX, UINT64_MAX, 100},
	};
	Files		files;
	Case		c;

	if (!open_files("types_2_2_v2", &files))
		return;
	if (open_case(&files, NULL, 2, 64, &c))
	{
		for (size_t u = 0; u < sizeof(unusable) / sizeof(unusable[0]); u++)
		{
			LpUploadParts *parts = NULL;
			LpError		err;

			LP_CHECK(!lp_concat_upload_parts(c.plan, &unusable[u], &parts, &err));
			LP_CHECK(parts == NULL);
			LP_CHECK_EQ_U64(err.code, LP_ERR_INVALID_ARGUMENT);
		}
		close_case(&c);
	}
	close_files(&files);
}

/* The output bytes of a plan in pieces of any size, and outside the output. */
LP_TEST(concat_parts_output_bytes)
{
	Files		files;
	Case		c;

	if (!open_files("types_2_1_v2", &files))
		return;
	if (open_case(&files, NULL, 5, 0, &c))
	{
		uint8_t    *bytes = malloc(c.plan->output_size);
		uint64_t	piece = 1;
		LpError		err;
		bool		ok = true;

		for (uint64_t pos = 0; ok && pos < c.plan->output_size; pos += piece, piece = piece * 3 + 1)
		{
			uint64_t	len = c.plan->output_size - pos < piece ? c.plan->output_size - pos : piece;

			ok = lp_concat_output_bytes(c.plan, c.inputs, pos, bytes + pos, len, &err);
			LP_CHECK_MSG(ok, "%.400s", err.message);
		}
		LP_CHECK(ok && memcmp(bytes, c.serial, c.plan->output_size) == 0);
		LP_CHECK(!lp_concat_output_bytes(c.plan, c.inputs, c.plan->output_size - 1, bytes, 2, &err));
		LP_CHECK_EQ_U64(err.code, LP_ERR_INVALID_ARGUMENT);
		free(bytes);
		close_case(&c);
	}
	close_files(&files);
}

/*
 * A plan made by hand over memory inputs: input 0's second range sits at
 * another distance from its source than its first (a part whose buffers
 * were not 64-byte aligned in its file), so the two are separate copies;
 * input 1 ends with its range, so the padding after it is sent.
 */
LP_TEST(concat_parts_ranges_at_other_distances)
{
	static uint8_t source0[40000];
	static uint8_t source1[20000];
	static uint8_t tail[300];
	LpCopyRange ranges[3] = {
		{0, 0, 0, 10000},
		{0, 10100, 10048, 9000},
		{1, 0, 19072, 20000},
	};
	uint64_t	sizes[2] = {sizeof(source0), sizeof(source1)};
	LpConcatPlan plan;
	LpOutput   *output;
	LpError		err;
	Case		c;
	const char *dir = lp_test_make_temp_dir();
	char		path[1024];
	size_t		len;
	LpMultipartLimits limits = {4096, 16384, 100};
	LpUploadParts *parts;

	for (size_t i = 0; i < sizeof(source0); i++)
		source0[i] = (uint8_t) (i * 7 + i / 251);
	for (size_t i = 0; i < sizeof(source1); i++)
		source1[i] = (uint8_t) (i * 13 + 5);
	memset(tail, 0x5a, sizeof(tail));
	memset(&plan, 0, sizeof(plan));
	plan.num_inputs = 2;
	plan.input_sizes = sizes;
	plan.num_ranges = 3;
	plan.ranges = ranges;
	plan.tail.start = 39104;	/* 19072 + 20000 = 39072, aligned up */
	plan.tail.bytes.data = tail;
	plan.tail.bytes.len = sizeof(tail);
	plan.tail.end = plan.output_size = plan.tail.start + sizeof(tail);

	memset(&c, 0, sizeof(c));
	c.num_inputs = 2;
	c.inputs[0] = lp_memory_input_open("source0", source0, sizeof(source0));
	c.inputs[1] = lp_memory_input_open("source1", source1, sizeof(source1));
	c.plan = &plan;
	snprintf(path, sizeof(path), "%s/serial.bin", dir);
	output = lp_test_file_output_create(path, false, &err);
	LP_CHECK(output != NULL && lp_concat_execute(&plan, c.inputs, output, 1000, &err) &&
			 output->ops->publish(output, &err));
	LP_CHECK(lp_test_file_read_all(path, &c.serial, &len) && len == plan.output_size);
	parts = checked_parts(&c, &limits, "ranges at other distances");
	if (parts != NULL)
	{
		/*
		 * copies of [0, 10048) and [10048, 19072) from their own sources,
		 * input 1 in two copies (it exceeds the maximum), the padding after
		 * it and the tail in one send part
		 */
		LP_CHECK_EQ_U64(parts->num_parts, 5);
		LP_CHECK_EQ_U64(count_kind(parts, LP_UPLOAD_PART_COPY), 4);
		LP_CHECK_EQ_U64(parts->parts[0].length, 10048);
		LP_CHECK_EQ_U64(parts->parts[1].source_offset, 10100);
		LP_CHECK_EQ_U64(parts->parts[1].length, 9024);
		LP_CHECK_EQ_U64(parts->parts[2].input, 1);
		LP_CHECK_EQ_U64(parts->parts[3].input, 1);
		LP_CHECK_EQ_U64(parts->sent_bytes, plan.output_size - 39072);
	}
	lp_concat_upload_parts_free(parts);
	free(c.serial);
	lp_input_close(c.inputs[0]);
	lp_input_close(c.inputs[1]);
	unlink(path);
	rmdir(dir);
}

/* The checks above can fail: broken part lists are each caught. */
LP_TEST(concat_parts_checker_catches_broken_parts)
{
	Files		files;
	Case		c;

	if (!open_files("multipage_2_2", &files))
		return;
	if (open_case(&files, NULL, 2, 64, &c))
	{
		LpUploadParts *parts = checked_parts(&c, &small_limits, "unchanged");
		char		why[512];

		if (parts != NULL && parts->num_parts >= 3)
		{
			LpUploadPart *first = &parts->parts[0];
			LpUploadPart saved = *first;
			size_t		saved_count = parts->num_parts;

			LP_CHECK(first->kind == LP_UPLOAD_PART_COPY);
			first->source_offset += 64;
			LP_CHECK(!verify_parts(&c, &small_limits, parts, why, sizeof(why)));
			*first = saved;
			first->input = 1;
			LP_CHECK(!verify_parts(&c, &small_limits, parts, why, sizeof(why)));
			*first = saved;
			first->kind = LP_UPLOAD_PART_SEND;
			parts->copied_bytes -= first->length;
			parts->sent_bytes += first->length;
			LP_CHECK(verify_parts(&c, &small_limits, parts, why, sizeof(why)));
			parts->copied_bytes += first->length;
			parts->sent_bytes -= first->length;
			*first = saved;
			first->length -= 64;
			parts->parts[1].dest_offset -= 64;
			parts->parts[1].source_offset -= 64;
			parts->parts[1].length += 64;
			LP_CHECK(verify_parts(&c, &small_limits, parts, why, sizeof(why)));
			first->length = small_limits.min_part_bytes - 64;
			parts->parts[1].dest_offset = first->length;
			parts->parts[1].source_offset = first->length;
			parts->parts[1].length = saved.length + parts->parts[1].length - 64 - first->length;
			LP_CHECK(!verify_parts(&c, &small_limits, parts, why, sizeof(why)));
			LP_CHECK_MSG(strstr(why, "outside") != NULL, "%s", why);
			parts->num_parts = saved_count - 1;
			LP_CHECK(!verify_parts(&c, &small_limits, parts, why, sizeof(why)));
			parts->num_parts = saved_count;
		}
		else
			LP_CHECK_MSG(false, "expected at least 3 parts");
		lp_concat_upload_parts_free(parts);
		close_case(&c);
	}
	close_files(&files);
}

/*
 * A dataset's files written with lp_concat_write_upload_parts through a file
 * output that copies (copy_file_range) and one that does not (copy parts
 * then refused and sent): the same file as the serial executor's but for
 * the padding under copy parts, with every page buffer where the plan put
 * it.
 */
static void
check_written_by_parts(const char *dataset, uint64_t alignment)
{
	Files		files;
	Case		c;
	LpUploadParts *parts;
	char		path[512];

	if (!open_files(dataset, &files))
		return;
	if (!open_case(&files, NULL, (uint32_t) files.count, alignment, &c))
	{
		close_files(&files);
		return;
	}
	parts = checked_parts(&c, &small_limits, dataset);
	for (int use_copy_from = 0; parts != NULL && use_copy_from <= 1; use_copy_from++)
	{
		LpError		err;
		LpOutput   *output;
		uint8_t    *written = NULL;
		size_t		len = 0;
		LpInput    *input;
		LpFile	   *file;
		char		why[512];
		int			refused = lp_test_file_copies_refused;

		snprintf(path, sizeof(path), "%s/by_parts_%s_%d.lance", lp_test_make_temp_dir(), dataset,
				 use_copy_from);
		output = lp_test_file_output_create(path, use_copy_from, &err);
		LP_CHECK_MSG(output != NULL, "%.400s", err.message);
		if (output == NULL)
			break;
		/* a batch smaller than the parts: send parts go out in pieces */
		LP_CHECK_MSG(lp_concat_write_upload_parts(c.plan, parts, c.inputs, output, 1000, &err) &&
					 output->ops->publish(output, &err), "%s: %.400s", dataset, err.message);
		LP_CHECK(lp_test_file_read_all(path, &written, &len));
		LP_CHECK_EQ_U64(len, c.plan->output_size);
		for (uint64_t b = 0; written != NULL && len == c.plan->output_size && b < len; b++)
			if (written[b] != c.serial[b] && (b >= c.plan->tail.start || in_range(c.plan, b)))
			{
				LP_CHECK_MSG(false, "%s: byte %" PRIu64 " is 0x%02x, the plan's 0x%02x", dataset, b,
							 written[b], c.serial[b]);
				break;
			}
		if (use_copy_from)
			LP_CHECK_EQ_U64((uint64_t) (lp_test_file_copies_refused - refused), 0);
		input = lp_memory_input_open(path, written, len);
		file = lp_file_open(input, &err);
		LP_CHECK_MSG(file != NULL && same_buffer_offsets(c.plan, file, why, sizeof(why)),
					 "%s: %.400s", dataset, file == NULL ? err.message : why);
		lp_file_free(file);
		lp_input_close(input);
		free(written);
		unlink(path);
	}
	lp_concat_upload_parts_free(parts);
	close_case(&c);
	close_files(&files);
}

LP_TEST(concat_parts_written_by_parts)
{
	check_written_by_parts("multipage_2_1", 64);
	check_written_by_parts("types_2_3_v2", 64);
	check_written_by_parts("multipage_2_3", 0);
}
