#!/usr/bin/env bash
# tests/run.sh - run the suite: every tests/AREA/t_*.sh and t_*.py.
#
# Tests sit in one folder per area (ring: the ring file and libanchor in
# its host; py: the Python module; pyspy: py-spy's profiles and the
# per-function energy; perun: perun's files and the emulated sensors;
# sensors: libanchor's own sensor sampler and GPU readings; mpi: launchers
# and multi-ring merging; report: report, phases, pictures, trace.json and
# the user's workflows; cli: the command line, files, record, install;
# torch: torch.profiler traces, per-op and per-layer joules; unit: C unit
# tests).  Helpers are in tests/lib/, the programs the tests
# run in tests/victims/, data in tests/data/.  A t_* file outside an area
# folder fails the run (it would be skipped silently otherwise).
#
# Each test is one program: exit 0 passed, 77 skipped, anything else
# failed.  QUICK=1 runs only tests without "slow" in their name.
# ONLY=pattern runs the tests whose AREA/name contains pattern (ONLY=py/
# runs an area).
# TEST_TIMEOUT=S (default 900): a test still running after S seconds gets
# SIGTERM (its whole process group, GNU timeout), SIGKILL 30 s later, and
# counts as failed; stdin is /dev/null, so nothing waits for a terminal.
# KEEP_FAILED=DIR: a failed test's temporary directory and log are moved
# to DIR/AREA/NAME.K (K the first free number) before the run removes the
# rest, so a failure on a loaded machine can be looked at afterwards.
# Always ends with the line "N passed, N failed, N skipped", also when
# interrupted (then "(interrupted)" follows and the exit status is 130).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
export ANCHOR_ROOT=$ROOT
export BUILD=${BUILD:-$ROOT/build}
export SHARED=${SHARED:-$(cd "$ROOT/../shared" 2>/dev/null && pwd)}
export PYTHON=${PYTHON:-$(command -v python3)}
# The real interpreter, not a pyenv shim script (shims are bash scripts
# that spawn a dozen processes under LD_PRELOAD).
PYTHON=$("$PYTHON" -c 'import sys; print(sys.executable)')
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
TMPROOT=$(mktemp -d /tmp/anchor-tests.XXXXXX)
TEST_TIMEOUT=${TEST_TIMEOUT:-900}

pass=0 fail=0 skip=0 failed=()
summary() {
	[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
	echo "$pass passed, $fail failed, $skip skipped$1"
}
trap 'rm -rf "$TMPROOT"' EXIT
child=
# The test runs in the background so that `wait` returns at once on a
# signal (bash runs traps only between foreground commands).
trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child"
	summary " (interrupted)"; exit 130' INT TERM HUP
for t in tests/t_*.sh tests/t_*.py tests/*/t_*.sh tests/*/t_*.py; do
	[ -e "$t" ] || continue
	name=${t#tests/}
	if [ -n "${QUICK:-}" ] && [[ $name == *slow* ]]; then continue; fi
	if [ -n "${ONLY:-}" ] && [[ $name != *$ONLY* ]]; then continue; fi
	if [[ $name != */* ]]; then
		fail=$((fail + 1)); failed+=("$name")
		echo "FAIL $name: a test outside an area folder (move it to tests/AREA/, see the top of tests/run.sh)"
		continue
	fi
	dir="$TMPROOT/${name%.*}"
	mkdir -p "$dir"
	start=$(date +%s%N)
	case $t in
	*.sh) run=(bash "$t") ;;
	*.py) run=("$PYTHON" "$t") ;;
	esac
	ANCHOR_TEST_TMP=$dir timeout -k 30 "$TEST_TIMEOUT" "${run[@]}" </dev/null >"$dir.log" 2>&1 &
	child=$!
	wait "$child"
	rc=$?
	child=
	ms=$((($(date +%s%N) - start) / 1000000))
	secs=$((ms / 1000)).$((ms % 1000 / 100))
	[ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "(timed out after ${TEST_TIMEOUT}s)" >>"$dir.log"
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1)); echo "PASS $name (${secs}s)"
	elif [ $rc -eq 77 ]; then
		skip=$((skip + 1)); echo "SKIP $name: $(tail -n 1 "$dir.log")"
	else
		fail=$((fail + 1)); failed+=("$name")
		echo "FAIL $name (exit $rc, ${secs}s); last lines:"
		tail -n 25 "$dir.log" | sed 's/^/    /'
		if [ -n "${KEEP_FAILED:-}" ]; then
			k=1
			while [ -e "$KEEP_FAILED/${name%.*}.$k" ]; do k=$((k + 1)); done
			mkdir -p "$KEEP_FAILED/${name%.*}.$k" &&
				mv "$dir" "$dir.log" "$KEEP_FAILED/${name%.*}.$k/" &&
				echo "    (kept in $KEEP_FAILED/${name%.*}.$k)"
		fi
	fi
done
summary ""
[ $fail -eq 0 ]
