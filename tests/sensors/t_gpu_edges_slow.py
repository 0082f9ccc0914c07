"""Device-side phase edges on an emulated device (no GPU here; labelled so).

A real PyTorch (CPU) training loop under ANCHOR_AUTO=torch queues its
"device work" to tests/lib/devstandin.py, a CPU stand-in for an asynchronous
device (worker thread, torch.cuda-shaped Event/Stream API, a device clock
drifting 500 ppm), injected with anchor._device_edges.set_backend.  Real
perun samples the emulated RAPL tree and the stub NVML GPU; the GPU's power
follows what the stand-in executes, the package's what the host does.
Checks:
  1. one DEV_BEGIN/DEV_END per device event the loop recorded, each at the
     stand-in's true execution time within the calibration bracket + 1 ms,
     and DEV_CLOCK records report the drift (500 ppm) and brackets;
  2. each device-side forward/backward/optimizer.step occurrence holds the
     work item it launched (the stand-in's log) and ends with it; the
     host's launch windows are printed beside them;
  3. `anchorpost phases` (perun aligned exactly: ANCHOR_AUTO=torch,perun):
     GPU joules on the device-side phases, CPU package joules on the
     host-side phases: each GPU truth inside its 95 % interval (at most
     +-40 % wide), forward's and backward's CPU within 20 %, the sum
     over forward+backward+optimizer.step within 10 % of the exact
     truth (optimizer.step's CPU alone printed only).  Truth: GPU = the
     stand-in's log x the emulated GPU's watts; package = the emulator's
     ledger per host phase.  40 iterations under perun's 0.1 s period
     (DESIGN asks 1 % only at >= 200 repetitions).  Everything is labelled
     "emulated sensor" / "emulated device".
  4. `anchorpost report`: trace.json holds every device-side occurrence on
     a named track (cat anchor.device).
  6. joules per kernel: a torch.profiler-shaped trace of the stand-in's
     work (Kineto "kernel" events on the host clock, the anchored phases
     as user_annotation ranges): `functions --ops-out` gives each kernel
     GPU joules whose 95 % interval holds the exact truth (fwd and bwd
     also within 20 %).
  5. with py-spy (it launches perun, chrometrace at 200 Hz): `anchorpost
     functions` gives Model.forward (runs only inside forward) the GPU
     joules of the device-side forward (the old rule, GPU at the samples'
     own instants: -65 %), SGD.step those of the device-side
     optimizer.step: within 15 % of what `phases` gives the phase and
     inside its interval (SGD.step also within 50 % of the truth), the
     rule stated in its notes, and the GPU joules still add up to perun's.
"""
import importlib.util
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp()
EMUL = os.path.join(ROOT, "tools", "emulated_power")
TESTS = os.path.join(ROOT, "tests")
sys.path.insert(0, EMUL)
from anchor_emul import phasefile  # noqa: E402

HOST = ["idle", "forward", "backward", "optimizer.step", "wait"]
DEV = ["idle", "fwd", "bwd", "opt"]
HOST_W = {"idle": (10.0, 1.5), "forward": (25.0, 3.0), "backward": (35.0, 4.0), "optimizer.step": (15.0, 2.0), "wait": (8.0, 1.0)}
GPU_W = {"idle": 50.0, "fwd": 250.0, "bwd": 300.0, "opt": 120.0}
DEV_OF = {"forward": "fwd", "backward": "bwd", "optimizer.step": "opt"}
ITERS = int(os.environ.get("GE_ITERS", "40"))
fails = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        fails.append(msg)


# find_spec, not import: the test process never uses them itself, and
# importing it only to see whether it is there costs seconds.
_missing = [m for m in ("perun", "torch") if importlib.util.find_spec(m) is None]
if _missing:
    print("SKIP: needs perun and torch: no module named", ", ".join(_missing))
    sys.exit(77)

PYSPY = shutil.which("py-spy") or shutil.which("py-spy", path=os.path.dirname(sys.executable))
if not PYSPY:
    print("note: no py-spy, check 5 (anchorpost functions) is not run")
out = os.path.join(TMP, "gpu_edges")
os.makedirs(out, exist_ok=True)
p = lambda *x: os.path.join(out, *x)  # noqa: E731
for f in ("run.ring", "truth.json", "victim.json", "updater.ready", "profile.json"):
    if os.path.exists(p(f)):
        os.unlink(p(f))
spec = {"notice": "emulated sensor, not a measurement", "phases": []}
for h in HOST:
    for d in DEV:
        spec["phases"].append({"name": h + "|" + d, "pkg_w": HOST_W[h][0], "dram_w": HOST_W[h][1],
                               "gpu_w": GPU_W[d]})
with open(p("spec.json"), "w") as f:
    json.dump(spec, f)
env = dict(os.environ)
env["PYTHONPATH"] = os.pathsep.join([EMUL, os.path.join(BUILD, "python")])
for k in ("ANCHOR_FILE", "LD_PRELOAD", "ANCHOR_AUTO"):
    env.pop(k, None)
subprocess.run([sys.executable, "-m", "anchor_emul.updater", "--powercap", p("powercap"), "--init", "--gpu"],
               env=env, check=True)
phasefile.create(p("phase.mmap"))
upd = subprocess.Popen([sys.executable, "-m", "anchor_emul.updater", "--powercap", p("powercap"), "--model", "phase",
                        "--spec", p("spec.json"), "--phase-file", p("phase.mmap"), "--truth", p("truth.json"),
                        "--ready-file", p("updater.ready")], env=env)
try:
    t0 = time.monotonic()
    while not os.path.exists(p("updater.ready")):
        if upd.poll() is not None or time.monotonic() - t0 > 30:
            print("FAIL updater did not start")
            sys.exit(1)
        time.sleep(0.01)
    venv = dict(env, ANCHOR_FILE=p("run.ring"), LD_PRELOAD=os.path.join(BUILD, "libanchor.so"),
                ANCHOR_AUTO="torch,perun", GE_TESTS_DIR=TESTS)
    cmd = [sys.executable, "-m", "anchor_emul.perun", "--powercap", p("powercap"), "monitor",
           "--data_out", p("perun"), "--sampling_period", "0.1",
           os.path.join(TESTS, "victims", "gpu_edges_victim.py"), p("phase.mmap"), p("victim.json"), str(ITERS)]
    if PYSPY:  # py-spy launches perun (its script runs in perun's process)
        cmd = [PYSPY, "record", "--idle", "--rate", "200", "--format", "chrometrace", "-o", p("profile.json"),
               "--subprocesses", "--"] + cmd
    res = subprocess.run(cmd, env=venv, timeout=300, capture_output=True, text=True)
finally:
    if upd.poll() is None:
        upd.send_signal(signal.SIGTERM)
    upd.wait(timeout=30)
if res.returncode != 0:
    print(res.stdout[-3000:], res.stderr[-3000:])
    print("FAIL perun/victim exited", res.returncode)
    sys.exit(1)
truth = json.load(open(p("truth.json")))
vic = json.load(open(p("victim.json")))
check(vic["notice"] == "emulated device, not a GPU", "victim output is labelled 'emulated device'")

# 1. device records vs the stand-in's true event times
dump = subprocess.run([os.path.join(BUILD, "anchorpost"), "dump", "--ring", p("run.ring")],
                      capture_output=True, text=True, check=True).stdout
rows = [r for r in csv.DictReader(io.StringIO(dump)) if int(r["pid"]) == vic["pid"]]
dev = [r for r in rows if r["kind"] in ("dev_begin", "dev_end")]
clk = [r for r in rows if r["kind"] == "dev_clock"]
edges_true = [e for e in vic["events"] if e[0] == "default"]
check(len(dev) == len(edges_true) and len(dev) > 4 * ITERS,
      f"{len(dev)} device edge records for {len(edges_true)} device events recorded")
bracket_ns = max(int(r["name"].split("bracket_ns=")[1].split()[0]) for r in clk)
errs = sorted(abs(int(r["value"]) - e[1]) for r, e in zip(dev, edges_true))
tol = bracket_ns + 1_000_000
check(errs and errs[-1] <= tol, f"device edge vs true execution time: median {errs[len(errs) // 2] / 1e3:.1f} us, "
      f"max {errs[-1] / 1e3:.1f} us (tolerance: max bracket {bracket_ns / 1e3:.1f} us + 1 ms)")
drift = float(clk[-1]["name"].split("drift_ppm=")[1].split()[0])
check(len(clk) >= 2, f"{len(clk)} DEV_CLOCK calibrations")
check(abs(drift - 500) < 250, f"reported device clock drift {drift:.1f} ppm (stand-in: 500 ppm)")
check(all(int(r["value"]) <= int(r["mono_ns"]) + tol for r in dev), "every edge resolved after it happened (off the hot path)")

# 2. device phases span the items they launched; host ranges do not
def pairs(kb, ke):
    open_, out_ = {}, {}
    for r in rows:
        t = int(r["value"]) if r["kind"].startswith("dev_") else int(r["mono_ns"])
        if r["kind"] == kb:
            open_[r["name"]] = t
        elif r["kind"] == ke and r["name"] in open_:
            out_.setdefault(r["name"], []).append((open_.pop(r["name"]), t))
    return out_


devp, hostp = pairs("dev_begin", "dev_end"), pairs("begin", "end")
gpu_truth = {}


def gpu_j_in(windows):
    """Exact emulated GPU joules inside host-clock windows (stand-in log)."""
    busy = sorted((a, b, GPU_W[l]) for l, a, b in vic["items"])
    total = 0.0
    for x, y in windows:
        run = sum(max(0, min(b, y) - max(a, x)) for a, b, _ in busy)
        total += sum(w * max(0, min(b, y) - max(a, x)) for a, b, w in busy) / 1e9
        total += GPU_W["idle"] * ((y - x) - run) / 1e9
    return total


for name, lab in DEV_OF.items():
    items = [(a, b) for l, a, b in vic["items"] if l == lab][:ITERS]  # the last fwd item is eval's
    dp = devp.get(name, [])
    ok = len(dp) == len(items) == ITERS
    worst = late = 0
    for (a, b), (x, y) in zip(items, dp):
        # The item lies inside its device phase, and the END event runs
        # right after it (the BEGIN may precede it by device idle time).
        worst = max(worst, x - a, b - y)
        # How soon after the item the END event ran is the stand-in's
        # scheduling (a loaded machine: ms), not anchor's error: loose.
        late = max(late, y - b)
    check(ok and worst <= tol, f"device-side {name}: {len(dp)} occurrences, each holds its {lab} item "
          f"(worst {worst / 1e3:.1f} us outside)")
    check(late <= 20_000_000, f"device-side {name} ends with its item (latest END {late / 1e3:.1f} us after it)")
    hd = sum(y - x for x, y in hostp.get(name, [])) / 1e6
    dd = sum(y - x for x, y in dp) / 1e6
    it = sum(b - a for a, b in items) / 1e6
    print(f"     {name}: device-side {dd:.0f} ms, stand-in busy {it:.0f} ms, host-side launch windows {hd:.0f} ms; "
          f"GPU truth in device-side phases {gpu_j_in(dp):.1f} J, in host-side windows {gpu_j_in(hostp.get(name, [])):.1f} J")
    # GPU truth on the device-side phases: item power while it runs, idle
    # power for the rest of the phase (exact from the stand-in's log).
    gpu_truth[name] = sum(GPU_W[lab] * (b - a) / 1e9 + GPU_W["idle"] * ((y - x) - (b - a)) / 1e9
                          for (a, b), (x, y) in zip(items, dp))

# 3. energy: GPU on device phases, CPU package on host phases
ph = subprocess.run([os.path.join(BUILD, "anchorpost"), "phases", "--ring", p("run.ring"), "--perun",
                     p("perun", "gpu_edges_victim.hdf5"), "-o", p("phases.csv")], capture_output=True, text=True)
print(ph.stdout[-2500:], ph.stderr[-1500:])
check(ph.returncode == 0, "anchorpost phases ran")
check("device-side timeline" in ph.stdout, "the table says GPU groups are on the device-side timeline")
table = {(r["phase"], r["device_group"]): r for r in csv.DictReader(open(p("phases.csv")))} if ph.returncode == 0 else {}
tph = truth["phases"]
sums = {"gpu": [0.0, 0.0], "cpu": [0.0, 0.0]}
for name, lab in DEV_OF.items():
    want_gpu = gpu_truth.get(name, float("nan"))
    want_pkg = sum(v["energy_j"].get("package", 0) for k, v in tph.items() if k.startswith(name + "|"))
    for grp, want in (("gpu", want_gpu), ("cpu", want_pkg)):
        r = table.get((name, grp))
        got = float(r["energy_j"]) if r and r["energy_j"] not in ("", "nan") else float("nan")
        sums[grp][0] += got
        sums[grp][1] += want
        # optimizer.step's CPU (~8 ms on the host) is printed only: 40
        # iterations under a 0.1 s period.
        msg = f"{name} {grp}: {got:.2f} J vs truth {want:.2f} J ({(got - want) / want * 100:+.1f} %) [emulated sensor]"
        if name == "optimizer.step" and grp == "cpu":
            print("     " + msg)
        elif name == "optimizer.step":
            # 15 ms on the device, 40 times, under NVML point readings every
            # 0.1 s: the estimate is seen from +0.2 to +38 % off; the check
            # is that the truth lies in the 95 % interval the table gives.
            lo = float(r["ci95_low_j"]) if r else float("nan")
            hi = float(r["ci95_high_j"]) if r else float("nan")
            check(lo <= want <= hi, msg + f", truth inside the 95 % interval [{lo:.2f}, {hi:.2f}]")
        elif grp == "gpu":
            # The regression on NVML-like point readings states +-6 %
            # (backward) to +-27 % (forward, seen -19 % off): the promise
            # is the interval; its width bounds how little it may say.
            lo = float(r["ci95_low_j"]) if r else float("nan")
            hi = float(r["ci95_high_j"]) if r else float("nan")
            check(lo <= want <= hi and (hi - lo) / 2 <= 0.4 * want,
                  msg + f", truth inside the 95 % interval [{lo:.2f}, {hi:.2f}] (half width at most 40 % of it)")
        else:
            check(abs(got - want) <= 0.2 * want, msg)
for grp, (got, want) in sums.items():
    check(abs(got - want) <= 0.1 * want, f"{grp} over forward+backward+optimizer.step: {got:.1f} J vs truth {want:.1f} J "
          f"({(got - want) / want * 100:+.1f} %) [emulated sensor]")
check(all("emulated" in r["sensor_note"] for r in table.values()), "every row says 'emulated sensor'")

# 5. `anchorpost functions`: a function's GPU joules are those of the
# device-side phases its host-side phase launched (Model.forward runs only
# inside forward, SGD.step only inside optimizer.step).  Attributed on the
# samples' own slices (the old rule) Model.forward got 157 J for 454 J
# and 148 J for 426 J (two runs): the GPU ran its work later.
if PYSPY and os.path.exists(p("profile.json")):
    fn = subprocess.run([os.path.join(BUILD, "anchorpost"), "functions", "--ring", p("run.ring"), "--perun",
                         p("perun", "gpu_edges_victim.hdf5"), "--profile", p("profile.json"), "-o", p("functions.csv")],
                        capture_output=True, text=True)
    check(fn.returncode == 0, "anchorpost functions ran" + ("" if fn.returncode == 0 else ": " + fn.stderr[-800:]))
    notes = open(p("functions.csv.alignment.txt")).read() if fn.returncode == 0 else ""
    check("group gpu: device-side" in notes and "group cpu: host-side" in notes and "device rule:" in notes,
          "functions' notes state the rule: gpu on device-side phases, cpu on host-side")
    check("emulated" in notes, "functions' notes say 'emulated sensor'")
    frows = list(csv.DictReader(open(p("functions.csv")))) if fn.returncode == 0 else []

    def fn_j(qual, col):
        return sum(float(r[col]) for r in frows if r["function"] == qual and
                   (r["file"] == "<string>" or r["file"].endswith("gpu_edges_victim.py")))

    # A function that runs only inside one phase gets that phase's
    # device-side joules: it must agree with `phases` (same fit; functions
    # scales the shares to perun's device-side total, seen +4..+6 %), lie
    # inside the interval `phases` states for it (which holds the truth,
    # check 3), and SGD.step also within 50 % of the truth (its phase's
    # interval reaches 0).  SGD.step's 9 ms steps at 200 Hz: 11 of 40 held
    # no sample instant on an idle machine; by overlap their energy went
    # to backward's last sample (-22..-26 % in 3 runs, -54 % under CI's
    # load, 2026-12-03); by the SITE label of the optimizer's step (auto
    # mode writes it): -5, -1, +6 % in 3 runs.
    for qual, name, tol in (("Model.forward", "forward", None), ("SGD.step", "optimizer.step", 0.5)):
        got, want = fn_j(qual, "total_j_gpu"), gpu_truth.get(name, float("nan"))
        r = table.get((name, "gpu"))
        est = float(r["energy_j"]) if r else float("nan")
        lo = float(r["ci95_low_j"]) if r else float("nan")
        hi = float(r["ci95_high_j"]) if r else float("nan")
        ok = abs(got - est) <= 0.15 * est and lo <= got <= hi and (tol is None or abs(got - want) <= tol * want)
        check(ok, f"functions: {qual} GPU {got:.2f} J vs phases' device-side {name} {est:.2f} J [{lo:.2f}, {hi:.2f}] "
              f"({(got - est) / est * 100:+.1f} %, tolerance 15 % and inside), truth {want:.2f} J "
              f"({(got - want) / want * 100:+.1f} %" + (f", tolerance {tol * 100:.0f} %)" if tol else ")") +
              " [emulated sensor]")
    att = {}
    for line in notes.splitlines():
        if line.startswith("energy gpu: attributed"):
            att = dict(zip(("attributed", "unsampled", "span"), (float(x.split()[-2]) for x in line.split(", "))))
    self_gpu = sum(float(r["self_j_gpu"]) for r in frows)
    check(att and abs(self_gpu - att["attributed"]) <= 0.01 * att["attributed"] and
          abs(att["attributed"] + att["unsampled"] - att["span"]) <= 0.001 * att["span"],
          f"functions: GPU self joules sum {self_gpu:.2f} J = attributed {att.get('attributed', 0):.2f} J; "
          f"+ unsampled = perun's span {att.get('span', 0):.2f} J (no joule lost or made)")

# 4. both timelines in trace.json and the timeline picture
rep = subprocess.run([os.path.join(BUILD, "anchorpost"), "report", "--ring", p("run.ring"), "--perun",
                      p("perun", "gpu_edges_victim.hdf5"), "-d", p("report")], capture_output=True, text=True)
check(rep.returncode == 0, "anchorpost report ran")
if rep.returncode == 0:
    tj = json.load(open(p("report", "trace.json")))
    tev = tj["traceEvents"] if isinstance(tj, dict) else tj
    ndev = sum(1 for e in tev if e.get("cat") == "anchor.device")
    ndev_want = sum(len(v) for v in devp.values())
    check(ndev == ndev_want, f"trace.json: {ndev} device-side slices ({ndev_want} device-side occurrences)")
    check(any(e.get("ph") == "M" and "device-side phases" in str(e.get("args")) for e in tev),
          "trace.json names the device-side track")
    # The picture's lane ("pid N device") is drawn as glyphs, not text:
    # checked by eye (BENCHMARKS.md), not here.


# 6. joules per kernel (issue 25 point 2) on a torch.profiler-shaped trace
# of this run: the stand-in's work items as Kineto "kernel" events (GPU 0,
# stream 7) on the host clock, as Kineto puts CUPTI's device times, and
# the loop's anchored phases as user_annotation ranges on the victim's
# thread (what record_function mirroring gives), ts in µs from
# baseTimeNanoseconds (unix).  The reader is tested on real public Kineto
# traces (tests/torch/t_torch_gpu_traces.py); this checks the joules:
# `functions --ops-out` gives each kernel the GPU joules of the device-side
# phase it ran in, through that phase's fitted power.  Truth: the
# emulated GPU's watts x each item's run time (the stand-in's log).
def kineto_trace(path):
    off = sorted(int(r["unix_ns"]) - int(r["mono_ns"]) for r in rows)[len(rows) // 2]  # mono -> unix
    base = (min(a for _, a, _ in vic["items"]) + off) // 1_000_000_000 * 1_000_000_000
    us = lambda mono: (mono + off - base) / 1e3  # noqa: E731
    tid = next(int(r["tid"]) for r in rows if r["kind"] == "begin" and r["name"] == "forward")
    ev = []
    for name, occ in hostp.items():
        if name in DEV_OF:
            for a, b in occ:
                ev.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": vic["pid"], "tid": tid,
                           "ts": us(a), "dur": (b - a) / 1e3})
    for k, (lab, a, b) in enumerate(vic["items"]):
        ev.append({"ph": "X", "cat": "kernel", "name": lab + "_kernel", "pid": 0, "tid": 7, "ts": us(a),
                   "dur": (b - a) / 1e3, "args": {"device": 0, "stream": 7, "correlation": k + 1}})
    ev.sort(key=lambda e: e["ts"])
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "emulated device, not a GPU"}],
                   "baseTimeNanoseconds": base, "traceEvents": ev}, f)


kineto_trace(p("kineto.json"))
ops = subprocess.run([os.path.join(BUILD, "anchorpost"), "functions", "--ring", p("run.ring"), "--perun",
                      p("perun", "gpu_edges_victim.hdf5"), "--profile", p("kineto.json"), "-o", p("kfunctions.csv"),
                      "--ops-out", p("ops.csv")], capture_output=True, text=True)
check(ops.returncode == 0, "anchorpost functions --ops-out on the kernel trace ran" +
      ("" if ops.returncode == 0 else ": " + ops.stderr[-800:]))
orow = {r["op"]: r for r in csv.DictReader(open(p("ops.csv")))} if ops.returncode == 0 else {}
for lab in ("fwd", "bwd", "opt"):
    busy = [(a, b) for l, a, b in vic["items"] if l == lab]
    want = GPU_W[lab] * sum(b - a for a, b in busy) / 1e9
    r = orow.get(lab + "_kernel")
    got = float(r["self_j"]) if r else float("nan")
    lo = float(r["self_lo_j"]) if r else float("nan")
    hi = float(r["self_hi_j"]) if r else float("nan")
    ok = r is not None and int(r["rows"]) == len(busy) and lo <= want <= hi
    # opt: 15 ms on the device under 0.1 s NVML readings (as check 3): the
    # interval is the promise; fwd and bwd also within 20 %.
    if lab != "opt":
        ok = ok and abs(got - want) <= 0.2 * want
    check(ok, f"ops.csv {lab}_kernel: {r['rows'] if r else 0} launches for {len(busy)}, {got:.2f} J "
          f"[{lo:.2f}, {hi:.2f}] vs truth {want:.2f} J ({(got - want) / want * 100:+.1f} %) [emulated sensor]")
sys.exit(1 if fails else 0)
