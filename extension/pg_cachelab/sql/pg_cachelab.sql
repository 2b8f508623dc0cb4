CREATE EXTENSION pg_cachelab;

-- totals cover every buffer
SELECT t.buffers_total = s.setting::int8 AS total_is_shared_buffers,
       t.buffers_used + t.buffers_free = t.buffers_total AS used_plus_free_is_total,
       t.buffers_used > 0 AS some_used
FROM pg_cachelab_totals() t, pg_settings s
WHERE s.name = 'shared_buffers';

-- one row per relation fork, each histogram adds up to its buffers
SELECT mode,
       count(*) > 0 AS some_relations,
       count(*) = count(DISTINCT (reldatabase, reltablespace, relfilenode, relforknumber))
         AS one_row_per_fork,
       bool_and(buffers = usage_count_0 + usage_count_1 + usage_count_2 + usage_count_3
                          + usage_count_4 + usage_count_5) AS histogram_adds_up,
       bool_and(dirty <= buffers AND pinned <= buffers) AS flags_within_buffers
FROM unnest(ARRAY['consistent', 'fast', 'semiconsistent', 'snapshot']) AS mode,
     LATERAL pg_cachelab_relations(mode)
GROUP BY mode
ORDER BY mode;

-- on an idle server every mode counts the same buffers
SELECT count(DISTINCT (t.buffers_total, t.buffers_used)) AS modes_agree
FROM unnest(ARRAY['consistent', 'fast', 'semiconsistent', 'snapshot']) AS mode,
     LATERAL pg_cachelab_totals(mode) t;

SELECT count(*) FROM pg_cachelab_relations('nonconsistent');
SELECT * FROM pg_cachelab_totals('');

-- a caller whose row type is not the one the library fills is refused, not given a row of
-- other types
CREATE FUNCTION relations_of_another_version(mode text, OUT reldatabase oid, OUT buffers int8)
RETURNS SETOF record AS 'pg_cachelab', 'pg_cachelab_relations' LANGUAGE C STRICT;
SELECT * FROM relations_of_another_version('fast');
CREATE FUNCTION totals_of_another_version(mode text, OUT buffers_total int8, OUT used int8)
AS 'pg_cachelab', 'pg_cachelab_totals' LANGUAGE C STRICT;
SELECT * FROM totals_of_another_version('fast');
DROP FUNCTION relations_of_another_version(text), totals_of_another_version(text);

-- what is in the cache is not for everybody to see (as in pg_buffercache's test): a role
-- without privileges is refused (pg_database_owner stands for one, so the test creates no
-- role), and pg_monitor may call both functions
SET ROLE pg_database_owner;
SELECT count(*) FROM pg_cachelab_relations();
SELECT * FROM pg_cachelab_totals();
RESET ROLE;
SET ROLE pg_monitor;
SELECT count(*) > 0 AS some_relations FROM pg_cachelab_relations('fast');
SELECT buffers_used > 0 AS some_used FROM pg_cachelab_totals('fast');
SELECT count(*) > 0 AS some_relations FROM pg_cachelab_relations('semiconsistent');
SELECT buffers_used > 0 AS some_used FROM pg_cachelab_totals('snapshot');
RESET ROLE;
