"""Helpers shared by the tests/py/t_py_*.py tests (not a test itself).

Tests run real Python subprocesses against the built module
(build/python on PYTHONPATH, as tests/run.sh exports) and read the ring
back with `anchorpost dump`, never with the module under test.
"""
import csv
import os
import subprocess
import sys
import textwrap

ROOT = os.environ.get("ANCHOR_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
PYTHON = os.environ.get("PYTHON") or sys.executable
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp(prefix="anchor-t-")
LIB = os.path.join(BUILD, "libanchor.so")
ANCHORPOST = os.path.join(BUILD, "anchorpost")
PYDIR = os.path.join(BUILD, "python")


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def base_env(ring, preload, extra=None):
    env = dict(os.environ)
    for k in ("ANCHOR_FILE", "ANCHOR_AUTO", "ANCHOR_SYNC_PULSE", "ANCHOR_DISABLE", "LD_PRELOAD"):
        env.pop(k, None)
    env["PYTHONPATH"] = PYDIR + (os.pathsep + extra.pop("PYTHONPATH_TAIL") if extra and "PYTHONPATH_TAIL" in extra else "")
    if ring:
        env["ANCHOR_FILE"] = ring
    if preload:
        env["LD_PRELOAD"] = LIB
    if extra:
        env.update(extra)
    return env


def run_py(code, ring, preload, extra=None, expect_rc=0, timeout=120, cwd=None, args=()):
    """Run `code` (dedented) as a script file; return the CompletedProcess."""
    path = os.path.join(TMP, "script_%d.py" % run_py.n)
    run_py.n += 1
    with open(path, "w") as f:
        f.write(textwrap.dedent(code))
    p = subprocess.run([PYTHON, path, *args], env=base_env(ring, preload, dict(extra or {})),
                       capture_output=True, text=True, timeout=timeout, cwd=cwd or TMP)
    if expect_rc is not None and p.returncode != expect_rc:
        fail("script exited %d (want %d)\nstdout:\n%s\nstderr:\n%s"
             % (p.returncode, expect_rc, p.stdout[-3000:], p.stderr[-3000:]))
    return p


run_py.n = 0


def dump(ring):
    """Ring -> list of dict rows (anchorpost dump's CSV)."""
    out = ring + ".csv"
    p = subprocess.run([ANCHORPOST, "dump", ring, "-o", out], capture_output=True, text=True)
    if p.returncode != 0:
        fail("anchorpost dump failed: %s" % p.stderr)
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["pid"] = int(r["pid"])
        r["tid"] = int(r["tid"])
        r["mono_ns"] = int(r["mono_ns"])
    return rows


def events(rows, kind=None, name=None):
    return [r for r in rows if (kind is None or r["kind"] == kind) and (name is None or r["name"] == name)]


def ranges(rows, name):
    """Pair BEGIN/END of `name` per (pid, tid) in order: list of (begin, end) rows."""
    open_, out = {}, []
    for r in sorted(rows, key=lambda r: r["mono_ns"]):
        if r["name"] != name:
            continue
        key = (r["pid"], r["tid"])
        if r["kind"] == "begin":
            open_.setdefault(key, []).append(r)
        elif r["kind"] == "end":
            stack = open_.get(key)
            check(stack, "END %s without BEGIN on %s" % (name, key))
            out.append((stack.pop(), r))
    for key, stack in open_.items():
        check(not stack, "BEGIN %s never ended on %s" % (name, key))
    return out


def need_modules(*names):
    """Skip unless each module imports in $PYTHON (torch's CPU wheel is on
    3.11 only here: the per-version runs skip the torch tests, saying so)."""
    p = subprocess.run([PYTHON, "-c", "import importlib.util, sys; "
                        "print(' '.join(n for n in sys.argv[1:] if importlib.util.find_spec(n) is None))", *names],
                       capture_output=True, text=True)
    missing = p.stdout.split()
    if missing or p.returncode:
        skip("no module named %s for CPython %s (scripts/install-deps.sh installs torch on the default python3)"
             % (", ".join(missing) or "?", "%d.%d" % sys.version_info[:2]))


def need_build():
    for p in (LIB, ANCHORPOST):
        if not os.path.exists(p):
            fail("%s not built (run make)" % p)
    import glob

    if not glob.glob(os.path.join(PYDIR, "anchor", "_anchor*.so")):
        fail("anchor extension not built (run make)")
