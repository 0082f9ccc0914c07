"""Real perun, with its RAPL backend reading an emulated powercap tree.

  python -m anchor_emul.perun --powercap DIR  monitor [perun options] app.py [args]
  python -m anchor_emul.perun --real          monitor [perun options] app.py [args]

What is changed, and nothing else:
  * perun.backend.powercap_rapl.RAPL_PATH -> DIR (a module constant read in
    PowercapRAPLBackend.setup; the sampler is a fork()ed multiprocessing
    child, so it inherits the change);
  * when DIR has an emulated GPU (updater --init --gpu), the stub pynvml in
    tools/emulated_power/nvml_stub goes first on sys.path;
  * each emulated RAPL sensor's metadata gains emulated_sensor=<notice>, so
    the HDF5 perun writes says so itself, and EMULATED_SENSOR.txt is written
    into perun's --data_out;
  * a KeyboardInterrupt in the script ends the run normally (status 130), so
    perun still saves its data;
  * an exception from the script has its traceback printed (perun logs only
    the message), then goes on to perun, which saves the run as failed_<name>;
  * the monitored script's exit status is kept, and a script that calls
    sys.exit(N) still gets its data saved: perun 1.0.0 runs the script
    in-process and handles SystemExit as a failure without stopping its
    sampler, so it waits monitor.queue_timeout (60 s) for data that never
    comes, writes no HDF5 and exits 1.  Here any SystemExit ends the run
    normally (perun saves) and this process exits with N afterwards
    (sys.exit("text") prints the text and gives 1, as Python does).
  * `anchorpost record -- CMD` (any command): its launcher script ends
    normally and leaves CMD's status in os.environ["ANCHOR_RECORD_STATUS"];
    this process exits with it.
--real does only the last two (a launcher that returns the script's status).
"""

import os
import signal
import sys
import traceback

from . import EMULATED_NOTICE, MARKER_FILE

_script_status = {"code": None}


def _data_out(args):
	for i, a in enumerate(args):
		if a in ("--data_out", "--data-out", "-d") and i + 1 < len(args):
			return args[i + 1]
		for p in ("--data_out=", "--data-out="):
			if a.startswith(p):
				return a[len(p):]
		if not a.startswith("-") and a.endswith(".py"):
			break
	return os.environ.get("PERUN_DATA_OUT", "perun_results")


def _patch_rapl(root):
	import perun.backend.powercap_rapl as rapl

	rapl.RAPL_PATH = os.path.join(os.path.abspath(root), "")
	orig_setup = rapl.PowercapRAPLBackend.setup

	def setup(self):
		orig_setup(self)
		# Sensors share self._metadata: one key marks all of them.
		self._metadata["emulated_sensor"] = EMULATED_NOTICE
		self._metadata["emulated_powercap"] = rapl.RAPL_PATH

	rapl.PowercapRAPLBackend.setup = setup


def _keep_exit_status():
	from perun.monitoring.application import Application

	orig_run = Application.run

	def run(self):
		try:
			result = orig_run(self)
		except KeyboardInterrupt:
			# End the run here and let perun save what it sampled (perun
			# 1.0.0 catches only SystemExit and Exception: a Ctrl-C would
			# leave no HDF5).  Status 130, like a shell.
			# Further Ctrl-Cs (anchorpost record repeats its SIGINT until
			# the run ends) must not interrupt perun's saving.
			signal.signal(signal.SIGINT, signal.SIG_IGN)
			print("anchor_emul.perun: interrupted; perun saves the run so far", file=sys.stderr)
			_script_status["code"] = 130
			return None
		except SystemExit as e:
			code = e.code
			if code is None or isinstance(code, int):
				_script_status["code"] = code or 0
			else:
				print(code, file=sys.stderr)
				_script_status["code"] = 1
			return None
		except Exception:
			# perun logs only str(e) and repr(e): without the traceback a
			# crashed training run says "CUDA out of memory" and not where.
			# Print it as Python would; perun then saves the run as
			# failed_<name>.
			traceback.print_exc()
			_script_status["code"] = 1
			raise
		except BaseException:
			_script_status["code"] = 1
			raise
		_script_status["code"] = 0
		return result

	Application.run = run


def _use_gpu_stub(root):
	"""Emulated GPU present: the stub pynvml goes first on sys.path (perun
	imports pynvml with importlib when its NVML backend is set up)."""
	from . import powercap

	nvml = os.path.join(os.path.abspath(root), powercap.NVML_DIR)
	if not os.path.isdir(nvml):
		return False
	here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
	sys.path.insert(0, os.path.join(here, "nvml_stub"))
	os.environ["ANCHOR_EMUL_NVML"] = nvml
	return True


def _write_marker(data_out, root):
	os.makedirs(data_out, exist_ok=True)
	with open(os.path.join(data_out, MARKER_FILE), "w") as f:
		f.write(f"{EMULATED_NOTICE}.\n"
			f"perun's RAPL sensors in this directory read an emulated powercap tree at\n"
			f"{os.path.abspath(root)}, advanced by anchor_emul.updater.  Their joules\n"
			f"are what the emulator put in, not what any hardware used.\n")


def main():
	args = sys.argv[1:]
	root = None
	real = False
	while args and args[0] in ("--powercap", "--real"):
		if args[0] == "--real":
			real = True
			args = args[1:]
		elif len(args) > 1:
			root = args[1]
			args = args[2:]
		else:
			sys.exit("anchor_emul.perun: --powercap needs a directory")
	if args and args[0] == "--":
		args = args[1:]
	if real == (root is not None):
		sys.exit("anchor_emul.perun: give exactly one of --powercap DIR or --real")
	if root is not None:
		if not os.path.exists(os.path.join(root, MARKER_FILE)):
			sys.exit(f"anchor_emul.perun: {root}: not an emulated powercap tree")
		_patch_rapl(root)
		_use_gpu_stub(root)
		if args and args[0] == "monitor":
			_write_marker(_data_out(args[1:]), root)
	_keep_exit_status()
	from perun.api.cli import cli

	sys.argv = ["perun"] + args
	perun_status = 0
	try:
		cli()
	except SystemExit as e:
		perun_status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
	code = _script_status["code"]
	if code:
		return code
	# `anchorpost record -- CMD`: its launcher script ran CMD as a child and
	# ended normally (so that perun saved); CMD's status is here.
	launched = os.environ.pop("ANCHOR_RECORD_STATUS", "")
	if launched.isdigit() and int(launched):
		return int(launched)
	return perun_status


if __name__ == "__main__":
	sys.exit(main())
