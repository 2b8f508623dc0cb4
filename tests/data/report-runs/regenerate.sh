#!/bin/sh
# Rebuilds results.sqlite from real runs of the tiny specs here (root: memory cgroups).
# Run from anywhere after `make test` set up .venv; takes about five minutes on two cores.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lab=$(mktemp -d)
trap 'rm -rf "$lab"' EXIT
for spec in big-cache archaeology cache-split tpcc-ladder inspect-overhead inspect-history \
    offered-load; do
    "$here/../../../.venv/bin/pgcachelab" run "$here/$spec.toml" --lab-dir "$lab" >/dev/null
done
# one self-contained file: fold the write-ahead log in
python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); \
db.execute('pragma wal_checkpoint(truncate)'); db.execute('pragma journal_mode = delete')" \
    "$lab/results.sqlite"
cp "$lab/results.sqlite" "$here/results.sqlite"
