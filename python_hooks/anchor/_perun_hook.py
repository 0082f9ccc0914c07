"""Exact perun alignment: put perun's own sample clock readings in the ring.

perun (>= 1.0) stamps each sample with time.perf_counter_ns() (the ring's
CLOCK_MONOTONIC on Linux) and stores only differences to the first stamp.
Whenever anchor is imported in perun's process (always under a preloaded
libanchor.so, or ANCHOR_AUTO=perun, or an ``import anchor`` before perun
starts sampling), this wraps the
sampler's loop (perun.monitoring.subprocess._monitoringLoop, run in perun's
forked sampling process once per round): when a round ends it writes the
mark "perun.round" and one mark "perun.sample" per stamp, value = the stamp
in ns.  anchorpost then knows perun's time zero exactly.

perun stamps a round and then reads its sensors one after another; on a
busy machine its sampler can be preempted between the stamp and a read, and
a reading then holds energy up to a time the stamp does not tell.  So each
energy or power sensor's read is timed too (two clock readings around
perun's own measureCallback; its middle, less its stamp, is the read's
delay), and the round ends, per timed sensor, with the marks
"perun.read.n <id>" (reads), "perun.read.p50 <id>" and "perun.read.max
<id>" (delays, ns), and one "perun.read <id>" for each read more than
0.5 ms from the median, value = its index << 40 | its delay in ns.  Only
those one by one: a mark per read would triple the ring records perun
costs (an hour at 0.1 s: 36,000 stamps, 72,000 more for two sensors),
while a read within 0.5 ms of the median is what the lag fit's floor
allows anyway.
Marks are written after the round, so sampling is slowed only by the two
clock readings per read (well under a microsecond).
"""
from . import _import_hook

_MODULE = "perun.monitoring.subprocess"


def _wrap(mod):
    orig = getattr(mod, "_monitoringLoop", None)
    if orig is None or getattr(orig, "_anchor_wrapped", False):
        return
    from . import mark

    def _monitoringLoop(lSensors, timesteps, *args, **kwargs):
        start = len(timesteps)
        timed = []
        try:
            timed = _time_reads(lSensors)
        except Exception:  # never disturb perun: then stamps only
            timed = []
        try:
            return orig(lSensors, timesteps, *args, **kwargs)
        finally:
            for dev, cb, _ in timed:
                try:
                    dev.measureCallback = cb
                except Exception:
                    pass
            try:
                mark("perun.round", start)
                for ts in timesteps[start:]:
                    mark("perun.sample", int(ts))
                for dev, _, reads in timed:
                    _mark_reads(mark, str(dev.id), timesteps[start:], reads)
            except Exception:  # never disturb perun
                pass

    _monitoringLoop._anchor_wrapped = True
    _monitoringLoop.__wrapped__ = orig
    mod._monitoringLoop = _monitoringLoop


_OFF_NS = 500_000


def _mark_reads(mark, sid, stamps, reads):
    """One sensor's reads of a round against its stamps (module doc)."""
    delay = [r - int(t) for r, t in zip(reads, stamps)]
    if not reads or len(reads) != len(stamps) or min(delay) < 0:
        mark("perun.read.n " + sid, 0)  # they do not pair: anchorpost keeps the stamps
        return
    srt = sorted(delay)
    mark("perun.read.n " + sid, len(delay))
    mark("perun.read.p50 " + sid, srt[(len(srt) - 1) // 2])
    mark("perun.read.max " + sid, srt[-1])
    med = srt[(len(srt) - 1) // 2]
    for i, d in enumerate(delay):
        if abs(d - med) > _OFF_NS and i < (1 << 24) and d < (1 << 40):
            mark("perun.read " + sid, (i << 40) | d)


def _time_reads(sensors):
    """Wrap each energy or power sensor's measureCallback (perun's
    Sensor.read calls it) so that every read's middle, in perf_counter_ns
    (perun's stamp clock), is kept: [(sensor, original callback, [ns, ...]),
    ...]."""
    import time

    clock = time.perf_counter_ns
    out = []
    for dev in sensors:
        unit = getattr(getattr(dev, "dataType", None), "unit", None)
        if str(getattr(unit, "value", unit)).upper() not in ("J", "W", "JOULE", "WATT"):
            continue
        cb = getattr(dev, "measureCallback", None)
        if cb is None:
            continue
        reads = []

        def timed(cb=cb, reads=reads):
            t0 = clock()
            v = cb()
            reads.append((t0 + clock()) // 2)
            return v

        dev.measureCallback = timed
        out.append((dev, cb, reads))
    return out


def install():
    """Wrap perun's sampling loop now or when perun imports it.

    ANCHOR_PERUN_HOOK=0 turns it off: only to measure the fallback alignment
    (perun as if it had run outside libanchor), as bench/accuracy.py does."""
    import os

    if os.environ.get("ANCHOR_PERUN_HOOK", "").strip().lower() in ("0", "false", "no", "off"):
        return
    _import_hook.when_imported(_MODULE, _wrap)
