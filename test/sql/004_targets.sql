-- Targets, the session registry of parts, commit and cleanup_target, on
-- copies of the reference datasets in LP_SCRATCH.  Tampered and foreign
-- targets are refused by every entry point, and nothing is written then.
\set VERBOSITY terse
-- The versions the calls return are checked: publish them at call.
SET lance_parts.publish_at = call;
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
\set work :scratch/004
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';

-- everything a dataset holds, as a stable snapshot
CREATE FUNCTION pg_temp.snapshot(dataset text) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT jsonb_build_object(
        'versions', lp_test.entries(dataset || '/_versions'),
        'transactions', lp_test.entries(dataset || '/_transactions'),
        'data', lp_test.entries(dataset || '/data'),
        'latest', (SELECT md5(string_agg(md5(pg_read_binary_file(dataset || '/_versions/' || f)), ',' ORDER BY f))
                   FROM pg_ls_dir(dataset || '/_versions') f))
$$;
-- does the target's data file exist?
CREATE FUNCTION pg_temp.target_file_exists(target jsonb) RETURNS boolean
LANGUAGE sql AS $$
    SELECT (pg_stat_file((target->>'data_dir') || '/' || (target->>'file_name'), missing_ok => true)).size IS NOT NULL
$$;

-- the reference datasets' data files
CREATE TEMP TABLE part AS
SELECT d->>'name' AS dataset,
       (f->>'fragment_id')::int AS fragment_id,
       d->>'path' || '/data/' || (f->>'file') AS path,
       (f->>'num_rows')::bigint AS num_rows
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d,
     jsonb_array_elements(d->'data_files') f;
CREATE FUNCTION pg_temp.part_path(dataset text, fragment_id int) RETURNS text
LANGUAGE sql AS $$
    SELECT path FROM part p WHERE p.dataset = $1 AND p.fragment_id = $2
$$;
SELECT pg_temp.part_path('types_2_2_v2', 0) AS p300,
       pg_temp.part_path('types_2_2_v2', 1) AS p170,
       pg_temp.part_path('types_2_2_v2', 2) AS p45 \gset

SELECT lp_test.sh(format('rm -rf %1$s && mkdir -p %1$s && cd %2$s && cp -r types_2_2_v2.lance %1$s/v2.lance '
                         '&& cp -r types_2_2_v1.lance %1$s/v1.lance && cp -r types_2_2_v2.lance %1$s/reg.lance '
                         '&& cp -r types_2_2_v2.lance %1$s/first.lance && cp -r types_2_2_v2.lance %1$s/second.lance '
                         '&& cp -r blob_2_2.lance %1$s/blob.lance && cp -r types_2_0_v2.lance %1$s/v20.lance',
                         :'work', :'testdata'));

-- ---- create_target ---------------------------------------------------------

-- on datasets of both manifest naming schemes, and through a file:// URI and
-- an unresolved path
SELECT lance_parts.create_target(:'work' || '/v2.lance') AS t_v2,
       lance_parts.create_target(:'work' || '/v1.lance') AS t_v1 \gset
SELECT name,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(t) k) AS keys
FROM (VALUES ('v2', :'t_v2'::jsonb), ('v1', :'t_v1'::jsonb)) x(name, t) ORDER BY 1;
SELECT name,
       t->>'kind' AS kind, t->'format' AS format,
       replace(t->>'dataset', :'work', '$WORK') AS dataset,
       t->'dataset_version' AS dataset_version,
       t->'base_id' AS base_id,
       t->>'base_path' = t->>'dataset' AS base_is_root,
       t->>'data_dir' = (t->>'dataset') || '/data' AS data_dir_ok,
       t->>'file_version' AS file_version,
       t->'columns' AS columns,
       length(t->>'file_name') AS name_length,
       t->>'file_name' ~ '^[01]{24}[0-9a-f]{26}\.lance$' AS name_shape_ok,
       jsonb_array_length(t->'fields') AS fields,
       length(t->>'signature') AS signature_length
FROM (VALUES ('v2', :'t_v2'::jsonb), ('v1', :'t_v1'::jsonb)) x(name, t) ORDER BY 1;
-- signed by the cluster's signing key, named by the start of its SHA-256
-- (the key file holds one key here)
SELECT t->>'key_id' = encode(substring(sha256(pg_read_binary_file('lance_parts.key')) FROM 1 FOR 8), 'hex') AS key_id_ok,
       t->>'key_id' = (SELECT key_id FROM lance_parts.target_keys() WHERE signs) AS signing_key
FROM (VALUES (:'t_v2'::jsonb)) x(t);
-- the fields are those of the dataset, in order
SELECT (SELECT jsonb_agg(jsonb_build_object('id', f->'id', 'parent_id', f->'parent_id', 'name', f->'name',
                                            'logical_type', f->'logical_type', 'nullable', f->'nullable'))
        FROM jsonb_array_elements(:'t_v2'::jsonb->'fields') f) =
       (SELECT d->'expected_fields'
        FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d
        WHERE d->>'name' = 'types_2_2_v2') AS fields_ok;
-- every call names a new file
SELECT count(DISTINCT lance_parts.create_target(:'work' || '/v2.lance')->>'file_name') AS distinct_names
FROM generate_series(1, 20);
-- the same dataset, named differently, resolves to the same root
SELECT replace(lance_parts.create_target('file://' || :'work' || '/v2.lance')->>'dataset', :'work', '$WORK') AS by_uri,
       replace(lance_parts.create_target(:'work' || '/v1.lance/../v2.lance/')->>'dataset', :'work', '$WORK') AS by_path;
-- an explicit file version equal to the dataset's
SELECT lance_parts.create_target(:'work' || '/v2.lance', file_version => '2.2')->>'file_version' AS file_version;
-- a subset of the columns: the named top-level fields and their children
SELECT t->'columns' AS columns,
       (SELECT jsonb_agg(jsonb_build_array(f->'id', f->'parent_id', f->'name')) FROM jsonb_array_elements(t->'fields') f) AS fields
FROM (SELECT lance_parts.create_target(:'work' || '/v2.lance', columns => ARRAY['st', 'id']) t) x;

-- refusals
SELECT lp_test.outcome_detail(format('SELECT lance_parts.create_target(%L, columns => %L)', :'work' || '/v2.lance', c)) AS create_target
FROM (VALUES ('{nope}'::text[]), ('{id,id}'), ('{a}'), ('{}'), ('{id,NULL}')) x(c);
SELECT lp_test.outcome_detail(format('SELECT lance_parts.create_target(%L, file_version => %L)', :'work' || '/v2.lance', v)) AS create_target
FROM (VALUES ('2.1'), ('2.3'), ('3.0'), ('legacy'), ('')) x(v);
SELECT lp_test.outcome_detail(format('SELECT lance_parts.create_target(%L, base_id => 1)', :'work' || '/v2.lance')) AS create_target;
SELECT lp_test.outcome_detail(format('SELECT lance_parts.create_target(%L)', d)) AS create_target
FROM (VALUES (:'work' || '/missing.lance'), (:'work'), (:'work' || '/v2.lance/data'), (:'p45'), (NULL)) x(d);
SELECT lp_test.outcome_detail(format('SELECT lance_parts.create_target(%L)', :'testdata' || '/types_legacy_v2.lance')) AS legacy_dataset;

-- staging_dir: data/_parts/<file name>/ under the base
SELECT replace(replace(lance_parts.staging_dir(:'t_v2'), :'work', '$WORK'), :'t_v2'::jsonb->>'file_name', '$FILE') AS staging_dir;

-- ---- tampered targets ------------------------------------------------------

-- edits, each refused by every function that takes a target
CREATE TEMP TABLE tampered (edit text, target jsonb);
INSERT INTO tampered VALUES
  ('file_name changed', jsonb_set(:'t_v2', '{file_name}', to_jsonb('00000000000000000000000' || substr(:'t_v2'::jsonb->>'file_name', 24)))),
  ('dataset changed', jsonb_set(:'t_v2', '{dataset}', to_jsonb(:'work' || '/v1.lance'))),
  ('data_dir changed', jsonb_set(:'t_v2', '{data_dir}', to_jsonb(:'work' || '/v1.lance/data'))),
  ('dataset_version changed', jsonb_set(:'t_v2', '{dataset_version}', '2')),
  ('field renamed', jsonb_set(:'t_v2', '{fields,0,name}', '"renamed"')),
  ('field removed', jsonb_set(:'t_v2', '{fields}', (:'t_v2'::jsonb->'fields') - 1)),
  ('file_version changed', jsonb_set(:'t_v2', '{file_version}', '"2.1"')),
  ('file_version invalid', jsonb_set(:'t_v2', '{file_version}', '"9.9"')),
  ('signature removed', :'t_v2'::jsonb - 'signature'),
  ('signature of another target', jsonb_set(:'t_v2', '{signature}', :'t_v1'::jsonb->'signature')),
  ('kind removed', :'t_v2'::jsonb - 'kind'),
  ('key added', :'t_v2'::jsonb || '{"note": "extra"}'),
  ('format 2', jsonb_set(:'t_v2', '{format}', '2')),
  ('key_id of another key', jsonb_set(:'t_v2', '{key_id}', '"0123456789abcdef"')),
  ('key_id not a key id', jsonb_set(:'t_v2', '{key_id}', '"../key"')),
  ('key_id removed', :'t_v2'::jsonb - 'key_id'),
  ('fields not an array', jsonb_set(:'t_v2', '{fields}', '{}')),
  ('a string', '"lance_parts.target"'),
  ('an array', '[]');
SELECT t.edit, lp_test.outcome_detail(format('SELECT lance_parts.staging_dir(%L)', t.target)) AS staging_dir
FROM tampered t ORDER BY 1;
-- every other entry point gives the same error, and writes nothing
SELECT pg_temp.snapshot(:'work' || '/v2.lance') AS v2_before \gset
SELECT t.edit, f.fn,
       lp_test.outcome_detail(format(f.call, t.target, :'p45')) = lp_test.outcome_detail(format('SELECT lance_parts.staging_dir(%L)', t.target)) AS same_error
FROM tampered t,
     (VALUES ('register_part', 'SELECT lance_parts.register_part(%L, %L)'),
             ('registered_parts', 'SELECT * FROM lance_parts.registered_parts(%L)'),
             ('clear_parts', 'SELECT lance_parts.clear_parts(%L)'),
             ('assemble', 'SELECT * FROM lance_parts.assemble(%L)'),
             ('assemble parts', 'SELECT * FROM lance_parts.assemble(%L, ARRAY[%L])'),
             ('commit', 'SELECT * FROM lance_parts.commit(%L)'),
             ('cleanup_target', 'SELECT lance_parts.cleanup_target(%L)')) f(fn, call)
WHERE NOT lp_test.outcome_detail(format(f.call, t.target, :'p45')) = lp_test.outcome_detail(format('SELECT lance_parts.staging_dir(%L)', t.target))
ORDER BY 1, 2;
SELECT pg_temp.snapshot(:'work' || '/v2.lance') = :'v2_before'::jsonb AS v2_unchanged,
       NOT pg_temp.target_file_exists(:'t_v2') AS no_target_file;

-- ---- the session registry --------------------------------------------------

SELECT lance_parts.create_target(:'work' || '/reg.lance') AS t \gset
-- registered in the order given: positions 1..n
SELECT lance_parts.register_part(:'t', p) AS position
FROM unnest(ARRAY[:'p45', :'p170', :'p300']) WITH ORDINALITY u(p, ord) ORDER BY ord;
SELECT r.position, r.uri = u.p AS uri_ok, r.num_rows, r.size_bytes = (pg_stat_file(u.p)).size AS size_ok
FROM lance_parts.registered_parts(:'t') r
JOIN unnest(ARRAY[:'p45', :'p170', :'p300']) WITH ORDINALITY u(p, ord) ON u.ord = r.position
ORDER BY 1;
-- registries are per target
SELECT count(*) AS other_target_parts FROM lance_parts.registered_parts(lance_parts.create_target(:'work' || '/reg.lance'));
SELECT lance_parts.clear_parts(:'t') AS cleared, lance_parts.clear_parts(:'t') AS cleared_again;
SELECT count(*) AS parts FROM lance_parts.registered_parts(:'t');

-- registrations roll back with their transaction and savepoint
BEGIN;
SELECT lance_parts.register_part(:'t', :'p45') AS position;
SAVEPOINT s1;
SELECT lance_parts.register_part(:'t', :'p170') AS position;
ROLLBACK TO SAVEPOINT s1;
SELECT lance_parts.register_part(:'t', :'p300') AS position;
SAVEPOINT s2;
SELECT lance_parts.register_part(:'t', :'p170') AS position;
RELEASE SAVEPOINT s2;
SELECT array_agg(num_rows ORDER BY position) AS in_transaction FROM lance_parts.registered_parts(:'t');
ROLLBACK;
SELECT count(*) AS after_rollback FROM lance_parts.registered_parts(:'t');
BEGIN;
SELECT lance_parts.register_part(:'t', :'p45') AS position;
SAVEPOINT s1;
SELECT lance_parts.register_part(:'t', :'p170') AS position;
RELEASE SAVEPOINT s1;
COMMIT;
-- a failed statement aborts the transaction and its registrations
BEGIN;
SELECT lance_parts.register_part(:'t', :'p300') AS position;
SELECT 1 / 0;
ROLLBACK;
SELECT array_agg(num_rows ORDER BY position) AS after_commit FROM lance_parts.registered_parts(:'t');
SELECT lance_parts.clear_parts(:'t') AS cleared;

-- parts that cannot be assembled into the target are refused
SELECT lance_parts.create_target(:'work' || '/blob.lance') AS t_blob \gset
SELECT x.name, lp_test.outcome_detail(format('SELECT lance_parts.register_part(%L, %L, %s)', x.target, x.part, coalesce(x.expected::text, 'NULL'))) AS register_part
FROM (VALUES
  ('2.1 part', :'t'::jsonb, pg_temp.part_path('types_2_1_v2', 0), NULL::bigint),
  ('2.0 part', :'t'::jsonb, pg_temp.part_path('types_2_0_v2', 0), NULL),
  ('legacy part', :'t'::jsonb, pg_temp.part_path('types_legacy_v2', 0), NULL),
  ('other schema', :'t'::jsonb, pg_temp.part_path('multipage_2_2', 0), NULL),
  ('blob part, blob dataset', :'t_blob'::jsonb, pg_temp.part_path('blob_2_2', 0), NULL),
  ('wrong expected rows', :'t'::jsonb, :'p45', 44),
  ('negative expected rows', :'t'::jsonb, :'p45', -1),
  ('missing part', :'t'::jsonb, :'work' || '/missing.lance', NULL),
  ('directory', :'t'::jsonb, :'work', NULL),
  ('NULL part', :'t'::jsonb, NULL, NULL)) x(name, target, part, expected)
ORDER BY 1;
SELECT lance_parts.register_part(:'t', :'p170') AS position;
SELECT lance_parts.register_part(:'t', :'p45', 45) AS position;
SELECT lance_parts.register_part(:'t', :'p300', 300) AS position;
SELECT array_agg(num_rows ORDER BY position) AS registered FROM lance_parts.registered_parts(:'t');
SELECT count(*) AS blob_parts FROM lance_parts.registered_parts(:'t_blob');

-- ---- assemble from the registry, commit ------------------------------------

SELECT pg_temp.snapshot(:'work' || '/reg.lance') AS reg_before \gset
SELECT status, reason, version, num_rows,
       path = (:'t'::jsonb->>'data_dir') || '/' || (:'t'::jsonb->>'file_name') AS path_ok
FROM lance_parts.assemble(:'t');
-- the file holds the registered parts' pages in registration order
SELECT jsonb_agg(num_rows ORDER BY page_index) AS id_column_pages
FROM lance_parts.file_pages((:'t'::jsonb->>'data_dir') || '/' || (:'t'::jsonb->>'file_name'))
WHERE column_index = 0;
SELECT jsonb_agg(p.num_rows ORDER BY u.ord, p.page_index) AS registered_pages
FROM unnest(ARRAY[:'p170', :'p45', :'p300']) WITH ORDINALITY u(path, ord), lance_parts.file_pages(u.path) p
WHERE p.column_index = 0;

-- commit: a new version with one more fragment
SELECT * FROM lance_parts.commit(:'t');
SELECT lp_test.entries(:'work' || '/reg.lance/_versions') AS versions;
-- committing the same target again is refused, and adds no version
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.commit(%L)', :'t')) AS commit_again;
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.commit(%L, ''replace'', 0)', :'t')) AS replace_with_it;
SELECT count(*) AS manifests FROM pg_ls_dir(:'work' || '/reg.lance/_versions') f WHERE f LIKE '%.manifest';
-- a committed file is not removed
SELECT lp_test.outcome_detail(format('SELECT lance_parts.cleanup_target(%L)', :'t')) AS cleanup_target;
SELECT pg_temp.target_file_exists(:'t') AS still_there;
-- assembling the committed target again does not replace its file
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.assemble(%L)', :'t')) AS assemble_again;

-- the same on a dataset with the V1 manifest naming scheme
SELECT status, num_rows FROM lance_parts.assemble(:'t_v1', ARRAY[:'p300', :'p45']);
SELECT * FROM lance_parts.commit(:'t_v1');
SELECT lp_test.entries(:'work' || '/v1.lance/_versions') AS versions;

-- a registered part that changed since its registration is refused
SELECT lance_parts.create_target(:'work' || '/reg.lance') AS t2 \gset
SELECT lp_test.put(:'work' || '/changing.lance', pg_read_binary_file(:'p45')) AS changing \gset
SELECT lance_parts.register_part(:'t2', :'changing') AS position;
SELECT lp_test.put(:'work' || '/changing.lance', pg_read_binary_file(:'p170')) IS NOT NULL AS replaced;
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.assemble(%L)', :'t2')) AS assemble;
SELECT pg_temp.target_file_exists(:'t2') AS written;
-- with nothing registered
SELECT lance_parts.clear_parts(:'t2') AS cleared;
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.assemble(%L)', :'t2')) AS assemble;

-- commit errors
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.commit(%L)', :'t2')) AS not_assembled;
SELECT status FROM lance_parts.assemble(:'t2', ARRAY[:'p45']);
SELECT pg_temp.snapshot(:'work' || '/reg.lance') AS reg_before \gset
SELECT m.mode, m.fragment_id,
       lp_test.outcome_detail(format('SELECT * FROM lance_parts.commit(%L, %L, %s)', :'t2', m.mode, coalesce(m.fragment_id::text, 'NULL'))) AS commit
FROM (VALUES ('bogus', NULL::bigint), (NULL, NULL), ('append', 1), ('replace', NULL), ('replace', -1),
             ('replace', 0), ('replace', 99)) m(mode, fragment_id);
-- no new version, no data file
SELECT pg_temp.snapshot(:'work' || '/reg.lance') - 'transactions' = :'reg_before'::jsonb - 'transactions' AS reg_unchanged;
-- replace: the file of fragment 2 (45 rows) by the assembled file
SELECT * FROM lance_parts.commit(:'t2', 'replace', 2);

-- cleanup_target of an uncommitted target removes its file, its staging
-- directory and its sidecar directory
SELECT lance_parts.create_target(:'work' || '/reg.lance') AS t3 \gset
SELECT lance_parts.staging_dir(:'t3') AS staging3 \gset
SELECT status FROM lance_parts.assemble(:'t3', ARRAY[:'p45']);
SELECT lp_test.sh(format('mkdir -p %1$s && cp %2$s %1$s/part-0.lance && mkdir -p %3$s && touch %3$s/sidecar',
                         :'staging3', :'p45',
                         (:'t3'::jsonb->>'data_dir') || '/' || replace(:'t3'::jsonb->>'file_name', '.lance', '')));
SELECT lance_parts.cleanup_target(:'t3') AS removed;
SELECT pg_temp.target_file_exists(:'t3') AS file_exists,
       lp_test.entries(:'staging3') IS NULL AS staging_removed,
       lp_test.entries((:'t3'::jsonb->>'data_dir') || '/' || replace(:'t3'::jsonb->>'file_name', '.lance', '')) IS NULL AS sidecars_removed;
SELECT lance_parts.cleanup_target(:'t3') AS removed_again;

-- a commit removes the staging directory of its parts
SELECT lance_parts.create_target(:'work' || '/reg.lance') AS t4 \gset
SELECT lance_parts.staging_dir(:'t4') AS staging4 \gset
SELECT lp_test.sh(format('mkdir -p %1$s && cp %2$s %1$s/part-0.lance', :'staging4', :'p170'));
SELECT lance_parts.register_part(:'t4', :'staging4' || 'part-0.lance', 170) AS position;
SELECT status, num_rows FROM lance_parts.assemble(:'t4');
SELECT dataset_version, fragment_id FROM lance_parts.commit(:'t4');
SELECT lp_test.entries(:'staging4') IS NULL AS staging_removed;
SELECT lp_test.entries(:'work' || '/reg.lance/data/_parts') AS parts_dir;

-- ---- a target used with another dataset (issue 4, item 4) ------------------

-- two datasets with the same schema, each with a version of its own
SELECT lance_parts.create_target(:'work' || '/first.lance') AS tf0,
       lance_parts.create_target(:'work' || '/second.lance') AS ts0 \gset
SELECT status FROM lance_parts.assemble(:'tf0', ARRAY[:'p45']);
SELECT status FROM lance_parts.assemble(:'ts0', ARRAY[:'p170']);
SELECT dataset_version FROM lance_parts.commit(:'tf0');
SELECT dataset_version FROM lance_parts.commit(:'ts0');
-- a target made for the first, and a part registered for it
SELECT lance_parts.create_target(:'work' || '/first.lance') AS tf \gset
SELECT lance_parts.register_part(:'tf', :'p45') AS position;
-- pointing it to the second dataset breaks its signature
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.assemble(%L, ARRAY[%L])',
                              jsonb_set(:'tf', '{dataset}', to_jsonb(:'work' || '/second.lance')), :'p45')) AS edited_dataset;
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.assemble(%L, ARRAY[%L])',
                              jsonb_set(jsonb_set(jsonb_set(:'tf', '{dataset}', to_jsonb(:'work' || '/second.lance')),
                                                  '{base_path}', to_jsonb(:'work' || '/second.lance')),
                                        '{data_dir}', to_jsonb(:'work' || '/second.lance/data')), :'p45')) AS edited_paths;
-- the first dataset is moved away and the second takes its path
SELECT pg_temp.snapshot(:'work' || '/second.lance') AS second_before \gset
SELECT lp_test.sh(format('mv %1$s/first.lance %1$s/first-moved.lance && mv %1$s/second.lance %1$s/first.lance', :'work'));
SELECT f.fn, lp_test.outcome_detail(format(f.call, :'tf', :'p45')) AS error
FROM (VALUES (1, 'register_part', 'SELECT lance_parts.register_part(%L, %L)'),
             (2, 'registered_parts', 'SELECT * FROM lance_parts.registered_parts(%L)'),
             (3, 'clear_parts', 'SELECT lance_parts.clear_parts(%L)'),
             (4, 'assemble', 'SELECT * FROM lance_parts.assemble(%L)'),
             (5, 'assemble parts', 'SELECT * FROM lance_parts.assemble(%L, ARRAY[%L])'),
             (6, 'commit', 'SELECT * FROM lance_parts.commit(%L)'),
             (7, 'cleanup_target', 'SELECT lance_parts.cleanup_target(%L)'),
             (8, 'staging_dir', 'SELECT lance_parts.staging_dir(%L)')) f(ord, fn, call)
ORDER BY f.ord;
-- nothing was written to the second dataset
SELECT pg_temp.snapshot(:'work' || '/first.lance') = :'second_before'::jsonb AS second_unchanged;
-- moved back, the target works again
SELECT lp_test.sh(format('mv %1$s/first.lance %1$s/second.lance && mv %1$s/first-moved.lance %1$s/first.lance', :'work'));
SELECT status, num_rows FROM lance_parts.assemble(:'tf');
SELECT dataset_version FROM lance_parts.commit(:'tf');
-- a dataset that disappeared
SELECT lp_test.sh(format('mv %1$s/second.lance %1$s/second-moved.lance', :'work'));
SELECT lance_parts.create_target(:'work' || '/second-moved.lance') AS ts \gset
SELECT lp_test.sh(format('mv %1$s/second-moved.lance %1$s/second.lance', :'work'));
SELECT lp_test.outcome_detail(format('SELECT lance_parts.staging_dir(%L)', :'ts')) AS gone;

-- ---- privileges ------------------------------------------------------------

CREATE ROLE lance_parts_reader_004;
CREATE ROLE lance_parts_writer_004;
CREATE ROLE lance_parts_nobody_004;
GRANT pg_read_server_files TO lance_parts_reader_004, lance_parts_writer_004;
GRANT pg_write_server_files TO lance_parts_writer_004;
SELECT lance_parts.create_target(:'work' || '/reg.lance') AS t5 \gset
CREATE TEMP TABLE privileged_call (ord int, fn text, call text);
INSERT INTO privileged_call VALUES
  (1, 'create_target', format('SELECT lance_parts.create_target(%L)', :'work' || '/reg.lance')),
  (2, 'register_part', format('SELECT lance_parts.register_part(%L, %L)', :'t5', :'p45')),
  (3, 'assemble', format('SELECT * FROM lance_parts.assemble(%L, ARRAY[%L])', :'t5', :'p45')),
  (4, 'commit', format('SELECT * FROM lance_parts.commit(%L)', :'t5')),
  (5, 'cleanup_target', format('SELECT lance_parts.cleanup_target(%L)', :'t5')),
  (6, 'concat_files', format('SELECT * FROM lance_parts.concat_files(%L, ARRAY[%L])', :'work' || '/perm.lance', :'p45'));
GRANT SELECT ON privileged_call TO PUBLIC;
SET ROLE lance_parts_nobody_004;
SELECT fn, lp_test.outcome_detail(call) AS nobody FROM privileged_call ORDER BY ord;
RESET ROLE;
SET ROLE lance_parts_reader_004;
SELECT fn, lp_test.outcome_detail(call) AS reader FROM privileged_call ORDER BY ord;
RESET ROLE;
SELECT pg_temp.target_file_exists(:'t5') AS written_by_nobody;
SET ROLE lance_parts_writer_004;
SELECT status, num_rows FROM lance_parts.assemble(:'t5', ARRAY[:'p45']);
SELECT dataset_version FROM lance_parts.commit(:'t5');
RESET ROLE;
DROP ROLE lance_parts_reader_004, lance_parts_writer_004, lance_parts_nobody_004;

-- ---- another session -------------------------------------------------------

SELECT lance_parts.create_target(:'work' || '/reg.lance') AS t6 \gset
SELECT lance_parts.register_part(:'t6', :'p45') AS position;
\c
SET lance_parts.publish_at = call;
\set VERBOSITY terse
-- the target is still valid; the registry was the other session's
SELECT lance_parts.staging_dir(:'t6') = (:'t6'::jsonb->>'data_dir') || '/_parts/' || (:'t6'::jsonb->>'file_name') || '/' AS staging_ok;
SELECT count(*) AS parts FROM lance_parts.registered_parts(:'t6');
SELECT status, num_rows FROM lance_parts.assemble(:'t6', ARRAY[:'p45', :'p45']);
SELECT dataset_version, fragment_id FROM lance_parts.commit(:'t6');

SELECT format('rm -rf %s', :'work') AS cleanup \gset
COPY (SELECT 1 WHERE false) TO PROGRAM :'cleanup';
