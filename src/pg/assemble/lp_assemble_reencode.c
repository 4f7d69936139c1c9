/*
 * lp_assemble_reencode.c - parts of an assembly decoded and written again.
 *
 * With a re-encode directory, a part that cannot be joined by page copy
 * (a verdict lp_concat_reason_reencodable accepts) or that has deletions is
 * decoded and written again as a file of the target's version and schema
 * in that directory (reencode/lp_reencode.h), and the assembly joins that
 * file instead; the re-encoded files are removed when the assembly ends,
 * also after an ERROR (a memory-context callback).
 *
 * Runs of adjacent parts are re-encoded together, one file each; where the
 * store shares outputs with other processes, runs of at least twice
 * REENCODE_PIECE_BYTES are split into pieces of about that much source at
 * part boundaries, up to one per re-encoder, and PostgreSQL parallel
 * workers (lance_parts.max_copy_workers) re-encode pieces beside the
 * leader.  The split depends on the setting, not on how many workers
 * start, so the files are the same either way.  As in the parallel copy
 * (lp_copy.c), the leader creates every output and publishes it after the
 * workers are done; a worker opens its sources below the same root as the
 * leader and writes through the output's share token, so an ERROR
 * anywhere (a worker's is raised again in the leader) leaves only
 * temporary files.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/shm_toc.h"

#include "assemble/lp_assemble_reencode.h"
#include "assemble/lp_copy.h"
#include "assemble/lp_progress.h"
#include "base/lp_parallel.h"
#include "base/lp_pg_alloc.h"
#include "base/lp_pg_error.h"
#include "base/lp_wire.h"
#include "reencode/lp_reencode.h"
#include "store/lp_pg_storage.h"

/*
 * How far the re-encoding is, shared by the leader and its workers: bytes
 * and parts of the finished runs, on top of what earlier calls did.
 */
typedef struct RunsShared
{
	int64		bytes_before;	/* bytes of the parts re-encoded by earlier calls */
	int			parts_before;
	int			num_runs;
	Size		runs_bytes;		/* of the runs' values for the workers */
	pg_atomic_uint32 next_run;	/* the next run to claim */
	pg_atomic_uint64 bytes_done;	/* source bytes of the runs finished */
	pg_atomic_uint32 parts_done;
	uint64		rows[FLEXIBLE_ARRAY_MEMBER];	/* per run: rows written, then bytes */
} RunsShared;

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
	int64		bytes_done;		/* source bytes of the parts re-encoded so far */
	int			parts_done;
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

#define REENCODE_KEY_SHARED	UINT64CONST(0x4C50000000000031)
#define REENCODE_KEY_RUNS	UINT64CONST(0x4C50000000000032)	/* lp_wire values, put_runs */

/*
 * Source bytes per piece of a run re-encoded in parallel: a piece ends a
 * page of every column of the file, so pieces much smaller than a page
 * would cost readers more pages than the workers save.
 */
#define REENCODE_PIECE_BYTES (2 * 1024 * 1024)

PGDLLEXPORT void lp_reencode_worker_main(dsm_segment *seg, shm_toc *toc);

/* A run of parts to re-encode into one file, as the leader and the workers see it. */
typedef struct ReencodeRun
{
	int			count;
	const char **paths;		/* of its parts */
	const LpFile **files;		/* of its parts, as the leader parsed them; NULL in a worker */
	LpDeletions **deletions;	/* per part, NULL: every row */
	int			first_position; /* 1-based, among the parts given */
	int			last_position;
	uint64		source_bytes;
	char	   *output_path;
	char	   *token;			/* the output's share token, for workers */
	uint32		token_len;
} ReencodeRun;

/* What a re-encoder, the leader or a worker, works with. */
typedef struct RunsWork
{
	RunsShared *shared;
	const char *dir;			/* the re-encode directory, for messages */
	const char *root;
	LpSchema	schema;
	LpFileVersion version;
	int			num_runs;
	ReencodeRun *runs;
	bool		leader;
	uint64		run_bytes;		/* source bytes of the run in hand */
} RunsWork;

/* The leader's progress: the runs finished anywhere, and its own run pro rata of its rows. */
static void
report_reencode_progress(void *arg, uint64_t rows_done, uint64_t rows_total)
{
	RunsWork   *work = arg;
	double		fraction = rows_total > 0 ? (double) rows_done / rows_total : 1.0;

	lp_progress_update(work->shared->parts_before + pg_atomic_read_u32(&work->shared->parts_done),
					   work->shared->bytes_before +
					   (int64) pg_atomic_read_u64(&work->shared->bytes_done) +
					   (int64) (fraction * work->run_bytes));
}

/* Re-encode run r into output; ERROR naming its parts when it cannot be. */
static void
reencode_run(RunsWork *work, int r, LpOutput *output)
{
	const ReencodeRun *run = &work->runs[r];
	LpReencodeSource *sources = palloc0(sizeof(LpReencodeSource) * run->count);
	LpReencodeOptions options = {0, work->leader ? report_reencode_progress : NULL, work, false, 0};
	LpError		err;
	uint64		rows;
	uint64		size;
	bool		ok;

	for (int k = 0; k < run->count; k++)
	{
		char	   *key;
		LpStore    *store = lp_store_for_uri_below(work->root, run->paths[k], &key);

		sources[k].file = run->files != NULL ? run->files[k] :
			lp_read_lance_file_below(work->root, run->paths[k]);
		sources[k].deletions = run->deletions[k];
		sources[k].input = store->ops->open_input(store, key, &err);
		if (sources[k].input == NULL)
		{
			close_sources(sources, k);
			lp_raise(&err);
		}
	}
	work->run_bytes = run->source_bytes;
	ok = lp_reencode_files(sources, (uint32) run->count, &work->schema, work->version, output,
						   &options, &rows, &size, &err);
	close_sources(sources, run->count);
	if (!ok)
	{
		LpError		named;

		if (run->count == 1)
			lp_fail(&named, err.code, "part %d (\"%s\") cannot be re-encoded: %s",
					run->first_position, run->paths[0], err.message);
		else
			lp_fail(&named, err.code, "parts %d to %d cannot be re-encoded: %s",
					run->first_position, run->last_position, err.message);
		if (err.detail[0] != '\0')
			lp_error_detail(&named, "%s", err.detail);
		lp_raise(&named);
	}
	work->shared->rows[2 * r] = rows;
	work->shared->rows[2 * r + 1] = size;
	pg_atomic_fetch_add_u64(&work->shared->bytes_done, run->source_bytes);
	pg_atomic_fetch_add_u32(&work->shared->parts_done, (uint32) run->count);
}

/* Runs re-encode until none is left to claim. */
static void
reencode_claimed_runs(RunsWork *work, LpOutput **outputs)
{
	for (;;)
	{
		uint32		r = pg_atomic_fetch_add_u32(&work->shared->next_run, 1);

		if (r >= (uint32) work->num_runs)
			return;
		CHECK_FOR_INTERRUPTS();
		if (outputs != NULL)
			reencode_run(work, (int) r, outputs[r]);
		else
		{
			const ReencodeRun *run = &work->runs[r];
			LpStore    *store = lp_store_for_uri_below(work->root, run->output_path, NULL);
			LpError		err;
			LpOutput   *output = store->ops->open_shared_output(store, run->token, run->token_len,
																&err);

			if (output == NULL)
				lp_raise(&err);
			reencode_run(work, (int) r, output);
			/* a shared output's abort only closes it: the leader publishes */
			output->ops->abort(output);
		}
	}
}

static void
put_runs(StringInfo buf, const RunsWork *work)
{
	lp_wire_put_string(buf, work->root);
	lp_wire_put_u64(buf, (uint64) work->version);
	lp_wire_put_schema(buf, &work->schema);
	for (int r = 0; r < work->num_runs; r++)
	{
		const ReencodeRun *run = &work->runs[r];

		lp_wire_put_u64(buf, (uint64) run->count);
		lp_wire_put_u64(buf, (uint64) run->first_position);
		lp_wire_put_u64(buf, (uint64) run->last_position);
		lp_wire_put_u64(buf, run->source_bytes);
		lp_wire_put_string(buf, run->output_path);
		lp_wire_put_bytes(buf, run->token, run->token_len);
		for (int k = 0; k < run->count; k++)
		{
			const LpDeletions *deletions = run->deletions[k];

			lp_wire_put_string(buf, run->paths[k]);
			lp_wire_put_u64(buf, deletions != NULL);
			if (deletions == NULL)
				continue;
			lp_wire_put_u64(buf, deletions->num_rows);
			lp_wire_put_u64(buf, deletions->num_deleted);
			lp_wire_put_bytes(buf, deletions->deleted, (uint32) ((deletions->num_rows + 7) / 8));
		}
	}
}

static void
take_runs(LpWireReader *reader, RunsWork *work)
{
	work->root = lp_wire_take_string(reader);
	work->version = (LpFileVersion) lp_wire_take_u64(reader);
	lp_wire_take_schema(reader, &work->schema);
	work->runs = palloc0(sizeof(ReencodeRun) * work->num_runs);
	for (int r = 0; r < work->num_runs; r++)
	{
		ReencodeRun *run = &work->runs[r];

		run->count = (int) lp_wire_take_u64(reader);
		run->first_position = (int) lp_wire_take_u64(reader);
		run->last_position = (int) lp_wire_take_u64(reader);
		run->source_bytes = lp_wire_take_u64(reader);
		run->output_path = lp_wire_take_string(reader);
		run->token = (char *) lp_wire_take_bytes(reader, &run->token_len);
		run->paths = palloc(sizeof(const char *) * run->count);
		run->deletions = palloc0(sizeof(LpDeletions *) * run->count);
		for (int k = 0; k < run->count; k++)
		{
			LpDeletions *deletions;
			uint32		len;

			run->paths[k] = lp_wire_take_string(reader);
			if (lp_wire_take_u64(reader) == 0)
				continue;
			deletions = palloc(sizeof(LpDeletions));
			deletions->num_rows = lp_wire_take_u64(reader);
			deletions->num_deleted = lp_wire_take_u64(reader);
			deletions->deleted = (uint8_t *) lp_wire_take_bytes(reader, &len);
			if (len != (deletions->num_rows + 7) / 8)
				elog(ERROR, "deletion bitmap of %u bytes for %llu rows in a lance_parts re-encode worker",
					 len, (unsigned long long) deletions->num_rows);
			run->deletions[k] = deletions;
		}
	}
}

/* What start_reencode_workers puts in the workers' segment. */
typedef struct RunsSegment
{
	const RunsShared *shared;
	Size		shared_bytes;
	StringInfoData runs;
	RunsShared *placed;			/* set by fill_runs_segment */
} RunsSegment;

static void
fill_runs_segment(ParallelContext *pcxt, void *arg)
{
	RunsSegment *segment = arg;

	segment->placed = shm_toc_allocate(pcxt->toc, segment->shared_bytes);
	memcpy(segment->placed, segment->shared, segment->shared_bytes);
	/* atomics are initialized where they are used, not copied */
	pg_atomic_init_u32(&segment->placed->next_run, 0);
	pg_atomic_init_u64(&segment->placed->bytes_done, 0);
	pg_atomic_init_u32(&segment->placed->parts_done, 0);
	shm_toc_insert(pcxt->toc, REENCODE_KEY_SHARED, segment->placed);
	lp_parallel_insert_copy(pcxt, REENCODE_KEY_RUNS, segment->runs.data, segment->runs.len);
}

void
lp_reencode_worker_main(dsm_segment *seg, shm_toc *toc)
{
	RunsWork	work;
	char	   *runs = shm_toc_lookup(toc, REENCODE_KEY_RUNS, false);
	LpWireReader reader;

	memset(&work, 0, sizeof(work));
	work.shared = shm_toc_lookup(toc, REENCODE_KEY_SHARED, false);
	work.num_runs = work.shared->num_runs;
	reader.data = runs;
	reader.len = work.shared->runs_bytes;
	reader.pos = 0;
	/* for the rest of the worker, which only writes */
	lp_pg_map_large_begin();
	lp_parallel_worker_show_query(toc);
	take_runs(&reader, &work);
	reencode_claimed_runs(&work, NULL);
}

/*
 * Runs as pieces: where the store shares outputs, a run of at least two
 * pieces' bytes is cut at part boundaries into up to one piece per
 * re-encoder, of about equal source bytes.
 */
static List *
split_runs(const LpAssembleInputs *inputs, const LpAssembleRun *given, int num_given,
		   bool can_share)
{
	List	   *pieces = NIL;

	for (int g = 0; g < num_given; g++)
	{
		int			first = given[g].first;
		int			count = given[g].count;
		uint64		bytes = 0;
		uint64		sum = 0;
		int			n = 1;
		int			made = 0;
		int			start = first;

		for (int k = first; k < first + count; k++)
			bytes += inputs->parts[k].file->file_size;
		if (can_share)
			n = (int) Min((uint64) Min(count, lp_max_copy_workers + 1), bytes / REENCODE_PIECE_BYTES);
		for (int k = first; k < first + count - 1 && made < n - 1; k++)
		{
			sum += inputs->parts[k].file->file_size;
			if (sum * n >= (uint64) (made + 1) * bytes)
			{
				LpAssembleRun *piece = palloc(sizeof(LpAssembleRun));

				piece->first = start;
				piece->count = k + 1 - start;
				pieces = lappend(pieces, piece);
				start = k + 1;
				made++;
			}
		}
		{
			LpAssembleRun *piece = palloc(sizeof(LpAssembleRun));

			piece->first = start;
			piece->count = first + count - start;
			pieces = lappend(pieces, piece);
		}
	}
	return pieces;
}

/* A name in the re-encode directory nothing has (a part, or what a crash left). */
static char *
unused_path(const LpAssembleReencoder *reencoder, int position)
{
	char	   *path = psprintf("%s/reencoded-%d.lance", reencoder->dir, position);
	LpStat		st;
	LpError		err;

	for (int attempt = 1;
		 reencoder->store->ops->stat(reencoder->store, path, false, &st, &err) &&
		 st.kind != LP_OBJECT_ABSENT;
		 attempt++)
		path = psprintf("%s/reencoded-%d-%d.lance", reencoder->dir, position, attempt);
	return path;
}

/*
 * Workers for the runs beyond the leader's first, or NULL, with a NOTICE,
 * when none could be started: the leader re-encodes them all.
 */
static ParallelContext *
start_reencode_workers(RunsWork *work, Size shared_bytes)
{
	RunsSegment segment = {work->shared, shared_bytes};
	ParallelContext *pcxt;

	initStringInfo(&segment.runs);
	put_runs(&segment.runs, work);
	work->shared->runs_bytes = segment.runs.len;
	{
		const Size	chunk_sizes[] = {shared_bytes, segment.runs.len};

		pcxt = lp_parallel_start("lp_reencode_worker_main",
								 Min(lp_max_copy_workers, work->num_runs - 1), chunk_sizes,
								 lengthof(chunk_sizes), fill_runs_segment, &segment);
	}
	if (pcxt == NULL)
	{
		ereport(NOTICE,
				errmsg("no parallel workers could be started to re-encode parts into \"%s\", re-encoding serially",
					   work->dir),
				errhint("Raise max_worker_processes or max_parallel_workers, or set lance_parts.max_copy_workers to 0."));
		return NULL;
	}
	work->shared = segment.placed;
	ereport(DEBUG1,
			errmsg_internal("re-encoding %d runs of parts with %d parallel workers",
							work->num_runs, pcxt->nworkers_launched));
	return pcxt;
}

void
lp_assemble_reencode_runs(LpAssembleReencoder *reencoder, LpAssembleInputs *inputs,
						  const LpAssembleRun *given, int num_given,
						  const LpDeletions *const *deletions)
{
	LpStore    *store = reencoder->store;
	List	   *pieces = split_runs(inputs, given, num_given,
									lp_max_copy_workers > 0 &&
									store->ops->open_shared_output != NULL);
	int			num_runs = list_length(pieces);
	Size		shared_bytes = add_size(offsetof(RunsShared, rows),
										mul_size(2 * num_runs, sizeof(uint64)));
	RunsShared *shared = palloc0(shared_bytes);
	LpOutput  **outputs = palloc0(sizeof(LpOutput *) * num_runs);
	ParallelContext *pcxt = NULL;
	RunsWork	work;
	bool		can_share = true;
	LpError		err;

	memset(&work, 0, sizeof(work));
	work.shared = shared;
	work.dir = reencoder->dir;
	work.root = inputs->root;
	work.schema = *inputs->target.schema;
	work.version = inputs->target.version;
	work.num_runs = num_runs;
	work.runs = palloc0(sizeof(ReencodeRun) * num_runs);
	work.leader = true;
	shared->bytes_before = reencoder->bytes_done;
	shared->parts_before = reencoder->parts_done;
	shared->num_runs = num_runs;
	pg_atomic_init_u32(&shared->next_run, 0);
	pg_atomic_init_u64(&shared->bytes_done, 0);
	pg_atomic_init_u32(&shared->parts_done, 0);
	lp_progress_phase(LP_PHASE_REENCODING, reencoder->parts_done, reencoder->bytes_done, 0, 0);

	for (int r = 0; r < num_runs; r++)
	{
		const LpAssembleRun *piece = list_nth(pieces, r);
		ReencodeRun *run = &work.runs[r];

		run->count = piece->count;
		run->paths = &inputs->paths[piece->first];
		run->deletions = palloc0(sizeof(LpDeletions *) * piece->count);
		run->files = palloc(sizeof(LpFile *) * piece->count);
		for (int k = 0; k < piece->count; k++)
		{
			run->files[k] = inputs->parts[piece->first + k].file;
			run->deletions[k] = deletions != NULL ? (LpDeletions *) deletions[piece->first + k] : NULL;
			run->source_bytes += inputs->parts[piece->first + k].file->file_size;
		}
		run->first_position = reencoder->positions_of[piece->first];
		run->last_position = reencoder->positions_of[piece->first + piece->count - 1];
		run->output_path = unused_path(reencoder, run->first_position);
		outputs[r] = store->ops->create_output(store, run->output_path, &err);
		if (outputs[r] == NULL)
			lp_raise(&err);
		/* registered before it can exist, so that an ERROR from here on removes it */
		reencoder->paths = lappend(reencoder->paths, run->output_path);
		if (outputs[r]->ops->share_token == NULL)
			can_share = false;
		else
		{
			run->token_len = (uint32) outputs[r]->ops->share_token(outputs[r], NULL, 0);
			run->token = palloc(run->token_len);
			(void) outputs[r]->ops->share_token(outputs[r], run->token, run->token_len);
		}
	}
	if (num_runs > 1 && can_share && lp_max_copy_workers > 0 &&
		store->ops->open_shared_output != NULL)
		pcxt = start_reencode_workers(&work, shared_bytes);
	reencode_claimed_runs(&work, outputs);
	if (pcxt != NULL)
	{
		WaitForParallelWorkersToFinish(pcxt);
		memcpy(shared->rows, work.shared->rows, sizeof(uint64) * 2 * num_runs);
		work.shared = shared;
		lp_parallel_end(pcxt);
	}
	for (int r = 0; r < num_runs; r++)
		if (!outputs[r]->ops->publish(outputs[r], &err))
			lp_raise(&err);

	/* the last run first, so that the parts before a run keep their places in inputs */
	for (int r = num_runs - 1; r >= 0; r--)
	{
		const LpAssembleRun *piece = list_nth(pieces, r);
		const ReencodeRun *run = &work.runs[r];
		int			first = piece->first;

		ereport(DEBUG1,
				errmsg_internal("re-encoded %d part(s) from part %d (\"%s\") as \"%s\": " UINT64_FORMAT " rows, " UINT64_FORMAT " bytes",
								run->count, run->first_position, inputs->paths[first],
								run->output_path, shared->rows[2 * r], shared->rows[2 * r + 1]));
		for (int k = 0; k < run->count; k++)
			reencoder->positions = lappend_int(reencoder->positions,
											   reencoder->positions_of[first + k]);
		inputs->paths[first] = run->output_path;
		inputs->parts[first].file = lp_read_lance_file_below(inputs->root, run->output_path);
		inputs->parts[first].has_expected_rows = false;
		reencoder->reencoded[first] = true;
		absorb_parts(reencoder, inputs, first, run->count);
		reencoder->bytes_done += (int64) run->source_bytes;
		reencoder->parts_done += run->count;
	}
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
