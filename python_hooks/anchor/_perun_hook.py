"""Exact perun alignment: put perun's own sample clock readings in the ring.

perun (>= 1.0) stamps each sample with time.perf_counter_ns() (the ring's
CLOCK_MONOTONIC on Linux) and stores only differences to the first stamp.
Whenever anchor is imported in perun's process (always under a preloaded
libanchor.so, or ANCHOR_AUTO=perun, or an ``import anchor`` before perun
starts sampling), this wraps the
sampler's loop (perun.monitoring.subprocess._monitoringLoop, run in perun's
forked sampling process once per round): when a round ends it writes the
mark "perun.round" and one mark "perun.sample" per stamp, value = the stamp
in ns.  anchorpost then knows perun's time zero exactly.  Marks are written
after the round, so sampling itself is not slowed.
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
        try:
            return orig(lSensors, timesteps, *args, **kwargs)
        finally:
            try:
                mark("perun.round", start)
                for ts in timesteps[start:]:
                    mark("perun.sample", int(ts))
            except Exception:  # never disturb perun
                pass

    _monitoringLoop._anchor_wrapped = True
    _monitoringLoop.__wrapped__ = orig
    mod._monitoringLoop = _monitoringLoop


def install():
    """Wrap perun's sampling loop now or when perun imports it.

    ANCHOR_PERUN_HOOK=0 turns it off: only to measure the fallback alignment
    (perun as if it had run outside libanchor), as bench/accuracy.py does."""
    import os

    if os.environ.get("ANCHOR_PERUN_HOOK", "").strip().lower() in ("0", "false", "no", "off"):
        return
    _import_hook.when_imported(_MODULE, _wrap)
