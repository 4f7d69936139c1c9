-- lance_parts 0.2.0 -> 0.3.0
\echo Use "ALTER EXTENSION lance_parts UPDATE TO '0.3.0'" to load this file. \quit

-- Every change to lance_parts--0.3.0.sql is made here too, so that an updated
-- 0.2.0 installation has exactly the objects of a fresh 0.3.0 one.

-- Target keys ($PGDATA/lance_parts.key): the first signs new targets, every
-- one verifies them, so clusters given the same file accept each other's
-- targets.  Rotating and retiring take effect at once, not at commit, and
-- are for superusers only (checked in C as well).

CREATE FUNCTION @extschema@.target_keys(OUT key_id text, OUT signs boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_target_keys_sql'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 2;

COMMENT ON FUNCTION @extschema@.target_keys() IS
'The ids of the cluster''s target keys and which one signs new targets';

REVOKE ALL ON FUNCTION @extschema@.target_keys() FROM PUBLIC;

CREATE FUNCTION @extschema@.rotate_target_key()
RETURNS text
AS 'MODULE_PATHNAME', 'lp_rotate_target_key'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.rotate_target_key() IS
'Makes a new key the signing key of targets, keeping the others for verification; returns its id';

REVOKE ALL ON FUNCTION @extschema@.rotate_target_key() FROM PUBLIC;

CREATE FUNCTION @extschema@.retire_target_keys(key_ids text[] DEFAULT NULL)
RETURNS text[]
AS 'MODULE_PATHNAME', 'lp_retire_target_keys'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.retire_target_keys(text[]) IS
'Removes the named target keys (NULL: all but the signing key); targets they signed are refused from then on';

REVOKE ALL ON FUNCTION @extschema@.retire_target_keys(text[]) FROM PUBLIC;

-- Versions are published with the transaction (lance_parts.publish_at).

COMMENT ON FUNCTION @extschema@.write_dataset(text, text, text, text, bigint, text[]) IS
'Write the rows of a query as a new dataset (create), new fragments (append) or new contents (overwrite); published with the transaction (lance_parts.publish_at)';
