"""What plain perun 1.0 leaves after the user's runs, and what anchorpost
says of it (issue 22 points 2 and 3); real perun, libanchor preloaded into
it, real Python scripts with `import anchor`:

  1. Ctrl-C: SIGINT to perun while the script runs.  perun writes no file;
     `anchorpost` in the directory prints the script's phases (times only)
     and says perun's process ended without an exit record or by SIGINT,
     and that perun 1.0 writes nothing when interrupted;
  2. sys.exit(3): perun waits its queue timeout (shortened here to 1 s with
     perun's own --queue_timeout), writes no file and exits 1; anchorpost
     says status 1 is perun's answer to a script that exits non-zero;
  3. `--sampling_rate=0.5`: perun 1.0 drops the option it does not know and
     samples at its default 1 s, and writes its file (perun_results/,
     found there).  `phases` notes the old spelling, that the file's
     samples follow its config's monitor.sampling_period = 1 (not the 0.5
     asked for), and perun 1.0's spelling; the samples really are ~1 s
     apart (perun.csv), so the note says what the file holds.
The old anchorpost said "no run here" for 1 and 2, and nothing for 3.
"""
import csv
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.environ.get("ANCHOR_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
PYTHON = os.environ.get("PYTHON") or sys.executable
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp()
AP = os.path.join(BUILD, "anchorpost")
fails = []

LONG = '''import os, sys, time, anchor
open("started", "w").close()
for i in range(400):
    with anchor.phase("work"):
        time.sleep(0.05)
'''
EXIT3 = '''import sys, time, anchor
for i in range(4):
    with anchor.phase("work"):
        time.sleep(0.05)
sys.exit(3)
'''
BUSY = '''import time, anchor
for i in range(3):
    with anchor.phase("work"):
        t = time.perf_counter()
        while time.perf_counter() - t < 0.5:
            pass
'''


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        fails.append(msg)


def setup(name, script):
    d = os.path.join(TMP, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "app.py"), "w") as f:
        f.write(script)
    env = dict(os.environ, ANCHOR_FILE=os.path.join(d, "run.ring"), LD_PRELOAD=os.path.join(BUILD, "libanchor.so"))
    for k in ("ANCHOR_AUTO", "PERUN_SAMPLING_PERIOD", "PERUN_QUEUE_TIMEOUT"):
        env.pop(k, None)
    return d, env


def hdf5_files(d):
    return [os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith(".hdf5")]


def anchorpost_here(d):
    return subprocess.run([AP], cwd=d, capture_output=True, text=True, timeout=120)


def main():
    if subprocess.run([PYTHON, "-c", "import perun"], capture_output=True).returncode:
        print("skip: perun is not installed")
        return 77

    # 1. Ctrl-C while the script runs.
    d, env = setup("sigint", LONG)
    # Its own process group, signalled whole: what a terminal's Ctrl-C does
    # (perun's sampler, its forked child, gets the SIGINT too).
    p = subprocess.Popen([PYTHON, "-m", "perun", "monitor", "--sampling_period", "0.1", "app.py"], cwd=d, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    t0 = time.monotonic()
    while not os.path.exists(os.path.join(d, "started")) and time.monotonic() - t0 < 120 and p.poll() is None:
        time.sleep(0.1)
    time.sleep(1.0)  # some phases
    os.killpg(p.pid, signal.SIGINT)
    try:
        rc = p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        rc = p.wait()
        check(False, "perun did not end within 120 s of Ctrl-C (killed)")
    check(rc != 0 and not hdf5_files(d), f"SIGINT: perun exits {rc} and writes no file")
    a = anchorpost_here(d)
    check(a.returncode == 0 and "\nwork " in a.stdout, f"anchorpost: the script's phases, exit {a.returncode}: {a.stderr[-300:]}")
    check("no energy" in a.stderr and ("left no exit record" in a.stderr or "ended by SIGINT" in a.stderr),
          "says perun's process ended without an exit record or by SIGINT")
    check("perun 1.0 writes nothing when it is stopped so" in a.stderr, "and that perun 1.0 writes nothing then")

    # 2. sys.exit(3).
    d, env = setup("exit3", EXIT3)
    p = subprocess.run([PYTHON, "-m", "perun", "monitor", "--sampling_period", "0.1", "--queue_timeout", "1", "app.py"],
                       cwd=d, env=env, capture_output=True, text=True, timeout=300)
    check(p.returncode == 1 and not hdf5_files(d), f"sys.exit(3): perun exits {p.returncode} and writes no file")
    a = anchorpost_here(d)
    check(a.returncode == 0 and "\nwork " in a.stdout, f"anchorpost: the script's phases, exit {a.returncode}")
    check("exited with status 1" in a.stderr and "sys.exit()" in a.stderr and "anchorpost record" in a.stderr,
          "says status 1 is perun's answer to sys.exit(N), and to use record")

    # 3. --sampling_rate=0.5: ignored by perun 1.0, which samples at 1 s.
    d, env = setup("rate", BUSY)
    p = subprocess.run([PYTHON, "-m", "perun", "monitor", "--sampling_rate=0.5", "app.py"], cwd=d, env=env,
                       capture_output=True, text=True, timeout=300)
    files = hdf5_files(d)
    check(p.returncode == 0 and files == [os.path.join(d, "perun_results", "app.hdf5")],
          f"perun ran and wrote perun_results/app.hdf5 (exit {p.returncode}, {files})")
    if not files:
        print(f"{len(fails)} check(s) failed")
        return 1
    a = subprocess.run([AP, "phases", "--ring", os.path.join(d, "run.ring"), "--perun", files[0], "-o",
                        os.path.join(d, "phases.csv")], capture_output=True, text=True, timeout=120)
    err = a.stderr
    check(a.returncode == 0, f"phases: exit {a.returncode}: {err[-300:]}")
    check("--sampling_rate=0.5: called --sampling_period since perun 0.8; perun 1.0 does not know --sampling_rate and ignored it" in err,
          "notes the old spelling perun 1.0 ignored")
    check("monitor.sampling_period = 1 s, not the 0.5 asked for" in err, "and the period the file really has")
    check("-m perun monitor --sampling_period 0.5 app.py" in err, "and perun 1.0's spelling")
    h = subprocess.run([AP, "perun", files[0], "-o", os.path.join(d, "perun.csv")], capture_output=True, text=True)
    with open(os.path.join(d, "perun.csv"), newline="") as f:
        ts = sorted({float(r["t_rel_s"]) for r in csv.DictReader(f) if r["t_rel_s"]})
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    check(h.returncode == 0 and gaps and 0.9 < sorted(gaps)[len(gaps) // 2] < 1.2,
          f"the samples are ~1 s apart (median {sorted(gaps)[len(gaps) // 2] if gaps else None}): the note says what the file holds")
    # Here, perun_results/ is where run_find looks too.
    a = anchorpost_here(d)
    check(a.returncode == 0 and "perun ./perun_results/app.hdf5" in a.stdout, "anchorpost alone finds perun_results/app.hdf5")
    print(f"{len(fails)} check(s) failed" if fails else "PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
