"""The counter updater: advances the emulated energy_uj files at a known power.

  python -m anchor_emul.updater --powercap DIR --init
  python -m anchor_emul.updater --powercap DIR --model phase --spec S.json \
      --phase-file P --truth truth.json
  python -m anchor_emul.updater --powercap DIR --model cpu --watch-pid PID \
      --truth truth.json

Power models
  phase  power = spec[phase] per device; the workload publishes its phase in
         a phasefile (anchor_emul.phasefile) with CLOCK_MONOTONIC stamps and
         the updater integrates exactly between those stamps.  Phase 0 ("off",
         before start and after end) draws 0 W, so a perun window that
         encloses the workload sees every joule.
  cpu    package = idle_w + w_per_core * busy cores, dram likewise, where busy
         cores is the watched process tree's CPU time rate (/proc) over a
         sliding window.

Every tick (period_ms) the energy since the last tick is added to the
counters and to a ledger keyed by phase (the phase file is optional in cpu
mode).  On SIGTERM/SIGINT, or when --watch-pid exits, the ledger goes to
--truth as JSON: exact joules and seconds per phase per device as they went
into the counters, marked "emulated sensor, not a measurement".
"""

import argparse
import collections
import json
import math
import os
import random
import signal
import sys
import time

from . import EMULATED_NOTICE, MARKER_FILE, cputime, phasefile, powercap

RAPL_DEVICES = ("package", "dram")


def parse_args(argv):
	ap = argparse.ArgumentParser(prog="python -m anchor_emul.updater", description=__doc__,
				     formatter_class=argparse.RawDescriptionHelpFormatter)
	ap.add_argument("--powercap", required=True, help="root of the fake powercap tree")
	ap.add_argument("--init", action="store_true", help="create the tree and exit")
	ap.add_argument("--gpu", action="store_true", help="with --init: add an emulated GPU (DIR/nvml/gpu0, read by stub pynvml)")
	ap.add_argument("--gpu-idle-w", type=float, default=30.0, help="cpu model: constant GPU watts")
	ap.add_argument("--gpu-avg-ms", type=float, default=0.0,
			help="GPU power reading = average over this window (0: the current power; NVML on A100 averages ~1000 ms)")
	ap.add_argument("--gpu-coverage", type=float, default=1.0,
			help="fraction of each --gpu-coverage-period-ms that the GPU reading samples (A100/H100: 0.25, "
			     "arXiv 2312.02741); the reading averages only those slices of its window")
	ap.add_argument("--gpu-coverage-period-ms", type=float, default=100.0)
	ap.add_argument("--max-range-uj", type=int, default=powercap.DEFAULT_MAX_RANGE_UJ)
	ap.add_argument("--start-uj", type=int, default=None,
			help="initial counter value (default: random, as on real hardware)")
	ap.add_argument("--model", choices=("phase", "cpu"), default="phase")
	ap.add_argument("--spec", help="phase model: JSON {\"phases\":[{\"name\",\"pkg_w\",\"dram_w\"}...]}; phase id = index+1")
	ap.add_argument("--phase-file", help="phasefile the workload publishes to")
	ap.add_argument("--watch-pid", type=int, help="stop when this process exits; cpu model: its tree drives power")
	ap.add_argument("--idle-w", type=float, default=8.0, help="cpu model: package watts at rest")
	ap.add_argument("--w-per-core", type=float, default=12.0, help="cpu model: package watts per busy core")
	ap.add_argument("--dram-idle-w", type=float, default=1.5)
	ap.add_argument("--dram-w-per-core", type=float, default=1.0)
	ap.add_argument("--cpu-window-ms", type=float, default=50.0, help="cpu model: CPU-rate window")
	ap.add_argument("--period-ms", type=float, default=None, help="tick (default 1 ms phase; 10 ms cpu, the kernel's CPU-time resolution at USER_HZ=100)")
	ap.add_argument("--noise", type=float, default=0.0, help="relative gaussian noise on power per tick")
	ap.add_argument("--seed", type=int, default=1)
	ap.add_argument("--truth", help="write the ledger here (JSON) at the end")
	ap.add_argument("--trace", help="write every tick (t_mono_ns, phase, counters) here (CSV)")
	ap.add_argument("--ready-file", help="created once the updater is ticking")
	ap.add_argument("--step-back-at-s", type=float, default=None,
			help="glitch: this many seconds after the workload's first phase, the package counter steps "
			     "back once by --step-back-uj (a RAPL reset; the truth ledger is unchanged)")
	ap.add_argument("--step-back-uj", type=int, default=5_000_000)
	ap.add_argument("--gpu-glitch-at-s", type=float, default=None,
			help="glitch: this many seconds after the workload's first phase, the GPU power reading "
			     "shows --gpu-glitch-w for --gpu-glitch-ms (an impossible NVML read; the truth is unchanged)")
	ap.add_argument("--gpu-glitch-w", type=float, default=3.0e6)
	ap.add_argument("--gpu-glitch-ms", type=float, default=150.0)
	ap.add_argument("--no-realtime", action="store_true",
			help="do not ask for SCHED_FIFO (by default the updater tries it, then nice -10)")
	return ap.parse_args(argv)


class Ledger:
	"""Joules and seconds per (phase, device), exactly as put into the counters."""

	def __init__(self, devices):
		self.devices = devices
		self.energy_j = collections.defaultdict(lambda: dict.fromkeys(devices, 0.0))
		self.seconds = collections.defaultdict(float)
		self.entries = collections.Counter()

	def add(self, phase, dt_s, joules):
		self.seconds[phase] += dt_s
		for d in self.devices:
			self.energy_j[phase][d] += joules[d]


class Updater:
	def __init__(self, a):
		self.a = a
		self.rng = random.Random(a.seed)
		gpu_dir = os.path.join(a.powercap, powercap.NVML_DIR, "gpu0")
		self.devices = RAPL_DEVICES + (("gpu",) if os.path.isdir(gpu_dir) else ())
		self.names = {phasefile.PHASE_OFF: "off"}
		self.table = {phasefile.PHASE_OFF: dict.fromkeys(self.devices, 0.0)}
		if a.spec:
			with open(a.spec) as f:
				spec = json.load(f)
			for i, ph in enumerate(spec["phases"], start=1):
				self.names[i] = ph["name"]
				self.table[i] = {"package": float(ph["pkg_w"]), "dram": float(ph.get("dram_w", 0.0))}
				if "gpu" in self.devices:
					self.table[i]["gpu"] = float(ph.get("gpu_w", 0.0))
		if a.model == "phase" and not (a.spec and a.phase_file):
			sys.exit("anchor_emul.updater: --model phase needs --spec and --phase-file")
		if a.model == "cpu" and not a.watch_pid:
			sys.exit("anchor_emul.updater: --model cpu needs --watch-pid")
		self.reader = phasefile.Reader(a.phase_file) if a.phase_file else None
		self.counters = {}
		for d in self.devices:
			sub = powercap.DOMAINS[d][0] if d in RAPL_DEVICES else os.path.join(powercap.NVML_DIR, "gpu0")
			path = os.path.join(a.powercap, sub, "energy_uj")
			with open(path) as f:
				start = int(f.read().strip())
			self.counters[d] = powercap.Counter(path, powercap.read_max_range(a.powercap, sub), start)
		self.gpu_power = powercap.PowerFile(os.path.join(gpu_dir, "power_mw")) if "gpu" in self.devices else None
		self.gpu_hist = collections.deque()
		self.start_uj = {d: c.value_uj for d, c in self.counters.items()}
		self.acc_uj = dict.fromkeys(self.devices, 0.0)  # exact (float) energy, µJ
		self.ledger = Ledger(self.devices)
		self.phase = phasefile.PHASE_OFF if a.model == "phase" else -1
		self.late = 0
		self.late_ns = 0
		self.transitions = 0
		self.ticks = 0
		# Tick intervals in 10 µs bins: bounded memory for hour-long runs.
		self.gaps = collections.Counter()
		self.cpu_hist = collections.deque()
		self.trace = [] if a.trace else None
		self.stop = False
		self.t_work0 = None  # the workload's first phase, CLOCK_MONOTONIC ns
		self.glitches = []   # what was injected, for truth.json

	def power_w(self, now_ns):
		if self.a.model == "phase":
			p = self.table.get(self.phase)
			if p is None:
				raise RuntimeError(f"phase id {self.phase} not in --spec")
			w = dict(p)
		else:
			busy = self.busy_cores(now_ns)
			w = {"package": self.a.idle_w + self.a.w_per_core * busy,
			     "dram": self.a.dram_idle_w + self.a.dram_w_per_core * busy}
			if "gpu" in self.devices:
				w["gpu"] = self.a.gpu_idle_w
		if self.a.noise > 0:
			f = max(0.0, 1.0 + self.rng.gauss(0.0, self.a.noise))
			w = {d: v * f for d, v in w.items()}
		return w

	def busy_cores(self, now_ns):
		cpu = cputime.tree_cpu_seconds(self.a.watch_pid)
		if cpu is None:
			self.stop = True
			return 0.0
		h = self.cpu_hist
		h.append((now_ns, cpu))
		while len(h) > 2 and now_ns - h[1][0] >= self.a.cpu_window_ms * 1e6:
			h.popleft()
		t0, c0 = h[0]
		if now_ns <= t0:
			return 0.0
		busy = (cpu - c0) / ((now_ns - t0) * 1e-9)
		return min(max(busy, 0.0), float(os.cpu_count() or 1))

	def integrate(self, t0, t1, w):
		if t1 <= t0:
			return
		dt = (t1 - t0) * 1e-9
		joules = {d: w[d] * dt for d in self.devices}
		self.ledger.add(self.phase, dt, joules)
		for d in self.devices:
			self.acc_uj[d] += joules[d] * 1e6

	def gpu_reading(self, now, current_w):
		"""What nvmlDeviceGetPowerUsage will answer: the current power, or
		the average over the last --gpu-avg-ms (from the exact energy),
		counting only the sampled slices when --gpu-coverage < 1."""
		if self.a.gpu_avg_ms <= 0:
			return current_w
		if self.a.gpu_coverage < 1.0:
			return self.gpu_reading_partial(now, current_w)
		h = self.gpu_hist
		h.append((now, self.acc_uj["gpu"]))
		while len(h) > 2 and now - h[1][0] >= self.a.gpu_avg_ms * 1e6:
			h.popleft()
		t0, e0 = h[0]
		return current_w if now <= t0 else (self.acc_uj["gpu"] - e0) / 1e6 / ((now - t0) / 1e9)

	def gpu_reading_partial(self, now, current_w):
		"""Mean power over the sampled ticks of the last --gpu-avg-ms: a tick
		is sampled when its midpoint falls in the first --gpu-coverage of
		its --gpu-coverage-period-ms slot (slots counted from the
		updater's start), as arXiv 2312.02741 saw on A100/H100."""
		h = self.gpu_hist
		acc = self.acc_uj["gpu"]
		if h:
			t0, e0 = h[-1][1], h[-1][3]
			mid = (t0 + now) / 2 - self.t_begin
			per = self.a.gpu_coverage_period_ms * 1e6
			sampled = (mid % per) < self.a.gpu_coverage * per
			h.append((t0, now, sampled, acc, acc - e0))
		else:
			h.append((now, now, False, acc, 0.0))
		while h and now - h[0][0] > self.a.gpu_avg_ms * 1e6:
			h.popleft()
		e = sum(x[4] for x in h if x[2])
		dt = sum(x[1] - x[0] for x in h if x[2])
		if dt <= 0:
			return self.gpu_last_reading if hasattr(self, "gpu_last_reading") else current_w
		self.gpu_last_reading = e / 1e6 / (dt / 1e9)
		return self.gpu_last_reading

	def write_counters(self):
		for d, c in self.counters.items():
			delta = math.floor(self.acc_uj[d]) - c.total_uj
			if delta > 0:
				c.add_uj(delta)

	def raise_priority(self):
		"""A real RAPL counter never stalls; a descheduled updater does (ticks
		of 0.8 s were seen on a loaded 2-core machine), which delays energy
		into later perun windows.  The updater sleeps between ticks, so a
		real-time class costs the workload almost nothing."""
		if self.a.no_realtime:
			return "normal (--no-realtime)"
		try:
			os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
			return "SCHED_FIFO 10"
		except (OSError, AttributeError):
			pass
		try:
			os.nice(-10)
			return "nice -10"
		except OSError:
			return "normal (no permission for SCHED_FIFO or nice)"

	def run(self):
		a = self.a
		self.scheduling = self.raise_priority()
		period_s = (a.period_ms if a.period_ms else (1.0 if a.model == "phase" else 10.0)) / 1000.0
		for s in (signal.SIGTERM, signal.SIGINT):
			signal.signal(s, self.on_signal)
		t_last = time.monotonic_ns()
		self.t_begin = t_last
		prev_now = t_last
		if a.model == "cpu":
			self.busy_cores(t_last)
		if a.ready_file:
			with open(a.ready_file, "w") as f:
				f.write(f"{os.getpid()}\n")
		while not self.stop:
			time.sleep(period_s)
			events = self.reader.poll() if self.reader else []
			# Read the clock after polling: every transition seen now was
			# stamped before it was published, so before now.
			now = time.monotonic_ns()
			w = self.power_w(now)
			for t, ph in events:
				self.transitions += 1
				if t < t_last:
					# Stamped before the previous tick but published after
					# it: that slice already went in under the old phase.
					self.late += 1
					self.late_ns += t_last - t
					t = t_last
				self.integrate(t_last, t, w)
				t_last = t
				self.phase = ph
				self.ledger.entries[ph] += 1
				if a.model == "phase":
					w = self.power_w(now)
			self.integrate(t_last, now, w)
			self.gaps[(now - prev_now) // 10_000] += 1
			prev_now = now
			t_last = now
			self.write_counters()
			if self.t_work0 is None and self.transitions:
				self.t_work0 = now
			self.inject_step_back(now)
			if self.gpu_power:
				self.gpu_power.write_w(self.gpu_glitch(now, self.gpu_reading(now, w["gpu"])))
			self.ticks += 1
			if self.trace is not None:
				self.trace.append((now, self.phase, self.counters["package"].total_uj,
						   self.counters["dram"].total_uj))
			if a.watch_pid and not _alive(a.watch_pid):
				break
		self.t_end = t_last
		self.finish()

	def since_work_s(self, now):
		return None if self.t_work0 is None else (now - self.t_work0) / 1e9

	def inject_step_back(self, now):
		a = self.a
		t = self.since_work_s(now)
		if a.step_back_at_s is None or t is None or t < a.step_back_at_s or \
				any(g["kind"] == "step_back" for g in self.glitches):
			return
		c = self.counters["package"]
		before = c.value_uj
		c.step_back(a.step_back_uj)
		self.glitches.append({"kind": "step_back", "device": "package", "t_mono_ns": now,
				      "from_uj": before, "to_uj": c.value_uj})

	def gpu_glitch(self, now, reading_w):
		a = self.a
		t = self.since_work_s(now)
		if a.gpu_glitch_at_s is None or t is None or not (a.gpu_glitch_at_s <= t < a.gpu_glitch_at_s + a.gpu_glitch_ms / 1e3):
			return reading_w
		if not any(g["kind"] == "gpu_reading" for g in self.glitches):
			self.glitches.append({"kind": "gpu_reading", "device": "gpu", "t_mono_ns": now,
					      "reading_w": a.gpu_glitch_w, "ms": a.gpu_glitch_ms})
		return a.gpu_glitch_w

	def on_signal(self, signum, frame):
		self.stop = True

	def finish(self):
		a = self.a
		for c in self.counters.values():
			c.close()
		if self.gpu_power:
			self.gpu_power.close()
		if self.trace is not None:
			with open(a.trace + ".tmp", "w") as f:
				f.write(f"# {EMULATED_NOTICE}\nt_mono_ns,phase,package_total_uj,dram_total_uj\n")
				for row in self.trace:
					f.write("%d,%d,%d,%d\n" % row)
			os.replace(a.trace + ".tmp", a.trace)
		if a.truth:
			write_json(a.truth, self.truth())

	def truth(self):
		a = self.a
		bins = sorted(self.gaps.items())
		n = sum(self.gaps.values())

		def q(p):
			seen = 0
			for b, c in bins:
				seen += c
				if seen > p * n or seen == n:
					return b / 100.0
			return None
		phases = {}
		for ph, sec in self.ledger.seconds.items():
			name = self.names.get(ph, "(no phase file)" if ph == -1 else f"phase{ph}")
			phases[name] = {
				"phase_id": ph,
				"seconds": sec,
				"entries": self.ledger.entries.get(ph, 0),
				"energy_j": dict(self.ledger.energy_j[ph]),
				"power_w": {d: (e / sec if sec > 0 else 0.0) for d, e in self.ledger.energy_j[ph].items()},
			}
		devices = {}
		for d, c in self.counters.items():
			devices[d] = {
				"powercap_name": powercap.DOMAINS[d][1] if d in RAPL_DEVICES else "emulated GPU 0 (stub pynvml)",
				"total_j": c.total_uj / 1e6,
				"counter_start_uj": self.start_uj[d],
				"counter_end_uj": c.value_uj,
				"max_energy_range_uj": c.modulus - 1,
			}
		return {
			"notice": EMULATED_NOTICE,
			"emulated": True,
			"power_model": a.model,
			"model_params": ({"spec": self.table_by_name()} if a.model == "phase" else {
				"idle_w": a.idle_w, "w_per_core": a.w_per_core,
				"dram_idle_w": a.dram_idle_w, "dram_w_per_core": a.dram_w_per_core,
				"cpu_window_ms": a.cpu_window_ms, "watch_pid": a.watch_pid}),
			"noise_rel": a.noise,
			"gpu_reading": (None if "gpu" not in self.devices else
					("instantaneous" if a.gpu_avg_ms <= 0 else f"average over {a.gpu_avg_ms} ms" + (
						f" of the first {a.gpu_coverage:g} of every {a.gpu_coverage_period_ms:g} ms"
						if a.gpu_coverage < 1.0 else ""))),
			"clock": "CLOCK_MONOTONIC (time.monotonic_ns)",
			"t_begin_mono_ns": self.t_begin,
			"t_end_mono_ns": self.t_end,
			"devices": devices,
			"phases": phases,
			"ticks": self.ticks,
			"scheduling": self.scheduling,
			"tick_ms": {"p50": q(0.5), "p99": q(0.99), "max": q(1.0)},
			"transitions": self.transitions,
			"late_transitions": self.late,
			"late_seconds": self.late_ns / 1e9,
			"powercap": os.path.abspath(a.powercap),
			"glitches": self.glitches,
		}

	def table_by_name(self):
		return {self.names[i]: w for i, w in self.table.items()}


def _alive(pid):
	try:
		os.kill(pid, 0)
	except ProcessLookupError:
		return False
	except PermissionError:
		return True
	# A zombie is gone for our purposes.
	try:
		with open(f"/proc/{pid}/stat", "rb") as f:
			s = f.read()
		return s[s.rindex(b")") + 2:s.rindex(b")") + 3] != b"Z"
	except OSError:
		return False


def write_json(path, obj):
	tmp = path + ".tmp"
	with open(tmp, "w") as f:
		json.dump(obj, f, indent=1, sort_keys=True)
		f.write("\n")
	os.replace(tmp, path)


def main(argv=None):
	a = parse_args(sys.argv[1:] if argv is None else argv)
	if a.init:
		start = a.start_uj
		if start is None:
			start = random.Random(os.getpid()).randrange(a.max_range_uj // 2)
		powercap.create_tree(a.powercap, a.max_range_uj, {d: start for d in RAPL_DEVICES}, gpu=a.gpu)
		return 0
	if not os.path.exists(os.path.join(a.powercap, MARKER_FILE)):
		sys.exit(f"anchor_emul.updater: {a.powercap}: no emulated powercap tree (run with --init first)")
	Updater(a).run()
	return 0


if __name__ == "__main__":
	sys.exit(main())
