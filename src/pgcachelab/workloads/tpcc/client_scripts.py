"""The five transactions as statements sent from the client (mode "client", issues 39, 51).

Each pgbench script draws the terminal's inputs as in the procedures mode (scripts.py), then
sends the transaction's SQL from the client, as the client-side drivers (BenchmarkSQL, BenchBase,
go-tpc) do: round trips, parsing and planning are part of what is measured. pgbench runs with
-M prepared, so each statement is planned once per connection and the variables travel as
parameters, never spliced into the SQL text. The statements change the database as the
server-side functions of sql/transactions.sql do, row for row.

Issue 51 measured this mode at 0.38x the procedures' tpmC, at about 37 round trips per
New-Order and 42 per Delivery. It now sends fewer (BenchmarkSQL batches a New-Order's stock
updates and order lines the same way):
- what one step of a transaction reads and writes goes in one statement (data-modifying
  CTEs): a New-Order's district, order and new-order rows with the warehouse's and the
  customer's look-ups; all its lines' items, stock and order lines (line by line when an item
  comes twice from one warehouse); a Delivery's district; Payment whole, so that it needs no
  BEGIN or COMMIT; Order-Status and Stock-Level as one read each;
- statements whose results the script does not need go in one pipeline (pgbench's
  \\startpipeline, one round trip at its \\endpipeline): a New-Order's BEGIN, header and
  lines, Delivery from BEGIN to COMMIT. pgbench allows no \\gset in a pipeline: New-Order
  reads its line count after the pipeline, to commit or roll back (clause 2.4.2.3), three
  round trips in all.
A script cannot loop, so New-Order's fifteen possible lines and Delivery's ten districts are
written out, the lines each behind an `\\if`. Pure: text in, text out.
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
# position ceil(n / 2). Customer id 0 from the inputs asks for it; an initplan, run only then.
def _customer_id(warehouse: str, district: str) -> str:
    return (
        "case when :c_id::integer = 0 then (select (array_agg(c_id order by c_first))"
        "[(count(*)::integer + 1) / 2] from tpcc.customer"
        f" where c_w_id = :{warehouse} and c_d_id = :{district}"
        " and c_last = tpcc.last_name(:name_number)) else :c_id::integer end"
    )


_DIST_INFO = (
    "case :d_id::integer when 1 then s_dist_01 when 2 then s_dist_02 when 3 then s_dist_03"
    " when 4 then s_dist_04 when 5 then s_dist_05 when 6 then s_dist_06 when 7 then s_dist_07"
    " when 8 then s_dist_08 when 9 then s_dist_09 else s_dist_10 end"
)
# The order this New-Order took: the district row it updated, as this transaction sees it.
_ORDER_ID = "(select d_next_o_id - 1 from tpcc.district where d_w_id = :w_id and d_id = :d_id)"


def _script(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


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


def _new_order_header() -> str:
    """The district's next order id taken, the order and its new-order row written, and what
    the terminal shows of the warehouse, district and customer (clause 2.4.2.2)."""
    return (
        "with district as (update tpcc.district set d_next_o_id = d_next_o_id + 1"
        " where d_w_id = :w_id and d_id = :d_id returning d_next_o_id - 1 as o_id, d_tax),"
        " new_orders as (insert into tpcc.orders (o_w_id, o_d_id, o_id, o_c_id, o_carrier_id,"
        " o_ol_cnt, o_all_local, o_entry_d)"
        " select :w_id::integer, :d_id::integer, o_id, :c_id::integer, null, :ol_cnt::integer,"
        " :all_local::integer, localtimestamp from district returning o_id),"
        " queued as (insert into tpcc.new_order (no_w_id, no_d_id, no_o_id)"
        " select :w_id::integer, :d_id::integer, o_id from new_orders)"
        " select district.o_id, d_tax, w_tax, c_discount, c_last, c_credit"
        " from district, tpcc.warehouse, tpcc.customer"
        " where w_id = :w_id and c_w_id = :w_id and c_d_id = :d_id and c_id = :c_id;"
    )


def _order_line(n: int) -> list[str]:
    """Line n of New-Order in one statement: the item (clause 2.4.2.2), its stock, the order
    line. An unused item matches no item row: its stock is left alone, no line is written, and
    the count after the pipeline rolls the transaction back (clause 2.4.2.3)."""
    return [
        f"\\if :ol_cnt >= {n}",
        f"with item as (select i_price, i_name, i_data from tpcc.item where i_id = :i{n}),"
        " stocked as (update tpcc.stock set s_quantity = case when s_quantity >="
        f" :q{n}::integer + 10 then s_quantity - :q{n}::integer"
        f" else s_quantity - :q{n}::integer + 91 end,"
        f" s_ytd = s_ytd + :q{n}::integer, s_order_cnt = s_order_cnt + 1,"
        f" s_remote_cnt = s_remote_cnt + case when :s{n}::integer = :w_id::integer then 0"
        " else 1 end"
        f" where s_w_id = :s{n} and s_i_id = :i{n} and exists (select from item)"
        f" returning s_data, {_DIST_INFO} as dist_info),"
        " line as (insert into tpcc.order_line (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id,"
        " ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)"
        f" select :w_id::integer, :d_id::integer, {_ORDER_ID}, {n}, :i{n}::integer,"
        f" :s{n}::integer, null, :q{n}::integer, :q{n}::integer * i_price, dist_info"
        " from item, stocked)"
        " select i_price, i_name, i_data, s_data from item, stocked;",
        "\\endif",
    ]


def _repeated_stock_lines() -> list[str]:
    """:repeated = 1 when two used lines take the same item from the same warehouse: one
    UPDATE cannot change a row twice, so such an order goes line by line."""
    lines = [
        f"\\set k{n} case when :ol_cnt >= {n} then :s{n} * 1000000 + :i{n} else -{n} end"
        for n in range(1, MAX_ORDER_LINES + 1)
    ]
    pairs = " or ".join(
        f":k{m} = :k{n}" for n in range(2, MAX_ORDER_LINES + 1) for m in range(1, n)
    )
    return [*lines, f"\\set repeated case when {pairs} then 1 else 0 end"]


def _order_lines() -> str:
    """All the order's lines in one statement, as tpcc.new_order does on the server: the
    items, the stock rows (locked in key order, so that concurrent New-Orders cannot deadlock
    on them) and the order lines. An unused item joins no item: its line is not written."""
    numbers = range(1, MAX_ORDER_LINES + 1)
    items = ", ".join(f":i{n}" for n in numbers)
    supply = ", ".join(f":s{n}" for n in numbers)
    quantities = ", ".join(f":q{n}" for n in numbers)
    return (
        "with line as (select n::integer as n, i_id, supply_w_id, quantity"
        f" from unnest(array[{items}]::integer[], array[{supply}]::integer[],"
        f" array[{quantities}]::integer[]) with ordinality as l(i_id, supply_w_id, quantity, n)"
        " where n <= :ol_cnt::integer order by supply_w_id, i_id limit 15),"
        " priced as (select line.*, i_price, i_name, i_data from line"
        " join tpcc.item on item.i_id = line.i_id),"
        " stocked as (update tpcc.stock set s_quantity = case when s_quantity >="
        " priced.quantity + 10 then s_quantity - priced.quantity"
        " else s_quantity - priced.quantity + 91 end,"
        " s_ytd = s_ytd + priced.quantity, s_order_cnt = s_order_cnt + 1,"
        " s_remote_cnt = s_remote_cnt + case when priced.supply_w_id = :w_id::integer then 0"
        " else 1 end from priced"
        " where s_w_id = priced.supply_w_id and s_i_id = priced.i_id"
        f" returning priced.n, s_data, {_DIST_INFO} as dist_info),"
        " written as (insert into tpcc.order_line (ol_w_id, ol_d_id, ol_o_id, ol_number,"
        " ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)"
        f" select :w_id::integer, :d_id::integer, {_ORDER_ID}, priced.n, priced.i_id,"
        " priced.supply_w_id, null, priced.quantity, priced.quantity * priced.i_price,"
        " stocked.dist_info from priced join stocked using (n))"
        " select priced.n, i_price, i_name, i_data, s_data"
        " from priced join stocked using (n) order by priced.n;"
    )


def new_order(params: ScriptParameters) -> str:
    # An order with one item twice from one warehouse updates its stock rows line by line, in
    # line order, as a client sends them; two such New-Orders that lock the same rows in
    # opposite orders deadlock, and pgbench (15+) retries the loser.
    lines = [
        *new_order_inputs(params),
        *_all_local_lines(params),
        *_repeated_stock_lines(),
        "\\startpipeline",
        "begin;",
        _new_order_header(),
        "\\if :repeated = 1",
    ]
    for n in range(1, MAX_ORDER_LINES + 1):
        lines += _order_line(n)
    lines += [
        "\\else",
        _order_lines(),
        "\\endif",
        "\\endpipeline",
        # nextval is not rolled back: the count of rolled-back New-Orders survives
        "select count(*) as lines, case when count(*) < :ol_cnt::integer"
        " then nextval('tpcc.rollbacks') else 0 end as rolled_back from tpcc.order_line"
        f" where ol_w_id = :w_id and ol_d_id = :d_id and ol_o_id = {_ORDER_ID} \\gset",
        "\\if :lines = :ol_cnt",
        "commit;",
        "\\else",
        "rollback;",
        "\\endif",
    ]
    return _script(lines)


def payment(params: ScriptParameters) -> str:
    amount = ":amount_cents::integer / 100.0"
    # One statement is one transaction: no BEGIN or COMMIT to send.
    lines = [
        *payment_inputs(params),
        f"with warehouse as (update tpcc.warehouse set w_ytd = w_ytd + {amount}"
        " where w_id = :w_id returning w_name),"
        f" district as (update tpcc.district set d_ytd = d_ytd + {amount}"
        " where d_w_id = :w_id and d_id = :d_id returning d_name),"
        f" paid as (update tpcc.customer set c_balance = c_balance - {amount},"
        f" c_ytd_payment = c_ytd_payment + {amount}, c_payment_cnt = c_payment_cnt + 1,"
        " c_data = case when c_credit = 'BC'"
        " then left(format('%s %s %s %s %s %s|', c_id, c_d_id, c_w_id, :d_id::integer,"
        f" :w_id::integer, {amount}) || c_data, 500) else c_data end"
        " where c_w_id = :c_w_id and c_d_id = :c_d_id"
        f" and c_id = {_customer_id('c_w_id', 'c_d_id')}"
        " returning c_id, c_first, c_middle, c_last, c_balance, c_credit),"
        " history as (insert into tpcc.history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id,"
        " h_date, h_amount, h_data)"
        " select c_id, :c_d_id::integer, :c_w_id::integer, :d_id::integer, :w_id::integer,"
        f" localtimestamp, {amount}, w_name || '    ' || d_name from warehouse, district, paid)"
        " select c_id, c_first, c_middle, c_last, c_balance, c_credit from paid;",
    ]
    return _script(lines)


def order_status(params: ScriptParameters) -> str:
    # One read, so one snapshot: the customer, its last order and that order's lines, which
    # come back to the client, which throws them away.
    lines = [
        *order_status_inputs(params),
        "with customer as (select c_id, c_balance, c_first, c_middle, c_last from tpcc.customer"
        f" where c_w_id = :w_id and c_d_id = :d_id and c_id = {_customer_id('w_id', 'd_id')}),"
        " last_order as (select o_id, coalesce(o_carrier_id, 0) as o_carrier_id, o_entry_d"
        " from tpcc.orders where o_w_id = :w_id and o_d_id = :d_id"
        " and o_c_id = (select c_id from customer) order by o_id desc limit 1)"
        " select customer.*, last_order.*, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount,"
        " ol_delivery_d from customer cross join last_order left join tpcc.order_line"
        " on ol_w_id = :w_id and ol_d_id = :d_id and ol_o_id = last_order.o_id;",
    ]
    return _script(lines)


def _deliver_district(district: int) -> str:
    # Waits for a concurrent Delivery's lock on the oldest new-order rather than skipping
    # it (clause 2.7.4.2, issue 39); see tpcc.delivery in sql/transactions.sql. An empty
    # district delivers nothing: no new-order row, so no order, lines or customer.
    return (
        "with delivered as (delete from tpcc.new_order"
        f" where no_w_id = :w_id and no_d_id = {district}"
        " and no_o_id = (select no_o_id from tpcc.new_order"
        f" where no_w_id = :w_id and no_d_id = {district}"
        " order by no_o_id limit 1 for update) returning no_o_id),"
        " carried as (update tpcc.orders set o_carrier_id = :carrier_id"
        f" where o_w_id = :w_id and o_d_id = {district}"
        " and o_id = (select no_o_id from delivered) returning o_c_id),"
        " lines as (update tpcc.order_line set ol_delivery_d = localtimestamp"
        f" where ol_w_id = :w_id and ol_d_id = {district}"
        " and ol_o_id = (select no_o_id from delivered) returning ol_amount)"
        " update tpcc.customer set c_balance = c_balance"
        " + (select coalesce(sum(ol_amount), 0) from lines),"
        " c_delivery_cnt = c_delivery_cnt + 1"
        f" where c_w_id = :w_id and c_d_id = {district} and c_id = (select o_c_id from carried)"
        " returning (select no_o_id from delivered);"
    )


def delivery(params: ScriptParameters) -> str:
    lines = [*delivery_inputs(params), "\\startpipeline", "begin;"]
    for district in range(1, DISTRICTS_PER_WAREHOUSE + 1):
        lines.append(_deliver_district(district))
    lines += ["commit;", "\\endpipeline"]
    return _script(lines)


def stock_level(params: ScriptParameters) -> str:
    # Clause 2.8.2.3 allows each statement its own snapshot; one statement has one.
    lines = [
        *stock_level_inputs(params),
        "with district as (select d_next_o_id from tpcc.district"
        " where d_w_id = :w_id and d_id = :d_id)"
        " select count(distinct s_i_id) as low_stock from district, tpcc.order_line"
        " join tpcc.stock on s_w_id = :w_id and s_i_id = ol_i_id"
        " where ol_w_id = :w_id and ol_d_id = :d_id"
        " and ol_o_id >= d_next_o_id - 20 and ol_o_id < d_next_o_id"
        " and s_quantity < :threshold;",
    ]
    return _script(lines)


RENDERERS = {
    "new_order": new_order,
    "payment": payment,
    "order_status": order_status,
    "delivery": delivery,
    "stock_level": stock_level,
}
