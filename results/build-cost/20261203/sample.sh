#!/bin/sh
# Load on the machine every 30 s while the builds run: who else is busy.
while :; do
	echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg) | $(ps -eo pcpu,args --sort=-pcpu | awk 'NR>1 && $1>20 {printf "%s %s %s; ", $1, $2, $3}' | cut -c1-300)"
	sleep 30
done
