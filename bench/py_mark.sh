#!/usr/bin/env bash
# bench/py_mark.sh - Python anchor cost (py_mark.py) and the training-step
# slowdown of ANCHOR_AUTO=torch (py_auto_overhead.py), both configurations.
# QUICK=1 for a short run.  Results by hand into bench/RESULTS-python.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
PYTHON=$("$PYTHON" -c 'import sys; print(sys.executable)')
BUILD=${BUILD:-$PWD/build}
q=(); [ -n "${QUICK:-}" ] && q=(--quick)
tmp=$(mktemp -d /tmp/anchor-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "## anchor.mark and friends (ns per call)"
BUILD=$BUILD "$PYTHON" bench/py_mark.py "${q[@]}"
echo
for pre in 0 1; do
	if [ $pre = 1 ]; then
		echo "## ANCHOR_AUTO=torch training-step slowdown, LD_PRELOAD=libanchor.so"
		env LD_PRELOAD="$BUILD/libanchor.so" ANCHOR_FILE="$tmp/auto1.ring" PYTHONPATH="$BUILD/python" \
			"$PYTHON" bench/py_auto_overhead.py "${q[@]}"
	else
		echo "## ANCHOR_AUTO=torch training-step slowdown, module's own writer"
		env -u LD_PRELOAD ANCHOR_FILE="$tmp/auto0.ring" PYTHONPATH="$BUILD/python" \
			"$PYTHON" bench/py_auto_overhead.py "${q[@]}"
	fi
	echo
done
