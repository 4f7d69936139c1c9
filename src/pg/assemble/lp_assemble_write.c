/*
 * lp_assemble_write.c - the output of an assembly written by its plan.
 *
 * The output is written under a temporary name in the destination
 * directory, fsynced and linked into place; on error or cancel the
 * temporary file is removed (explicitly, or by the output's memory-context
 * callback when an ERROR unwinds past it).  The data region is copied by
 * lp_copy (parallel workers); the leader writes the tail last.  An output
 * written by part number (object storage) is laid out as numbered parts
 * instead, the parts' data regions copied in the store.
 *
 * When the destination filesystem shares extents (XFS with reflink, btrfs)
 * and every part lives on it, each part's data region is placed at a block
 * boundary so that the kernel clones it instead of copying: assembly then
 * costs metadata writes only.  The first clone is tried before the copy; if
 * the filesystem refuses it, the packed layout is planned instead.
 */
#include "postgres.h"

#include "assemble/lp_assemble_write.h"
#include "assemble/lp_copy.h"
#include "assemble/lp_progress.h"
#include "concat/lp_concat_parts.h"
#include "format/lp_file_tail.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"

uint64
lp_assemble_clone_alignment(LpStore *store, const LpAssembleInputs *inputs,
							const char *output_path)
{
	uint64		block;

	if (store->ops->clone_alignment == NULL)
		return 0;
	for (int i = 0; i < inputs->num_parts; i++)
		if (lp_store_for_uri_below(inputs->root, inputs->paths[i], NULL) != store)
			return 0;
	block = store->ops->clone_alignment(store, output_path, inputs->paths, inputs->num_parts);
	return block < LP_PAGE_BUFFER_ALIGNMENT ? 0 : block;
}

/*
 * Clone the first block of the plan's first whole region into place: true
 * if the filesystem can clone between these files, so the region plan pays.
 */
static bool
first_region_clones(const LpConcatPlan *plan, LpInput *const *inputs, LpOutput *output)
{
	for (size_t r = 0; r < plan->num_ranges; r++)
	{
		const LpCopyRange *range = &plan->ranges[r];

		if (range->source_offset == 0 && range->dest_offset % plan->region_alignment == 0 &&
			range->length >= plan->region_alignment)
			return output->ops->clone_range != NULL &&
				output->ops->clone_range(output, range->dest_offset, inputs[range->input],
										 0, plan->region_alignment);
	}
	return false;
}

/*
 * Write the whole output as the upload parts of a multipart output (object
 * storage): the parts' data regions copied on the server where they are in
 * the output's store, only the rest (the tail, short parts, padding no part
 * covers) sent.  False, with nothing written, when no layout fits the
 * output's part limits; the caller then copies as for any output.
 */
static bool
write_upload_parts(const LpConcatPlan *plan, const char *const *paths, LpInput *const *inputs,
				   LpOutput *output)
{
	LpUploadParts *parts;
	LpError		err;
	uint64		sent = 0;

	if (!lp_concat_upload_parts(plan, output->multipart, &parts, &err))
	{
		if (err.code != LP_ERR_UNSUPPORTED)
			lp_raise(&err);
		ereport(DEBUG1,
				errmsg_internal("no upload layout for \"%s\": %s", output->name, err.message));
		return false;
	}
	if (!lp_copy_numbered_parts(plan, parts, paths, inputs, output))
	{
		lp_progress_phase(LP_PHASE_COPYING, 0, 0, (int64) plan->output_size, 0);
		if (!lp_concat_write_upload_parts(plan, parts, inputs, output,
										  (size_t) lp_read_batch_bytes, &err))
			lp_raise(&err);
	}
	for (size_t p = 0; p < parts->num_parts; p++)
		if (parts->parts[p].kind == LP_UPLOAD_PART_SEND)
			sent += parts->parts[p].length;
	ereport(DEBUG1,
			errmsg_internal("wrote \"%s\" as %zu upload parts: " UINT64_FORMAT " bytes laid out as server-side copies, " UINT64_FORMAT " bytes sent",
							output->name, parts->num_parts, plan->output_size - sent, sent));
	lp_concat_upload_parts_free(parts);
	lp_progress_phase(LP_PHASE_FINALIZING, (int) plan->num_inputs, (int64) plan->output_size,
					  (int64) plan->output_size, 0);
	return true;
}

LpConcatPlan *
lp_assemble_plan(const LpAssembleInputs *inputs, uint64 alignment, LpConcatVerdict *verdict)
{
	LpConcatPlan *plan;
	LpError		err;
	bool		ok;

	if (alignment > 0)
		ok = lp_concat_plan_regions(&inputs->target, inputs->parts, inputs->num_parts, alignment,
									verdict, &plan, &err);
	else
		ok = lp_concat_plan(&inputs->target, inputs->parts, inputs->num_parts, verdict, &plan,
							&err);
	if (!ok)
		lp_raise(&err);
	return plan;
}

uint64
lp_assemble_write(LpStore *store, const char *output_path, const LpAssembleInputs *inputs,
				  LpConcatPlan *plan, instr_time started)
{
	LpInput   **inputs_open;
	LpOutput   *output;
	LpConcatVerdict verdict;
	LpError		err;
	instr_time	elapsed;
	uint64		size;

	inputs_open = palloc(sizeof(LpInput *) * plan->num_inputs);
	for (int i = 0; i < (int) plan->num_inputs; i++)
	{
		char	   *key;
		LpStore    *part_store = lp_store_for_uri_below(inputs->root, inputs->paths[i], &key);

		inputs_open[i] = part_store->ops->open_input_lazily(part_store, key,
															plan->input_sizes[i], &err);
		if (inputs_open[i] == NULL)
			lp_raise(&err);
	}

	output = store->ops->create_output(store, output_path, &err);
	if (output == NULL)
		lp_raise(&err);
	if (plan->region_alignment > 0 && !first_region_clones(plan, inputs_open, output))
	{
		lp_concat_plan_free(plan);
		plan = lp_assemble_plan(inputs, 0, &verdict);
	}
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, started);
	ereport(DEBUG1,
			errmsg_internal("validated and planned %d parts of \"%s\" in %.3f ms",
							inputs->num_parts, output_path, INSTR_TIME_GET_MILLISEC(elapsed)));

	if (output->multipart == NULL ||
		!write_upload_parts(plan, inputs->paths, inputs_open, output))
	{
		lp_copy_data_region(plan, inputs->root, inputs->paths, inputs_open, output);
		lp_progress_phase(LP_PHASE_FINALIZING, inputs->num_parts, (int64) plan->tail.start,
						  (int64) plan->output_size, 0);
		if (!lp_concat_write_tail(plan, output, &err))
		{
			output->ops->abort(output);
			lp_raise(&err);
		}
	}
	if (!output->ops->publish(output, &err))
		lp_raise(&err);
	for (int i = 0; i < (int) plan->num_inputs; i++)
		lp_input_close(inputs_open[i]);
	size = plan->output_size;
	lp_concat_plan_free(plan);
	return size;
}
