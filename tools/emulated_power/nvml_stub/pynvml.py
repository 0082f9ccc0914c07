"""A stub pynvml: one emulated GPU for real perun's NVML backend.

NOT NVIDIA's library.  anchor_emul.perun puts this directory first on
sys.path when the emulated powercap tree has nvml/gpu0 (updater --init
--gpu); perun's NVMLBackend (perun/backend/nvml.py) then imports it and
samples nvmlDeviceGetPowerUsage like on a real GPU.  The power comes from
the file the anchor_emul updater rewrites every tick (current power, or an
average over --gpu-avg-ms); the exact joules are in truth.json.  Every
name/metadata string says "emulated sensor, not a measurement".

Only the calls perun 1.0.0 makes are provided (docs/perun-emulation.md).

Sensor mode (ANCHOR_EMUL_NVML_SENSOR set and ANCHOR_NVML_LIB naming the C
stub, libnvml_stub.c): one GPU whose readings are the C stub's, loaded
with ctypes, so perun and libanchor's sampler read one emulated board
(same seed, same update grid, same window and gain) whose power is the
workload's phase file; ANCHOR_EMUL_NVML is not needed then.
"""

import ctypes
import os
import types

NOTICE = "emulated sensor, not a measurement"
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_CLOCK_VIDEO = 3
_MEM_TOTAL = 80 * 2**30
_MEM_USED = 3 * 2**30
_CLOCKS_MHZ = {NVML_CLOCK_GRAPHICS: 1410, NVML_CLOCK_SM: 1410, NVML_CLOCK_MEM: 1593, NVML_CLOCK_VIDEO: 1275}
_root = None
_clib = None  # sensor mode: the C stub


class NVMLError(Exception):
	pass


class NVMLError_Uninitialized(NVMLError):
	pass


class NVMLError_InvalidArgument(NVMLError):
	pass


class _Handle:
	def __init__(self, idx, path):
		self.idx = idx
		self.path = path
		# Kept open and re-read from offset 0, as perun does with RAPL files.
		self.power = open(os.path.join(path, "power_mw"), "rb", buffering=0)
		self.energy = open(os.path.join(path, "energy_uj"), "rb", buffering=0)

	def read(self, f):
		return int(os.pread(f.fileno(), 64, 0).strip() or 0)


_handles = {}


def _need_init():
	if _root is None:
		raise NVMLError_Uninitialized("nvmlInit() not called")


class _CHandle:
	def __init__(self, idx):
		self.idx = idx
		self.dev = ctypes.c_void_p()
		if _clib.nvmlDeviceGetHandleByIndex_v2(idx, ctypes.byref(self.dev)):
			raise NVMLError_InvalidArgument(f"no emulated GPU {idx}")


def nvmlInit():
	global _root, _clib
	if os.environ.get("ANCHOR_EMUL_NVML_SENSOR") is not None and os.environ.get("ANCHOR_NVML_LIB"):
		_clib = ctypes.CDLL(os.environ["ANCHOR_NVML_LIB"])
		if _clib.nvmlInit_v2():
			raise NVMLError("the C NVML stub did not initialise (sensor mode needs ANCHOR_EMUL_PHASE_FILE)")
		_root = "(sensor mode)"
		return
	root = os.environ.get("ANCHOR_EMUL_NVML")
	if not root or not os.path.isdir(root):
		raise NVMLError("ANCHOR_EMUL_NVML does not name an emulated GPU directory")
	_root = root


def nvmlShutdown():
	_need_init()


def nvmlDeviceGetCount():
	_need_init()
	if _clib is not None:
		n = ctypes.c_uint()
		_clib.nvmlDeviceGetCount_v2(ctypes.byref(n))
		return n.value
	return len([d for d in os.listdir(_root) if d.startswith("gpu")])


def nvmlDeviceGetHandleByIndex(i):
	_need_init()
	if i not in _handles and _clib is not None:
		_handles[i] = _CHandle(i)
	if i not in _handles:
		path = os.path.join(_root, f"gpu{i}")
		if not os.path.isdir(path):
			raise NVMLError_InvalidArgument(f"no emulated GPU {i}")
		_handles[i] = _Handle(i, path)
	return _handles[i]


def nvmlSystemGetCudaDriverVersion():
	return 12040


def nvmlSystemGetDriverVersion():
	return f"0.0 ({NOTICE})"


def nvmlDeviceGetUUID(h):
	return f"GPU-emulated-{h.idx:08d}"


def nvmlDeviceGetName(h):
	# ANCHOR_EMUL_GPU_MODEL names the GPU whose power-reading response the
	# updater reproduces (e.g. "NVIDIA H100 80GB HBM3"), so anchorpost's
	# response table can match it; the notice stays in the name.
	model = os.environ.get("ANCHOR_EMUL_GPU_MODEL")
	if model:
		return f"{model} {h.idx} ({NOTICE})"
	return f"Emulated GPU {h.idx} ({NOTICE})"


def nvmlDeviceGetPowerUsage(h):
	"""mW.  At least 1 mW: perun lists a GPU only if its power is > 0
	(nvml.py _findSensors), and the emulator draws 0 W before a workload
	starts; the floor adds at most 1 mW x that time to perun's estimate."""
	if _clib is not None:
		mw = ctypes.c_uint()
		if _clib.nvmlDeviceGetPowerUsage(h.dev, ctypes.byref(mw)):
			raise NVMLError("power reading failed")
		return max(1, mw.value)
	return max(1, h.read(h.power))


def nvmlDeviceGetTotalEnergyConsumption(h):
	"""mJ since the emulated GPU was created (perun does not call it)."""
	if _clib is not None:
		mj = ctypes.c_ulonglong()
		_clib.nvmlDeviceGetTotalEnergyConsumption(h.dev, ctypes.byref(mj))
		return mj.value
	return h.read(h.energy) // 1000


def nvmlDeviceGetPowerManagementDefaultLimit(h):
	return 700_000


def nvmlDeviceGetMemoryInfo(h):
	return types.SimpleNamespace(total=_MEM_TOTAL, used=_MEM_USED, free=_MEM_TOTAL - _MEM_USED)


def nvmlDeviceGetClockInfo(h, clock):
	return _CLOCKS_MHZ.get(clock, 0)


def nvmlDeviceGetMaxClockInfo(h, clock):
	return _CLOCKS_MHZ.get(clock, 0)
