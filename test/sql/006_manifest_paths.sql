-- Paths read from manifests are names under the dataset's directories: a
-- manifest whose data file path would leave the data directory (or is not a
-- plain relative path) is damaged metadata, refused with XX001 by every
-- reader (lance_fdw scans, compact, create_target, commit, cleanup_target),
-- and nothing is read from or written to the file it points to.
\set VERBOSITY terse
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
\set work :scratch/006
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';

-- fragment 2 (45 rows) of the reference dataset, and a part to assemble
SELECT f->>'file' AS victim_name,
       d->>'path' || '/data/' || (f->>'file') AS p45
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d,
     jsonb_array_elements(d->'data_files') f
WHERE d->>'name' = 'types_2_2_v2' AND (f->>'fragment_id')::int = 2 \gset

-- Each case: a copy of the dataset whose latest manifest names fragment 2's
-- file by another path of the same length (so the protobuf stays well
-- formed), with the file itself moved to where that path leads.
CREATE TEMP TABLE bad_path (name text, path text, placed_at text);
INSERT INTO bad_path VALUES
  ('parent', '../../elsewhere/' || repeat('0', 34) || '.lance', 'parent/elsewhere/' || repeat('0', 34) || '.lance'),
  ('absolute', '/' || repeat('0', 49) || '.lance', NULL),
  ('empty segment', 'a//' || repeat('0', 47) || '.lance', 'a.lance/data/a/' || repeat('0', 47) || '.lance'),
  ('dot segment', './' || repeat('0', 48) || '.lance', 'dot.lance/data/' || repeat('0', 48) || '.lance');
SELECT name, length(path) = length(:'victim_name') AS same_length FROM bad_path ORDER BY 1;

CREATE FUNCTION pg_temp.dataset(name text) RETURNS text
LANGUAGE sql AS $$
    SELECT current_setting('lance_parts_test.scratch') || '/006/'
        || CASE name WHEN 'parent' THEN 'parent/ds'
                     WHEN 'absolute' THEN 'absolute'
                     WHEN 'empty segment' THEN 'a'
                     ELSE 'dot' END || '.lance'
$$;
CREATE FUNCTION pg_temp.latest_manifest(dataset text) RETURNS text
LANGUAGE sql AS $$
    SELECT dataset || '/_versions/' || min(f)
    FROM pg_ls_dir(dataset || '/_versions') f WHERE f LIKE '%.manifest'
$$;
-- everything a dataset holds, as a stable snapshot
CREATE FUNCTION pg_temp.snapshot(dataset text) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT jsonb_build_object(
        'versions', lp_test.entries(dataset || '/_versions'),
        'transactions', lp_test.entries(dataset || '/_transactions'),
        'data', lp_test.entries(dataset || '/data'),
        'manifests', (SELECT md5(string_agg(md5(pg_read_binary_file(dataset || '/_versions/' || f)), ',' ORDER BY f))
                      FROM pg_ls_dir(dataset || '/_versions') f))
$$;

SELECT lp_test.sh(format('rm -rf %1$s && mkdir -p %1$s/parent && cd %2$s && cp -r types_2_2_v2.lance %1$s/parent/ds.lance '
                         '&& cp -r types_2_2_v2.lance %1$s/absolute.lance && cp -r types_2_2_v2.lance %1$s/a.lance '
                         '&& cp -r types_2_2_v2.lance %1$s/dot.lance',
                         :'work', :'testdata'));

-- targets made while the datasets were sound, with their files assembled
CREATE TEMP TABLE made_target AS
SELECT b.name, lance_parts.create_target(pg_temp.dataset(b.name)) AS target FROM bad_path b;
SELECT t.name, a.status FROM made_target t, lance_parts.assemble(t.target, ARRAY[:'p45']) a ORDER BY 1;

-- the damage
SELECT b.name,
       lp_test.put(pg_temp.latest_manifest(pg_temp.dataset(b.name)),
                   decode(replace(encode(pg_read_binary_file(pg_temp.latest_manifest(pg_temp.dataset(b.name))), 'hex'),
                                  encode(convert_to(:'victim_name', 'UTF8'), 'hex'),
                                  encode(convert_to(b.path, 'UTF8'), 'hex')), 'hex')) IS NOT NULL AS written
FROM bad_path b ORDER BY 1;
SELECT lp_test.sh(format('mkdir -p %1$s/parent/elsewhere %1$s/a.lance/data/a '
                         '&& mv %1$s/parent/ds.lance/data/%2$s %1$s/%3$s '
                         '&& mv %1$s/a.lance/data/%2$s %1$s/%4$s && mv %1$s/dot.lance/data/%2$s %1$s/%5$s',
                         :'work', :'victim_name',
                         (SELECT placed_at FROM bad_path WHERE name = 'parent'),
                         (SELECT placed_at FROM bad_path WHERE name = 'empty segment'),
                         (SELECT placed_at FROM bad_path WHERE name = 'dot segment')));
CREATE TEMP TABLE before AS
SELECT b.name, pg_temp.snapshot(pg_temp.dataset(b.name)) AS dataset,
       md5(pg_read_binary_file(:'work' || '/' || b.placed_at)) AS placed
FROM bad_path b;

-- lance_fdw: no rows of the file the path leads to
CREATE SERVER lance_006 FOREIGN DATA WRAPPER lance_fdw;
SELECT b.name,
       lp_test.outcome(format('CREATE FOREIGN TABLE %I (id bigint) SERVER lance_006 OPTIONS (uri %L)',
                              'ft_' || replace(b.name, ' ', '_'), pg_temp.dataset(b.name))) AS created
FROM bad_path b ORDER BY 1;
SELECT b.name, lp_test.outcome(format('SELECT count(*) FROM %I', 'ft_' || replace(b.name, ' ', '_'))) AS scan
FROM bad_path b ORDER BY 1;
SELECT b.name, lp_test.outcome(format('SELECT sum(id) FROM %I', 'ft_' || replace(b.name, ' ', '_'))) AS scan
FROM bad_path b ORDER BY 1;
CREATE SCHEMA imported_006;
SELECT b.name,
       lp_test.outcome(format('IMPORT FOREIGN SCHEMA x FROM SERVER lance_006 INTO imported_006 OPTIONS (uri %L)',
                              pg_temp.dataset(b.name))) AS import
FROM bad_path b ORDER BY 1;

-- compact rewrites nothing
SELECT b.name, lp_test.outcome(format('SELECT * FROM lance_parts.compact(%L)', pg_temp.dataset(b.name))) AS compact
FROM bad_path b ORDER BY 1;

-- no new target, no commit, no cleanup
SELECT b.name, lp_test.outcome(format('SELECT lance_parts.create_target(%L)', pg_temp.dataset(b.name))) AS create_target
FROM bad_path b ORDER BY 1;
SELECT t.name, lp_test.outcome(format('SELECT * FROM lance_parts.commit(%L)', t.target)) AS commit
FROM made_target t ORDER BY 1;
SELECT t.name, lp_test.outcome(format('SELECT lance_parts.cleanup_target(%L)', t.target)) AS cleanup_target
FROM made_target t ORDER BY 1;
SELECT t.name, lp_test.outcome(format('SELECT * FROM lance_parts.ingest(%L, ARRAY[%L])', pg_temp.dataset(t.name), :'p45')) AS ingest
FROM made_target t ORDER BY 1;

-- nothing changed: no version, no data file, the file the path leads to untouched
SELECT b.name,
       pg_temp.snapshot(pg_temp.dataset(b.name)) = x.dataset AS dataset_unchanged,
       md5(pg_read_binary_file(:'work' || '/' || b.placed_at)) IS NOT DISTINCT FROM x.placed AS placed_unchanged
FROM bad_path b JOIN before x USING (name) ORDER BY 1;

DROP SERVER lance_006 CASCADE;
DROP SCHEMA imported_006;
SELECT format('rm -rf %s', :'work') AS cleanup \gset
COPY (SELECT 1 WHERE false) TO PROGRAM :'cleanup';
