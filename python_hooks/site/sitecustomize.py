"""anchor's sitecustomize: start auto mode without an import in the script.

Installed next to the ``anchor`` package (build/python/, or the pip target
directory).  With ``ANCHOR_AUTO`` / ``ANCHOR_SYNC_PULSE`` unset it only
does the second job below.

1. If ``ANCHOR_AUTO`` or ``ANCHOR_SYNC_PULSE`` is set, start anchor's auto
   mode (anchor._autoload).  A failure prints one line and never stops the
   interpreter.
2. Python imports only the first ``sitecustomize`` on ``sys.path``, so
   this file would hide one the user (or the distribution) already has.
   It therefore finds the next ``sitecustomize`` on ``sys.path`` after its
   own directory, executes it and leaves it in
   ``sys.modules["sitecustomize"]``: for the user's code it is as if ours
   were not there.  Errors in that file propagate exactly as they would
   have without us (site.py reports them).
"""


def _anchor_start():
    import os

    if not (os.environ.get("ANCHOR_AUTO") or os.environ.get("ANCHOR_SYNC_PULSE")):
        return
    try:
        import anchor._autoload

        anchor._autoload.start()
    except Exception as e:  # never break the user's interpreter
        import sys

        sys.stderr.write("anchor: auto mode not started: %r\n" % (e,))


def _anchor_chain():
    import os
    import sys
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    here = os.path.dirname(os.path.realpath(__file__))
    cwd = os.getcwd()
    later, others, seen = [], [], False
    for p in sys.path:
        if not isinstance(p, str):
            continue
        if os.path.realpath(p or cwd) == here:
            seen = True
            continue
        others.append(p)
        if seen:
            later.append(p)
    if not seen:  # imported from an unusual path entry: skip only our own dir
        later = others
    spec = PathFinder.find_spec("sitecustomize", later)
    if spec is None or spec.loader is None:
        return
    mod = module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


_anchor_start()
_anchor_chain()
