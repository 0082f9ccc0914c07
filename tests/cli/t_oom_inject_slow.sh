#!/usr/bin/env bash
# t_oom_inject_slow.sh - out-of-memory fault injection (SQLite's way) for
# the readers (ring, perun through its guard, py-spy) and the run model
# (run_model_open: ring + perun + profile, alignments, sample energies):
# build/test_oom fails our allocation N, one N at a time, and requires an
# error with a message each time: no exit, no crash, no success computed
# without the allocation.  Which N: every distinct call stack of an
# allocation (from a dry run) fails at its first two occurrences and its
# last (TEST_OOM_FULL=1: every N); repeats of a stack take the same path
# (tests/unit/test_oom.c says why).  Before: every N below 1000, every 7th
# above: 5.7x the forks, and 40 allocations' call sites never failed.  Inputs: a synthetic ring (tools/ringgen), a perun file of its
# emulated RAPL counters (tools/ringgen/perun_synth.py) and a small
# chrometrace profile of the same pid, which together open and align.
set -eu
: "${ANCHOR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD:=$ANCHOR_ROOT/build}"
: "${PYTHON:=python3}"
T=${ANCHOR_TEST_TMP:-$(mktemp -d)}
cd "$ANCHOR_ROOT"
if ! "$PYTHON" -c 'import h5py' 2>/dev/null; then
	echo "skipped: h5py missing (scripts/install-deps.sh)"
	exit 77
fi
make -s B="$BUILD" "$BUILD/test_oom" "$BUILD/tools/ringgen"
"$BUILD/tools/ringgen" "$T/r.ring" --rank 0 --nranks 1 --steps 30 --host hostA --pid 4242 \
	--power-out "$T/power.csv" >/dev/null
"$PYTHON" tools/ringgen/perun_synth.py "$T/p.hdf5" "hostA=$T/power.csv"
"$PYTHON" - "$T/prof.json" <<'PY'
import json, sys
ev, t = [], 0
for i in range(90):
    n = ("fwd", "bwd", "opt")[i % 3]
    a = {"filename": "/x/train.py", "line": 3 + i % 3}
    ev.append({"args": a, "cat": "py-spy", "name": n, "ph": "B", "pid": 4242, "tid": 1, "ts": t})
    t += 3000
    ev.append({"args": a, "cat": "py-spy", "name": n, "ph": "E", "pid": 4242, "tid": 1, "ts": t})
json.dump(ev, open(sys.argv[1], "w"))
PY
# The inputs must open without injection, or the sweep tests nothing.
"$BUILD/anchorpost" functions --ring "$T/r.ring" --perun "$T/p.hdf5" --profile "$T/prof.json" \
	-o "$T/functions.csv" 2>/dev/null
"$BUILD/test_oom" "$T/r.ring" "$T/p.hdf5" "$T/prof.json"
