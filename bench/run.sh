#!/usr/bin/env bash
# bench/run.sh - run every bench/*.sh except this one (make bench).
set -u
cd "$(dirname "$0")"
rc=0
for b in ./*.sh; do
	[ "$(basename "$b")" = run.sh ] && continue
	echo "### $b"
	bash "$b" || rc=1
done
exit $rc
