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
FROM unnest(ARRAY['consistent', 'fast']) AS mode,
     LATERAL pg_cachelab_relations(mode)
GROUP BY mode
ORDER BY mode;

SELECT count(*) FROM pg_cachelab_relations('snapshot');
SELECT * FROM pg_cachelab_totals('');
