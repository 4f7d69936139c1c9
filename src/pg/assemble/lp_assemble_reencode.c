/*
 * lp_assemble_reencode.c - parts of an assembly decoded and written again.
 *
 * With a re-encode directory, a part that cannot be joined by page copy
 * (a verdict lp_concat_reason_reencodable accepts) or that has deletions is
 * decoded and written again as a file of the target's version and schema
 * in that directory (reencode/lp_reencode.h), and the assembly joins that
 * file instead; the re-encoded files are removed when the assembly ends,
 * also after an ERROR (a memory-context callback).
 */
#include "postgres.h"

#include "assemble/lp_assemble_reencode.h"
#include "assemble/lp_progress.h"
#include "base/lp_pg_error.h"
#include "reencode/lp_reencode.h"
#include "store/lp_pg_storage.h"

/* Progress of re-encoding: source bytes, pro rata of the rows written. */
typedef struct ReencodeProgress
{
	int64		bytes_before;	/* bytes of the parts re-encoded before this one */
	uint64		file_size;		/* bytes of the part being re-encoded */
	int			parts_done;
} ReencodeProgress;

struct LpAssembleReencoder
{
	MemoryContextCallback callback; /* removes the files when the context goes */
	LpStore    *store;			/* of the re-encode directory; NULL: none */
	const char *dir;			/* the re-encode directory */
	const char *owned_dir;		/* removed too (when empty), or NULL */
	List	   *paths;			/* the re-encoded files */
	bool	   *reencoded;		/* per part of the inputs */
	int		   *positions_of;	/* per part of the inputs: its 1-based position among the parts given */
	List	   *positions;		/* 1-based, in the order they were re-encoded */
	int			num_parts;		/* of the inputs: parts re-encoded together become one */
	ReencodeProgress progress;
};

/*
 * Remove the re-encoded files (and the owned directory); problems are
 * WARNINGs (this also runs during abort).
 */
static void
remove_reencoded_files(void *arg)
{
	LpAssembleReencoder *reencoder = arg;
	ListCell   *cell;

	foreach(cell, reencoder->paths)
	{
		LpError		err;

		if (!reencoder->store->ops->remove(reencoder->store, lfirst(cell), &err) &&
			err.code != LP_ERR_NOT_FOUND)
			ereport(WARNING,
					errmsg("could not remove re-encoded part \"%s\": %s",
						   (char *) lfirst(cell), err.message));
	}
	reencoder->paths = NIL;
	if (reencoder->owned_dir != NULL)
	{
		LpError		err;

		if (!reencoder->store->ops->remove(reencoder->store, reencoder->owned_dir, &err) &&
			err.code != LP_ERR_NOT_FOUND)
			ereport(WARNING,
					errmsg("could not remove directory \"%s\": %s", reencoder->owned_dir,
						   err.message));
		reencoder->owned_dir = NULL;
	}
}

LpAssembleReencoder *
lp_assemble_reencoder_start(const LpAssembleTarget *target, int num_parts)
{
	LpAssembleReencoder *reencoder = palloc0(sizeof(LpAssembleReencoder));

	reencoder->reencoded = palloc0(sizeof(bool) * num_parts);
	reencoder->positions_of = palloc(sizeof(int) * num_parts);
	for (int i = 0; i < num_parts; i++)
		reencoder->positions_of[i] = i + 1;
	reencoder->num_parts = num_parts;
	if (target->reencode_dir != NULL)
	{
		reencoder->store = lp_store_for_uri_below(target->root, target->reencode_dir, NULL);
		reencoder->dir = target->reencode_dir;
		reencoder->owned_dir = target->reencode_dir_owned ? target->reencode_dir : NULL;
		reencoder->callback.func = remove_reencoded_files;
		reencoder->callback.arg = reencoder;
		MemoryContextRegisterResetCallback(CurrentMemoryContext, &reencoder->callback);
	}
	return reencoder;
}

bool
lp_assemble_can_reencode(const LpAssembleReencoder *reencoder)
{
	return reencoder->store != NULL;
}

static void
report_reencode_progress(void *arg, uint64_t rows_done, uint64_t rows_total)
{
	ReencodeProgress *progress = arg;
	double		fraction = rows_total > 0 ? (double) rows_done / rows_total : 1.0;

	lp_progress_update(progress->parts_done,
					   progress->bytes_before + (int64) (fraction * progress->file_size));
}

/*
 * Parts first + 1 .. first + count - 1 of inputs and of the re-encoder taken
 * out: their rows are in part first's file now.
 */
static void
absorb_parts(LpAssembleReencoder *reencoder, LpAssembleInputs *inputs, int first, int count)
{
	int			tail = inputs->num_parts - (first + count);

	/* paths has the donor's after the parts' */
	memmove(&inputs->paths[first + 1], &inputs->paths[first + count], sizeof(char *) * (tail + 1));
	memmove(&inputs->parts[first + 1], &inputs->parts[first + count], sizeof(LpConcatPart) * tail);
	memmove(&reencoder->reencoded[first + 1], &reencoder->reencoded[first + count],
			sizeof(bool) * tail);
	memmove(&reencoder->positions_of[first + 1], &reencoder->positions_of[first + count],
			sizeof(int) * tail);
	inputs->num_parts -= count - 1;
	reencoder->num_parts -= count - 1;
}

static void
close_sources(LpReencodeSource *sources, int count)
{
	for (int k = 0; k < count; k++)
		lp_input_close(sources[k].input);
}

void
lp_assemble_reencode_parts(LpAssembleReencoder *reencoder, LpAssembleInputs *inputs, int first,
						   int count, const LpDeletions *const *deletions)
{
	ReencodeProgress *progress = &reencoder->progress;
	LpReencodeSource *sources = palloc0(sizeof(LpReencodeSource) * count);
	int			position = reencoder->positions_of[first];
	char	   *path;
	LpStore    *store = reencoder->store;
	LpReencodeOptions options = {0, report_reencode_progress, progress, false, 0};
	LpOutput   *output;
	LpError		err;
	LpStat		st;
	uint64		rows;
	uint64		size;
	bool		ok;

	lp_progress_phase(LP_PHASE_REENCODING, progress->parts_done, progress->bytes_before, 0, 0);
	/* a name nothing in the directory has (a part, or what a crash left) */
	path = psprintf("%s/reencoded-%d.lance", reencoder->dir, position);
	for (int attempt = 1;
		 store->ops->stat(store, path, false, &st, &err) && st.kind != LP_OBJECT_ABSENT;
		 attempt++)
		path = psprintf("%s/reencoded-%d-%d.lance", reencoder->dir, position, attempt);
	progress->file_size = 0;
	for (int k = 0; k < count; k++)
	{
		char	   *source_key;
		LpStore    *source_store = lp_store_for_uri_below(inputs->root, inputs->paths[first + k],
														  &source_key);

		sources[k].file = inputs->parts[first + k].file;
		sources[k].deletions = deletions != NULL ? deletions[k] : NULL;
		sources[k].input = source_store->ops->open_input(source_store, source_key, &err);
		if (sources[k].input == NULL)
		{
			close_sources(sources, k);
			lp_raise(&err);
		}
		progress->file_size += sources[k].file->file_size;
	}
	output = store->ops->create_output(store, path, &err);
	if (output == NULL)
	{
		close_sources(sources, count);
		lp_raise(&err);
	}
	ok = lp_reencode_files(sources, (uint32_t) count, inputs->target.schema,
						   inputs->target.version, output, &options, &rows, &size, &err);
	close_sources(sources, count);
	if (!ok)
	{
		LpError		named;

		output->ops->abort(output);
		if (count == 1)
			lp_fail(&named, err.code, "part %d (\"%s\") cannot be re-encoded: %s", position,
					inputs->paths[first], err.message);
		else
			lp_fail(&named, err.code, "parts %d to %d cannot be re-encoded: %s", position,
					reencoder->positions_of[first + count - 1], err.message);
		if (err.detail[0] != '\0')
			lp_error_detail(&named, "%s", err.detail);
		lp_raise(&named);
	}
	/* registered before it can exist, so that an ERROR from here on removes it */
	reencoder->paths = lappend(reencoder->paths, path);
	if (!output->ops->publish(output, &err))
		lp_raise(&err);
	progress->bytes_before += (int64) progress->file_size;
	progress->parts_done += count;
	ereport(DEBUG1,
			errmsg_internal("re-encoded %d part(s) from part %d (\"%s\") as \"%s\": " UINT64_FORMAT " rows, " UINT64_FORMAT " bytes",
							count, position, inputs->paths[first], path, rows, size));
	for (int k = 0; k < count; k++)
		reencoder->positions = lappend_int(reencoder->positions,
										   reencoder->positions_of[first + k]);
	inputs->paths[first] = path;
	inputs->parts[first].file = lp_read_lance_file_below(inputs->root, path);
	inputs->parts[first].has_expected_rows = false;
	reencoder->reencoded[first] = true;
	absorb_parts(reencoder, inputs, first, count);
}

int
lp_assemble_part_to_reencode(const LpAssembleReencoder *reencoder,
							 const LpConcatVerdict *verdict)
{
	/* the part named was re-encoded already: its encoding differs from part 0's, another writer's */
	if (!reencoder->reencoded[verdict->input])
		return (int) verdict->input;
	for (int i = 0; i < reencoder->num_parts; i++)
		if (!reencoder->reencoded[i])
			return i;
	return -1;
}

int
lp_assemble_reencoder_position(const LpAssembleReencoder *reencoder, int index)
{
	return reencoder->positions_of[index];
}

bool
lp_assemble_reencoded(const LpAssembleReencoder *reencoder, int index)
{
	return reencoder->reencoded[index];
}

List *
lp_assemble_reencoded_positions(const LpAssembleReencoder *reencoder)
{
	return list_copy(reencoder->positions);
}

void
lp_assemble_reencoder_end(LpAssembleReencoder *reencoder)
{
	if (reencoder->store != NULL)
		remove_reencoded_files(reencoder);
}
