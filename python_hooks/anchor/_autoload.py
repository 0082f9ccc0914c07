"""Start-up half of auto mode, run by ``_anchor_autostart`` (imported by
anchor_auto.pth after ``pip install .``, or by anchor's ``sitecustomize.py``
in the build tree and a ``make install`` prefix).

Environment:
  ANCHOR_AUTO=torch      automatic PyTorch anchors (see anchor._torch_hooks);
  ANCHOR_AUTO=torch,layers  also every module to ANCHOR_LAYERS_DEPTH (default 2)
                         as forward/backward phases (anchor.torch.layers);
                         a comma-separated list is accepted.
  ANCHOR_SYNC_PULSE=1    run ``anchor.sync_pulse()`` (100 ms) when the
                         interpreter starts and again at exit;
                         =0 turns it off.  Unset: on when ANCHOR_AUTO is set
                         (a run set up for energy attribution wants the clock
                         aid), but only in a process where a target comes
                         into play: the start pulse runs right after ``torch``
                         (target torch) or ``perun`` (target perun) is
                         imported.  A helper process that inherits
                         ANCHOR_AUTO and imports neither neither pulses nor
                         writes a ring.

One pulse pair per process tree: the first process to pulse exports
ANCHOR_SYNC_PULSE_PID=<its pid>, and descendants that inherit it (spawned
DataLoader workers, subprocesses, torchrun workers) skip the pulses; they
share CLOCK_MONOTONIC with it on the same host, so one pattern is enough
and each worker does not pay 200 ms.  The exit pulse runs only in the
process that ran the start pulse (forked DataLoader workers leave with
os._exit and run no atexit handlers anyway).

Auto mode needs sitecustomize to run: ``python -S`` or ``-I`` (isolated
mode ignores PYTHONPATH) turn it off; call ``anchor.auto("torch")`` there.
"""
import atexit
import os
import sys

_started = False


def _env_flag(value):
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def start(environ=None):
    """Start auto mode from environment variables.  Idempotent."""
    global _started
    if _started:
        return
    _started = True
    env = os.environ if environ is None else environ
    targets = [t.strip() for t in env.get("ANCHOR_AUTO", "").split(",") if t.strip()]
    pulse_env = env.get("ANCHOR_SYNC_PULSE")

    import anchor  # also hooks perun's sampler (anchor._perun_hook), always

    for t in targets:
        try:
            anchor.auto(t)
        except ValueError as e:
            sys.stderr.write("anchor: ANCHOR_AUTO: %s; ignored\n" % (e,))
    if env.get("ANCHOR_SYNC_PULSE_PID"):
        return  # an ancestor pulses for the whole tree
    if pulse_env is not None:
        if _env_flag(pulse_env):
            _pulse_start()
        return
    from . import _import_hook

    for t in targets:
        if t in _PULSE_AFTER:
            _import_hook.when_imported(_PULSE_AFTER[t], _pulse_start)


# Default pulse: after the import that shows this process is the one the
# run is about, so a helper that inherits ANCHOR_AUTO stays silent.
_PULSE_AFTER = {"torch": "torch", "perun": "perun"}
_pulsed = False


def _pulse_start(_module=None):
    global _pulsed
    if _pulsed or os.environ.get("ANCHOR_SYNC_PULSE_PID"):
        return
    _pulsed = True
    os.environ["ANCHOR_SYNC_PULSE_PID"] = str(os.getpid())
    import anchor

    anchor.sync_pulse()
    pid = os.getpid()

    def _exit_pulse():
        if os.getpid() == pid:
            anchor.sync_pulse()

    atexit.register(_exit_pulse)
