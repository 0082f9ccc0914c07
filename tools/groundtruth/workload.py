"""Ground-truth workload: a program whose phase structure is known exactly.

  python workload.py --spec spec.json [--phase-file P] [--log instances.csv]

spec.json (written by run_scenario.py, or by hand):
  {"phases": [{"name": "forward", "ms": 60, "jitter": 0.2, "kind": "spin",
               "pkg_w": 25, "dram_w": 3}, ...],
   "sequence": ["data", "forward", ...],   # one iteration; default: all phases
   "repeat": 50, "lead_in_s": 1.0, "lead_out_s": 1.0, "seed": 1}

Each phase lasts ms * (1 + jitter * U(-1, 1)) and either busy-spins (one
core) or sleeps.  At every phase change the workload
  * publishes (phase id, CLOCK_MONOTONIC ns) to the emulated sensor's phase
    file (phase id = index in "phases" + 1; 0 = off before and after), and
  * opens/closes an anchor range of the phase's name in the ring.
Anchors come from the `anchor` module when it is importable; otherwise,
in this test driver only, from libanchor.so's C API (anchor_begin/end) when
libanchor.so is preloaded.  --log writes every phase instance with its
begin/end times, the schedule that the energy ledger (truth.json) follows.

The lead-in and lead-out draw 0 W: perun's sampler takes its first sample
up to half a sampling period after the app starts (it polls its start
event every period/2), so the lead-in must be longer than that for perun's
window to hold every joule.
"""

import argparse
import ctypes
import json
import os
import random
import sys
import time

OFF = 0


class Anchors:
	"""begin/end/mark through the anchor module, or libanchor's C API."""

	def __init__(self, enabled=True):
		self.how = "none"
		self._begin = self._end = self._mark = None
		if not enabled:
			return
		try:
			import anchor  # noqa: F401  (the real module, when built)

			self._begin, self._end = anchor.begin, anchor.end
			self._mark = lambda name, v: anchor.mark(name, v)
			self.how = "anchor module"
			return
		except ImportError:
			pass
		lib = ctypes.CDLL(None)
		if hasattr(lib, "anchor_begin") and lib.anchor_enabled():
			lib.anchor_mark_value.argtypes = (ctypes.c_char_p, ctypes.c_int64)
			self._begin = lambda n: lib.anchor_begin(n.encode())
			self._end = lambda n: lib.anchor_end(n.encode())
			self._mark = lambda n, v: lib.anchor_mark_value(n.encode(), v)
			self.how = "libanchor.so C API (ctypes, test driver fallback)"

	def begin(self, name):
		if self._begin:
			self._begin(name)

	def end(self, name):
		if self._end:
			self._end(name)

	def mark(self, name, value):
		if self._mark:
			self._mark(name, value)


class NoPublisher:
	def publish(self, phase_id, t_ns=None):
		return time.monotonic_ns()


def run(spec, publisher, anchors):
	rng = random.Random(spec.get("seed", 1))
	phases = spec["phases"]
	ids = {p["name"]: i for i, p in enumerate(phases, start=1)}
	seq = spec.get("sequence") or [p["name"] for p in phases]
	by_name = {p["name"]: p for p in phases}
	instances = []
	time.sleep(float(spec.get("lead_in_s", 1.0)))
	anchors.mark("groundtruth_start", 0)
	for it in range(int(spec.get("repeat", 1))):
		anchors.mark("iteration", it)
		for name in seq:
			p = by_name[name]
			dur_ns = int(float(p["ms"]) * 1e6 * (1.0 + float(p.get("jitter", 0.0)) * rng.uniform(-1.0, 1.0)))
			t0 = publisher.publish(ids[name])
			anchors.begin(name)
			deadline = t0 + max(dur_ns, 0)
			if p.get("kind", "spin") == "sleep":
				while True:
					left = deadline - time.monotonic_ns()
					if left <= 0:
						break
					time.sleep(left / 1e9)
			else:
				while time.monotonic_ns() < deadline:
					pass
			anchors.end(name)
			instances.append((name, t0))
	t_off = publisher.publish(OFF)
	anchors.mark("groundtruth_end", 0)
	time.sleep(float(spec.get("lead_out_s", 1.0)))
	return instances, t_off


def write_log(path, instances, t_off):
	tmp = path + ".tmp"
	with open(tmp, "w") as f:
		f.write("phase,t_begin_mono_ns,t_end_mono_ns\n")
		for i, (name, t0) in enumerate(instances):
			t1 = instances[i + 1][1] if i + 1 < len(instances) else t_off
			f.write(f"{name},{t0},{t1}\n")
	os.replace(tmp, path)


def main(argv=None):
	ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
	ap.add_argument("--spec", required=True)
	ap.add_argument("--phase-file", help="anchor_emul phase file to publish to")
	ap.add_argument("--log", help="CSV of phase instances (mono ns)")
	ap.add_argument("--no-anchors", action="store_true", help="do not write anchors")
	a = ap.parse_args(argv)
	with open(a.spec) as f:
		spec = json.load(f)
	if a.phase_file:
		here = os.path.dirname(os.path.abspath(__file__))
		sys.path.insert(0, os.path.join(here, "..", "emulated_power"))
		from anchor_emul import phasefile

		publisher = phasefile.Publisher(a.phase_file)
	else:
		publisher = NoPublisher()
	anchors = Anchors(not a.no_anchors)
	print(f"workload: anchors via {anchors.how}", file=sys.stderr)
	instances, t_off = run(spec, publisher, anchors)
	if a.log:
		write_log(a.log, instances, t_off)
	return 0


if __name__ == "__main__":
	main()
