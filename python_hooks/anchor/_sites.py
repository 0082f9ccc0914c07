"""Call sites of anchor.phase, for anchorpost's structural placement of
profiler samples (issue 12 point 3; SITE records in ring_format.h).

The C side calls record(name, code, lasti, is_mark) the first time a
`with anchor.phase(name)` or an anchor.mark(name) runs at a call site
(lasti: byte offset of the BEFORE_WITH / SETUP_WITH, or of the call, in
code; py_compat.h makes it bytes on every version).  A mark's record names
only its line (at=): anchorpost takes the lines after it up to the next
site of the same function as the mark's segment.

A with-body's lines come from the bytecode, not the source, so a script
perun runs from a string ("<string>") is covered too.  Where the body ends
is read from the block structure the compiler left, which differs per
version (issue 22):
  3.8-3.10  SETUP_WITH names its handler; the body runs up to the last
            POP_BLOCK before it; lines from
            co_lnotab (3.8/3.9, via dis.findlinestarts) or co_lines()
            (3.10, co_linetable).
  3.11+     no blocks: the body is what the with's exception handler
            (PUSH_EXC_INFO; WITH_EXCEPT_START) protects in co_exceptiontable,
            with every handler nested inside it (cold blocks that 3.12+
            moves after the function's end included); lines from
            co_lines() (co_linetable's 3.11+ encoding, and 3.12/3.13's
            moved handlers, are the interpreter's to read).
Lines on the `with` line itself are left out: the with statement and its
__exit__ call run there too.  What cannot be read this way (a one-line
`with x: body`, an early return that leaves the block before its end, an
unknown opcode layout) gets a record with why=REASON instead of lines=:
unlabelled samples, never a wrong site."""
import dis
import os
import sys

from . import _anchor

_OWN = os.path.dirname(os.path.abspath(__file__))
_WITH = ("BEFORE_WITH", "BEFORE_ASYNC_WITH", "SETUP_WITH", "SETUP_ASYNC_WITH")
_BLOCKS = sys.version_info < (3, 11)  # SETUP_*/POP_BLOCK in the bytecode


def _line_table(code):
    """[(start, end, line or None)] byte ranges of code, ascending."""
    if hasattr(code, "co_lines"):  # 3.10+: co_linetable, read by CPython
        return list(code.co_lines())
    starts = list(dis.findlinestarts(code))  # 3.8/3.9: co_lnotab
    ends = [off for off, _ in starts[1:]] + [len(code.co_code)]
    return [(off, e, ln) for (off, ln), e in zip(starts, ends)]


def _lines_at(code):
    """{offset: line or None} for every instruction offset."""
    table, out, k = _line_table(code), {}, 0
    for x in dis.get_instructions(code):
        while k < len(table) and table[k][1] <= x.offset:
            k += 1
        out[x.offset] = table[k][2] if k < len(table) and table[k][0] <= x.offset else None
    return out


def _varint(it):
    """One varint of co_exceptiontable (6 bits a byte, bit 6: more)."""
    b = next(it)
    v = b & 63
    while b & 64:
        b = next(it)
        v = (v << 6) | (b & 63)
    return v


def _exception_table(code):
    """[(start, end, target)] byte offsets, 3.11+ (the format is
    InternalDocs/exception_handling.md's; entries do not overlap)."""
    it, out = iter(code.co_exceptiontable), []
    try:
        while True:
            start = _varint(it) * 2
            end = start + _varint(it) * 2
            target = _varint(it) * 2
            _varint(it)  # depth and lasti
            out.append((start, end, target))
    except StopIteration:
        return out


def _body_blocks(ins, i):
    """3.8-3.10: offsets of the body after ins[i]: from its SETUP_WITH to
    the handler that SETUP_WITH names, cut at the last POP_BLOCK there (the
    normal exit; after it 3.10 may place a copy of the code that follows
    the with).  Inner POP_BLOCKs are no guide: the compiler drops those
    that cannot be reached (a try body ending in raise)."""
    k = i
    if ins[i].opname == "BEFORE_ASYNC_WITH":  # the await, then SETUP_ASYNC_WITH
        while k < len(ins) and ins[k].opname != "SETUP_ASYNC_WITH":
            k += 1
    if k == len(ins) or not ins[k].opname.startswith("SETUP_"):
        return [], "no SETUP_WITH after the with"
    handler = ins[k].argval
    body = [x for x in ins[k + 1:] if x.offset < handler]
    pops = [n for n, x in enumerate(body) if x.opname == "POP_BLOCK"]
    return [x.offset for x in (body[:pops[-1]] if pops else body)], None


def _body_handlers(code, ins, i):
    """3.11+: offsets protected by the with's handler or by handlers nested
    in it (found as handlers whose own code that protection covers)."""
    table = _exception_table(code)
    op = {x.offset: x.opname for x in ins}
    nxt = {a.offset: b.opname for a, b in zip(ins, ins[1:])}

    def target_of(off):
        return next((t for s, e, t in table if s <= off < e), None)

    h = None
    for x in ins[i + 1:]:  # an async with awaits __aenter__ first
        t = target_of(x.offset)
        if t is not None and op.get(t) == "PUSH_EXC_INFO" and nxt.get(t) == "WITH_EXCEPT_START":
            h = t
            break
    if h is None:
        return [], "no with handler in co_exceptiontable"
    inside, grew = {h}, True
    while grew:  # a handler whose code a body handler protects is nested
        grew = False
        for t in {t for _, _, t in table} - inside:
            if target_of(t) in inside:
                inside.add(t)
                grew = True
    return [x.offset for x in ins[i + 1:] if target_of(x.offset) in inside], None


def _body_lines(code, lasti):
    """(with line, first body line, last body line), or None when the body
    cannot be read (the reason: _body)."""
    r = _body(code, lasti)
    return r[:3] if r and r[3] is None else None


def _body(code, lasti):
    """(with line, first body line, last body line, why): lines None and
    why a reason when the body cannot be read, None when lasti is no
    instruction of code."""
    ins = list(dis.get_instructions(code))
    i = next((k for k, x in enumerate(ins) if x.offset == lasti), None)
    if i is None:
        return None
    lines = _lines_at(code)
    wl = lines.get(lasti)
    if wl is None:
        return None
    if ins[i].opname not in _WITH:
        # A Python whose with-statement is compiled otherwise (3.14:
        # LOAD_SPECIAL), or __enter__ called by hand: say so, label nothing.
        return wl, None, None, ("no with statement at this call (%s): __enter__ called directly, or a "
                                "bytecode this module does not read (Python %d.%d)"
                                % (ins[i].opname, sys.version_info[0], sys.version_info[1]))
    if _BLOCKS:
        body, why = _body_blocks(ins, i)
    else:
        body, why = _body_handlers(code, ins, i)
    got = [lines[u] for u in body if lines.get(u) is not None and lines[u] != wl]
    if why is None and not got:
        why = "one-line with: its body shares the with's line"
    if why is not None:
        return wl, None, None, why
    return wl, min(got), max(got), None


def _call_line(code, lasti):
    return _lines_at(code).get(lasti)


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
    r = _body(code, lasti)
    if r and r[3]:
        _emit(name, code, ["at=%d" % r[0], "why=" + r[3]])
    elif r:
        _emit(name, code, ["at=%d" % r[0], "lines=%d-%d" % (r[1], r[2])])


def decorated(name, func):
    """@anchor.phase(name) on func: its whole code is inside the phase."""
    code = getattr(func, "__code__", None)
    try:
        lines = [ln for _, _, ln in _line_table(code) if ln is not None]
        if lines:
            _emit(name, code, ["lines=%d-%d" % (min(lines), max(lines))])
    except Exception:  # noqa: BLE001 - decorating must not fail for this
        pass


_anchor._set_site_hook(record)
