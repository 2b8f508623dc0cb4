/* extension/pg_cachelab/pg_cachelab--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_cachelab" to load this file. \quit

-- One row per relation fork present in shared_buffers. mode: 'consistent' reads each buffer
-- header under its header lock (as pg_buffercache does); 'fast' takes no lock at all;
-- 'semiconsistent' holds one buffer-mapping partition lock at a time and counts the buffers
-- mapped to it; 'snapshot' holds them all for one pass (as pg_buffercache did before 10).
-- The library validates the mode, so a newer library adds modes to this same definition.
CREATE FUNCTION pg_cachelab_relations(
    mode text DEFAULT 'consistent',
    OUT reldatabase oid,
    OUT reltablespace oid,
    OUT relfilenode oid,
    OUT relforknumber int2,
    OUT buffers int8,
    OUT dirty int8,
    OUT pinned int8,
    OUT usage_count_0 int8,
    OUT usage_count_1 int8,
    OUT usage_count_2 int8,
    OUT usage_count_3 int8,
    OUT usage_count_4 int8,
    OUT usage_count_5 int8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_cachelab_relations'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

-- Totals over all of shared_buffers: used buffers hold a valid page of some relation.
CREATE FUNCTION pg_cachelab_totals(
    mode text DEFAULT 'consistent',
    OUT buffers_total int8,
    OUT buffers_used int8,
    OUT buffers_free int8,
    OUT buffers_dirty int8,
    OUT buffers_pinned int8)
AS 'MODULE_PATHNAME', 'pg_cachelab_totals'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

-- Like pg_buffercache: what is in the cache is not for everybody to see.
REVOKE ALL ON FUNCTION pg_cachelab_relations(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_cachelab_totals(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pg_cachelab_relations(text) TO pg_monitor;
GRANT EXECUTE ON FUNCTION pg_cachelab_totals(text) TO pg_monitor;
