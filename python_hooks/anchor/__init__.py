"""anchor: clock-true phase anchors for ML/HPC runs, written into the run's ring file.

Every call writes one fixed-size record (CLOCK_MONOTONIC ns, pid, OS tid,
kind, name) into the memory-mapped ring shared by all threads and processes
of the run; ``anchorpost`` later aligns it with py-spy and perun output.

Where records go:
  * under ``LD_PRELOAD=libanchor.so`` the module calls the library's C API,
    so Python and C anchors share one writer;
  * otherwise the module's own copy of the writer attaches to
    ``$ANCHOR_FILE`` or creates ``./anchor-<UTC stamp>-<pid>.ring`` (and
    exports ``ANCHOR_FILE`` so child processes append to the same ring),
    writing the process-start and clock-sync records itself.
  * ``ANCHOR_DISABLE=1``, or a ring that cannot be attached (one line on
    stderr says why), makes every call a cheap no-op; ``enabled()`` is False.

Names are ``str``; the UTF-8 encoding is recorded, truncated to
``NAME_MAX`` (79) bytes when longer (the record gets a TRUNC flag).  A
non-str name raises TypeError; a str that cannot be encoded as UTF-8 (lone
surrogates) raises UnicodeEncodeError.  Nothing is written in either case.

Ranges (``begin``/``end``, ``phase``) are recorded exactly as called: the
module keeps no range state, so ``end`` without ``begin`` and misnested
ranges raise nothing and are written as they happened.  ``anchorpost``
pairs each END with the innermost open BEGIN of the same name on the same
thread; an END it cannot pair stays unmatched.

Automatic PyTorch anchors: ``anchor.auto("torch")``, or the environment
variable ``ANCHOR_AUTO=torch`` with this package's directory on
``PYTHONPATH`` (its ``sitecustomize.py`` starts auto mode before the script
runs and then runs any other ``sitecustomize`` found later on ``sys.path``).
"""
import functools as _functools
import inspect as _inspect
import os as _os

from . import _anchor
from ._anchor import NAME_MAX, begin, enabled, end, mark, phase, preloaded, ring_path, sync
from ._pulse import sync_pulse

__all__ = [
    "NAME_MAX",
    "auto",
    "begin",
    "device_edges",
    "enabled",
    "end",
    "mark",
    "phase",
    "preloaded",
    "ring_path",
    "sync",
    "sync_pulse",
]
__version__ = "0.1.0"

# The extension exported ANCHOR_FILE with setenv(); mirror it in os.environ
# so subprocess calls with an explicit env=os.environ.copy() also inherit it.
if enabled() and not _os.environ.get("ANCHOR_FILE"):
    _os.environ["ANCHOR_FILE"] = ring_path()


def _decorate(ph, func):
    """phase(name)(func): wrap func so every call runs inside the phase.

    Coroutine functions get an async wrapper (the range spans the awaited
    body).  A generator function is wrapped like any function: the range
    covers the call that creates the generator, not its iteration; use
    ``with anchor.phase(...)`` inside the generator for that.
    """
    if _inspect.iscoroutinefunction(func):

        @_functools.wraps(func)
        async def async_wrapper(*args, **kwargs):
            with ph:
                return await func(*args, **kwargs)

        return async_wrapper

    @_functools.wraps(func)
    def wrapper(*args, **kwargs):
        with ph:
            return func(*args, **kwargs)

    return wrapper


_anchor._set_decorator(_decorate)


def auto(target="torch"):
    """Install automatic anchors for ``target``: "torch" or "perun".

    "perun": inside a ``perun monitor`` process, record perun's own sample
    clock readings (marks ``perun.round``, ``perun.sample``) so anchorpost
    aligns perun's data exactly (see anchor._perun_hook).

    Idempotent.  If torch is not imported yet, an import hook installs the
    anchors right after ``import torch`` finishes, so a script that never
    imports torch pays nothing.  Anchors written (names): ``forward``
    (outermost module call per thread), ``backward`` (``torch.autograd.backward``
    and ``Tensor.backward``, outermost per thread), ``optimizer.step``,
    ``dataloader.next`` (each batch fetch) and the mark ``epoch`` (value:
    the DataLoader's epoch index, written when it starts a new iterator).
    """
    if target == "perun":
        from . import _perun_hook

        _perun_hook.install()
        return
    if target != "torch":
        raise ValueError("anchor.auto: unknown target %r (known: 'torch', 'perun')" % (target,))
    from . import _torch_hooks

    _torch_hooks.install_when_imported()


def device_edges(on=True, backend=None, all_phases=True):
    """Device-side phase edges (CUDA/ROCm streams), see anchor._device_edges.

    on=True: every ``anchor.phase`` (all_phases=True) or only those made with
    ``phase(name, device=True)`` also record a device event on the current
    stream at each edge; a background thread resolves them into DEV_BEGIN/
    DEV_END ring records on CLOCK_MONOTONIC (calibrated, drift reported).
    Never synchronizes the calling thread.  backend: a torch.cuda-shaped
    object (default torch.cuda when available).  Returns True when active.
    on=False stops it and resolves what is pending; returns the stats dict.
    """
    from . import _device_edges

    if not on:
        return _device_edges.disable()
    return _device_edges.enable(backend, all_phases=all_phases) is not None
