"""The user's own perun commands, verbatim, under real perun 1.0 (issue 22
points 2 and 3): perun fails or runs nothing, leaves no file, and the ring
(libanchor preloaded into perun too) says why.

  1. `perun --format hdf5 --sampling_rate 0.5 monitor app.py`, the issue's
     literal command (perun 0.3's spelling): perun 1.0 exits 2 ("invalid
     choice: 'hdf5'") before the script runs.  `anchorpost` in that
     directory fails (the ring holds no phase) with one error line, and
     before it explains: perun's process, its exit status 2, the options
     that sat before `monitor`, and the command in perun 1.0's spelling
     (`monitor --format hdf5 --sampling_period 0.5`);
  2. `perun monitor --sampling_rate 0.5 app.py`: perun 1.0 drops the
     unknown option, takes `0.5` for the script and exits 0 with no file.
     `anchorpost` gives the table (times only) and explains that perun ran
     no script, that --sampling_rate is --sampling_period since perun 0.8.
Only explained, never a value taken from the old spelling: no file, no
energy.  The old anchorpost said "the ring holds no phases" / "no run
here" and nothing of perun.
"""
import os
import shutil
import subprocess
import sys

ROOT = os.environ.get("ANCHOR_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
PYTHON = os.environ.get("PYTHON") or sys.executable
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp()
AP = os.path.join(BUILD, "anchorpost")
fails = []

APP = '''import time, anchor
for i in range(3):
    with anchor.phase("work"):
        time.sleep(0.05)
'''


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        fails.append(msg)


def perun_exe():
    """perun's console script beside the interpreter (what the user types)."""
    p = os.path.join(os.path.dirname(PYTHON), "perun")
    return p if os.path.exists(p) else shutil.which("perun")


def run_perun(name, argv):
    d = os.path.join(TMP, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "app.py"), "w") as f:
        f.write(APP)
    env = dict(os.environ, ANCHOR_FILE=os.path.join(d, "run.ring"), LD_PRELOAD=os.path.join(BUILD, "libanchor.so"))
    for k in ("ANCHOR_AUTO", "PERUN_SAMPLING_PERIOD"):
        env.pop(k, None)
    p = subprocess.run(argv, cwd=d, env=env, capture_output=True, text=True, timeout=300)
    return d, p


def main():
    if subprocess.run([PYTHON, "-c", "import perun"], capture_output=True).returncode or not perun_exe():
        print("skip: perun is not installed")
        return 77
    ver = subprocess.run([PYTHON, "-m", "perun", "--version"], capture_output=True, text=True).stdout.strip()
    if not ver.startswith("perun 1."):
        print(f"skip: these are perun 1.x's answers to the old spellings ({ver})")
        return 77

    # 1. The literal command.
    d, p = run_perun("literal", [perun_exe(), "--format", "hdf5", "--sampling_rate", "0.5", "monitor", "app.py"])
    check(p.returncode == 2 and "invalid choice: 'hdf5'" in p.stderr, f"perun 1.0 refuses it: exit {p.returncode}")
    check(not any(f.endswith(".hdf5") for _, _, fs in os.walk(d) for f in fs), "and writes no file")
    a = subprocess.run([AP], cwd=d, capture_output=True, text=True, timeout=60)
    lines = a.stderr.strip().splitlines()
    check(a.returncode == 1 and lines and lines[-1].startswith("anchorpost: ./run.ring: the ring holds no phases"),
          f"anchorpost: exit 1, the error last: {lines[-1:] if lines else a.stderr!r}")
    err = a.stderr
    check("perun (pid " in err and "--format hdf5 --sampling_rate 0.5 monitor app.py" in err,
          "names perun's process and its command line from the ring")
    check("exited with status 2" in err, "its exit status 2 (argparse)")
    check("--format, --sampling_rate before 'monitor'" in err and "perun 0.3 and older" in err,
          "the options before 'monitor' as perun 0.3's spelling")
    check("monitor --format hdf5 --sampling_period 0.5 app.py" in err, "and the command in perun 1.0's spelling")
    check(not any(f.endswith(".csv") for f in os.listdir(d)), "no phases.csv written")

    # 2. --sampling_rate after monitor: perun takes its value for the script.
    d, p = run_perun("after", [PYTHON, "-m", "perun", "monitor", "--sampling_rate", "0.5", "app.py"])
    check(p.returncode == 0 and not os.path.exists(os.path.join(d, "perun_results", "app.hdf5")),
          f"perun 1.0 exits {p.returncode} and writes no app.hdf5")
    a = subprocess.run([AP], cwd=d, capture_output=True, text=True, timeout=60)
    err = a.stderr
    check(a.returncode == 0 and "no energy" in err, f"anchorpost: times only, exit {a.returncode}: {err[-300:]}")
    check("exited with status 0, but no anchor of the script's is in it: it ran no script" in err,
          "says perun ran no script although it exited 0")
    check("--sampling_rate 0.5: called --sampling_period since perun 0.8" in err and "took '0.5' for the script" in err,
          "explains --sampling_rate and what perun 1.0 made of it")
    check("monitor --sampling_period 0.5 app.py" in err, "and gives perun 1.0's spelling")
    print(f"{len(fails)} check(s) failed" if fails else "PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
