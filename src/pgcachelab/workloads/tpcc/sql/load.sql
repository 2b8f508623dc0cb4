-- Row generators for the initial population (clause 4.3.3.1), run inside the server.
--
-- Random a-strings are substrings of a pool of random alphanumerics made once per call, at
-- random offsets and lengths: one substr per field instead of one random() per character,
-- which is what makes the load fast. The pool is bytea because substr on text counts
-- characters from the start in a multi-byte encoding (50 us per call on an 8 kB pool here,
-- against 0.4 us on bytea). The helpers are LANGUAGE sql with a single expression
-- so that the planner inlines them into the INSERT ... SELECT.

create function tpcc.random_int(lo integer, hi integer) returns integer
language sql volatile as $$ select lo + floor(random() * (hi - lo + 1))::integer $$;

-- NURand(A, x, y) of clause 2.1.6 with the constant C.
create function tpcc.nurand(a integer, x integer, y integer, c integer) returns integer
language sql volatile as $$
    select (((tpcc.random_int(0, a) | tpcc.random_int(x, y)) + c) % (y - x + 1)) + x
$$;

-- C_LAST from a number 0..999: three syllables, one per digit (clause 4.3.2.3).
create function tpcc.last_name(n integer) returns text
language sql immutable as $$
    select (array['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])
               [n / 100 + 1]
        || (array['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])
               [n / 10 % 10 + 1]
        || (array['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING'])
               [n % 10 + 1]
$$;

create function tpcc.random_pool() returns bytea
language sql volatile as $$
    select convert_to(string_agg(substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
                             1 + floor(random() * 62)::integer, 1), ''), 'UTF8')
    from generate_series(1, 8192)
$$;

-- A random a-string of lo..hi characters (clause 4.3.2.2).
create function tpcc.astring(pool bytea, lo integer, hi integer) returns text
language sql volatile as $$
    select convert_from(substr(pool, 1 + floor(random() * 7600)::integer,
                               tpcc.random_int(lo, hi)), 'UTF8')
$$;

-- A random n-string of exactly n digits, n <= 15.
create function tpcc.nstring(n integer) returns text
language sql volatile as $$
    select lpad(floor(random() * (10::bigint ^ n))::bigint::text, n, '0')
$$;

create function tpcc.zip() returns text
language sql volatile as $$ select tpcc.nstring(4) || '11111' $$;

create function tpcc.state() returns text
language sql volatile as $$
    select chr(65 + floor(random() * 26)::integer) || chr(65 + floor(random() * 26)::integer)
$$;

-- I_DATA / S_DATA: 26..50 characters, 10% with "ORIGINAL" at a random position (4.3.3.1).
create function tpcc.data_with_original(pool bytea) returns text
language sql volatile as $$
    select case when random() < 0.1
                then tpcc.astring(pool, 9, 21) || 'ORIGINAL' || tpcc.astring(pool, 9, 21)
                else tpcc.astring(pool, 26, 50) end
$$;

create function tpcc.load_items() returns void language plpgsql as $$
declare
    pool bytea := tpcc.random_pool();
begin
    insert into tpcc.item
    select i, tpcc.random_int(1, 10000), tpcc.astring(pool, 14, 24),
           tpcc.random_int(100, 10000) / 100.0, tpcc.data_with_original(pool)
    from generate_series(1, 100000) i;
end $$;

create function tpcc.load_warehouse(w integer) returns void language plpgsql as $$
declare
    pool bytea := tpcc.random_pool();
begin
    insert into tpcc.warehouse
    values (w, 300000.00, tpcc.random_int(0, 2000) / 10000.0, tpcc.astring(pool, 6, 10),
            tpcc.astring(pool, 10, 20), tpcc.astring(pool, 10, 20), tpcc.astring(pool, 10, 20),
            tpcc.state(), tpcc.zip());
    insert into tpcc.district
    select w, d, 30000.00, tpcc.random_int(0, 2000) / 10000.0, 3001, tpcc.astring(pool, 6, 10),
           tpcc.astring(pool, 10, 20), tpcc.astring(pool, 10, 20), tpcc.astring(pool, 10, 20),
           tpcc.state(), tpcc.zip()
    from generate_series(1, 10) d;
end $$;

create function tpcc.load_stock(w integer) returns void language plpgsql as $$
declare
    pool bytea := tpcc.random_pool();
begin
    insert into tpcc.stock
    select w, i, tpcc.random_int(10, 100), 0, 0, 0, tpcc.data_with_original(pool),
           tpcc.astring(pool, 24, 24), tpcc.astring(pool, 24, 24), tpcc.astring(pool, 24, 24),
           tpcc.astring(pool, 24, 24), tpcc.astring(pool, 24, 24), tpcc.astring(pool, 24, 24),
           tpcc.astring(pool, 24, 24), tpcc.astring(pool, 24, 24), tpcc.astring(pool, 24, 24),
           tpcc.astring(pool, 24, 24)
    from generate_series(1, 100000) i;
end $$;

create function tpcc.load_customers(w integer, c_last_load integer) returns void
language plpgsql as $$
declare
    pool bytea := tpcc.random_pool();
begin
    insert into tpcc.customer
    select w, d, c, tpcc.random_int(0, 5000) / 10000.0,
           case when random() < 0.1 then 'BC' else 'GC' end,
           -- the first 1,000 customers take each name once, the rest NURand (4.3.3.1)
           tpcc.last_name(case when c <= 1000 then c - 1
                               else tpcc.nurand(255, 0, 999, c_last_load) end),
           tpcc.astring(pool, 8, 16), 50000.00, -10.00, 10.00, 1, 0,
           tpcc.astring(pool, 10, 20), tpcc.astring(pool, 10, 20), tpcc.astring(pool, 10, 20),
           tpcc.state(), tpcc.zip(), tpcc.nstring(8) || tpcc.nstring(8), localtimestamp, 'OE',
           tpcc.astring(pool, 300, 500)
    from generate_series(1, 10) d, generate_series(1, 3000) c;
    insert into tpcc.history
    select c, d, w, d, w, localtimestamp, 10.00, tpcc.astring(pool, 12, 24)
    from generate_series(1, 10) d, generate_series(1, 3000) c;
end $$;

create function tpcc.load_orders(w integer) returns void language plpgsql as $$
declare
    pool bytea := tpcc.random_pool();
begin
    -- O_C_ID is a random permutation of 1..3000 per district.
    insert into tpcc.orders
    select w, d, o_id, c_id, case when o_id < 2101 then tpcc.random_int(1, 10) end,
           tpcc.random_int(5, 15), 1, localtimestamp
    from (select d, c as c_id, row_number() over (partition by d order by random())::integer o_id
          from generate_series(1, 10) d, generate_series(1, 3000) c) permutation;
    insert into tpcc.order_line
    select w, o.o_d_id, o.o_id, n, tpcc.random_int(1, 100000), w,
           case when o.o_id < 2101 then o.o_entry_d end, 5,
           case when o.o_id < 2101 then 0 else tpcc.random_int(1, 999999) / 100.0 end,
           tpcc.astring(pool, 24, 24)
    from tpcc.orders o, generate_series(1, o.o_ol_cnt) n
    where o.o_w_id = w;
    insert into tpcc.new_order
    select w, d, o_id from generate_series(1, 10) d, generate_series(2101, 3000) o_id;
end $$;
