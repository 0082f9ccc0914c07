#!/usr/bin/env bash
# tests/run.sh - run the suite: every tests/t_*.sh and tests/t_*.py.
#
# Each test is one program: exit 0 passed, 77 skipped, anything else
# failed.  QUICK=1 runs only tests without "slow" in their name.
# ONLY=pattern runs the tests whose name contains pattern.
# Ends with the line "N passed, N failed, N skipped".
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
trap 'rm -rf "$TMPROOT"' EXIT

pass=0 fail=0 skip=0 failed=()
for t in tests/t_*.sh tests/t_*.py; do
	[ -e "$t" ] || continue
	name=$(basename "$t")
	if [ -n "${QUICK:-}" ] && [[ $name == *slow* ]]; then continue; fi
	if [ -n "${ONLY:-}" ] && [[ $name != *$ONLY* ]]; then continue; fi
	dir="$TMPROOT/${name%.*}"
	mkdir -p "$dir"
	start=$(date +%s.%N)
	case $t in
	*.sh) ANCHOR_TEST_TMP=$dir timeout 900 bash "$t" >"$dir.log" 2>&1 ;;
	*.py) ANCHOR_TEST_TMP=$dir timeout 900 "$PYTHON" "$t" >"$dir.log" 2>&1 ;;
	esac
	rc=$?
	secs=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1)); echo "PASS $name (${secs}s)"
	elif [ $rc -eq 77 ]; then
		skip=$((skip + 1)); echo "SKIP $name: $(tail -n 1 "$dir.log")"
	else
		fail=$((fail + 1)); failed+=("$name")
		echo "FAIL $name (exit $rc, ${secs}s); last lines:"
		tail -n 25 "$dir.log" | sed 's/^/    /'
	fi
done
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
