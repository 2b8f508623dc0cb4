#!/bin/sh
# Captures this host's sysfs and /proc/sys files the host settings read (tests/test_host_tunables.py).
# Run from this directory; read-only.
set -e
cp /sys/kernel/mm/transparent_hugepage/enabled thp_enabled
cp /sys/kernel/mm/transparent_hugepage/defrag thp_defrag
cp /sys/block/vda/queue/scheduler vda_scheduler
cp /sys/block/vda/queue/read_ahead_kb vda_read_ahead_kb
for name in dirty_background_bytes dirty_bytes dirty_ratio dirty_background_ratio swappiness; do
  cp /proc/sys/vm/$name vm.$name
done
for name in numa_balancing shmmax shmall; do cp /proc/sys/kernel/$name kernel.$name; done
