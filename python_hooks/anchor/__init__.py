"""anchor: clock-true phase anchors for ML/HPC runs, written into the run's ring file.

Every call writes one fixed-size record (CLOCK_MONOTONIC ns, pid, OS tid,
kind, name) into the memory-mapped ring shared by all threads and processes
of the run; ``anchorpost`` later aligns it with py-spy and perun output.

Where records go:
  * under ``LD_PRELOAD=libanchor.so`` the module calls the library's C API,
    so Python and C anchors share one writer;
  * otherwise the module's own copy of the writer attaches, at the first
    event (never at import), to
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

In coroutines use ``async with anchor.phase(name):`` (or ``@anchor.phase``
on the ``async def``): its BEGIN/END carry the task's range id (the
identity of the task's contextvars Context), so ranges of concurrent
asyncio tasks on one thread pair with their own BEGIN.  A plain ``with``
held across an ``await`` carries no id and pairs by name alone.

Automatic PyTorch anchors: ``anchor.auto("torch")``, or the environment
variable ``ANCHOR_AUTO=torch`` (started before the script runs by
``anchor_auto.pth`` after ``pip install .``, or by anchor's chaining
``sitecustomize.py`` in the build tree / install prefix, which a preloaded
libanchor.so puts on PYTHONPATH).  perun's sample stamps are recorded
whenever perun runs in a process that imported anchor (anchor._perun_hook).
"""
import functools as _functools
import os as _os

from . import _anchor
from ._anchor import NAME_MAX, begin, enabled, end, mark, phase, preloaded, ring_path, sync
from ._measure import measure
from ._pulse import sync_pulse

__all__ = [
    "NAME_MAX",
    "auto",
    "begin",
    "device_edges",
    "enabled",
    "end",
    "mark",
    "measure",
    "nvtx",
    "phase",
    "preloaded",
    "ring_path",
    "sync",
    "sync_pulse",
]
__version__ = _anchor.__version__  # the file VERSION, compiled in (anchor_version.h)

# No ring is touched here: the extension attaches at the first event (and
# then mirrors the ANCHOR_FILE it exports into os.environ), so importing
# for help() or type checking writes nothing.


def _decorate(ph, func):
    """phase(name)(func): wrap func so every call runs inside the phase.

    Coroutine functions get an async wrapper (the range spans the awaited
    body, entered with ``async with`` so that concurrent calls in different
    tasks pair their own BEGIN/END).  A generator function is wrapped like any function: the range
    covers the call that creates the generator, not its iteration; use
    ``with anchor.phase(...)`` inside the generator for that.
    """
    import inspect  # here, not at import: it costs ~10 ms and most runs never decorate

    _sites.decorated(ph.name, func)
    if inspect.iscoroutinefunction(func):

        @_functools.wraps(func)
        async def async_wrapper(*args, **kwargs):
            async with ph:
                return await func(*args, **kwargs)

        return async_wrapper

    @_functools.wraps(func)
    def wrapper(*args, **kwargs):
        with ph:
            return func(*args, **kwargs)

    return wrapper


_anchor._set_decorator(_decorate)

# Call sites of `with anchor.phase` go into the ring once each (SITE
# records): anchorpost places py-spy samples by them (anchor/_sites.py).
from . import _sites  # noqa: E402
from . import _body_sites  # noqa: E402,F401  (after _sites: it wraps its hook)

# perun in this process (perun monitor, python -m perun, perun's decorator
# API) puts its own sample stamps into the ring: the exact alignment is the
# default, with no variable.  Costs a dict lookup per later import until
# perun's sampler module is imported, and nothing when it never is.
from . import _perun_hook as _perun_hook_mod

_perun_hook_mod.install()


def nvtx(on=True):
    """``with anchor.phase(name)`` also pushes/pops an NVTX range ``name``
    (Nsight Systems then shows anchor's phases), through torch.cuda.nvtx on
    a CUDA build of torch, else the ``nvtx`` package.  Returns True when
    one was found, False otherwise (then nothing changes).  ``ANCHOR_NVTX=1``
    asks for it at import.  Costs one C-level NULL test per phase when off.
    Only the sync ``with`` emits: NVTX push/pop is a per-thread stack that
    interleaved asyncio tasks would break."""
    from . import _bridges

    return _bridges.emit_nvtx(on)


if _os.environ.get("ANCHOR_NVTX", "").strip().lower() not in ("", "0", "false", "no", "off"):

    def _nvtx_from_env():
        from . import _bridges, _import_hook

        _bridges.emit_nvtx(True)
        # A CUDA torch imported later is preferred to the nvtx package.
        _import_hook.when_imported("torch", lambda _m: _bridges.emit_nvtx(True))

    _nvtx_from_env()


def auto(target="torch"):
    """Install automatic anchors for ``target``: "torch", "perun",
    "record_function" or "nvtx".

    "record_function" / "nvtx": bridges from what the code already
    annotates: every ``torch.profiler.record_function`` range, and NVTX
    ranges pushed through ``torch.cuda.nvtx`` or the ``nvtx`` package,
    become anchor ranges of the same name (anchor._bridges).  Usually
    combined: ``ANCHOR_AUTO=torch,record_function,nvtx``.

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
    if target in ("record_function", "nvtx"):
        from . import _bridges

        _bridges.install(target)
        return
    if target == "layers":
        # every module to ANCHOR_LAYERS_DEPTH (anchor.torch.layers), on the
        # model's first call; implies the torch anchors
        from . import _torch_hooks

        try:
            depth = int(_os.environ.get("ANCHOR_LAYERS_DEPTH", "2"))
        except ValueError:
            raise ValueError("ANCHOR_LAYERS_DEPTH=%r is not an integer"
                             % (_os.environ.get("ANCHOR_LAYERS_DEPTH"),)) from None
        if depth < 1:
            raise ValueError("ANCHOR_LAYERS_DEPTH must be >= 1 (got %d)" % depth)
        _torch_hooks.layers_on_first_call(depth)
        _torch_hooks.install_when_imported()
        return
    if target != "torch":
        raise ValueError("anchor.auto: unknown target %r (known: 'torch', 'layers', 'perun', 'record_function', "
                         "'nvtx')" % (target,))
    from . import _torch_hooks

    _torch_hooks.install_when_imported()


def __getattr__(name):
    # anchor.torch (layers) on first use: importing anchor never imports torch
    if name == "torch":
        import importlib

        mod = importlib.import_module(".torch", __name__)
        globals()["torch"] = mod
        return mod
    raise AttributeError("module 'anchor' has no attribute %r" % (name,))


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
