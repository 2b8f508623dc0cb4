"""Fit the huge pages estimate's constants (machine/hugepages_estimate.py) on captured values.

Usage: .venv/bin/python tests/data/hugepages/fit.py tests/data/hugepages/pg18-shared-memory-size.txt
Prints the Calibration to put in CALIBRATIONS, and the estimate's worst error on every captured
line. Least squares over the lines above "# held out", each size taken at the middle of the
megabyte shared_memory_size rounded it up to; numpy comes with matplotlib.
"""

import sys
from pathlib import Path

import numpy as np

from pgcachelab.machine import hugepages_estimate as estimate
from pgcachelab.units import parse_bytes

MB = 1024**2


def read_capture(path: Path) -> tuple[list[tuple], str]:
    """([(shared_buffers, max_connections, size_bytes, pages, held_out)], server version)."""
    rows, held_out, version = [], False, "?"
    for line in path.read_text().splitlines():
        if line.startswith("# postgres"):  # "# postgres (PostgreSQL) 18.6; Hugepagesize: ..."
            version = line.split(")")[1].split()[0].rstrip(";")
        held_out = held_out or line.startswith("# held out")
        if line.startswith("#") or not line.strip():
            continue
        shared_buffers, connections, size, pages = line.split()
        rows.append(
            (parse_bytes(shared_buffers), int(connections), parse_bytes(size), int(pages), held_out)
        )
    return rows, version


def fit(rows: list[tuple], version: str) -> estimate.Calibration:
    major = int(version.split(".")[0])
    slru_cap = estimate.calibration_for(major).slru_cap_buffers
    fitted = [row for row in rows if not row[4]]
    counts = np.array([estimate.fitted_counts(r[0], r[1], slru_cap) for r in fitted], float)
    rest = np.array([r[2] - MB / 2 - estimate.exact_bytes(r[0]) for r in fitted], float)
    if major < 18:  # no AIO: its column would only fit the noise
        counts = counts[:, :4]
    solution = [*np.linalg.lstsq(counts, rest, rcond=None)[0], 0.0][:5]
    base, per_buffer, slru, per_connection, aio = (float(x) for x in solution)
    return estimate.Calibration(
        calibrated_on=version,
        base_bytes=round(base),
        per_buffer_bytes=round(per_buffer, 1),
        slru_per_buffer_bytes=round(slru, 1),
        per_connection_bytes=round(per_connection),
        aio_handle_bytes=round(aio, 1),
        slru_cap_buffers=slru_cap,
    )


def main(path: str) -> None:
    rows, version = read_capture(Path(path))
    print(fit(rows, version))
    major = int(version.split(".")[0])
    worst = max(
        abs(-(-estimate.shared_memory_bytes(sb, major, connections) // (2 * MB)) - pages)
        for sb, connections, _, pages, _ in rows
    )
    print(f"worst error of the constants in CALIBRATIONS now: {worst} huge pages")


if __name__ == "__main__":
    main(sys.argv[1])
