"""Helpers for the tests/perun/t_perun_*.py tests: run anchorpost perun and the
real `perun export`, and compare them row for row.

Not a test itself (tests/run.sh runs only t_*.py).
"""

import csv
import glob
import os
import shutil
import subprocess
import sys

import numpy as np

BUILD = os.environ.get("BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
ANCHORPOST = os.path.join(BUILD, "anchorpost")
# In the repository: real perun 1.0.0 files and how they were made
# (tests/data/perun/README.md).  ../shared/fixtures/perun (perun 0.9.1), when
# present, adds cases; no test requires it.
FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "perun")
SHARED = os.environ.get("SHARED") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared")
SHARED_FIXTURES = os.path.join(SHARED, "fixtures", "perun")
TMP = os.environ.get("ANCHOR_TEST_TMP") or "/tmp"
PYTHON = os.environ.get("PYTHON", sys.executable)

COLS = ["multirun", "round", "host", "device_group", "sensor", "metric", "unit", "t_rel_s", "value", "flags"]


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        die(msg)


def perun_cmd():
    """perun's CLI run by the test interpreter (not a pyenv shim)."""
    return [PYTHON, "-m", "perun"]


def anchorpost(*args, check_rc=True):
    p = subprocess.run([ANCHORPOST, *args], capture_output=True, text=True, timeout=120)
    if check_rc and p.returncode != 0:
        die(f"anchorpost {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def read_csv(path):
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        return header, list(r)


def perun_export(h5, run_id=None):
    """Run the real `perun export FILE csv [-i ID]`; returns (header, rows)."""
    d = os.path.dirname(os.path.abspath(h5))
    before = set(glob.glob(os.path.join(d, "*.csv")))
    cmd = perun_cmd() + ["export", h5, "csv"]
    if run_id:
        cmd += ["-i", run_id]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        die(f"perun export failed ({p.returncode}): {p.stderr[-2000:]}")
    new = sorted(set(glob.glob(os.path.join(d, "*.csv"))) - before)
    check(len(new) == 1, f"perun export wrote {new} beside {h5}, expected one new CSV")
    out = read_csv(new[0])
    os.unlink(new[0])
    return out


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-300


def compare_with_export(h5, label, run_id=None):
    """anchorpost's CSV for `run_id` (or the only/last multirun) against
    `perun export`: same rows in the same order, value == raw * magnitude.
    Returns the number of rows compared."""
    out = os.path.join(TMP, label + ".csv")
    args = ["perun", h5, "-o", out]
    if run_id:
        args += ["--run", run_id]
    anchorpost(*args)
    header, ours = read_csv(out)
    check(header == COLS, f"{label}: header {header}")
    # Counter rows (RAPL J, 1.0 disk/net B) are ours only; perun export
    # writes the main series.
    ours = [r for r in ours if not r[5].endswith("_counter")]
    if run_id is None:
        runs = sorted({r[0] for r in ours})
        check(len(runs) == 1, f"{label}: expected one multirun, got {runs}")
        run_id = runs[0]
    ours = [r for r in ours if r[0] == run_id]
    eh, theirs = perun_export(h5, run_id)
    check(eh[1:] == ["run id", "hostname", "device_group", "sensor", "unit", "magnitude",
                     "timestep", "value"], f"{label}: perun export header {eh}")
    check(len(ours) == len(theirs),
          f"{label}: anchorpost wrote {len(ours)} rows, perun export {len(theirs)}")
    check(len(ours) > 0, f"{label}: no rows")
    for i, (a, b) in enumerate(zip(ours, theirs)):
        where = f"{label}: row {i + 1}: anchorpost {a} vs perun export {b}"
        check(a[1] == b[1] and a[2] == b[2] and a[3] == b[3] and a[4] == b[4] and a[6] == b[5],
              where + " (names/unit differ)")
        # timesteps are float32: both sides print enough digits to round-trip it
        check(np.float32(float(a[7])) == np.float32(float(b[7])), where + " (time differs)")
        want = float(b[8]) * float(b[6])
        check(close(float(a[8]), want, 2e-7), where + f" (value {a[8]} != {b[8]} * {b[6]})")
    return len(ours)


def fixture_sets():
    """[(label, folder)]: the repository's fixtures, then ../shared's if present."""
    sets = [("repo", FIXTURES)]
    if os.path.isdir(SHARED_FIXTURES):
        sets.append(("shared", SHARED_FIXTURES))
    else:
        print(f"note: {SHARED_FIXTURES} not present; the repository's fixtures only")
    return sets


def copy_fixture(name, dest_dir=None, src_dir=FIXTURES):
    """A writable copy (perun export writes beside its input; tests mutate)."""
    dest_dir = dest_dir or TMP
    os.makedirs(dest_dir, exist_ok=True)
    dst = os.path.join(dest_dir, name)
    shutil.copy(os.path.join(src_dir, name), dst)
    os.chmod(dst, 0o644)
    return dst


def layout(h5):
    """(app, multirun id, host name) of a one-multirun, one-host perun file."""
    import h5py
    with h5py.File(h5, "r") as f:
        (app,) = f.keys()
        mr_id = next(iter(f[app]["nodes"]))
        (host,) = f[app]["nodes"][mr_id]["nodes"]["0"]["nodes"].keys()
    return app, mr_id, host
