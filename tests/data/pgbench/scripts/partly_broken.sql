-- Client 0 fails in its first transaction and is aborted while the other clients finish,
-- so pgbench prints a full summary followed by "Run was aborted".
\if :client_id = 0
SELECT 1 / 0;
\endif
SELECT 1;
