#!/usr/bin/env bash
# t_record_interrupt_slow.sh - Ctrl-C during `anchorpost record` keeps the data.
# SIGINT to the recorder (what a terminal's Ctrl-C delivers to the foreground
# group, in which the recorder is alone) must end the script with status
# 130 while perun still writes its HDF5 (perun 1.0.0 alone writes nothing on
# KeyboardInterrupt), py-spy its profile and the emulator its truth.json.
set -eu
: "${ANCHOR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD:=$ANCHOR_ROOT/build}"
: "${PYTHON:=python3}"
T=${ANCHOR_TEST_TMP:-$(mktemp -d)}
cd "$ANCHOR_ROOT"

cat >"$T/long.py" <<'PY'
import os, sys, time
import anchor
open(sys.argv[1], "w").write(str(os.getpid()))
t = time.time()
while time.time() - t < 120:
	with anchor.phase("work"):
		sum(range(10000))
print("not interrupted")
PY
"$BUILD/anchorpost" record -o "$T/rec" --sensor emulated --rate 20 -- "$PYTHON" "$T/long.py" "$T/started" \
	>"$T/out" 2>"$T/err" &
rec=$!
for _ in $(seq 600); do [ -s "$T/started" ] && break; sleep 0.1; done
[ -s "$T/started" ] || { echo "FAIL: the script did not start"; kill -INT $rec; exit 1; }
sleep 3
kill -INT $rec
t_kill=$SECONDS
rc=0
wait $rec || rc=$?
cat "$T/out"
took=$((SECONDS - t_kill))
# The script alone would run 120 s more; perun's saving and py-spy's
# writing take a few seconds.
[ $took -lt 60 ] || { echo "FAIL: the run went on for ${took}s after Ctrl-C"; exit 1; }
echo "ok   recorder done ${took}s after Ctrl-C"
[ $rc -eq 130 ] || { echo "FAIL: exit status $rc, want 130"; tail -20 "$T/err"; exit 1; }
! grep -q "not interrupted" "$T/out"
for f in perun/long.hdf5 profile.chrometrace.json emulated/truth.json run.ring record.json; do
	[ -s "$T/rec/$f" ] || { echo "FAIL: $f missing after Ctrl-C"; tail -20 "$T/err"; exit 1; }
done
"$PYTHON" - "$T/rec" <<'PY'
import json, sys, h5py
d = sys.argv[1]
assert json.load(open(f"{d}/record.json"))["exit_status"] == 130
e = {}
with h5py.File(f"{d}/perun/long.hdf5", "r") as f:
	f.visititems(lambda n, o: e.__setitem__(n.rsplit("/", 1)[-1], float(o["metrics/ENERGY"].attrs["value"]))
		     if n.endswith("cpu_0_package-0") else None)
assert e and e["cpu_0_package-0"] > 0, e
json.load(open(f"{d}/profile.chrometrace.json"))
print(f"ok   after Ctrl-C: status 130, perun package {e['cpu_0_package-0']:.1f} J (emulated), profile and truth written")
PY
# The interrupted run is analysed like any other, profile included.
"$BUILD/anchorpost" report --ring "$T/rec/run.ring" --perun "$T/rec/perun/long.hdf5" \
	--profile "$T/rec/profile.chrometrace.json" -d "$T/rec/report" >"$T/report.out" 2>&1 ||
	{ echo "FAIL: report after Ctrl-C:"; tail -5 "$T/report.out"; exit 1; }
grep -q "^work " "$T/report.out" || { echo "FAIL: no 'work' row after Ctrl-C"; head -20 "$T/report.out"; exit 1; }
echo "ok   report with the profile after Ctrl-C"
