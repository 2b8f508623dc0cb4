"""The pgbench scripts of the five transactions: the terminal's inputs (clause 2.x.1) drawn
by pgbench, then the transaction itself: one call of the server-side function (mode
"procedures") or its statements sent one by one (mode "client", client_scripts.py). Pure:
text in, text out.

pgbench expressions need `|` and CASE, so the scripts need pgbench 11 or later (the lab
drives every server version with the newest pgbench it has).
"""

from dataclasses import dataclass

from pgcachelab.workloads.tpcc.params import (
    CUSTOMERS_PER_DISTRICT,
    ITEMS,
    TRANSACTIONS,
    UNUSED_ITEM_ID,
    LoadConstants,
)

MAX_ORDER_LINES = 15


@dataclass(frozen=True)
class ScriptParameters:
    warehouses: int
    constants: LoadConstants
    c_last_run: int
    # BenchmarkSQL's terminalWarehouseFixed: client N always uses warehouse N mod W + 1.
    home_warehouse: bool = True


def nurand(a: int, x: int, y: int, c: int) -> str:
    """NURand(A, x, y) of clause 2.1.6 as a pgbench expression."""
    return f"(((random(0, {a}) | random({x}, {y})) + {c}) % {y - x + 1}) + {x}"


def _warehouse_line(params: ScriptParameters) -> str:
    if params.home_warehouse:
        return f"\\set w_id :client_id % {params.warehouses} + 1"
    return f"\\set w_id random(1, {params.warehouses})"


def _other_warehouse(params: ScriptParameters) -> str:
    """Uniformly one of the warehouses other than :w_id (only meaningful when W > 1)."""
    w = params.warehouses
    return f"(:w_id + random(0, {w - 2})) % {w} + 1"


def _customer_lines(params: ScriptParameters) -> list[str]:
    c = params.constants
    return [
        "\\set by_name random(1, 100)",
        # 60% by last name (clauses 2.5.1.2 and 2.6.1.2): customer id 0 tells the function
        f"\\set c_id case when :by_name <= 60 then 0 else "
        f"{nurand(1023, 1, CUSTOMERS_PER_DISTRICT, c.c_id)} end",
        f"\\set name_number {nurand(255, 0, 999, params.c_last_run)}",
    ]


def new_order_inputs(params: ScriptParameters) -> list[str]:
    """Items :i1..:i15, supplying warehouses :s1..:s15, quantities :q1..:q15; lines past
    :ol_cnt are drawn but unused (a script cannot loop)."""
    c = params.constants
    lines = [
        _warehouse_line(params),
        "\\set d_id random(1, 10)",
        f"\\set c_id {nurand(1023, 1, CUSTOMERS_PER_DISTRICT, c.c_id)}",
        "\\set ol_cnt random(5, 15)",
        # Clause 2.4.1.4: 1% of New-Orders carry an unused item id as their last line.
        "\\set rollback random(1, 100)",
    ]
    for n in range(1, MAX_ORDER_LINES + 1):
        item = nurand(8191, 1, ITEMS, c.c_ol_i_id)
        lines.append(
            f"\\set i{n} case when :rollback = 1 and :ol_cnt = {n} then {UNUSED_ITEM_ID} "
            f"else {item} end"
        )
        if params.warehouses > 1:
            # Clause 2.4.1.5: each line is supplied by a remote warehouse with 1% probability.
            lines.append(
                f"\\set s{n} case when random(1, 100) = 1 then {_other_warehouse(params)} "
                "else :w_id end"
            )
        else:
            lines.append(f"\\set s{n} :w_id")
        lines.append(f"\\set q{n} random(1, 10)")
    return lines


def new_order(params: ScriptParameters) -> str:
    lines = new_order_inputs(params)
    numbers = range(1, MAX_ORDER_LINES + 1)
    items = ", ".join(f":i{n}" for n in numbers)
    supply = ", ".join(f":s{n}" for n in numbers)
    quantities = ", ".join(f":q{n}" for n in numbers)
    lines.append(
        "select tpcc.new_order(:w_id, :d_id, :c_id, :ol_cnt, "
        f"array[{items}]::integer[], array[{supply}]::integer[], "
        f"array[{quantities}]::integer[]);"
    )
    return "\n".join(lines) + "\n"


def payment_inputs(params: ScriptParameters) -> list[str]:
    lines = [_warehouse_line(params), "\\set d_id random(1, 10)"]
    if params.warehouses > 1:
        # Clause 2.5.1.2: 15% of payments are for a customer of another warehouse.
        lines += [
            "\\set remote random(1, 100)",
            f"\\set c_w_id case when :remote <= 15 then {_other_warehouse(params)} else :w_id end",
            "\\set c_d_id case when :remote <= 15 then random(1, 10) else :d_id end",
        ]
    else:
        lines += ["\\set c_w_id :w_id", "\\set c_d_id :d_id"]
    lines += _customer_lines(params)
    return [*lines, "\\set amount_cents random(100, 500000)"]


def payment(params: ScriptParameters) -> str:
    lines = payment_inputs(params)
    lines.append(
        "select tpcc.payment(:w_id, :d_id, :c_w_id, :c_d_id, :c_id, :name_number, :amount_cents);"
    )
    return "\n".join(lines) + "\n"


def order_status_inputs(params: ScriptParameters) -> list[str]:
    return [_warehouse_line(params), "\\set d_id random(1, 10)", *_customer_lines(params)]


def order_status(params: ScriptParameters) -> str:
    lines = order_status_inputs(params)
    lines.append("select tpcc.order_status(:w_id, :d_id, :c_id, :name_number);")
    return "\n".join(lines) + "\n"


def delivery_inputs(params: ScriptParameters) -> list[str]:
    return [_warehouse_line(params), "\\set carrier_id random(1, 10)"]


def delivery(params: ScriptParameters) -> str:
    lines = delivery_inputs(params)
    lines.append("select tpcc.delivery(:w_id, :carrier_id);")
    return "\n".join(lines) + "\n"


def stock_level_inputs(params: ScriptParameters) -> list[str]:
    return [_warehouse_line(params), "\\set d_id random(1, 10)", "\\set threshold random(10, 20)"]


def stock_level(params: ScriptParameters) -> str:
    lines = stock_level_inputs(params)
    lines.append("select tpcc.stock_level(:w_id, :d_id, :threshold);")
    return "\n".join(lines) + "\n"


_RENDERERS = {
    "new_order": new_order,
    "payment": payment,
    "order_status": order_status,
    "delivery": delivery,
    "stock_level": stock_level,
}


def render_scripts(params: ScriptParameters) -> dict[str, str]:
    """Script text per transaction name, in TRANSACTIONS order."""
    return {name: _RENDERERS[name](params) for name in TRANSACTIONS}
