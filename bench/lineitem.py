"""TPC-H lineitem for the benchmarks that audit it (wap_job, audit_floor, per_source_audit,
metric_history): the file at a scale and a dirty copy, and the 10 checks, as a table
config and as the seed approach's per-check queries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".bench" / "wap_job"

# The 10 checks, as our table config and as the seed's per-check violation predicate.
CHECKS = [
    ("{kind: not_null, column: l_orderkey}", "l_orderkey IS NULL"),
    ("{kind: not_null, column: l_partkey}", "l_partkey IS NULL"),
    ("{kind: range, column: l_quantity, min: 1, max: 50}", "l_quantity < 1 OR l_quantity > 50"),
    ("{kind: range, column: l_discount, min: 0, max: 0.1}", "l_discount < 0 OR l_discount > 0.1"),
    ("{kind: range, column: l_tax, min: 0, max: 0.08}", "l_tax < 0 OR l_tax > 0.08"),
    (
        "{kind: range, column: l_shipdate, min: 1992-01-01, max: 1998-12-31}",
        "l_shipdate < DATE'1992-01-01' OR l_shipdate > DATE'1998-12-31'",
    ),
    (
        "{kind: accepted_values, column: l_returnflag, values: [A, N, R]}",
        "l_returnflag NOT IN ('A', 'N', 'R')",
    ),
    (
        "{kind: accepted_values, column: l_linestatus, values: [O, F]}",
        "l_linestatus NOT IN ('O', 'F')",
    ),
    (
        "{kind: accepted_values, column: l_shipmode, "
        "values: [AIR, 'REG AIR', RAIL, SHIP, TRUCK, MAIL, FOB]}",
        "l_shipmode NOT IN ('AIR', 'REG AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB')",
    ),
    (
        "{kind: expression, name: received_after_shipped, sql: 'l_receiptdate >= l_shipdate'}",
        "NOT (l_receiptdate >= l_shipdate)",
    ),
]
TABLE_CONFIG = "schema_policy: additive\nchecks:\n" + "".join(f"  - {c}\n" for c, _ in CHECKS)
# Dirty data: every n-th row breaks one check (spread over every row group, so no
# file can be skipped): 5 of the 10 checks fail.
INJECT = {
    "l_returnflag": 1000,
    "l_quantity": 997,
    "l_receiptdate": 1013,
    "l_partkey": 1499,
    "l_discount": 2003,
}


def generate(scale: float) -> tuple[Path, Path]:
    """lineitem at `scale` (tpchgen-cli) and a dirty copy; cached under .bench/."""
    folder = WORK / f"sf{scale:g}"
    clean, dirty = folder / "lineitem.parquet", folder / "lineitem_dirty.parquet"
    if not clean.exists():
        folder.mkdir(parents=True, exist_ok=True)
        cli = Path(sys.executable).parent / "tpchgen-cli"
        subprocess.run(
            [
                str(cli),
                "parquet",
                "-s",
                f"{scale:g}",
                "--tables=lineitem",
                f"--output-dir={folder}",
            ],
            check=True,
            capture_output=True,
        )
    if not dirty.exists():
        _inject_violations(clean, dirty)
    return clean, dirty


def _inject_violations(clean: Path, dirty: Path) -> None:
    import datetime as dt
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    source = pq.ParquetFile(clean)
    # Plain strings and nullable fields (the dirty file has nulls in l_partkey).
    schema = pa.schema(
        [
            pa.field(
                f.name, pa.string() if pa.types.is_string_view(f.type) else f.type, nullable=True
            )
            for f in source.schema_arrow
        ]
    )
    bad = {
        "l_returnflag": "X",
        "l_quantity": Decimal("0.00"),
        "l_partkey": None,
        "l_discount": Decimal("0.50"),
    }
    offset = 0
    with pq.ParquetWriter(dirty, schema) as writer:
        for group in range(source.num_row_groups):
            table = source.read_row_group(group).cast(schema)
            shipdate = table.column("l_shipdate")
            for name, every in INJECT.items():
                values = table.column(name).to_pylist()
                for i in range(-offset % every, table.num_rows, every):
                    values[i] = (
                        shipdate[i].as_py() - dt.timedelta(days=1)
                        if name == "l_receiptdate"
                        else bad[name]
                    )
                index = schema.get_field_index(name)
                table = table.set_column(
                    index, schema.field(index), pa.array(values, schema.field(index).type)
                )
            writer.write_table(table)
            offset += table.num_rows
