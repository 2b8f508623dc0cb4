#!/bin/sh
# How the files beside this script were captured (Debian 12, gcc 12.2, 2026-11-28), for
# tests/test_source_recipe.py. Run as any user; it writes only under $WORK.
#
#   postgresql-15_15.18-0+deb12u1.dsc  Debian's .dsc of postgresql-15, as apt-get source fetched it
#   showsrc-postgresql-15.txt          apt-cache showsrc of it, through the private deb-src list
#   configure-fail.log                 configure of 15.18 asked for LLVM without clang installed
#   make-fail.log                      make in src/common of 15.18 with C89 forced (a real error)
#   postgresql-17.4.tar.bz2.sha256     the project's .sha256 format (sha256sum's), with the
#                                      published digest of postgresql-17.4.tar.bz2
set -eu
WORK=${WORK:-$(mktemp -d)}
OUT=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK/parts" "$WORK/lists/partial" "$WORK/cache/archives/partial" "$WORK/dl"
# the machine's own repositories, as deb-src (what source_build.private_apt_sources writes)
sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > "$WORK/parts/debian.sources"
APT="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$WORK/parts
     -o Dir::State::Lists=$WORK/lists -o Dir::Cache=$WORK/cache"
[ "$(id -u)" = 0 ] && APT="$APT -o APT::Sandbox::User=root"
apt-get $APT update
LC_ALL=C apt-cache $APT showsrc --only-source postgresql-15 > "$OUT/showsrc-postgresql-15.txt"
# the security pool may not serve the newest one: name a version its main suite has
(cd "$WORK/dl" && apt-get $APT source --download-only postgresql-15=15.18-0+deb12u1)
cp "$WORK/dl/postgresql-15_15.18-0+deb12u1.dsc" "$OUT/"
tar xjf "$WORK/dl/postgresql-15_15.18.orig.tar.bz2" -C "$WORK"
cd "$WORK/postgresql-15.18"
./configure --without-readline --without-zlib --without-icu --with-llvm \
  > "$OUT/configure-fail.log" 2>&1 || true
./configure --without-readline --without-zlib --without-icu > /dev/null
make -C src/common CFLAGS="-std=c89 -pedantic-errors" > "$OUT/make-fail.log" 2>&1 || true
