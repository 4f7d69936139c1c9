-- lance_parts 0.2.0 -> 0.3.0
\echo Use "ALTER EXTENSION lance_parts UPDATE TO '0.3.0'" to load this file. \quit

-- Every change to lance_parts--0.3.0.sql is made here too, so that an updated
-- 0.2.0 installation has exactly the objects of a fresh 0.3.0 one.
