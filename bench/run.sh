#!/usr/bin/env bash
# bench/run.sh - every benchmark in bench/*.sh, one after the other.
# Results are copied by hand into BENCHMARKS.md with this command.
set -uo pipefail
cd "$(dirname "$0")/.."
rc=0
for b in bench/*.sh; do
	[ "$(basename "$b")" = run.sh ] && continue
	echo "######## $b"
	bash "$b" || rc=1
done
exit $rc
