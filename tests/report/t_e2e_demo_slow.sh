#!/usr/bin/env bash
# t_e2e_demo_slow.sh - scripts/demo.sh, shortened: real PyTorch training
# (examples/transformer.py, DataLoader workers), real py-spy, real perun
# over the emulated RAPL, then `anchorpost report`.  tests/lib/report_check.py
# checks: per-phase energies + unattributed = perun's own total within
# 1 %; forward/backward/step counts = iterations; every output exists and
# parses (CSV, JSON, SVG as XML, PNG signature + IHDR); trace.json's
# structure (B/E pairs per thread in order, monotone ts per track, numeric
# counters, name metadata, py-spy stacks); the emulated-sensor notice.
set -eu
: "${ANCHOR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD:=$ANCHOR_ROOT/build}"
: "${PYTHON:=python3}"
T=${ANCHOR_TEST_TMP:-$(mktemp -d)}
cd "$ANCHOR_ROOT"
STEPS=${E2E_STEPS:-6}

if ! "$PYTHON" -c 'import anchor, torch' 2>/dev/null; then
	echo "skipped: the anchor module or torch is not importable (make; scripts/install-deps.sh)"
	exit 77
fi

DEMO_SKIP_SETUP=1 DEMO_OUT="$T/demo" DEMO_STEPS=$STEPS BUILD="$BUILD" PYTHON="$PYTHON" \
	DEMO_ARGS="--d-model 32 --layers 1 --batch-size 8 --workers 1" \
	bash scripts/demo.sh >"$T/demo.out" 2>"$T/demo.err" || {
	echo "FAIL: demo exited $?"; tail -20 "$T/demo.err"; exit 1; }
cat "$T/demo.out"

# The demo ends with the table and the file list.
grep -q "^scope all: .*emulated sensor, not a measurement" "$T/demo.out"
grep -q "^forward " "$T/demo.out"
grep -q "^files in $T/demo:" "$T/demo.out"
for f in phases.csv perun.csv samples.csv timeline.svg timeline.png phases.svg phases.png trace.json; do
	grep -q " $f\$" "$T/demo.out" || { echo "FAIL: the file list lacks $f"; exit 1; }
done

# functions.csv, energy.speedscope.json and timeline.csv come with the
# functions/timeline commands, and with them py-spy's alignment to the ring
# (align_pyspy): then the samples where py-spy first saw the model's
# forward and autograd's backward must lie inside the anchored forward and
# backward ranges (10-100 ms here: shifting py-spy by 10-20 ms fails it).
extra=()
if "$BUILD/anchorpost" --help | grep -q "^  functions "; then
	extra=(--functions --inside Transformer.forward:forward --inside _engine_run_backward:backward)
	for f in functions.csv energy.speedscope.json timeline.csv; do
		grep -q " $f\$" "$T/demo.out" || { echo "FAIL: the file list lacks $f"; exit 1; }
	done
	# report builds in a temporary directory renamed at the end: its
	# files name each other as they will be, never by that directory
	if grep -l "tmp\.anchorpost" "$T"/demo/*.txt "$T"/demo/*.csv 2>/dev/null; then
		echo "FAIL: report's files name its temporary directory"; exit 1
	fi
fi
"$PYTHON" tests/lib/report_check.py "$T/demo" --steps "$STEPS" --emulated --profile "${extra[@]}"
