"""anchor's sitecustomize: start auto mode without an import in the script.

Sits next to the ``anchor`` package in build/python/ and in a ``make
install`` prefix's lib/anchor/python/ (a preloaded libanchor.so puts that
directory on PYTHONPATH).  ``pip install .`` does not install it: there
anchor_auto.pth does job 1, and no file of the user's is shadowed.

1. Import ``_anchor_autostart``, which starts auto mode when ANCHOR_AUTO /
   ANCHOR_SYNC_PULSE is set or libanchor.so is preloaded (and returns after
   three environment lookups otherwise).
2. Python imports only the first ``sitecustomize`` on ``sys.path``, so
   this file would hide one the user (or the distribution) already has.
   It therefore finds the next ``sitecustomize`` on ``sys.path`` after its
   own directory, executes it and leaves it in
   ``sys.modules["sitecustomize"]``: for the user's code it is as if ours
   were not there.  Errors in that file propagate exactly as they would
   have without us (site.py reports them).
"""


def _anchor_start():
    try:
        import _anchor_autostart  # noqa: F401  (beside this file; it does the work)
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
