#!/bin/sh
# Captures the /proc files whose parsers tests/test_host_facts.py checks (machine/host_facts.py)
# as this host has them: meminfo, cpuinfo and this process's cgroup. Its mountinfo tests read
# the captures in tests/data/machine/. Read-only; run from anywhere. The figures differ on
# every host, so the tests' expected values must be updated after a new capture.
set -e
here=$(cd "$(dirname "$0")" && pwd)
cp /proc/meminfo "$here/meminfo"
cp /proc/cpuinfo "$here/cpuinfo"
cp /proc/self/cgroup "$here/cgroup"
echo "captured into $here" >&2
