-- The nine TPC-C tables (clause 1.3), in their own schema so that a reload drops exactly what
-- the lab created. No keys yet: the loader adds them after the data (keys.sql).
create schema tpcc;

create table tpcc.load_info (
    warehouses integer not null,
    c_last_load integer not null,   -- C-Load of NURand(255, 0, 999) for C_LAST (clause 2.1.6)
    c_id integer not null,          -- C of NURand(1023, 1, 3000) for C_ID, used by every run
    c_ol_i_id integer not null,     -- C of NURand(8191, 1, 100000) for OL_I_ID
    loaded_at timestamptz not null default now(),
    load_seconds double precision,
    complete boolean not null default false
);

-- New-Orders rolled back on the unused item (clause 2.4.2.3): a sequence, because nextval
-- survives the rollback of the subtransaction that counts it.
create sequence tpcc.rollbacks;

create table tpcc.warehouse (
    w_id integer not null,
    w_ytd numeric(12, 2) not null,
    w_tax numeric(4, 4) not null,
    w_name varchar(10) not null,
    w_street_1 varchar(20) not null,
    w_street_2 varchar(20) not null,
    w_city varchar(20) not null,
    w_state char(2) not null,
    w_zip char(9) not null
);

create table tpcc.district (
    d_w_id integer not null,
    d_id integer not null,
    d_ytd numeric(12, 2) not null,
    d_tax numeric(4, 4) not null,
    d_next_o_id integer not null,
    d_name varchar(10) not null,
    d_street_1 varchar(20) not null,
    d_street_2 varchar(20) not null,
    d_city varchar(20) not null,
    d_state char(2) not null,
    d_zip char(9) not null
);

create table tpcc.customer (
    c_w_id integer not null,
    c_d_id integer not null,
    c_id integer not null,
    c_discount numeric(4, 4) not null,
    c_credit char(2) not null,
    c_last varchar(16) not null,
    c_first varchar(16) not null,
    c_credit_lim numeric(12, 2) not null,
    c_balance numeric(12, 2) not null,
    c_ytd_payment numeric(12, 2) not null,
    c_payment_cnt integer not null,
    c_delivery_cnt integer not null,
    c_street_1 varchar(20) not null,
    c_street_2 varchar(20) not null,
    c_city varchar(20) not null,
    c_state char(2) not null,
    c_zip char(9) not null,
    c_phone char(16) not null,
    c_since timestamp not null,
    c_middle char(2) not null,
    c_data varchar(500) not null
);

-- The specification gives HISTORY no primary key (clause 1.3.1).
create table tpcc.history (
    h_c_id integer not null,
    h_c_d_id integer not null,
    h_c_w_id integer not null,
    h_d_id integer not null,
    h_w_id integer not null,
    h_date timestamp not null,
    h_amount numeric(6, 2) not null,
    h_data varchar(24) not null
);

create table tpcc.new_order (
    no_w_id integer not null,
    no_d_id integer not null,
    no_o_id integer not null
);

create table tpcc.orders (
    o_w_id integer not null,
    o_d_id integer not null,
    o_id integer not null,
    o_c_id integer not null,
    o_carrier_id integer,
    o_ol_cnt integer not null,
    o_all_local integer not null,
    o_entry_d timestamp not null
);

create table tpcc.order_line (
    ol_w_id integer not null,
    ol_d_id integer not null,
    ol_o_id integer not null,
    ol_number integer not null,
    ol_i_id integer not null,
    ol_supply_w_id integer not null,
    ol_delivery_d timestamp,
    ol_quantity integer not null,
    ol_amount numeric(6, 2) not null,
    ol_dist_info char(24) not null
);

create table tpcc.item (
    i_id integer not null,
    i_im_id integer not null,
    i_name varchar(24) not null,
    i_price numeric(5, 2) not null,
    i_data varchar(50) not null
);

create table tpcc.stock (
    s_w_id integer not null,
    s_i_id integer not null,
    s_quantity integer not null,
    s_ytd integer not null,
    s_order_cnt integer not null,
    s_remote_cnt integer not null,
    s_data varchar(50) not null,
    s_dist_01 char(24) not null,
    s_dist_02 char(24) not null,
    s_dist_03 char(24) not null,
    s_dist_04 char(24) not null,
    s_dist_05 char(24) not null,
    s_dist_06 char(24) not null,
    s_dist_07 char(24) not null,
    s_dist_08 char(24) not null,
    s_dist_09 char(24) not null,
    s_dist_10 char(24) not null
);
