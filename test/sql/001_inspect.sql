-- Inspection functions on every data file the reference implementation wrote.
\set VERBOSITY terse
CREATE EXTENSION lance_parts;
\getenv testdata LP_TESTDATA

CREATE TEMP TABLE reference AS
SELECT d->>'name' AS dataset,
       d->>'file_version' AS file_version,
       (d->>'expected_num_columns')::int AS num_columns,
       coalesce(d->'footer_fields', d->'expected_fields') AS fields,
       d->>'path' || '/data/' || (f->>'file') AS path,
       (f->>'num_rows')::bigint AS num_rows,
       (f->>'file_size_bytes')::bigint AS size_bytes,
       f->'page_rows' AS page_rows
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d,
     jsonb_array_elements(d->'data_files') f;

-- file_info agrees with the reference on every file
SELECT r.dataset, r.file_version, count(*) AS files,
       bool_and(i.version = r.file_version) AS version_ok,
       bool_and(i.num_rows IS NOT DISTINCT FROM
                CASE WHEN r.file_version = 'legacy' THEN NULL ELSE r.num_rows END) AS rows_ok,
       bool_and(i.num_columns IS NOT DISTINCT FROM r.num_columns) AS columns_ok,
       bool_and(i.num_global_buffers IS NOT DISTINCT FROM
                CASE WHEN r.file_version = 'legacy' THEN NULL ELSE 1 END) AS buffers_ok,
       bool_and(i.size_bytes = r.size_bytes) AS size_ok
FROM reference r, lance_parts.file_info(r.path) i
GROUP BY 1, 2 ORDER BY 1;

-- file_schema: field ids, parents, names, logical types and nullability, in
-- order (blob v2 files store their own footer shape, with pseudo-fields)
SELECT r.dataset,
       bool_and(s.fields = e.fields) AS fields_ok
FROM reference r
CROSS JOIN LATERAL (
    SELECT jsonb_agg(jsonb_build_object('id', field_id, 'parent_id', parent_id,
                                        'name', name, 'logical_type', logical_type,
                                        'nullable', nullable) ORDER BY ord) AS fields
    FROM lance_parts.file_schema(r.path) WITH ORDINALITY AS x(field_id, parent_id, name, logical_type, nullable, metadata, ord)) s
CROSS JOIN LATERAL (
    SELECT jsonb_agg(jsonb_build_object('id', f->'id', 'parent_id', f->'parent_id',
                                        'name', f->'name', 'logical_type', f->'logical_type',
                                        'nullable', f->'nullable') ORDER BY ord) AS fields
    FROM jsonb_array_elements(r.fields) WITH ORDINALITY AS y(f, ord)) e
GROUP BY 1 ORDER BY 1;

-- file_pages: page rows per column as written
SELECT r.dataset,
       bool_and(p.page_rows = r.page_rows) AS page_rows_ok,
       max(p.pages) AS max_pages_per_column
FROM reference r
CROSS JOIN LATERAL (
    SELECT jsonb_agg(rows ORDER BY column_index) AS page_rows, max(n) AS pages
    FROM (SELECT column_index, jsonb_agg(num_rows ORDER BY page_index) AS rows, count(*) AS n
          FROM lance_parts.file_pages(r.path) GROUP BY column_index) c) p
WHERE r.file_version <> 'legacy'
GROUP BY 1 ORDER BY 1;

-- layouts of one 2.2 file, by column
SELECT p.column_index, p.layout, p.num_rows, p.buffer_count
FROM reference r, lance_parts.file_pages(r.path) p
WHERE r.dataset = 'types_2_2_v2' AND r.num_rows = 45
ORDER BY p.column_index, p.page_index;

-- 2.1+ priorities are the row number of each page's first row
SELECT r.dataset,
       bool_and(p.priority = p.first_row) AS priorities_ok
FROM reference r
CROSS JOIN LATERAL (
    SELECT priority,
           coalesce(sum(num_rows) OVER (PARTITION BY column_index ORDER BY page_index
                                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS first_row
    FROM lance_parts.file_pages(r.path)) p
WHERE r.file_version NOT IN ('legacy', '2.0') AND r.dataset LIKE 'multipage%'
GROUP BY 1 ORDER BY 1;

-- file:// URIs with escapes name the same file
SELECT (lance_parts.file_info('file://' || replace(path, '/data/', '/%64ata/'))).num_rows = num_rows AS uri_ok
FROM reference WHERE dataset = 'types_2_1_v1' ORDER BY num_rows LIMIT 1;
