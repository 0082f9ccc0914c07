#!/usr/bin/env bash
# bench/run.sh - run every bench/*.sh except this one (make bench).
set -u
cd "$(dirname "$0")/.."
rc=0
for b in bench/*.sh; do
	[ "$(basename "$b")" = run.sh ] && continue
	echo "== $b"
	bash "$b" || { echo "bench: $b failed"; rc=1; }
done
exit $rc
