"""Call sites of anchor.phase, for anchorpost's structural placement of
profiler samples (issue 12 point 3; SITE records in ring_format.h).

The C side calls record(name, code, lasti, is_mark) the first time a
`with anchor.phase(name)` or an anchor.mark(name) runs at a call site
(lasti: offset of the BEFORE_WITH, or of the call, in code).  A mark's
record names only its line (at=): anchorpost takes the lines after it up
to the next site of the same function as the mark's segment.

A with-body's lines come from the bytecode, not the source, so a script
perun runs from a string ("<string>") is covered too: the body is
what the compiler put between the BEFORE_WITH and the first later
instruction on the `with` line again (the call of __exit__).  Lines
between those are all inside the body, so a frame of this function at one
of them is inside the phase; a return inside the body may end the scan
early, which only leaves lines unlabelled, never mislabelled."""
import dis
import os

from . import _anchor

_OWN = os.path.dirname(os.path.abspath(__file__))
_WITH = ("BEFORE_WITH", "BEFORE_ASYNC_WITH", "SETUP_WITH", "SETUP_ASYNC_WITH")


def _instructions(code):
    """[(offset, opname, line)]: positions (3.11+), else the last line start."""
    out, line = [], None
    for x in dis.get_instructions(code):
        pos = getattr(x, "positions", None)
        if pos is not None:
            line = pos.lineno
        elif x.starts_line:
            line = x.starts_line
        out.append((x.offset, x.opname, line))
    return out


def _body_lines(code, lasti):
    """(with line, first body line, last body line), or None."""
    ins = _instructions(code)
    i = next((k for k, x in enumerate(ins) if x[0] == lasti), None)
    if i is None or ins[i][1] not in _WITH:
        return None
    wl = ins[i][2]
    lo = hi = None
    for _, _, ln in ins[i + 1:]:
        if ln is None:
            continue
        if ln == wl:
            if lo is not None:
                break
            continue  # the POP_TOP / `as` store after __enter__
        lo = ln if lo is None or ln < lo else lo
        hi = ln if hi is None or ln > hi else hi
    return (wl, lo, hi) if lo is not None and wl is not None else None


def _call_line(code, lasti):
    return next((ln for off, _, ln in _instructions(code) if off == lasti), None)


def _emit(name, code, fields):
    qual = getattr(code, "co_qualname", code.co_name)
    text = "phase=%s\0file=%s\0func=%s\0%s\0" % (name, code.co_filename, qual, "\0".join(fields))
    _anchor._site_emit(text.encode("utf-8", "replace"))


def record(name, code, lasti, is_mark=0):
    """The site of a `with anchor.phase(name)` (its body) or of an
    anchor.mark(name) (its line) at (code, lasti).  Never raises: a site
    that cannot be read (another Python's bytecode) is simply not
    recorded, and its samples stay unlabelled."""
    try:
        _record(name, code, lasti, is_mark)
    except Exception:  # noqa: BLE001 - the user's block must not notice
        pass


def _record(name, code, lasti, is_mark):
    if not isinstance(name, str) or os.path.dirname(os.path.abspath(code.co_filename)) == _OWN:
        return  # the decorator's own wrapper: decorated() names the function
    if is_mark:
        at = _call_line(code, lasti)
        if at:
            _emit(name, code, ["at=%d" % at, "mark=1"])
        return
    r = _body_lines(code, lasti)
    if r:
        _emit(name, code, ["at=%d" % r[0], "lines=%d-%d" % (r[1], r[2])])


def decorated(name, func):
    """@anchor.phase(name) on func: its whole code is inside the phase."""
    code = getattr(func, "__code__", None)
    try:
        lines = [ln for _, _, ln in code.co_lines() if ln is not None]
        if lines:
            _emit(name, code, ["lines=%d-%d" % (min(lines), max(lines))])
    except Exception:  # noqa: BLE001 - decorating must not fail for this
        pass


_anchor._set_site_hook(record)
