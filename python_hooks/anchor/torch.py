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

How: per-module hooks (forward pre/post hooks with ``always_call``, so a
forward that raises still ends; full backward pre/post hooks, which fire
when the module's output gradients arrive and when its input gradients
are done; torch 2.x calls both also for a first layer whose input needs
no gradient, but there at once: its input gradient is never computed, so
its backward range is empty, and the UserWarning torch gives for that is
silenced for these hooks alone).  A backward post hook without its pre
hook (hooks installed mid-backward) writes nothing.

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
import time as _time

from . import _anchor

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


def _install(handle, path, mod, min_us, probe):
    fwd, bwd = _name(path, "forward"), _name(path, "backward")
    begin, end, mark = _anchor.begin, _anchor.end, _anchor.mark
    hooks = []
    # forward: a start time only while probing (min_us), else two calls
    state = {"n": 0, "ns": 0, "t0": 0, "open_bwd": 0}

    def pre(m, args):
        begin(fwd)
        if min_us:
            state["t0"] = _time.perf_counter_ns()

    def post(m, args, out):
        end(fwd)
        if min_us and state["n"] < probe:
            state["ns"] += _time.perf_counter_ns() - state["t0"]
            state["n"] += 1
            if state["n"] == probe and state["ns"] / probe < min_us * 1e3:
                mean = int(state["ns"] / probe)
                mark(_name(path, "too_short"), mean)
                handle.too_short.append((path, mean / 1e3))
                handle._drop(path)

    def bpre(m, grad_out):
        state["open_bwd"] += 1
        begin(bwd)

    def bpost(m, grad_in, grad_out):
        if state["open_bwd"]:
            state["open_bwd"] -= 1
            end(bwd)

    try:
        hooks.append(mod.register_forward_pre_hook(pre))
        try:
            hooks.append(mod.register_forward_hook(post, always_call=True))
        except TypeError:  # torch < 2.1: no always_call
            hooks.append(mod.register_forward_hook(post))
        hooks.append(mod.register_full_backward_pre_hook(bpre))
        hooks.append(mod.register_full_backward_hook(bpost))
    except Exception:
        for h in hooks:
            h.remove()
        raise
    handle._hooks[path] = hooks
    handle.paths.append(path)


def layers(model, depth=2, min_us=0.0, probe=5):
    """Anchor the forward and backward of every module of ``model`` down to
    ``depth`` levels (see the module's doc).  Returns a LayerHandle."""
    import warnings

    # torch warns once per first layer that its full backward hook fires
    # at the output gradient; that is what we anchor, and the user's
    # output must not change because we did.
    warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are computed with "
                            "respect to module outputs")
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
