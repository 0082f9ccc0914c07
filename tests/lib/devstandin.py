"""A CPU stand-in for an asynchronous device ("emulated device", not a GPU).

Shaped like the parts of ``torch.cuda`` that anchor/_device_edges.py uses:
``Event(enable_timing=True)`` with ``record(stream=None)``, ``query()``,
``synchronize()``, ``elapsed_time(end)`` (ms); ``Stream()``,
``current_stream()``, ``synchronize()``, ``is_available()``,
``is_initialized()``, ``current_device()``.  Each stream is a worker thread
that executes queued items in order, like a CUDA stream:
  * work items  ``launch(label, seconds)``: the "kernel" sleeps that long
                (a device does not use the host's CPU); on_exec(label, t_ns)
                is called when it starts and on_exec(None, t_ns) when it
                ends, so an emulated power sensor can follow what executes;
  * events      stamped with the device clock when the worker reaches them.
The device clock runs at (1 + drift_ppm * 1e-6) times CLOCK_MONOTONIC from
an arbitrary origin, so calibration and drift correction are exercised.
Truth: every event's host CLOCK_MONOTONIC at execution and every work
item's [start, end) are logged (``log``), exact by construction.
"""
import collections
import threading
import time

_mono = time.monotonic_ns


class _Stream:
    def __init__(self, dev, name):
        self.dev = dev
        self.name = name
        self.q = collections.deque()
        self.cv = threading.Condition()
        self.idle = threading.Event()
        self.idle.set()
        self.t = threading.Thread(target=self._run, name="standin-" + name, daemon=True)
        self.t.start()

    def submit(self, item):
        with self.cv:
            self.idle.clear()
            self.q.append(item)
            self.cv.notify()

    def _run(self):
        while True:
            with self.cv:
                while not self.q:
                    self.idle.set()
                    self.cv.wait()
                item = self.q.popleft()
            item()

    def synchronize(self):
        # A plain flag, not a logged Event: the truth log holds only the
        # events the code under test recorded.
        done = threading.Event()
        self.submit(done.set)
        done.wait()


class Event:
    dev = None  # set by StandinDevice

    def __init__(self, enable_timing=False):
        self._done = threading.Event()
        self.t_dev_ns = None
        self.t_host_ns = None
        self.stream = None

    def _fire(self):
        h = _mono()
        self.t_host_ns = h
        self.t_dev_ns = self.dev.clock(h)
        self.dev.log_event(self)
        self._done.set()

    def record(self, stream=None):
        self.stream = stream or self.dev.current_stream()
        self.stream.submit(self._fire)

    def query(self):
        return self._done.is_set()

    def synchronize(self):
        self._done.wait()

    def elapsed_time(self, end):
        if not (self._done.is_set() and end._done.is_set()):
            raise RuntimeError("elapsed_time on an event that has not completed")
        return (end.t_dev_ns - self.t_dev_ns) / 1e6


class StandinDevice:
    """The backend object: pass it to anchor._device_edges.set_backend."""

    label = "standin:0"

    def __init__(self, drift_ppm=0.0, on_exec=None):
        self.rate = 1.0 + drift_ppm * 1e-6
        self.origin = _mono() - 123_456_789_000  # an unrelated device epoch
        self.on_exec = on_exec
        self.lock = threading.Lock()
        self.events = []  # (stream name, t_host_ns, t_dev_ns)
        self.items = []   # (label, t0_host_ns, t1_host_ns)
        self.Event = type("Event", (Event,), {"dev": self})
        self.default = _Stream(self, "default")

    def clock(self, host_ns):
        return int((host_ns - self.origin) * self.rate)

    def log_event(self, ev):
        with self.lock:
            self.events.append((ev.stream.name, ev.t_host_ns, ev.t_dev_ns))

    # torch.cuda-shaped surface
    def Stream(self):
        return _Stream(self, "side")

    def current_stream(self):
        return self.default

    def is_available(self):
        return True

    def is_initialized(self):
        return True

    def current_device(self):
        return 0

    def synchronize(self):
        self.default.synchronize()

    # the "kernels"
    def launch(self, label, seconds):
        def run():
            t0 = _mono()
            if self.on_exec:
                self.on_exec(label, t0)
            time.sleep(seconds)
            t1 = _mono()
            if self.on_exec:
                self.on_exec(None, t1)
            with self.lock:
                self.items.append((label, t0, t1))

        self.default.submit(run)
