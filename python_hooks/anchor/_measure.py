"""anchor.measure: a live, in-process energy estimate of a block.

    with anchor.measure("eval") as m:
        evaluate()
    print(m.joules, m.seconds, m.by_sensor)

Reads the energy counters this process can read itself, at entry and at
exit, and reports the difference:

  * RAPL through powercap: ``<root>/intel-rapl:N/energy_uj`` (``package-N``
    domains) and their ``dram`` subdomains (``intel-rapl:N:M``), wrap-around
    undone with ``max_energy_range_uj``.  ``core``/``uncore`` are inside the
    package and ``psys`` overlaps it, so they are not added.  The root is
    ``/sys/class/powercap``, or ``$ANCHOR_POWERCAP``, or ``powercap=``.
    Linux lets only root read ``energy_uj`` on most machines (since 2020);
    a counter that cannot be read is listed in ``m.skipped`` with the reason.
  * NVML: ``nvmlDeviceGetTotalEnergyConsumption`` (mJ, Volta and later) of
    every GPU, when ``pynvml`` imports and ``nvmlInit()`` works.

This is a **live estimate**: the whole machine's counters over the block
(every process and every other thread counts), read when the Python code
entered and left it.  It exists to log numbers during training (per-epoch
joules to W&B or TensorBoard).  The post-processed attribution
(``anchorpost phases``: perun's series aligned with the ring, split by
phase, with intervals) supersedes it; when a name is given, the block is
also an anchor range of that name, so anchorpost sees it as a phase.

``m.joules`` is None when no counter could be read (``m.skipped`` says
why), e.g. on a machine without RAPL or without permission.
"""
import os
import re
import time

from ._anchor import begin as _begin
from ._anchor import end as _end
from ._anchor import phase as _phase

_PKG = re.compile(r"intel-rapl:(\d+)$")
_SUB = re.compile(r"intel-rapl:(\d+):(\d+)$")


class _Rapl:
    kind = "rapl"

    def __init__(self, sensor_id, path, max_uj):
        self.id = sensor_id
        self.path = path
        self.max_uj = max_uj
        # Kept open and re-read from offset 0: one pread per reading.
        self.fd = os.open(path, os.O_RDONLY)
        self.read_uj()  # fails here (EACCES) rather than mid-measurement

    def read_uj(self):
        return int(os.pread(self.fd, 32, 0).strip())

    def delta_j(self, a, b):
        d = b - a
        if d < 0:  # the counter wrapped (once; more is not recoverable)
            d += self.max_uj + 1
        return d / 1e6


class _Nvml:
    kind = "nvml"

    def __init__(self, sensor_id, nvml, handle):
        self.id = sensor_id
        self.nvml = nvml
        self.handle = handle
        self.read_uj()

    def read_uj(self):
        return int(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)) * 1000

    def delta_j(self, a, b):
        return (b - a) / 1e6


def _read_text(path):
    with open(path) as f:
        return f.read().strip()


def _rapl_sensors(root, skipped):
    out = []
    try:
        entries = sorted(os.listdir(root))
    except OSError as e:
        skipped["rapl"] = "%s: %s" % (root, e.strerror)
        return out
    for top in entries:
        m = _PKG.match(top)
        if not m:
            continue
        doms = [(top, os.path.join(root, top))]
        try:
            doms += [(sub, os.path.join(root, top, sub)) for sub in sorted(os.listdir(os.path.join(root, top)))
                     if _SUB.match(sub)]
        except OSError:
            pass
        for dname, d in doms:
            try:
                name = _read_text(os.path.join(d, "name"))
            except OSError:
                continue
            if name.startswith("package"):
                sid = "cpu_%s_%s" % (m.group(1), name)
            elif name == "dram":
                sid = "ram_%s_dram" % m.group(1)
            else:
                continue  # core/uncore are inside the package, psys overlaps it
            try:
                max_uj = int(_read_text(os.path.join(d, "max_energy_range_uj")))
                out.append(_Rapl(sid, os.path.join(d, "energy_uj"), max_uj))
            except (OSError, ValueError) as e:
                skipped[sid] = "%s: %s" % (os.path.join(d, "energy_uj"), getattr(e, "strerror", None) or e)
    return out


def _nvml_sensors(skipped):
    try:
        import pynvml
    except ImportError:
        return []
    out = []
    try:
        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
    except Exception as e:  # NVMLError and friends: no driver, no GPU
        skipped["nvml"] = "nvmlInit: %s" % (e,)
        return out
    for i in range(n):
        sid = "gpu_%d" % i
        try:
            out.append(_Nvml(sid, pynvml, pynvml.nvmlDeviceGetHandleByIndex(i)))
        except Exception as e:  # pre-Volta: NotSupported
            skipped[sid] = "nvmlDeviceGetTotalEnergyConsumption: %s" % (e,)
    return out


_cache = {}


def _sensors(root, nvml):
    """Sensors for (root, nvml), found once per process (opening files and
    nvmlInit are not per-measurement work)."""
    key = (os.path.abspath(root), bool(nvml), os.getpid())
    got = _cache.get(key)
    if got is None:
        skipped = {}
        sensors = _rapl_sensors(root, skipped)
        if nvml:
            sensors += _nvml_sensors(skipped)
        got = _cache[key] = (sensors, skipped)
    return got


def nothing_why(root, nvml, skipped):
    """One line: why no counter could be read (for measure=True's note)."""
    parts = ["%s: %s" % kv for kv in sorted(skipped.items())]
    if not any(k.startswith(("cpu_", "ram_", "rapl")) for k in skipped):
        parts.append("no RAPL domain under %s" % root)
    if nvml and "nvml" not in skipped and not any(k.startswith("gpu_") for k in skipped):
        try:
            import pynvml  # noqa: F401
        except ImportError:
            parts.append("pynvml not importable")
    elif not nvml:
        parts.append("NVML not asked for")
    return "; ".join(parts)


class measure:
    """``with anchor.measure(name=None) as m:`` -> ``m.joules`` (live estimate).

    Attributes after the block: ``joules`` (sum over sensors, or None when
    none could be read), ``by_sensor`` ({id: joules}, ids as perun names
    them: ``cpu_0_package-0``, ``ram_0_dram``, ``gpu_0``), ``seconds``,
    ``watts`` (joules / seconds), ``skipped`` ({id: why}).  ``start()`` and
    ``stop()`` do the same without a ``with`` (framework callbacks), and
    ``stop()`` returns ``joules``.  With ``name``, the block is also the
    anchor range ``name``; ``async with`` works too (the range then carries
    the task's id, as ``async with anchor.phase``).  powercap: the powercap root (default
    ``$ANCHOR_POWERCAP`` or ``/sys/class/powercap``); nvml=False skips
    pynvml.
    """

    def __init__(self, name=None, powercap=None, nvml=True):
        self.name = name
        self.root = powercap or os.environ.get("ANCHOR_POWERCAP") or "/sys/class/powercap"
        self.nvml = nvml
        self.joules = None
        self.by_sensor = {}
        self.seconds = None
        self.watts = None
        self.skipped = {}
        self._t0 = None

    def start(self, _task_id=False):
        self._sensors, skipped = _sensors(self.root, self.nvml)
        self.skipped = dict(skipped)
        self._task_id = _task_id
        if self.name is not None:
            if _task_id:  # BEGIN with the task's range id (written by the call)
                _phase(self.name).__aenter__()
            else:
                _begin(self.name)
        self._t0 = time.monotonic_ns()
        self._e0 = [self._read(s) for s in self._sensors]
        return self

    def _read(self, s):
        try:
            return s.read_uj()
        except Exception as e:  # a counter that stopped answering
            self.skipped[s.id] = "read: %s" % (e,)
            return None

    def stop(self):
        if self._t0 is None:
            raise RuntimeError("anchor.measure: stop() without start()")
        e1 = [self._read(s) for s in self._sensors]
        t1 = time.monotonic_ns()
        if self.name is not None:
            if self._task_id:
                _phase(self.name).__aexit__(None, None, None)
            else:
                _end(self.name)
        self.by_sensor = {s.id: s.delta_j(a, b) for s, a, b in zip(self._sensors, self._e0, e1)
                          if a is not None and b is not None}
        self.seconds = (t1 - self._t0) / 1e9
        self.joules = sum(self.by_sensor.values()) if self.by_sensor else None
        self.watts = self.joules / self.seconds if self.joules is not None and self.seconds > 0 else None
        self._t0 = None
        return self.joules

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False

    async def __aenter__(self):
        # As `async with anchor.phase`: the range carries the task's id.
        return self.start(_task_id=True)

    async def __aexit__(self, exc_type, exc, tb):
        self.stop()
        return False

    def __repr__(self):
        j = "%.3f J" % self.joules if self.joules is not None else "no reading"
        return "anchor.measure(%r: %s)" % (self.name, j)
