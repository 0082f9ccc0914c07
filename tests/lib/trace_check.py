"""Check trace.json (anchorpost report / timeline) as strict tools read it.

  python tests/lib/trace_check.py TRACE.json --after UNIX_S --before UNIX_S

- strict JSON: Python's json with NaN/Infinity rejected (parse_constant);
- slices are complete "X" events or "B"/"E" pairs whose "E" names the
  slice it closes (speedscope's Chrome importer matches them by name),
  balanced per track;
- no process without events (only its name): helper processes started
  under LD_PRELOAD (cpuinfo, lscpu, orted) stay out;
- power counters named plainly: Perfetto shows "<name> <arg>", which must
  read "<group> power (W)", on the process listed first;
- otherData has the clock domain and ts 0 as CLOCK_MONOTONIC ns and UTC,
  and that UTC lies within the recording (after..before).
Prints one "ok" line per check; exits 1 with "FAIL: ..." on the first."""
import argparse
import json
import sys
from collections import defaultdict


def fail(msg):
	print("FAIL: " + msg)
	sys.exit(1)


def check(cond, msg):
	if not cond:
		fail(msg)


def strict_constant(name):
	raise ValueError(f"non-JSON number {name}")


def main():
	ap = argparse.ArgumentParser()
	ap.add_argument("trace")
	ap.add_argument("--after", type=float, required=True)
	ap.add_argument("--before", type=float, required=True)
	a = ap.parse_args()
	with open(a.trace) as f:
		try:
			doc = json.load(f, parse_constant=strict_constant)
		except ValueError as e:
			fail(f"{a.trace}: not strict JSON: {e}")
	ev = doc["traceEvents"]
	print(f"ok strict JSON: {len(ev)} events, no NaN/Infinity")

	stacks = defaultdict(list)
	nx = nb = 0
	for e in ev:
		ph = e["ph"]
		check(ph in "XBEbeiCM", f"unexpected phase {ph!r}: {e}")
		if ph == "X":
			check(isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, f"X without a duration: {e}")
			nx += 1
		elif ph == "B":
			stacks[(e["pid"], e["tid"])].append(e["name"])
			nb += 1
		elif ph == "E":
			check("name" in e, f"E event without a name: {e}")
			st = stacks[(e["pid"], e["tid"])]
			check(st and st[-1] == e["name"], f"E {e['name']!r} does not close the open slice {st[-1:]} on {e['pid']}/{e['tid']}")
			st.pop()
	check(all(not s for s in stacks.values()), "B slices left open at the end")
	print(f"ok slices: {nx} complete (X), {nb} B/E pairs, every E named and matching its B")

	named = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
	busy = {e["pid"] for e in ev if e["ph"] != "M"}
	empty = named - busy
	check(not empty, f"processes with nothing on them: {sorted(empty)}")
	print(f"ok processes: {len(named)} named, none empty")

	counters = [e for e in ev if e["ph"] == "C"]
	check(counters, "no power counter")
	tracks = {f"{e['name']} {k}" for e in counters for k in e["args"]}
	check(all((t.endswith(" power (W)") or t.endswith(" energy (J)")) and not t.startswith("power ") for t in tracks),
	      f"counter tracks {tracks}")
	check("cpu power (W)" in tracks, f"no 'cpu power (W)' track in {tracks}")
	# each group's power has its cumulative energy beside it (issue 25)
	check({t[:-len(" power (W)")] for t in tracks if t.endswith(" power (W)")}
	      == {t[:-len(" energy (J)")] for t in tracks if t.endswith(" energy (J)")}, f"energy tracks in {tracks}")
	order = sorted((e["args"]["sort_index"], e["pid"]) for e in ev
		       if e["ph"] == "M" and e["name"] == "process_sort_index")
	check(order and {e["pid"] for e in counters} == {order[0][1]},
	      f"counters on {sorted({e['pid'] for e in counters})}, first process {order[:1]}")
	print(f"ok counters: {sorted(tracks)} on the process listed first (pid {order[0][1]})")

	od = doc["otherData"]
	check(od.get("clock_domain") == "CLOCK_MONOTONIC", f"clock_domain {od.get('clock_domain')!r}")
	check(isinstance(od.get("ts0_monotonic_ns"), int) and od["ts0_monotonic_ns"] > 0, "ts0_monotonic_ns")
	check(isinstance(od.get("ts0_unix_ns"), int), f"ts0_unix_ns {od.get('ts0_unix_ns')!r}")
	t0 = od["ts0_unix_ns"] / 1e9
	check(a.after - 1 <= t0 <= a.before, f"ts 0 at unix {t0:.3f} is outside the recording [{a.after:.3f}, {a.before:.3f}]")
	check(od.get("ts0_utc", "").endswith("Z"), f"ts0_utc {od.get('ts0_utc')!r}")
	print(f"ok epoch: ts 0 = {od['ts0_utc']} (CLOCK_MONOTONIC {od['ts0_monotonic_ns']} ns), "
	      f"{t0 - a.after:.3f} s after the recording started")


if __name__ == "__main__":
	main()
