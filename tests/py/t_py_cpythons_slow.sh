#!/usr/bin/env bash
# t_py_cpythons_slow.sh - the module's own tests on every other CPython
# the machine has under pyenv (issue 22: users run 3.9 and 3.10 on
# clusters; requires-python says >=3.8, so each of 3.8-3.13 is tested).
#
# For each $PYENV_ROOT/versions/*/bin/python3: below 3.8 it is listed as
# skipped (outside requires-python); the suite's own $PYTHON is skipped
# too (the suite ran these tests on it already); every other one gets the
# module built for it (make python-module: its EXT_SUFFIX keeps it beside
# the others in build/python/anchor) and then runs each tests/py/t_py_*
# that is not slow, plus pyspy/t_pyspy_sites.py, with PYTHON set to it.
# t_py_record_tools.py is the recording under py-spy and perun and
# t_py_site_lines.py the SITE lines; tests that need torch skip where it
# is absent (its CPU wheel is on 3.11 here) and say so.
# Fails when any test fails on any version; prints which ran and which
# were skipped, and why.
set -u
ROOT=${ANCHOR_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
TMP=${ANCHOR_TEST_TMP:-$(mktemp -d)}
SELF=$(${PYTHON:-python3} -c 'import os, sys; print(os.path.realpath(sys.executable))')
VERSIONS=${PYENV_ROOT:-$HOME/.pyenv}/versions
export ANCHOR_ROOT=$ROOT BUILD PYTHONDONTWRITEBYTECODE=1

tests=()
for t in "$ROOT"/tests/py/t_py_*.py "$ROOT"/tests/py/t_py_*.sh "$ROOT"/tests/pyspy/t_pyspy_sites.py; do
	case $t in *slow*) continue ;; esac
	[ -e "$t" ] && tests+=("$t")
done

ran=() skipped=() failed=()
for py in "$VERSIONS"/*/bin/python3; do
	[ -x "$py" ] || continue
	ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || {
		skipped+=("$py (does not start)"); continue; }
	if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 8))'; then
		skipped+=("$ver (below requires-python >=3.8)"); continue
	fi
	if [ "$("$py" -c 'import os, sys; print(os.path.realpath(sys.executable))')" = "$SELF" ]; then
		skipped+=("$ver (the suite's own interpreter: its tests ran there)"); continue
	fi
	if ! make -C "$ROOT" --no-print-directory B="$BUILD" PYTHON="$py" python-module >"$TMP/build-$ver.log" 2>&1; then
		echo "FAIL $ver: the module does not build:"; tail -n 5 "$TMP/build-$ver.log" | sed 's/^/    /'
		failed+=("$ver:build"); continue
	fi
	ran+=("$ver")
	p=0 s=0
	for t in "${tests[@]}"; do
		name=${t#"$ROOT"/tests/}
		dir="$TMP/$ver/${name%.*}"
		mkdir -p "$dir"
		case $t in
		*.sh) run=(bash "$t") ;;
		*) run=("$py" "$t") ;;
		esac
		start=$(date +%s%N)
		ANCHOR_TEST_TMP=$dir PYTHON=$py PYTHONPATH=$BUILD/python timeout -k 30 600 "${run[@]}" </dev/null >"$dir.log" 2>&1
		rc=$?
		secs=$((($(date +%s%N) - start) / 100000000))
		secs=$((secs / 10)).$((secs % 10))
		if [ $rc -eq 0 ]; then
			p=$((p + 1)); echo "PASS $ver $name (${secs}s): $(tail -n 1 "$dir.log" | cut -c1-160)"
		elif [ $rc -eq 77 ]; then
			s=$((s + 1)); echo "SKIP $ver $name: $(tail -n 1 "$dir.log" | cut -c1-160)"
		else
			failed+=("$ver:$name"); echo "FAIL $ver $name (exit $rc, ${secs}s); last lines:"
			tail -n 15 "$dir.log" | sed 's/^/    /'
		fi
	done
	echo "== CPython $ver: $p passed, $s skipped, $(( ${#tests[@]} - p - s )) failed"
done
echo "ran on: ${ran[*]:-none}"
for x in "${skipped[@]}"; do echo "skipped: $x"; done
if [ ${#failed[@]} -gt 0 ]; then
	echo "FAIL: ${failed[*]}"
	exit 1
fi
if [ ${#ran[@]} -eq 0 ]; then
	echo "SKIP: no other CPython >= 3.8 under $VERSIONS"
	exit 77
fi
echo "PASS: the module's tests on ${ran[*]}"
