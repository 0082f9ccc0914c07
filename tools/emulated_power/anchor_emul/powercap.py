"""A fake powercap tree that perun's RAPL backend accepts as real.

perun (perun/backend/powercap_rapl.py, see docs/perun-emulation.md) lists
RAPL_PATH, matches ``intel-rapl:N`` and ``intel-rapl:N:M``, reads ``name``
and ``max_energy_range_uj`` once, and keeps ``energy_uj`` open for the whole
run: every sample is ``seek(0); readline()``.  So the counter must be
rewritten in place (an atomic rename would leave perun reading the old
inode forever), and every value has the same width, so a shorter number
never leaves stale digits behind.
"""

import os

from . import EMULATED_NOTICE

# Real RAPL domains wrap at max_energy_range_uj (262143328850 on many Intel
# parts); the same default keeps perun's wrap arithmetic on its usual path.
DEFAULT_MAX_RANGE_UJ = 262143328850
# 20 digits hold any uint64; perun parses with np.uint64(line.strip()),
# which accepts leading zeros.
WIDTH = 20

# The emulated GPU lives beside the RAPL domains, where perun's RAPL
# backend does not look (it only matches intel-rapl:N); the stub pynvml
# (tools/emulated_power/nvml_stub) reads it.
NVML_DIR = "nvml"
GPU_MAX_RANGE_UJ = 2**63 - 1

# device key -> (directory, name file content)
DOMAINS = {
	"package": ("intel-rapl:0", "package-0"),
	"dram": ("intel-rapl:0/intel-rapl:0:0", "dram"),
}


def create_tree(root, max_range_uj=DEFAULT_MAX_RANGE_UJ, start_uj=None, gpu=False):
	"""Create ROOT/intel-rapl:0 (package-0) and its dram subdomain.

	start_uj: initial counter per device key (default: 0).  Returns the
	dict device key -> path of energy_uj.
	"""
	start_uj = start_uj or {}
	os.makedirs(root, exist_ok=True)
	with open(os.path.join(root, "EMULATED_SENSOR.txt"), "w") as f:
		f.write(f"{EMULATED_NOTICE}: a fake powercap tree written by anchor_emul\n")
	paths = {}
	for key, (sub, name) in DOMAINS.items():
		d = os.path.join(root, sub)
		os.makedirs(d, exist_ok=True)
		with open(os.path.join(d, "name"), "w") as f:
			f.write(name + "\n")
		with open(os.path.join(d, "max_energy_range_uj"), "w") as f:
			f.write(f"{max_range_uj}\n")
		p = os.path.join(d, "energy_uj")
		with open(p, "w") as f:
			f.write(format_counter(start_uj.get(key, 0)))
		paths[key] = p
	if gpu:
		d = os.path.join(root, NVML_DIR, "gpu0")
		os.makedirs(d, exist_ok=True)
		for name, text in (("name", "Emulated GPU (emulated sensor, not a measurement)"),
				   ("max_energy_range_uj", str(GPU_MAX_RANGE_UJ)),
				   ("energy_uj", format_counter(0).strip()), ("power_mw", format_counter(0).strip())):
			with open(os.path.join(d, name), "w") as f:
				f.write(text + "\n")
		paths["gpu"] = os.path.join(d, "energy_uj")
	return paths


def format_counter(value_uj):
	return "%0*d\n" % (WIDTH, value_uj)


def read_max_range(root, sub):
	with open(os.path.join(root, sub, "max_energy_range_uj")) as f:
		return int(f.read().strip())


class Counter:
	"""One energy_uj file, rewritten in place with a single pwrite.

	A pwrite of 21 bytes at offset 0 is one copy into the page cache; a
	reader racing it could in principle see old and new bytes mixed (Linux
	does not lock regular-file reads against writes).  The window is the
	copy itself (nanoseconds per write); tests check perun's recorded
	counter series for consistency (monotonic, no spurious wrap).
	"""

	def __init__(self, path, max_range_uj, start_uj=0):
		self.fd = os.open(path, os.O_WRONLY)
		self.modulus = max_range_uj + 1
		self.value_uj = start_uj % self.modulus
		self.total_uj = 0  # never wraps: what went in since start

	def add_uj(self, delta_uj):
		self.total_uj += delta_uj
		self.value_uj = (self.value_uj + delta_uj) % self.modulus
		os.pwrite(self.fd, format_counter(self.value_uj).encode(), 0)

	def step_back(self, delta_uj):
		"""The counter goes back by delta_uj (to 0 at most) and counts on
		from there, as a RAPL counter does after a reset; what went in
		(total_uj) is unchanged.  Tests of glitch handling only."""
		self.value_uj = max(0, self.value_uj - delta_uj)
		os.pwrite(self.fd, format_counter(self.value_uj).encode(), 0)

	def close(self):
		os.close(self.fd)


class PowerFile:
	"""The emulated GPU's current power reading, in mW, rewritten in place."""

	def __init__(self, path):
		self.fd = os.open(path, os.O_WRONLY)

	def write_w(self, watts):
		os.pwrite(self.fd, format_counter(max(0, int(round(watts * 1000)))).encode(), 0)

	def close(self):
		os.close(self.fd)
