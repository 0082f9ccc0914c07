"""Device-side phase edges: when an asynchronous device (a CUDA or ROCm
stream) really reached each phase edge, on the ring's CLOCK_MONOTONIC.

Why: CUDA kernels run asynchronously, so a host-side ``forward`` range is a
launch window; the GPU does most of that work while the host is already in
``backward`` or waiting in ``step``.  GPU energy belongs to when the GPU
worked.

How (nothing here ever synchronizes the training thread):
  * edge()      the hot path: create an event with timing, ``record()`` it
                on the current stream, append (event, name, kind) to a
                deque.  Host BEGIN/END are written as before, by the caller.
  * resolver    one daemon thread polls the deque every few ms; an event
                whose ``query()`` is True becomes a DEV_BEGIN/DEV_END record
                (ring_format.h) whose value is the edge's CLOCK_MONOTONIC ns.
                Events complete in stream order, so it stops at the first
                pending one.
  * calibration the device clock is only visible through
                ``a.elapsed_time(b)``.  The resolver records a reference
                event on a side stream (idle, so it completes at once)
                between two host clock reads, waits for it *on its own
                thread*, and takes the midpoint (narrowest of a few tries)
                as the event's host time.  Every edge is mapped from the
                latest reference: host = H_k + rate * elapsed(ref_k, e); the
                rate (host ns per device ns) comes from the first and latest
                reference, so device clock drift is measured and corrected.
                Each calibration writes a DEV_CLOCK record with its bracket,
                the drift in ppm and how far the previous fit missed it.
                Elapsed times stay within about one calibration period of a
                reference, so CUDA's float milliseconds keep ~0.1 us.

Backends are pluggable: anything shaped like the ``torch.cuda`` module
(``Event(enable_timing=True)`` with ``record(stream=None)``, ``query()``,
``synchronize()``, ``elapsed_time(other)`` in ms; ``Stream()``;
``current_stream()``; ``is_available()``).  ``torch.cuda`` itself is the
backend on CUDA and ROCm builds (ROCm's HIP events answer the same API).
Tests inject a CPU stand-in (tests/lib/devstandin.py) with ``set_backend``.

Scope: one device per process (the current one when enabled), as in DDP;
device phases of one name are paired on the device timeline, so the same
name open on two streams at once would pair wrongly.
"""
import collections
import os
import threading
import time

from . import _anchor

_KB, _KE, _KC = _anchor._KIND_DEV_BEGIN, _anchor._KIND_DEV_END, _anchor._KIND_DEV_CLOCK
_mono = time.monotonic_ns

_backend = None  # injected (set_backend) or torch.cuda
_edges = None    # the running DeviceEdges


class DeviceEdges:
    """Records device events at phase edges and resolves them off the hot path."""

    def __init__(self, backend, label="cuda:0", calib_period_s=1.0, poll_s=0.005, tries=5):
        self.b = backend
        self.label = label
        self.calib_period_ns = int(calib_period_s * 1e9)
        self.poll_s = poll_s
        self.tries = tries
        self.pending = collections.deque()
        self.Event = backend.Event
        self.side = backend.Stream()
        self.ref = None            # (event, host_ns) of the latest calibration
        self.first = None          # (host_ns, device ns since first ref) = (H0, 0)
        self.dev_since_first = 0.0  # device ns from the first reference to the latest
        self.rate = 1.0            # host ns per device ns
        self.next_calib = 0
        self.stats = {"resolved": 0, "calibrations": 0, "max_bracket_ns": 0,
                      "drift_ppm": 0.0, "max_resid_ns": 0}
        self.stop = threading.Event()
        self.calibrate()
        self.thread = threading.Thread(target=self._run, name="anchor-device-edges", daemon=True)
        self.thread.start()

    # The hot path: no synchronize, no lock (deque.append is atomic).
    def edge(self, name, is_end):
        ev = self.Event(enable_timing=True)
        ev.record()
        self.pending.append((ev, name, _KE if is_end else _KB))

    def calibrate(self):
        """One reference point: narrowest host bracket around a side-stream event."""
        best = None
        for _ in range(self.tries):
            ev = self.Event(enable_timing=True)
            t1 = _mono()
            ev.record(self.side)
            ev.synchronize()  # this (resolver) thread only
            t2 = _mono()
            if best is None or t2 - t1 < best[2] - best[1]:
                best = (ev, t1, t2)
        ev, t1, t2 = best
        host = (t1 + t2) // 2
        bracket = t2 - t1
        resid = 0
        if self.ref is not None:
            d = self.ref[0].elapsed_time(ev) * 1e6  # device ns since the previous ref
            resid = int(self.ref[1] + self.rate * d) - host
            self.dev_since_first += d
            if self.dev_since_first > 0:
                self.rate = (host - self.first) / self.dev_since_first
        else:
            self.first = host
        self.ref = (ev, host)
        st = self.stats
        st["calibrations"] += 1
        st["max_bracket_ns"] = max(st["max_bracket_ns"], bracket)
        st["drift_ppm"] = (1.0 / self.rate - 1.0) * 1e6
        st["max_resid_ns"] = max(st["max_resid_ns"], abs(resid))
        _anchor._device_event(_KC, "dev=%s bracket_ns=%d drift_ppm=%.3f resid_ns=%d"
                              % (self.label, bracket, st["drift_ppm"], resid), host)
        # The first few come sooner (50 ms, 100 ms, ...): until a second
        # reference exists the rate is assumed 1, so drift would go
        # uncorrected for a whole period.
        k = st["calibrations"]
        self.next_calib = host + min(self.calib_period_ns, 50_000_000 << min(k - 1, 20))

    def resolve(self, wait=False):
        """Write every completed edge (all of them with wait=True)."""
        q = self.pending
        ref_ev, ref_host = self.ref
        rate = self.rate
        n = 0
        while q:
            ev, name, kind = q[0]
            if not ev.query():
                if not wait:
                    break
                ev.synchronize()
            q.popleft()
            t = ref_host + int(round(rate * ref_ev.elapsed_time(ev) * 1e6))
            _anchor._device_event(kind, name, t)
            n += 1
        self.stats["resolved"] += n
        return n

    def _run(self):
        while not self.stop.is_set():
            try:
                if _mono() >= self.next_calib:
                    self.calibrate()
                self.resolve()
            except Exception as e:  # never take the training process down
                import sys

                print("anchor[%d]: device edges stopped: %s" % (os.getpid(), e), file=sys.stderr)
                return
            self.stop.wait(self.poll_s)

    def close(self):
        """Stop the thread, recalibrate once and resolve what is left (at exit:
        waiting for the device is fine once training is over)."""
        self.stop.set()
        self.thread.join()
        self.calibrate()
        self.resolve(wait=True)


def set_backend(backend):
    """Use `backend` (torch.cuda-shaped) instead of torch.cuda (tests)."""
    global _backend
    _backend = backend


def _torch_cuda():
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return None
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_available():
            return cuda
    except Exception:
        pass
    return None


def _label(b):
    if getattr(b, "label", None):
        return b.label
    try:
        return "%s:%d" % ("cuda", b.current_device())
    except Exception:
        return getattr(b, "label", "device")


def enable(backend=None, all_phases=True, calib_period_s=None):
    """Start device-side edges; returns the DeviceEdges, or None when no
    device backend is available (then nothing changes: the mark path stays
    the host-only one).  all_phases: every ``anchor.phase`` also gets device
    edges (else only ``phase(name, device=True)``)."""
    global _edges
    if _edges is not None:
        return _edges
    b = backend or _backend or _torch_cuda()
    if b is None or not _anchor.enabled():
        return None
    if calib_period_s is None:
        calib_period_s = float(os.environ.get("ANCHOR_DEVICE_CALIB_S", "1.0"))
    _edges = DeviceEdges(b, label=_label(b), calib_period_s=calib_period_s)
    _anchor._set_device_hook(_edges.edge, bool(all_phases))
    import atexit

    atexit.register(disable)
    return _edges


def disable():
    """Stop, resolve what is pending, and detach the hook.  Returns the stats."""
    global _edges
    e = _edges
    if e is None:
        return None
    _anchor._set_device_hook(None)
    _edges = None
    e.close()
    return e.stats


def begin(name):
    """Host BEGIN then the device edge (used by the torch hooks)."""
    _anchor.begin(name)
    e = _edges
    if e is not None:
        e.edge(name, 0)


def end(name):
    _anchor.end(name)
    e = _edges
    if e is not None:
        e.edge(name, 1)


# --- ANCHOR_AUTO=torch: arm lazily --------------------------------------
#
# Not at `import torch`: creating events there would initialise CUDA on
# device 0 in every DDP rank before it calls torch.cuda.set_device, and in
# a run that never touches the GPU.  The torch hooks write through
# module-level _begin/_end; arming swaps them for a check that starts
# device edges at the first edge after the backend is initialised (the
# model is on the device by then), and then for begin/end above.  On a
# torch without CUDA (or ROCm) nothing is swapped: the mark path is the
# host-only one, unchanged.

_hooks_mod = None
_armed_cuda = None


def _ready(b):
    try:
        return bool(getattr(b, "is_initialized", lambda: True)())
    except Exception:
        return False


def _start_from_hooks():
    # Until CUDA is initialised this runs at every edge: only the cheap
    # is_initialized() check (torch.cuda was found available at arm time).
    b = _backend or _armed_cuda
    if b is None or not _ready(b):
        return False
    if enable(b) is None:
        _hooks_mod._begin, _hooks_mod._end = _anchor.begin, _anchor.end
        return False
    _hooks_mod._begin, _hooks_mod._end = begin, end
    return True


def _lazy_begin(name):
    if _start_from_hooks():
        begin(name)
    else:
        _anchor.begin(name)


def _lazy_end(name):
    if _start_from_hooks():
        end(name)
    else:
        _anchor.end(name)


def arm_torch(torch, hooks_mod):
    """Called by _torch_hooks._install.  ANCHOR_DEVICE_EDGES=0 turns it off."""
    global _hooks_mod, _armed_cuda
    if os.environ.get("ANCHOR_DEVICE_EDGES", "1") in ("0", "false", "no"):
        return
    if _backend is None:
        try:
            if not torch.cuda.is_available():
                return
        except Exception:
            return
        _armed_cuda = torch.cuda
    _hooks_mod = hooks_mod
    hooks_mod._begin, hooks_mod._end = _lazy_begin, _lazy_end


def disarm_torch():
    global _hooks_mod
    if _hooks_mod is not None:
        _hooks_mod._begin, _hooks_mod._end = _anchor.begin, _anchor.end
        _hooks_mod = None


def _after_fork_child():
    # The resolver thread did not survive fork; a child (DataLoader worker)
    # records host edges only.
    global _edges
    if _edges is not None:
        _edges = None
        _anchor._set_device_hook(None)
        if _hooks_mod is not None:
            _hooks_mod._begin, _hooks_mod._end = _anchor.begin, _anchor.end


os.register_at_fork(after_in_child=_after_fork_child)
