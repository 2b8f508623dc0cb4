-- Sixteen random pgbench_accounts rows in one statement (big-cache-quick): the pages a
-- transaction touches, not its round trip, decide its time, so a miss of shared_buffers shows.
\set a1 random(1, 100000 * :scale)
\set a2 random(1, 100000 * :scale)
\set a3 random(1, 100000 * :scale)
\set a4 random(1, 100000 * :scale)
\set a5 random(1, 100000 * :scale)
\set a6 random(1, 100000 * :scale)
\set a7 random(1, 100000 * :scale)
\set a8 random(1, 100000 * :scale)
\set a9 random(1, 100000 * :scale)
\set a10 random(1, 100000 * :scale)
\set a11 random(1, 100000 * :scale)
\set a12 random(1, 100000 * :scale)
\set a13 random(1, 100000 * :scale)
\set a14 random(1, 100000 * :scale)
\set a15 random(1, 100000 * :scale)
\set a16 random(1, 100000 * :scale)
SELECT sum(abalance) FROM pgbench_accounts WHERE aid IN (:a1, :a2, :a3, :a4, :a5, :a6, :a7, :a8, :a9, :a10, :a11, :a12, :a13, :a14, :a15, :a16);
