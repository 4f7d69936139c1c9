/*
 * lp_assemble_write.c - the output of an assembly written by its plan.
 *
 * The output is written under a temporary name in the destination
 * directory, fsynced and linked into place; on error or cancel the
 * temporary file is removed (explicitly, or by the output's memory-context
 * callback when an ERROR unwinds past it).  The output is laid out as
 * numbered parts (lp_concat_output_parts: spans of the data region and the
 * tail, or parts under the store's multipart limits whose data regions the
 * store copies itself) and written part by part by lp_copy's parallel
 * workers and the leader, which publishes.
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
 * Write the whole output as its numbered parts (in parallel), or front to
 * back where the parts cannot be written by number; serially when no
 * layout of parts fits the output's limits.
 */
static void
write_output(const LpConcatPlan *plan, const LpAssembleInputs *inputs, LpInput *const *inputs_open,
			 LpOutput *output)
{
	LpUploadParts *parts;
	LpError		err;

	if (!lp_concat_output_parts(plan, output, lp_concat_span_bytes(plan, (size_t) lp_read_batch_bytes),
								&parts, &err))
	{
		if (err.code != LP_ERR_UNSUPPORTED)
			lp_raise(&err);
		ereport(DEBUG1,
				errmsg_internal("no layout of parts for \"%s\": %s", output->name, err.message));
		lp_progress_phase(LP_PHASE_COPYING, 0, 0, (int64) plan->output_size, 0);
		if (!lp_concat_execute(plan, inputs_open, output, (size_t) lp_read_batch_bytes, &err))
			lp_raise(&err);
		return;
	}
	if (!lp_copy_output_parts(plan, parts, inputs->root, inputs->paths, inputs_open, output))
	{
		lp_progress_phase(LP_PHASE_COPYING, 0, 0, (int64) plan->output_size, 0);
		if (!lp_concat_write_upload_parts(plan, parts, inputs_open, output,
										  (size_t) lp_read_batch_bytes, &err))
			lp_raise(&err);
	}
	ereport(DEBUG1,
			errmsg_internal("wrote \"%s\" as %zu parts: " UINT64_FORMAT " bytes laid out as copies in the store, " UINT64_FORMAT " bytes written",
							output->name, parts->num_parts, parts->copied_bytes, parts->sent_bytes));
	lp_concat_upload_parts_free(parts);
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

	write_output(plan, inputs, inputs_open, output);
	lp_progress_phase(LP_PHASE_FINALIZING, inputs->num_parts, (int64) plan->output_size,
					  (int64) plan->output_size, 0);
	if (!output->ops->publish(output, &err))
		lp_raise(&err);
	for (int i = 0; i < (int) plan->num_inputs; i++)
		lp_input_close(inputs_open[i]);
	size = plan->output_size;
	lp_concat_plan_free(plan);
	return size;
}
