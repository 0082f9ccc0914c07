#!/usr/bin/env bash
# t_record_interrupt_slow.sh - Ctrl-C or SIGTERM during `anchorpost record`
# keeps the data.  SIGINT to the recorder (what a terminal's Ctrl-C delivers
# to the foreground group, in which the recorder is alone) must end the
# script with status 130 while perun still writes its HDF5 (perun 1.0.0
# alone writes nothing on KeyboardInterrupt), py-spy its profile and the
# emulator its truth.json.  SIGTERM (`timeout`, `kill`, a batch system's
# time limit) must do the same, and the recorder then exits 143.
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
# interrupt_run SIG DIR WANT_RC: record long.py into DIR, send SIG to the
# recorder once the script runs, and check that everything was saved.
interrupt_run() {
	local sig=$1 dir=$2 want=$3 rec rc=0 t_kill took
	rm -f "$T/started"
	"$BUILD/anchorpost" record -o "$dir" --sensor emulated --rate 20 -- "$PYTHON" "$T/long.py" "$T/started" \
		>"$T/out" 2>"$T/err" &
	rec=$!
	for _ in $(seq 600); do [ -s "$T/started" ] && break; sleep 0.1; done
	[ -s "$T/started" ] || { echo "FAIL: the script did not start"; kill -INT $rec; exit 1; }
	sleep 3
	kill -"$sig" $rec
	t_kill=$SECONDS
	wait $rec || rc=$?
	cat "$T/out"
	took=$((SECONDS - t_kill))
	# The script alone would run 120 s more; perun's saving and py-spy's
	# writing take a few seconds.
	[ $took -lt 60 ] || { echo "FAIL: the run went on for ${took}s after SIG$sig"; exit 1; }
	echo "ok   recorder done ${took}s after SIG$sig"
	[ $rc -eq "$want" ] || { echo "FAIL: exit status $rc after SIG$sig, want $want"; tail -20 "$T/err"; exit 1; }
	! grep -q "not interrupted" "$T/out"
	for f in perun/long.hdf5 profile.chrometrace.json emulated/truth.json run.ring record.json; do
		[ -s "$dir/$f" ] || { echo "FAIL: $f missing after SIG$sig"; tail -20 "$T/err"; exit 1; }
	done
	"$PYTHON" - "$dir" "SIG$sig" <<'PY'
import json, sys, h5py
d, sig = sys.argv[1:3]
rec = json.load(open(f"{d}/record.json"))
assert rec["exit_status"] == 130, rec
assert rec.get("stopped_by") == sig, rec
e = {}
with h5py.File(f"{d}/perun/long.hdf5", "r") as f:
	f.visititems(lambda n, o: e.__setitem__(n.rsplit("/", 1)[-1], float(o["metrics/ENERGY"].attrs["value"]))
		     if n.endswith("cpu_0_package-0") else None)
assert e and e["cpu_0_package-0"] > 0, e
json.load(open(f"{d}/profile.chrometrace.json"))
print(f"ok   after {sig}: script status 130, perun package {e['cpu_0_package-0']:.1f} J (emulated), profile and truth written")
PY
}

interrupt_run INT "$T/rec" 130
# The interrupted run is analysed like any other, profile included.
"$BUILD/anchorpost" report --ring "$T/rec/run.ring" --perun "$T/rec/perun/long.hdf5" \
	--profile "$T/rec/profile.chrometrace.json" -d "$T/rec/report" >"$T/report.out" 2>&1 ||
	{ echo "FAIL: report after Ctrl-C:"; tail -5 "$T/report.out"; exit 1; }
grep -q "^work " "$T/report.out" || { echo "FAIL: no 'work' row after Ctrl-C"; head -20 "$T/report.out"; exit 1; }
echo "ok   report with the profile after Ctrl-C"

# A request to stop (SIGTERM: `timeout`, `kill`, a batch system) saves the
# same files; the recorder ends with 128 + 15 so its caller sees the signal.
# (On the old recorder SIGTERM killed it outright: no record.json, and the
# script ran on unrecorded.)
interrupt_run TERM "$T/rec_term" 143
"$BUILD/anchorpost" report "$T/rec_term" -d "$T/rec_term/report" >"$T/report_term.out" 2>&1 ||
	{ echo "FAIL: report after SIGTERM:"; tail -5 "$T/report_term.out"; exit 1; }
grep -q "^work " "$T/report_term.out" || { echo "FAIL: no 'work' row after SIGTERM"; head -20 "$T/report_term.out"; exit 1; }
echo "ok   report after SIGTERM"
