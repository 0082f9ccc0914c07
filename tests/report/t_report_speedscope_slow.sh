#!/usr/bin/env bash
# t_report_speedscope_slow.sh - `anchorpost report` on a speedscope profile
# (py-spy's other format: nominal sample times, per-thread profiles) of a
# small anchored script: tests/victims/functions_victim.py spins in "hot" ranges
# and sleeps in "cool" ones, with sync pulses, under real perun (emulated
# RAPL) and real py-spy via `anchorpost record --format speedscope`.
# Checks as the demo's (tests/lib/report_check.py): sums, counts, every file
# parses, trace.json's structure with speedscope's per-thread nominal
# times placed by align_pyspy.  Not checked: where py-spy's hot_spin lands
# (speedscope times are nominal; on one run 83 % of the samples that first
# saw hot_spin fell inside "hot", and an earlier align_pyspy gave 67 %;
# chrometrace, in t_e2e_demo_slow, is held to >= 90 %).
set -eu
: "${ANCHOR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD:=$ANCHOR_ROOT/build}"
: "${PYTHON:=python3}"
T=${ANCHOR_TEST_TMP:-$(mktemp -d)}
cd "$ANCHOR_ROOT"
REPS=6

if ! "$PYTHON" -c 'import anchor' 2>/dev/null; then
	echo "skipped: the anchor module is not importable (make)"
	exit 77
fi
"$BUILD/anchorpost" record -o "$T/rec" --format speedscope --rate 100 --sensor emulated -- \
	"$PYTHON" tests/victims/functions_victim.py $REPS >"$T/record.out"
"$BUILD/anchorpost" report --ring "$T/rec/run.ring" --perun "$T/rec/perun/functions_victim.hdf5" \
	--profile "$T/rec/profile.speedscope.json" -d "$T/rep" | tee "$T/report.out"
grep -q "^py-spy speedscope: " "$T/report.out"
"$PYTHON" tests/lib/report_check.py "$T/rep" --steps $REPS --phases hot,cool --emulated --profile --functions
