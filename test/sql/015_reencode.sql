-- The re-encode fallback: argument errors and their SQLSTATEs, what stays
-- refused by default and with on_unsupported => 'reencode' (legacy files,
-- blob columns, rows that do not fit the schema), null structs in a 2.0 target
-- refused with a clear error (the encoder writes them from 2.1 on), and
-- compact's rewrite_deletions.  Read-back by lancedb: test/reference/reencode.test.cjs.
\set VERBOSITY terse
-- The versions the calls return are checked: publish them at call.
SET lance_parts.publish_at = call;
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
\set work :scratch/015
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';
SELECT lp_test.sh(format('rm -rf %1$s && mkdir -p %1$s && cp -r %2$s/types_2_2_v2.lance %2$s/types_2_0_v2.lance '
                         '%2$s/deleted_2_2.lance %2$s/blob_2_2.lance %1$s/', :'work', :'testdata'));
\set ds22 :work/types_2_2_v2.lance
\set ds20 :work/types_2_0_v2.lance

-- the first data file of a reference dataset
CREATE FUNCTION pg_temp.part(dataset text) RETURNS text
LANGUAGE sql AS $$
    SELECT d->>'path' || '/data/' || (d->'data_files'->0->>'file')
    FROM jsonb_array_elements(pg_read_file(current_setting('lance_parts_test.testdata') || '/manifest.json')::jsonb->'datasets') d
    WHERE d->>'name' = dataset
$$;

-- the signatures
SELECT p.oid::regprocedure AS function, pg_get_function_result(p.oid) AS result
FROM pg_proc p
WHERE p.pronamespace = 'lance_parts'::regnamespace AND p.proname IN ('assemble', 'ingest', 'compact')
ORDER BY 1::text;

SELECT lance_parts.create_target(:'ds22') AS target \gset
SELECT lp_test.entries(:'ds22' || '/data') AS data_before \gset

-- ---- argument errors --------------------------------------------------------
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.assemble(%L, ARRAY[%L], on_unsupported => %L)',
                              :'target', pg_temp.part('types_2_1_v2'), 'rewrite')) AS bad_mode;
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.assemble(%L, ARRAY[%L], on_unsupported => NULL)',
                              :'target', pg_temp.part('types_2_1_v2'))) AS null_mode;
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.ingest(%L, ARRAY[%L], on_unsupported => %L)',
                              :'ds22', pg_temp.part('types_2_1_v2'), 'Reencode')) AS ingest_bad_mode;
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.compact(%L, rewrite_deletions => NULL)',
                              :'work' || '/deleted_2_2.lance')) AS null_rewrite_deletions;

-- ---- what stays unsupported -------------------------------------------------
SET client_min_messages = warning;
SELECT a.name, a.mode, r.status, r.reason, r.reencoded_parts, r.num_rows IS NULL AS no_rows
FROM (VALUES
  ('2.1 part', 'refuse', :'target'::jsonb, ARRAY[pg_temp.part('types_2_1_v2')]),
  ('legacy part', 'reencode', :'target'::jsonb, ARRAY[pg_temp.part('types_legacy_v2')]),
  ('blob part into another schema', 'reencode', :'target'::jsonb, ARRAY[pg_temp.part('blob_2_2')]),
  ('blob dataset', 'reencode', lance_parts.create_target(:'work' || '/blob_2_2.lance'), ARRAY[pg_temp.part('blob_2_2')]),
  ('other schema', 'reencode', :'target'::jsonb, ARRAY[pg_temp.part('multipage_2_1')])
  ) a(name, mode, target, parts),
  lance_parts.assemble(a.target, a.parts, on_unsupported => a.mode) r
ORDER BY 1;
RESET client_min_messages;

-- ---- null structs in a 2.0 target: refused with a clear error, nothing left behind
SELECT lance_parts.create_target(:'ds20') AS target20 \gset
SELECT lp_test.entries(:'ds20' || '/data') AS data20_before \gset
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.assemble(%L, ARRAY[%L], on_unsupported => %L)',
                                     :'target20', pg_temp.part('types_2_1_v2'), 'reencode')) AS null_structs_in_2_0;
-- no file in the data directory; the target's (empty) staging directory stays
-- for its part writers
SELECT array_remove(lp_test.entries(:'ds20' || '/data'), '_parts') = :'data20_before'::text[] AS data_unchanged;
SELECT lp_test.entries(:'ds20' || '/data/_parts/' || (:'target20'::jsonb->>'file_name')) AS staging;
SELECT lp_test.entries(:'ds22' || '/data') = :'data_before'::text[] AS data22_unchanged;

-- ---- compact keeps fragments with deletion files by default -----------------
SELECT fragment_id, action, reason FROM lance_parts.compact(:'work' || '/deleted_2_2.lance') ORDER BY 1;
-- with rewrite_deletions they are rewritten from their live rows (read back
-- by lancedb in reencode.test.cjs), and compact's staging directory is gone
SELECT fragment_id, action, reason, new_fragment_id, dataset_version
FROM lance_parts.compact(:'work' || '/deleted_2_2.lance', rewrite_deletions => true) ORDER BY 1;
SELECT sum(num_rows) AS live_rows_in_new_file
FROM unnest(lp_test.entries(:'work' || '/deleted_2_2.lance/data')) f,
     lance_parts.file_info(:'work' || '/deleted_2_2.lance/data/' || f)
WHERE f LIKE '%.lance' AND f NOT IN (SELECT d->>'file' FROM jsonb_array_elements(
          (SELECT x->'data_files' FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') x
           WHERE x->>'name' = 'deleted_2_2')) d);
SELECT lp_test.entries(:'work' || '/deleted_2_2.lance/data/_parts') AS no_reencode_dir;

SELECT lp_test.sh(format('rm -rf %s', :'work'));
