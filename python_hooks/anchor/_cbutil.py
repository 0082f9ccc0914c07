"""Shared by the framework callbacks (anchor.lightning, anchor.hf): ranges
opened from one hook and closed from another, and per-epoch joules."""
import os
import sys

from ._anchor import begin as _begin
from ._anchor import end as _end
from ._measure import measure as _measure
from ._measure import nothing_why as _nothing_why

_said_nothing = []  # pids that said why measure=True measures nothing


class Ranges:
    """Open/close named ranges from separate hooks.  A hook that fires
    without its partner (an exception between them, a hook the framework
    skips) never writes an END without BEGIN, and close_all() ends what is
    still open when training stops."""

    def __init__(self):
        self.open = []

    def begin(self, name):
        if name in self.open:
            return
        self.open.append(name)
        _begin(name)

    def end(self, name):
        if name in self.open:
            self.open.remove(name)
            _end(name)

    def close_all(self):
        while self.open:
            _end(self.open.pop())


class EpochEnergy:
    """measure=True: a live anchor.measure over each training epoch."""

    def __init__(self, enabled, powercap=None):
        self.enabled = enabled
        self.powercap = powercap
        self.m = None
        self.joules = []  # per finished epoch (None: no readable counter)

    def start(self):
        if self.enabled:
            self.m = _measure(None, powercap=self.powercap).start()
            if not self.m._sensors and os.getpid() not in _said_nothing:
                # Once per process: a callback asked to measure and every
                # epoch would silently log nothing.
                _said_nothing.append(os.getpid())
                sys.stderr.write("anchor[%d]: measure=True measures nothing: no energy counter is readable (%s); "
                                 "epoch joules stay None (anchorpost with perun attributes energy afterwards)\n"
                                 % (os.getpid(), _nothing_why(self.m.root, self.m.nvml, self.m.skipped)))

    def stop(self):
        """Joules of the epoch just ended, or None."""
        if self.m is None:
            return None
        j = self.m.stop()
        self.m = None
        self.joules.append(j)
        return j
