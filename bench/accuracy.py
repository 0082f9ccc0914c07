"""Attribution accuracy against ground truth: `make accuracy`.

Each scenario runs the synthetic workload (tools/groundtruth) under real
perun reading an emulated RAPL sensor whose power per phase is known
(emulated sensor, not a measurement), with libanchor preloaded, then
`anchorpost phases`, and compares every phase's joules with truth.json:
error and whether the 95 % interval covers the truth.

  python bench/accuracy.py [--quick] [--only NAME] [--out DIR] [--method auto]

--quick runs the small subset the test suite asserts on
(tests/perun/t_accuracy_slow.py).  Targets (DESIGN.md): <= 2 % for phases longer
than 5 sensor periods; <= 10 % for phases 5x shorter than the period with
>= 200 repetitions; intervals covering the truth in >= 90 % of cases.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "groundtruth"))
import run_scenario  # noqa: E402

GROUPS = {"cpu": "package", "ram": "dram"}

# name, period s, phases (name, ms, pkg W, dram W), repeat, jitter, hook, noise, class
SCENARIOS = [
	("p0.1-long", 0.1, [("fwd", 700, 45, 5), ("bwd", 1000, 75, 8), ("step", 600, 30, 4)], 4, 0.2, True, 0.0, "long"),
	("p0.1-short", 0.1, [("fwd", 20, 40, 5), ("bwd", 25, 70, 8), ("step", 15, 30, 4)], 250, 0.3, True, 0.0, "short"),
	("p0.1-short-noise", 0.1, [("fwd", 20, 40, 5), ("bwd", 25, 70, 8), ("step", 15, 30, 4)], 250, 0.3, True, 0.05, "short"),
	("p0.1-short-nohook", 0.1, [("fwd", 20, 40, 5), ("bwd", 25, 70, 8), ("step", 15, 30, 4)], 250, 0.3, False, 0.0, "short"),
	("p0.1-mixed-20ms-5s", 0.1, [("tiny", 20, 60, 6), ("mid", 300, 40, 5), ("long", 5000, 80, 9)], 3, 0.2, True, 0.0, "mixed"),
	("p0.5-long", 0.5, [("fwd", 3000, 45, 5), ("bwd", 4000, 75, 8), ("step", 2600, 30, 4)], 2, 0.2, True, 0.0, "long"),
	("p0.5-short", 0.5, [("fwd", 100, 40, 5), ("bwd", 120, 70, 8), ("step", 80, 30, 4)], 200, 0.3, True, 0.0, "short"),
	("p1-long", 1.0, [("fwd", 5500, 45, 5), ("bwd", 6000, 75, 8), ("step", 5200, 30, 4)], 1, 0.2, True, 0.0, "long"),
	("p1-short", 1.0, [("fwd", 200, 40, 5), ("bwd", 250, 70, 8), ("step", 150, 30, 4)], 200, 0.3, True, 0.0, "short"),
]
QUICK = ("p0.1-long", "p0.1-short", "p0.1-short-nohook")
# The fallback alignment (execution_dt + offset fit) is measured on the
# recording of the hooked scenario with the same workload, through
# `phases --no-hook` (perun's sample stamps in the ring ignored): the same
# perun file and phases the fallback would see without the hook, one
# recording (~15 s of workload plus perun's start) fewer.  Recorded anew
# when that scenario did not run first (--only).
NO_HOOK_FROM = {"p0.1-short-nohook": "p0.1-short"}
# An updater stall of this many sensor periods or more: the recording is
# made again (run_one).  Stalls of 26-35 ms were seen in passing loaded
# runs; half a period keeps them and refuses the 100.9 ms one.
STALL_PERIODS = 0.5


def run_one(sc, out, anchorpost, method, recorded=None):
	"""recorded: the output directory of a scenario with this workload,
	already recorded with the hook; analysed again with --no-hook."""
	name, period, phases, repeat, jitter, hook, noise, klass = sc
	if recorded:
		return analyse(sc, recorded, anchorpost, method, ["--no-hook"], out)
	for attempt in range(3):
		record(sc, out)
		stall_ms = json.load(open(os.path.join(out, "truth.json")))["tick_ms"]["max"]
		if stall_ms < STALL_PERIODS * period * 1e3:
			break
		if attempt == 2:
			print(f"# {name}: the updater stalled {stall_ms:.1f} ms in a third recording too: analysed as it is",
			      flush=True)
			break
		# A RAPL counter never stalls; the emulator's updater, SCHED_FIFO
		# on a loaded VM, once did for 100.9 ms (a suite run beside
		# stress-ng --cpu 4): perun then read stale counters for a whole
		# window, energy the sensor model does not have, and that run's
		# dram split missed its point target by 23 % (intervals held).
		# Such a recording tests the harness, not anchorpost: kept beside,
		# recorded again, said.
		shutil.rmtree(out + ".stalled%d" % attempt, ignore_errors=True)
		os.replace(out, out + ".stalled%d" % attempt)
		print(f"# {name}: the emulated sensor's updater stalled {stall_ms:.1f} ms (>= {STALL_PERIODS:g} sensor "
		      f"period): not a RAPL counter's behaviour; recorded again (kept in {out}.stalled{attempt})", flush=True)
	return analyse(sc, out, anchorpost, method, [], out)


def record(sc, out):
	name, period, phases, repeat, jitter, hook, noise, klass = sc
	spec = run_scenario.make_spec(phases=[(n, ms, pw, dw, "spin") for n, ms, pw, dw in phases],
				      repeat=repeat, jitter=jitter, sampling_period=period, seed=7)
	env_keep = {k: os.environ.get(k) for k in ("ANCHOR_AUTO", "ANCHOR_SYNC_PULSE", "ANCHOR_PERUN_HOOK")}
	os.environ["ANCHOR_SYNC_PULSE"] = "0"
	if hook:
		os.environ["ANCHOR_AUTO"] = "perun"
		os.environ.pop("ANCHOR_PERUN_HOOK", None)
	else:
		# The hook is on by default under libanchor: switch it off to
		# measure the fallback alignment.
		os.environ.pop("ANCHOR_AUTO", None)
		os.environ["ANCHOR_PERUN_HOOK"] = "0"
	try:
		run_scenario.run(out, spec, sampling_period=period, noise=noise, quiet=True)
	finally:
		for k, v in env_keep.items():
			if v is None:
				os.environ.pop(k, None)
			else:
				os.environ[k] = v


def analyse(sc, rec, anchorpost, method, extra, out):
	"""anchorpost phases on the recording in rec (CSV into out) vs its truth."""
	name, period, phases, repeat, jitter, hook, noise, klass = sc
	os.makedirs(out, exist_ok=True)
	truth = json.load(open(os.path.join(rec, "truth.json")))
	csv_path = os.path.join(out, "phases.csv")
	r = subprocess.run([anchorpost, "phases", "--ring", os.path.join(rec, "run.ring"), "--perun",
			    os.path.join(rec, "perun", "workload.hdf5"), "--method", method, *extra, "-o", csv_path],
			   capture_output=True, text=True)
	if r.returncode != 0:
		raise RuntimeError(f"{name}: anchorpost phases failed: {r.stderr.strip()}")
	rows = list(csv.DictReader(open(csv_path)))
	results = []
	for row in rows:
		if row["scope"] != "all" or row["device_group"] not in GROUPS or row["phase"].startswith("("):
			continue
		t = truth["phases"].get(row["phase"])
		if not t:
			continue
		true_j = t["energy_j"][GROUPS[row["device_group"]]]
		est = float(row["energy_j"])
		lo, hi = float(row["ci95_low_j"]), float(row["ci95_high_j"])
		mean_ms = float(row["mean_ms"])
		results.append({
			"scenario": name, "class": klass, "period_s": period, "phase": row["phase"],
			"mean_ms": mean_ms, "periods": mean_ms / 1e3 / period, "count": int(row["count"]),
			"group": row["device_group"], "true_j": true_j, "est_j": est,
			"err_pct": 100 * (est - true_j) / true_j if true_j else 0.0,
			"ci_low_j": lo, "ci_high_j": hi, "covered": lo <= true_j <= hi,
			"method": row["method"], "alignment": row["alignment"],
			"align_ms": float(row["align_uncert_ms"]),
		})
	return results


def main():
	ap = argparse.ArgumentParser()
	ap.add_argument("--quick", action="store_true")
	ap.add_argument("--only")
	ap.add_argument("--out", default=os.path.join(ROOT, "bench", "data", "accuracy"))
	ap.add_argument("--method", default="auto")
	ap.add_argument("--json", help="write all rows here")
	a = ap.parse_args()
	anchorpost = os.path.join(os.environ.get("BUILD", os.path.join(ROOT, "build")), "anchorpost")
	allrows, done = [], set()
	for sc in SCENARIOS:
		if a.quick and sc[0] not in QUICK:
			continue
		if a.only and a.only not in sc[0]:
			continue
		t0 = time.time()
		src = NO_HOOK_FROM.get(sc[0])
		recorded = os.path.join(a.out, src) if src in done else None
		rows = run_one(sc, os.path.join(a.out, sc[0]), anchorpost, a.method, recorded)
		done.add(sc[0])
		allrows += rows
		print(f"# {sc[0]}: {len(rows)} rows, {time.time() - t0:.0f} s, alignment {rows[0]['alignment'] if rows else '-'}"
		      + (f" (the recording of {src}, phases --no-hook)" if recorded else ""), flush=True)
	print()
	print("| scenario | period | phase | mean ms | periods | n | group | true J | est J | error | 95 % CI | covers | method |")
	print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for r in allrows:
		print(f"| {r['scenario']} | {r['period_s']:g} s | {r['phase']} | {r['mean_ms']:.0f} | {r['periods']:.2f} | "
		      f"{r['count']} | {r['group']} | {r['true_j']:.2f} | {r['est_j']:.2f} | {r['err_pct']:+.2f} % | "
		      f"[{r['ci_low_j']:.2f}, {r['ci_high_j']:.2f}] | {'yes' if r['covered'] else 'NO'} | {r['method']} |")
	long_rows = [r for r in allrows if r["periods"] >= 5]
	# The short-phase targets pair an error bound with interval coverage
	# (issue 5).  Error is asserted with exact perun alignment (the hook);
	# the execution_dt + fit scenarios are reported, and count for coverage.
	short_all = [r for r in allrows if r["periods"] <= 0.3 and r["count"] >= 200]
	short_rows = [r for r in short_all if r["alignment"].startswith("perun-hook")]
	short_fit = [r for r in short_all if not r["alignment"].startswith("perun-hook")]
	cover = sum(r["covered"] for r in short_all) / max(1, len(short_all))
	cover_all = sum(r["covered"] for r in allrows) / max(1, len(allrows))
	def worst(rs):
		return max((abs(r["err_pct"]) for r in rs), default=float("nan"))
	print()
	print(f"phases >= 5 sensor periods: {len(long_rows)} rows, worst |error| {worst(long_rows):.2f} % (target <= 2 %)")
	print(f"phases ~period/5, >= 200 reps, exact perun alignment: {len(short_rows)} rows, worst |error| "
	      f"{worst(short_rows):.2f} % (target <= 10 %)")
	print(f"the same with execution_dt + fitted offset: {len(short_fit)} rows, worst |error| {worst(short_fit):.2f} %")
	print(f"95 % intervals covering the truth, short phases: {100 * cover:.0f} % of {len(short_all)} rows (target >= 90 %)")
	print(f"95 % intervals covering the truth, all rows: {100 * cover_all:.0f} % of {len(allrows)}")
	print("emulated sensor, not a measurement: the power is known because it is emulated")
	if a.json:
		json.dump(allrows, open(a.json, "w"), indent=1)
	ok = worst(long_rows) <= 2 and (not short_rows or worst(short_rows) <= 10) and cover >= 0.9
	return 0 if ok else 1


if __name__ == "__main__":
	sys.exit(main())
