-- Assembly: concat_files and assemble on copies of the reference datasets in
-- LP_SCRATCH.  Written files are compared with their inputs page by page;
-- every compatibility result and every hard error leaves no output file and
-- no temporary file behind.
\set VERBOSITY terse
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
\set work :scratch/003
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';

-- bytes [from_pos, to_pos) (0-based)
CREATE FUNCTION pg_temp.slice(b bytea, from_pos bigint, to_pos bigint) RETURNS bytea
LANGUAGE sql AS $$
    SELECT substring(b FROM (from_pos + 1)::int FOR (to_pos - from_pos)::int)
$$;

-- The metadata of the last physical column: the last entry of the column
-- metadata offset (CMO) table, which the footer places 32 bytes before EOF.
CREATE FUNCTION pg_temp.last_column_metadata(b bytea) RETURNS bytea
LANGUAGE sql AS $$
    SELECT pg_temp.slice(b, lp_test.u64_at(b, e), lp_test.u64_at(b, e) + lp_test.u64_at(b, e + 8))
    FROM (SELECT lp_test.u64_at(b, length(b) - 32) + 16 * (lp_test.u32_at(b, length(b) - 12) - 1) AS e) x
$$;

-- Append protobuf fields to the metadata of the last physical column, which
-- Lance writes right before the CMO table: the CMO and GBO tables move by the
-- added bytes, and so do their offsets in the footer.
CREATE FUNCTION pg_temp.extend_last_column(b bytea, extra bytea) RETURNS bytea
LANGUAGE plpgsql AS $$
DECLARE
    size bigint := length(b);
    cmo bigint := lp_test.u64_at(b, size - 32);
    gbo bigint := lp_test.u64_at(b, size - 24);
    ncol bigint := lp_test.u32_at(b, size - 12);
    last_entry bigint := cmo + 16 * (ncol - 1);
    k int := length(extra);
BEGIN
    IF lp_test.u64_at(b, last_entry) + lp_test.u64_at(b, last_entry + 8) <> cmo OR cmo + 16 * ncol <> gbo THEN
        RAISE EXCEPTION 'the last column metadata does not end at the CMO table';
    END IF;
    RETURN pg_temp.slice(b, 0, cmo) || extra
        || pg_temp.slice(b, cmo, last_entry + 8)
        || lp_test.le64(lp_test.u64_at(b, last_entry + 8) + k)
        || pg_temp.slice(b, gbo, size - 40)
        || pg_temp.slice(b, size - 40, size - 32)
        || lp_test.le64(cmo + k) || lp_test.le64(gbo + k)
        || pg_temp.slice(b, size - 16, size);
END
$$;

-- the reference datasets and their data files, in fragment order
CREATE TEMP TABLE part AS
SELECT d->>'name' AS dataset,
       d->>'file_version' AS file_version,
       (f->>'fragment_id')::int AS fragment_id,
       f->>'file' AS file,
       (f->>'num_rows')::bigint AS num_rows
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d,
     jsonb_array_elements(d->'data_files') f;

-- copies of the datasets this test writes into
SELECT lp_test.sh(format('rm -rf %1$s && mkdir -p %1$s/out %1$s/refused && cd %2$s && cp -r %3$s %1$s/',
                         :'work', :'testdata',
                         'types_2_0_v2.lance types_2_1_v2.lance types_2_2_v2.lance types_2_3_v2.lance '
                         'types_legacy_v2.lance multipage_2_0.lance multipage_2_1.lance multipage_2_2.lance '
                         'multipage_2_3.lance blob_2_2.lance'));
CREATE FUNCTION pg_temp.part_path(dataset text, fragment_id int) RETURNS text
LANGUAGE sql AS $$
    SELECT current_setting('lance_parts_test.scratch') || '/003/' || dataset || '.lance/data/' || file
    FROM part p WHERE p.dataset = $1 AND p.fragment_id = $2
$$;
CREATE FUNCTION pg_temp.part_paths(dataset text, reversed boolean DEFAULT false) RETURNS text[]
LANGUAGE sql AS $$
    SELECT array_agg(pg_temp.part_path(p.dataset, p.fragment_id)
                     ORDER BY CASE WHEN reversed THEN -p.fragment_id ELSE p.fragment_id END)
    FROM part p WHERE p.dataset = $1
$$;

-- Pages of each column, as (rows, buffers, bytes, layout), of one file or of
-- several files in order
CREATE FUNCTION pg_temp.column_pages(paths text[]) RETURNS TABLE (column_index int, pages jsonb)
LANGUAGE sql AS $$
    SELECT p.column_index,
           jsonb_agg(jsonb_build_array(p.num_rows, p.buffer_count, p.buffer_bytes, p.layout)
                     ORDER BY u.ord, p.page_index)
    FROM unnest(paths) WITH ORDINALITY u(path, ord), lance_parts.file_pages(u.path) p
    GROUP BY p.column_index
$$;
CREATE FUNCTION pg_temp.schema_of(path text) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT jsonb_agg(to_jsonb(s) ORDER BY ord)
    FROM lance_parts.file_schema(path) WITH ORDINALITY s(field_id, parent_id, name, logical_type, nullable, metadata, ord)
$$;

-- concat_files of every data file of a dataset, in fragment order and
-- reversed: the output holds the inputs' pages in the order given, with the
-- same sizes, the schema of input 0, and (2.1+) relocated priorities
CREATE TEMP TABLE concatenated AS
SELECT d.dataset, d.file_version, o.reversed, r.*
FROM (SELECT DISTINCT dataset, file_version FROM part
      WHERE dataset ~ '^(types_2_._v2|multipage_2_.)$') d,
     (VALUES (false), (true)) o(reversed),
     lance_parts.concat_files(format('%s/out/%s%s.lance', :'work', d.dataset,
                                     CASE WHEN o.reversed THEN '_reversed' ELSE '' END),
                              pg_temp.part_paths(d.dataset, o.reversed)) r;

SELECT dataset, reversed, status, reason, version, num_rows,
       replace(path, :'work', '$WORK') AS path
FROM concatenated ORDER BY dataset, reversed;

SELECT c.dataset, c.reversed,
       i.version = c.version AND i.num_rows = c.num_rows AND i.size_bytes = c.size_bytes
           AND i.num_global_buffers = 1 AS info_ok,
       pg_temp.schema_of(c.path) = pg_temp.schema_of((pg_temp.part_paths(c.dataset, c.reversed))[1]) AS schema_ok,
       (SELECT count(*) FROM pg_temp.column_pages(ARRAY[c.path]) o
        FULL JOIN pg_temp.column_pages(pg_temp.part_paths(c.dataset, c.reversed)) s USING (column_index)
        WHERE o.pages IS DISTINCT FROM s.pages) AS columns_with_other_pages,
       (SELECT bool_and(p.priority = p.first_row OR c.file_version = '2.0')
        FROM (SELECT priority,
                     coalesce(sum(num_rows) OVER (PARTITION BY column_index ORDER BY page_index
                                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS first_row
              FROM lance_parts.file_pages(c.path)) p) AS priorities_ok
FROM concatenated c, lance_parts.file_info(c.path) i
ORDER BY 1, 2;

-- 2.0 keeps one struct header page, whose length is the total row count
SELECT c.dataset, p.column_index, p.page_index, p.num_rows, p.buffer_count
FROM concatenated c, lance_parts.file_pages(c.path) p
WHERE c.dataset = 'types_2_0_v2' AND NOT c.reversed
  AND p.column_index IN (SELECT o.column_index
                         FROM pg_temp.column_pages(ARRAY[c.path]) o
                         JOIN pg_temp.column_pages(pg_temp.part_paths(c.dataset)) s USING (column_index)
                         WHERE o.pages <> s.pages)
ORDER BY 2, 3;

-- a single input that is the output itself is reused: nothing is written
SELECT :'work' || '/out/types_2_2_v2.lance' AS out22 \gset
SELECT modification AS before FROM pg_stat_file(:'out22') \gset
SELECT status, reason, num_rows, size_bytes = (pg_stat_file(path)).size AS size_ok,
       replace(path, :'work', '$WORK') AS path
FROM lance_parts.concat_files(:'out22', ARRAY[:'out22']);
SELECT modification = :'before' AS unchanged FROM pg_stat_file(:'out22');
-- ... also named through a file:// URI
SELECT status FROM lance_parts.concat_files('file://' || :'out22', ARRAY[:'out22']);
-- a single input copied to another name is written, with the same pages
SELECT status, num_rows, size_bytes = (pg_stat_file(path)).size AS size_ok
FROM lance_parts.concat_files(:'work' || '/out/copy.lance', ARRAY[:'out22'], ARRAY[515]);
SELECT (SELECT jsonb_agg(pages ORDER BY column_index) FROM pg_temp.column_pages(ARRAY[:'work' || '/out/copy.lance'])) =
       (SELECT jsonb_agg(pages ORDER BY column_index) FROM pg_temp.column_pages(ARRAY[:'out22'])) AS same_pages;

-- Files with a feature that concatenation cannot relocate, made from a real
-- 2.2 file by editing its metadata
SELECT pg_temp.part_path('types_2_2_v2', 2) AS good \gset
SELECT pg_read_binary_file(:'good') AS bytes \gset
SELECT length(:'bytes'::bytea) AS size \gset
CREATE TEMP TABLE edited (name text, path text);
INSERT INTO edited VALUES
  -- a column buffer (ColumnMetadata fields 3 and 4) in the last column
  ('column_buffer', lp_test.put(:'work' || '/column_buffer.lance',
                                pg_temp.extend_last_column(:'bytes'::bytea, '\x18002000'))),
  -- the last column's encoding repeated with an unknown field added: the
  -- last occurrence of a protobuf field wins, so the encoding bytes differ
  ('other_column_encoding', lp_test.put(:'work' || '/other_column_encoding.lance',
        pg_temp.extend_last_column(:'bytes'::bytea,
            '\x0a'::bytea || set_byte('\x00'::bytea, 0, get_byte(pg_temp.last_column_metadata(:'bytes'::bytea), 1) + 2)
            || pg_temp.slice(pg_temp.last_column_metadata(:'bytes'::bytea), 2,
                             2 + get_byte(pg_temp.last_column_metadata(:'bytes'::bytea), 1))
            || '\x7800'::bytea))),
  -- a second global buffer (a copy of the GBO entry of the schema)
  ('two_global_buffers', lp_test.put(:'work' || '/two_global_buffers.lance',
        pg_temp.slice(:'bytes'::bytea, 0, :size - 40)
        || pg_temp.slice(:'bytes'::bytea, lp_test.u64_at(:'bytes'::bytea, :size - 24),
                         lp_test.u64_at(:'bytes'::bytea, :size - 24) + 16)
        || pg_temp.slice(:'bytes'::bytea, :size - 40, :size - 16)
        || '\x02000000'::bytea
        || pg_temp.slice(:'bytes'::bytea, :size - 12, :size))),
  -- one physical column fewer in the footer
  ('one_column_fewer', lp_test.put(:'work' || '/one_column_fewer.lance',
        overlay(:'bytes'::bytea PLACING pg_temp.slice(lp_test.le64(lp_test.u32_at(:'bytes'::bytea, :size - 12) - 1), 0, 4)
                FROM :size - 11)));
-- the edited files still read as valid Lance files
SELECT e.name, i.version, i.num_rows, i.num_columns, i.num_global_buffers
FROM edited e, lance_parts.file_info(e.path) i ORDER BY 1;

-- Every compatibility result: status 'unsupported' with the reason, and no
-- output.  The NOTICE naming the input is not shown (it holds paths).
SET client_min_messages = warning;
CREATE TEMP TABLE refusal (name text, inputs text[]);
INSERT INTO refusal VALUES
  ('legacy input 0', ARRAY[pg_temp.part_path('types_legacy_v2', 0), pg_temp.part_path('types_legacy_v2', 1)]),
  ('legacy input 1', ARRAY[:'good', pg_temp.part_path('types_legacy_v2', 1)]),
  ('2.2 then 2.1', ARRAY[:'good', pg_temp.part_path('types_2_1_v2', 0)]),
  ('2.1 then 2.2', ARRAY[pg_temp.part_path('types_2_1_v2', 0), :'good']),
  ('types then multipage', ARRAY[:'good', pg_temp.part_path('multipage_2_2', 0)]),
  ('blob v2 parts', pg_temp.part_paths('blob_2_2')),
  ('column buffer', ARRAY[:'good', (SELECT path FROM edited WHERE name = 'column_buffer')]),
  ('column buffer, alone', ARRAY[(SELECT path FROM edited WHERE name = 'column_buffer')]),
  ('other column encoding', ARRAY[:'good', (SELECT path FROM edited WHERE name = 'other_column_encoding')]),
  ('two global buffers', ARRAY[:'good', (SELECT path FROM edited WHERE name = 'two_global_buffers')]),
  ('one column fewer', ARRAY[:'good', (SELECT path FROM edited WHERE name = 'one_column_fewer')]);
SELECT f.name, r.status, r.reason, r.version, r.num_rows, r.size_bytes,
       replace(r.path, :'work', '$WORK') AS path,
       (pg_stat_file(r.path, missing_ok => true)).size IS NULL AS no_output
FROM refusal f,
     lance_parts.concat_files(format('%s/refused/%s.lance', :'work', replace(f.name, ' ', '_')), f.inputs) r
ORDER BY 1;
RESET client_min_messages;

-- Hard errors: an ERROR, and no output
SELECT :'work' || '/refused/out.lance' AS refused_out \gset
SELECT lp_test.put(:'work' || '/truncated.lance', substring(:'bytes'::bytea FROM 1 FOR :size / 2)) AS truncated \gset
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.concat_files(%L, %L, %L)', :'refused_out', a.inputs, a.expected)) AS error
FROM (VALUES
  (ARRAY[:'good', :'good'], ARRAY[45, 44]::bigint[]),
  (ARRAY[:'good', :'good'], ARRAY[NULL, 46]::bigint[]),
  (ARRAY[:'good'], ARRAY[-1]::bigint[]),
  (ARRAY[:'good', :'work'], NULL),
  (ARRAY[:'good', :'work' || '/no_such_part.lance'], NULL),
  (ARRAY[:'good', :'truncated'], NULL),
  (ARRAY[]::text[], NULL),
  (ARRAY[:'good', NULL], NULL),
  (ARRAY[:'good', :'good'], ARRAY[45]::bigint[]),
  (ARRAY[[:'good'], [:'good']], NULL),
  (ARRAY[:'good', 's3://bucket/part.lance'], NULL)) a(inputs, expected);
-- an output whose directory is a file
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.concat_files(%L, %L)', :'good' || '/out.lance', ARRAY[:'good']));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.concat_files(NULL, %L)', ARRAY[:'good']));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.concat_files(%L, NULL)', :'refused_out'));
-- nothing was written by any refusal or error, not even a temporary file
SELECT lp_test.entries(:'work' || '/refused') AS refused_dir;

-- an existing output is never replaced (58P02), and stays as it was
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.concat_files(%L, %L)', :'out22', ARRAY[:'good']));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.concat_files(%L, %L)', :'out22', ARRAY[:'out22', :'out22']));
SELECT modification = :'before' AS unchanged FROM pg_stat_file(:'out22');
SELECT count(*) AS temporary_files FROM pg_ls_dir(:'work' || '/out') f WHERE f LIKE '.%';

-- the output's directory is created when missing
SELECT status, num_rows
FROM lance_parts.concat_files(:'work' || '/new_dir/sub/out.lance', ARRAY[:'good']);
SELECT lp_test.entries(:'work' || '/new_dir/sub') AS new_dir;

-- assemble: the one-call form writes the target's data file into the
-- dataset's data directory
SELECT :'work' || '/types_2_2_v2.lance' AS ds22 \gset
SELECT lp_test.entries(:'ds22' || '/data') AS data_before \gset
SELECT lance_parts.create_target(:'ds22') AS target \gset
SELECT status, reason, version, num_rows,
       path = (:'target'::jsonb->>'data_dir') || '/' || (:'target'::jsonb->>'file_name') AS path_ok,
       size_bytes = (pg_stat_file(path)).size AS size_ok
FROM lance_parts.assemble(:'target', pg_temp.part_paths('types_2_2_v2'), ARRAY[300, 170, 45]);
SELECT lp_test.entries(:'ds22' || '/data') =
       (SELECT array_agg(f ORDER BY f) FROM unnest(:'data_before'::text[] || (:'target'::jsonb->>'file_name')) f) AS one_file_added;
-- the same pages as concat_files of the same parts
SELECT (SELECT jsonb_agg(pages ORDER BY column_index)
        FROM pg_temp.column_pages(ARRAY[(:'target'::jsonb->>'data_dir') || '/' || (:'target'::jsonb->>'file_name')])) =
       (SELECT jsonb_agg(pages ORDER BY column_index) FROM pg_temp.column_pages(ARRAY[:'out22'])) AS same_pages;
-- a second assembly of the same target refuses to replace the file
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.assemble(%L, %L)', :'target', pg_temp.part_paths('types_2_2_v2'))) AS error;

-- assemble refuses parts that do not match the target's version and schema,
-- and writes nothing into the dataset
SELECT lance_parts.create_target(:'ds22') AS target2 \gset
SELECT lance_parts.create_target(:'ds22', columns => ARRAY['id', 'st']) AS target_cols \gset
SELECT lp_test.entries(:'ds22' || '/data') AS data_before \gset
SET client_min_messages = warning;
SELECT a.name, r.status, r.reason, r.version, r.num_rows,
       (pg_stat_file(r.path, missing_ok => true)).size IS NULL AS no_output
FROM (VALUES
  ('2.1 part', :'target2'::jsonb, ARRAY[pg_temp.part_path('types_2_1_v2', 0)]),
  ('2.3 part', :'target2'::jsonb, ARRAY[pg_temp.part_path('types_2_3_v2', 0)]),
  ('legacy part', :'target2'::jsonb, ARRAY[pg_temp.part_path('types_legacy_v2', 0)]),
  ('multipage part', :'target2'::jsonb, ARRAY[pg_temp.part_path('multipage_2_2', 0)]),
  ('blob part', :'target2'::jsonb, ARRAY[pg_temp.part_path('blob_2_2', 0)]),
  ('all columns into a column subset', :'target_cols'::jsonb, ARRAY[:'good']),
  ('good, then a column buffer', :'target2'::jsonb, ARRAY[:'good', (SELECT path FROM edited WHERE name = 'column_buffer')]),
  ('good, then two global buffers', :'target2'::jsonb, ARRAY[:'good', (SELECT path FROM edited WHERE name = 'two_global_buffers')]),
  ('blob parts into a blob dataset', lance_parts.create_target(:'work' || '/blob_2_2.lance'), pg_temp.part_paths('blob_2_2'))
  ) a(name, target, parts),
  lance_parts.assemble(a.target, a.parts) r
ORDER BY 1;
RESET client_min_messages;
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.assemble(%L, %L, %L)', :'target2', ARRAY[:'good'], ARRAY[44])) AS error;
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.assemble(%L, %L)', :'target2', ARRAY[:'good', :'truncated'])) AS error;
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.assemble(%L, %L)', :'target2', '{}'::text[])) AS error;
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.assemble(%L, NULL)', :'target2')) AS error;
SELECT lp_test.outcome('SELECT * FROM lance_parts.assemble(NULL, ARRAY[''x''])') AS error;
-- the data directory is as it was
SELECT lp_test.entries(:'ds22' || '/data') = :'data_before'::text[] AS data_unchanged;

SELECT lp_test.sh(format('rm -rf %s', :'work'));
