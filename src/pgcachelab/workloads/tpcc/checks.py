"""TPC-C consistency conditions (clause 3.3.2, conditions 1-4) and the rollback check, as SQL.

Each query counts the warehouses or districts that break the condition; zero everywhere is a
consistent database. Run them when no transaction is running: after a load, after a run.
"""

from dataclasses import dataclass

import psycopg

from pgcachelab.clusters.client import one_row
from pgcachelab.workloads.tpcc.params import UNUSED_ITEM_ID

CHECKS = (
    (
        "condition 1: W_YTD = sum(D_YTD) per warehouse",
        """select count(*) from tpcc.warehouse w
           where w.w_ytd <> (select sum(d_ytd) from tpcc.district where d_w_id = w.w_id)""",
    ),
    (
        "condition 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district",
        """select count(*) from tpcc.district d
           where d.d_next_o_id - 1 <> (select max(o_id) from tpcc.orders
                                       where o_w_id = d.d_w_id and o_d_id = d.d_id)
              or d.d_next_o_id - 1 <> (select max(no_o_id) from tpcc.new_order
                                       where no_w_id = d.d_w_id and no_d_id = d.d_id)""",
    ),
    (
        "condition 3: max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW-ORDER rows) per district",
        """select count(*) from (select max(no_o_id) - min(no_o_id) + 1 as span, count(*) as rows
                                 from tpcc.new_order group by no_w_id, no_d_id) per_district
           where span <> rows""",
    ),
    (
        "condition 4: sum(O_OL_CNT) = count(ORDER-LINE rows) per district",
        """select count(*)
           from (select o_w_id, o_d_id, sum(o_ol_cnt) as lines
                 from tpcc.orders group by o_w_id, o_d_id) o
           full join (select ol_w_id, ol_d_id, count(*) as lines
                      from tpcc.order_line group by ol_w_id, ol_d_id) ol
             on ol.ol_w_id = o.o_w_id and ol.ol_d_id = o.o_d_id
           where coalesce(o.lines, 0) <> coalesce(ol.lines, 0)""",
    ),
    (
        # The 1% of New-Orders with an unused item must leave nothing behind (clause 2.4.2.3).
        "rollback: no order line references the unused item",
        f"select count(*) from tpcc.order_line where ol_i_id = {UNUSED_ITEM_ID}",
    ),
)


class ConsistencyError(Exception):
    """The database breaks a TPC-C consistency condition: the run's figures are not valid."""


@dataclass(frozen=True)
class CheckResult:
    name: str
    violations: int  # warehouses, districts or rows that break the condition

    @property
    def passed(self) -> bool:
        return self.violations == 0


def run_checks(conn: psycopg.Connection) -> list[CheckResult]:
    return [CheckResult(name, one_row(conn.execute(sql))[0]) for name, sql in CHECKS]


def require_consistent(conn: psycopg.Connection, when: str) -> list[CheckResult]:
    """Run every check; raise ConsistencyError naming each failed one."""
    results = run_checks(conn)
    failed = [r for r in results if not r.passed]
    if failed:
        details = "; ".join(f"{r.name} ({r.violations} violations)" for r in failed)
        raise ConsistencyError(f"TPC-C consistency check failed {when}: {details}")
    return results
