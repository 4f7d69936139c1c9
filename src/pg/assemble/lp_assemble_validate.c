/*
 * lp_assemble_validate.c - every part of an assembly opened and checked
 * before the output is created, and the verdict on a single file that
 * register_part and commit give.
 */
#include "postgres.h"

#include "assemble/lp_assemble_validate.h"
#include "assemble/lp_progress.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"

void
lp_assemble_validate(List *parts, const LpAssembleTarget *target, LpAssembleInputs *inputs)
{
	ListCell   *cell;
	int			i = 0;

	memset(inputs, 0, sizeof(*inputs));
	inputs->num_parts = list_length(parts);
	inputs->root = target->root;
	inputs->parts = palloc0(sizeof(LpConcatPart) * inputs->num_parts);
	/* one more for a donor */
	inputs->paths = palloc(sizeof(char *) * (inputs->num_parts + 1));
	inputs->paths[inputs->num_parts] = target->donor_path;
	foreach(cell, parts)
	{
		LpAssemblePart *part = lfirst(cell);

		inputs->paths[i] = part->path;
		inputs->parts[i].file = lp_read_lance_file_below(target->root, part->path);
		inputs->parts[i].has_expected_rows = part->has_expected_rows;
		inputs->parts[i].expected_rows = (uint64_t) part->expected_rows;
		i++;
		lp_progress_update(i, 0);
	}

	if (target->schema != NULL)
	{
		inputs->target.version = target->version;
		inputs->target.schema = target->schema;
	}
	else
	{
		inputs->target.version = inputs->parts[0].file->version;
		inputs->target.schema = &inputs->parts[0].file->schema;
	}
	inputs->target.blob_ids_leased = target->blob_ids_leased;
	inputs->target.replaced = target->replaced_columns;
	if (target->donor_path != NULL)
		inputs->target.donor = lp_read_lance_file_below(target->root, target->donor_path);
}

char *
lp_file_incompatibility(LpFileVersion version, const LpSchema *schema,
						bool blob_ids_leased, const LpFile *file,
						bool has_expected_rows, uint64_t expected_rows, int *reason)
{
	LpConcatTarget target = {version, schema, blob_ids_leased, NULL, NULL};
	LpConcatPart part = {file, has_expected_rows, expected_rows};
	LpConcatVerdict verdict;
	LpError		err;
	char		message[1024];

	if (!lp_concat_check(&target, &part, 1, &verdict, &err))
		lp_raise(&err);
	*reason = verdict.reason;
	if (verdict.reason == LP_CONCAT_COMPATIBLE)
		return NULL;
	lp_concat_verdict_message(&verdict, &part, message, sizeof(message));
	return psprintf("%s (%s).", message, lp_concat_reason_name(verdict.reason));
}
