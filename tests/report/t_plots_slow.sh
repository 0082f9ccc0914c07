#!/usr/bin/env bash
# t_plots_slow.sh - the report's pictures as a reader sees them, on real
# recordings (tests/lib/plot_check.py): 20 phases with long names under real
# perun (emulated RAPL) and the anchor preload: real <text> naming every
# phase in phases.svg and timeline.svg, none of the tool's own phases,
# 20 distinct legend colours, PNGs produced; then 3 phases under plain
# perun, which here reads no power sensor: the phases picture shows
# nonzero time bars and says there is no energy (that part skips where
# perun finds a real sensor).
set -eu
: "${ANCHOR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD:=$ANCHOR_ROOT/build}"
: "${PYTHON:=python3}"
T=${ANCHOR_TEST_TMP:-$(mktemp -d)}
cd "$ANCHOR_ROOT"

if ! "$PYTHON" -c 'import anchor' 2>/dev/null; then
	echo "skipped: the anchor module is not importable (make)"
	exit 77
fi
"$BUILD/anchorpost" record -d "$T/rec20" --sensor emulated -- "$PYTHON" tests/victims/plot_victim.py 20 --long >"$T/rec20.out"
"$BUILD/anchorpost" report --ring "$T/rec20/run.ring" --perun "$T/rec20/perun/plot_victim.hdf5" -d "$T/rep20" >"$T/rep20.out"
"$PYTHON" tests/lib/plot_check.py "$T/rep20" --phases 20

LD_PRELOAD="$BUILD/libanchor.so" ANCHOR_FILE="$T/ns.ring" "$PYTHON" -m perun monitor --data_out "$T/ns" \
	--sampling_period 0.1 tests/victims/plot_victim.py 3 >"$T/ns.out" 2>&1
"$BUILD/anchorpost" report --ring "$T/ns.ring" --perun "$(ls "$T"/ns/*.hdf5)" -d "$T/repns" >"$T/repns.out" 2>&1
if ! grep -q ",no-power-sensor," "$T/repns/phases.csv"; then
	echo "no-sensor part skipped: plain perun found a power sensor on this machine"
	exit 0
fi
"$PYTHON" tests/lib/plot_check.py "$T/repns" --phases 3 --no-sensor
