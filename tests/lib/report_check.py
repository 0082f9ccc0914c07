"""Check an `anchorpost report` directory: every output exists and parses
(CSV with csv, JSON with json, SVG as XML, PNG signature + IHDR), the
per-phase energies add up to perun's own total, the phases' counts, the
"emulated sensor" notices, and the structure of trace.json as
ui.perfetto.dev and chrome://tracing need it.

  python tests/lib/report_check.py OUTDIR --steps N [--emulated] [--profile]

With --profile --functions also: one aligned timeline across outputs
(check_timebase: a py-spy sample and a perun sample at the same instant,
to the microsecond, in samples.csv, perun.csv, timeline.csv, trace.json
and the alignment functions.csv used) and the CSVs' pandas dtypes
(check_dtypes).

Prints one "ok" line per check; exits 1 with "FAIL: ..." on the first
failure.  Used by t_e2e_demo_slow.sh, t_report_speedscope_slow.sh and
t_report_tables_slow.sh."""
import argparse
import csv
import json
import math
import struct
import sys
import xml.etree.ElementTree as ET

NOTE = "emulated sensor, not a measurement"


def fail(msg):
	print("FAIL: " + msg)
	sys.exit(1)


def check(cond, msg):
	if not cond:
		fail(msg)


def read_csv(path):
	with open(path, newline="") as f:
		rows = list(csv.DictReader(f))
	check(rows, f"{path}: no rows")
	return rows



def end_windows_j(path, group):
	"""Half the energy of perun's first and last power windows of a group."""
	pts, cum = {}, {}
	for r in read_csv(path):
		if r["device_group"] != group or not r["value"]:
			continue
		if r["metric"] == "power":
			pts.setdefault(r["sensor"], []).append((float(r["t_rel_s"]), float(r["value"])))
		elif r["metric"] == "energy_counter":
			cum.setdefault(r["sensor"], []).append((float(r["t_rel_s"]), float(r["value"])))
	j = 0.0
	for v in pts.values():
		v.sort()
		if len(v) >= 2:
			j += 0.5 * (v[1][0] - v[0][0]) * v[0][1] + 0.5 * (v[-1][0] - v[-2][0]) * v[-1][1]
	for k, v in cum.items():  # sensors with a counter but no power series
		v.sort()
		if k not in pts and len(v) >= 3:
			j += 0.5 * abs(v[1][1] - v[0][1]) + 0.5 * abs(v[-1][1] - v[-2][1])
	return j

def png_size(path):
	with open(path, "rb") as f:
		head = f.read(33)
	check(head[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG signature")
	length, kind = struct.unpack(">I4s", head[8:16])
	check(kind == b"IHDR" and length == 13, f"{path}: first chunk is not IHDR")
	w, h = struct.unpack(">II", head[16:24])
	check(w >= 600 and h >= 300, f"{path}: {w}x{h} is too small to read")
	return w, h


def inside_share(doc, func, phase, tol_us=20000.0):
	"""Share of py-spy's observations of func that fall inside anchor slices
	named phase of the same process: the placement of py-spy on the ring's
	clock, checked on what ran where.  A py-spy slice starts at the sample
	that first saw the function (a real instant); it ends at the first
	sample without it, up to a sampling interval after the function
	returned, so only starts are tested, within tol_us: 2 sample periods of
	the recorder's default 100 Hz, the chrometrace target of issue 5."""
	spans, starts = {}, []
	for e in doc["traceEvents"]:
		if e["ph"] == "X" and e["name"] == phase:
			spans.setdefault(e["pid"], []).append((e["ts"] - tol_us, e["ts"] + e["dur"] + tol_us))
		elif e["ph"] == "B" and e.get("cat") == "py-spy" and e["name"] == func:
			starts.append((e["pid"], e["ts"]))
	check(starts, f"trace.json: no py-spy slice of {func}")
	inside = sum(1 for pid, t in starts if any(x <= t <= y for x, y in spans.get(pid, [])))
	return inside / len(starts)


def check_trace(path, steps, want_stacks, groups, phases):
	with open(path) as f:
		doc = json.load(f)
	check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), "trace.json: no traceEvents list")
	check(doc.get("displayTimeUnit") == "ms", "trace.json: displayTimeUnit")
	ev = doc["traceEvents"]
	stacks, last_ts, counters, names = {}, {}, {}, {}
	x_by_name, b_by_pid = {}, {}
	for i, e in enumerate(ev):
		ph = e.get("ph")
		check(ph in ("B", "E", "X", "i", "C", "M", "b", "e"), f"event {i}: phase {ph!r}")
		check(isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), f"event {i}: pid/tid not integers")
		if ph == "M":
			check(isinstance(e.get("args"), dict), f"event {i}: metadata without args")
			if e["name"] in ("process_name", "thread_name"):
				check(isinstance(e["args"].get("name"), str), f"event {i}: name not a string")
				names[(e["name"], e["pid"], e["tid"])] = e["args"]["name"]
			continue
		ts = e.get("ts")
		check(isinstance(ts, (int, float)) and math.isfinite(ts) and ts >= 0, f"event {i}: ts {ts!r}")
		# Every track's events in time order: per thread (B/E/X/i), per
		# counter series (a counter's track is its name and arg key, as
		# Perfetto draws "cpu power (W)" beside "cpu energy (J)"), per
		# async id.
		track = ("C", e["pid"], e["name"], tuple(sorted(e.get("args", {})))) if ph == "C" else (("A", e["pid"], e["id"]) if ph in "be" else ("T", e["pid"], e["tid"]))
		check(ts >= last_ts.get(track, -1), f"event {i}: ts {ts} goes back on track {track}")
		last_ts[track] = ts
		key = (e["pid"], e["tid"])
		if ph == "B":
			stacks.setdefault(key, []).append(e["name"])
			b_by_pid[e["pid"]] = b_by_pid.get(e["pid"], 0) + 1
		elif ph == "E":
			check(stacks.get(key), f"event {i}: E with no open B on {key}")
			check(e.get("name") == stacks[key][-1], f"event {i}: E named {e.get('name')!r} closes {stacks[key][-1]!r}")
			stacks[key].pop()
		elif ph == "X":
			check(isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, f"event {i}: X without dur")
			x_by_name[e["name"]] = x_by_name.get(e["name"], 0) + 1
		elif ph == "C":
			check(e["args"] and all(isinstance(v, (int, float)) and math.isfinite(v) for v in e["args"].values()),
			      f"event {i}: counter values not numeric: {e['args']}")
			# The track as Perfetto names it: "<name> <arg>", "cpu power (W)".
			for k in e["args"]:
				counters[f"{e['name']} {k}"] = counters.get(f"{e['name']} {k}", 0) + 1
	open_left = {k: v for k, v in stacks.items() if v}
	check(not open_left, f"trace.json: B without E at the end: {list(open_left.items())[:3]}")
	print(f"ok   trace.json: {len(ev)} events; every B closed by an E on its thread in order, ts monotone on "
	      f"{len(last_ts)} tracks, counters numeric")
	for name in phases:
		check(x_by_name.get(name, 0) >= steps, f"trace.json: {x_by_name.get(name, 0)} '{name}' slices, want >= {steps}")
	for g in groups:
		check(counters.get(f"{g} power (W)", 0) > 10, f"trace.json: no counter track for {g}: {counters}")
	check(any(k[0] == "process_name" for k in names) and any(k[0] == "thread_name" for k in names),
	      "trace.json: process/thread name metadata")
	if want_stacks:
		check(b_by_pid, "trace.json: no py-spy stack slices")
	print(f"ok   trace.json: anchor slices {x_by_name}, counter tracks {counters}, py-spy B events per pid {b_by_pid}")
	return doc


def interp(xs, ys, x):
	"""Linear interpolation in sorted xs (ys at x); outside them, the end
	segment's line: the mapping checked with it is affine (t_s -> unix_s),
	and a py-spy sample may precede the timeline's first bin (seen: a
	sample at t_s -0.158 with bins from 0, under load)."""
	import bisect
	check(len(xs) >= 2, f"interp: {len(xs)} points")
	i = min(max(bisect.bisect_right(xs, x), 1), len(xs) - 1)
	x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
	return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 > x0 else y0


def check_timebase(d, doc):
	"""One py-spy sample and one perun sample across every output of the
	report: the same instant to the microsecond."""
	US = 1e-6
	samples = read_csv(f"{d}/samples.csv")
	perun = [r for r in read_csv(f"{d}/perun.csv") if r["t_s"]]
	check(perun, "perun.csv: no row with t_s (aligned round)")
	tl = read_csv(f"{d}/timeline.csv")
	# the first sample of the process the run's phases are on
	phase_pids = {int(r["pid"]) for r in tl if r["phase"]}
	s0 = min((r for r in samples if r["pid"] and int(r["pid"]) in phase_pids and int(r["depth"]) > 0),
	         key=lambda r: float(r["t_s"]))
	t_samp, u_samp = float(s0["t_s"]), float(s0["unix_s"])
	# trace.json: that sample opens its stack's B events at its slice start;
	# ts 0 of the trace is not fixed here, so the perun counter is the reference
	ev = doc["traceEvents"]
	b = [e for e in ev if e.get("cat") == "py-spy" and e.get("ph") == "B" and e["pid"] == int(s0["pid"])]
	check(b, "trace.json: no py-spy event of the sampled pid")
	ts_b = min(e["ts"] for e in b)
	counters = [e for e in ev if e.get("ph") == "C"]
	check(counters, "trace.json: no counter")
	c0 = min(counters, key=lambda e: e["ts"])
	grp = c0["name"].replace("power", "").replace("(W)", "").strip()
	cand = [r for r in perun if r["device_group"] == grp and r["metric"] == "power"]
	check(cand, f"perun.csv: no power rows of group {grp!r}")
	t_perun = min(float(r["t_s"]) for r in cand)
	got = (ts_b - c0["ts"]) * 1e-6
	want = t_samp - t_perun
	check(abs(got - want) <= US, f"trace.json: py-spy sample - perun sample = {got:.9f} s, CSVs say {want:.9f} s")
	origin = c0["ts"] * 1e-6 - t_perun
	print(f"ok   trace.json: first sample of pid {s0['pid']} at {ts_b:.3f} us, perun's first {grp} window at "
	      f"{c0['ts']:.3f} us: {1e6 * abs(got - want):.3f} us from samples.csv/perun.csv (trace ts 0 = t_s {origin:.6f})")
	for k, v in (doc.get("otherData") or {}).items():
		if "unix" in k and isinstance(v, (int, float)):
			u = v + ts_b * 1e-6 if "origin" in k or "epoch" in k or "zero" in k else None
			if k == "ts0_unix_ns":  # trace_json.c: UTC of ts 0
				u = v * 1e-9 + ts_b * 1e-6
			elif k == "ts0_unix_s":
				u = v + ts_b * 1e-6
			if u is not None:
				check(abs(u - u_samp) <= US, f"trace.json otherData {k}: sample at unix {u:.6f}, samples.csv {u_samp:.6f}")
				print(f"ok   trace.json otherData {k}: the sample's unix time matches samples.csv")
	# unix_s: one mapping, so timeline's (interpolated between bins) gives
	# the same UTC for the sample's and the perun sample's t_s
	bins = sorted({(float(r["t_s"]), float(r["unix_s"])) for r in tl if r["unix_s"]})
	xs, ys = [x for x, _ in bins], [y for _, y in bins]
	pr = min(cand, key=lambda r: float(r["t_s"]))
	for what, t, u in (("py-spy sample", t_samp, u_samp), ("perun sample", float(pr["t_s"]), float(pr["unix_s"]))):
		ut = interp(xs, ys, t)
		check(abs(ut - u) <= US, f"timeline.csv: {what} at t_s {t:.9f}: unix {ut:.9f} vs {u:.9f}")
	print(f"ok   timeline.csv: unix_s of the py-spy and the perun sample's t_s agree with samples.csv/perun.csv (<= 1 us)")
	# functions: the alignment it used is the one samples.csv and trace.json state
	fa = open(f"{d}/functions.csv.alignment.txt").read()
	sa = open(f"{d}/samples.csv.alignment.txt").read()
	line = next(l for l in sa.splitlines() if l.startswith("py-spy alignment: "))[len("py-spy alignment: "):]
	check(("alignment: " + line) in fa, f"functions.csv.alignment.txt: another py-spy alignment than samples.csv's ({line})")
	check(doc["otherData"].get("pyspy_alignment") == line, "trace.json: another py-spy alignment than samples.csv's")
	print(f"ok   functions, samples.csv and trace.json state one py-spy alignment: {line[:60]}...")


def check_dtypes(d, profile):
	"""Each CSV loads in pandas with one type per column."""
	try:
		import pandas as pd
	except ImportError:
		print("skip pandas dtypes: no pandas")
		return
	import numpy as np
	want = {
		"phases.csv": {"count": "i", "total_s": "f", "self_s": "f", "energy_j": "f", "share": "f", "row": "O"},
		"timeline.csv": {"t_s": "f", "unix_s": "f", "pid": "i", "power_w": "f"},
		"perun.csv": {"t_rel_s": "f", "t_s": "f", "unix_s": "f", "value": "f"},
	}
	if profile:
		want["samples.csv"] = {"thread": "i", "pid": "i", "sample_index": "i", "t_rel_s": "f", "t_s": "f",
		                       "unix_s": "f", "depth": "i", "stack_id": "i"}
		want["samples.stacks.csv"] = {"stack_id": "i", "depth": "i", "frame_id": "i"}
		want["samples.frames.csv"] = {"frame_id": "i"}
	for name, cols in want.items():
		df = pd.read_csv(f"{d}/{name}", low_memory=False)
		for col, kind in cols.items():
			check(col in df.columns, f"{name}: no column {col}")
			check(df[col].dtype.kind == kind, f"{name}: {col} is {df[col].dtype}, want kind {kind}")
		if name.startswith("samples"):
			bad = [c for c in df.columns if hasattr(pd.DataFrame, c)]
			check(not bad, f"{name}: columns named after DataFrame attributes: {bad}")
		if name == "phases.csv":
			check(set(df["row"]) <= {"phase", "unattributed", "total"}, f"phases.csv: row values {set(df['row'])}")
			check(df[df["row"] == "phase"]["count"].min() >= 1, "phases.csv: a phase row with count 0")
	print(f"ok   pandas dtypes of {', '.join(want)}")


def main():
	ap = argparse.ArgumentParser()
	ap.add_argument("out")
	ap.add_argument("--steps", type=int, required=True)
	ap.add_argument("--emulated", action="store_true")
	ap.add_argument("--profile", action="store_true")
	ap.add_argument("--functions", action="store_true", help="functions.csv, energy.speedscope.json, timeline.csv")
	ap.add_argument("--phases", default="forward,backward,step", help="phases that ran --steps times")
	ap.add_argument("--inside", action="append", default=[], metavar="FUNC:PHASE",
	                help=">= 90 %% of py-spy's FUNC slices in trace.json start inside PHASE slices")
	a = ap.parse_args()
	d = a.out

	rows = [r for r in read_csv(f"{d}/phases.csv") if r["scope"] == "all"]
	groups = sorted({r["device_group"] for r in rows})
	check(groups, "phases.csv: no device group")
	# Counts: every iteration's forward, backward and step.
	phases = a.phases.split(",")
	for name in phases:
		got = {r["count"] for r in rows if r["phase"] == name}
		check(got == {str(a.steps)}, f"phases.csv: '{name}' count {got}, want {a.steps}")
	print(f"ok   phases.csv: {'/'.join(phases)} each {a.steps} times (= iterations)")
	# Energy: phases + unattributed = perun's own total (its HDF5 ENERGY).
	perun_j = {}
	for r in read_csv(f"{d}/perun.csv.energy.csv"):
		perun_j[r["device_group"]] = perun_j.get(r["device_group"], 0.0) + float(r["energy_j"])
	for g in groups:
		parts = [r for r in rows if r["device_group"] == g and r["phase"] != "(total)" and r["energy_j"]]
		s = sum(float(r["energy_j"]) for r in parts)
		check(any(r["phase"] == "(unattributed)" for r in parts), f"phases.csv: no unattributed row for {g}")
		check(g in perun_j and perun_j[g] > 0, f"perun.csv.energy.csv: no energy for {g}")
		err = abs(s - perun_j[g]) / perun_j[g]
		# perun's ENERGY is a trapezoid over per-window powers: it differs
		# from the windows' sum by up to half the first and last windows'
		# energy (docs/perun-emulation.md), more when load makes those
		# windows long or hot.  Allow that end effect beside the 1 %.
		ends = end_windows_j(f"{d}/perun.csv", g)
		total_row = [float(r["energy_j"]) for r in rows if r["device_group"] == g and r["phase"] == "(total)" and r["energy_j"]]
		check(total_row and abs(s - total_row[0]) <= 1e-3 * total_row[0],
		      f"{g}: phases + unattributed = {s:.3f} J vs the (total) row {total_row}")
		check(abs(s - perun_j[g]) <= 0.01 * perun_j[g] + ends,
		      f"{g}: phases + unattributed = {s:.3f} J vs perun's {perun_j[g]:.3f} J ({100 * err:.2f} %, end windows {ends:.3f} J)")
		print(f"ok   {g}: phases + unattributed = {s:.2f} J, perun says {perun_j[g]:.2f} J ({100 * err:.3f} %)")

	for name in ("perun.csv", "samples.csv") if a.profile else ("perun.csv",):
		rows2 = read_csv(f"{d}/{name}")
		print(f"ok   {name}: {len(rows2)} rows, columns {list(rows2[0])[:6]}...")
	if a.functions:
		rows3 = read_csv(f"{d}/timeline.csv")
		print(f"ok   timeline.csv: {len(rows3)} bins, columns {list(rows3[0])[:5]}...")
	if a.functions and a.profile:
		fn = read_csv(f"{d}/functions.csv")
		check(any(float(r["self_j"] or 0) > 0 for r in fn), "functions.csv: no function got joules")
		with open(f"{d}/energy.speedscope.json") as f:
			ss = json.load(f)
		check(ss.get("profiles") and ss.get("shared", {}).get("frames"), "energy.speedscope.json: no profiles/frames")
		for prof in ss["profiles"]:
			check(len(prof["samples"]) == len(prof["weights"]), "energy.speedscope.json: samples/weights lengths")
			check(all(w >= 0 for w in prof["weights"]), "energy.speedscope.json: negative weight")
		top = max(fn, key=lambda r: float(r["self_j"] or 0))
		print(f"ok   functions.csv: {len(fn)} functions (top: {top['function']} {float(top['self_j']):.2f} J); "
		      f"energy.speedscope.json: {len(ss['profiles'])} profiles")
	for pic in ("timeline", "phases"):
		root = ET.parse(f"{d}/{pic}.svg").getroot()
		check(root.tag == "{http://www.w3.org/2000/svg}svg", f"{pic}.svg: root is {root.tag}")
		title = "".join(t.text or "" for t in root if t.tag.endswith("title"))
		w, h = png_size(f"{d}/{pic}.png")
		if a.emulated:
			check(NOTE in title, f"{pic}.svg: title {title!r} lacks the emulated-sensor note")
		print(f"ok   {pic}.svg parses ({title!r}); {pic}.png {w}x{h}")
	doc = check_trace(f"{d}/trace.json", a.steps, a.profile, groups, phases)
	for spec in a.inside:
		func, phase = spec.split(":")
		share = inside_share(doc, func, phase)
		check(share >= 0.9, f"trace.json: only {100 * share:.1f} % of py-spy's '{func}' slices start inside '{phase}' slices")
		print(f"ok   trace.json: {100 * share:.1f} % of py-spy's '{func}' slices start inside '{phase}' anchor slices")
	if a.emulated:
		check(all(r["sensor_note"] == NOTE for r in rows), "phases.csv: sensor_note")
		check(NOTE in json.dumps(doc["otherData"]), "trace.json: otherData lacks the note")
		with open(f"{d}/EMULATED_SENSOR.txt") as f:
			check(NOTE in f.read(), "EMULATED_SENSOR.txt")
		print("ok   emulated-sensor note in phases.csv, the SVG titles, trace.json, EMULATED_SENSOR.txt")
	if a.profile and a.functions:
		check_timebase(d, doc)
	check_dtypes(d, a.profile)
	print("all report checks ok")


main()
