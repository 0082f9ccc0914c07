"""The sync pulse: a short activity pattern other tools can see.

``anchorpost`` aligns clocks of tools that ran as separate processes
(py-spy, perun) by finding this pattern in their data: three 20 ms bursts
of busy-spinning Python code, 20 ms idle between them (100 ms in all).
py-spy samples the frames ``_anchor_sync_pulse_busy`` (spin) and
``_anchor_sync_pulse_idle`` (sleep), perun's CPU utilisation shows the
square wave, and the ring holds a BEGIN/END ``anchor.sync_pulse`` pair
around each burst (plus a SYNC record after the pattern).
"""
import time as _time

from ._anchor import begin as _begin
from ._anchor import end as _end
from ._anchor import sync as _sync

PULSE_NAME = "anchor.sync_pulse"


def _anchor_sync_pulse_busy(until_ns):
    # A Python-level loop on purpose: py-spy must see this frame on top.
    now = _time.monotonic_ns
    n = 0
    while now() < until_ns:
        n += 1
    return n


def _anchor_sync_pulse_idle(seconds):
    _time.sleep(seconds)


def sync_pulse(bursts=3, busy_ms=20.0, idle_ms=20.0):
    """Run the sync pulse: ``bursts`` busy spins of ``busy_ms`` separated
    by ``idle_ms`` sleeps, each spin inside BEGIN/END "anchor.sync_pulse".

    Costs ``bursts*busy_ms + (bursts-1)*idle_ms`` of wall time (100 ms with
    the defaults) and that much busy time of one core.  Runs (without
    writing anchors) even when no ring is attached, so the cost does not
    depend on it.  Returns the wall time it took, in ms.
    """
    if bursts < 1 or busy_ms <= 0 or idle_ms < 0:
        raise ValueError("sync_pulse: need bursts >= 1, busy_ms > 0, idle_ms >= 0")
    t0 = _time.monotonic_ns()
    for i in range(bursts):
        if i:
            _anchor_sync_pulse_idle(idle_ms / 1e3)
        _begin(PULSE_NAME)
        _anchor_sync_pulse_busy(_time.monotonic_ns() + int(busy_ms * 1e6))
        _end(PULSE_NAME)
    _sync()
    return (_time.monotonic_ns() - t0) / 1e6
