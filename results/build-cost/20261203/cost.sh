#!/bin/bash
# Build cost of kernel specs, measured: (a) cold linux-source-6.12 perf with an
# empty kernel cache and an empty ccache, (b) a git range of two commits, (c)
# the same spec again (a lookup). Builds hold the machine's shared build lock.
set -u
step=$1; shift
export NUMA_MATRIX_CACHE=/tmp/nm-cost/cache
export NUMA_MATRIX_BUILD_LOCK=/root/.cache/numa-matrix/build.lock
unset CCACHE_DIR
export CCACHE_DIR=$NUMA_MATRIX_CACHE/ccache
cd /work/wt/tooling
echo "=== step $step: kernel-series/build-kernel $*"
echo "=== commit $(git rev-parse --short HEAD); start $(date -u +%FT%TZ); uptime:$(uptime)"
echo "=== other heavy processes at start:"
ps -eo pid,etime,pcpu,args --sort=-pcpu | awk 'NR==1 || $3>5' | cut -c1-160
/usr/bin/time -v kernel-series/build-kernel "$@" --flavour perf -j2
rc=$?
echo "=== exit $rc; end $(date -u +%FT%TZ); uptime:$(uptime)"
echo "=== ccache -s (CCACHE_DIR=\$NUMA_MATRIX_CACHE/ccache):"
ccache -s
echo
