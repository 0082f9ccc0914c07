"""docs/recording.md's "two commands you already type" section, run as
written (issue 22 point 2): the commands are read out of the doc (the
table's cells and the code block), not copied here, so the doc cannot
drift from what works.

In a fresh directory with a small transformer.py (phases forward /
backward / step, about 4 s: a 0.5 s period needs windows), `python` on
PATH is $PYTHON and `build` is the build tree; `perun` on PATH is real
perun 1.0.0 reading an emulated RAPL tree (tools/emulated_power: this
machine has no readable sensor), started as the user's `perun` with the
user's arguments untouched; `py-spy` is the py-spy binary (pyenv's shim
would put the real perun first on PATH).  Checked:
  1. the user's py-spy line writes a speedscope profile.json;
  2. the user's perun line (perun 0.3's spelling) exits 2 with perun's
     "invalid choice: 'hdf5'" and writes no HDF5, as the doc says;
  3. the perun 1.0 line writes perun_results/transformer.hdf5;
  4. the code block (perun under py-spy, one ring, then `anchorpost
     report .`) gives every phase with its count, perun's exact alignment
     and joules with an interval, and functions.csv."""
import csv
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import BUILD, PYTHON, ROOT, TMP, check, need_build, skip  # noqa: E402

DOC = os.path.join(ROOT, "docs", "recording.md")
EMUL = os.path.join(ROOT, "tools", "emulated_power")
# 9 s of steps: at perun's 0.5 s about 18 windows for the block's phases (45 steps, 4 s,
# gave too few windows to attribute once under load)
STEPS = 100
PYSPY = next((p for p in (os.path.join(os.path.dirname(PYTHON), "py-spy"), shutil.which("py-spy"))
              if p and os.path.exists(p)), None)

APP = '''import time
import anchor


def busy(s):
    t = time.perf_counter()
    while time.perf_counter() - t < s:
        pass


@anchor.phase("step")
def step():
    busy(0.02)


for i in range(%d):
    with anchor.phase("forward"):
        busy(0.04)
    with anchor.phase("backward"):
        busy(0.03)
    step()
''' % STEPS

# `perun` as the user has it, on a machine without sensors: real perun
# 1.0.0 through anchor_emul.perun (RAPL_PATH pointed at an emulated tree
# whose counters follow the process's CPU time), arguments passed on as
# given.
PERUN = '''#!%(py)s
import os, subprocess, sys
pc = os.path.abspath("emulated-powercap")
env = dict(os.environ, PYTHONPATH=os.pathsep.join([%(emul)r] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
helper = {k: v for k, v in env.items() if k not in ("LD_PRELOAD", "ANCHOR_FILE")}
subprocess.run([sys.executable, "-m", "anchor_emul.updater", "--powercap", pc, "--init"], env=helper, check=True)
p = subprocess.Popen([sys.executable, "-m", "anchor_emul.perun", "--powercap", pc] + sys.argv[1:], env=env)
up = subprocess.Popen([sys.executable, "-m", "anchor_emul.updater", "--powercap", pc, "--model", "cpu",
                       "--watch-pid", str(p.pid), "--truth", "truth.json"], env=helper)
rc = p.wait()
up.wait()
sys.exit(rc)
'''


def section():
    with open(DOC) as f:
        text = f.read()
    m = re.search(r"^## The two commands you already type.*?(?=^## )", text, re.S | re.M)
    check(m, "docs/recording.md has no section 'The two commands you already type'")
    sec = m.group(0)
    rows = {}
    for line in sec.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in ("py-spy", "perun"):
            cmds = [re.search(r"`([^`]+)`", c) for c in cells[1:]]
            check(all(cmds), "a table cell without a command: %s" % line)
            rows[cells[0]] = [c.group(1) for c in cmds]
    block = re.search(r"```\n(.*?)```", sec, re.S)
    check(set(rows) == {"py-spy", "perun"} and block, "the section lacks its table rows or its code block")
    return rows, block.group(1)


def workdir(name):
    d = os.path.join(TMP, name)
    os.makedirs(os.path.join(d, "bin"))
    with open(os.path.join(d, "transformer.py"), "w") as f:
        f.write(APP)
    os.symlink(PYTHON, os.path.join(d, "bin", "python"))
    with open(os.path.join(d, "bin", "perun"), "w") as f:
        f.write(PERUN % {"py": PYTHON, "emul": EMUL})
    os.chmod(os.path.join(d, "bin", "perun"), 0o755)
    os.symlink(BUILD, os.path.join(d, "build"))
    # The py-spy binary itself, not pyenv's shim: the shim puts its
    # version's bin/ (with the real perun) first on PATH for py-spy's child.
    os.symlink(PYSPY, os.path.join(d, "bin", "py-spy"))
    return d


def sh(d, script, preload_module=True):
    env = dict(os.environ, PATH=os.path.join(d, "bin") + os.pathsep + os.environ["PATH"])
    for k in ("ANCHOR_FILE", "ANCHOR_AUTO", "ANCHOR_DISABLE", "ANCHOR_SYNC_PULSE", "LD_PRELOAD", "PYTHONPATH"):
        env.pop(k, None)
    if preload_module:  # `import anchor` works as after `pip install .`
        env["PYTHONPATH"] = os.path.join(BUILD, "python")
    return subprocess.run(["bash", "-ec", script], cwd=d, env=env, capture_output=True, text=True, timeout=600)


def hdf5s(d):
    return [os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith(".hdf5")]


def main():
    need_build()
    if subprocess.run([PYTHON, "-c", "import perun.monitoring.subprocess"], capture_output=True).returncode:
        skip("perun is not installed for %s (scripts/install-deps.sh)" % PYTHON)
    if not PYSPY:
        skip("py-spy is not installed")
    rows, block = section()
    (spy_typed, spy_new), (perun_typed, perun_new) = rows["py-spy"], rows["perun"]

    d = workdir("pyspy")
    p = sh(d, spy_typed)
    check(p.returncode == 0, "1: `%s` exited %d: %s" % (spy_typed, p.returncode, p.stderr[-2000:]))
    with open(os.path.join(d, "profile.json")) as f:
        check('"$schema":"https://www.speedscope.app/file-format-schema.json"' in f.read(2000).replace(" ", ""),
              "1: profile.json is not speedscope")
    if spy_new != spy_typed:
        p = sh(d, spy_new)
        check(p.returncode == 0, "1: `%s` exited %d" % (spy_new, p.returncode))
    print("ok 1: %s" % spy_typed)

    d = workdir("perun-typed")
    p = sh(d, perun_typed)
    check(p.returncode == 2 and "invalid choice: 'hdf5'" in p.stderr,
          "2: `%s` exited %d (the doc says 2, invalid choice): %s" % (perun_typed, p.returncode, p.stderr[-1500:]))
    check(not hdf5s(d), "2: the old spelling wrote %s" % hdf5s(d))
    print("ok 2: %s -> exit 2, invalid choice: 'hdf5', no file" % perun_typed)

    d = workdir("perun-new")
    p = sh(d, perun_new)
    check(p.returncode == 0, "3: `%s` exited %d: %s" % (perun_new, p.returncode, p.stderr[-1500:]))
    check(os.path.exists(os.path.join(d, "perun_results", "transformer.hdf5")),
          "3: no perun_results/transformer.hdf5: %s" % hdf5s(d))
    print("ok 3: %s -> perun_results/transformer.hdf5" % perun_new)

    d = workdir("one-run")
    p = sh(d, block, preload_module=False)  # the block sets LD_PRELOAD itself
    check(p.returncode == 0, "4: the code block exited %d: %s%s" % (p.returncode, p.stdout[-1500:], p.stderr[-2500:]))
    with open(os.path.join(d, "report", "phases.csv"), newline="") as f:
        got = {}
        for x in csv.DictReader(f):
            if x["scope"] == "all" and x["row"] == "phase":
                got.setdefault(x["phase"], x)
    for name in ("forward", "backward", "step"):
        x = got.get(name)
        check(x and int(x["count"]) == STEPS, "4: %s: %s" % (name, x))
        check(x["alignment"] == "perun-hook", "4: %s aligned by %s, want perun-hook" % (name, x["alignment"]))
        check(x["energy_j"] != "" and float(x["ci95_low_j"]) <= float(x["energy_j"]) <= float(x["ci95_high_j"]),
              "4: %s: no joules with an interval: %s" % (name, x))
    check(os.path.getsize(os.path.join(d, "report", "functions.csv")) > 0, "4: no functions.csv")
    print("ok 4: one run: %s" % ", ".join("%s %s J" % (n, got[n]["energy_j"]) for n in ("forward", "backward", "step")))
    print("PASS")


if __name__ == "__main__":
    main()
