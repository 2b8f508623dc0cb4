-- Fails on every execution, so pgbench aborts its clients.
SELECT no_such_column FROM pgbench_accounts LIMIT 1;
