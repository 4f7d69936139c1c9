-- lance_parts 0.1.0 -> 0.2.0
\echo Use "ALTER EXTENSION lance_parts UPDATE TO '0.2.0'" to load this file. \quit

-- Every change to lance_parts--0.2.0.sql is made here too, so that an updated
-- 0.1.0 installation has exactly the objects of a fresh 0.2.0 one.

-- What crashes and lost races leave in a dataset: temporary files,
-- unreferenced transaction and data files, sidecar and staging directories.
-- Lists them (dry_run) or removes those older than older_than.

CREATE FUNCTION @extschema@.cleanup_orphans(
    dataset_uri text,
    older_than interval DEFAULT '1 day',
    dry_run boolean DEFAULT true)
RETURNS TABLE(path text, kind text, bytes bigint, action text, reason text)
AS 'MODULE_PATHNAME', 'lp_cleanup_orphans'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 10;

COMMENT ON FUNCTION @extschema@.cleanup_orphans(text, interval, boolean) IS
'List (dry_run) or remove the entries of a dataset that no version references and that are older than older_than: temporary files, transaction files, data files, sidecar and staging directories';
