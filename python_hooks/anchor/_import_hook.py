"""Run a callback right after a module's body has executed, without
importing it early (a script that never imports it pays nothing)."""
import sys

_pending = {}  # module name -> [callbacks]


class _Watcher:
    """Meta-path finder that finds nothing itself: for a watched name it
    lets the real finders produce the spec, then wraps the loader's
    exec_module for that one call."""

    def find_spec(self, name, path=None, target=None):
        if name not in _pending:
            return None
        callbacks = _pending.pop(name)
        if not _pending:
            _uninstall()
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        orig_exec = loader.exec_module

        def exec_module(module):
            try:
                del loader.exec_module  # the real method again
            except AttributeError:
                pass
            orig_exec(module)
            for cb in callbacks:
                cb(module)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            pass
        return spec


_watcher = None


def _uninstall():
    global _watcher
    if _watcher is not None:
        try:
            sys.meta_path.remove(_watcher)
        except ValueError:
            pass
        _watcher = None


def when_imported(name, callback):
    """callback(module) now if `name` is imported, else right after it is."""
    global _watcher
    mod = sys.modules.get(name)
    if mod is not None:
        callback(mod)
        return
    _pending.setdefault(name, []).append(callback)
    if _watcher is None:
        _watcher = _Watcher()
        sys.meta_path.insert(0, _watcher)
