"""The five transactions as statements sent from the client (mode "client", issue 39).

Each pgbench script draws the terminal's inputs as in the procedures mode (scripts.py), then
sends the transaction's statements one at a time, as the client-side drivers (BenchBase,
go-tpc) do: round trips, parsing and planning are part of what is measured. pgbench runs with
-M prepared, so each statement is planned once per connection and the variables travel as
parameters, never spliced into the SQL text. The statements match the server-side functions
of sql/transactions.sql one for one, so both modes change the database in the same way.

A script cannot loop, so New-Order's fifteen possible lines and Delivery's ten districts are
written out, each behind a `\\if`. pgbench's `\\gset` fails on an empty result, so the
look-ups that may find nothing (the unused item, a district without new-orders) aggregate to
one row. Pure: text in, text out.
"""

from pgcachelab.workloads.tpcc.params import DISTRICTS_PER_WAREHOUSE
from pgcachelab.workloads.tpcc.scripts import (
    MAX_ORDER_LINES,
    ScriptParameters,
    delivery_inputs,
    new_order_inputs,
    order_status_inputs,
    payment_inputs,
    stock_level_inputs,
)

# Clause 2.5.2.2: of the customers with the last name, sorted by C_FIRST, the one at
# position ceil(n / 2). Customer id 0 from the inputs asks for it.
_CUSTOMER_BY_NAME = (
    "select (array_agg(c_id order by c_first))[(count(*)::integer + 1) / 2] as c_id"
    " from tpcc.customer where c_w_id = :{w} and c_d_id = :{d}"
    " and c_last = tpcc.last_name(:name_number) \\gset"
)

_DIST_INFO = (
    "case :d_id::integer when 1 then s_dist_01 when 2 then s_dist_02 when 3 then s_dist_03"
    " when 4 then s_dist_04 when 5 then s_dist_05 when 6 then s_dist_06 when 7 then s_dist_07"
    " when 8 then s_dist_08 when 9 then s_dist_09 else s_dist_10 end"
)


def _script(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _customer_by_name(warehouse: str, district: str) -> list[str]:
    return ["\\if :c_id = 0", _CUSTOMER_BY_NAME.format(w=warehouse, d=district), "\\endif"]


def _all_local_lines(params: ScriptParameters) -> list[str]:
    """:all_local (O_ALL_LOCAL): 1 when every used line is supplied by the home warehouse."""
    if params.warehouses == 1:
        return ["\\set all_local 1"]
    lines = ["\\set all_local 1"]
    for n in range(1, MAX_ORDER_LINES + 1):
        lines.append(
            f"\\set all_local case when :ol_cnt >= {n} and :s{n} <> :w_id then 0"
            " else :all_local end"
        )
    return lines


def _order_line(n: int) -> list[str]:
    """Line n of New-Order: the item (clause 2.4.2.2), its stock, the order line. An unused
    item leaves :found at 0 and the transaction is rolled back at the end (clause 2.4.2.3)."""
    return [
        f"\\if :found = 1 and :ol_cnt >= {n}",
        "select coalesce(max(i_price), -1) as i_price, max(i_name) as i_name,"
        f" max(i_data) as i_data from tpcc.item where i_id = :i{n} \\gset",
        "\\if :i_price < 0",
        "\\set found 0",
        "\\else",
        f"update tpcc.stock set s_quantity = case when s_quantity >= :q{n}::integer + 10"
        f" then s_quantity - :q{n}::integer else s_quantity - :q{n}::integer + 91 end,"
        f" s_ytd = s_ytd + :q{n}::integer, s_order_cnt = s_order_cnt + 1,"
        f" s_remote_cnt = s_remote_cnt + case when :s{n}::integer = :w_id::integer then 0"
        " else 1 end"
        f" where s_w_id = :s{n} and s_i_id = :i{n}"
        f" returning s_data, {_DIST_INFO} as dist_info \\gset",
        "insert into tpcc.order_line (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id,"
        " ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)"
        f" values (:w_id, :d_id, :o_id, {n}, :i{n}, :s{n}, null, :q{n},"
        f" :q{n}::integer * :i_price::numeric, :dist_info);",
        "\\endif",
        "\\endif",
    ]


def new_order(params: ScriptParameters) -> str:
    # Stock rows are updated in line order, as a client sends them; two New-Orders that
    # lock the same rows in opposite orders deadlock, and pgbench (15+) retries the loser.
    lines = [
        *new_order_inputs(params),
        *_all_local_lines(params),
        "begin;",
        "select w_tax from tpcc.warehouse where w_id = :w_id \\gset",
        "update tpcc.district set d_next_o_id = d_next_o_id + 1"
        " where d_w_id = :w_id and d_id = :d_id returning d_next_o_id - 1 as o_id, d_tax \\gset",
        "select c_discount, c_last, c_credit from tpcc.customer"
        " where c_w_id = :w_id and c_d_id = :d_id and c_id = :c_id \\gset",
        "insert into tpcc.orders (o_w_id, o_d_id, o_id, o_c_id, o_carrier_id, o_ol_cnt,"
        " o_all_local, o_entry_d)"
        " values (:w_id, :d_id, :o_id, :c_id, null, :ol_cnt, :all_local, localtimestamp);",
        "insert into tpcc.new_order (no_w_id, no_d_id, no_o_id) values (:w_id, :d_id, :o_id);",
        "\\set found 1",
    ]
    for n in range(1, MAX_ORDER_LINES + 1):
        lines += _order_line(n)
    lines += [
        "\\if :found = 1",
        "commit;",
        "\\else",
        # nextval is not rolled back: the count of rolled-back New-Orders survives
        "select nextval('tpcc.rollbacks');",
        "rollback;",
        "\\endif",
    ]
    return _script(lines)


def payment(params: ScriptParameters) -> str:
    amount = ":amount_cents::integer / 100.0"
    lines = [
        *payment_inputs(params),
        "begin;",
        f"update tpcc.warehouse set w_ytd = w_ytd + {amount} where w_id = :w_id"
        " returning w_name \\gset",
        f"update tpcc.district set d_ytd = d_ytd + {amount}"
        " where d_w_id = :w_id and d_id = :d_id returning d_name \\gset",
        *_customer_by_name("c_w_id", "c_d_id"),
        f"update tpcc.customer set c_balance = c_balance - {amount},"
        f" c_ytd_payment = c_ytd_payment + {amount}, c_payment_cnt = c_payment_cnt + 1,"
        " c_data = case when c_credit = 'BC'"
        " then left(format('%s %s %s %s %s %s|', c_id, c_d_id, c_w_id, :d_id::integer,"
        f" :w_id::integer, {amount}) || c_data, 500) else c_data end"
        " where c_w_id = :c_w_id and c_d_id = :c_d_id and c_id = :c_id"
        " returning c_balance, c_credit \\gset",
        "insert into tpcc.history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date,"
        " h_amount, h_data)"
        f" values (:c_id, :c_d_id, :c_w_id, :d_id, :w_id, localtimestamp, {amount},"
        " :w_name::text || '    ' || :d_name::text);",
        "commit;",
    ]
    return _script(lines)


def order_status(params: ScriptParameters) -> str:
    lines = [
        *order_status_inputs(params),
        "begin;",
        *_customer_by_name("w_id", "d_id"),
        "select c_balance, c_first, c_middle, c_last from tpcc.customer"
        " where c_w_id = :w_id and c_d_id = :d_id and c_id = :c_id \\gset",
        "select o_id, coalesce(o_carrier_id, 0) as o_carrier_id, o_entry_d from tpcc.orders"
        " where o_w_id = :w_id and o_d_id = :d_id and o_c_id = :c_id"
        " order by o_id desc limit 1 \\gset",
        # the lines come back to the client, which throws them away
        "select ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d"
        " from tpcc.order_line where ol_w_id = :w_id and ol_d_id = :d_id and ol_o_id = :o_id;",
        "commit;",
    ]
    return _script(lines)


def _deliver_district(district: int) -> list[str]:
    # Waits for a concurrent Delivery's lock on the oldest new-order rather than skipping
    # it (clause 2.7.4.2, issue 39); see tpcc.delivery in sql/transactions.sql.
    return [
        "with delivered as (delete from tpcc.new_order"
        f" where no_w_id = :w_id and no_d_id = {district}"
        " and no_o_id = (select no_o_id from tpcc.new_order"
        f" where no_w_id = :w_id and no_d_id = {district}"
        " order by no_o_id limit 1 for update) returning no_o_id)"
        " select coalesce(max(no_o_id), 0) as o_id from delivered \\gset",
        "\\if :o_id > 0",
        "update tpcc.orders set o_carrier_id = :carrier_id"
        f" where o_w_id = :w_id and o_d_id = {district} and o_id = :o_id returning o_c_id \\gset",
        "with lines as (update tpcc.order_line set ol_delivery_d = localtimestamp"
        f" where ol_w_id = :w_id and ol_d_id = {district} and ol_o_id = :o_id"
        " returning ol_amount) select coalesce(sum(ol_amount), 0) as total from lines \\gset",
        "update tpcc.customer set c_balance = c_balance + :total::numeric,"
        " c_delivery_cnt = c_delivery_cnt + 1"
        f" where c_w_id = :w_id and c_d_id = {district} and c_id = :o_c_id;",
        "\\endif",
    ]


def delivery(params: ScriptParameters) -> str:
    lines = [*delivery_inputs(params), "begin;"]
    for district in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        lines += _deliver_district(district)
    lines.append("commit;")
    return _script(lines)


def stock_level(params: ScriptParameters) -> str:
    # Clause 2.8.2.3 allows each statement its own snapshot: no transaction block.
    lines = [
        *stock_level_inputs(params),
        "select d_next_o_id from tpcc.district where d_w_id = :w_id and d_id = :d_id \\gset",
        "select count(distinct s_i_id) as low_stock from tpcc.order_line"
        " join tpcc.stock on s_w_id = :w_id and s_i_id = ol_i_id"
        " where ol_w_id = :w_id and ol_d_id = :d_id"
        " and ol_o_id >= :d_next_o_id::integer - 20 and ol_o_id < :d_next_o_id"
        " and s_quantity < :threshold \\gset",
    ]
    return _script(lines)


RENDERERS = {
    "new_order": new_order,
    "payment": payment,
    "order_status": order_status,
    "delivery": delivery,
    "stock_level": stock_level,
}
