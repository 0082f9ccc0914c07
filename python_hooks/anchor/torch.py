"""Every layer a phase: ``anchor.torch.layers(model, depth=2)``.

Each module of ``model`` down to ``depth`` gets its forward and its
backward anchored as ranges named by its path in the model,
``encoder.layers.0.self_attn/forward`` and ``.../backward``, nested as the
modules nest, so ``anchorpost phases``/``report`` give joules per layer
with intervals, forward and backward apart.

  handle = anchor.torch.layers(model, depth=2)   # before training
  ...                                            # train as usual
  handle.remove()                                # optional

``ANCHOR_AUTO=torch,layers`` does the same without touching the script:
the first module called outermost (the model) is anchored on its first
call, to ``ANCHOR_LAYERS_DEPTH`` (default 2).

Depth counts the modules that run: containers that are never called
(``nn.ModuleList``, ``nn.ModuleDict``) add no level, so in a
``TransformerEncoder`` depth 1 is ``encoder``, depth 2 ``encoder.layers.0``,
depth 3 its ``self_attn``.

How: forward pre/post hooks (``always_call``, so a forward that raises
still ends) open and close the forward; the backward's edges are those of
torch's full backward hooks (it begins when the module's output gradient
arrives, ends when its input gradients are done), taken from gradient
hooks on the tensors of each call instead: one per tensor, run innermost
first, so the ranges nest as the modules do, without the
BackwardHookFunction that full backward hooks put around every input and
output (2-3 % of a step at depth 2, BENCHMARKS.md 18).  A call whose
inputs need no gradient (a first layer on data, an embedding) ends its
backward when the last of its own parameters' gradients is accumulated
(torch >= 2.1); one with neither is not anchored backward.  A module's
backward holds only its submodules': one still open when an unrelated
module's backward begins (a branch whose input gradient never comes, a
detached input) ends there, and whatever a backward pass leaves open is
closed when the pass ends (autograd's queued callback).

Too short to attribute: a layer far shorter than the power sensor's
period can still be attributed (anchorpost fits per-phase power over many
windows), but each anchored module costs two hook calls per forward and per
backward.  ``min_us`` (default 0: keep all) drops, after ``probe`` calls,
the hooks of modules whose forward took less than that on average, and
writes a mark ``<path>/too_short`` (value: its mean forward ns) for each,
so the ring says which layers were not anchored and why;
``handle.too_short`` lists them.  torch is imported by the caller (a
model exists), never by ``import anchor``.
"""
import threading as _threading
import time as _time

from . import _anchor

_torch = None
_queue_callback = None


def _bind_torch():
    """torch is the caller's (a model exists): bound at the first layers()."""
    global _torch, _queue_callback
    if _torch is None:
        import torch

        _torch = torch
        try:
            _queue_callback = torch.autograd.Variable._execution_engine.queue_callback
        except AttributeError:
            _queue_callback = None

__all__ = ["layers", "LayerHandle"]

_CONTAINERS = ("ModuleList", "ModuleDict", "ParameterList", "ParameterDict")


def _name(path, what):
    """A phase name within NAME_MAX: the path's tail is the informative part."""
    s = "%s/%s" % (path or "<model>", what)
    if len(s) > _anchor.NAME_MAX:
        s = "~" + s[len(s) - _anchor.NAME_MAX + 1:]
    return s


def _modules(model, depth):
    """(path, module) down to depth levels of modules that run."""
    out = []

    def walk(mod, path, level):
        for child_name, child in mod.named_children():
            p = child_name if not path else path + "." + child_name
            if type(child).__name__ in _CONTAINERS:
                walk(child, p, level)  # a container adds no level
                continue
            if level + 1 > depth:
                continue
            out.append((p, child))
            walk(child, p, level + 1)

    walk(model, "", 0)
    return out


class LayerHandle:
    """What ``layers`` installed: ``paths``, ``too_short`` and ``remove()``."""

    def __init__(self):
        self.paths = []
        self.too_short = []
        self._hooks = {}  # path -> [hook handles]

    def _drop(self, path):
        for h in self._hooks.pop(path, ()):
            h.remove()

    def remove(self):
        for path in list(self._hooks):
            self._drop(path)


class _Edges:
    """Backward edges on one tensor: the (fn, state) pairs its gradient
    opens or closes, run last-registered first.  Forward registers them in
    nesting order (a parent's pre hook before its first child's, a last
    child's post hook before its parent's), so running them reversed ends
    an inner module's backward before its parent's and begins a parent's
    before its last child's: the ranges nest as the modules do.  One hook
    per tensor, however many modules share it (a parent and its first
    child take the same input)."""

    __slots__ = ("todo",)
    CAP = 256  # a leaf input forwarded often without a backward: stale edges, not a leak

    def __init__(self):
        self.todo = []

    def __call__(self, grad):
        todo, self.todo = self.todo, []
        for fn, st in reversed(todo):
            fn(st)


def _edge(t, fn, st):
    e = getattr(t, "_anchor_edges", None)
    if e is None:
        e = _Edges()
        try:
            t._anchor_edges = e
        except (AttributeError, RuntimeError):
            return False
        t.register_hook(e)
    if len(e.todo) >= _Edges.CAP:
        e.todo.clear()
    e.todo.append((fn, st))
    return True


_tls = _threading.local()


def _open():
    """This thread's open layer backward ranges, innermost last."""
    s = getattr(_tls, "open", None)
    if s is None:
        s = _tls.open = []
    return s


def _close_rest(s, tid):
    """End of a backward pass (autograd's queued callback): close what no
    edge closed (a branch whose input gradient never came), innermost
    first, on the thread that opened them; another thread cannot write
    their END records."""
    if _threading.get_ident() == tid:
        while s:
            st = s.pop()
            st.end(st.bwd)


def _contains(outer, inner):
    return outer.owner is inner.owner and inner.path.startswith(outer.path + ".")


def _bwd_begin(st):
    s = _open()
    # A module's backward holds only its submodules' backwards: one that
    # is still open when an unrelated module's begins (a branch whose input
    # gradient never comes, a detached input) is over.
    while s and not _contains(s[-1], st):
        top = s.pop()
        top.end(top.bwd)
    if not s and _queue_callback is not None:
        try:
            _queue_callback(lambda s=s, tid=_threading.get_ident(): _close_rest(s, tid))
        except RuntimeError:
            pass  # not inside a backward pass (a hook fired by torch.autograd.grad on a retained graph)
    s.append(st)
    st.pending = st.nparams
    st.begin(st.bwd)


def _bwd_end(st):
    s = _open()
    if st not in s:
        return  # its begin never came (hooks installed mid-backward), or closed already
    while s:
        top = s.pop()
        top.end(top.bwd)
        if top is st:
            break


def _param_done(st):
    if st.pending > 0:
        st.pending -= 1
        if st.pending == 0:
            _bwd_end(st)


class _Layer:
    __slots__ = ("fwd", "bwd", "begin", "end", "n", "ns", "t0", "nparams", "pending", "phooks", "armed", "owner",
                 "path")

    def __init__(self, owner, path):
        self.owner, self.path = owner, path
        self.fwd, self.bwd = _name(path, "forward"), _name(path, "backward")
        self.begin, self.end = _anchor.begin, _anchor.end
        self.n = self.ns = self.t0 = self.nparams = self.pending = 0
        self.phooks = None
        self.armed = False


def _install(handle, path, mod, min_us, probe):
    """Forward: pre and post hooks.  Backward: gradient hooks on the
    tensors of this call (its first output's gradient begins the range,
    its inputs' gradients end it), as torch's full backward hooks define
    the edges but without their BackwardHookFunction around every input
    and output (which cost 2-3 % of a step at depth 2, BENCHMARKS.md 18).
    A call whose inputs need no gradient (a first layer, an embedding)
    ends its backward when the last of its parameters' gradients is
    accumulated."""
    st = _Layer(handle, path)
    mark = _anchor.mark
    hooks = []

    def pre(m, args):
        st.begin(st.fwd)
        if min_us:
            st.t0 = _time.perf_counter_ns()
        if not _torch.is_grad_enabled():
            return
        ends = False
        for x in args:
            if isinstance(x, _torch.Tensor) and x.requires_grad:
                ends = _edge(x, _bwd_end, st) or ends
        if ends:
            st.nparams = 0
            st.armed = True
            return
        if st.phooks is None:
            st.phooks = []
            if hasattr(_torch.Tensor, "register_post_accumulate_grad_hook"):  # torch >= 2.1
                st.phooks = [p.register_post_accumulate_grad_hook(lambda p_: _param_done(st))
                             for p in m.parameters() if p.requires_grad]
            hooks.extend(st.phooks)
        st.nparams = len(st.phooks)
        # No gradient into it and none of its own: its backward has no end
        # to observe, so it is not opened at all.
        st.armed = st.nparams > 0

    def post(m, args, out):
        st.end(st.fwd)
        if st.armed and _torch.is_grad_enabled():
            st.armed = False
            o = out[0] if isinstance(out, (tuple, list)) and out else out
            if isinstance(o, _torch.Tensor) and o.requires_grad:
                _edge(o, _bwd_begin, st)
        if min_us and st.n < probe:
            st.ns += _time.perf_counter_ns() - st.t0
            st.n += 1
            if st.n == probe and st.ns / probe < min_us * 1e3:
                mean = int(st.ns / probe)
                mark(_name(path, "too_short"), mean)
                handle.too_short.append((path, mean / 1e3))
                handle._drop(path)

    try:
        hooks.append(mod.register_forward_pre_hook(pre))
        try:
            hooks.append(mod.register_forward_hook(post, always_call=True))
        except TypeError:  # torch < 2.1: no always_call
            hooks.append(mod.register_forward_hook(post))
    except Exception:
        for h in hooks:
            h.remove()
        raise
    handle._hooks[path] = hooks
    handle.paths.append(path)


def layers(model, depth=2, min_us=0.0, probe=5):
    """Anchor the forward and backward of every module of ``model`` down to
    ``depth`` levels (see the module's doc).  Returns a LayerHandle."""
    _bind_torch()
    if depth < 1:
        raise ValueError("anchor.torch.layers: depth must be >= 1 (got %r)" % (depth,))
    handle = LayerHandle()
    for path, mod in _modules(model, int(depth)):
        _install(handle, path, mod, float(min_us), max(int(probe), 1))
    return handle


_auto_done = set()


def _auto_layers(model, depth):
    """ANCHOR_AUTO=torch,layers: anchor the outermost module on its first call."""
    key = id(model)
    if key in _auto_done:
        return
    _auto_done.add(key)
    try:
        layers(model, depth)
    except Exception as e:  # noqa: BLE001 - anchoring must never break training
        import sys

        sys.stderr.write("anchor: ANCHOR_AUTO=layers: %s; layers not anchored\n" % (e,))
