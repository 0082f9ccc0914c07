#!/usr/bin/env bash
# scripts/test-under-load.sh - the suite N times in a row while a CPU hog
# runs beside it (issue 10: green for real reasons under load).
#
#   bash scripts/test-under-load.sh [N]      (default N=3)
#
# Env: LOAD_CPUS (default: nproc) stress-ng --cpu workers at LOAD_PCT %
# (default 100) each, at normal priority, so the suite competes for every
# core; QUICK/ONLY/TEST_TIMEOUT pass through to tests/run.sh.  Each run's
# output goes to $LOG_DIR/run-K.log (default a new /tmp/anchor-load.*),
# each failed test's files to $LOG_DIR/failed-K/ (tests/run.sh KEEP_FAILED).
# Prints every run's summary line and the load average; exits 1 if any run
# failed.  Needs stress-ng (scripts/install-deps.sh installs it) and a build
# (make -j2).
set -u
cd "$(dirname "$0")/.."
N=${1:-3}
CPUS=${LOAD_CPUS:-$(nproc)}
PCT=${LOAD_PCT:-100}
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/anchor-load.XXXXXX)}
mkdir -p "$LOG_DIR"
command -v stress-ng >/dev/null || { echo "test-under-load: stress-ng missing (bash scripts/install-deps.sh)" >&2; exit 2; }
[ -x build/anchorpost ] || { echo "test-under-load: build first (make -j2)" >&2; exit 2; }

stress-ng --cpu "$CPUS" --cpu-load "$PCT" --timeout 0 --quiet &
hog=$!
trap 'kill "$hog" 2>/dev/null; wait "$hog" 2>/dev/null' EXIT
trap 'exit 130' INT TERM HUP
echo "test-under-load: stress-ng --cpu $CPUS --cpu-load $PCT (pid $hog); logs in $LOG_DIR"

bad=0
for k in $(seq 1 "$N"); do
	start=$(date +%s)
	KEEP_FAILED=$LOG_DIR/failed-$k bash tests/run.sh >"$LOG_DIR/run-$k.log" 2>&1
	rc=$?
	[ $rc -eq 0 ] || bad=1
	grep '^FAIL ' "$LOG_DIR/run-$k.log"
	echo "run $k/$N: $(tail -n 1 "$LOG_DIR/run-$k.log") ($(($(date +%s) - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg))"
done
exit $bad
