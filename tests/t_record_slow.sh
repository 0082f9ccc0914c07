#!/usr/bin/env bash
# t_record_slow.sh - `anchorpost record` on a shortened examples/transformer.py:
# real PyTorch (DataLoader workers), real perun over the emulated RAPL
# (CPU-activity model), real py-spy attached with --subprocesses.
# Checks: every output exists and parses; the profile holds the training
# process and a DataLoader worker; the HDF5 sensors say "emulated sensor";
# the ring holds forward/backward/step ranges = steps (when the anchor
# module is built; otherwise the recording is checked with
# --no-anchor-calls and the test ends as skipped); a script's exit status
# comes back through perun.
set -eu
: "${ANCHOR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD:=$ANCHOR_ROOT/build}"
: "${PYTHON:=python3}"
T=${ANCHOR_TEST_TMP:-$(mktemp -d)}
cd "$ANCHOR_ROOT"
STEPS=8

if "$PYTHON" -c 'import anchor' 2>/dev/null; then
	anchor_args=() have_anchor=1
else
	anchor_args=(--no-anchor-calls) have_anchor=0
	echo "note: the anchor module is not importable; recording with --no-anchor-calls"
fi

"$BUILD/anchorpost" record -o "$T/rec" --rate 25 --sampling-period 0.1 --sensor emulated -- \
	"$PYTHON" examples/transformer.py --steps $STEPS --epochs 1 --d-model 32 --layers 1 \
	--batch-size 8 --workers 1 "${anchor_args[@]}" | tee "$T/record.out"

for f in run.ring record.json profile.chrometrace.json perun/transformer.hdf5 \
	perun/EMULATED_SENSOR.txt emulated/truth.json; do
	[ -s "$T/rec/$f" ] || { echo "FAIL: $f missing or empty"; exit 1; }
	grep -q " $f\$" "$T/record.out" || { echo "FAIL: record did not list $f"; exit 1; }
done
grep -q "emulated sensor, not a measurement" "$T/record.out"

"$BUILD/anchorpost" dump "$T/rec/run.ring" -o "$T/ring.csv"

"$PYTHON" - "$T" "$STEPS" "$have_anchor" <<'PY'
import csv, json, sys
import h5py
T, steps, have_anchor = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
rec = json.load(open(f"{T}/rec/record.json"))
pid = rec["training_pid"]
assert rec["exit_status"] == 0 and rec["sensor"] == "emulated", rec

ev = json.load(open(f"{T}/rec/profile.chrometrace.json"))
assert isinstance(ev, list) and ev, "chrometrace is a non-empty JSON array"
pids = {e["pid"] for e in ev}
frames_by_pid = {}
for e in ev:
	frames_by_pid.setdefault(e["pid"], set()).add(e["name"])
assert pid in pids, f"training pid {pid} not in the profile ({pids})"
assert "main" in frames_by_pid[pid], "transformer's main() sampled in the training process"
workers = [p for p, fr in frames_by_pid.items() if p != pid and "_worker_loop" in fr]
assert workers, "a DataLoader worker (_worker_loop) sampled via --subprocesses"
print(f"ok   profile: {len(ev)} events, pids {sorted(pids)}, DataLoader workers {workers}")

found = {}
with h5py.File(f"{T}/rec/perun/transformer.hdf5", "r") as f:
	def visit(name, obj):
		if isinstance(obj, h5py.Group) and "raw_data" in obj and "alt_values" in obj["raw_data"]:
			found[name.rsplit("/", 1)[-1]] = (float(obj["metrics/ENERGY"].attrs["value"]), obj.attrs.get("emulated_sensor"))
	f.visititems(visit)
assert set(found) == {"cpu_0_package-0", "ram_0_dram"}, found
for k, (e, note) in found.items():
	assert e > 0 and note == "emulated sensor, not a measurement", (k, e, note)
truth = json.load(open(f"{T}/rec/emulated/truth.json"))
pkg = found["cpu_0_package-0"][0]
assert 0 < pkg <= truth["devices"]["package"]["total_j"] * 1.01, (pkg, truth["devices"])
print(f"ok   perun: package {pkg:.1f} J, dram {found['ram_0_dram'][0]:.1f} J (emulated; updater total {truth['devices']['package']['total_j']:.1f} J)")

begins, starts = {}, set()
with open(f"{T}/ring.csv") as f:
	for row in csv.DictReader(f):
		if row["kind"] == "begin":
			begins[row["name"]] = begins.get(row["name"], 0) + 1
		elif row["kind"] in ("proc_start", "fork"):
			starts.add(int(row["pid"]))
assert pid in starts, "the training process is in the ring"
assert set(workers) & starts, "the profiled DataLoader worker is in the ring"
if have_anchor:
	for name in ("data", "forward", "loss", "backward", "step"):
		assert begins.get(name) == steps, f"ring: {begins.get(name)} '{name}' ranges, want {steps}"
	print(f"ok   ring: {steps} ranges each of data/forward/loss/backward/step")
else:
	assert not begins, begins
PY

# The script's exit status comes back through perun and the recorder.
# perun, on a failed script, waits monitor.queue_timeout (60 s) for data
# that never comes, then 10 s for its sampler: PERUN_QUEUE_TIMEOUT=3 cuts
# the first wait (about 1 min of this test); the status is checked the same.
printf 'import sys\nprint("exiting 3")\nsys.exit(3)\n' >"$T/exit3.py"
rc=0
PERUN_QUEUE_TIMEOUT=3 "$BUILD/anchorpost" record -o "$T/rec3" --sensor emulated --rate 10 --no-subprocesses -- "$PYTHON" "$T/exit3.py" >/dev/null || rc=$?
[ $rc -eq 3 ] || { echo "FAIL: exit status $rc, want 3"; exit 1; }
echo "ok   exit status 3 forwarded"

# Refuses to overwrite a recording.
if "$BUILD/anchorpost" record -o "$T/rec3" -- "$PYTHON" "$T/exit3.py" 2>"$T/err"; then
	echo "FAIL: recorded over an existing run"; exit 1
fi
grep -q "already holds a recording" "$T/err"

if [ $have_anchor -eq 0 ]; then
	echo "skipped: recording checked, but the anchor module is not built, so forward/backward counts were not"
	exit 77
fi
echo "all ok"
