#!/usr/bin/env bash
# Recapture the kernel files the resource parser tests read (tests/test_resources.py).
#
# Usage (from anywhere): tests/data/resources/capture.sh
#
# Two captures a second apart (t0, t1) of what the resource sampler reads each second: the
# machine's CPU and context switches (/proc/stat, read through psutil), memory
# (/proc/meminfo), block devices (/proc/diskstats), and the CPU account of a cgroup as each
# cgroup version writes it (v2 cpu.stat, v1 cpuacct.usage and cpuacct.stat) when mounted.
# The figures differ on every capture, so the tests' expected values must be updated after.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
v2=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)
v1_cpuacct=$(awk '$9 == "cgroup" && $NF ~ /(^|,)cpuacct(,|$)/ {print $5; exit}' /proc/self/mountinfo)

for moment in t0 t1; do
    mkdir -p "$here/$moment"
    cp /proc/stat "$here/$moment/stat"
    cp /proc/meminfo "$here/$moment/meminfo"
    cp /proc/diskstats "$here/$moment/diskstats"
    if [[ -n $v2 && -r $v2/cpu.stat ]]; then cp "$v2/cpu.stat" "$here/$moment/cpu.stat"; fi
    if [[ -n $v1_cpuacct ]]; then
        cp "$v1_cpuacct/cpuacct.usage" "$here/$moment/cpuacct.usage"
        cp "$v1_cpuacct/cpuacct.stat" "$here/$moment/cpuacct.stat"
    fi
    [[ $moment == t0 ]] && sleep 1
done
echo "captured into $here/t0 and $here/t1" >&2
