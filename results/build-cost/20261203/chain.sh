#!/bin/bash
# After the cold build: the 6.12 kernel into the shared cache (content-keyed:
# the same inputs, the same key), the 6.1/6.12 report run, then the git range
# and the lookups. The report run starts by 21:08 UTC, the range by 21:12, or not at all.
cd /tmp/nm-cost
while kill -0 25254 2>/dev/null; do sleep 5; done
late() { [ "$(date -u +%H%M)" -ge "$1" ]; }
K=bfa41343e6e6-e3b0c44298fc-perf-43eae2cbd7c4
if [ -f cache/kernels/$K/bzImage ] && [ ! -e /root/.cache/numa-matrix/kernels/$K ]; then
	cp -a cache/kernels/$K /root/.cache/numa-matrix/kernels/$K.tmp.tooling &&
	mv /root/.cache/numa-matrix/kernels/$K.tmp.tooling /root/.cache/numa-matrix/kernels/$K
	echo "$(date -u +%T) copied $K into the shared cache" >> chain.log
fi
if ! late 2108 && [ -f /root/.cache/numa-matrix/kernels/$K/bzImage ]; then
	(cd /work/wt/tooling && echo "=== start $(date -u +%FT%TZ)" &&
	 results/matrix run --kernels baseline,patched,linux-source-6.12 --topologies 4node \
		--scenarios bind,interleave,exit --iterations 10 --size 64M;
	 echo "=== exit $? end $(date -u +%FT%TZ)") > matrix.log 2>&1 &
	echo $! > matrix.pid
	echo "$(date -u +%T) matrix run started" >> chain.log
fi
[ -f cache/kernels/$K/bzImage ] || exit 1
late 2112 || ./cost.sh b /tmp/nm-cost/linux@base..main > b.log 2>&1
./cost.sh c linux-source-6.12 > c.log 2>&1
grep -q "^=== exit 0" b.log && ./cost.sh c /tmp/nm-cost/linux@base..main >> c.log 2>&1
echo "$(date -u +%T) chain done" >> chain.log
