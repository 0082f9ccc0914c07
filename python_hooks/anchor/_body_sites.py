"""The `with` that runs a phase's body when a helper opened the phase
(issue 21): SITE records for the frame py-spy sees inside the phase.

_sites.record() describes the frame that called phase.__enter__ (or
mark()).  When the user wrote the phase through a helper that frame is
the helper's, and py-spy never sees it while the phase's body runs:

  class Phase:                         @contextlib.contextmanager
      def __enter__(self):             def phase(name):
          self.p.__enter__()               with anchor.phase(name):
  with Phase("fwd"):                           yield
      body()                           with phase("fwd"):
                                           body()

There the body runs in the frame that is executing a with-statement's
entry (BEFORE_WITH / SETUP_WITH) further up the stack: its with body is
recorded with the phase's name (its samples are inside the phase).  And a
function that is nothing but `with anchor.phase(name): ...` (a generic
helper every phase goes through, a decorator's wrapper) is labelled with
every name it opens (a set, anchorpost keeps them all); its caller's
line then says which one: that line is recorded too (lines=L-L, via=1),
since the whole call runs inside the phase.

Never raises; what cannot be read is not recorded (samples stay
unlabelled, never mislabelled by a guess beyond these two rules)."""
import dis
import os
import sys

from . import _anchor, _sites

_OWN = os.path.dirname(os.path.abspath(__file__))
_WITH = ("BEFORE_WITH", "BEFORE_ASYNC_WITH", "SETUP_WITH", "SETUP_ASYNC_WITH")
_GEN = 0x20 | 0x200  # CO_GENERATOR | CO_ASYNC_GENERATOR
_ASYNC = 0x80 | 0x100 | 0x200  # coroutines suspend: their caller is the event loop
_UP = 8  # frames searched above the helper
_SKIP = (os.path.dirname(os.path.abspath(dis.__file__)) + os.sep + "contextlib.py", _OWN)
_ops = {}  # code -> {offset: opname}
_done = set()  # what went into the ring: site.c hands a site over once per call path
_whole = {}  # code -> is the function only one with-statement?


def _opname(code, off):
    t = _ops.get(code)
    if t is None:
        t = _ops[code] = {x.offset: x.opname for x in dis.get_instructions(code)}
    return t.get(off)


def _skip(code):
    f = os.path.abspath(code.co_filename)
    return f == _SKIP[0] or os.path.dirname(f) == _OWN


def _only_with(code, lasti):
    """1 when every line of code but its def (and docstring) is the with
    at lasti or its body: the whole call runs inside the phase."""
    w = _whole.get((code, lasti))
    if w is None:
        r = _sites._body_lines(code, lasti)
        lines = set(ln for _, _, ln in code.co_lines() if ln is not None)
        lines.discard(code.co_firstlineno)
        w = bool(r) and all(ln == r[0] or r[1] <= ln <= r[2] for ln in lines) and r[0] == min(lines)
        _whole[(code, lasti)] = w
    return w


def _once(*key):
    """1 the first time key is seen (the C side keys by call path, so the
    same site reached from two callers comes twice)."""
    if key in _done:
        return 0
    _done.add(key)
    return 1


def _emit_line(name, code, line):
    if not _once("line", name, code, line):
        return
    qual = getattr(code, "co_qualname", code.co_name)
    text = "phase=%s\0file=%s\0func=%s\0at=%d\0lines=%d-%d\0via=1\0" % (
        name, code.co_filename, qual, line, line, line)
    _anchor._site_emit(text.encode("utf-8", "replace"))


def _helper(name, code, lasti, is_mark, frame):
    if frame is None or frame.f_code is not code or not isinstance(name, str):
        return
    at_with = is_mark == 0 and _opname(code, lasti) in _WITH
    if at_with and not code.co_flags & _GEN:
        # the body is this frame's; a function that is nothing else
        # also runs inside the phase at its caller's line
        # (not anchor's own @anchor.phase wrapper: _sites.decorated()
        # labels the decorated function itself)
        up = frame.f_back
        if (up is not None and not code.co_flags & _ASYNC and not _skip(code) and not _skip(up.f_code)
                and _only_with(code, lasti)):
            _emit_line(name, up.f_code, up.f_lineno)
        return
    g, n = frame.f_back, 0
    while g is not None and n < _UP:
        if not _skip(g.f_code) and _opname(g.f_code, g.f_lasti) in _WITH:
            if _once("site", name, g.f_code, g.f_lasti):
                _sites.record(name, g.f_code, g.f_lasti, 0)
            return
        g, n = g.f_back, n + 1


def hook(name, code, lasti, is_mark=0):
    """The site hook (site.c): the call's own site, then the helper's
    caller's.  is_mark 2: anchor.begin(), which has no site of its own."""
    if is_mark in (0, 1) and _once("site", name, code, lasti):
        _sites.record(name, code, lasti, is_mark)
    try:
        _helper(name, code, lasti, is_mark, sys._getframe(1))
    except Exception:  # noqa: BLE001 - the user's block must not notice
        pass


_anchor._set_site_hook(hook)
