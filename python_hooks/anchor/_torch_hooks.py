"""Automatic PyTorch anchors (``anchor.auto("torch")`` / ``ANCHOR_AUTO=torch``).

Only public hook points and two small wrappers; nothing in the model,
optimizer or data changes.  Names written:

  forward          BEGIN/END around the outermost ``nn.Module.__call__`` per
                   thread (a forward that raises still ends).  A wrapper of
                   ``Module.__call__``, not torch's global forward hooks:
                   any global hook sends every submodule call down torch's
                   slow path (measured: an empty global pre-hook costs
                   ~1.6 us per module call, pre+post hooks ~3.8 us; the
                   wrapper ~0.3 us), which alone broke the 1 % budget on a
                   small transformer.
  backward         BEGIN/END around the outermost ``torch.autograd.backward``
                   per thread (``Tensor.backward`` calls it).  The call blocks
                   until the autograd engine has finished, including work the
                   engine runs on its own device threads, so the range covers
                   the real backward.
  optimizer.step   global optimizer step pre/post hooks (a step that raises
                   leaves the BEGIN unmatched).  The first step of each
                   optimizer class also writes a SITE record for its own
                   ``step`` (unwrapped): torch runs every call of it between
                   these hooks, so a profiler sample in that code is inside
                   optimizer.step by construction, and anchorpost places it
                   by structure instead of by a timestamp that lags under
                   load (a 9 ms step holds one or two samples).
  dataloader.next  each batch fetch (``_BaseDataLoaderIter.__next__``),
                   including the final one that raises StopIteration.
  epoch            MARK, value = per-DataLoader epoch index (0, 1, ...),
                   written when ``DataLoader.__iter__`` starts a new pass.
  dist.<name>      BEGIN/END around the torch.distributed collectives
                   (all_reduce, broadcast, barrier, all_gather, reduce_scatter
                   and their tensor/single variants, reduce, gather, scatter,
                   all_to_all), outermost call per thread only.  With
                   ``async_op=True`` the range covers the launch, not the
                   wait.  DDP's gradient buckets go through the C++ reducer,
                   not these functions: they are not seen (docs/mpi.md).

On a CUDA or ROCm build every edge above also records a device event
(anchor/_device_edges.py): DEV_BEGIN/DEV_END records say when the GPU
reached the edge.  ANCHOR_DEVICE_EDGES=0 turns that off.

torch is never imported by us: if it is not imported yet, the meta-path
watcher of anchor._import_hook installs the hooks right after
``import torch`` finishes, and removes itself.
"""
import functools
import inspect
import threading
import weakref

from ._anchor import begin as _begin
from ._anchor import end as _end
from ._anchor import mark as _mark

_installed = False
_lock = threading.Lock()


class _State(threading.local):
    # Class attributes are the per-thread defaults: no getattr fallback
    # needed on the hot path.
    fwd = 0
    bwd = 0
    coll = 0


_tls = _State()
_layers_depth = 0  # ANCHOR_AUTO=layers: anchor.torch.layers on the outermost module


def layers_on_first_call(depth):
    """ANCHOR_AUTO=torch,layers: the outermost module called (the model)
    gets anchor.torch.layers(model, depth) on its first call."""
    global _layers_depth
    _layers_depth = int(depth)


def _auto_layers(model):
    from . import torch as _layers

    _layers._auto_layers(model, _layers_depth)
_handles = []
_restore = []  # (owner, attribute, original) to undo wrappers


_step_sites = set()  # optimizer classes whose step has its SITE record


def _step_site(cls):
    _step_sites.add(cls)
    try:
        from . import _sites

        _sites.decorated("optimizer.step", inspect.unwrap(cls.step))
    except Exception:  # noqa: BLE001 - a site is a hint; the step must run
        pass


_wrapped_sites = set()  # "forward", "backward": their SITE record is written


def _wrapped_site(name, orig):
    """The wrapped function (Module.__call__, torch.autograd.backward)
    runs only inside the range this wrapper opens: its lines are the
    phase's site, so a profiler's stack there is known to be in it
    (anchorpost trusts such a stack over a late time stamp)."""
    _wrapped_sites.add(name)
    try:
        from . import _sites

        _sites.decorated(name, inspect.unwrap(orig))
    except Exception:  # noqa: BLE001 - a site is a hint; the call must run
        pass


def _step_pre(optimizer, args, kwargs):
    if type(optimizer) not in _step_sites:
        _step_site(type(optimizer))
    _begin("optimizer.step")


def _step_post(optimizer, args, kwargs):
    _end("optimizer.step")


def _wrap_call(orig):
    @functools.wraps(orig)
    def __call__(self, *args, **kwargs):
        st = _tls
        if st.fwd:
            # Inside a forward already (a submodule): one Python call and
            # one attribute load, torch's own hook-free fast path intact.
            return orig(self, *args, **kwargs)
        st.fwd = 1
        if _layers_depth:
            _auto_layers(self)
        if "forward" not in _wrapped_sites:
            _wrapped_site("forward", orig)
        _begin("forward")
        try:
            return orig(self, *args, **kwargs)
        finally:
            _end("forward")
            st.fwd = 0

    __call__.__anchor_wrapped__ = True
    return __call__


def _wrap_backward(orig):
    @functools.wraps(orig)
    def backward(*args, **kwargs):
        if _tls.bwd:
            # Reentrant backward (checkpointing, a Function calling
            # backward): part of the outer range already.
            return orig(*args, **kwargs)
        _tls.bwd = 1
        if "backward" not in _wrapped_sites:
            _wrapped_site("backward", orig)
        _begin("backward")
        try:
            return orig(*args, **kwargs)
        finally:
            _end("backward")
            _tls.bwd = 0

    backward.__anchor_wrapped__ = True
    return backward


def _wrap_next(orig):
    @functools.wraps(orig)
    def __next__(self):
        _begin("dataloader.next")
        try:
            return orig(self)
        finally:
            _end("dataloader.next")

    __next__.__anchor_wrapped__ = True
    return __next__


def _wrap_iter(orig):
    epochs = weakref.WeakKeyDictionary()

    @functools.wraps(orig)
    def __iter__(self):
        try:
            n = epochs.get(self, 0)
            epochs[self] = n + 1
        except TypeError:  # not weak-referenceable: count from 0 each time
            n = 0
        _mark("epoch", n)
        return orig(self)

    __iter__.__anchor_wrapped__ = True
    return __iter__


_DIST_FUNCS = ("all_reduce", "broadcast", "barrier", "all_gather", "all_gather_into_tensor",
               "reduce_scatter", "reduce_scatter_tensor", "reduce", "gather", "scatter",
               "all_to_all", "all_to_all_single")


def _wrap_collective(orig, name):
    @functools.wraps(orig)
    def collective(*args, **kwargs):
        # Outermost only: a collective built on another (all_gather on
        # all_gather_into_tensor) must not count its wait twice.
        if _tls.coll:
            return orig(*args, **kwargs)
        _tls.coll = 1
        _begin(name)
        try:
            return orig(*args, **kwargs)
        finally:
            _end(name)
            _tls.coll = 0

    collective.__anchor_wrapped__ = True
    return collective


def _install_distributed(torch, wrappers):
    """torch.distributed's collectives; the same wrapper object goes into
    torch.distributed and distributed_c10d so either spelling is seen."""
    dist = getattr(torch, "distributed", None)
    if dist is None or not getattr(dist, "is_available", lambda: False)():
        return
    try:
        import torch.distributed.distributed_c10d as c10d
    except ImportError:
        return
    for fname in _DIST_FUNCS:
        orig = getattr(c10d, fname, None)
        if orig is None or getattr(orig, "__anchor_wrapped__", False):
            continue
        w = _wrap_collective(orig, "dist." + fname)
        for owner in (c10d, dist):
            if getattr(owner, fname, None) is orig:
                wrappers.append((owner, fname, lambda _o, _w=w: _w))


def _install(torch):
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    import torch.nn.modules.module as nnmod
    import torch.optim.optimizer as optmod
    import torch.utils.data.dataloader as dlmod

    _handles.append(optmod.register_optimizer_step_pre_hook(_step_pre))
    _handles.append(optmod.register_optimizer_step_post_hook(_step_post))
    wrappers = [(nnmod.Module, "__call__", _wrap_call),
                (torch.autograd, "backward", _wrap_backward),
                (dlmod._BaseDataLoaderIter, "__next__", _wrap_next),
                (dlmod.DataLoader, "__iter__", _wrap_iter)]
    _install_distributed(torch, wrappers)
    for owner, attr, wrap in wrappers:
        orig = getattr(owner, attr)
        if not getattr(orig, "__anchor_wrapped__", False):
            setattr(owner, attr, wrap(orig))
            _restore.append((owner, attr, orig))
    # Device-side edges on CUDA/ROCm builds (anchor/_device_edges.py).
    import sys
    from . import _device_edges

    _device_edges.arm_torch(torch, sys.modules[__name__])


def uninstall():
    """Remove the hooks and wrappers again (benchmarks switch auto mode
    off and on in one process to compare like with like)."""
    global _installed
    from . import _device_edges

    _device_edges.disarm_torch()
    with _lock:
        while _handles:
            _handles.pop().remove()
        while _restore:
            owner, attr, orig = _restore.pop()
            setattr(owner, attr, orig)
        _installed = False


def install_when_imported():
    """Install now if torch is imported, else right after ``import torch``
    finishes (anchor._import_hook; torch is never imported by us)."""
    from . import _import_hook

    _import_hook.when_imported("torch", _install)
