-- SQLSTATEs a client can act on: FIFOs and other non-regular files are
-- refused (22023) without blocking, relative paths of anything written are
-- refused (42602) as COPY TO refuses them, multi-dimensional arrays are
-- refused by every function that takes one (2202E).
\set VERBOSITY terse
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
\set work :scratch/006
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';
SELECT lp_test.sh(format('rm -rf %1$s && mkdir -p %1$s && cp -r %2$s/types_2_2_v2.lance %1$s/ds.lance '
                         '&& mkfifo %1$s/fifo.lance', :'work', :'testdata'));
\set dataset :work/ds.lance
\set fifo :work/fifo.lance
SELECT d->>'path' || '/data/' || (f->>'file') AS part
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d,
     jsonb_array_elements(d->'data_files') f
WHERE d->>'name' = 'types_2_2_v2' AND (f->>'num_rows')::int = 45 \gset

-- ---- a FIFO is not a Lance file: refused at once, never waited on ---------
-- A blocked open() ignores cancels and timeouts, so a background writer opens
-- the FIFO every 2 seconds: a reader that waits for a writer fails the timing
-- check below instead of hanging the test.
SELECT lp_test.sh(format('(for i in $(seq 60); do sleep 2; [ -p %1$s ] || exit 0; '
                         'timeout 3 sh -c ": > %1$s"; done) </dev/null >/dev/null 2>&1 &', :'fifo'));
SELECT clock_timestamp() AS fifo_start \gset
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.file_info(%L)', :'fifo'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.file_schema(%L)', :'fifo'));
SELECT lance_parts.create_target(:'dataset') AS target \gset
SELECT lp_test.outcome(format('SELECT lance_parts.register_part(%L, %L)', :'target', :'fifo'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.concat_files(%L, ARRAY[%L, %L])',
                              :'work' || '/out.lance', :'part', :'fifo'));
CREATE SERVER sqlstates_srv FOREIGN DATA WRAPPER lance_fdw;
CREATE FOREIGN TABLE fifo_table (id bigint) SERVER sqlstates_srv OPTIONS (uri :'fifo');
SELECT lp_test.outcome('SELECT count(*) FROM fifo_table');
SET client_min_messages = warning;
DROP SERVER sqlstates_srv CASCADE;
RESET client_min_messages;
SELECT clock_timestamp() - :'fifo_start' < interval '1.5 s' AS fifo_refused_without_waiting;

-- ---- relative paths: refused for what is written, read as COPY FROM reads --
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.concat_files(%L, ARRAY[%L])',
                                     'out.lance', :'part'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.concat_files(%L, ARRAY[%L])',
                              'file://out.lance', :'part'));
SELECT lp_test.outcome($$SELECT lance_parts.create_target('ds.lance')$$);
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.ingest(%L, ARRAY[%L])', 'ds.lance', :'part'));
SELECT lp_test.outcome($$SELECT * FROM lance_parts.compact('ds.lance')$$);
-- nothing was written into the data directory
SELECT pg_stat_file('out.lance', missing_ok => true) IS NULL AS no_output_in_pgdata;
-- reading a relative path still reads from the data directory
SELECT lp_test.outcome($$SELECT * FROM lance_parts.file_info('PG_VERSION')$$);

-- ---- multi-dimensional arrays -----------------------------------------------
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.compact(%L, ARRAY[[0, 1], [2, 3]])', :'dataset'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.concat_files(%L, ARRAY[[%L], [%L]])',
                              :'work' || '/out.lance', :'part', :'part'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.concat_files(%L, ARRAY[%L], ARRAY[[45]])',
                              :'work' || '/out.lance', :'part'));
-- the dataset is untouched
SELECT lp_test.entries(:'dataset' || '/_versions') = lp_test.entries(:'testdata' || '/types_2_2_v2.lance/_versions')
       AS versions_unchanged;

SELECT lp_test.sh(format('rm -rf %s', :'work'));
