"""Bridges between anchor and what users already annotate with.

Into anchor (``anchor.auto(...)`` / ``ANCHOR_AUTO=...``, comma-separated
with ``torch``):

  record_function  every ``torch.profiler.record_function`` /
                   ``torch.autograd.profiler.record_function`` range (context
                   manager or decorator) is also an anchor range of the same
                   name.  torch itself opens such ranges too (e.g.
                   ``Optimizer.step#SGD.step``, ``Optimizer.zero_grad#...``,
                   ``enumerate(DataLoader)#...__next__``): they appear under
                   those names.  torch.profiler still sees every range.
  nvtx             NVTX ranges with their messages: ``torch.cuda.nvtx``
                   (``range_push``/``range_pop``, ``range(...)``,
                   ``range_start``/``range_end``, ``mark``) and the ``nvtx``
                   package (``annotate`` as context manager and decorator,
                   ``push_range``/``pop_range``, ``start_range``/
                   ``end_range``, ``mark``).  NVTX itself is still called:
                   Nsight sees what it saw before.  On a CPU-only torch the
                   ``torch.cuda.nvtx`` functions raise RuntimeError, as
                   they do without anchor; the push/pop/mark anchor is
                   written before the call.

Neither package is imported by us: each bridge is installed right after
the user's own ``import torch`` / ``import nvtx`` (anchor._import_hook).

Out of anchor: ``anchor.nvtx(True)`` makes ``with anchor.phase(name):``
also push/pop an NVTX range ``name`` (torch.cuda.nvtx on a CUDA build, else
the ``nvtx`` package), so Nsight Systems shows anchor's phases; also
``ANCHOR_NVTX=1``.  The originals are called, so this never loops back
through the nvtx bridge.
"""
import functools
import sys
import threading

from . import _anchor
from ._anchor import begin as _begin
from ._anchor import end as _end
from ._anchor import mark as _mark

_lock = threading.Lock()
_done = set()
_orig = {}  # (owner id, attr) -> original, for the emitter and uninstall
_restore = []


class _Stacks(threading.local):
    def __init__(self):
        self.by_domain = {}  # NVTX push/pop: names per thread (and domain)


_tls = _Stacks()


def _patch(owner, attr, make):
    orig = getattr(owner, attr, None)
    if orig is None or getattr(orig, "__anchor_wrapped__", False):
        return
    w = make(orig)
    w.__anchor_wrapped__ = True
    _orig[(id(owner), attr)] = orig
    setattr(owner, attr, w)
    _restore.append((owner, attr, orig))


def _original(owner, attr):
    return _orig.get((id(owner), attr), getattr(owner, attr, None))


def _name(msg):
    return msg if isinstance(msg, str) else ("" if msg is None else str(msg))


def _push(domain, name):
    _tls.by_domain.setdefault(domain, []).append(name)
    _begin(name)


def _pop(domain):
    st = _tls.by_domain.get(domain)
    if st:
        _end(st.pop())


# --- torch.profiler.record_function ---------------------------------------

def _rf_enter(orig):
    @functools.wraps(orig)
    def __enter__(self):
        _begin(_name(self.name))
        return orig(self)

    return __enter__


def _rf_exit(orig):
    @functools.wraps(orig)
    def __exit__(self, *exc):
        try:
            return orig(self, *exc)
        finally:
            _end(_name(self.name))

    return __exit__


def _install_record_function(torch):
    import torch.autograd.profiler as prof

    rf = prof.record_function
    _patch(rf, "__enter__", _rf_enter)
    _patch(rf, "__exit__", _rf_exit)


# --- torch.cuda.nvtx ------------------------------------------------------

def _install_torch_nvtx(torch):
    try:
        import torch.cuda.nvtx as tn
    except ImportError:
        return
    ranges = {}

    def push(orig):
        def range_push(msg):
            _push("torch", _name(msg))
            return orig(msg)

        return range_push

    def pop(orig):
        def range_pop():
            _pop("torch")
            return orig()

        return range_pop

    def start(orig):
        def range_start(msg):
            rid = orig(msg)  # raises on a CPU build: no id, no anchor
            ranges[rid] = _name(msg)
            _begin(ranges[rid])
            return rid

        return range_start

    def end(orig):
        def range_end(range_id):
            name = ranges.pop(range_id, None)
            try:
                return orig(range_id)
            finally:
                if name is not None:
                    _end(name)

        return range_end

    def mark(orig):
        def nvtx_mark(msg):
            _mark(_name(msg))
            return orig(msg)

        return nvtx_mark

    # torch.cuda.nvtx.range() looks range_push/range_pop up at call time.
    for attr, make in (("range_push", push), ("range_pop", pop), ("range_start", start),
                       ("range_end", end), ("mark", mark)):
        _patch(tn, attr, make)


# --- the nvtx package -----------------------------------------------------

class _Range(tuple):
    """What nvtx.start_range returns under the bridge: nvtx's own
    (range_id, domain) tuple (empty when NVTX is disabled), carrying the
    anchor name for end_range."""

    __slots__ = ()


def _install_nvtx_pkg(nvtx):
    mod = sys.modules.get("nvtx.nvtx")
    ann = nvtx.annotate
    names = {}  # id(_Range) -> name; start/end may be on different threads

    def a_enter(orig):
        def __enter__(self):
            _begin(_name(self.init_args[0]))
            return orig(self)

        return __enter__

    def a_exit(orig):
        def __exit__(self, *exc):
            try:
                return orig(self, *exc)
            finally:
                _end(_name(self.init_args[0]))

        return __exit__

    def a_call(orig):
        def __call__(self, func):
            inner = orig(self, func)
            name = _name(self.init_args[0]) if self.init_args[0] is not None else func.__name__

            @functools.wraps(func)
            def anchored(*args, **kwargs):
                _begin(name)
                try:
                    return inner(*args, **kwargs)
                finally:
                    _end(name)

            return anchored

        return __call__

    def push(orig):
        def push_range(message=None, *args, **kwargs):
            _push(kwargs.get("domain"), _name(message))
            return orig(message, *args, **kwargs)

        return push_range

    def pop(orig):
        def pop_range(domain=None):
            _pop(domain)
            return orig(domain)

        return pop_range

    def start(orig):
        def start_range(message=None, *args, **kwargs):
            rid = orig(message, *args, **kwargs)
            r = _Range(rid or ())
            names[id(r)] = (r, _name(message))
            _begin(_name(message))
            return r

        return start_range

    def end(orig):
        def end_range(range_id):
            got = names.pop(id(range_id), None)
            try:
                if range_id is not None and (not isinstance(range_id, _Range) or len(range_id)):
                    return orig(range_id)
            finally:
                if got is not None:
                    _end(got[1])

        return end_range

    def mark(orig):
        def nvtx_mark(message=None, *args, **kwargs):
            _mark(_name(message))
            return orig(message, *args, **kwargs)

        return nvtx_mark

    _patch(ann, "__enter__", a_enter)
    _patch(ann, "__exit__", a_exit)
    _patch(ann, "__call__", a_call)
    for attr, make in (("push_range", push), ("pop_range", pop), ("start_range", start),
                       ("end_range", end), ("mark", mark)):
        if mod is not None and getattr(mod, attr, None) is getattr(nvtx, attr, None):
            _patch(mod, attr, make)
            setattr(nvtx, attr, getattr(mod, attr))
        else:
            _patch(nvtx, attr, make)


# --- installing -----------------------------------------------------------

def _once(key, fn):
    def run(module):
        with _lock:
            if key in _done:
                return
            _done.add(key)
        try:
            fn(module)
        except Exception as e:  # never break the user's import
            sys.stderr.write("anchor: %s bridge not installed: %s\n" % (key, e))

    return run


def install(target):
    """Install the bridge `target` ("record_function" or "nvtx") now or
    right after the framework's import."""
    from . import _import_hook

    if target == "record_function":
        _import_hook.when_imported("torch", _once("rf", _install_record_function))
    elif target == "nvtx":
        _import_hook.when_imported("torch", _once("torch.nvtx", _install_torch_nvtx))
        _import_hook.when_imported("nvtx", _once("nvtx", _install_nvtx_pkg))
    else:
        raise ValueError("unknown bridge %r" % (target,))


def uninstall():
    """Put the originals back (benchmarks compare with and without)."""
    with _lock:
        while _restore:
            owner, attr, orig = _restore.pop()
            setattr(owner, attr, orig)
            if owner.__name__ == "nvtx.nvtx" and "nvtx" in sys.modules:
                setattr(sys.modules["nvtx"], attr, orig)
        _orig.clear()
        _done.clear()


# --- anchor.phase -> NVTX -------------------------------------------------

def _torch_nvtx_pair():
    tn = sys.modules.get("torch.cuda.nvtx")
    if tn is None and "torch" in sys.modules:
        try:
            import torch.cuda.nvtx as tn
        except ImportError:
            tn = None
    if tn is None:
        return None
    push, pop = _original(tn, "range_push"), _original(tn, "range_pop")
    try:  # a CPU-only torch has the functions, but they raise
        push("anchor.probe")
        pop()
    except Exception:
        return None
    return push, pop


def _nvtx_pkg_pair():
    try:
        import nvtx
    except ImportError:
        return None
    mod = sys.modules.get("nvtx.nvtx", nvtx)
    push, pop = _original(mod, "push_range"), _original(mod, "pop_range")
    if push is None or pop is None or not nvtx.enabled():
        return None
    return push, pop  # push_range(message), pop_range(): called directly, no extra frame


def emit_nvtx(on=True):
    """anchor.nvtx(on): `with anchor.phase(name)` also pushes/pops an NVTX
    range.  Returns True when an NVTX backend was found (torch.cuda.nvtx
    on a CUDA build, else the nvtx package), False otherwise."""
    if not on:
        _anchor._set_nvtx(None, None)
        return False
    pair = _torch_nvtx_pair() or _nvtx_pkg_pair()
    if pair is None:
        _anchor._set_nvtx(None, None)
        return False
    _anchor._set_nvtx(*pair)
    return True
