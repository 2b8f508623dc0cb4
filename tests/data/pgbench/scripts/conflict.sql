-- A tiny key range and REPEATABLE READ make concurrent clients collide, so pgbench
-- sees serialization failures and retries them (--max-tries).
\set aid random(1, 3)
BEGIN ISOLATION LEVEL REPEATABLE READ;
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
END;
