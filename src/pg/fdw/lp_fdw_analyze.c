/*
 * lp_fdw_analyze.c - ANALYZE of lance_fdw foreign tables.
 *
 * The sample is a reservoir sample (Vitter's algorithm, through
 * utils/sampling.h as file_fdw and postgres_fdw use it) of the live rows of
 * the table's dataset version: the scan iterator reads every declared
 * column fragment by fragment and skips the rows the deletion files list, so
 * memory is one fragment's decoded fields plus the sample.  Only rows that
 * enter the sample are converted to datums.  PostgreSQL lets only the
 * table's owner ANALYZE it; the options naming server files were checked
 * when they were set, as for scans.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "commands/vacuum.h"
#include "utils/rel.h"
#include "utils/sampling.h"

#include "base/lp_pg_compat.h"
#include "fdw/lp_fdw.h"
#include "store/lp_pg_storage.h"

/* The bytes of the source's data files: from the manifest, or their size in the store. */
static double
source_bytes(const LpFdwSource *source)
{
	LpStat		st;
	double		bytes = 0;

	if (source->single_file)
	{
		lp_store_stat(source->store, source->path, true, &st);
		return (double) st.size;
	}
	for (size_t f = 0; f < source->num_fragments; f++)
	{
		LpFragment	fragment;

		lp_manifest_fragment(source->manifest, f, &fragment);
		for (size_t d = 0; d < fragment.num_files; d++)
		{
			LpDataFileRef file;

			lp_fragment_data_file(source->manifest, &fragment, d, &file);
			if (file.size_bytes == 0)
			{
				LpStore    *store;
				char	   *path = lp_fdw_data_file_path(source, &file, &store);

				lp_store_stat(store, path, true, &st);
				bytes += (double) st.size;
			}
			else
				bytes += (double) file.size_bytes;
		}
	}
	return bytes;
}

/* All columns the table declares (not dropped), as an integer list of attribute numbers. */
static List *
declared_columns(Relation relation)
{
	TupleDesc	desc = RelationGetDescr(relation);
	List	   *attnums = NIL;

	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			attnums = lappend_int(attnums, TupleDescAttr(desc, i)->attnum);
	return attnums;
}

static int
lance_acquire_sample_rows(Relation relation, int elevel, HeapTuple *rows, int targrows,
						  double *totalrows, double *totaldeadrows)
{
	TupleDesc	desc = RelationGetDescr(relation);
	Datum	   *values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	bool	   *isnull = palloc(sizeof(bool) * Max(desc->natts, 1));
	LpFdwScan  *scan = lp_fdw_scan_begin(relation, declared_columns(relation), false, NULL);
	ReservoirStateData reservoir;
	double		rows_to_skip = -1;	/* -1: not drawn yet */
	int			numrows = 0;

	reservoir_init_selection_state(&reservoir, targrows);
	*totalrows = 0;
	while (lp_fdw_scan_next(scan))
	{
		int			slot = -1;

		vacuum_delay_point(true);
		/*
		 * The first targrows rows fill the reservoir; each later row replaces
		 * one at random or is skipped, as Vitter's algorithm draws.
		 */
		if (numrows < targrows)
			slot = numrows++;
		else
		{
			/* Vitter's t is the number of rows seen before this one. */
			if (rows_to_skip < 0)
				rows_to_skip = reservoir_get_next_S(&reservoir, *totalrows, targrows);
			if (rows_to_skip <= 0)
			{
				slot = (int) (targrows * sampler_random_fract(&reservoir.randstate));
				Assert(slot >= 0 && slot < targrows);
				heap_freetuple(rows[slot]);
			}
			rows_to_skip -= 1;
		}
		if (slot >= 0)
		{
			lp_fdw_scan_values(scan, values, isnull);
			rows[slot] = heap_form_tuple(desc, values, isnull);
		}
		*totalrows += 1;
	}
	*totaldeadrows = (double) lp_fdw_scan_deleted_rows(scan);
	lp_fdw_scan_end(scan);

	ereport(elevel,
			errmsg("\"%s\": Lance data has %.0f live rows and %.0f deleted rows; %d rows in sample",
				   RelationGetRelationName(relation), *totalrows, *totaldeadrows, numrows));
	return numrows;
}

bool
lp_fdw_analyze(Relation relation, AcquireSampleRowsFunc *func, BlockNumber *totalpages)
{
	LpFdwTableOptions options;
	LpFdwSource *source;
	double		pages;

	lp_fdw_table_options(RelationGetRelid(relation), &options);
	source = lp_fdw_open_source(options.path, options.server, options.has_version, options.version, true);

	/* At least 1, so that pg_class.relpages tells an analyzed table from one never analyzed. */
	pages = ceil(source_bytes(source) / BLCKSZ);
	*totalpages = (BlockNumber) Min(Max(pages, 1), (double) MaxBlockNumber);
	*func = lance_acquire_sample_rows;
	return true;
}
